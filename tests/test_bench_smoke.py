"""The benchmark's smoke size runs in CI: every section is produced (figures are not judged
here: speed targets belong to the benchmark, not to timed unit tests)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from bench.__main__ import run_all
from bench.quality import metrics


def test_metrics() -> None:
    ndcg, recall, mrr = metrics(["b", "a"], {"a": 2})
    assert recall == 1.0 and mrr == 0.5 and 0 < ndcg < 1
    assert metrics(["a"], {"a": 2}) == (1.0, 1.0, 1.0)


def test_smoke_benchmark_produces_every_section() -> None:
    result = run_all("smoke", model=False, daemon=True)
    names = " | ".join(r["name"] for r in result["rows"])
    for section in (
        "cold indexing, keyword mode",
        "reconcile of an unchanged workspace",
        "keyword search p50",
        "vector search p50",
        "hybrid search p50",
        "vector recall@10",
        "save to searchable",
        "memoryctl search end to end",
        "daemon RSS",
        "daemon CPU while idle",
    ):
        assert section in names, section
    for r in result["rows"]:
        assert not math.isnan(r["value"]), r
    assert set(result["quality"]) == {"keyword", "vector", "hybrid"}
    assert result["machine"]["cpus"] >= 1


def test_search_latency_on_postgres_beside_sqlite(tmp_path: Path, pg_dsn: str) -> None:
    """bench.search_latency at a tiny scale: the corpus is copied into PostgreSQL and every
    mode runs on both backends, beside each engine's raw query, with HNSW recall."""
    from bench import pg_load, search_latency

    root = tmp_path / "corpus"
    search_latency.build(root, 300)
    vecs = np.load(root / "vecs.npy")
    loaded = pg_load.load(pg_dsn, root / "data" / "memoryd.db", vecs)
    assert loaded["loaded"] and loaded["entries"] >= 300
    assert pg_load.load(pg_dsn, root / "data" / "memoryd.db", vecs)["loaded"] is False
    assert _hnsw_options(pg_dsn) == ["m=16", "ef_construction=200"]  # the index memoryd builds

    result = search_latency.measure(root, 12, ["sqlite", "postgres"], pg_dsn)
    for backend in ("sqlite", "postgres"):
        r = result["backends"][backend]
        assert r["errors"] == {}, (backend, r["errors"])
        for name in ("keyword", "vector", "hybrid", "vector pool", "raw keyword", "raw vector"):
            assert r["times_ms"][name]["p50"] > 0, (backend, name)
        assert all(0.5 <= v <= 1.0 for v in r["recall@10"].values()), r["recall@10"]
    assert "| postgres | hybrid |" in search_latency.report(result)


def _hnsw_options(dsn: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn) as con:
        row = con.execute("SELECT reloptions FROM pg_class WHERE relname = 'vec_1_hnsw'").fetchone()
    return list(row[0]) if row else []


def test_pg_knn_searches_at_least_ef_150(tmp_path: Path, pg_dsn: str) -> None:
    """A small k still searches with ef_search 150: at 100K texts recall@10 is 0.90 at
    pgvector's default (40) with the index memoryd builds, 0.99 at 150 (BENCHMARKS.md)."""
    from memoryd.store import vectors
    from memoryd.store.pg import PgSettings, PgStore
    from memoryd.store.pg import vectors as pgvec

    store = PgStore(PgSettings(pg_dsn, "w1", "w1"))
    try:
        model_id = store.run_write(lambda con: vectors.ensure_model(con, "m", "m", 4, 1.0))
        q = np.array([1.0, 0, 0, 0], dtype=np.float32)

        def ef(con: object) -> tuple[int, str]:
            got = pgvec.knn(con, vectors.table_name(model_id), q, 10)
            return len(got), con.execute("SELECT current_setting('hnsw.ef_search')").fetchone()[0]

        assert store.read(ef) == (0, "150")
    finally:
        store.close()
    assert _hnsw_options(pg_dsn) == ["m=16", "ef_construction=200"]


def test_entities_bench_lists_the_misses_of_a_set_it_was_not_asked_to_score(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a dev split, or a set outside --only, is scored when its misses are asked for
    from bench import entities

    assert (
        entities.main(["--reps", "0", "--no-index", "--only", "gold", "--misses", "wikigold_dev"])
        == 0
    )
    out = capsys.readouterr().out
    assert "WikiGold dev" in out and "false_positives:" in out and "wikigold-" in out
