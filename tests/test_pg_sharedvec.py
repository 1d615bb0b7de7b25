"""Issue 23.4: the vector pool on PostgreSQL from the daemon's own copy of the vectors
(search/sharedvec.py), which follows what other daemons write to the shared database: new
vectors by id once per snapshot, a model switch, ids going backwards; the vector pool's thread
asks the server nothing, and the search's own read brings the pool's entries with what it asks
of them next (store/pg/held.py: hash_rows); the answers are those of the server's HNSW index
(store.vector_cache = false) on a store small enough for both to be exact, the similarities
within the float16 copy's error."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from conftest import SEARCH_TEXTS, pg_stores

from memoryd.search.sharedvec import SharedVectorCache
from memoryd.store import vectors

DIM = 8


@pytest.fixture
def stores(pg_dsn: str) -> Iterator[tuple[Any, ...]]:
    # vector_cache: this file's subject; the default is off
    with pg_stores(pg_dsn, "ws-a", "ws-b", vector_cache=True) as two:
        yield two


def _vecs(n: int, seed: int) -> np.ndarray:
    data = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return data / np.linalg.norm(data, axis=1, keepdims=True)


def _add(store: Any, model: int, names: list[str], data: np.ndarray) -> None:
    items = list(zip(names, data, strict=True))
    store.run_write(lambda con: vectors.store(con, model, items, 1.0))


def _model(store: Any) -> int:
    model: int = store.run_write(lambda con: vectors.ensure_model(con, "k", "m", DIM, 1.0))
    store.run_write(lambda con: vectors.mark_complete(con, model))
    return model


def test_the_store_leaves_the_vectors_to_the_searcher_unless_told(pg_dsn: str) -> None:
    from memoryd.search.sharedvec import vector_index
    from memoryd.store.pg.vectors import PgVectorIndex

    with (
        pg_stores(pg_dsn, "ws-a", vector_cache=True) as (cached,),
        pg_stores(pg_dsn, "ws-a", vector_cache=False) as (served,),
    ):
        assert isinstance(vector_index(cached), SharedVectorCache)
        assert isinstance(vector_index(served), PgVectorIndex)


def test_another_daemons_vectors_are_found_once_per_snapshot(stores: tuple[Any, Any]) -> None:
    a, b = stores
    model = _model(b)
    data = _vecs(40, 1)
    _add(b, model, [f"h{i}" for i in range(30)], data[:30])
    cache = SharedVectorCache(min_vectors=10, rerank=3)

    def knn(con: Any, q: np.ndarray = data[35]) -> list[tuple[str, float]]:
        return cache.knn(con, model, DIM, q, 5)

    assert a.read(knn)[0][0] != "h35" and len(cache) == 30
    statements: list[str] = []

    def counted(con: Any) -> list[tuple[str, float]]:
        real = con.execute

        def spy(sql: str, params: Any = None) -> Any:
            statements.append(sql)
            return real(sql, params)

        con.execute = spy
        return knn(con)

    # under the snapshot of the last check nothing is asked (retried: a commit anywhere on the
    # server, autovacuum's say, moves the snapshot)
    for _ in range(50):
        statements.clear()
        a.read(counted)
        if not statements:
            break
    assert not statements
    _add(b, model, [f"h{i}" for i in range(30, 40)], data[30:])  # another daemon embeds
    assert a.read(knn)[0][0] == "h35" and len(cache) == 40
    cache.invalidate()  # another daemon's change (LISTEN/NOTIFY): a check, never a reload
    buffer = cache._full
    assert a.read(knn)[0][0] == "h35" and cache._full is buffer and len(cache) == 40


def test_held_answers_from_memory_and_current_tells_when_it_was_stale(
    stores: tuple[Any, Any],
) -> None:
    a, b = stores
    model = _model(b)
    data = _vecs(20, 2)
    _add(b, model, [f"h{i}" for i in range(10)], data[:10])
    cache = SharedVectorCache(min_vectors=5, rerank=3)
    assert cache.held(model, data[0], 3) is None  # nothing loaded: the pool reads for itself
    assert a.read(lambda con: cache.current(con, model, DIM, 0)) is False  # loaded now
    near = a.read(lambda con: cache.knn(con, model, DIM, data[0], 3))
    assert cache.held(model, data[0], 3) == (near, 10)
    assert a.read(lambda con: cache.current(con, model, DIM, 10)) is True
    _add(b, model, ["h15"], data[15:16])
    held = cache.held(model, data[15], 1)
    assert held is not None and held[0][0][0] != "h15" and held[1] == 10
    # another search read the new row meanwhile: this one's answer is still stale
    a.read(lambda con: cache.knn(con, model, DIM, data[0], 1))
    assert a.read(lambda con: cache.current(con, model, DIM, 10)) is False
    held = cache.held(model, data[15], 1)
    assert held is not None and held[0][0][0] == "h15" and held[1] == 11
    assert cache.held(model + 1, data[15], 1) is None  # another model: not this one's rows


def test_a_new_model_or_ids_going_backwards_reload(stores: tuple[Any, Any]) -> None:
    a, b = stores
    model = _model(b)
    data = _vecs(20, 3)
    _add(b, model, [f"h{i}" for i in range(12)], data[:12])
    cache = SharedVectorCache(min_vectors=5, rerank=3)
    a.read(lambda con: cache.knn(con, model, DIM, data[0], 3))
    assert len(cache) == 12
    b.run_write(lambda con: con.execute("DELETE FROM embeddings"))
    _add(b, model, ["x0", "x1"], data[:2])  # the sequence goes on: ids above every id seen
    cache._max_rowid = 10**9  # as if the database were replaced by one with lower ids
    near = a.read(lambda con: cache.knn(con, model, DIM, data[0], 3))
    assert len(cache) == 2 and [h for h, _ in near] == ["x0", "x1"]
    other = b.run_write(lambda con: vectors.ensure_model(con, "k2", "m2", DIM, 1.0))
    _add(b, other, ["y0"], data[5:6])
    near = a.read(lambda con: cache.knn(con, other, DIM, data[5], 3))
    assert len(cache) == 1 and near[0][0] == "y0"


TEXTS = {  # no CJK note; one text twice
    **{path: text for path, text in SEARCH_TEXTS.items() if path != "notes/cjk.md"},
    "proj/copy.md": SEARCH_TEXTS["proj/cache.md"],
}


def _app(make_app: Any, dsn: str, cached: bool) -> Any:
    from conftest import settle, with_notes

    store = {"backend": "postgres", "dsn": dsn, "vector_cache": cached}
    app = with_notes(make_app(store=store), TEXTS)
    app.memories.add("Deploys happen on tuesdays", tags=["deploy"], namespace="team")
    settle(app)
    return app


def test_the_answers_are_the_server_index_answers(make_app: Any, pg_dsn: str) -> None:
    """Every mode, grouped and not, filtered and not: the same hits and scores with the
    vectors in the daemon as with the server's HNSW index (a store this small is exact in
    both), and a hybrid search makes no knn statement and no read ahead of its own."""
    from memoryd.search.searcher import SearchRequest
    from memoryd.store.entries import Filters
    from memoryd.store.pg.conn import PgConnection

    cached = _app(make_app, pg_dsn, True)
    served = _app(make_app, pg_dsn, False)
    assert isinstance(cached.searcher.vector_cache, SharedVectorCache)
    assert not isinstance(served.searcher.vector_cache, SharedVectorCache)
    for query in ("deploy canary", "sessions redis", "tuesdays", "what expires"):
        for mode in ("hybrid", "vector", "auto"):
            for group in ("note", "none"):
                for filters in (Filters(), Filters(path_prefix="proj"), Filters(kind="memory")):
                    req = SearchRequest(query=query, mode=mode, group=group, filters=filters)
                    a, b = cached.searcher.search(req), served.searcher.search(req)
                    why = (query, mode, group, filters)
                    assert [h["id"] for h in a["hits"]] == [h["id"] for h in b["hits"]], why
                    # the cache re-scores float16 copies (vecindex.py: error about 1e-4)
                    assert [h["score"] for h in a["hits"]] == pytest.approx(
                        [h["score"] for h in b["hits"]], abs=1e-3
                    ), why
    statements: list[str] = []
    real = PgConnection.execute

    def spy(self: PgConnection, sql: str, params: Any = None) -> Any:
        statements.append(re.sub(r"\s+", " ", sql)[:60])
        return real(self, sql, params)

    PgConnection.execute = spy  # type: ignore[method-assign]
    try:
        result = cached.searcher.search(SearchRequest(query="deploy canary", mode="hybrid"))
    finally:
        PgConnection.execute = real  # type: ignore[method-assign]
    assert result["mode"] == "hybrid" and result["hits"]
    assert not [s for s in statements if "<=>" in s], statements
    assert not [s for s in statements if s.startswith("SELECT e.id, length(e.content)")]
    assert sum(s.startswith("SELECT e.id, e.content_hash, e.document_id") for s in statements) == 1


def test_the_server_answers_while_the_vectors_are_first_read(stores: tuple[Any, Any]) -> None:
    """The daemon's start-up reads every vector under the cache's lock (11 s at 100K chunks):
    a search meanwhile gets the server's HNSW answer instead of waiting, and `held` none."""
    from memoryd.store.pg.vectors import PgVectorIndex

    a, b = stores
    model = _model(b)
    data = _vecs(12, 4)
    _add(b, model, [f"h{i}" for i in range(12)], data)
    cache = SharedVectorCache(min_vectors=5, rerank=3)
    served = a.read(lambda con: PgVectorIndex().knn(con, model, DIM, data[3], 3))
    with cache._lock:  # as warm() holds it while it reads
        assert cache.held(model, data[3], 3) is None
        assert a.read(lambda con: cache.knn(con, model, DIM, data[3], 3)) == served
        sims = a.read(lambda con: cache.similarities(con, model, DIM, data[3], {"h3"}))
        assert sims["h3"] == pytest.approx(1.0, abs=1e-6)
    assert len(cache) == 0  # nothing was read meanwhile
    near = a.read(lambda con: cache.knn(con, model, DIM, data[3], 3))  # now it reads them
    assert len(cache) == 12 and near[0][0] == "h3"
    assert cache.held(model, data[3], 3) == (near, 12)
