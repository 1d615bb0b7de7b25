"""The keyword pool on PostgreSQL: the best matches of an FTS5 expression by the ranking of
store/pg/fts.py (per term, IDF x `ts_rank_cd`), an OR of common words first from the rows that
can reach the pool (store/pg/ftstop.py). With the rows come, in the same statement, more of
their columns when asked (the signal columns: searchsql.Seen) and whether each row holds each
of the query's terms, which the read keeps (PgConnection.held: the evidence's `matching` then
asks the server nothing about the pool's rows; store/pg/held.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryd.store.pg import fts, ftstop
from memoryd.store.protocol import Connection


def keyword_pool(
    con: Connection,
    match: str,
    where: str,
    params: Sequence[Any],
    size: int,
    columns: Sequence[str] = (),
) -> list[tuple[Any, ...]]:
    """(entry id, score (lower is better), document id, *columns) of the best `size` matches
    that pass the filter: an OR of common words first from the rows that can reach the pool
    (store/pg/ftstop.py), else every match ranked. `columns`: more of each row's columns
    (`e.x`, fixed SQL), read with it (searchsql.Seen). The rows read also tell which of them
    hold each of the query's terms (`_note_held`: the evidence's `matching`)."""
    b = fts._Builder(match)
    q, qparams = b.parse() or fts._EMPTY, b.params
    leaves = b.leaves[: fts.MAX_RANKED_TERMS]
    rank, rparams, idfs, dfs = fts._ranking(con, leaves)
    shape = _shape(leaves, columns)
    if ftstop.words(match, leaves, q):
        found = ftstop.pool(con, leaves, (rank, rparams), idfs, dfs, (where, params), size, shape)
        if found is not None:
            return _note_held(con, leaves, found)
    sql, args = shape[1](
        f"SELECT e.id, {rank} AS score, e.document_id{shape[0]}"
        f" FROM (SELECT {q} AS q) q, entries e LEFT JOIN documents d ON d.id = e.document_id"
        f" WHERE e.fts @@ q.q AND {where} ORDER BY score, e.id LIMIT ?",
        [*rparams, *qparams, *params, size],
    )
    return _note_held(con, leaves, con.execute(sql, args).fetchall())


def _shape(leaves: Sequence[tuple[str, list[Any]]], columns: Sequence[str]) -> ftstop.Shape:
    """The ranked rows' `e.fts` and `columns` (as c0, c1, ...), and the statement around their
    ranking: the best rows' id, score and document id, whether each holds each term (`fts @@
    term`), their `columns`, in the ranking's order. The tests run on the best `size` rows only:
    in the ranking's own select they ran on every row ranked (~1,500 of them at 100K chunks for
    two common words: 16.3 against 13.1 ms of the server's time)."""
    inner = ", e.fts" + "".join(f", {c} AS c{i}" for i, c in enumerate(columns))
    tests = "".join(f", p.fts @@ {t}" for t, _ in leaves)
    cols = "".join(f", p.c{i}" for i in range(len(columns)))
    head = f"SELECT p.id, p.score, p.document_id{tests}{cols} FROM ("
    tparams = [p for _, ps in leaves for p in ps]

    def wrap(sql: str, params: list[Any]) -> tuple[str, list[Any]]:
        return f"{head}{sql}) p ORDER BY p.score, p.id", [*tparams, *params]

    return inner, wrap


def _note_held(
    con: Connection, leaves: Sequence[tuple[str, list[Any]]], rows: Sequence[Sequence[Any]]
) -> list[tuple[Any, ...]]:
    """The pool's rows without their tests (`_shape`), which go to the read's record of which
    entries hold which term (PgConnection.held: `matching` answers from it)."""
    k = len(leaves)
    held: dict[Any, tuple[set[int], set[int]]] | None = getattr(con, "held", None)
    if held is not None and rows:
        ids = [int(r[0]) for r in rows]
        for j, (sql, ps) in enumerate(leaves):
            known, found = held.setdefault(fts.term_key(sql, ps), (set(), set()))
            known.update(ids)
            found.update(i for i, r in zip(ids, rows, strict=True) if r[3 + j])
    return [
        (int(r[0]), float(r[1]), None if r[2] is None else int(r[2]), *r[3 + k :]) for r in rows
    ]
