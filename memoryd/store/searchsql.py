"""The queries search runs: the keyword pool, candidate filtering for the vector pool, snippets.

`where` / `params` always come from `entries.filter_sql` (an expression over aliases e and d);
user text only ever travels as a parameter. `match` is an FTS5 expression (ftsquery.py); on
PostgreSQL each query goes to store/pg/fts.py, which translates it to a tsquery.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from memoryd.store import entrytexts, ftsprune, rowsnippets, wordrows
from memoryd.store.connmemo import PerVersion, data_version
from memoryd.store.dialect import is_postgres
from memoryd.store.protocol import Connection

SIGNAL_COLUMNS = ("kind", "importance", "access_count", "tier", "updated_at", "last_accessed_at")
_BM25 = ftsprune.BM25
_SIGNAL_LIST = [f"e.{c}" for c in SIGNAL_COLUMNS]
_SIGNALS = ", ".join(_SIGNAL_LIST)

# The signal columns (SIGNAL_COLUMNS, in order) of the entries the keyword pool read on the
# search's own connection, by id: the rows are in hand for the join already, and what one read
# transaction read is what the ranking's later statements on it would read again (the signal
# summary and rows, searcher._signal_rows: ~400 lookups at 100K chunks, 1.3 ms). Rows read on
# another connection (the other half of a split ranking) are not kept: another snapshot.
Seen = dict[int, tuple[Any, ...]]


def keyword_sql(where: str) -> str:
    """SQL for the keyword pool: FTS5 BM25 of every match, filtered, the best `?` kept."""
    return (
        f"SELECT e.id, {_BM25} AS score, e.document_id, {_SIGNALS}"
        " FROM entries_fts JOIN entries e ON e.id = entries_fts.rowid"
        " LEFT JOIN documents d ON d.id = e.document_id"
        f" WHERE entries_fts MATCH ? AND {where} ORDER BY score LIMIT ?"
    )


def ranked_first_sql(where: str, part: bool = False, rowid: str = "") -> str:
    """SQL for the keyword pool's first try: FTS5 ranks its matches alone and only the best
    `?` are looked up in `entries`, each with whether it passes the filter, instead of every
    match being looked up and filtered before the ranking (a common word matches a fifth of a
    100K-chunk index, and those lookups cost more than the ranking). `part`: only the matches
    whose rowid is in [?, ?) (one part of a split ranking, `keyword_pool`). `rowid`: a
    condition on `entries_fts.rowid` each match is checked against before it is ranked
    (Prefilter)."""
    rowids = " AND rowid >= ? AND rowid < ?" if part else ""
    rowids += f" AND {rowid}" if rowid else ""
    return (
        f"SELECT e.id, m.score, e.document_id, ({where}), {_SIGNALS} FROM"
        f" (SELECT rowid, {_BM25} AS score FROM entries_fts"
        f"  WHERE entries_fts MATCH ?{rowids} ORDER BY score LIMIT ?) m"
        " JOIN entries e ON e.id = m.rowid LEFT JOIN documents d ON d.id = e.document_id"
        " ORDER BY m.score, e.id"
    )


RANKED_FIRST_SLACK = 64  # matches ranked beyond the pool, for those the filter drops
SPLIT_MIN = 20_000  # from this many rowids up, the keyword pool's ranking is split in two

Ranked = ftsprune.Ranked  # id, bm25, document id, passes the filter
Beside = Callable[[Callable[[Connection], Any]], Future[Any]]


@dataclass(frozen=True)
class Prefilter:
    """A filter split for the keyword pool (SQLite): `rowid`, a condition on the FTS5 rowid
    (an entities filter: store/entityfilter.rowid_sql) checked on every match before the ranking,
    and `where`, the rest of the filter, checked on the best ranked ones."""

    where: str
    params: list[Any]
    rowid: str
    rowid_params: list[Any]
    # the rowid condition for a given connection in place of `rowid` (a wide filter's set, held
    # in memory: store/entityrowids.py)
    check: Callable[[Connection], tuple[str, list[Any]]] | None = None


def _ranked(
    con: Connection,
    match: str,
    where: str,
    params: Sequence[Any],
    first: int,
    part: tuple[int, int] | None = None,
    pre: Prefilter | None = None,
    seen: Seen | None = None,
) -> Ranked:
    rowid, rowid_params = ("", []) if pre is None else _rowid(con, pre)
    args = [*params, match, *(part or ()), *rowid_params, first]
    rows = con.execute(ranked_first_sql(where, part is not None, rowid), args).fetchall()
    if seen is not None:
        seen.update((int(r[0]), tuple(r[4:])) for r in rows)
    return [
        (int(i), float(score), None if doc is None else int(doc), bool(ok))
        for i, score, doc, ok, *_ in rows
    ]


def _all_matches(
    con: Connection, match: str, where: str, params: Sequence[Any], size: int, seen: Seen | None
) -> list[tuple[int, float, int | None]]:
    """keyword_sql's rows: every match ranked and filtered, the best `size` kept."""
    rows = con.execute(keyword_sql(where), [match, *params, size]).fetchall()
    if seen is not None:
        seen.update((int(r[0]), tuple(r[3:])) for r in rows)
    return [(int(i), float(score), None if doc is None else int(doc)) for i, score, doc, *_ in rows]


