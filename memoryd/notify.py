"""systemd's notify and socket-activation protocols, by hand (they are small and stable).

sd_notify: a datagram of KEY=VALUE lines to $NOTIFY_SOCKET (a path, or an abstract address when
it starts with '@'). sd_listen_fds: inherited sockets start at fd 3 when LISTEN_PID is our pid.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping, MutableMapping

from memoryd.logsetup import get_logger

log = get_logger("memoryd.notify")
SD_LISTEN_FDS_START = 3


class Notifier:
    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        addr = env.get("NOTIFY_SOCKET", "")
        self._addr: str | bytes | None = None
        if addr.startswith("@"):
            self._addr = b"\0" + addr[1:].encode()
        elif addr.startswith("/"):
            self._addr = addr
        self.enabled = self._addr is not None
        self._sock: socket.socket | None = None
        usec = env.get("WATCHDOG_USEC", "")
        pid = env.get("WATCHDOG_PID", "")
        self._watchdog: float | None = None
        if usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid())):
            self._watchdog = int(usec) / 2 / 1e6

    @property
    def watchdog_interval(self) -> float | None:
        return self._watchdog

    def send(self, *lines: str) -> bool:
        if self._addr is None:
            return False
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self._sock.setblocking(False)
            self._sock.sendto("\n".join(lines).encode(), self._addr)
            return True
        except OSError as exc:
            log.debug("sd_notify failed", error=str(exc))
            return False

    def ready(self, status: str | None = None) -> None:
        lines = ["READY=1", f"MAINPID={os.getpid()}"]
        if status:
            lines.append(f"STATUS={status}")
        self.send(*lines)

    def status(self, text: str) -> None:
        self.send(f"STATUS={text}")

    def reloading(self) -> None:
        usec = int(time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6)
        self.send("RELOADING=1", f"MONOTONIC_USEC={usec}")

    def stopping(self) -> None:
        self.send("STOPPING=1")

    def watchdog(self) -> None:
        self.send("WATCHDOG=1")

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def listen_fds(
    env: MutableMapping[str, str] | None = None, *, unset: bool = True
) -> list[socket.socket]:
    """Sockets passed by the service manager (socket activation), or []."""
    env = os.environ if env is None else env
    pid, count = env.get("LISTEN_PID", ""), env.get("LISTEN_FDS", "")
    if unset:
        for key in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
            env.pop(key, None)
    if pid != str(os.getpid()) or not count.isdigit():
        return []
    socks = []
    for fd in range(SD_LISTEN_FDS_START, SD_LISTEN_FDS_START + int(count)):
        os.set_inheritable(fd, False)
        socks.append(socket.socket(fileno=fd))
    return socks
