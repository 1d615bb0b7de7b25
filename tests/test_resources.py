"""What a daemon that runs for weeks must not pile up: every resource a request, a job or a
thread opens is closed on every path. Counted before and after N operations (no timing).

Stop 41 (branch res17): the SQLite store opened one read connection per thread and kept it in
its list until the store closed, so each thread that read and ended (a reconcile run at once,
`App.reconcile_soon`: a reload that changes the note rules, the workspace folder back, the
store writable again, an inotify overflow) left the daemon two more open files (memoryd.db and
its WAL) and a page cache: after a few hundred, a daemon at its open-file limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import resource
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import rpc, to_toml, wait_for

from memoryd.core.errors import Unavailable
from memoryd.serve import registry, streams

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
        # and the limit back: the daemon's own work (a job's reader, the watcher) may have
        # taken the freed descriptors meanwhile on a busy machine (CI: the wait never ended)
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
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


def _asks_and_never_reads(path: Path, request: bytes) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(str(path))
    s.sendall(request)
    return s


@pytest.mark.sqlite_only("the socket server's sending, the same whatever the store")
def test_clients_that_never_read_their_answer_do_not_lock_others_out(
    daemon_factory: Any,
) -> None:
    """Every place of max_connections held by a client that asked for a big answer and never
    read it (a stopped process): each is dropped once it has taken none of its answer for
    request_timeout_s, and the next client is answered (before: refused, -32003, for as
    long as those clients lived)."""
    d = daemon_factory(server={"max_connections": 3, "request_timeout_s": 1.0})
    (d.workspace / "big.md").write_text("# Big\n\n" + "lorem ipsum " * 60000)
    ask = b'{"jsonrpc": "2.0", "id": 1, "method": "note.read", "params": {"path": "big.md"}}\n'
    stuck = [_asks_and_never_reads(d.socket, ask) for _ in range(3)]
    try:  # each has its answer (the debug log's line for each request)

        def answered_reads() -> int:
            reads = [r for r in _events(d, "request") if r.get("method") == "note.read"]
            return sum(int(r.get("repeated", 1)) for r in reads)

        wait_for(lambda: answered_reads() >= 3, timeout=60)

        def pong() -> bool:
            try:
                return "result" in rpc(d.socket, "ping", timeout=10)
            except OSError:  # refused at max_connections, closed as it is sent
                return False

        assert wait_for(pong, timeout=60)
        dropped = [r for r in _events(d, "dropped a client that took none of its answer")]
        assert dropped
    finally:
        for s in stuck:
            s.close()


async def _drain_to(reads_per_round: int) -> str:
    """streams.drain to a client over a real socket pair: 'done', or 'dropped'."""
    ours, theirs = socket.socketpair()
    theirs.setblocking(False)
    _, writer = await asyncio.open_connection(sock=ours)
    writer.write(b"x" * 4_000_000)
    stop = asyncio.Event()

    async def client() -> None:
        while not stop.is_set():
            for _ in range(reads_per_round):
                with contextlib.suppress(BlockingIOError):
                    theirs.recv(65536)
            await asyncio.sleep(0.05)

    task = asyncio.create_task(client())
    try:
        await asyncio.wait_for(streams.drain(writer, 0.5), 60)
        return "done"
    except TimeoutError:
        return "waited for ever"
    except ConnectionResetError:
        return "dropped"
    finally:
        stop.set()
        await task
        writer.close()
        theirs.close()


def test_drain_drops_a_client_that_reads_nothing_and_waits_for_one_that_reads() -> None:
    """The rule both servers (the Unix socket, the web page) send their answers by."""
    assert asyncio.run(_drain_to(0)) == "dropped"
    assert asyncio.run(_drain_to(2)) == "done"


@pytest.mark.parametrize("method", ["note.read", "search", "note.write", "/api/note"])
@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENFILE])
def test_out_of_descriptors_is_not_called_a_refused_write(method: str, code: int) -> None:
    """A request whose open() failed at the open-file limit, on every door (the socket, the
    web page's routes: registry.unexpected): it says the open failed and what to do, and does
    not call a read `cannot write ...; nothing was written` (note.read said so)."""
    failure = OSError(code, os.strerror(code), "/home/u/notes")
    error_code, message, _ = registry.unexpected(failure, method)
    assert error_code == Unavailable.code
    assert message.startswith(f"cannot open /home/u/notes: {os.strerror(code)}. "), message
    assert "write" not in message.split(". ", 1)[0], message
    assert "ulimit -n" in message, message


@pytest.mark.sqlite_only("the socket server's places, the same whatever the store")
def test_a_burst_of_clients_over_max_connections_is_served_in_turn(daemon_factory: Any) -> None:
    """More clients at once than max_connections: each waits for a place and is answered;
    none is refused at once with -32003 "too many connections" (500 clients against 64
    places: 436 were), nor closed as "idle" while its request was on its way."""
    d = daemon_factory(server={"max_connections": 2, "first_request_timeout_s": 60})
    (d.workspace / "a.md").write_text("# Alpha\n\nthe alpha note about sync\n")
    answers: list[dict[str, Any]] = []

    def one(i: int) -> None:
        answers.append(rpc(d.socket, "search", {"query": f"alpha sync {i}"}, timeout=120))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    refused = [a["error"] for a in answers if "error" in a]
    assert not refused, refused
    assert len(answers) == 24
