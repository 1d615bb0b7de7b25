"""Where a request's time goes through the socket, stage by stage, a search beside a `ping`.

    python -m bench.search_latency --build ROOT            # once: 100K chunks + vectors
    python -m bench.socket_stages ROOT [--queries 40] [--mode hybrid] [--code DIR]

Issue 23.3: the socket adds milliseconds to a search over the daemon's own `took_ms`. A child
process serves ROOT's store with memoryd's own server (as bench/socket_latency.py: the query
vectors from a table), with marks taken at each step of a request (`time.perf_counter_ns`,
CLOCK_MONOTONIC, the same clock in both processes): the connection made, the handler's task
started, the line received and dispatched, JSON decoded and checked, the method's thread
started and done, the RPC thread's wake-up of the event loop (`_write_to_self`), the loop's
select() returning, the answer encoded. This process sends, for each query, a `ping` then the
search, each on a new connection (as memoryctl does), and marks connect, send, read and
`json.loads`. Nothing of memoryd is changed: the marks are wrappers the child puts around its
functions, so `--code` can serve another checkout (main) for a "before" in the same minutes.

Printed: each stage's p50 and p95 in ms for the ping and the search, the requests' wall, and
"wall less the method": what the socket, the event loop and the thread hops add.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # as bench/socket_latency.py

import numpy as np

from bench.socket_latency import serving_child

# (name, from mark, to mark): each a stage of one request, in the order it happens
STAGES = (
    ("client connect()", "c.start", "c.connected"),
    ("connect -> connection_made", "c.connected", "s.connection_made"),
    ("connection_made -> handler task", "s.connection_made", "s.handle_start"),
    ("send -> data_received", "c.sent", "s.data_received"),
    ("data_received -> dispatch", "s.data_received", "s.dispatch_line"),
    ("JSON decode + checks", "s.dispatch_line", "s.decoded"),
    ("lookup + hop to the RPC thread", "s.decoded", "s.thread_start"),
    ("the method (RPC thread)", "s.thread_start", "s.thread_end"),
    ("method done -> loop woken (write_to_self)", "s.thread_end", "w.write_to_self"),
    ("write_to_self -> loop's select() returns", "w.write_to_self", "l.select_return"),
    ("select() returns -> request task resumes", "l.select_return", "s.dispatched"),
    ("JSON encode", "s.encode_start", "s.encoded"),
    ("write -> client has the line", "s.encoded", "c.read"),
    ("the RPC thread writes the answer (replies.py)", "w.send_start", "w.sent"),
    ("written by the thread -> client has the line", "w.sent", "c.read"),
    ("client json.loads", "c.read", "c.loaded"),
)
MARKS: list[tuple[str, int]] = []


def mark(name: str) -> None:
    MARKS.append((name, time.perf_counter_ns()))


def _wrap(owner: Any, attr: str, before: str | None, after: str | None) -> None:
    """Mark `before` and `after` a call of owner.attr (a function or a coroutine function)."""
    fn = getattr(owner, attr)
    if asyncio.iscoroutinefunction(fn):

        async def wrapped_async(*a: Any, **k: Any) -> Any:
            if before:
                mark(before)
            r = await fn(*a, **k)
            if after:
                mark(after)
            return r

        setattr(owner, attr, wrapped_async)
        return

    def wrapped(*a: Any, **k: Any) -> Any:
        if before:
            mark(before)
        r = fn(*a, **k)
        if after:
            mark(after)
        return r

    setattr(owner, attr, wrapped)


def _instrument(app: Any) -> Callable[[asyncio.AbstractEventLoop], None]:
    """Marks around memoryd's server functions; the loop's are added once it runs."""
    from memoryd.serve import registry, server, streams

    _wrap(streams._Protocol, "connection_made", "s.connection_made", None)
    _wrap(streams._Protocol, "data_received", "s.data_received", None)
    _wrap(server.Server, "_handle", "s.handle_start", None)
    _wrap(server.Server, "_dispatch_line", "s.dispatch_line", "s.dispatched")
    _wrap(server, "decode", None, "s.decoded")
    _wrap(server, "encode", "s.encode_start", "s.encoded")
    try:  # an answer written by its method's thread (serve/replies.py; main has none)
        from memoryd.serve import replies

        _wrap(replies, "encode", "s.encode_start", "s.encoded")
        _wrap(replies.Reply, "send", "w.send_start", "w.sent")
    except ImportError:
        pass
    for name in ("ping", "search"):
        m = registry.METHODS[name]
        holder: Any = type("Holder", (), {"fn": staticmethod(m.fn)})
        _wrap(holder, "fn", "s.thread_start", "s.thread_end")
        object.__setattr__(m, "fn", holder.fn)  # a frozen dataclass: the bench's marks only

    def on_loop(loop: asyncio.AbstractEventLoop) -> None:
        _wrap(loop, "_write_to_self", "w.write_to_self", None)
        _wrap(loop._selector, "select", None, "l.select_return")  # type: ignore[attr-defined]

    return on_loop


def serve(root: Path, queries: int, out: Path) -> int:
    """The child: serve ROOT's store with marks until stdin closes; then write the marks."""
    from bench.search_latency import make_queries, open_app
    from bench.socket_latency import QueryTable
    from memoryd.core import logsetup
    from memoryd.serve.server import Server

    logsetup.configure("warning")
    print(f"serving with {sys.modules['memoryd'].__file__}", file=sys.stderr)
    vecs = np.load(root / "vecs.npy")
    words, qvecs = make_queries(vecs, queries)
    app = open_app(root, "sqlite", None)
    app.searcher.model = QueryTable(dict(zip(words, qvecs, strict=True)))
    on_loop = _instrument(app)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = Server(app, app.cfg.server, app.cfg.socket)
        await server.start()
        on_loop(loop)
        print(app.cfg.socket, flush=True)
        await loop.run_in_executor(None, sys.stdin.read)
        await server.close()

    try:
        asyncio.run(main())
    finally:
        out.write_text(json.dumps(MARKS))
        app.close()
    return 0


