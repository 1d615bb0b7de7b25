"""The one way memoryd replaces a file atomically (notes, the daily log, files `memoryd
service` writes): the new bytes go to a hidden temp file in the same folder (created with
O_EXCL | O_NOFOLLOW, so never through a planted symlink), which is fsynced and renamed over the
file; then the folder is fsynced. A failure at any step removes the temp and leaves the old file
whole. Also: the data-dir lock (one daemon, or one `store migrate`, per database), the
workspace lock (one daemon per workspace folder, whatever its data_dir), and make_dirs, the one
way memoryd creates folders: with an explicit mode, so that a umask of 000 never leaves a
folder others can write to."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import unicodedata
from collections.abc import Callable
from pathlib import Path

from memoryd.core.errors import AlreadyRunning

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def from_absolute(path: object, root: Path | None) -> object:
    """An absolute path (or one written `~/...`) to a place inside the workspace `root`, by the
    path it is configured as or the folder it resolves to, as its workspace-relative path ('.'
    for the workspace itself): a path completed by the shell or given by an agent names the same
    note as the relative one, as `reindex` and `delete --path` took it. Anything else is
    returned as given, for normalize to judge (an absolute path elsewhere is refused there)."""
    if root is None or not isinstance(path, str) or not path.startswith(("/", "~/")):
        return path
    text = os.path.normpath(os.path.expanduser(path))  # '..' folded: it leaves, or stays out
    for base in dict.fromkeys((os.path.normpath(root), os.path.realpath(root))):
        if text == base:
            return "."
        if text.startswith(base.rstrip("/") + "/"):
            return text[len(base.rstrip("/")) + 1 :]
    return path


def as_on_disk(root: Path, rel: str) -> str:
    """The workspace path `rel` as it is written on disk: each part that does not exist is
    replaced by the one entry of its folder that is the same text up to Unicode normalization
    (NFC), if there is one, so 'café.md' typed composed finds the note saved decomposed (by
    macOS, or a vault synced from it). Names are otherwise kept as given."""
    parts = rel.split("/")
    folder = root
    for i, part in enumerate(parts):
        if os.path.lexists(folder / part):
            folder = folder / part
            continue
        key = unicodedata.normalize("NFC", part)
        try:
            same = [n for n in os.listdir(folder) if unicodedata.normalize("NFC", n) == key]
        except OSError:  # the folder does not exist (yet): nor does anything under it
            break
        if len(same) != 1:
            break
        parts[i] = same[0]
        folder = folder / same[0]
    return "/".join(parts)


def is_dir(path: Path) -> bool:
    """Path.is_dir, but False for a path the system refuses to look at (a name too long:
    ENAMETOOLONG is not among the errors Path.is_dir swallows); the caller's stat then says why."""
    try:
        return path.is_dir()
    except OSError:
        return False


def within(real: str, folder: str) -> bool:
    """True when the real (resolved) path `real` is `folder` or lies under it; both resolved."""
    return real == folder or real.startswith(folder + os.sep)


PRIVATE_DIR, SHARED_DIR = 0o700, 0o755  # data (data_dir, sockets, logs); workspace folders


def make_dirs(path: Path, mode: int = PRIVATE_DIR) -> None:
    """mkdir -p with `mode` for every folder it creates (the umask can only narrow it); folders
    that exist are left as they are. NotADirectoryError when something else is in the way."""
    missing: list[Path] = []
    here = Path(path)
    while not os.path.isdir(here):
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=mode)
    if not os.path.isdir(path):  # a file (or a dangling symlink) is in the way
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(path))


def process_umask() -> int:
    """Narrow the process umask so nothing the daemon creates is writable by group or others
    (under `umask 000` a file opened without a mode would be 0666); returns the new umask."""
    old = os.umask(0o022)
    os.umask(old | 0o022)
    return old | 0o022


