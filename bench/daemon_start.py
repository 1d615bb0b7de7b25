"""The CPU a `memoryd run` spends before it can serve: its imports and its arguments.

    .venv/bin/python -m bench.daemon_start --against /path/to/other/checkout [--runs 16]

Each run is a new Python process (a test's daemon, a service's start) that builds memoryd's
arguments for `run` and imports what the daemon imports before its first log line; this tree
and the other checkout alternate, so machine noise hits both alike. Compiled modules are kept
under a temp folder (PYTHONPYCACHEPREFIX), as the test suite keeps them, and warmed first.
Prints each tree's median and lowest CPU (user + system) in ms. CPU, not wall: on a loaded
machine the wall clock is mostly the wait for a core (issue 18.5, branch fast19).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = (
    "from memoryd import cli; cli.build_parser().parse_args(['run']); "
    "import memoryd.serve.daemon, memoryd.web.server, memoryd.core.collector"
)


def cpu_of(tree: Path, cache: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONPYCACHEPREFIX=str(cache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", CODE], env=env, cwd=tree, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.daemon_start", description=__doc__)
    p.add_argument("--against", type=Path, required=True, help="another checkout's root")
    p.add_argument("--runs", type=int, default=16, help="processes per tree (default 16)")
    args = p.parse_args(argv)
    trees = [ROOT, args.against.resolve()]
    times: dict[Path, list[float]] = {t: [] for t in trees}
    with tempfile.TemporaryDirectory(prefix="bench-start-") as tmp:
        cache = Path(tmp)
        for tree in trees:  # compiled once, not timed
            cpu_of(tree, cache)
        for i in range(args.runs):
            for tree in trees if i % 2 == 0 else trees[::-1]:
                times[tree].append(cpu_of(tree, cache))
    for tree in trees:
        ms = [1000 * t for t in times[tree]]
        print(f"{tree}: median {statistics.median(ms):.0f} ms CPU, lowest {min(ms):.0f} ms")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