def _rowid(con: Connection, pre: Prefilter) -> tuple[str, list[Any]]:
    return pre.check(con) if pre.check is not None else (pre.rowid, pre.rowid_params)


def idle_core() -> bool:
    """Whether a whole core is idle: the load average (the last minute's, from /proc/loadavg:
    microseconds) below the number of cores less one. The halves of a split ranking cost more
    CPU together than the whole (each parses the query and counts its terms' matches: +7 ms at
    100K chunks), which a busy machine pays in time (16% slower at load 10 on 2 cores, no faster
    at load 3.6: BENCHMARKS.md, issue 23.3)."""
    try:
        return os.getloadavg()[0] < (os.cpu_count() or 1) - 1
    except OSError:
        return False


def _ranked_split(
    con: Connection,
    match: str,
    where: str,
    params: Sequence[Any],
    first: int,
    beside: Beside,
    seen: Seen | None = None,
) -> Ranked:
    """The best `first` matches, ranked in two halves of the rowid range at once: the upper on
    another thread and read connection (`beside`), the lower here (FTS5's bm25 costs about a
    microsecond a match, and a common word matches a fifth of a 100K-chunk index), when the
    index is large and a core is idle. Each half keeps its best `first`, so the best `first`
    of both are those of the whole; ties in bm25 go to the lower rowid, as in the single query
    (SQLite's sorter keeps the scan's order, and FTS5 scans in rowid order)."""
    row = con.execute("SELECT max(id) FROM entries").fetchone() if idle_core() else None
    top = int(row[0] or 0) if row else 0  # every entry is indexed: its rowid is its id
    if top < SPLIT_MIN:
        return _ranked(con, match, where, params, first, seen=seen)
    mid = top // 2
    upper = beside(lambda other: _ranked(other, match, where, params, first, (mid, top + 1)))
    lower = _ranked(con, match, where, params, first, (0, mid), seen=seen)
    return sorted(lower + upper.result(), key=lambda r: (r[1], r[0]))[:first]


def _all_words_first(
    con: Connection,
    match: str,
    where: str,
    params: Sequence[Any],
    first: int,
    beside: Beside | None,
    pre: Prefilter | None,
    seen: Seen | None = None,
) -> Ranked | None:
    """ftsprune.all_words_first on a large index: the first ranking of an any-word query read
    from the rows that hold every word, when it provably equals the whole ranking; else None."""
    if entry_count(con) < ftsprune.PRUNE_MIN:
        return None
    w, p = (pre.where, pre.params) if pre is not None else (where, params)
    return ftsprune.all_words_first(
        con, match, lambda expr: _ranked(con, expr, w, p, first, pre=pre, seen=seen), first, beside
    )


