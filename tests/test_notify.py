"""The sd_notify and socket-activation protocols, against real sockets."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from memoryd.notify import Notifier, listen_fds


def test_notifier_sends_datagrams_in_order(short_dir: Path) -> None:
    path = short_dir / "n.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(2)
    n = Notifier({"NOTIFY_SOCKET": str(path)})
    assert n.enabled
    n.ready("serving")
    n.status("indexing 10/20")
    n.stopping()
    n.close()
    got = [sock.recv(1024).decode() for _ in range(3)]
    sock.close()
    assert got[0].splitlines()[0] == "READY=1" and "STATUS=serving" in got[0]
    assert got[1] == "STATUS=indexing 10/20"
    assert got[2] == "STOPPING=1"


def test_abstract_socket_address() -> None:
    name = f"memoryd-test-{os.getpid()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(2)
    n = Notifier({"NOTIFY_SOCKET": "@" + name})
    n.watchdog()
    n.close()
    assert sock.recv(64) == b"WATCHDOG=1"
    sock.close()


def test_disabled_and_gone_sockets_never_raise(short_dir: Path) -> None:
    n = Notifier({})
    assert not n.enabled and n.send("READY=1") is False
    gone = Notifier({"NOTIFY_SOCKET": str(short_dir / "missing.sock")})
    assert gone.send("READY=1") is False
    gone.close()


def test_watchdog_interval() -> None:
    assert Notifier({"WATCHDOG_USEC": "30000000"}).watchdog_interval == 15.0
    mine = {"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())}
    assert Notifier(mine).watchdog_interval == 1.0
    assert Notifier({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"}).watchdog_interval is None
    assert Notifier({}).watchdog_interval is None


def test_listen_fds_ignores_another_pid_and_unsets() -> None:
    env = {"LISTEN_PID": "1", "LISTEN_FDS": "1"}
    assert listen_fds(env) == []
    assert "LISTEN_PID" not in env and "LISTEN_FDS" not in env
