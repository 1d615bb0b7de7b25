"""What one PostgreSQL read knows of which entries hold which term, and the rows a search
reads ahead (issue 23.4: round trips).

The evidence asks, for each word of the query, which of the candidates hold it
(searchsql.matching). A read-only transaction sees one snapshot, so what it learnt once holds
for the rest of it: PgConnection.held keeps, per tsquery (its SQL and parameters), the entries
looked at and those holding it. The keyword pool's rows tell it for the pool's terms
(store/pg/pool.py); `matching` reads only the entries not known yet, with every expression
noted ahead (`remember_matches`) in the same statement; `read_ahead` reads, in one statement,
what a hybrid search asks next of the vector pool's entries: their signal columns, their
lengths and which of them hold each noted expression.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryd.store.pg import fts
from memoryd.store.protocol import Connection

MATCHING_MAX = 8  # expressions answered by one statement of `matching`


def remember_matches(con: Connection, match: str) -> None:
    """Note an expression that `matching` will be asked about (the evidence reads each query
    word ahead: searchsql.remember_matches), on the read's connection."""
    ahead: list[str] | None = getattr(con, "ahead", None)
    if ahead is not None and match not in ahead:
        ahead.append(match)


Key = tuple[str, tuple[Any, ...]]  # a tsquery's SQL and parameters (fts.term_key)
Held = dict[Key, tuple[set[int], set[int]]]  # per tsquery: the entries looked at, those holding it


def matching(con: Connection, match: str, ids: Sequence[int]) -> set[int]:
    """Those of the entries that match the expression. What the read knows already answers
    (PgConnection.held: the keyword pool's rows, each with whether it holds each of the query's
    terms, `read_ahead`'s and earlier answers); the rest is one lookup on the primary key, and
    with it every expression noted ahead (remember_matches) for the same ids, so the evidence's
    words cost one round trip, not one each. The same rows, the same test (`fts @@ q`)."""
    held: Held | None = getattr(con, "held", None)
    q, qparams = fts.tsquery(match)
    key = fts.term_key(q, qparams)
    if held is not None and key in held:
        known, found = held[key]
        if known.issuperset(ids):
            return found.intersection(ids)
    exprs = [(key, q, qparams)]
    if held is not None:
        exprs += _noted(con, skip=match)[: MATCHING_MAX - 1]
    # the ids some of the expressions do not know yet
    unknown = [
        i
        for i in ids
        if held is None or any(i not in held.get(k, ((), ()))[0] for k, _, _ in exprs)
    ]
    found_now = _holding(con, exprs, unknown, "", only_holding=True)[1]
    if held is None:
        return found_now[0]
    return held[key][1].intersection(ids)


def read_ahead(con: Connection, ids: Sequence[int], columns: str) -> list[tuple[Any, ...]]:
    """(id, *columns) of the entries, in one statement, and with them what a search asks of
    them next: their lengths (`lengths`) and which hold each expression noted ahead (`matching`),
    kept for the rest of the read. `columns`: fixed SQL over `e`."""
    if not ids:
        return []
    exprs = _noted(con)[:MATCHING_MAX]
    rows, _ = _holding(con, exprs, list(ids), f", length(e.content), {columns}")
    lengths: dict[int, int] | None = getattr(con, "lengths", None)
    if lengths is not None:
        lengths.update((int(r[0]), int(r[1] or 0)) for r in rows)
    return [(int(r[0]), *r[2:]) for r in rows]


