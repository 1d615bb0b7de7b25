"""Which local user a loopback TCP client runs as (Linux: /proc/net/tcp and tcp6).

A Unix socket tells its peer's uid (SO_PEERCRED); TCP does not, but on Linux the kernel lists
every TCP socket with its owner's uid. The client's socket is the one whose local address is
the address our connection sees as remote. Elsewhere, or when the line is not found, the answer
is None and the token alone decides."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterable

ESTABLISHED = "01"  # the "st" column of /proc/net/tcp (include/net/tcp_states.h)


def _hex_addr(host: str, port: int) -> str:
    """An address as /proc/net/tcp writes it: the IP's 32-bit words in host byte order (little
    endian here), then the port, all upper-case hex."""
    if ":" in host:
        raw = socket.inet_pton(socket.AF_INET6, host.split("%")[0])
    else:
        raw = socket.inet_aton(host)
    words = [raw[i : i + 4][::-1].hex().upper() for i in range(0, len(raw), 4)]
    return f"{''.join(words)}:{port:04X}"


def _v4_mapped(host: str) -> str | None:
    if host.startswith("::ffff:") and "." in host:
        return host[len("::ffff:") :]
    return None


def tcp_peer_uid(server: tuple[str, int], client: tuple[str, int]) -> int | None:
    """The uid owning the client end of a loopback TCP connection, or None if unknown."""
    candidates = [(server, client)]
    mapped = _v4_mapped(client[0]), _v4_mapped(server[0])
    if mapped[0] and mapped[1]:
        candidates.append(((mapped[1], server[1]), (mapped[0], client[1])))
    for (shost, sport), (chost, cport) in candidates:
        try:
            local, remote = _hex_addr(chost, cport), _hex_addr(shost, sport)
        except OSError:
            continue
        table = "/proc/net/tcp6" if ":" in chost else "/proc/net/tcp"
        with contextlib.suppress(OSError), open(table) as f:
            uid = owner(f, local, remote)
            if uid is not None:
                return uid
    return None


def owner(lines: Iterable[str], local: str, remote: str) -> int | None:
    """The uid on the ESTABLISHED line from `local` to `remote` of a /proc/net/tcp table (its
    header line first). Only that state: on loopback Linux reuses a port still in TIME_WAIT
    (tcp_tw_reuse), and a closed socket's line shows uid 0, not its owner's."""
    rows = iter(lines)
    next(rows, None)  # the header line
    for line in rows:
        cols = line.split()
        with contextlib.suppress(ValueError, IndexError):
            if cols[1] == local and cols[2] == remote and cols[3] == ESTABLISHED:
                return int(cols[7])
    return None
