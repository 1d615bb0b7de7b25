"""The keyword pool without scoring every match (SQLite, issue 23.3): an any-word query's best
matches taken from the texts that hold every word, when no other text can outrank them.

FTS5's bm25 (ext/fts5/fts5_aux.c) is a sum over the expression's phrases:
idf_i * f_i * (k1 + 1) / (f_i + k1 * (1 - b + b * D / avgdl)), with f_i the phrase's column-
weighted count in the row and D the row's length; a row that lacks a phrase gets nothing for it,
and idf_i depends on the phrase alone. The any-word pool of two common words matches a fifth of a
100K-chunk index (~19,000 rows, each scored at about a microsecond, most of it FTS5's lookup of
the row's length); the rows that hold both words are a twentieth of that, and hold the best.

So, for `"a" OR "b" [OR ...]` (up to MAX_UNITS quoted phrases, nothing else), the all-words
query `"a" AND "b"` is ranked first: the same phrases in the same order, so each of its rows gets
the very score the any-word query gives it. Its best `first` are the any-word query's best
`first` (same rows, same order, ties included) when the last of them scores more than any row
that lacks a phrase can: the sum of every phrase's best single score (`best`) less the smallest
one. With two phrases, when only one of them alone can beat that (a word some short text
repeats), the rows holding it without the other (`"a" NOT "b"`, the same phrases: the same
scores) are ranked too and the best of both kept when they beat every row neither kept
(`_one_sided`). A phrase's best single score is the top of its own ranking (`MATCH "a" ORDER BY bm25
LIMIT 1`: the same idf and row lengths), as costly as the any-word query itself, so it is never
computed on a search's path. The bounds are kept for the index's generation (the bytes of FTS5's
averages and structure records, which every change to the index rewrites; any change forgets
them all) and learned off the path: at start-up (`learn`, after the vector cache is warmed) those
of every word in REST_DF rows or more (339 words at 100K chunks, 1.4 s of CPU); after a change,
once the index has stayed unchanged for FILL_AFTER seconds, the same again on a search thread
(`beside`) when a search asks, with the phrases that search lacked first. An index being
written pays nothing: its searches rank every match, as before. Any doubt (another expression, a
phrase without its bound, too few rows holding every word, a bound not beaten) ranks every match.
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import apsw

from memoryd.store import tokenizer
from memoryd.store.dialect import is_postgres
from memoryd.store.protocol import Connection

BM25 = "bm25(entries_fts, 1.0, 0.6, 0.4)"  # content weighs most, then headings, then tags
PRUNE_MIN = 20_000  # entries from which an any-word pool tries the all-words rows first
MAX_UNITS = 4  # more phrases: few rows hold them all, and the bounds cost more to learn
FILL_AFTER = 5.0  # seconds an index stays unchanged before its phrases' bounds are computed
REST_DF = 1000  # at rest, the bounds of every word in this many rows or more are computed
MAX_KNOWN = 50_000  # phrases remembered per database (then forgotten all at once)
MAX_DATABASES = 8
MARGIN = 1e-9  # relative: the bound must be beaten by more than floating-point noise

_UNIT = r'"(?:[^"]|"")*"\*?'
_ANY = re.compile(rf"{_UNIT}(?: OR {_UNIT})+")
_UNITS = re.compile(_UNIT)

Ranked = list[tuple[int, float, int | None, bool]]  # id, bm25, document id, passes the filter
Beside = Callable[[Callable[[Connection], Any]], "Future[Any]"]


@dataclass
class _Known:
    key: bytes  # the index generation the bounds belong to
    seen: float  # when this generation was first seen (time.monotonic)
    best: dict[str, float] = field(default_factory=dict)  # phrase -> best single score (> 0)
    filling: bool = False
    rested: bool = False  # the common words' bounds were asked for
    used: int = 0  # searches answered from the all-words rows (for the bench)
    tried: int = 0  # searches that could have been (an any-word query at PRUNE_MIN entries)


_STATE: dict[str, _Known] = {}
_LOCK = threading.Lock()


def units(match: str) -> list[str] | None:
    """The phrases of an any-word expression `"a" OR "b" ...` (2 to MAX_UNITS quoted strings,
    each perhaps a prefix); None for any other expression (NOT, groups, a single phrase)."""
    if not _ANY.fullmatch(match):
        return None
    found = _UNITS.findall(match)
    return found if 2 <= len(found) <= MAX_UNITS else None


def generation(con: Connection) -> bytes | None:
    """The index's generation: FTS5's averages record (row count, tokens per column) and its
    structure record (segments and a write counter), both rewritten by every change to the index.
    None when they cannot be read."""
    try:
        rows = con.execute(
            "SELECT id, block FROM entries_fts_data WHERE id IN (1, 10) ORDER BY id"
        ).fetchall()
    except apsw.SQLError:  # no such table (not an FTS5 index as memoryd makes it)
        return None
    if len(rows) != 2:
        return None
    return b"\x00".join(bytes(r[1]) for r in rows)


def _known(con: Connection, key: bytes) -> _Known:
    path = str(getattr(con, "filename", ""))
    with _LOCK:
        known = _STATE.get(path)
        if known is None or known.key != key:
            used, tried = (known.used, known.tried) if known is not None else (0, 0)
            known = _Known(key, time.monotonic(), used=used, tried=tried)
            if path not in _STATE and len(_STATE) >= MAX_DATABASES:
                _STATE.pop(next(iter(_STATE)))
            _STATE[path] = known
        return known


def all_words_first(
    con: Connection,
    match: str,
    run: Callable[[str], Ranked],
    first: int,
    beside: Beside | None,
) -> Ranked | None:
    """The any-word expression `match`'s best `first` ranked rows, read from the rows that hold
    every phrase (`run` ranks an expression's best `first` as the keyword pool does), when they
    are provably its best `first`; None when the caller must rank every match."""
    parts = units(match)
    key = generation(con) if parts else None
    if parts is None or key is None:
        return None
    known = _known(con, key)
    known.tried += 1
    keys = {u: phrase_key(con, u) for u in parts}
    missing = [u for u, k in keys.items() if k not in known.best]
    if missing or not known.rested:
        _fill_later(con, known, {keys[u]: u for u in missing}, beside)
    if missing:
        return None
    bounds = [known.best[keys[u]] for u in parts]
    others = sum(bounds) - min(bounds)  # the most a row lacking one of the phrases scores
    ranked = run(" AND ".join(parts))
    if len(ranked) < first:
        return None
    cut = -max(score for _, score, _, _ in ranked)  # the last kept row's score (bm25 < 0)
    if cut <= _above(others):
        found = _one_sided(parts, bounds, ranked, cut, run, first)
        if found is None:
            return None
        ranked = found
    known.used += 1
    return ranked


def _above(bound: float) -> float:
    return bound * (1 + MARGIN) + MARGIN


def _one_sided(
    parts: list[str],
    bounds: list[float],
    both: Ranked,
    cut: float,
    run: Callable[[str], Ranked],
    first: int,
) -> Ranked | None:
    """Two phrases, one of which alone can outrank the rows holding both (a word some short
    text repeats): the rows holding it without the other (`"a" NOT "b"`: the same phrases, so
    the same scores; a sum of one term) are ranked too, and the best `first` of both rankings
    kept when they beat every row neither ranking kept: the cut of each ranking and the other
    phrase's best alone."""
    if len(parts) != 2:
        return None
    hi, lo = (0, 1) if bounds[0] >= bounds[1] else (1, 0)
    if cut <= _above(bounds[lo]):
        return None
    alone = run(f"{parts[hi]} NOT {parts[lo]}")
    merged = sorted(both + alone, key=lambda r: (r[1], r[0]))[:first]
    if len(merged) < first:
        return None
    alone_cut = -max(score for _, score, _, _ in alone) if len(alone) >= first else 0.0
    if -merged[-1][1] <= _above(max(cut, alone_cut, bounds[lo])):
        return None
    return merged


def phrase_key(con: Connection, unit: str) -> str:
    """What a phrase's bound is kept under: the index's token for a quoted word that is one
    token (`"deploying"` and `"deploy"` are both the phrase `deploi`: the same rows, the same
    scores), else the phrase as written."""
    found = _KEYS.get(unit)
    if found is None:
        found = "u:" + unit
        if isinstance(con, apsw.Connection) and not unit.endswith("*"):
            text = unit[1:-1].replace('""', '"').encode()
            tokens = _tokenizer(con)(text, apsw.FTS5_TOKENIZE_QUERY, None, include_offsets=False)
            if len(tokens) == 1 and len(tokens[0]) == 1:
                found = "t:" + str(tokens[0][0])
        if len(_KEYS) >= MAX_KNOWN:
            _KEYS.clear()
        _KEYS[unit] = found
    return found


_KEYS: dict[str, str] = {}  # phrase as written -> phrase_key (the tokenizer never changes)


def _tokenizer(con: apsw.Connection) -> Any:
    found = _TOKENIZERS.get(con)
    if found is None:
        found = _TOKENIZERS[con] = con.fts5_tokenizer(tokenizer.NAME, list(tokenizer.ARGS))
    return found


_TOKENIZERS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _fill_later(
    con: Connection, known: _Known, missing: dict[str, str], beside: Beside | None
) -> None:
    """Learn, on a search thread, the missing phrases' bounds and (the first time the index is
    seen at rest) those of every word in REST_DF rows or more: a search of common words finds
    them known even the first time it is asked."""
    path = str(getattr(con, "filename", ""))
    with _LOCK:
        if beside is None or known.filling or time.monotonic() - known.seen < FILL_AFTER:
            return
        known.filling = True
        rest, known.rested = not known.rested, True
    try:
        beside(lambda other: _fill(other, path, known, missing, rest))
    except RuntimeError:  # the search threads are shutting down: another time
        with _LOCK:
            known.filling = False


def _fill(con: Connection, path: str, known: _Known, missing: dict[str, str], rest: bool) -> None:
    """Each bound is kept as soon as it is known (the searches meanwhile use it): the missing
    phrases first, then at rest the common words, the most common first."""
    try:
        if generation(con) != known.key:  # the index changed meanwhile
            return
        todo = dict(missing)
        if rest:
            for (term,) in con.execute(
                "SELECT term FROM entries_vocab WHERE doc >= ? ORDER BY doc DESC", [REST_DF]
            ).fetchall():
                unit = '"' + str(term).replace('"', '""') + '"'
                if phrase_key(con, unit) == "t:" + str(term):  # the word is its own token
                    todo.setdefault("t:" + str(term), unit)
        for k, unit in todo.items():
            if k in known.best:
                continue
            row = con.execute(
                f"SELECT {BM25} AS s FROM entries_fts WHERE entries_fts MATCH ? ORDER BY s LIMIT 1",
                [unit],
            ).fetchone()
            with _LOCK:
                if _STATE.get(path) is not known:
                    return  # the index changed: these bounds belong to no search any more
                if len(known.best) >= MAX_KNOWN:
                    known.best.clear()
                known.best[k] = -float(row[0]) if row else 0.0
    finally:
        with _LOCK:
            known.filling = False


def learn(con: Connection) -> int:
    """Learn the bounds of every word in REST_DF rows or more now, on this connection (the
    daemon does at start-up, after warming the vector cache, when the index has PRUNE_MIN
    entries: 1.4 s of CPU at 100K chunks); returns how many bounds are known."""
    if is_postgres(con):
        return 0
    key = generation(con)
    row = con.execute("SELECT count(*) FROM entries").fetchone() if key is not None else None
    if key is None or not row or int(row[0]) < PRUNE_MIN:
        return 0
    known = _known(con, key)
    with _LOCK:
        if known.filling or known.rested:
            return len(known.best)
        known.filling = known.rested = True
    _fill(con, str(getattr(con, "filename", "")), known, {}, True)
    return len(known.best)


def counts(path: str) -> tuple[int, int]:
    """(searches answered from the all-words rows, searches that could have been) for a database
    file, since the process started: what the bench reports."""
    with _LOCK:
        known = _STATE.get(path)
        return (known.used, known.tried) if known is not None else (0, 0)
