"""What a daemon that runs for weeks must not pile up: every resource a request, a job or a
thread opens is closed on every path. Counted before and after N operations (no timing).

Stop 41 (branch res17): the SQLite store opened one read connection per thread and kept it in
its list until the store closed, so each thread that read and ended (a reconcile run at once,
`App.reconcile_soon`: a reload that changes the note rules, the workspace folder back, the
store writable again, an inotify overflow) left the daemon two more open files (memoryd.db and
its WAL) and a page cache: after a few hundred, a daemon at its open-file limit.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import to_toml, wait_for

pytestmark = [
    pytest.mark.backends,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts /proc/PID/fd"),
]

ROUNDS = 12


def open_fds(pid: int | str = "self") -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_threads_that_end_leave_no_connection_open(make_app: Any) -> None:
    """Every thread that reads the store and ends: its connection goes with it (one thread a
    round, as reconcile_soon, a timer or any thread of its own would)."""
    app = make_app()

    def one_read() -> None:
        app.store.read(lambda con: con.execute("SELECT 1").fetchall())

    def in_a_thread() -> None:
        thread = threading.Thread(target=one_read)
        thread.start()
        thread.join()

    pool = getattr(app.store, "pool", None)  # PostgreSQL: its first connections, opened
    if pool is not None:  # in the background, are not this test's subject
        wait_for(lambda: pool.get_stats().get("pool_size", 0) >= pool.min_size, timeout=30)
    in_a_thread()
    before = open_fds()
    for _ in range(ROUNDS):
        in_a_thread()
    assert open_fds() <= before + 2, "each thread that read left a connection open"


def _reconcile_runs(daemon: Any) -> int:
    jobs = daemon.call("jobs")
    items = jobs["jobs"] if isinstance(jobs, dict) else jobs
    return int(next(j["runs"] for j in items if j["name"] == "reconcile"))


def test_reloads_that_reconcile_leave_no_files_open(daemon_factory: Any) -> None:
    """End to end: `memoryd run`, reloaded (SIGHUP) with changed note rules, each a reconcile
    on a thread of its own; the daemon's open files do not grow with the reloads."""
    import signal

    d = daemon_factory()
    (d.workspace / "a.md").write_text("# A\n\nalpha\n")
    config = Path(d.config_path)

    def reload(n: int) -> None:
        cfg = dict(d.cfg)
        cfg["indexer"] = {**cfg.get("indexer", {}), "exclude": [f"none-{n}/**"]}
        runs = _reconcile_runs(d)
        config.write_text(to_toml(cfg))
        assert d.proc is not None
        d.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: _reconcile_runs(d) > runs, timeout=60)

    assert d.proc is not None
    reload(0)
    reload(1)
    before = open_fds(d.proc.pid)
    for n in range(2, 2 + ROUNDS):
        reload(n)
    after = open_fds(d.proc.pid)
    assert after <= before + 2, f"{after - before} more open files after {ROUNDS} reloads"