def keyword_pool(
    con: Connection,
    match: str,
    where: str,
    params: Sequence[Any],
    size: int,
    *,
    narrow: bool = False,
    beside: Beside | None = None,
    pre: Prefilter | None = None,
    seen: Seen | None = None,
) -> list[tuple[int, float, int | None]]:
    """(entry id, bm25 (lower is better), document id) of the best `size` matches that pass
    the filter. Unless the filter is `narrow` (it may pass few texts: a path, tags, dates),
    the best `size` + RANKED_FIRST_SLACK matches are ranked and filtered first, and only when
    the filter leaves fewer than `size` of them and there were more matches does the full
    query rank and filter every match. Either way the answer is the best `size` that pass: a
    match outside the first ranked ones ranks below all of them. `beside` (SQLite): runs a
    function on another thread's read connection; with it a large index's first ranking is
    split in two halves ranked at once (`_ranked_split`); with it, an any-word query's first
    ranking may come from the rows that hold every word alone (`ftsprune`: when no other row can
    outrank them, the same rows in the same order). With `pre` (an entities filter)
    the first try ranks only the matches it passes, whatever `narrow` says: the check is a
    probe of a set made once, before each match is scored or looked up. `seen`: the signal
    columns of every row read on `con` are put in it (Seen)."""
    if is_postgres(con):  # the signal columns read with the rows
        from memoryd.store.pg import pool  # imported on first use: SQLite never loads it

        found = pool.keyword_pool(con, match, where, params, size, _SIGNAL_LIST)
        if seen is not None:
            seen.update((r[0], tuple(r[3:])) for r in found)
        return [(i, score, doc) for i, score, doc, *_ in found]
    if narrow and pre is None:
        return _all_matches(con, match, where, params, size, seen)
    first = size + RANKED_FIRST_SLACK
    ranked = _all_words_first(con, match, where, params, first, beside, pre, seen)
    if ranked is None:  # every match ranked
        if pre is not None:
            ranked = _ranked(con, match, pre.where, pre.params, first, pre=pre, seen=seen)
        elif beside is not None:
            ranked = _ranked_split(con, match, where, params, first, beside, seen)
        else:
            ranked = _ranked(con, match, where, params, first, seen=seen)
    rows = [(i, score, doc) for i, score, doc, ok in ranked if ok][:size]
    if len(rows) < size and len(ranked) >= first:  # the filter dropped too many: all of them
        return _all_matches(con, match, where, params, size, seen)
    return rows


def best_bm25(con: Connection, match: str, where: str, params: Sequence[Any]) -> float | None:
    """The best (lowest) BM25 of any entry that matches and passes the filter."""
    rows = keyword_pool(con, match, where, params, 1)
    return rows[0][1] if rows else None


# The best BM25 of recent queries (an unfiltered keyword pool's first), per connection while its
# data version holds: a filtered search of a query searched without the filter just before (an
# agent narrowing a search down) needs no second ranking for its norm. `key`: the query and
# the filter it was ranked under; `now`: when (an entry that expired since voids it).
_BEST: PerVersion[tuple[float, float | None]] = PerVersion(64)


def note_best(con: Connection, key: Hashable, now: float, best: float | None) -> None:
    if not is_postgres(con):  # there the expiry check below is a round trip every search
        _BEST.put(con, data_version(con), key, (now, best))


def known_best(con: Connection, key: Hashable, now: float) -> tuple[bool, float | None]:
    """(whether it is known, the best BM25) from note_best, without ranking anything. Not
    kept on PostgreSQL: search asks on every search, filtered or not, and the check that no
    entry expired since would cost a round trip where the answer is used only when filtered."""
    found, known = _BEST.get(con, data_version(con), key)
    if not found or known is None:
        return False, None
    then, best = known
    lo, hi = min(then, now), max(then, now)
    if (
        lo != hi
        and con.execute(
            "SELECT 1 FROM entries WHERE expires_at > ? AND expires_at <= ? LIMIT 1", [lo, hi]
        ).fetchall()
    ):
        return False, None  # an entry expired in between (or came back, for a clock set back)
    return True, best


_ENTRY_ROWS = (
    "SELECT e.id, e.content_hash, e.document_id{} FROM entries e"
    " LEFT JOIN documents d ON d.id = e.document_id WHERE "
)


def _entry_rows(
    con: Connection, condition: str, params: Sequence[Any], seen: Seen | None = None
) -> Iterator[tuple[int, str, int | None]]:
    """(entry id, content hash, document id) of the entries matching `condition`; with `seen`
    (SQLite), each row's signal columns are put in it too (Seen)."""
    if seen is None:
        for i, h, doc in con.execute(_ENTRY_ROWS.format("") + condition, params):
            yield int(i), str(h), None if doc is None else int(doc)
        return
    rows = con.execute(_ENTRY_ROWS.format(", " + _SIGNALS) + condition, params).fetchall()
    seen.update((r[0], r[3:]) for r in rows)  # an id is an int, a hash a str, as read
    yield from (r[:3] for r in rows)  # (the vector pool's ~200: 0.3 ms less than one by one)


