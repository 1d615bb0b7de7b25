"""The sd_notify and socket-activation protocols, against real sockets (no systemd needed)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DEADLINE_S, ROOT

from memoryd.serve.notify import Notifier, listen_fds


@pytest.fixture
def receiver(short_dir: Path) -> Iterator[tuple[socket.socket, str]]:
    """A datagram socket standing in for systemd's notify socket."""
    path = short_dir / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(2)
    yield sock, str(path)
    sock.close()


def recv(sock: socket.socket) -> list[str]:
    return sock.recv(4096).decode().split("\n")


def test_notifier_sends_ready_status_stopping_in_order(
    receiver: tuple[socket.socket, str],
) -> None:
    sock, path = receiver
    n = Notifier({"NOTIFY_SOCKET": path})
    assert n.enabled
    n.ready("serving")
    n.status("indexing 10/20")
    n.stopping()
    n.close()
    assert recv(sock) == ["READY=1", "STATUS=serving", f"MAINPID={os.getpid()}"]
    assert recv(sock) == ["STATUS=indexing 10/20"]
    assert recv(sock) == ["STOPPING=1"]


def test_reloading_carries_the_monotonic_clock(receiver: tuple[socket.socket, str]) -> None:
    sock, path = receiver
    n = Notifier({"NOTIFY_SOCKET": path})
    before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    n.reloading()
    after = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    n.close()
    first, second = recv(sock)
    assert first == "RELOADING=1"
    key, _, value = second.partition("=")
    assert key == "MONOTONIC_USEC" and before <= int(value) <= after


def test_a_newline_in_a_value_cannot_inject_an_assignment(
    receiver: tuple[socket.socket, str],
) -> None:
    sock, path = receiver
    n = Notifier({"NOTIFY_SOCKET": path})
    n.status("indexing evil\nREADY=1.md \udcff")  # newline and an undecodable byte in a name
    n.close()
    (line,) = recv(sock)
    assert line.startswith("STATUS=indexing evil READY=1.md")


def test_send_from_many_threads_shares_one_socket(receiver: tuple[socket.socket, str]) -> None:
    sock, path = receiver
    n = Notifier({"NOTIFY_SOCKET": path})
    threads = [threading.Thread(target=n.status, args=(f"t{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    n.close()
    assert sorted(recv(sock)[0] for _ in threads) == sorted(f"STATUS=t{i}" for i in range(8))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="abstract sockets are Linux's")
def test_abstract_socket_address() -> None:
    name = f"memoryd-test-{os.getpid()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(2)
    try:
        n = Notifier({"NOTIFY_SOCKET": "@" + name})
        assert n.enabled
        n.watchdog()
        n.close()
        assert sock.recv(64) == b"WATCHDOG=1"
    finally:
        sock.close()


def test_disabled_when_unset_or_not_an_address() -> None:
    for env in ({}, {"NOTIFY_SOCKET": ""}, {"NOTIFY_SOCKET": "relative.sock"}):
        n = Notifier(env)
        assert not n.enabled
        assert n.send("READY=1") is False
        n.ready()  # no-ops, no errors
        n.close()


def test_send_never_raises_when_the_socket_is_gone(short_dir: Path) -> None:
    path = short_dir / "gone.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(path))
    n = Notifier({"NOTIFY_SOCKET": str(path)})
    assert n.send("READY=1") is True
    listener.close()
    path.unlink()
    assert n.send("STATUS=still here?") is False
    n.stopping()
    n.close()
    n.close()  # idempotent
    nobody = Notifier({"NOTIFY_SOCKET": "@no-such-memoryd-socket"})
    assert nobody.send("X=1") is False
    nobody.close()


def test_watchdog_interval() -> None:
    assert Notifier({"WATCHDOG_USEC": "30000000"}).watchdog_interval == 15.0
    mine = {"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())}
    assert Notifier(mine).watchdog_interval == 1.0
    assert Notifier({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"}).watchdog_interval is None
    for usec in ("", "0", "-5", "abc"):
        assert Notifier({"WATCHDOG_USEC": usec}).watchdog_interval is None
    assert Notifier({}).watchdog_interval is None


def test_listen_fds_ignores_another_pid_and_unsets() -> None:
    env = {"LISTEN_PID": "1", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "memoryd.socket", "X": "y"}
    assert listen_fds(env) == []
    assert env == {"X": "y"}
    kept = {"LISTEN_PID": "1", "LISTEN_FDS": "1"}
    assert listen_fds(kept, unset=False) == []
    assert kept == {"LISTEN_PID": "1", "LISTEN_FDS": "1"}
    assert listen_fds({}) == []
    assert listen_fds({"LISTEN_PID": str(os.getpid()), "LISTEN_FDS": "0"}) == []
    assert listen_fds({"LISTEN_PID": str(os.getpid()), "LISTEN_FDS": "many"}) == []


# What systemd does, in miniature: put the listening socket at fd 3, then exec the service
# with LISTEN_PID set to its pid (exec keeps the pid).
LAUNCHER = """
import os, sys
fd = int(sys.argv[1])
os.dup2(fd, 3)
os.close(fd)
env = dict(os.environ, LISTEN_PID=str(os.getpid()), LISTEN_FDS="1", LISTEN_FDNAMES="memoryd.socket")
os.execve(sys.executable, [sys.executable, "-c", sys.argv[2]], env)
"""

SERVICE = """
import json, os, socket, sys
from memoryd.serve.notify import listen_fds
socks = listen_fds()
s = socks[0]
report = {
    "count": len(socks),
    "fd": s.fileno(),
    "unix_stream": s.family == socket.AF_UNIX and s.type == socket.SOCK_STREAM,
    "cloexec": not os.get_inheritable(s.fileno()),
    "left": sorted(k for k in os.environ if k.startswith("LISTEN_")),
}
print(json.dumps(report), flush=True)
conn, _ = s.accept()
conn.sendall(b"hello from the activated service")
conn.close()
"""


def test_listen_fds_adopts_the_socket_passed_at_fd_3(short_dir: Path) -> None:
    path = short_dir / "act.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LISTEN_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(listener.fileno()), SERVICE],
        pass_fds=(listener.fileno(),),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    listener.close()  # only the child holds it now
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.communicate(timeout=DEADLINE_S)[1]
        report = json.loads(line)
        assert report == {
            "count": 1,
            "fd": 3,
            "unix_stream": True,
            "cloexec": True,
            "left": [],
        }
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(5)
            client.connect(str(path))
            assert client.recv(100) == b"hello from the activated service"
        _, err = proc.communicate(timeout=DEADLINE_S)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
