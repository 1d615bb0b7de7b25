"""Whether the daemon memoryctl (or the MCP bridge) talks to runs an earlier memoryd than the one
installed: the client's side of core/installed.py. A daemon says so itself in `status`
(`code_replaced`); one older than that field is judged by its start time against when this
client's own files were installed (one installation, as a rule). Read only on the error path of
an unknown method or param, so its imports wait until then (memoryctl starts without `os`).
"""

from __future__ import annotations

PACKAGE: str | None = None  # the folder whose files say when this client was installed: its own
RESTART_HINT = (
    "restart it to run the version installed now (systemctl --user restart memoryd, or "
    "`memoryd service install` again)"
)


def daemon_older(status: dict) -> bool:
    """Whether the daemon whose `status` this is runs an earlier memoryd than the one installed:
    it says so itself, or (a daemon older than that field) it started before this client's files
    were installed."""
    if "code_replaced" in status:  # it can tell: its own files, wherever installed
        return bool(status["code_replaced"])
    started = status.get("started_at")
    if not isinstance(started, str):
        return False
    import calendar
    import time

    try:
        at = calendar.timegm(time.strptime(started, "%Y-%m-%dT%H:%M:%SZ"))
    except (ValueError, OverflowError):
        return False
    return _installed_at() > at + 1.0  # a second's slack: the start time is in whole seconds


def _installed_at() -> float:
    """The newest change time (ctime: an install sets it) of memoryctl's own modules."""
    import os

    newest = 0.0
    try:
        with os.scandir(PACKAGE or os.path.dirname(os.path.abspath(__file__))) as found:
            for entry in found:
                if entry.name.endswith(".py"):
                    newest = max(newest, entry.stat(follow_symlinks=False).st_ctime)
    except OSError:
        return 0.0
    return newest
