"""The vector cache of a daemon whose store other daemons write too (PostgreSQL, with
`store.vector_cache = true`; off by default, docs/team.md).

The in-memory cache (vecindex.VectorCache: sign-bit codes, then float16 re-scoring) answers the
vector pool in the daemon instead of the server's HNSW index: at 10K chunks the index's knn of
200 texts was ~7-9 ms of the server's time and a round trip, the cache's ~1.6 ms of this
process's CPU (~3 at 100K: BENCHMARKS.md, issue 23.4, branch pg8), on the pool's thread with
no read of its own; the pool's entries then come with what the search reads of them next, in
one statement on the search's read (pools.Pools._vector_entries, store/pg/held.py:
hash_rows). What SQLite's cache learns from its own
daemon (`invalidate()` after a collection or a restore) this one must learn from the database,
which any daemon may change:

- new vectors (another daemon embedded a text, this one did): rows have ids (embeddings.id, a
  sequence) above every id seen, so the highest id tells whether there are any, and they are
  read by id, as SQLite's are. It is asked once per snapshot: a read whose snapshot
  (`connmemo.data_version`: `pg_current_snapshot()`, read with the BEGIN) is the one of the
  last check sees nothing committed since, so it asks the server nothing.
- a model switch: the active model's id changes and everything is read again.
- ids going backwards (the database replaced): everything is read again.
- deleted vectors (collected orphans) stay in the cache: a text no entry carries any more
  answers no entry in the vector pool (searchsql.entries_with_hashes reads the entries of the
  nearest texts), as an orphan still in the HNSW index does before it is collected; they only
  take a place among the nearest texts, which the pool widens past when too few entries are
  left (vecindex.nearest_entries). A re-embedded text gets a new row, found by id.
`invalidate()` (another daemon changed entries: PgStore's LISTEN/NOTIFY) then costs a check of
the highest id on the next query, never a reload. While the vectors are first read (the
daemon's start-up, ~11 s at 100K chunks), the server's HNSW index answers the searches that
come meanwhile, as with `store.vector_cache = false`.
"""

from __future__ import annotations

import numpy as np

from memoryd.search.vecindex import VectorCache
from memoryd.store import vectors
from memoryd.store.connmemo import data_version
from memoryd.store.protocol import Connection, Store, VectorIndex


class SharedVectorCache(VectorCache):
    """VectorCache for a shared store: follows other daemons' writes through the database."""

    masks = False  # no entry keys (entrykeys.py is SQLite's): filters go through the k-NN

    # Re-scored per query: 30 x the pool (6,000 rows for 200; SQLite's cache 10 x), so that
    # the pool of 200 is as near the exact 200 as the HNSW index's it replaces: recall@200
    # 0.980 against HNSW's 0.877 at 10K chunks, 0.989 against 0.990 at 100K (10 x: 0.781,
    # 0.963), for ~1.6 and ~3.1 ms of CPU (10 x: 0.8, 1.9). BENCHMARKS.md, branch pg8.
    RERANK = 30

    def __init__(self, *, min_vectors: int = 5_000, rerank: int = RERANK) -> None:
        super().__init__(min_vectors=min_vectors, rerank=rerank)
        self._checked: tuple[int, object] | None = None  # (model id, snapshot) of the last check
        self._loaded: int | None = None  # the model whose vectors were read in full once
        # the active model (id, key, dimensions) as the last search read it: the vector
        # pool's thread asks `held` for it (pools.Pools._vector_thread)
        self.model: tuple[int, str, int] | None = None

    def invalidate(self) -> None:
        """Another daemon (or this one) changed the database: the next query looks for new
        rows, whatever its snapshot (a write's own commits do not change a read's text)."""
        with self._lock:
            self._checked = None

    def _sync(self, con: Connection, model_id: int, dim: int, newest: int | None = None) -> None:
        version = data_version(con)
        if (
            version is not None
            and self._model_id == model_id
            and self._checked == (model_id, version)
        ):
            return  # nothing committed since the last check
        if newest is None:
            newest = vectors.newest_id(con)
        if newest is not None and newest < self._max_rowid:
            self._model_id = None  # the ids went backwards: another database, read it all
        if self._model_id != model_id:
            self._loaded = None
        super()._sync(con, model_id, dim, newest)
        self._loaded = model_id
        self._checked = None if version is None else (model_id, version)

    def _loading(self, model_id: int) -> bool:
        """Whether another thread is reading this model's vectors for the first time (the
        daemon's start-up: 11 s at 100K chunks, under the lock): then the server's HNSW index
        answers instead of making the search wait for the whole load."""
        return self._loaded != model_id and self._lock.locked()

    def knn(
        self, con: Connection, model_id: int, dim: int, query: np.ndarray, k: int
    ) -> list[tuple[str, float]]:
        if self._loading(model_id):
            return _server_index().knn(con, model_id, dim, query, k)
        return super().knn(con, model_id, dim, query, k)

    def similarities(
        self, con: Connection, model_id: int, dim: int, query: np.ndarray, wanted: set[str]
    ) -> dict[str, float]:
        if self._loading(model_id):
            return _server_index().similarities(con, model_id, dim, query, wanted)
        return super().similarities(con, model_id, dim, query, wanted)

    def held(
        self, model_id: int, query: np.ndarray, k: int
    ) -> tuple[list[tuple[str, float]], int] | None:
        """knn over the rows held now, without asking the database (the vector pool's own
        thread, which then opens no read: pools.Pools._vector_thread), and how many rows it
        looked at; None when they are not the model's. The search checks afterwards, on its
        own read, that those were every row its snapshot has (`current`), and asks again
        if not."""
        if self._loaded != model_id or not self._n:  # not read in full yet: knn answers
            return None
        return self._nearest(query, k)

    def current(self, con: Connection, model_id: int, dim: int, rows: int) -> bool:
        """Whether `rows` rows of the model (what `held` looked at) are every row this read
        sees: the highest id is checked once per snapshot (`_sync`) and new rows are read."""
        with self._lock:
            self._sync(con, model_id, dim)
            return self._model_id == model_id and self._n == rows


def vector_index(store: Store) -> VectorIndex:
    """The nearest-neighbour index for a store: the one the database keeps (PostgreSQL's HNSW
    index, memoryd/store/pg/vectors.py, unless store.vector_cache), else an in-memory cache over
    the stored vectors (vecindex.VectorCache; a shared store's: SharedVectorCache, which follows
    other daemons' writes)."""
    index = store.vector_index()
    if index is not None:
        return index
    return SharedVectorCache() if store.shared else VectorCache()


def _server_index() -> VectorIndex:
    """The server's HNSW index, while the copy is first read. Imported here: memoryd.store.pg
    needs the postgres extra, and every daemon imports this module (only a PostgreSQL store
    gets this far)."""
    from memoryd.store.pg.vectors import PgVectorIndex

    return PgVectorIndex()
