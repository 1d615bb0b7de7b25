"""Issue 23.3: the vector pool reads its neighbours' entries by id, the chunks' ids from the
cache's entry keys (search/entrykeys.py `chunks_with`, vecindex `_carrying`), where it read them
through the content-hash index: the same rows, whatever was written in between."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_entity_filter_vectors import DIM, _vectors_for_every_text

from memoryd.search import entrykeys, vecindex
from memoryd.search.request import narrowing
from memoryd.search.vecindex import VectorCache, nearest_entries
from memoryd.store import searchsql, vectors
from memoryd.store.entries import Filters, filter_sql

FILTERS = [
    Filters(),
    Filters(kind="chunk"),
    Filters(kind="memory"),
    Filters(path_prefix="log/a"),
    Filters(include_expired=True, include_deprecated=True),
]


def _same_rows(app: Any, cache: VectorCache, extra: list[str]) -> int:
    """Every filter, every stored hash and a few unknown: the rows by id are the rows by hash."""

    def check(con: Any) -> int:
        hashes = [str(r[0]) for r in con.execute("SELECT DISTINCT content_hash FROM entries")]
        asked = [*hashes, *extra]
        rows = 0
        for f in FILTERS:
            where, params = filter_sql(f, 1e9, wide=True)
            for part in (asked, asked[::7], asked[:1]):
                by_hash = searchsql.entries_with_hashes(con, part, where, params)
                by_id = vecindex._carrying(con, cache, part, where, params)
                assert sorted(by_id) == sorted(by_hash)
                rows += len(by_id)
        return rows

    return int(app.store.read(check))


@pytest.mark.sqlite_only("VectorCache is SQLite's in-memory index (PostgreSQL: HNSW, unchanged)")
@pytest.mark.parametrize("memories_by_id", [128, 0])
def test_the_neighbours_entries_by_id_are_those_by_hash(
    make_app: Any, monkeypatch: pytest.MonkeyPatch, memories_by_id: int
) -> None:
    monkeypatch.setattr(vecindex, "MEMORIES_BY_ID", memories_by_id)  # 0: by hash, as before
    monkeypatch.setattr(entrykeys, "RESORT", 16)  # sorted keys and recent ones both
    app = make_app(model=None)
    ws = Path(app.cfg.workspace)
    for d in ("a", "b"):
        (ws / "log" / d).mkdir(parents=True)
    for i in range(120):
        text = f"Change {i % 50} went out."  # the same text in several notes: one hash
        (ws / "log" / ("a" if i % 3 else "b") / f"note-{i:03}.md").write_text(f"{text}\n")
    assert app.indexer.reconcile().errors == []
    memory = app.memories.add(content="Deploys go out on Tuesday")
    app.memories.add(content="Change 7 went out.")  # a memory with a chunk's text
    model_id = app.store.run_write(lambda con: vectors.ensure_model(con, "syn/32", "syn", DIM, 1.0))
    _vectors_for_every_text(app, model_id)
    app.store.run_write(lambda con: vectors.mark_complete(con, model_id))
    cache = VectorCache(min_vectors=10, rerank=3)
    app.store.read(cache.warm)
    unknown = ["f" * 64, "0" * 64]
    assert _same_rows(app, cache, unknown) > 0

    # a memory changed in place, notes deleted, notes added (fewer than RESORT, then more)
    app.memories.update(memory.id, {"content": "Deploys go out on Monday"})
    for i in range(0, 30):
        next((ws / "log").rglob(f"note-{i:03}.md")).unlink()
    for i in range(120, 130):
        (ws / "log" / "a" / f"note-{i:03}.md").write_text(f"Change {i} went out.\n")
    assert app.indexer.reconcile().errors == []
    _vectors_for_every_text(app, model_id)
    assert _same_rows(app, cache, unknown) > 0
    for i in range(130, 170):
        (ws / "log" / "b" / f"note-{i:03}.md").write_text(f"Change {i % 60} went out.\n")
    assert app.indexer.reconcile().errors == []
    _vectors_for_every_text(app, model_id)
    assert _same_rows(app, cache, unknown) > 0
    cache.invalidate()  # a checkpoint restore: read anew
    assert _same_rows(app, cache, unknown) > 0

    # and the vector pool itself, through it and through the hash index
    rng = np.random.default_rng(5)
    where, params = filter_sql(Filters(), 1e9, wide=True)

    def pools(con: Any) -> list[Any]:
        out = []
        for q in rng.normal(size=(8, DIM)).astype(np.float32):
            q /= np.linalg.norm(q)
            flt = (where, params)
            out.append(nearest_entries(con, cache, model_id, DIM, q, flt, 20, None, 400))
        return out

    through_ids = app.store.read(pools)
    rng = np.random.default_rng(5)
    monkeypatch.setattr(vecindex, "MEMORIES_BY_ID", -1)
    assert app.store.read(pools) == through_ids


@pytest.mark.sqlite_only("VectorCache is SQLite's in-memory index (PostgreSQL: HNSW, unchanged)")
def test_the_pool_found_on_its_thread_and_read_on_the_searchs_is_the_same(make_app: Any) -> None:
    """Issue 23.3: the vector pool's thread finds the nearest texts (vecindex.neighbours), the
    search's connection reads their entries (pools._vector_entries) and keeps their signal
    columns (searchsql.Seen): the pool of one read, and the rows signal_rows reads."""
    app = make_app(model=None)
    ws = Path(app.cfg.workspace)
    (ws / "log" / "a").mkdir(parents=True)
    for i in range(90):
        (ws / "log" / ("a" if i % 3 else "") / f"note-{i:03}.md").write_text(f"Change {i % 40}.\n")
    assert app.indexer.reconcile().errors == []
    app.memories.add(content="Deploys go out on Tuesday")
    app.memories.add(content="Change 7.")  # a memory with a chunk's text
    model_id = app.store.run_write(lambda con: vectors.ensure_model(con, "syn/32", "syn", DIM, 1.0))
    _vectors_for_every_text(app, model_id)
    app.store.run_write(lambda con: vectors.mark_complete(con, model_id))
    s = app.searcher
    s.vector_cache = VectorCache(min_vectors=10, rerank=3)
    app.store.read(s.vector_cache.warm)

    def rows(pool: Any) -> list[tuple[Any, ...]]:
        return [(c.id, c.document_id, c.vector_rank, c.similarity) for c in pool[0]]

    for q in np.random.default_rng(7).normal(size=(6, DIM)).astype(np.float32):
        q /= np.linalg.norm(q)
        for f in (Filters(), Filters(kind="memory"), Filters(path_prefix="log/a")):
            whole = app.store.read(lambda con, f=f, q=q: s._vector_pool(con, q, f, 1e9, 20))
            found = app.store.read(lambda con, f=f, q=q: s._vector_knn(con, q, f, 1e9, 20))
            assert (found.pool is None) == (not narrowing(f, vector=True))  # else read there
            seen: searchsql.Seen = {}
            split = app.store.read(
                lambda con, f=f, found=found, seen=seen: s._vector_entries(
                    con, found, f, 1e9, 20, seen
                )
            )
            assert rows(split) == rows(whole) and split[1] == whole[1] and whole[0]
            if found.pool is not None:
                assert not seen
                continue
            ids = [c.id for c in split[0]]
            read = app.store.read(lambda con, ids=ids: searchsql.signal_rows(con, ids))
            kept = {i: dict(zip(searchsql.SIGNAL_COLUMNS, seen[i], strict=True)) for i in ids}
            assert kept == read