def entries_with_hashes(
    con: Connection,
    hashes: Sequence[str],
    where: str,
    params: Sequence[Any],
    seen: Seen | None = None,
) -> list[tuple[int, str, int | None]]:
    """(entry id, content hash, document id) of the entries that carry one of the hashes and
    pass the filter. SQLite: one statement over a JSON array of the hashes (the vector pool's
    200 at 100K: 1.7 ms of CPU against 3.1 for an IN list of 200 parameters, under load), the
    rows' signal columns put in `seen` when given (the search's own connection: Seen)."""
    if not is_postgres(con):
        condition = f"e.content_hash IN (SELECT value FROM json_each(?)) AND {where}"
        return list(_entry_rows(con, condition, [json.dumps(list(hashes)), *params], seen))
    if seen is not None:  # the search's own read: with what it asks of them next
        from memoryd.store.pg import held  # imported on first use: SQLite never loads it

        return held.hash_rows(con, hashes, where, params, _SIGNALS, seen)
    return list(_entry_rows(con, f"e.content_hash = ANY(?) AND {where}", [list(hashes), *params]))


def entries_with_ids(
    con: Connection,
    ids: Sequence[int],
    hashes: Sequence[str],
    where: str,
    params: Sequence[Any],
    seen: Seen | None = None,
) -> list[tuple[int, str, int | None]]:
    """entries_with_hashes' rows read by entry id: those of the given entries (a superset of
    the entries that carry the hashes: search/entrykeys.py) that carry one of the hashes and
    pass the filter (200 rows by id at 100K: ~0.9 ms, against ~1.9 through the hash index).
    `seen`: as entries_with_hashes' (SQLite)."""
    if not ids:
        return []
    wanted = set(hashes)
    condition = f"e.id IN (SELECT value FROM json_each(?)) AND {where}"
    rows = _entry_rows(con, condition, [json.dumps([int(i) for i in ids]), *params], seen)
    return [row for row in rows if row[1] in wanted]


def filtered_entries(
    con: Connection, where: str, params: Sequence[Any], limit: int
) -> list[tuple[int, str, int | None]]:
    """(entry id, content hash, document id) of up to `limit` entries that pass the filter;
    a negative limit: all of them (PostgreSQL refuses SQLite's LIMIT -1, so no LIMIT then)."""
    cap, args = (" LIMIT ?", [*params, limit]) if limit >= 0 else ("", list(params))
    return [
        (int(i), str(h), None if doc is None else int(doc))
        for i, h, doc in con.execute(
            "SELECT e.id, e.content_hash, e.document_id FROM entries e"
            f" LEFT JOIN documents d ON d.id = e.document_id WHERE {where}{cap}",
            args,
        )
    ]


def entries_after(con: Connection, after: int, limit: int) -> list[tuple[int, bool, str]]:
    """(id, whether it is a chunk, content hash) of up to `limit` entries with an id above
    `after`, in id order (search/entrykeys.py follows the chunks' hashes with it)."""
    return [
        (int(i), bool(chunk), str(h))
        for i, chunk, h in con.execute(
            "SELECT id, kind = 'chunk', content_hash FROM entries WHERE id > ? ORDER BY id LIMIT ?",
            [after, limit],
        )
    ]


def memory_ids(con: Connection, limit: int = -1) -> list[int]:
    """The ids of every memory (off the index by kind); with a `limit`, at most that many."""
    if limit >= 0:
        sql, args = "SELECT id FROM entries WHERE kind = 'memory' LIMIT ?", [limit]
    else:
        sql, args = "SELECT id FROM entries WHERE kind = 'memory'", []
    return [int(r[0]) for r in con.execute(sql, args)]


def hashes_of(con: Connection, ids: Sequence[int]) -> list[str]:
    """The content hashes of the given entries (those that exist)."""
    if not ids:
        return []
    return [
        str(r[0])
        for r in con.execute(
            "SELECT content_hash FROM entries WHERE id IN (SELECT value FROM json_each(?))",
            [json.dumps([int(i) for i in ids])],
        )
    ]


