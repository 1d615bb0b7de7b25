"""Typo tolerance: rewrite query terms to the closest terms in the index's vocabulary.

Search's last tier: when keywords find nothing, "dokcer netwrking" becomes
`("dokcer" OR "docker"*) AND ("netwrking" OR "network"*)`.

Vocabulary: the fts5vocab table `entries_vocab` (type 'row') over entries_fts, created by
migration m001: every indexed term with the number of entries that contain it. Reader
connections run with `PRAGMA query_only`, which refuses even temp-schema DDL, so the table the
schema already has is read; only a connection without it (and allowed to write) gets a
`temp.fuzzy_vocab` of its own. Its terms are porter stems.

Cache: one immutable snapshot per FuzzyMatcher, shared by the reader threads (each passes its
own connection). It is rebuilt lazily, after invalidate() or once it is refresh_interval seconds
old; one thread rebuilds under a lock while the others go on with the previous snapshot (only
the very first build makes them wait). Given a `read` function (the daemon passes store.read),
a stale snapshot is rebuilt on a low-priority background thread, at most once every
`min_rebuild_s`, and every query goes on with the snapshot it has: rebuilding reads the whole
fts5vocab table (~0.1-0.5 s at 100K chunks), which a search after each note edit paid before
(issue 23). A new word is then correctable a few seconds after it was indexed. Without `read`
(tests, tools) the first rewrite() after invalidate() rebuilds on its own thread.

Candidates: symmetric deletes (SymSpell). Every correctable term is filed under each string
obtained by deleting up to two characters from its first PREFIX characters; a query stem's own
deletions are looked up the same way and the candidates verified with the exact distance. Two
words within k edits share such a deletion (in the prefixes too: each edit costs at most one
deletion a side there), so no candidate is missed, and a term costs at most 37 keys. The keys
are 32-bit hashes in sorted numpy arrays (8 bytes a key: ~25 MB and under a second for 100K
terms) rather than a dict of strings (~5x the memory and time); a hash collision only adds
a candidate that verification drops.

Ranking: optimal string alignment distance (Damerau-Levenshtein where a transposition counts 1:
"dokcer" -> "docker" is 1), at most 1 edit for words of 4-5 characters and 2 from 6
(Elasticsearch's AUTO fuzziness), and similarity 1 - distance / longer length >= min_similarity.
Smallest distance first, then most documents, then alphabetical. Up to MAX_ALTERNATIVES terms at
the best distance join the OR group (replcation: replic or replac? the other terms decide).

Stemming: query words are stemmed by the index's own tokenizer (porter over unicode61,
remove_diacritics 2, through apsw; on PostgreSQL the server's `english_stem` dictionary, by
store/pg/fts.py Stemmer, and the vocabulary is ts_stat over the tsvectors) before they are
compared. A typo can derail the stemmer
("replcation" stems to "replcat", three edits from "replic"), so every single edit of the word as
typed (deletions, transpositions, substitutions and insertions of a-z and of the word's own
letters: ~550 for ten letters, stemmed in one tokenizer call) is stemmed too, and one that lands
on a vocabulary term is a candidate at distance 1 ("replcation" + i -> replic, "postgress" - s ->
postgr).

Not corrected: a word whose stem is in the index; a correctly spelled common English word
(memoryd/data/common-words-en.txt.gz, ~37K words: "who is in charge of billing?" must not become
"change" because no note says "charge"); words under 4 characters, words with a digit (ipv4 is
not a typo of ipv6), words over MAX_WORD characters; words with Chinese, Japanese or Korean
characters (kept, as the phrase of bigrams the index tokenizer makes of them, when every bigram
is in the index). A term that yields no token (emoji, punctuation), or is neither in the index
nor correctable, is left out of the rewritten query: it could only make the AND match nothing.
Terms the tokenizer splits ("foo_bar") are taken token by token.

Result: `corrections` maps each corrected word (lowercased) to its best vocabulary stem. A
correction is a prefix query of its stem; when the stemmer would rewrite that prefix so that it
no longer leads to the stem ("deploy" -> "deploi") the longest prefix that survives is used.
`corrected_query` shows, for each correction, the edited word when a single edit reached it
("postgres replication" rather than the stems "postgr replic"), else the stem; what a search
answers (its `corrected_query` and `suggestion`) shows instead the word the notes write
(as_written: "falsificaton" is shown as falsification, never the edit falsificator or the stem
falsif), as the answer's first texts write it where they hold one of the word's readings (its
corrections, or for a word cut short the word's own prefix: "retro" shows as retrospective
where the retrospective answers, not as the correction retry). rewrite() returns None when no
term was corrected, and never raises.
"""