def write_all(fd: int, data: bytes) -> None:
    """Write every byte (os.write may write fewer than asked), then fsync the file."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def fsync_dir(fd: int) -> None:
    with contextlib.suppress(OSError):  # some file systems refuse fsync on a folder
        os.fsync(fd)


# The names a write gives the files it makes beside the one it replaces: the new text's temp
# (`tmp`, atomic_write_at) and the old file's second name until the swap is checked (`old`,
# core/swap.guarded_replace). notes/leftovers.py clears what a kill leaves of them: one pattern.
SIDE_NAME = re.compile(r"^\.(?P<name>.+)\.[0-9a-f]{8}\.(?P<kind>tmp|old)$")


def side_name(name: str, kind: str) -> str:
    """A hidden name beside `name` for a write's `kind` of file ("tmp" or "old": SIDE_NAME)."""
    return f".{name}.{secrets.token_hex(4)}.{kind}"


def atomic_write_at(
    dfd: int,
    name: str,
    data: bytes,
    mode: int | None = None,
    *,
    before_replace: Callable[[], None] | None = None,
    replace: Callable[[str], None] | None = None,
) -> None:
    """Replace `name` in the folder open as `dfd` with `data` (names relative to `dfd`: no path
    is looked up again). `mode`: the new file's permission bits (None: 0o666 less the umask).
    `before_replace` runs after the temp is written and fsynced, just before the rename; if it
    raises, nothing is replaced. `replace(tmp)`: makes the temp the file instead of a plain
    rename (core.swap.guarded_replace compares and swaps); if it raises, the temp is removed."""
    tmp = side_name(name, "tmp")
    fd = os.open(tmp, _FLAGS, 0o666 if mode is None else mode, dir_fd=dfd)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            write_all(fd, data)
        finally:
            os.close(fd)
        if before_replace is not None:
            before_replace()
        if replace is None:
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        else:
            replace(tmp)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dfd)
        raise
    fsync_dir(dfd)


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """atomic_write_at for a path: the folder is opened once and the rest is relative to it."""
    dfd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        atomic_write_at(dfd, path.name, data, mode)
    except OSError as exc:
        if exc.filename is not None:
            raise
        # a write on a descriptor (a full disk) names no file: name it for the message
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    finally:
        os.close(dfd)


