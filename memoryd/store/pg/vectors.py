"""pgvector: one table of vectors per model (`vec_N`, keyed by embeddings.id) with an HNSW
index for cosine distance, and the nearest-neighbour queries search runs on them.

`PgVectorIndex` stands in for the in-memory VectorCache (memoryd/vecindex.py) when the store is
PostgreSQL: the server's HNSW index answers k-nearest queries, so every daemon sees the vectors
any other daemon stored, with nothing to load or invalidate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

EF_SEARCH_MAX = 1000  # pgvector's limit on hnsw.ef_search


def create_table(con: Any, table: str, dim: int) -> None:
    con.execute(
        f"CREATE TABLE IF NOT EXISTS {table}("
        " rowid BIGINT PRIMARY KEY REFERENCES embeddings(id) ON DELETE CASCADE,"
        f" embedding vector({int(dim)}) NOT NULL)"
    )
    con.execute(
        f"CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table}"
        " USING hnsw (embedding vector_cosine_ops)"
    )


def as_vector(vec: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(vec, dtype=np.float32)


def knn(con: Any, table: str, query: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The k nearest texts: (content_hash, cosine distance), nearest first. ef_search follows k
    (up to pgvector's 1,000), and iterative scans let a large k get all its rows."""
    ef = max(40, min(int(k), EF_SEARCH_MAX))
    con.execute("SELECT set_config('hnsw.ef_search', ?, true)", (str(ef),))
    con.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
    q = as_vector(query)
    rows = con.execute(
        f"SELECT m.content_hash, v.embedding <=> ? AS distance FROM {table} v"
        " JOIN embeddings m ON m.id = v.rowid ORDER BY v.embedding <=> ? LIMIT ?",
        (q, q, int(k)),
    ).fetchall()
    out = sorted(((str(h), float(d)) for h, d in rows), key=lambda t: (t[1], t[0]))
    return out


def similarities(con: Any, table: str, query: np.ndarray, wanted: list[str]) -> dict[str, float]:
    """Exact cosine similarity of the query to each wanted text that has a vector."""
    if not wanted:
        return {}
    rows = con.execute(
        f"SELECT m.content_hash, 1 - (v.embedding <=> ?) FROM {table} v"
        " JOIN embeddings m ON m.id = v.rowid WHERE m.content_hash = ANY(?)",
        (as_vector(query), list(wanted)),
    ).fetchall()
    return {str(h): float(s) for h, s in rows}


class PgVectorIndex:
    """The VectorCache interface, answered by the server's HNSW index."""

    def invalidate(self) -> None:
        """Nothing is cached here."""

    def __len__(self) -> int:
        return 0

    def count(self, con: Any, model_id: int) -> int:
        from memoryd.store import vectors

        return vectors.model_count(con, model_id)

    def warm(self, con: Any) -> None:
        """Nothing to load: the index lives in the server."""

    def knn(
        self, con: Any, model_id: int, dim: int, query: np.ndarray, k: int
    ) -> list[tuple[str, float]]:
        from memoryd.store.vectors import table_name

        if k <= 0:
            return []
        return knn(con, table_name(model_id), query, k)

    def similarities(
        self, con: Any, model_id: int, dim: int, query: np.ndarray, wanted: set[str]
    ) -> dict[str, float]:
        from memoryd.store.vectors import table_name

        return similarities(con, table_name(model_id), query, sorted(wanted))
