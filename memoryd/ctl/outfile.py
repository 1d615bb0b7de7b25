"""A file memoryctl writes (`export -o FILE`): owner-only, whole or not at all, its temporary
removed whatever ends the write (a refusal, Ctrl-C, SIGTERM, SIGHUP). Imported only by the
commands that write one: memoryctl's start-up does without os, signal and this."""

from __future__ import annotations

import contextlib
import os
import signal
import stat as _stat
from typing import Any

from memoryd.ctl.client import Refused


class _Signalled(BaseException):
    """SIGTERM or SIGHUP arrived while a temporary file was open (write_private)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def refused_output(exc: OSError, where: str) -> str:
    """`cannot write FILE: No space left on device; free some space and run it again`: an
    output file the system refused (`export -o`), with what to do: the cases of the daemon's
    core/oserrors.what_to_do, in the standard library alone (tests/test_shared_helpers.py
    holds the two to one table)."""
    import errno

    code = exc.errno
    if code == errno.ENOSPC:
        fix = "free some space (or files, when it has no inodes left: df -i) and run it again"
    elif code == errno.EDQUOT:
        fix = "free some space and run it again"
    elif code == errno.EFBIG:
        fix = "the file size limit is reached (ulimit -f): raise it and run it again"
    elif code == errno.EROFS:
        fix = "remount it read-write, or write elsewhere"
    elif code in (errno.EACCES, errno.EPERM):
        fix = "you may not write there: write elsewhere, or give yourself write permission"
    elif code in (errno.EMFILE, errno.ENFILE):
        fix = "too many open files (ulimit -n): close some, or raise the limit, and run it again"
    elif code == errno.EIO:
        fix = "the disk reported an I/O error: check it (dmesg), then run it again"
    elif code in (errno.EEXIST, errno.ENOTDIR):
        fix = "a file is in the way where a folder must be: write elsewhere"
    elif code == errno.EISDIR:
        fix = "it is a folder: name a file"
    else:
        fix = "nothing more was written"
    return f"cannot write {where}: {exc.strerror or exc}; {fix}"


def write_private(path: str, data: str) -> None:
    """Write a file only its owner can read (exports hold every memory), atomically: a
    temporary file beside it (0600) is synced and renamed over it, so an interrupted export
    never leaves a truncated file where a good one was, nor the temporary: Ctrl-C, SIGTERM and
    SIGHUP remove it (then the process ends by that signal, as it would have). A path that is
    not a regular file (a pipe, /dev/stdout) is written in place. Refused by the system: Refused
    (exit 1)."""
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if st is not None and not _stat.S_ISREG(st.st_mode):
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(data)
        except OSError as exc:
            raise Refused(refused_output(exc, path)) from None
        return
    folder = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")

    def stop(signum: int, frame: Any) -> None:
        raise _Signalled(signum)

    # (a signal ignored, as SIGHUP under nohup, stays ignored)
    fatal = [s for s in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(s) == signal.SIG_DFL]
    for s in fatal:
        signal.signal(s, stop)
    try:
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.fchmod(fd, 0o600)
            with open(fd, "w", encoding="utf-8") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):  # (renamed, or never made)
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise Refused(refused_output(exc, path)) from None
    except _Signalled as sig:
        for s in fatal:
            signal.signal(s, signal.SIG_DFL)
        os.kill(os.getpid(), sig.signum)  # ends here, by the signal
        raise SystemExit(128 + sig.signum) from None
    finally:
        for s in fatal:
            signal.signal(s, signal.SIG_DFL)
