"""Search latency at scale, CPU time beside wall time (the machine may be shared).

    python -m bench.search_latency --build ROOT   # once: 100K chunks + synthetic vectors (~4 min)
    python -m bench.search_latency ROOT [--queries 100]

Runs the queries of `bench/run.py query_latency` (two words from the corpus vocabulary, a query
vector near a stored one; query embedding excluded) in keyword, vector and hybrid mode, and
prints p50/p95 of wall time and of CPU time (every thread of the process).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from bench import run
from bench.corpus import WORDS


def build(root: Path, chunks: int) -> None:
    _, app = run.keyword_indexing(root, chunks)
    np.save(root / "vecs.npy", run.seed_vectors(app))
    app.close()


def measure(root: Path, queries: int) -> None:
    from memoryd.app import App
    from memoryd.embed import ModelHolder
    from memoryd.search import SearchRequest

    app = App(run.make_config(root), model=ModelHolder(None, description="stub"))
    vecs = np.load(root / "vecs.npy")
    app.store.read(app.searcher.vector_cache.warm)
    rng = np.random.default_rng(1)
    words = [" ".join(rng.choice(WORDS, 2)) for _ in range(queries)]
    qv = vecs[rng.integers(0, len(vecs), queries)]
    qv = qv + 0.05 * rng.normal(size=qv.shape).astype(np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    try:
        for mode in ("keyword", "vector", "hybrid"):
            cpu, wall = [], []
            for w, q in zip(words, qv, strict=True):
                app.searcher.model = run.StubModel(q)
                c, t = time.process_time(), time.perf_counter()
                app.searcher.search(SearchRequest(query=w, mode=mode))
                wall.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
            print(
                f"{mode:<8} cpu p50 {run.pct(cpu, 50) * 1000:.1f} p95 {run.pct(cpu, 95) * 1000:.1f}"
                f" | wall p50 {run.pct(wall, 50) * 1000:.1f} p95 {run.pct(wall, 95) * 1000:.1f} ms"
            )
    finally:
        app.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.search_latency", description=__doc__)
    p.add_argument("root", type=Path)
    p.add_argument("--build", action="store_true")
    p.add_argument("--chunks", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=100)
    args = p.parse_args(argv)
    from memoryd import logsetup

    logsetup.configure("warning")
    if args.build:
        build(args.root, args.chunks)
    else:
        measure(args.root, args.queries)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