def hash_rows(
    con: Connection,
    hashes: Sequence[str],
    where: str,
    params: Sequence[Any],
    columns: str,
    seen: dict[int, tuple[Any, ...]],
) -> list[tuple[int, str, int | None]]:
    """searchsql.entries_with_hashes on the search's own read, with what `read_ahead` would
    read of the same entries next, in the same statement (the vector pool's entries when the
    daemon found its nearest texts: search/sharedvec.py): (entry id, content hash, document
    id) of the entries that carry one of the hashes and pass the filter (`where` over e and
    d), their `columns` into `seen` (searchsql.Seen), their lengths and which hold each
    expression noted ahead kept for the rest of the read."""
    if not hashes:
        return []
    exprs = _noted(con)[:MATCHING_MAX]
    cols = f", e.content_hash, e.document_id, length(e.content), {columns}"
    condition = (f"e.content_hash = ANY(?) AND {where}", [list(hashes), *params])
    rows, _ = _holding(con, exprs, None, cols, condition=condition)
    known: dict[int, int] | None = getattr(con, "lengths", None)
    out: list[tuple[int, str, int | None]] = []
    for i, h, doc, length, *signals in rows:
        seen[int(i)] = tuple(signals)
        if known is not None:
            known[int(i)] = int(length or 0)
        out.append((int(i), str(h), None if doc is None else int(doc)))
    return out


def known(con: Connection, ids: Sequence[int], seen: dict[int, Any]) -> bool:
    """Whether this read has every entry's signal columns (`seen`), length and answer for
    each expression noted ahead already (`hash_rows`): read_ahead need not read them."""
    lengths: dict[int, int] | None = getattr(con, "lengths", None)
    held: Held | None = getattr(con, "held", None)
    if lengths is None or held is None:
        return False
    sets = [held.get(k, (set(), set()))[0] for k, _, _ in _noted(con)[:MATCHING_MAX]]
    return all(i in seen and i in lengths and all(i in s for s in sets) for i in ids)


def lengths(con: Connection, ids: Sequence[int]) -> dict[int, int] | None:
    """The entries' lengths as `read_ahead` read them, when it read every one of them."""
    known: dict[int, int] | None = getattr(con, "lengths", None)
    if not known or any(i not in known for i in ids):
        return None
    return {i: known[i] for i in ids}


def _noted(con: Connection, skip: str | None = None) -> list[tuple[Key, str, list[Any]]]:
    """The expressions noted ahead (remember_matches) as tsqueries, `skip` left out."""
    out = []
    for m in getattr(con, "ahead", None) or []:
        if m != skip:
            q, params = fts.tsquery(m)
            out.append((fts.term_key(q, params), q, params))
    return out


def _holding(
    con: Connection,
    exprs: Sequence[tuple[Key, str, list[Any]]],
    ids: list[int] | None,
    columns: str,
    only_holding: bool = False,
    condition: tuple[str, list[Any]] | None = None,
) -> tuple[list[tuple[Any, ...]], list[set[int]]]:
    """One statement over the entries by id: (id, *columns) of each (`only_holding`: of those
    holding one of the expressions), and per expression the ids holding it; what it learnt
    goes to the read's record (PgConnection.held). `condition` (SQL over e and d, and its
    parameters), where `ids` is None: the entries it passes instead of those by id."""
    cols, params = [], []
    for i, (_, q, qparams) in enumerate(exprs):
        cols.append(f"{q} AS q{i}")
        params += qparams
    tests = [f"e.fts @@ q.q{i}" for i in range(len(exprs))]
    source = f"(SELECT {', '.join(cols)}) q, entries e" if exprs else "entries e"
    if condition is None:
        condition = ("e.id = ANY(?)", [ids])
    else:
        source += " LEFT JOIN documents d ON d.id = e.document_id"
    where = f" AND ({' OR '.join(tests)})" if only_holding and tests else ""
    rows = con.execute(
        f"SELECT e.id{columns}{''.join(', ' + t for t in tests)} FROM {source}"
        f" WHERE {condition[0]}{where}",
        [*params, *condition[1]],
    ).fetchall()
    if ids is None:
        ids = [int(r[0]) for r in rows]
    width = len(rows[0]) - len(exprs) if rows else 0
    found: list[set[int]] = [{int(r[0]) for r in rows if r[width + j]} for j in range(len(exprs))]
    held: Held | None = getattr(con, "held", None)
    if held is not None:
        for (k, _, _), got in zip(exprs, found, strict=True):
            known, holding = held.setdefault(k, (set(), set()))
            known.update(ids)
            holding.update(got)
    return [tuple(r[:width]) for r in rows], found