from __future__ import annotations

import bisect
import itertools
import string
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import apsw
import numpy as np

from memoryd.core import malloc, threads
from memoryd.core.logsetup import get_logger
from memoryd.search.ftsquery import prefixes, quote_term
from memoryd.store import entries
from memoryd.store import tokenizer as cjk_tokenizer
from memoryd.store.dialect import Tokenize, query_tokenizers
from memoryd.store.protocol import Connection
from memoryd.text.entity_cues import common_words  # one copy (4 MB) for both
from memoryd.text.symbolchars import has_symbol, is_symbol

log = get_logger("memoryd.search.fuzzy")

PREFIX = 8  # characters of a term that its deletion keys are built from
MAX_EDITS = 2
MIN_WORD = 4  # shorter query words are not corrected
MIN_TERM = 3  # shorter vocabulary terms are never offered as corrections
MAX_WORD = 40  # longer words are ids, hashes or junk: not corrected, not offered
MAX_ALTERNATIVES = 3
MAX_TERMS = 64

_MULTIPLIERS = np.random.default_rng(0x6D656D).integers(
    1, 2**63, size=PREFIX, dtype=np.uint64
) | np.uint64(1)
_ASCII = frozenset(string.ascii_lowercase)


@dataclass(frozen=True)
class FuzzyResult:
    match: str  # FTS5 MATCH: per term an OR group of the original and its corrections, ANDed
    corrections: dict[str, str]  # word as typed -> best correction (a vocabulary stem)
    corrected_query: str  # the query with corrections applied, e.g. "docker network"
    # each correction: (its index among the query's words, the word as typed, the stem, the
    # prefix query for it, the stems its OR group asks for as prefixes: its corrections' and,
    # for a word cut short, the word's own)
    fixes: tuple[tuple[int, str, str, str, tuple[str, ...]], ...] = ()


# --- pure parts ---------------------------------------------------------------------------------


