"""pgvector: one table of vectors per model (`vec_N`, keyed by embeddings.id) with an HNSW
index for cosine distance, and the nearest-neighbour queries search runs on them.

`PgVectorIndex` stands in for the in-memory VectorCache (memoryd/search/vecindex.py) when the store
is PostgreSQL: the server's HNSW index answers k-nearest queries, so every daemon sees the vectors
any other daemon stored, with nothing to load or invalidate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memoryd.store.pg import held
from memoryd.store.protocol import Connection
from memoryd.store.tables import table_name

EF_SEARCH_MAX = 1000  # pgvector's limit on hnsw.ef_search
EF_SEARCH_MIN = 150  # at 100K texts: recall@10 0.99, as fast as 40 was (200: 0.997, +2 ms)
# every pooled connection's session (PgStore._configure): the ef_search of a default search's
# vector pool (200 texts), with relaxed iterative scans; a knn that needs another sets it
SESSION_EF = 200
HNSW_M = 16  # pgvector's default
HNSW_EF_CONSTRUCTION = 200


def create_table(con: Connection, table: str, dim: int) -> None:
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {table}("
        " rowid BIGINT PRIMARY KEY REFERENCES embeddings(id) ON DELETE CASCADE,"
        f" embedding vector({int(dim)}) NOT NULL)"
    )
    create_index(con, table)


def create_index(con: Connection, table: str) -> None:
    """The table's HNSW index for cosine distance (a bulk load builds it after the rows).
    ef_construction 200 rather than pgvector's 64: at 100K texts recall@10 at ef_search 100 is
    0.98 instead of 0.80, for a build about 3x as long (BENCHMARKS.md, PostgreSQL backend)."""
    con.execute(
        f"CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table}"
        f" USING hnsw (embedding vector_cosine_ops)"
        f" WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
    )


def as_vector(vec: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(vec, dtype=np.float32)


def knn(con: Connection, table: str, query: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The k nearest texts: (content_hash, cosine distance), nearest first. ef_search follows k
    (at least EF_SEARCH_MIN, at most pgvector's 1,000), and iterative scans let a large k get all
    its rows. Both settings go in one statement (one round trip), or none when the session
    already has them (`hnsw_ef`, PgStore's connections: SESSION_EF)."""
    _session(con, k)
    q = as_vector(query)
    rows = con.execute(
        f"SELECT m.content_hash, v.embedding <=> ? AS distance FROM {table} v"
        " JOIN embeddings m ON m.id = v.rowid ORDER BY v.embedding <=> ? LIMIT ?",
        (q, q, int(k)),
    ).fetchall()
    out = sorted(((str(h), float(d)) for h, d in rows), key=lambda t: (t[1], t[0]))
    return out


def knn_entries(
    con: Connection, table: str, query: np.ndarray, k: int, where: str, params: Sequence[Any]
) -> tuple[list[tuple[str, float]], list[tuple[int, str, int | None]]]:
    """`knn` and then searchsql.entries_with_hashes of its hashes in one statement (one round
    trip instead of two, and no list of k parameters to plan): the k nearest texts
    (content_hash, cosine distance), nearest first, and (entry id, content hash, document id)
    of the entries that carry one of them and pass the filter (entries.filter_sql's `where`
    over e and d, and its parameters). In a read-only transaction the same statement reads
    what the search asks of those entries next (their lengths, signal columns and which hold
    each expression noted ahead: held.carry), which it takes when it shares the snapshot
    (searchrows.carried)."""
    _session(con, k)
    q = as_vector(query)
    near: dict[str, float] = {}
    found: list[tuple[int, str, int | None]] = []
    more = held.carry_sql(con)
    cols, source, mparams, keys = more if more is not None else ("", "", [], [])
    carried: list[tuple[Any, ...]] = []
    for h, dist, i, doc, *rest in con.execute(
        "WITH n AS MATERIALIZED (SELECT m.content_hash AS h, v.embedding <=> ? AS dist"
        f" FROM {table} v JOIN embeddings m ON m.id = v.rowid"
        " ORDER BY v.embedding <=> ? LIMIT ?)"
        f" SELECT n.h, n.dist, e.id, e.document_id{cols} FROM {source}n"
        " LEFT JOIN (entries e LEFT JOIN documents d ON d.id = e.document_id)"
        f" ON e.content_hash = n.h AND {where}",
        [q, q, int(k), *mparams, *params],
    ):
        near[str(h)] = float(dist)
        if i is not None:
            found.append((int(i), str(h), None if doc is None else int(doc)))
            if more is not None:
                carried.append((i, *rest))
    if more is not None:
        held.carry(con, keys, carried)
    nearest = sorted(near.items(), key=lambda t: (t[1], t[0]))
    return nearest, found


