"""The one mapping of a write the operating system refused to the error a client gets: which
path, what the system said, what to do. Every write path uses it (the SQLite store, the
PostgreSQL store's DiskFull, notes, the daily log, checkpoints and exports), so a full disk
answers the same way whichever door the write came through.

No room (a full disk, a quota, the file size limit) is DiskFull (-32013); a read-only file
system, a permission, too many open files or an I/O error is StoreError (-32012) for the
database, else the caller's own class. Either way nothing was written.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

from memoryd.core.errors import DiskFull, MemorydError, StoreError, Unavailable
from memoryd.core.logsetup import get_logger
from memoryd.core.timeutil import iso

log = get_logger("memoryd.core.oserrors")

# errnos that mean "no room": DiskFull whatever was being written
NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
# errnos a person (or time) fixes without memoryd's help: a write refused for one of these, or
# for no room, works again by itself once it is fixed (the daily log keeps such lines to write)
PASSING = NO_ROOM | {
    errno.EROFS,
    errno.EACCES,
    errno.EPERM,
    errno.EIO,
    errno.EMFILE,
    errno.ENFILE,
    errno.ENOMEM,
    errno.ENOENT,
}


def what_to_do(code: int | None) -> str:
    """The fix for a refused write, by errno (the sentence after the system's words)."""
    if code == errno.ENOSPC:
        return "free some space (or files, when it has no inodes left: df -i) and retry"
    if code == errno.EDQUOT:
        return "free some space and retry"
    if code == errno.EFBIG:
        return (
            "the file size limit of the daemon is reached (ulimit -f, LimitFSIZE=): raise it "
            "and retry"
        )
    if code == errno.EROFS:
        return "it is on a read-only file system: remount it read-write (or move data_dir)"
    if code in (errno.EACCES, errno.EPERM):
        return "the daemon may not write there: give its user write permission"
    if code in (errno.EMFILE, errno.ENFILE):
        limit = _nofile()
        return (
            f"too many open files (the daemon's limit is {limit}: ulimit -n, LimitNOFILE=); "
            "retry once clients have closed, or raise the limit"
        )
    if code == errno.EIO:
        return "the disk reported an I/O error: check it (dmesg), then retry"
    return "retry once the cause is fixed"


def advice(code: int | None) -> str:
    """what_to_do as a sentence of its own."""
    fix = what_to_do(code)
    return fix[0].upper() + fix[1:]


def _nofile() -> str:
    # `resource` imported with this module: at the limit, an import (a file to open) fails too
    if resource is None:
        return "unknown"
    return str(resource.getrlimit(resource.RLIMIT_NOFILE)[0])


def strerror(code: int | None) -> str:
    return os.strerror(code) if code else "refused by the system"


def message(where: str | Path | None, code: int | None, detail: str | None = None) -> str:
    """`cannot write PATH: No space left on device; nothing was written. Free some space and
    retry`: one line for every refused write."""
    what = detail or strerror(code)
    place = f"cannot write {where}" if where is not None else "cannot write"
    return f"{place}: {what}; nothing was written. {advice(code)}"


def refused(
    exc: OSError,
    where: str | Path | None = None,
    other: type[MemorydError] = StoreError,
) -> MemorydError:
    """The client's error for an OSError of a write: DiskFull when there is no room, else
    `other` (StoreError for the database; notes pass their own)."""
    code = exc.errno
    path = where if where is not None else exc.filename
    text = message(path, code, exc.strerror)
    if code in NO_ROOM:
        return DiskFull(text)
    return other(text)


def client_error(exc: BaseException) -> MemorydError | None:
    """For a request that failed on an OSError the system gave for a reason that passes (no
    room, read-only, permission, too many open files: PASSING): its client error (DiskFull, else
    Unavailable), so the socket's and the web page's doors answer as every write path does, not
    "internal error". None for anything else (a bug: the caller keeps its traceback)."""
    if isinstance(exc, OSError) and exc.errno in PASSING:
        return refused(exc, other=Unavailable)
    return None


def from_code(
    code: int | None,
    where: str | Path | None,
    detail: str | None = None,
    other: type[MemorydError] = StoreError,
) -> MemorydError:
    """refused() for an errno that came without an OSError (SQLite's system_errno, a
    PostgreSQL server's SQLSTATE mapped to one)."""
    text = message(where, code, detail)
    return DiskFull(text) if code in NO_ROOM else other(text)


class Refusals:
    """Whether writes are being refused now (status: `store.writes_refused`, and the daily
    log's `waiting`): set by the first refused write, with one warning in the log; cleared by
    the next write that works, with one info line. Thread-safe enough: plain assignments."""

    def __init__(self, what: str) -> None:
        self.what = what  # "store", "daily log": the log lines' subject
        self.since: float | None = None
        self.error: str | None = None
        # called once writes work again (App: reconcile, for files whose indexing was refused)
        self.on_worked: Callable[[], None] | None = None

    def refused(self, error: str) -> None:
        first = self.since is None
        self.error = error
        if first:
            self.since = time.time()
            log.warning(f"{self.what} writes refused", error=error)

    def worked(self) -> None:
        since = self.since
        if since is None:
            return
        self.since, self.error = None, None
        log.info(f"{self.what} writes work again", refused_s=round(time.time() - since, 1))
        if self.on_worked is not None:
            try:
                self.on_worked()
            except Exception:  # never the writer's failure
                log.exception("after writes work again")

    def info(self) -> dict[str, Any] | None:
        """{"since": ISO time, "error": the last refusal's message}, or None."""
        since, error = self.since, self.error
        if since is None:
            return None
        return {"since": iso(since), "error": error}
