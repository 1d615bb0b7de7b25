"""The benchmark's smoke size runs in CI: every section is produced (figures are not judged
here: speed targets belong to the benchmark, not to timed unit tests)."""

from __future__ import annotations

import math

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
