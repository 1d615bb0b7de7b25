"""What each write costs the daemon, before and after issue 23's changes, in CPU milliseconds
(time.process_time, which a busy machine disturbs far less than wall time), on one index.

    PYTHONPATH=. python -m bench.write_costs [--chunks 100000] [--template DIR] [--before DIR]

DIR for --before is a folder holding another memoryd package (e.g. main's, `git archive main
memoryd | tar -x -C DIR`): its search/vecindex.py is loaded beside this one for the row it
changed. The rows, each the median of `--repeat` runs:
- the vector cache taking up one new vector (an add, an edited chunk) on the next query;
- the embed worker's look for texts without a vector when it wakes after a write;
- the pending count a search reports (refreshed every 2 s while texts are pending);
- the fuzzy vocabulary rebuild after an index change;
- add's near-duplicate check.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.embedding import prepared_index


def _cpu_ms(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Median CPU and wall milliseconds of fn over `repeat` runs."""
    cpu, wall = [], []
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu.append((time.process_time() - c) * 1000)
        wall.append((time.perf_counter() - w) * 1000)
    return round(statistics.median(cpu), 2), round(statistics.median(wall), 2)


def _old_vecindex(before: Path) -> Any:
    spec = importlib.util.spec_from_file_location(
        "before_vecindex", before / "memoryd" / "search" / "vecindex.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(root: Path, texts: int, repeat: int, before: Path | None) -> list[dict[str, Any]]:
    """The rows, over the index prepared in root (bench.embedding.prepared_index)."""
    from memoryd.core.config import Config
    from memoryd.index.embed import OFFLINE_IDENTITY
    from memoryd.search.fuzzy import Vocabulary
    from memoryd.search.vecindex import VectorCache
    from memoryd.store import entries, vectors
    from memoryd.store import lifecycle as lcstore
    from memoryd.store.backend import open_store

    cfg = Config.from_dict(
        {
            "workspace": str(root / "ws"),
            "data_dir": str(root / "ddata"),
            "socket": str(root / "unused.sock"),
        }
    )
    store = open_store(cfg)
    rows: list[dict[str, Any]] = []
    rng = np.random.default_rng(1)
    try:
        model_id = store.run_write(
            lambda con: vectors.ensure_model(
                con, f"{OFFLINE_IDENTITY}/384", OFFLINE_IDENTITY, 384, 1.0
            )
        )
        counter = [0]

        def new_vector() -> None:
            counter[0] += 1
            vec = rng.normal(size=384).astype(np.float32)
            vec /= np.linalg.norm(vec)
            store.run_write(
                lambda con: vectors.store(con, model_id, [(f"bench{counter[0]}", vec)], 1.0)
            )

        q = rng.normal(size=384).astype(np.float32)
        q /= np.linalg.norm(q)
        caches: list[tuple[str, Any]] = [("after", VectorCache())]
        if before is not None:
            caches.insert(0, ("before", _old_vecindex(before).VectorCache()))
        for name, cache in caches:
            store.read(lambda con, c=cache: c.knn(con, model_id, 384, q, 10))  # load

            def take_up(c: Any = cache) -> None:
                new_vector()
                store.read(lambda con: c.knn(con, model_id, 384, q, 10))

            def query_only(c: Any = cache) -> None:
                store.read(lambda con: c.knn(con, model_id, 384, q, 10))

            rows.append(
                {
                    "what": f"query after one new vector ({name})",
                    "cpu_ms, wall_ms": _cpu_ms(take_up, repeat),
                    "same query, nothing new": _cpu_ms(query_only, repeat),
                }
            )
            del cache
        top = store.read(vectors.top_entry_id)
        rows.append(
            {
                "what": "embed worker wake-up, nothing left to embed: full look (before)",
                "cpu_ms, wall_ms": _cpu_ms(
                    lambda: store.read(lambda con: vectors.pending_newest(con, model_id, 64)),
                    repeat,
                ),
            }
        )
        rows.append(
            {
                "what": "embed worker wake-up: what changed since the last clear look (after)",
                "cpu_ms, wall_ms": _cpu_ms(
                    lambda: store.read(
                        lambda con: vectors.pending_since(con, model_id, 64, top - 10)
                    ),
                    repeat,
                ),
            }
        )
        rows.append(
            {
                "what": "pending count, full (before: every 2 s of a search, after every run)",
                "cpu_ms, wall_ms": _cpu_ms(
                    lambda: store.read(lambda con: vectors.counts(con, model_id)), repeat
                ),
            }
        )
        rows.append(
            {
                "what": "pending count since the last clear look (after)",
                "cpu_ms, wall_ms": _cpu_ms(
                    lambda: store.read(
                        lambda con: vectors.count_pending_since(con, model_id, top - 10)
                    ),
                    repeat,
                ),
            }
        )
        rows.append(
            {
                "what": "fuzzy vocabulary rebuild (before: by the first search after a change)",
                "cpu_ms, wall_ms": _cpu_ms(
                    lambda: Vocabulary.build(store.read(entries.vocabulary), 0, 0.0),
                    max(3, repeat // 3),
                ),
            }
        )
        rows.append(
            {
                "what": "near-duplicate check: sqlite-vec exact scan of every vector (before)",
                "cpu_ms, wall_ms": _cpu_ms(
                    lambda: store.read(lambda con: vectors.knn(con, model_id, q, 10)),
                    max(3, repeat // 3),
                ),
            }
        )
        cache = VectorCache()
        store.read(lambda con: cache.knn(con, model_id, 384, q, 10))

        def among_memories() -> None:
            def run(con: Any) -> None:
                hashes = {h for _, h in lcstore.memory_hashes(con, "default")}
                cache.similarities(con, model_id, 384, q, hashes)

            store.read(run)

        rows.append(
            {
                "what": "near-duplicate check: the namespace's memories, exactly (after)",
                "cpu_ms, wall_ms": _cpu_ms(among_memories, repeat),
            }
        )
    finally:
        store.close()
    for r in rows:
        r["chunks"] = texts
    return rows


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.write_costs", description=__doc__)
    p.add_argument("--chunks", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--template", type=Path, default=None)
    p.add_argument("--before", type=Path, default=None, help="a folder with another memoryd")
    args = p.parse_args(argv)
    from memoryd.core import logsetup

    logsetup.configure("warning")
    root = Path(tempfile.mkdtemp(prefix="memoryd-wc-"))
    try:
        _, _, texts = prepared_index(root, args.chunks, args.template)
        rows = measure(root, texts, args.repeat, args.before)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for r in rows:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
