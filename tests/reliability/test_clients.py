"""Concurrent clients: N threads x M requests, one connection per request as memoryctl does,
a mix of writes and reads; every request gets its result, none an error."""

from __future__ import annotations

import collections
import random
import statistics
import threading
import time
from typing import Any

import pytest

from .support import Conn, size

pytestmark = pytest.mark.slow


def test_concurrent_clients_get_no_errors(daemon_factory: Any) -> None:
    clients, per_client = size(10, 50), size(40, 400)
    d = daemon_factory()
    for i in range(20):
        (d.workspace / f"n{i}.md").write_text(f"# Note {i}\n\ndeploy cluster token {i}\n")
    errors: list[str] = []
    latencies: list[float] = []
    counts: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()
    gate = threading.Barrier(clients)

    def client(n: int) -> None:
        rng = random.Random(n)
        mine: list[int] = []
        gate.wait()
        for k in range(per_client):
            roll = rng.random()
            if roll < 0.3 or not mine:
                method, params = "add", {"content": f"client {n} says {k} {rng.random()}"}
            elif roll < 0.6:
                method, params = "search", {"query": rng.choice(["deploy", "client", "token"])}
            elif roll < 0.75:
                method, params = "get", {"id": rng.choice(mine)}
            elif roll < 0.85:
                method, params = "list", {"limit": 5}
            elif roll < 0.95:
                method, params = "stats", {}
            else:
                method, params = "update", {"id": rng.choice(mine), "importance": rng.randint(1, 9)}
            t = time.perf_counter()
            try:
                with Conn(d.socket, timeout=60) as c:
                    resp = c.call(method, params)
            except (OSError, ValueError) as exc:
                resp = {"error": {"message": repr(exc)}}
            took = time.perf_counter() - t
            with lock:
                latencies.append(took)
                counts[method] += 1
                if "error" in resp:
                    errors.append(f"{method} {params}: {resp['error']}")
            if method == "add" and "result" in resp:
                mine.append(resp["result"]["id"])

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    took = time.monotonic() - started
    total = sum(counts.values())
    ordered = sorted(latencies)
    print(
        f"\nclients: {clients} x {per_client} = {total} requests in {took:.1f} s "
        f"({total / took:.0f}/s), {len(errors)} errors; latency p50 "
        f"{statistics.median(ordered) * 1000:.1f} ms, p99 "
        f"{ordered[int(len(ordered) * 0.99) - 1] * 1000:.1f} ms; {dict(counts)}"
    )
    assert total == clients * per_client
    assert errors == [], errors[:5]
    assert d.call("ping")["pong"] is True