def damerau(a: str, b: str, limit: int = MAX_EDITS) -> int:
    """Optimal string alignment distance (a transposition counts 1), capped at limit + 1."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        best = i
        ai = a[i - 1]
        for j in range(1, len(b) + 1):
            cost = 0 if ai == b[j - 1] else 1
            d = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ai == b[j - 2] and a[i - 2] == b[j - 1]:
                d = min(d, prev2[j - 2] + 1)
            cur[j] = d
            best = min(best, d)
        if best > limit:
            return limit + 1
        prev2, prev = prev, cur
    return min(prev[-1], limit + 1)


def max_edits(word: str) -> int:
    return 1 if len(word) < 6 else MAX_EDITS


def _has_number(word: str) -> bool:
    return not word.isalpha() and any(c.isnumeric() for c in word)  # isalpha: the fast path


def correctable(word: str) -> bool:
    return (
        MIN_WORD <= len(word) <= MAX_WORD
        and not _has_number(word)
        and not cjk_tokenizer.has_cjk(word)
    )


def _offerable(term: str) -> bool:
    return (
        MIN_TERM <= len(term) <= MAX_WORD
        and not _has_number(term)
        and (term.isascii() or not has_symbol(term))  # a symbol is never a correction
    )


def deletions(word: str, depth: int) -> set[str]:
    """The word and every string made by deleting up to depth characters from it."""
    out = {word}
    frontier = {word}
    for _ in range(depth):
        frontier = {w[:i] + w[i + 1 :] for w in frontier if len(w) > 1 for i in range(len(w))}
        out |= frontier
    return out


def single_edits(word: str) -> list[str]:
    """Every string one deletion, transposition, substitution or insertion away (Norvig)."""
    letters = sorted(_ASCII | set(word))
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = [a + b[1:] for a, b in splits if b]
    out += [a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1 and b[0] != b[1]]
    out += [a + c + b[1:] for a, b in splits if b for c in letters if c != b[0]]
    out += [a + c + b for a, b in splits for c in letters]
    return out


def _hash_codes(codes: np.ndarray) -> np.ndarray:
    """Rows of code points (zero padded) -> 32-bit keys; padding does not change a key."""
    h = codes.astype(np.uint64) @ _MULTIPLIERS[: codes.shape[1]]
    return (h >> np.uint64(32)).astype(np.uint32)


def _codes(words: Sequence[str]) -> np.ndarray:
    arr = np.array([w[:PREFIX] for w in words], dtype=f"<U{PREFIX}")
    return arr.view(np.uint32).reshape(len(words), PREFIX)


def hash_keys(words: Sequence[str]) -> np.ndarray:
    return _hash_codes(_codes(words))


@dataclass(frozen=True, eq=False)
class Vocabulary:
    """An immutable snapshot of the index's terms with their deletion index."""

    docs: dict[str, int]  # every term -> number of entries containing it
    terms: list[str]  # terms that may be offered as corrections, by id
    lengths: np.ndarray  # their lengths (int16)
    keys: np.ndarray  # sorted deletion keys (uint32)
    ids: np.ndarray  # term id of each key (int32)
    generation: int = 0
    built_at: float = 0.0
    ordered: tuple[str, ...] = ()  # every term, sorted: which ones a prefix begins (`begins`)

    @classmethod
    def build(
        cls, rows: Iterable[tuple[str, int]], generation: int = 0, built_at: float = 0.0
    ) -> Vocabulary:
        docs = {str(t): int(d) for t, d in rows}
        terms = [t for t in docs if _offerable(t)]
        n = len(terms)
        codes = _codes(terms)
        lengths = np.fromiter(map(len, terms), dtype=np.int16, count=n)
        short = np.minimum(lengths, PREFIX)
        every = np.arange(n, dtype=np.int32)
        keys: list[np.ndarray] = []
        ids: list[np.ndarray] = []
        for k in range(MAX_EDITS + 1):
            for dropped in itertools.combinations(range(PREFIX), k):
                # deleting a padding position repeats a shorter deletion: skip those rows
                members = every if not dropped else every[short > dropped[-1]]
                kept = [j for j in range(PREFIX) if j not in dropped]
                keys.append(_hash_codes(codes[members][:, kept]))
                ids.append(members)
        # one sort of (key << 32 | id) is much faster than an argsort of the keys
        packed = np.concatenate(keys).astype(np.uint64) << np.uint64(32)
        packed |= np.concatenate(ids).astype(np.uint64)
        packed.sort()
        sorted_keys = (packed >> np.uint64(32)).astype(np.uint32)
        sorted_ids = (packed & np.uint64(0xFFFFFFFF)).astype(np.int32)
        ordered = tuple(sorted(docs))
        return cls(docs, terms, lengths, sorted_keys, sorted_ids, generation, built_at, ordered)

    def begins(self, prefix: str) -> bool:
        """Whether some term starts with prefix."""
        at = bisect.bisect_left(self.ordered, prefix)
        return at < len(self.ordered) and self.ordered[at].startswith(prefix)

    def near(self, word: str, limit: int) -> list[tuple[str, int]]:
        """Offerable terms within limit edits of word, with their distances."""
        if not self.terms:
            return []
        qkeys = hash_keys(sorted(deletions(word[:PREFIX], limit)))
        lo = np.searchsorted(self.keys, qkeys, side="left").tolist()
        hi = np.searchsorted(self.keys, qkeys, side="right").tolist()
        parts = [self.ids[a:b] for a, b in zip(lo, hi, strict=True) if b > a]
        if not parts:
            return []
        found = np.unique(np.concatenate(parts))
        found = found[np.abs(self.lengths[found].astype(np.int32) - len(word)) <= limit]
        out = []
        for i in found.tolist():
            term = self.terms[i]
            dist = damerau(word, term, limit)
            if dist <= limit:
                out.append((term, dist))
        return out


# --- the matcher --------------------------------------------------------------------------------