def signal_rows(
    con: Connection, ids: Iterable[int], seen: Seen | None = None
) -> dict[int, dict[str, Any]]:
    """The columns ranking signals read, per entry id (SQLite: one statement over a JSON array
    of the ids, a quarter faster than batches of IN lists for the ~800 of a 400-chunk pool);
    those in `seen` (read on `con` in this transaction already) from it."""
    known, ids = seen or {}, list(ids)
    out = {i: dict(zip(SIGNAL_COLUMNS, known[i], strict=True)) for i in ids if i in known}
    ids = [i for i in ids if i not in known]
    if not ids:
        return out
    cols = ", ".join(SIGNAL_COLUMNS)
    if is_postgres(con):
        rows = con.execute(f"SELECT id, {cols} FROM entries WHERE id = ANY(?)", [ids])
    else:
        rows = con.execute(
            f"SELECT id, {cols} FROM entries WHERE id IN (SELECT value FROM json_each(?))",
            [json.dumps(ids)],
        )
    out.update((int(row[0]), dict(zip(SIGNAL_COLUMNS, row[1:], strict=True))) for row in rows)
    return out


_KIND, _ACCESS, _UPDATED = (SIGNAL_COLUMNS.index(c) for c in ("kind", "access_count", "updated_at"))


def signal_summary(
    con: Connection, backed: Sequence[int], tail: Sequence[int], seen: Seen | None = None
) -> tuple[int, float | None, set[int], int | None] | None:
    """What ranking needs of every candidate before its signal row (search/bounds.py), in one
    statement instead of a row each: how many of the entries exist, the newest `updated_at` of
    the `backed` ones (recency counts from it), the ids of the memories among them, and the
    lowest access count (a frequency signal is in 0..1 only from 0 up). Those in `seen` (read
    on `con` in this transaction already) are summed up from it and not read again (distinct
    ids: searcher._signal_rows). PostgreSQL: the rows of those not in `seen` are read into it
    (the rows are read anyway), so `signal_rows` reads nothing after; None without `seen`."""
    if is_postgres(con):
        if seen is None:
            return None  # the rows are read anyway (searcher._finish)
        rows = signal_rows(con, [i for i in (*backed, *tail) if i not in seen])
        seen.update((i, tuple(r[c] for c in SIGNAL_COLUMNS)) for i, r in rows.items())
        return _seen_summary(seen, backed, tail)
    if not seen:
        return _summary(con, backed, tail)
    count, newest, memories, low = _summary(
        con, [i for i in backed if i not in seen], [i for i in tail if i not in seen]
    )
    seen_count, seen_newest, seen_memories, seen_low = _seen_summary(seen, backed, tail)
    return (
        count + seen_count,
        max((d for d in (seen_newest, newest) if d is not None), default=None),
        memories | seen_memories,
        min((c for c in (seen_low, low) if c is not None), default=None),
    )


def _seen_summary(
    seen: Seen, backed: Sequence[int], tail: Sequence[int]
) -> tuple[int, float | None, set[int], int | None]:
    """signal_summary's figures over those of the entries in `seen`."""
    rows = [seen[i] for i in (*backed, *tail) if i in seen]
    dates = [float(seen[i][_UPDATED]) for i in backed if i in seen]
    counts = [int(r[_ACCESS]) for r in rows]
    return (
        len(rows),
        max(dates, default=None),
        {i for i in (*backed, *tail) if i in seen and seen[i][_KIND] == "memory"},
        min(counts, default=None),
    )


def _summary(
    con: Connection, backed: Sequence[int], tail: Sequence[int]
) -> tuple[int, float | None, set[int], int | None]:
    if not backed and not tail:
        return 0, None, set(), None
    row = con.execute(
        "SELECT count(*), max(e.updated_at) FILTER (WHERE NOT c.tail),"
        " json_group_array(e.id) FILTER (WHERE e.kind = 'memory'), min(e.access_count)"
        " FROM (SELECT value AS id, 0 AS tail FROM json_each(?)"
        "  UNION ALL SELECT value, 1 FROM json_each(?)) c JOIN entries e ON e.id = c.id",
        [json.dumps(list(backed)), json.dumps(list(tail))],
    ).fetchone()
    if row is None:
        return 0, None, set(), None
    count, newest, memories, low = row
    return (
        int(count),
        None if newest is None else float(newest),
        {int(i) for i in json.loads(memories or "[]")},
        None if low is None else int(low),
    )


def text_lengths(con: Connection, ids: Sequence[int]) -> dict[int, int]:
    """Characters of each entry's text, per id (the ranking steadies short chunks' similarity);
    PostgreSQL: as `read_ahead` read them, when it did."""
    known = _pg_held().lengths(con, ids) if is_postgres(con) else None
    if known is not None:
        return known
    return {int(i): int(n or 0) for i, n in entrytexts.per_id(con, "length(content)", ids)}


