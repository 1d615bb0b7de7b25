"""systemd's notify and socket-activation protocols, by hand (they are small and stable).

sd_notify(3): one datagram of KEY=VALUE lines to $NOTIFY_SOCKET, a filesystem path or, when it
starts with '@', an abstract address. sd_listen_fds(3): sockets passed by the service manager
start at fd 3 and are ours only when $LISTEN_PID is our pid.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Mapping, MutableMapping

from memoryd.core.logsetup import get_logger

log = get_logger("memoryd.serve.notify")

SD_LISTEN_FDS_START = 3
LISTEN_VARS = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")


def _address(value: str) -> str | bytes | None:
    if value.startswith("@") and len(value) > 1:
        return b"\0" + value[1:].encode()
    if value.startswith("/"):
        return value
    return None  # unset, or a kind of address we do not speak (vsock:...)


class Notifier:
    """Tells the service manager about readiness, status and liveness; a no-op outside systemd.

    Safe to call from any thread (indexing progress comes from worker threads).
    """

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        self._addr = _address(env.get("NOTIFY_SOCKET", ""))
        self.enabled = self._addr is not None
        self._watchdog_usec = env.get("WATCHDOG_USEC", "")
        self._watchdog_pid = env.get("WATCHDOG_PID", "")
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()

    @property
    def watchdog_interval(self) -> float | None:
        """Seconds between WATCHDOG=1 pings (half the timeout), or None when not asked for."""
        usec = self._watchdog_usec
        if not usec.isdigit() or int(usec) == 0:
            return None
        if self._watchdog_pid and self._watchdog_pid != str(os.getpid()):
            return None
        return int(usec) / 2 / 1e6

    def send(self, *lines: str) -> bool:
        """Send one datagram; True when it was sent. Never raises: notification is best effort."""
        if self._addr is None or not lines:
            return False
        # A newline inside a value (a file name in STATUS=) would start a new assignment.
        payload = "\n".join(line.replace("\n", " ") for line in lines)
        data = payload.encode("utf-8", "replace")
        try:
            with self._lock:
                if self._sock is None:
                    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                    sock.setblocking(False)  # never stall the event loop on a full queue
                    self._sock = sock
                self._sock.sendto(data, self._addr)
            return True
        except OSError as exc:
            log.debug("sd_notify failed", error=str(exc), message=payload[:200])
            return False

    def ready(self, status: str | None = None) -> None:
        lines = ["READY=1"]
        if status:
            lines.append(f"STATUS={status}")
        lines.append(f"MAINPID={os.getpid()}")
        self.send(*lines)

    def status(self, text: str) -> None:
        self.send(f"STATUS={text}")

    def reloading(self) -> None:
        """Start of a reload; send ready() when it is done (systemd >= 253 tracks the pair)."""
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self.send("RELOADING=1", f"MONOTONIC_USEC={usec}")

    def stopping(self) -> None:
        self.send("STOPPING=1")

    def watchdog(self) -> None:
        self.send("WATCHDOG=1")

    def close(self) -> None:
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None


def listen_fds(
    env: MutableMapping[str, str] | None = None, *, unset: bool = True
) -> list[socket.socket]:
    """The sockets passed by the service manager (socket activation), or [] when there are none.

    Only when LISTEN_PID is this process: the variables are inherited by children that are not
    meant to take the fds. With unset=True the variables are removed either way, as
    sd_listen_fds(1) does. The fds are made close-on-exec.
    """
    env = os.environ if env is None else env
    pid, count = env.get("LISTEN_PID", ""), env.get("LISTEN_FDS", "")
    if unset:
        for key in LISTEN_VARS:
            env.pop(key, None)
    if pid != str(os.getpid()) or not count.isdigit():
        return []
    socks = []
    for fd in range(SD_LISTEN_FDS_START, SD_LISTEN_FDS_START + int(count)):
        try:
            os.set_inheritable(fd, False)  # FD_CLOEXEC
            socks.append(socket.socket(fileno=fd))
        except OSError as exc:  # not open, or not a socket: a unit file mistake
            log.warning("ignoring inherited fd", fd=fd, error=str(exc))
    return socks