class FuzzyMatcher:
    """Corrects query terms against the index's vocabulary; one per daemon, shared by threads."""

    def __init__(
        self,
        min_similarity: float = 0.4,
        refresh_interval: float = 30.0,
        common: frozenset[str] | None = None,
        *,
        read: Callable[[Callable[[Connection], Any]], Any] | None = None,
        min_rebuild_s: float = 10.0,
    ) -> None:
        self.min_similarity = min_similarity
        self.refresh_interval = refresh_interval
        self.common = common_words() if common is None else common  # never corrected
        self._lock = threading.Lock()
        self._vocab: Vocabulary | None = None
        self._generation = 0
        self._read = read
        self.min_rebuild_s = min_rebuild_s
        self._pool: ThreadPoolExecutor | None = None  # one thread: one reader connection
        self._rebuilding: Future[None] | None = None
        self._lock_state = threading.Lock()
        self._rebuild_at = -1e9  # monotonic time the last background rebuild started

    def invalidate(self) -> None:
        """The index changed: the next rewrite() rebuilds the vocabulary."""
        self._generation += 1

    def _fresh(self, vocab: Vocabulary | None) -> bool:
        return (
            vocab is not None
            and vocab.generation == self._generation
            and time.monotonic() - vocab.built_at < self.refresh_interval
        )

    def vocabulary(self, con: Connection) -> Vocabulary | None:
        """The current snapshot, rebuilt from con when stale; None when it cannot be read.
        With `read`, a stale snapshot is returned as it is and rebuilt in the background."""
        vocab = self._vocab
        if self._fresh(vocab):
            return vocab
        if vocab is not None and self._read is not None:
            self._rebuild_soon()
            return vocab
        return self._build(con)

    def _rebuild_soon(self) -> None:
        """Start a background rebuild unless one runs or one started under min_rebuild_s ago."""
        with self._lock_state:
            running = self._rebuilding is not None and not self._rebuilding.done()
            if running or time.monotonic() - self._rebuild_at < self.min_rebuild_s:
                return
            if self._pool is None:
                self._pool = threads.Pool(
                    1,
                    thread_name_prefix="memoryd-fuzzy",
                    initializer=malloc.lower_thread_priority,  # bookkeeping: queries first
                )
            self._rebuild_at = time.monotonic()
            try:
                self._rebuilding = self._pool.submit(self._rebuild)
            except threads.ThreadLimit:  # bookkeeping: tried again after min_rebuild_s
                self._rebuilding = None

    def close(self) -> None:
        """Wait for a background rebuild and stop its thread."""
        with self._lock_state:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _rebuild(self) -> None:
        read = self._read
        try:
            if read is not None:
                read(self._build)
        except Exception as exc:  # the store closed under it, or a read failed: next time
            log.debug("fuzzy vocabulary rebuild failed", error=str(exc))

    def _build(self, con: Connection) -> Vocabulary | None:
        vocab = self._vocab
        # someone else is rebuilding: the previous snapshot will do (the first build is awaited)
        if not self._lock.acquire(blocking=vocab is None):
            return vocab
        try:
            vocab = self._vocab
            if self._fresh(vocab):
                return vocab
            generation, started = self._generation, time.monotonic()
            try:
                rows = entries.vocabulary(con)
            except apsw.Error as exc:
                log.warning("fuzzy vocabulary unavailable", error=str(exc))
                return vocab
            vocab = Vocabulary.build(rows, generation, time.monotonic())
            self._vocab = vocab
            log.debug(
                "fuzzy vocabulary built",
                terms=len(vocab.docs),
                keys=len(vocab.keys),
                ms=round((time.monotonic() - started) * 1000, 1),
            )
            return vocab
        finally:
            self._lock.release()

    def rewrite(
        self, con: Connection, terms: Sequence[str], excluded: Sequence[str] = ()
    ) -> FuzzyResult | None:
        """Terms with corrections as a MATCH expression, without the texts that match any of
        `excluded` (the query's `-term`s, FTS5 expressions: ParsedQuery.excluded); None when
        nothing was corrected."""
        vocab = self.vocabulary(con)
        if vocab is None or not vocab.docs:
            return None
        try:
            want_cjk = any(isinstance(t, str) and cjk_tokenizer.has_cjk(t) for t in terms)
            tok, cjk = query_tokenizers(con, cjk=want_cjk)
            return self._rewrite(vocab, tok, terms, cjk, excluded)
        except apsw.Error as exc:
            log.warning("fuzzy rewrite failed", error=str(exc))
            return None

    def _rewrite(
        self,
        vocab: Vocabulary,
        tok: Tokenize,
        terms: Sequence[str],
        cjk: Tokenize | None = None,
        excluded: Sequence[str] = (),
    ) -> FuzzyResult | None:
        groups: list[str] = []
        words: list[str] = []
        corrections: dict[str, str] = {}
        fixes: list[tuple[int, str, str, str, tuple[str, ...]]] = []
        seen: set[str] = set()
        for term in terms:  # a symbol (🚀, →) is never corrected, nor dropped: kept as typed
            if isinstance(term, str) and is_symbol(term) and term not in seen:
                seen.add(term)
                groups.append(quote_term(term))
                words.append(term)
        for word, stem in _words(tok, terms):
            if stem in seen:
                continue
            seen.add(stem)
            if stem in vocab.docs or (
                cjk is not None
                and cjk_tokenizer.has_cjk(word)
                and all(s in vocab.docs for s in _stems(cjk, word) or ["\0"])
            ):
                groups.append(quote_term(word))
                words.append(word)
                continue
            if not correctable(word) or word in self.common:
                continue
            best = self._best(vocab, tok, word, stem)
            if not best:
                continue
            corrections[word] = best[0][0]
            alternatives = [quote_term(_stable_prefix(tok, t)) + "*" for t, _ in best]
            # a word cut short ("retro" for retrospective) is read as the start of a longer
            # word too, as keyword search reads it (ftsquery.prefix_match), not only as a typo
            cut = [w for w in prefixes(word) if word.isalpha() and vocab.begins(w)]
            asked = [_stable_prefix(tok, t) for t, _ in best] + cut
            heads = tuple(s for w in asked for s in _stems(tok, w)[:1])  # as FTS5 reads them
            cut = [f"{quote_term(w)}*" for w in cut]
            groups.append("(" + " OR ".join([quote_term(word), *alternatives, *cut]) + ")")
            fixes.append((len(words), word, best[0][0], alternatives[0], heads))
            words.append(best[0][1])
        if not corrections:
            return None
        match = " AND ".join(groups)
        for expression in excluded:
            match = f"({match}) NOT {expression}"
        return FuzzyResult(match, corrections, " ".join(words), tuple(fixes))

    def _best(
        self, vocab: Vocabulary, tok: Tokenize, word: str, stem: str
    ) -> list[tuple[str, str]]:
        """The closest terms for one word, as (term, readable form): best distance only, most
        documents first. The readable form is the edited word when one edit reached the term."""
        found: dict[str, int] = {}
        readable: dict[str, str] = {}

        def offer(term: str, dist: int, length: int) -> None:
            if 1 - dist / max(length, len(term)) >= self.min_similarity:
                found[term] = min(dist, found.get(term, dist))

        if len(stem) >= MIN_TERM:
            for term, dist in vocab.near(stem, max_edits(stem)):
                offer(term, dist, len(stem))
        variants = single_edits(word)
        stems = _stems(tok, " ".join(variants))
        if len(stems) == len(variants):  # otherwise some edit split the word: skip this path
            for variant, s in zip(variants, stems, strict=True):
                if s not in readable and s in vocab.docs and _offerable(s):
                    readable[s] = variant
                    offer(s, 1, len(word))
        if not found:
            return []
        top = min(found.values())
        ranked = sorted(
            (t for t, d in found.items() if d == top), key=lambda t: (-vocab.docs[t], t)
        )
        return [(t, readable.get(t, t)) for t in ranked[:MAX_ALTERNATIVES]]


# --- SQLite and the tokenizer -------------------------------------------------------------------


def _stems(tok: Tokenize, text: str) -> list[str]:
    data = text.encode("utf-8", "replace")
    return list(
        tok(data, apsw.FTS5_TOKENIZE_QUERY, None, include_offsets=False, include_colocated=False)
    )


def _words(tok: Tokenize, terms: Sequence[str]) -> list[tuple[str, str]]:
    """(word as typed, stem) for each token of the terms, in order."""
    out: list[tuple[str, str]] = []
    for term in list(terms)[:MAX_TERMS]:
        if not isinstance(term, str) or not term:
            continue
        data = term.lower().encode("utf-8", "replace")
        for start, end, stem in tok(
            data, apsw.FTS5_TOKENIZE_QUERY, None, include_offsets=True, include_colocated=False
        ):
            out.append((data[start:end].decode("utf-8", "replace"), stem))
    return out


def _stable_prefix(tok: Tokenize, stem: str) -> str:
    """The longest prefix of stem that the query tokenizer leaves leading to stem."""
    prefix = stem
    while len(prefix) > 1:
        got = _stems(tok, prefix)
        if len(got) == 1 and stem.startswith(got[0]):
            return prefix
        prefix = prefix[:-1]
    return stem
