"""Which design keeps a query embedding from waiting behind the backlog? One process per design
(so RSS is comparable), the same texts and queries, the offline model.

    python -m bench.embed_options [DESIGN ...]      all designs: about 5 minutes

Designs:
  lock        main before issue 12: one lock around every model call, batch 8, default threads
  prio2       a priority lock (the backlog waits while a query is queued), batches of 2
  prio1       the same with batches of 1
  shared      one session (default threads), queries run beside the batch without a lock
  second      a second session (1 thread) for queries, the backlog on the first
  chosen      one session with 1 intra-op thread; the backlog split across 2 threads at
              niceness 10; queries at normal priority; malloc arenas 2 and malloc_trim per batch
  chosen-nice19, chosen-nice0   the same with the backlog at niceness 19 or 0
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

DESIGNS = ["lock", "prio2", "prio1", "shared", "second", "chosen", "chosen-nice19", "chosen-nice0"]


def _texts() -> tuple[list[str], list[str], Any, Path]:
    from bench.corpus import write_workspace
    from bench.run import make_config
    from memoryd.index.embed import resolve_model
    from memoryd.text.markdown import parse_document

    root = Path(tempfile.mkdtemp(prefix="memoryd-opts-"))
    cfg = make_config(root)
    write_workspace(cfg.workspace, 600, seed=5)
    texts = list(
        dict.fromkeys(
            c.content
            for f in sorted(cfg.workspace.rglob("*.md"))
            for c in parse_document(f.read_text())[1]
        )
    )
    rng = random.Random(1)
    queries = [" ".join(rng.sample(t.split(), min(6, len(t.split())))) for t in texts[:300]]
    resolved, _ = resolve_model(cfg.embedding, cfg.data_dir)
    return texts, queries, resolved, cfg.data_dir / "models"


def run_design(design: str) -> dict[str, Any]:
    from bench.run import self_rss_mb
    from memoryd.core import malloc
    from memoryd.index.embed import load_embedder

    chosen = design.startswith("chosen")
    niceness = int(design.split("nice")[1]) if "nice" in design else 10
    if chosen:
        malloc.limit_arenas()
    texts, queries, resolved, cache = _texts()
    one_thread = chosen
    model = load_embedder(resolved, cache_dir=cache, threads=1 if one_thread else 0)
    query_model = model
    if design == "second":
        query_model = load_embedder(resolved, cache_dir=cache, threads=1)
    model.embed_batch(texts[:8])
    query_model.embed_batch(["warm up"])
    qi = iter(queries)

    lock = threading.Lock()
    cond = threading.Condition(lock)
    waiting = [0]
    pool = ThreadPoolExecutor(2, initializer=lambda: malloc.lower_thread_priority(niceness))

    def background(batch: list[str]) -> None:
        if design == "lock":
            with lock:
                model.embed_batch(batch)
        elif design.startswith("prio"):
            with cond:
                while waiting[0]:
                    cond.wait()
                model.embed_batch(batch)
        elif chosen:
            half = (len(batch) + 1) // 2
            list(pool.map(model.embed_batch, [batch[:half], batch[half:]]))
            malloc.trim()
        else:
            model.embed_batch(batch)

    def query(text: str) -> None:
        if design == "lock":
            with lock:
                query_model.embed_batch([text])
        elif design.startswith("prio"):
            with cond:
                waiting[0] += 1
            try:
                with lock:
                    query_model.embed_batch([text])
            finally:
                with cond:
                    waiting[0] -= 1
                    cond.notify_all()
        else:
            query_model.embed_batch([text])

    def latencies(n: int) -> list[float]:
        out = []
        for _ in range(n):
            t = time.perf_counter()
            query(next(qi))
            out.append((time.perf_counter() - t) * 1000)
            time.sleep(0.05)
        return out

    idle = latencies(30)
    batch = {"prio2": 2, "prio1": 1}.get(design, 8)
    stop, done = threading.Event(), [0]

    def worker() -> None:
        i = 0
        while not stop.is_set():
            chunk = texts[i % len(texts) : i % len(texts) + batch] or texts[:batch]
            background(chunk)
            done[0] += len(chunk)
            i += batch

    t = threading.Thread(target=worker)
    t.start()
    time.sleep(1.0)
    d0, t0 = done[0], time.perf_counter()
    busy = latencies(40)
    rate = (done[0] - d0) / (time.perf_counter() - t0)
    stop.set()
    t.join()
    pool.shutdown()
    return {
        "design": design,
        "idle_p50_ms": round(float(np.percentile(idle, 50)), 1),
        "idle_p95_ms": round(float(np.percentile(idle, 95)), 1),
        "busy_p50_ms": round(float(np.percentile(busy, 50)), 1),
        "busy_p95_ms": round(float(np.percentile(busy, 95)), 1),
        "backlog_texts_per_s": round(rate, 1),
        "rss_mb": round(self_rss_mb()),
    }


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(run_design(sys.argv[2])))
        return 0
    head = f"{'idle p50/p95':>16}{'under backlog p50/p95':>24}{'texts/s':>9}{'RSS':>7}"
    print(f"{'design':<14}{head}")
    for design in sys.argv[1:] or DESIGNS:
        out = subprocess.run(
            [sys.executable, "-m", "bench.embed_options", "--one", design],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        if out.returncode:
            print(design, "failed:", out.stderr[-500:])
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"{design:<14}{r['idle_p50_ms']:>8.1f} /{r['idle_p95_ms']:>6.1f}"
            f"{r['busy_p50_ms']:>14.1f} /{r['busy_p95_ms']:>7.1f}"
            f"{r['backlog_texts_per_s']:>9.1f}{r['rss_mb']:>7}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
