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
