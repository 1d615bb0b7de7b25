"""What a daemon that runs for weeks must not pile up: every resource a request, a job or a
thread opens is closed on every path. Counted before and after N operations (no timing).

Stop 41 (branch res17): the SQLite store opened one read connection per thread and kept it in
its list until the store closed, so each thread that read and ended (a reconcile run at once,
`App.reconcile_soon`: a reload that changes the note rules, the workspace folder back, the
store writable again, an inotify overflow) left the daemon two more open files (memoryd.db and
its WAL) and a page cache: after a few hundred, a daemon at its open-file limit.
"""

from __future__ import annotations

import json
import os
import resource
import socket
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


def _events(daemon: Any, prefix: str) -> list[dict[str, Any]]:
    out = []
    for line in daemon.log().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and str(rec.get("event", "")).startswith(prefix):
            out.append(rec)
    return out


@pytest.mark.sqlite_only("accept() is the socket server's, the same whatever the store")
def test_accept_at_the_open_file_limit(daemon_factory: Any) -> None:
    """The daemon at its open-file limit (RLIMIT_NOFILE, set for it alone): a new client waits
    in the kernel's queue; the daemon says so in one log line, does not call accept() thousands
    of times a second (asyncio before CPython gh-151615 did, each call logged: a core busy
    and a flooded log), and answers the waiting client once descriptors are free again."""
    d = daemon_factory(server={"first_request_timeout_s": 120, "idle_timeout_s": 120})
    assert d.proc is not None
    pid = d.proc.pid
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (open_fds(pid) + 4, hard))
    held = []
    try:
        for _ in range(12):  # idle clients: the daemon takes what it can, the rest queue
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(d.socket))
            held.append(s)
        wait_for(lambda: _events(d, "new connections wait"), timeout=30)
        waiting = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        held.append(waiting)
        waiting.settimeout(60)
        waiting.connect(str(d.socket))
        waiting.sendall(b'{"jsonrpc": "2.0", "id": 7, "method": "ping"}\n')
        for s in held[:-1]:
            s.close()
        answer = json.loads(waiting.makefile("rb").readline())
        assert answer["result"]["pong"] is True
    finally:
        for s in held:
            s.close()
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
    refused = _events(d, "new connections wait")
    said = sum(int(r.get("repeated", 1)) for r in refused)
    assert said == 1, f"the refusals were logged {said} times, not once: {refused}"
    # each retry (debug): one a second while it lasted, where asyncio's own made up to the
    # backlog (1024) a round
    tries = sum(int(r.get("repeated", 1)) for r in _events(d, "accept() refused; tried again"))
    assert 1 <= tries < 100, tries
