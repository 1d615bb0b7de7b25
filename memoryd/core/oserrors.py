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
    """The fix for a refused write (or a folder memoryd cannot use), by errno: the sentence
    after the system's words. memoryctl's stdlib copy (ctl/outfile.refused_output) knows the
    same errnos (tests/test_shared_helpers.py holds the two to one table)."""
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
        return "remount it read-write, or point data_dir (or the path) elsewhere"
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
    if code in (errno.EEXIST, errno.ENOTDIR):
        return (
            "a file is in the way where a folder must be: move it, or point the setting elsewhere"
        )
    if code == errno.EISDIR:
        return "it is a folder: name a file"
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


def describe(exc: OSError, where: str | Path | None = None, setting: str | None = None) -> str:
    """`PATH: No space left on device; free some space ... and retry`: an OSError as one line
    that names the path, what the system said and what to do (a folder or file memoryd needs
    at start-up, `memoryd run`'s and every other command's last word). `setting`: the path
    setting that names it (workspace, logging.file, ...), the one to point elsewhere."""
    path = where if where is not None else exc.filename if exc.filename is not None else "a file"
    fix = what_to_do(exc.errno)
    if setting:  # not data_dir whatever the path was (a read-only workspace was told so)
        fix = fix.replace("data_dir (or the path)", setting).replace("the setting", setting)
    return f"{path}: {exc.strerror or strerror(exc.errno)}; {fix}"


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
    if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE):
        # an open that failed, for a read as often as for a write (note.read, a search's
        # reader): not "cannot write ...; nothing was written"
        return Unavailable(f"cannot open {exc.filename}: {exc.strerror}. {advice(exc.errno)}")
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


# how long `writes_refused` is shown after the last refused write, once one has worked since:
# a disk with a little room refuses some writes and takes others, and status stays one answer
REFUSED_WINDOW_S = 600.0


class Refusals:
    """Whether writes are refused (status: `store.writes_refused`, the daily log's `refused`),
    by one rule a person can read: from the first refused write until none was refused for
    REFUSED_WINDOW_S and one has worked since (not flipping at each write while a nearly full
    disk takes some and refuses others), with the time of the last refusal and of the last
    write that worked. One warning in the log when it starts, one info line when it ends; the
    `on_worked` hook at each first write that works after a refusal (a retry is due). Thread-
    safe enough: plain assignments."""

    def __init__(self, what: str, *, started: str = "", ended: str = "") -> None:
        self.what = what  # "store", "daily log": the log lines' subject
        self.started = started or f"{what} writes refused"  # the log lines' events
        self.ended = ended or f"{what} writes work again"
        self.since: float | None = None  # the first refusal of this spell
        self.error: str | None = None  # the last refusal's message
        self.last_refused: float | None = None
        self.last_worked: float | None = None  # the last write that worked, in this spell
        self.count = 0  # refusals in this spell
        # called once writes work again (App: reconcile, for files whose indexing was refused)
        self.on_worked: Callable[[], None] | None = None

    def refused(self, error: str) -> None:
        now = time.time()
        self.error, self.last_refused, self.count = error, now, self.count + 1
        if self.since is None:
            self.since, self.last_worked = now, None
            log.warning(self.started, error=error)

    def worked(self) -> None:
        if self.since is None:
            return
        now = time.time()
        again = self.last_worked is None or self.last_worked < (self.last_refused or 0.0)
        self.last_worked = now
        if again and self.on_worked is not None:  # the first write that works after a refusal
            try:
                self.on_worked()
            except Exception:  # never the writer's failure
                log.exception("after writes work again")
        self._over(now)

    def _over(self, now: float) -> bool:
        """End the spell once no write was refused for the window and one has worked since."""
        since, last, worked = self.since, self.last_refused, self.last_worked
        if since is None:
            return True
        if worked is None or last is None or worked < last or now - last < REFUSED_WINDOW_S:
            return False
        self.since, self.error, self.last_refused, self.last_worked = None, None, None, None
        log.info(
            self.ended,
            refused_s=round((last or now) - since, 1),
            refusals=self.count,
        )
        self.count = 0
        return True

    def info(self) -> dict[str, Any] | None:
        """None, or {"since": ISO time of the first refusal, "error": the last one's message,
        "last_refused", "last_worked" (ISO times; null: none since the first refusal),
        "refusals": how many}."""
        if self._over(time.time()):
            return None
        return {
            "since": iso(self.since),
            "error": self.error,
            "last_refused": iso(self.last_refused),
            "last_worked": iso(self.last_worked),
            "refusals": self.count,
        }
