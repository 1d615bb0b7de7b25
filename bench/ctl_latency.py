"""`memoryctl search` end to end (process start to exit) beside `rg`, in the same run.

    .venv/bin/python -m bench.ctl_latency [--chunks 10000 | --notes 5000] [--runs 40]
        [--ctl NAME=PATH ...] [--baseline OLD_CTL.py]

Writes a deterministic workspace of about --chunks chunks (or --notes notes), starts `memoryd
run` on it in keyword mode, waits for the first reconcile, then times, interleaved so that
machine noise hits all of them alike: the installed `memoryctl` beside this Python (what pip
put in the environment's bin), any other installed one (`--ctl scratch=/tmp/v/bin/memoryctl`;
installed ones run without this process's PYTHONPATH, so each imports its own package),
`python -m memoryd.ctl`, the source tree's launcher (`python -S -I bin/memoryctl`), optionally
an older ctl.py (`--baseline`), and `rg -i -l WORD` over the same workspace. Prints p50/p95 in
ms and, for each command, the median of its per-run ratios to rg (each run of a command is
paired with the rg run of the same query, a few milliseconds apart).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.corpus import WORDS, write_workspace
from bench.run import Daemon
from memoryd.ctl import parse as ctl_parse
from memoryd.ctl.table import BY_NAME

ROOT = Path(__file__).resolve().parent.parent


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--notes", type=int, help="write this many notes instead (--chunks ignored)")
    ap.add_argument("--ctl", action="append", default=[], help="NAME=PATH of a memoryctl")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--baseline", type=Path, help="an older memoryd/ctl.py to compare with")
    a = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="ctl-bench-"))
    ws = tmp / "ws"
    if a.notes:
        made = write_workspace(ws, 10**9, max_files=a.notes)
    else:
        made = write_workspace(ws, a.chunks)
    daemon = Daemon(tmp / "d", ws, model=False)
    try:
        daemon.wait(
            lambda: (daemon.call("status") or {}).get("index", {}).get("initial_reconcile_done"),
            1800,
        )
        counts = (daemon.call("stats") or {}).get("chunks")
        sock = str(daemon.sock)
        python = os.path.realpath(sys.executable)
        variants: dict[str, list[str]] = {
            "memoryctl (installed)": [str(Path(sys.executable).parent / "memoryctl")],
            **{n: [p] for n, p in (x.split("=", 1) for x in a.ctl)},
            "python -m memoryd.ctl": [sys.executable, "-m", "memoryd.ctl"],
            "python -S -I bin/memoryctl": [python, "-S", "-I", str(ROOT / "bin" / "memoryctl")],
        }
        if a.baseline:
            old = tmp / "old"
            (old / "memoryd").mkdir(parents=True)
            shutil.copy(a.baseline, old / "memoryd" / "ctl.py")
            shutil.copy(ROOT / "memoryd" / "__init__.py", old / "memoryd" / "__init__.py")
            variants["baseline ctl.py (python -m, site)"] = [
                sys.executable, "-c",
                f"import sys; sys.path.insert(0, {str(old)!r}); from memoryd.ctl import main; "
                "sys.exit(main())",
            ]  # fmt: skip
        # an installed command runs the package installed with it, not this process's PYTHONPATH
        installed = {"memoryctl (installed)", *(x.split("=", 1)[0] for x in a.ctl)}
        clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        times: dict[str, list[float]] = {name: [] for name in variants}
        # the floor under every memoryctl: the same request from this (warm) process, and the
        # daemon's own time for it (took_ms)
        warm, took = "same request, no start-up", "  of which the daemon's search"
        times[warm], times[took] = [], []
        times["rg -i -l WORD"] = []
        have_rg = shutil.which("rg") is not None
        load = os.getloadavg()
        search_params = BY_NAME["search"].params
        assert search_params is not None
        for i in range(a.runs):
            query = f"{WORDS[i * 3 % len(WORDS)]} {WORDS[i * 7 % len(WORDS)]}"
            args = ctl_parse(["search", query, "--mode", "keyword"])
            params = search_params(args)  # exactly what memoryctl sends
            t = time.perf_counter()
            res = daemon.call("search", params) or {}
            times[warm].append((time.perf_counter() - t) * 1000)
            times[took].append(float(res.get("took_ms", 0.0)))
            for name, cmd in variants.items():
                t = time.perf_counter()
                done = subprocess.run(
                    [*cmd, "--socket", sock, "search", query, "--mode", "keyword"],
                    capture_output=True,
                    text=True,
                    env=clean if name in installed else None,
                )
                times[name].append((time.perf_counter() - t) * 1000)
                if done.returncode != 0:
                    raise SystemExit(f"{name} failed: {done.stderr}")
            if have_rg:
                t = time.perf_counter()
                subprocess.run(["rg", "-i", "-l", query.split()[0], str(ws)], capture_output=True)
                times["rg -i -l WORD"].append((time.perf_counter() - t) * 1000)
        print(f"workspace: {made['files']} files, {counts} chunks; {a.runs} runs each (keyword)")
        start, end = (" ".join(f"{x:.2f}" for x in avg) for avg in (load, os.getloadavg()))
        print(f"load average: {start} at the start, {end} at the end")
        rg = times["rg -i -l WORD"]
        print(f"{'command':<40}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}{'/ rg, paired':>14}")
        for name, values in times.items():
            if values:
                paired = (
                    f"{statistics.median(v / r for v, r in zip(values, rg, strict=True)):.2f}"
                    if rg
                    else "-"
                )
                print(
                    f"{name:<40}{pct(values, 50):9.1f}{pct(values, 95):9.1f}"
                    f"{statistics.mean(values):9.1f}{paired:>14}"
                )
    finally:
        daemon.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
