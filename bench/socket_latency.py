"""Hybrid search at 100K chunks through the daemon's socket, beside a numpy brute-force top-10.

    python -m bench.search_latency --build ROOT            # once: 100K chunks + vectors
    python -m bench.socket_latency ROOT [--queries 100] [--rounds 3]

Issue 23.3: hybrid p50 <= 1.5x a numpy brute-force top-10 over the same vectors, in the same run,
through the socket. A child process serves ROOT's store on a Unix socket with memoryd's own
server (serve/server.py) and a query embedder that answers each query's vector from a table (the
queries of bench/search_latency.py: two words and a vector near a stored one; query embedding
excluded, as in every latency figure here). This process sends each search as one JSON-RPC line
on a new connection (as memoryctl does) and times the round trip; between searches it times
`vecs @ q` + argpartition for the top 10 over the same float32 vectors (the baseline), so the
machine's load falls on both alike (OpenBLAS's threads spin only briefly after the baseline, so
its spin is not timed as the daemon's). Each round is 10 warm-up queries, then the queries in turn
as keyword, vector and hybrid search. `took_ms` is the daemon's own time for the search.
`--code DIR` serves with the memoryd package found in DIR (another checkout: "before").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# The baseline's `vecs @ q` runs on OpenBLAS's threads, which then busy-wait for more work for
# 8-20 ms (branch qspeed4, BENCHMARKS.md): on 2 cores that spin runs beside the daemon's next
# search and is timed as part of it. A short spin (before numpy loads OpenBLAS) keeps each side's
# time its own; the baseline is no slower with it (33-34 ms against 37-45, load ~10).
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np

from bench import run
from bench.search_latency import RAW_K, make_queries, open_app

MODES = ("keyword", "vector", "hybrid")


class QueryTable:
    """A ready query embedder whose vectors are looked up by the query's text."""

    state = "ready"

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed_query(self, text: str) -> np.ndarray:
        return self.table[text]


def serve(root: Path, queries: int) -> int:
    """The child: serve ROOT's store on a socket until stdin closes; print the socket path."""
    from memoryd.core import logsetup
    from memoryd.serve.server import Server

    logsetup.configure("warning")
    print(f"serving with {sys.modules['memoryd'].__file__}", file=sys.stderr)
    vecs = np.load(root / "vecs.npy")
    words, qvecs = make_queries(vecs, queries)
    app = open_app(root, "sqlite", None)
    app.searcher.model = QueryTable(dict(zip(words, qvecs, strict=True)))

    async def main() -> None:
        server = Server(app, app.cfg.server, app.cfg.socket)
        await server.start()
        print(app.cfg.socket, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await server.close()

    try:
        asyncio.run(main())
    finally:
        try:  # issue 23.3: how many keyword pools came from the rows holding every word
            from memoryd.store import ftsprune

            used, tried = ftsprune.counts(str(app.cfg.db_path))
            print(f"all-words first rankings: {used} of {tried} any-word pools", file=sys.stderr)
        except ImportError:  # another checkout's memoryd (--code), from before ftsprune
            pass
        app.close()
    return 0


def call(path: str, params: dict[str, Any]) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "search", "params": params}).encode()
            + b"\n"
        )
        answer = json.loads(s.makefile("rb").readline())
    if "error" in answer:
        raise RuntimeError(answer["error"])
    return dict(answer["result"])


def serving_child(
    module: str, argv: list[str], code: Path | None
) -> tuple[subprocess.Popen[str], str]:
    """`module.main(argv)` in a child process, with this bench's code and (with `code`) memoryd
    from that other checkout; the child and the socket path it prints once it serves."""
    bench_root = str(Path(__file__).resolve().parent.parent)
    start = (
        f"import sys; sys.path.insert(0, {bench_root!r}); import {module} as b; "
        "[sys.modules.pop(m) for m in list(sys.modules) if m.split('.')[0] == 'memoryd']; "
        f"sys.path.insert(0, {str(code or bench_root)!r}); sys.exit(b.main({argv!r}))"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", start], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdin is not None and child.stdout is not None
    path = child.stdout.readline().strip()
    if not path:
        child.stdin.close()
        child.wait(60)
        raise SystemExit("the serving process did not start")
    return child, path


def measure(
    root: Path, queries: int, code: Path | None = None, modes: tuple[str, ...] = MODES
) -> dict[str, Any]:
    vecs = np.load(root / "vecs.npy")
    words, qvecs = make_queries(vecs, queries)
    child, path = serving_child("bench.socket_latency", [str(root), "--serve", str(queries)], code)
    assert child.stdin is not None
    try:
        times: dict[str, list[float]] = {}
        warm = min(10, queries)
        order = list(range(warm)) + list(range(queries))
        for n, i in enumerate(order):
            timed = n >= warm
            t = time.perf_counter()
            sims = vecs @ qvecs[i]
            np.argpartition(-sims, RAW_K)[:RAW_K]
            raw = time.perf_counter() - t
            if timed:
                times.setdefault("numpy top-10", []).append(raw)
            for mode in modes:
                t = time.perf_counter()
                res = call(path, {"query": words[i], "mode": mode, "limit": 10})
                wall = time.perf_counter() - t
                if timed:
                    times.setdefault(mode, []).append(wall)
                    times.setdefault(f"{mode} took_ms", []).append(res["took_ms"] / 1000)
    finally:
        child.stdin.close()
        child.wait(60)
    return {
        "queries": queries,
        "code": str(code or Path(__file__).resolve().parent.parent),
        "load": os.getloadavg(),
        "times_ms": {
            k: {"p50": run.pct(v, 50) * 1000, "p95": run.pct(v, 95) * 1000}
            for k, v in times.items()
        },
    }


def report(result: dict[str, Any], n: int) -> str:
    t = result["times_ms"]
    base = t["numpy top-10"]
    load = ", ".join(f"{x:.1f}" for x in result["load"])
    lines = [
        f"round {n}: {result['queries']} queries, limit 10, through the socket; memoryd from"
        f" {result['code']}; load {load}",
        "| mode | p50 | p95 | daemon took_ms p50 | numpy top-10 p50 | ratio p50 | ratio p95 |",
        "|---|---|---|---|---|---|---|",
    ]
    for mode in [m for m in MODES if m in t]:
        m = t[mode]
        lines.append(
            f"| {mode} | {m['p50']:.1f} | {m['p95']:.1f} | {t[f'{mode} took_ms']['p50']:.1f}"
            f" | {base['p50']:.1f} | {m['p50'] / base['p50']:.2f} | {m['p95'] / base['p95']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.socket_latency", description=__doc__)
    p.add_argument("root", type=Path)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    p.add_argument("--code", type=Path, help="serve with the memoryd package in this folder")
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument(
        "--modes",
        default=",".join(MODES),
        help="the modes searched for each query, in turn (default: keyword,vector,hybrid)",
    )
    args = p.parse_args(argv)
    if args.serve is not None:
        return serve(args.root, args.serve)
    results = []
    for n in range(1, args.rounds + 1):
        modes = tuple(m for m in args.modes.split(",") if m)
        results.append(measure(args.root, args.queries, args.code, modes))
        print(report(results[-1], n), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
