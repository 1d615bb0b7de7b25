"""Replacing a file that others may be writing too, losing none of their bytes: the swap of a
temp file for a note (notes/notes.py) or a daily log file (memory/dailylog.py) that happens only
if the file still holds the bytes the new text was made from, at the moment of the swap, and
gives back whatever an editor, a script's `>>` or an editor's save by rename put there during
it (Changed is raised: the caller reads again and retries, or answers a conflict)."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import secrets
import signal
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.core.fsutil import atomic_write_at, side_name, write_all
from memoryd.core.logsetup import get_logger

log = get_logger("memoryd.core.swap")

# O_NONBLOCK: opening a FIFO named like a note would otherwise wait for a writer forever, and a
# few such requests would take every worker thread of the daemon (no effect on regular files).
READ_FLAGS = (
    os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
)


class Changed(Exception):
    """The file changed between reading it and replacing it."""


def bytes_now(dfd: int, name: str) -> bytes | None:
    """The file's bytes now (None: no file); a FIFO put in the note's place reads as b"" (which
    matches no sha256 a caller read) instead of blocking."""
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dfd)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return f.read()


def _read_fd(fd: int) -> bytes:
    """Every byte of the open file, from its start (whatever the file offset is)."""
    chunks, at = [], 0
    while block := os.pread(fd, 1 << 20, at):
        chunks.append(block)
        at += len(block)
    return b"".join(chunks)


def _append_at(dfd: int, name: str, data: bytes) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_APPEND | _NOFOLLOW | _CLOEXEC, dir_fd=dfd)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NO_LINKS = (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK, errno.EOPNOTSUPP)


_LEASE_WAIT_S = 0.05


def _closed_elsewhere(fd: int) -> bool:
    """False while another descriptor (an editor about to append) still holds the file `fd` is
    open on, after waiting up to 50 ms for it to close. Linux answers through a write lease,
    which is refused while the file is open elsewhere; it is taken and dropped at once (its
    break signal is set to SIGWINCH, ignored by default). Elsewhere, or where leases are off:
    True (only the bytes can be compared)."""
    setlease = getattr(fcntl, "F_SETLEASE", None)
    if setlease is None:
        return True
    deadline = time.monotonic() + _LEASE_WAIT_S
    while True:
        try:
            fcntl.fcntl(fd, getattr(fcntl, "F_SETSIG", 10), signal.SIGWINCH)
            fcntl.fcntl(fd, setlease, fcntl.F_WRLCK)
        except OSError as exc:
            if exc.errno != errno.EAGAIN:
                return True  # leases unavailable (not the owner, leases-enable 0, NFS)
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)  # the other writer is between its open and its close
            continue
        fcntl.fcntl(fd, setlease, fcntl.F_UNLCK)
        return True


# Called between guarded_replace's check and its swap, where a test puts an editor's save.
before_swap: Callable[[], None] | None = None
_RENAME_EXCHANGE = 2  # Linux renameat2's RENAME_EXCHANGE, macOS renameatx_np's RENAME_SWAP


def _exchange_call() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    fn = getattr(libc, "renameat2", None) or getattr(libc, "renameatx_np", None)
    if fn is not None:
        fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        fn.restype = ctypes.c_int
    return fn


_EXCHANGE = _exchange_call()


def _exchange(dfd: int, a: str, b: str) -> bool:
    """Swap the names `a` and `b` in the folder `dfd` in one step; False where the system or
    the file system cannot (then nothing was done)."""
    if _EXCHANGE is None:
        return False
    if _EXCHANGE(dfd, os.fsencode(a), dfd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), b)


def _swap_in(dfd: int, tmp: str, name: str, old_fd: int, new_fd: int) -> None:
    """Put the temp in the note's place. The file there must still be the one checked
    (`old_fd`): an editor that saved by rename after the check (vim, VS Code, a sync tool) put
    another file there, which a plain rename would delete with no name left. So the two names
    are exchanged and the one taken out is looked at: not the file checked, it is put back and
    Changed raised. Where names cannot be exchanged (NFS, an old kernel), a plain rename."""
    if not _exchange(dfd, tmp, name):
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        return
    out = os.stat(tmp, dir_fd=dfd, follow_symlinks=False).st_ino
    if out == os.fstat(old_fd).st_ino:
        os.unlink(tmp, dir_fd=dfd)  # the old file (its backup name keeps it until checked)
        return
    _exchange(dfd, tmp, name)  # the editor's file back in its place
    if os.stat(tmp, dir_fd=dfd, follow_symlinks=False).st_ino != os.fstat(new_fd).st_ino:
        # a third save between the two exchanges: keep it beside the note, never delete it
        kept = f"{name[:-3] if name.endswith('.md') else name} (conflict {secrets.token_hex(3)}).md"
        os.rename(tmp, kept, src_dir_fd=dfd, dst_dir_fd=dfd)
        log.warning("a note was saved twice during a replacement; one copy kept", kept=kept)
    raise Changed(name)


def guarded_replace(dfd: int, tmp: str, name: str, based_on: bytes | None, data: bytes) -> None:
    """Make the temp `tmp` (holding `data`) the file `name`, only if `name` holds `based_on`
    (None: it must not exist) at the moment of the swap, and never lose bytes someone appended
    to the old file meanwhile (an editor, a script's `>>`): raises Changed, with `name` holding
    the old file and whatever was appended, and nothing of `data`.

    The check before the rename cannot see a writer that opened the old file before it and
    writes after it (the bytes would go to a file no longer in the workspace). So the old file
    keeps a second name until the swap is known good: after the rename its bytes are read again
    through a descriptor held since the check; when they changed, the old file is renamed back
    (with everything written to it, now and later) and bytes appended to ours in that instant
    are appended to it. Where the file system has no hard links, only the check is made. The
    swap itself exchanges the names (_swap_in), so an editor's save by rename that lands after
    the check is put back, not deleted."""
    if based_on is None:  # a new note: link() never replaces a file that appeared meanwhile
        try:
            os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
        except FileExistsError:
            raise Changed(name) from None
        except OSError as exc:
            if exc.errno not in _NO_LINKS:
                raise
            if bytes_now(dfd, name) is not None:
                raise Changed(name) from None
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            return
        os.unlink(tmp, dir_fd=dfd)
        return
    try:
        old_fd = os.open(name, READ_FLAGS, dir_fd=dfd)
    except FileNotFoundError:
        raise Changed(name) from None
    backup_name = side_name(name, "old")
    backup: str | None = backup_name
    try:
        if not stat.S_ISREG(os.fstat(old_fd).st_mode) or _read_fd(old_fd) != based_on:
            raise Changed(name)
        try:
            os.link(name, backup_name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
            if (
                os.stat(backup_name, dir_fd=dfd, follow_symlinks=False).st_ino
                != os.fstat(old_fd).st_ino
            ):
                raise Changed(name)  # the file was swapped between our open and the link
        except FileNotFoundError:
            # the file checked was renamed over meanwhile (an editor's save): Linux refuses to
            # link a file whose last name just went; a change, not a failure of the write
            raise Changed(name) from None
        except OSError as exc:
            if exc.errno not in _NO_LINKS:
                raise
            backup = None
        new_fd = os.open(tmp, os.O_RDONLY | _NOFOLLOW | _CLOEXEC, dir_fd=dfd)
        try:
            if before_swap is not None:
                before_swap()  # (tests: an editor's save by rename lands here)
            _swap_in(dfd, tmp, name, old_fd, new_fd)
            idle = _closed_elsewhere(old_fd)
            late = _read_fd(old_fd)
            if late == based_on and idle:
                return
            if backup is None:  # cannot put the old file back: keep its new bytes, after ours
                log.warning("a note changed during its replacement; its new bytes kept at the end")
                _append_at(dfd, name, late[len(based_on) :] if late.startswith(based_on) else late)
                return
            os.replace(backup, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            backup = None
            ours = _read_fd(new_fd)
            if len(ours) > len(data):  # appended to our file in the instant it was in place
                _append_at(dfd, name, ours[len(data) :])
            raise Changed(name)
        finally:
            os.close(new_fd)
    finally:
        os.close(old_fd)
        if backup is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(backup, dir_fd=dfd)


def guarded_write_at(
    dfd: int,
    name: str,
    data: bytes,
    mode: int | None,
    based_on: bytes | None,
    before: Callable[[str], None] | None = None,
) -> None:
    """fsutil.atomic_write_at of `data` over `name` in the folder `dfd`, through guarded_replace:
    Changed when the file no longer holds `based_on` (nothing of `data` stays). `before(tmp)`
    runs on the written temp file just before the swap (notes copy the old file's xattrs)."""

    def swap(tmp: str) -> None:
        if before is not None:
            before(tmp)
        guarded_replace(dfd, tmp, name, based_on, data)

    atomic_write_at(dfd, name, data, mode, replace=swap)


def guarded_write(path: Path, data: bytes, mode: int | None, based_on: bytes) -> None:
    """guarded_write_at of `data` over `path`."""
    dfd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    try:
        guarded_write_at(dfd, path.name, data, mode, based_on)
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from None  # (a full disk: name it)
    finally:
        os.close(dfd)