def acquire_lock(path: Path) -> int:
    """An flock on a file beside the database: a second daemon on the same data refuses."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = ""
        with contextlib.suppress(OSError, ValueError):
            holder = f" (pid {int(os.pread(fd, 32, 0).decode().strip())})"
        os.close(fd)
        raise AlreadyRunning(
            f"another memoryd{holder} is already using {path.parent}; stop it first"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def hold_database(db: Path) -> int | None:
    """An flock on the SQLite database file itself, held while the daemon runs. The lock file
    beside it (acquire_lock) keeps a second daemon off this data_dir; this one keeps it off the
    same database reached by another name: a hard link of memoryd.db in another data_dir is
    the same file, and SQLite keeps its -wal and -shm beside the name it opened, so two daemons
    through two names would each keep a WAL of their own for one database and corrupt it.
    flock is per open file, apart from SQLite's own POSIX locks (and never taken by SQLite), so
    it neither blocks nor is released by them. None where the file system keeps no flocks. Not
    for network file systems, where flock can be a POSIX lock in disguise (the caller checks:
    SQLite's WAL is not safe there anyway)."""
    fd = os.open(db, os.O_RDWR | _CLOEXEC)
    got = _flock(fd, fcntl.LOCK_EX)
    if got:
        return fd
    if got is None:
        os.close(fd)
        return None
    holder, _ = _lock_holder(os.fstat(fd), ("WRITE",))
    links = os.fstat(fd).st_nlink
    os.close(fd)
    if links > 1:
        why = f"the file has {links} names (hard links); give this daemon a copy of its own"
    else:
        why = "stop it first"
    raise AlreadyRunning(f"another memoryd{holder} is already using the database {db}: {why}")


def lock_workspace(folder: Path, *, why: str) -> list[int]:
    """flocks that keep one daemon per workspace, taken without making any file: exclusive on
    the folder itself, shared on every folder above its real path. A second daemon on the same
    folder (through any path to it), on a folder inside it or on one holding it gets
    AlreadyRunning naming the first (its pid and command line where the system tells: Linux's
    /proc/locks). Nothing held (an empty list) when the folder is missing or its file system
    keeps no such locks (some network file systems)."""
    fds: list[int] = []
    try:
        fd = _open_folder(folder)
        if fd is None:
            return []
        fds.append(fd)
        got = _flock(fd, fcntl.LOCK_EX)
        if got is None:
            os.close(fds.pop())
            return []
        if not got:
            holder, kind = _lock_holder(os.fstat(fd), ("WRITE", "READ"))
            where = f"a workspace inside {folder}" if kind == "READ" else f"the workspace {folder}"
            raise AlreadyRunning(f"another memoryd{holder} is already serving {where}; {why}")
        for parent in Path(os.path.realpath(folder)).parents:
            pfd = _open_folder(parent)
            if pfd is None:
                continue
            fds.append(pfd)
            if _flock(pfd, fcntl.LOCK_SH) is False:
                holder, _ = _lock_holder(os.fstat(pfd), ("WRITE",))
                raise AlreadyRunning(
                    f"another memoryd{holder} is already serving the workspace {parent}, "
                    f"which holds {folder}; {why}"
                )
        return fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def _open_folder(folder: Path) -> int | None:
    try:
        return os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    except OSError:  # missing, or not ours to read: nothing to hold there
        return None


def _flock(fd: int, how: int) -> bool | None:
    """True: held; False: another holds it; None: this file system keeps no flocks."""
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True


def _lock_holder(
    st: os.stat_result, kinds: tuple[str, ...], locks: str = "/proc/locks"
) -> tuple[str, str]:
    """(' (pid N: its command line)', 'WRITE' or 'READ') of a process holding an flock of one
    of `kinds` (in that order of preference) on the file `st` is, from Linux's /proc/locks;
    ('', '') where that cannot be told."""
    held = _held_locks(st, "FLOCK", locks)
    for kind in kinds:
        for pid, mode, _start in held:
            if mode == kind:
                return _who(pid), kind
    return "", ""


def _held_locks(st: os.stat_result, lock: str, locks: str) -> list[tuple[str, str, str]]:
    """(pid, 'WRITE' or 'READ', first byte) of each lock of type `lock` (FLOCK, POSIX) held on
    the file `st` is, from Linux's /proc/locks ([] where it cannot be read)."""
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open(locks, encoding="ascii", errors="replace") as f:
            rows = [line.split() for line in f]
    except OSError:
        return []
    # "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF" (a waiting lock has "->" after "1:")
    return [
        (row[4], row[3], row[6])
        for row in rows
        if "->" not in row and len(row) >= 7 and row[1] == lock and row[5] == dev
    ]


def _who(pid: str) -> str:
    """' (pid N: its command line)', or ' (pid N)' when /proc does not say."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmd = ""
    return f" (pid {pid}: {cmd})" if cmd else f" (pid {pid})"


def sqlite_lock_holders(db: Path, *, writer: bool, locks: str = "/proc/locks") -> list[str]:
    """' (pid N: its command line)' of each other process holding, on the SQLite database `db`
    in WAL mode, its write lock (`writer`) or a read lock on a snapshot (what keeps a
    checkpoint from finishing): SQLite takes them as POSIX locks on bytes of `db`-shm, the
    write lock at byte 120 and the readers' at 123..127 (sqlite.org/walformat.html). [] where
    that cannot be told (not Linux, no -shm)."""
    try:
        st = os.stat(f"{db}-shm")
    except OSError:
        return []
    wanted = {"120"} if writer else {"124", "125", "126", "127"}  # 123: reads the file alone
    me = str(os.getpid())
    found = {
        pid
        for pid, _mode, start in _held_locks(st, "POSIX", locks)
        if start in wanted and pid != me
    }
    return [_who(pid) for pid in sorted(found)]


def unused_folder(parent: Path, stamp: str, rel: str) -> Path:
    """parent/stamp, else parent/stamp-2, -3 ...: the first where `rel` is free (the trash has a
    folder per second: a path deleted twice within one, or after the wall clock stepped back,
    never replaces the first copy)."""
    target, n = parent / stamp, 1
    while os.path.lexists(target / rel):
        n += 1
        target = parent / f"{stamp}-{n}"
    return target


def resolved(path: Path) -> Path:
    """`path.resolve()` that refuses a symlink loop on every Python: OSError (ELOOP). Python
    3.13's non-strict resolve returns a looping path as it is, where 3.11 raised RuntimeError;
    a missing part is no error (as in non-strict resolve)."""
    try:
        return Path(os.path.realpath(path, strict=True))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise
    return path.resolve()