def snippets(
    con: Connection, match: str, ids: Sequence[int], open_mark: str, close_mark: str
) -> dict[int, str]:
    """FTS5 snippets of column 0 for those of the given rows that match, matches wrapped in the
    given markers. SQLite: made from the rows' own text in a private FTS5 table
    (store/rowsnippets.py: a read of every match of the expression cost 2.5-4 ms a search at
    100K chunks, a lookup of each row 0.1-0.4 ms a row; the same snippets)."""
    if not ids:
        return {}
    if is_postgres(con):
        return _pg().snippets(con, match, ids, open_mark, close_mark)
    return rowsnippets.snippets(con, match, ids, open_mark, close_mark)


def matching(con: Connection, match: str, ids: Sequence[int], df: int | None = None) -> set[int]:
    """Those of the given entries that match the FTS5 expression (`df`, its document frequency
    when known: 0 answers at once). SQLite: from the expression's matches, read once into an
    array and remembered while the connection's data version holds (store/wordrows.py: a
    lookup per id parses the expression again, through the Python `cjk` tokenizer, and seeks
    the term's doclist: 1,500 candidates at 100K chunks took ~0.3 s that way; a read of the
    doclist 1-2.5 ms a word, then ~0.02 ms each time the word is asked again)."""
    ids = list(ids)
    if not ids or df == 0:
        return set()
    if is_postgres(con):  # one lookup: the GIN index and `id = ANY(...)`
        return _pg_held().matching(con, match, ids)
    return wordrows.holding(con, match, ids)


def remember_matches(con: Connection, match: str) -> None:
    """Read the expression's matches ahead of a `matching` (SQLite: store/wordrows.py keeps
    them for the connection's data version); PostgreSQL: the expression is noted, and the first
    `matching` of the read asks for every noted one in its statement (store/pg/fts.py)."""
    if is_postgres(con):
        _pg_held().remember_matches(con, match)
    else:
        wordrows.bitmap(con, match)


def match_count(con: Connection, match: str, cap: int) -> int:
    """How many entries match the FTS5 expression, counted up to `cap` (a document frequency)."""
    if is_postgres(con):
        return _pg().match_count(con, match, cap)
    known = wordrows.count(con, match)  # its matches were read for the evidence already
    if known is not None:
        return min(known, cap)
    row = con.execute(
        "SELECT count(*) FROM (SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? LIMIT ?)",
        [match, cap],
    ).fetchone()
    return int(row[0]) if row else 0


def entry_count(con: Connection) -> int:
    """How many entries the keyword index holds (the n of IDF): every entry is indexed (by
    triggers), so the table's count, which SQLite reads from its smallest index (1 ms at 100K
    entries) instead of walking the FTS5 table (30 ms). On PostgreSQL a count of the view costs
    25-40 ms at 100K entries on every search: above 10,000 rows the planner's estimate is
    used instead (IDF needs no exact N)."""
    if is_postgres(con):  # the planner's estimate once large, as the keyword pool's IDF
        return int(_pg().entry_count(con))
    # Remembered per connection while its data version holds (no other connection committed)
    # and it changed nothing itself: a search asks twice (coverage, absent words), 0.8 ms each.
    version = data_version(con)
    found, n = _COUNTS.get(con, version, None)
    if found and n is not None:
        return n
    row = con.execute("SELECT count(*) FROM entries").fetchone()
    n = int(row[0] or 0) if row else 0
    _COUNTS.put(con, version, None, n)
    return n


_COUNTS: PerVersion[int] = PerVersion(1)


def foreign_workspaces(con: Connection, ids: Sequence[int]) -> dict[int, str]:
    """The workspace id of those entries that are another workspace's notes (PostgreSQL, read
    with scope "all"); SQLite holds one workspace: always empty."""
    if not ids or not is_postgres(con):
        return {}
    return {
        int(i): str(w)
        for i, w in con.execute(
            "SELECT id, workspace FROM entries WHERE id = ANY(?) AND workspace IS NOT NULL"
            " AND workspace <> current_setting('memoryd.workspace')",
            [list(ids)],
        )
    }


def _pg() -> Any:
    """store/pg/fts.py, imported on first use: the SQLite install never loads psycopg."""
    from memoryd.store.pg import fts

    return fts


def _pg_held() -> Any:
    from memoryd.store.pg import held  # which entries hold which term; lengths read ahead

    return held
