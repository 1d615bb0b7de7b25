"""Imported at start-up by every Python process the tests start (tests/isolation.py puts this
folder first on their PYTHONPATH): the same guard as in the test processes themselves, so a
`memoryd run`, `memoryctl` or `memoryd mcp` a test starts cannot reach the developer's own
memoryd either. Stdlib only; does nothing unless MDTEST_GUARD is set.

MDTEST_GUARD is JSON: {"sockets": [the real default sockets], "folders": [the real default
folders], "report": a file that gets one line per refused operation}.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

WATCHED_EVENTS = frozenset({"socket.connect", "socket.bind", "open", "os.mkdir"})
_parsed: dict[str, tuple[frozenset[str], tuple[str, ...], str]] = {}


def _spec() -> tuple[frozenset[str], tuple[str, ...], str] | None:
    """The guard's paths, read from the environment at each event: an xdist worker inherits
    the controller's MDTEST_GUARD, then sets its own (tests/isolation.py)."""
    raw = os.environ.get("MDTEST_GUARD")
    if not raw:
        return None
    if raw not in _parsed:
        data = json.loads(raw)
        _parsed[raw] = (frozenset(data["sockets"]), tuple(data["folders"]), str(data["report"]))
    return _parsed[raw]


def _refuse(report: str, what: str) -> None:
    fd = os.open(report, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"pid {os.getpid()} {' '.join(sys.argv[:3])}: {what}\n".encode())
    finally:
        os.close(fd)
    raise PermissionError(f"the tests must never touch the real memoryd: {what}")


def hook(event: str, args: tuple[Any, ...]) -> None:
    if event not in WATCHED_EVENTS:
        return
    spec = _spec()
    if spec is None:
        return
    sockets, folders, report = spec
    if event.startswith("socket."):
        sock, address = args[0], args[1]
        if getattr(sock, "family", None) != socket.AF_UNIX:
            return
        if not isinstance(address, str | bytes) or not address:
            return
        path = os.path.abspath(os.fsdecode(address))
        if path in sockets:
            _refuse(report, f"{event} {path}")
        return
    target = args[0]
    if not isinstance(target, str | bytes | os.PathLike):
        return  # a file descriptor
    path = os.path.abspath(os.fsdecode(target))
    for folder in folders:
        if path == folder or path.startswith(folder + os.sep):
            _refuse(report, f"{event} {path}")


def install() -> None:
    """Once per process (the test processes load this file again, under another name)."""
    if os.environ.get("MDTEST_GUARD") and not getattr(sys, "_mdtest_guard", False):
        sys._mdtest_guard = True  # type: ignore[attr-defined]
        sys.addaudithook(hook)


install()