def note_carry(con: Connection, matches: Sequence[str], columns: str) -> None:
    """Ask this read's k-NN (store/pg/vectors.py knn_entries) to read, with its entries, what
    a search asks of them next, for that search's read (`carried`): their lengths, `columns`
    (fixed SQL over `e`: the signal columns) and which hold each expression (noted ahead)."""
    if getattr(con, "held", None) is None:
        return
    for match in matches:
        remember_matches(con, match)
    con.carry = columns  # type: ignore[attr-defined]


def carry_sql(con: Connection) -> tuple[str, str, list[Any], list[Key]] | None:
    """What `note_carry` asked of a k-NN's entries: (the select's more columns over `e`:
    length, the columns, a test of each expression noted ahead; the FROM's first source and
    its parameters; the expressions' keys); None when nothing was asked."""
    columns = getattr(con, "carry", None)
    if not columns or getattr(con, "held", None) is None:
        return None
    exprs = _noted(con)[:MATCHING_MAX]
    cols = f", length(e.content), {columns}"
    cols += "".join(f", e.fts @@ q.q{i}" for i in range(len(exprs)))
    source = ""
    if exprs:
        source = "(SELECT " + ", ".join(f"{q} AS q{i}" for i, (_, q, _) in enumerate(exprs))
        source += ") q, "
    return cols, source, [p for _, _, ps in exprs for p in ps], [k for k, _, _ in exprs]


def carry(con: Connection, keys: Sequence[Key], rows: Sequence[Sequence[Any]]) -> None:
    """Keep on `con` what `carry_sql`'s columns read of each entry (id, length, *signal
    columns, *tests): its length, its signal columns (`signals`) and which expressions it
    holds (`held`), for searchrows.carried."""
    held: Held | None = getattr(con, "held", None)
    lengths: dict[int, int] | None = getattr(con, "lengths", None)
    signals: dict[int, tuple[Any, ...]] | None = getattr(con, "signals", None)
    if held is None or lengths is None or signals is None:
        return
    width = len(rows[0]) - len(keys) if rows else 0
    for r in rows:
        lengths[int(r[0])] = int(r[1] or 0)
        signals[int(r[0])] = tuple(r[2:width])
    ids = [int(r[0]) for r in rows]
    for j, k in enumerate(keys):
        known, found = held.setdefault(k, (set(), set()))
        known.update(ids)
        found.update(int(r[0]) for r in rows if r[width + j])


Carried = tuple[str, dict[int, tuple[Any, ...]], dict[int, int], Held]


def carried(con: Connection) -> Carried | None:
    """What `carry` kept on this read, with its snapshot (PgConnection.version); None when
    it kept nothing."""
    version = getattr(con, "version", None)
    signals = getattr(con, "signals", None)
    if version is None or not signals:
        return None
    return version, signals, con.lengths or {}, con.held or {}  # type: ignore[attr-defined]


def adopt(con: Connection, found: Carried | None, seen: dict[int, tuple[Any, ...]]) -> bool:
    """Keep on the search's read what another read `carry` kept, when both saw the same
    snapshot (the same `pg_current_snapshot()`: PgStore.read's `snapshot`); the signal
    columns go in `seen` (searchsql.Seen). Whether it was kept."""
    held: Held | None = getattr(con, "held", None)
    lengths: dict[int, int] | None = getattr(con, "lengths", None)
    if found is None or held is None or lengths is None:
        return False
    version, signals, their_lengths, their_held = found
    if version != getattr(con, "version", None):
        return False
    for i, row in signals.items():
        seen.setdefault(i, row)
    for i, n in their_lengths.items():
        lengths.setdefault(i, n)
    for k, (known, holding) in their_held.items():
        mine = held.setdefault(k, (set(), set()))
        mine[0].update(known)
        mine[1].update(holding)
    return True