def _session(con: Connection, k: int) -> None:
    """The HNSW settings a knn of k asks for, unless the session has them (knn)."""
    ef = max(EF_SEARCH_MIN, min(int(k), EF_SEARCH_MAX))
    if getattr(con, "hnsw_ef", None) != ef:
        con.execute(
            "SELECT set_config('hnsw.ef_search', ?, true),"
            " set_config('hnsw.iterative_scan', 'relaxed_order', true)",
            (str(ef),),
        )


def similarities(
    con: Connection, table: str, query: np.ndarray, wanted: list[str]
) -> dict[str, float]:
    """Exact cosine similarity of the query to each wanted text that has a vector."""
    if not wanted:
        return {}
    rows = con.execute(
        f"SELECT m.content_hash, 1 - (v.embedding <=> ?) FROM {table} v"
        " JOIN embeddings m ON m.id = v.rowid WHERE m.content_hash = ANY(?)",
        (as_vector(query), list(wanted)),
    ).fetchall()
    return {str(h): float(s) for h, s in rows}


def prewarm(con: Connection) -> list[str]:
    """pg_prewarm the active model's HNSW index and table, when the extension is there and
    they fit in half of shared_buffers. Returns what was read (nothing otherwise)."""
    active = con.execute("SELECT id FROM models WHERE active = 1 AND complete = 1").fetchone()
    if active is None:
        return []
    table = table_name(int(active[0]))
    row = con.execute(
        "SELECT to_regprocedure('pg_prewarm(regclass,text,text,bigint,bigint)') IS NOT NULL,"
        " (SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'),"
        " coalesce(pg_relation_size(to_regclass(?)), 0)"
        " + coalesce(pg_relation_size(to_regclass(?)), 0)",
        (table, f"{table}_hnsw"),
    ).fetchone()
    if row is None or not row[0] or not row[2] or int(row[2]) > int(row[1]) // 2:
        return []
    names = [f"{table}_hnsw", table]
    con.execute("SELECT pg_prewarm(?::regclass), pg_prewarm(?::regclass)", names)
    return names


class PgVectorIndex:
    """The VectorCache interface, answered by the server's HNSW index."""

    def invalidate(self) -> None:
        """Nothing is cached here."""

    def warm(self, con: Connection) -> None:
        """Nothing to load: the index lives in the server. Where the server has the pg_prewarm
        extension, the active model's HNSW index and vectors are read into its shared buffers
        (when both fit in half of them), so the first searches after a server restart do not
        read them from disk page by page (docs/team.md, "Search on PostgreSQL")."""
        prewarm(con)

    def knn(
        self, con: Connection, model_id: int, dim: int, query: np.ndarray, k: int
    ) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        return knn(con, table_name(model_id), query, k)

    def similarities(
        self, con: Connection, model_id: int, dim: int, query: np.ndarray, wanted: set[str]
    ) -> dict[str, float]:
        return similarities(con, table_name(model_id), query, sorted(wanted))

    def knn_entries(
        self,
        con: Connection,
        model_id: int,
        query: np.ndarray,
        k: int,
        flt: tuple[str, Sequence[Any]],
    ) -> tuple[list[tuple[str, float]], list[tuple[int, str, int | None]]]:
        """knn, and the entries of its texts that pass the filter, in one statement
        (search/vecindex.py's nearest_entries asks for both)."""
        if k <= 0:
            return [], []
        return knn_entries(con, table_name(model_id), query, k, flt[0], flt[1])