def call(path: str, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, int]]:
    """One request on a new connection, as memoryctl sends it, with the client's marks."""
    m = {"c.start": time.perf_counter_ns()}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        m["c.connected"] = time.perf_counter_ns()
        line = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        s.sendall(json.dumps(line).encode() + b"\n")
        m["c.sent"] = time.perf_counter_ns()
        data = s.makefile("rb").readline()
        m["c.read"] = time.perf_counter_ns()
        answer = json.loads(data)
        m["c.loaded"] = time.perf_counter_ns()
    if "error" in answer:
        raise RuntimeError(answer["error"])
    return dict(answer["result"]), m


def _requests(marks: list[tuple[str, int]]) -> list[dict[str, int]]:
    """The server's marks, one dict per connection (each mark's first time in it); the loop's
    select() return is the first after the method's wake-up of the loop."""
    reqs: list[dict[str, int]] = []
    for name, t in marks:
        if name == "s.connection_made":
            reqs.append({})
        if not reqs:
            continue
        r = reqs[-1]
        if name == "l.select_return":
            if "w.write_to_self" in r and name not in r:
                r[name] = t
        elif name == "w.write_to_self":
            if "s.thread_end" in r and name not in r:
                r[name] = t
        elif name not in r:
            r[name] = t
    return reqs


def measure(root: Path, queries: int, mode: str, code: Path | None = None) -> dict[str, Any]:
    from bench.search_latency import make_queries

    vecs = np.load(root / "vecs.npy")
    words, _ = make_queries(vecs, queries)
    bench_root = str(Path(__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory(prefix="socket-stages-") as tmp:
        out = Path(tmp) / "marks.json"
        argv = [str(root), "--serve", str(queries), "--out", str(out)]
        child, path = serving_child("bench.socket_stages", argv, code)
        assert child.stdin is not None
        client: list[tuple[str, dict[str, int], float]] = []
        try:
            warm = min(10, queries)
            for n, i in enumerate(list(range(warm)) + list(range(queries))):
                _, pm = call(path, "ping", {})
                res, sm = call(path, "search", {"query": words[i], "mode": mode, "limit": 10})
                if n >= warm:
                    client += [("ping", pm, 0.0), ("search", sm, float(res["took_ms"]))]
        finally:
            child.stdin.close()
            child.wait(60)
        server = _requests(json.loads(out.read_text()))[-len(client) :]
    times: dict[str, dict[str, list[float]]] = {"ping": {}, "search": {}}
    for (kind, c, took), s in zip(client, server, strict=True):
        both = {**c, **s}
        for name, a, b in STAGES:
            if a in both and b in both:
                times[kind].setdefault(name, []).append((both[b] - both[a]) / 1e6)
        wall = (c["c.loaded"] - c["c.start"]) / 1e6
        method = (s["s.thread_end"] - s["s.thread_start"]) / 1e6
        times[kind].setdefault("wall", []).append(wall)
        times[kind].setdefault("wall less the method", []).append(wall - method)
        if kind == "search":
            times[kind].setdefault("took_ms (the daemon's)", []).append(took)
    return {
        "queries": queries,
        "mode": mode,
        "code": str(code or bench_root),
        "load": os.getloadavg(),
        "times_ms": {
            kind: {
                k: [float(np.percentile(v, 50)), float(np.percentile(v, 95))] for k, v in t.items()
            }
            for kind, t in times.items()
        },
    }


def report(result: dict[str, Any]) -> str:
    t = result["times_ms"]
    load = ", ".join(f"{x:.1f}" for x in result["load"])
    lines = [
        f"{result['queries']} queries, {result['mode']}, limit 10; memoryd from {result['code']};"
        f" load {load}",
        "| stage | ping p50 / p95 ms | search p50 / p95 ms |",
        "|---|---|---|",
    ]
    for name in [s[0] for s in STAGES] + ["took_ms (the daemon's)", "wall", "wall less the method"]:
        cells = []
        for kind in ("ping", "search"):
            v = t[kind].get(name)
            cells.append(f"{v[0]:.3f} / {v[1]:.3f}" if v else "")
        lines.append(f"| {name} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.socket_stages", description=__doc__)
    p.add_argument("root", type=Path)
    p.add_argument("--queries", type=int, default=40)
    p.add_argument("--mode", default="hybrid")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--code", type=Path, help="serve with the memoryd package in this folder")
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve is not None:
        return serve(args.root, args.serve, args.out)
    results = []
    for n in range(1, args.rounds + 1):
        results.append(measure(args.root, args.queries, args.mode, args.code))
        print(f"round {n}: " + report(results[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
