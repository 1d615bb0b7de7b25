"""python -m bench.entity_cpu ROOT [--chunks N] [--rounds R] [--variants none,extract,full]

Issue 20.6: the CPU time (process_time: every thread of this process) of cold keyword-mode
indexing of bench/entity_graph.py's workspace (written once into ROOT/ws and reused), three
ways interleaved in each round: `none` (no extraction, no entity rows), `extract` (extraction,
rows not stored) and `full`. CPU rather than wall time: on a shared machine the wall time of a
write-heavy run swings with the other processes' disk and CPU use (bench/entity_graph.py reports
wall). Run it with PYTHONPATH at two checkouts, alternately, to compare them on one workspace.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.entity_graph import index_variant, write_workspace


def index_cpu(workspace: Path, data: Path, variant: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one cold reconcile of `workspace` into `data`."""
    shutil.rmtree(data, ignore_errors=True)
    try:
        wall, cpu, app = index_variant(workspace, data, variant)
        app.close()
    finally:
        shutil.rmtree(data, ignore_errors=True)
    return cpu, wall


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.entity_cpu", description=__doc__)
    p.add_argument("root", type=Path)
    p.add_argument("--chunks", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--variants", default="none,extract,full")
    a = p.parse_args(argv)
    workspace = a.root / "ws"
    if not workspace.exists():
        print(write_workspace(workspace, a.chunks), file=sys.stderr)
    variants = a.variants.split(",")
    res: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
    load = [os.getloadavg()[0]]
    for r in range(a.rounds):
        for v in variants:
            res[v].append(index_cpu(workspace, a.root / f"data-{v}-{r}", v))
            print(v, r, [round(x, 2) for x in res[v][-1]], file=sys.stderr)
    load.append(os.getloadavg()[0])
    med = {v: statistics.median(c for c, _ in x) for v, x in res.items()}
    out: dict[str, Any] = {
        "load": load,
        "cpu": {v: [c for c, _ in x] for v, x in res.items()},
        "wall": {v: [w for _, w in x] for v, x in res.items()},
        "cpu_median": med,
    }
    for base in ("none", "extract"):
        if base in med:
            out[f"over_{base}"] = {v: med[v] / med[base] for v in variants}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
