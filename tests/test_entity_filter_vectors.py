"""Issue 20.6: a wide entities filter in the vector pool is a mask over the in-memory vector
cache's rows (search/entrykeys.py, VectorCache.knn_among), not a re-score of its share of the
store: the same entries come back as from the k-NN it replaces, through edits, deletes, new
notes and memories changed in place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import entities_caught_up

from memoryd.search import vecindex
from memoryd.search.hashrows import HashRows, keys_of
from memoryd.search.request import vector_mask, wide_first
from memoryd.search.vecindex import VectorCache, nearest_entries
from memoryd.store import entityfilter, entityread, vectors
from memoryd.store.entries import Filters, filter_sql

DIM = 32


def _vectors_for_every_text(app: Any, model_id: int) -> None:
    """A vector for each entry's text (deterministic per hash; stored ones are skipped)."""
    hashes = app.store.read(
        lambda con: [str(r[0]) for r in con.execute("SELECT DISTINCT content_hash FROM entries")]
    )
    items = []
    for h in hashes:
        v = np.random.default_rng(int(h[:12], 16)).normal(size=DIM).astype(np.float32)
        items.append((h, v / np.linalg.norm(v)))
    app.store.run_write(lambda con: vectors.store(con, model_id, items, 1.0))


def _both(
    app: Any, cache: VectorCache, model_id: int, name: str, queries: np.ndarray, exact: bool
) -> None:
    """The masked answer is the k-NN one, or nearer where the mask widened its selection (it
    estimates when the k-NN's first try would hold too few allowed texts, and widens as that
    one would); `exact` (few allowed rows: every one scored), as near or nearer always.
    Every answer is allowed, nearest first."""
    knn_calls: list[int] = []
    real_knn = cache.knn

    def counted(*args: Any) -> Any:
        knn_calls.append(1)
        return real_knn(*args)

    def run(con: Any) -> int:
        groups, n = entityread.resolve_filter(con, (name,))
        f = Filters(entities=(name,), entity_ids=groups, entity_mentions=n)
        flt = filter_sql(f, 0.0, wide=True)
        allowed = set(entityfilter.entries_of(con, groups).tolist())
        start, mask = wide_first(f, 20, con), vector_mask(f, 0.0)
        assert start is not None  # wide: NARROW_MENTIONS is patched to 1
        same = 0
        for q in queries:
            knn_calls.clear()
            old = nearest_entries(con, cache, model_id, DIM, q, flt, 20, None, 4000, start)
            new = nearest_entries(con, cache, model_id, DIM, q, flt, 20, None, 4000, start, mask)
            assert len(new) == 20 and {i for _, i, _ in new} <= allowed
            assert [s for s, _, _ in new] == sorted((s for s, _, _ in new), reverse=True)
            if exact or len(knn_calls) == 1:  # (the k-NN's first try was enough) as near or nearer
                assert all(a >= b - 1e-6 for (a, _, _), (b, _, _) in zip(new, old, strict=True))
            same += [i for _, i, _ in new] == [i for _, i, _ in old]
        return same

    cache.knn = counted  # type: ignore[method-assign]
    try:
        assert app.store.read(run) >= (0 if exact else len(queries) // 4)
    finally:
        del cache.knn


@pytest.mark.sqlite_only("VectorCache is SQLite's in-memory index (PostgreSQL: HNSW, unchanged)")
def test_a_wide_entity_filter_masks_the_cache_with_the_same_answer(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entityfilter, "NARROW_MENTIONS", 1)
    app = make_app(model=None)
    ws = Path(app.cfg.workspace)
    (ws / "log").mkdir(parents=True)
    for i in range(400):
        who = " Oskar Lindqvist reviewed it." if i % 4 == 1 else ""
        (ws / "log" / f"note-{i:03}.md").write_text(f"# Note {i}\n\nChange {i} went out.{who}\n")
    assert app.indexer.reconcile().errors == []
    entities_caught_up(app)
    memory = app.memories.add(content="Oskar Lindqvist prefers deploys on Tuesday")
    for i in range(5):
        app.memories.add(content=f"Oskar Lindqvist noted item {i} of the release")
    model_id = app.store.run_write(lambda con: vectors.ensure_model(con, "syn/32", "syn", DIM, 1.0))
    _vectors_for_every_text(app, model_id)
    app.store.run_write(lambda con: vectors.mark_complete(con, model_id))
    cache = VectorCache(min_vectors=100, rerank=3)  # the Hamming pre-selection, not a full scan
    rng = np.random.default_rng(5)
    queries = rng.normal(size=(12, DIM)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    _both(app, cache, model_id, "Oskar Lindqvist", queries, exact=True)  # 106 allowed rows
    monkeypatch.setattr(vecindex, "EXACT_ROWS", 0)  # the masked pre-selection
    _both(app, cache, model_id, "Oskar Lindqvist", queries, exact=False)
    assert len(cache.entry_keys) == 400  # the chunks; memories are read each time

    # a memory changed in place (its hash changes, its id stays), notes deleted, notes added
    app.memories.update(memory.id, {"content": "Oskar Lindqvist prefers deploys on Monday"})
    for i in range(0, 40):
        (ws / "log" / f"note-{i:03}.md").unlink()
    for i in range(400, 440):
        (ws / "log" / f"note-{i:03}.md").write_text(
            f"# Note {i}\n\nChange {i} went out. Oskar Lindqvist signed off.\n"
        )
    assert app.indexer.reconcile().errors == []
    entities_caught_up(app)
    _vectors_for_every_text(app, model_id)
    _both(app, cache, model_id, "Oskar Lindqvist", queries, exact=False)
    cache.invalidate()  # a checkpoint restore: read anew
    assert len(cache.entry_keys) == 0
    _both(app, cache, model_id, "Oskar Lindqvist", queries, exact=False)


def test_rows_of_keys_finds_sorted_and_recent_rows() -> None:
    rows = HashRows()
    first = [f"{i:064x}" for i in range(5000)]
    rows.append(first)  # sorted
    rows.append([f"{i:064x}" for i in range(5000, 5010)])  # recent (looked up by dict)
    want = [first[3], first[4999], f"{5004:064x}", f"{99999:064x}"]
    keys = keys_of(np.array([h.encode() for h in want], dtype="S64"))
    assert sorted(rows.rows_of_keys(keys, 5010).tolist()) == [3, 4999, 5004]
    assert sorted(rows.rows_of_keys(keys, 5000).tolist()) == [3, 4999]  # a view of 5,000 rows
    assert rows.rows_of_keys(np.zeros(0, dtype=np.uint64), 5010).tolist() == []


@pytest.mark.sqlite_only("the norm is remembered per SQLite connection and data version")
def test_a_known_norm_is_forgotten_when_anything_is_written(make_app: Any) -> None:
    """A filtered search's BM25 norm (the query's best match without the filter) is taken from
    the unfiltered search of the same query just before, until anything is written."""
    from memoryd.store import searchsql

    app = make_app(model=None)
    app.memories.add(content="the payments service deploys on Tuesday")
    con = app.store.reader()
    key = ('"payments"', "base filters")
    assert searchsql.known_best(con, key, 100.0) == (False, None)
    searchsql.note_best(con, key, 100.0, -1.5)
    assert searchsql.known_best(con, key, 100.0) == (True, -1.5)
    assert searchsql.known_best(con, key, 5e9) == (True, -1.5)  # nothing expired meanwhile
    assert searchsql.known_best(con, ('"payments"', "other"), 100.0) == (False, None)
    app.memories.add(content="the billing service deploys on Monday")  # another connection
    assert searchsql.known_best(con, key, 100.0) == (False, None)
    searchsql.note_best(con, key, 100.0, -1.5)
    app.memories.add(content="a note that expires", expires_at=4e9)
    searchsql.note_best(con, key, 100.0, -1.5)  # after that write
    assert searchsql.known_best(con, key, 100.0) == (True, -1.5)
    assert searchsql.known_best(con, key, 5e9) == (False, None)  # it expired in between
