"""What keeping an add's id for its daily-log line costs an add, in process, alternated per add.

    PYTHONPATH=. python -m bench.add_cost [--backend postgres|sqlite] [--adds 200] [--dsn DSN]

A shared store's add keeps its id from its transaction until its line is written
(memory/dailyadds.py), so a kill between the two has the next start write the line. Arms,
switched add by add on one App with the daily log on (so the machine's moments fall on all of
them): `none` (the id not kept: main before it), `journal` (as shipped: two appends of a few
bytes), `rename` (the ids written anew into a file replaced by rename at each change, as
dailylog-waiting.json is, but not fsynced) and `rename+fsync` (the same, fsynced: what a power
cut would need). Prints each arm's wall p50 / p95 in ms and the ratios against `none`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import pgserver, run
from memoryd.memory.dailyadds import AddsUnderWay


@contextlib.contextmanager
def _app(backend: str, dsn: str | None) -> Iterator[Any]:
    from memoryd.index.embed import FakeEmbedder, ModelHolder
    from memoryd.serve.app import App

    root = Path(tempfile.mkdtemp(prefix="mdadd-", dir="/tmp"))
    server = pgserver.Server(dsn) if backend == "postgres" else None
    store = {} if server is None else {"store": {"backend": "postgres", "dsn": server.fresh("add")}}
    app = None
    try:
        cfg = run.make_config(root, dailylog={"enabled": True}, **store)
        app = App(cfg, model=ModelHolder(lambda: FakeEmbedder(), description="fake"))
        app.dailylog.team = True  # (on SQLite too: what the kept id costs there)
        yield app
    finally:
        if app is not None:
            app.close()
        if server is not None:
            server.close()
        shutil.rmtree(root, ignore_errors=True)


class _Renamed(AddsUnderWay):
    """The ids under way written anew into a file replaced by rename at each change."""

    def __init__(self, path: Path, sync: bool) -> None:
        super().__init__(path)
        self.sync = sync

    def _append(self, text: str) -> None:
        assert self.path is not None
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, json.dumps(sorted(self.ids)).encode())
            if self.sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)


def measure(backend: str, adds: int, dsn: str | None = None) -> dict[str, Any]:
    with _app(backend, dsn) as app:
        mem, daily = app.memories, app.dailylog
        data = app.cfg.data_dir
        arms: dict[str, AddsUnderWay | None] = {
            "none": None,
            "journal": daily.adds,
            "rename": _Renamed(data / "renamed", sync=False),
            "rename+fsync": _Renamed(data / "synced", sync=True),
        }
        times: dict[str, list[float]] = {name: [] for name in arms}
        for i in range(10):  # warm: the first adds' caches and connections
            mem.add(f"warm-up memory {i} of the add cost bench")
        for i in range(adds * len(arms)):
            name = list(arms)[(i + i // len(arms)) % len(arms)]  # the order turns each round
            arm = arms[name]
            mem.storing = (lambda entry_id: None) if arm is None else daily.storing
            daily.adds = arm or daily.adds
            t = time.perf_counter()
            mem.add(f"memory {i}: the standup moved to {i % 24}:{i % 60:02d} (bench)")
            times[name].append((time.perf_counter() - t) * 1000)
        assert not any(a.ids for a in arms.values() if a), "each id is cleared once its line is"
    rows = {
        n: {"p50": statistics.median(t), "p95": statistics.quantiles(t, n=20)[18]}
        for n, t in times.items()
    }
    base = rows["none"]
    for row in rows.values():
        row["p50_ratio"], row["p95_ratio"] = row["p50"] / base["p50"], row["p95"] / base["p95"]
    return {"backend": backend, "adds_per_arm": adds, "arms": rows}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--backend", choices=("postgres", "sqlite"), default="postgres")
    p.add_argument("--adds", type=int, default=200, help="adds per arm")
    p.add_argument("--dsn", help="a PostgreSQL server (default: an embedded one, removed after)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    out = measure(a.backend, a.adds, a.dsn)
    if a.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{a.backend}, {a.adds} adds per arm, wall ms in process:")
    for name, r in out["arms"].items():
        print(
            f"  {name:<13} p50 {r['p50']:7.3f} ({r['p50_ratio']:.3f}x)"
            f"  p95 {r['p95']:7.3f} ({r['p95_ratio']:.3f}x)"
        )


if __name__ == "__main__":
    main()
