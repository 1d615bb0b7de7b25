"""Opening SQLite connections: apsw (loads extensions on every platform), sqlite-vec, pragmas.

The stdlib sqlite3 module cannot load extensions on many Python builds (macOS system Pythons,
some pyenv builds); apsw bundles a current SQLite with FTS5 and loads sqlite-vec everywhere.

Every connection registers the FTS5 tokenizer `cjk` (store/tokenizer.py) that entries_fts uses
since migration m004: connect() is the one place memoryd opens its database. A connection opened
any other way fails on entries_fts (and on any write to entries, through the triggers) with
"no such tokenizer: cjk" and changes nothing.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import apsw

from memoryd.core import oserrors
from memoryd.core.errors import MemorydError, StoreError
from memoryd.core.fsutil import PRIVATE_DIR, make_dirs
from memoryd.core.logsetup import get_logger
from memoryd.store import tokenizer

BUSY_TIMEOUT_MS = 5000
IN_BATCH = 500  # values bound in one `IN (...)`: well under SQLite's parameter limit


def in_batches(values: Sequence[Any]) -> Iterator[tuple[list[Any], str]]:
    """`values` in slices of IN_BATCH, each with its `?,?,...` placeholders."""
    for start in range(0, len(values), IN_BATCH):
        part = list(values[start : start + IN_BATCH])
        yield part, ",".join("?" * len(part))


def _load_vec(con: apsw.Connection) -> bool:
    try:
        import sqlite_vec
    except ImportError:
        return False
    con.enable_load_extension(True)
    try:
        con.load_extension(sqlite_vec.loadable_path())
    except apsw.Error:
        return False
    finally:
        con.enable_load_extension(False)
    return True


def ensure_private_file(path: Path) -> None:
    """Create the database file 0600 before SQLite does (no SQLite handle is open yet)."""
    make_dirs(path.parent, PRIVATE_DIR)
    if not path.exists():
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
    else:
        os.chmod(path, 0o600)


DB_SUFFIXES = ("", "-journal", "-wal", "-shm")  # a database file and what SQLite keeps beside it


def remove_db_files(path: Path) -> None:
    """Remove a database file and the journal, WAL and shared-memory files beside it."""
    for suffix in DB_SUFFIXES:
        Path(str(path) + suffix).unlink(missing_ok=True)


def vacuum_into(con: apsw.Connection, target: Path) -> None:
    """A consistent copy of `con`'s database at `target` (VACUUM INTO), owner-only, all or
    nothing: written as `target.tmp` and renamed, so `target` exists only complete. A failed or
    interrupted copy (a full disk) leaves nothing behind: neither the temp file nor the journal
    SQLite made beside it. Every copy memoryd makes of a live database goes through here:
    checkpoints, snapshots, the backup before a migration."""
    make_dirs(target.parent, PRIVATE_DIR)
    tmp = target.with_name(target.name + ".tmp")
    remove_db_files(tmp)  # VACUUM INTO wants a new file
    old = os.umask(0o077)  # the copy holds every memory
    try:
        con.execute("VACUUM INTO ?", (str(tmp),))
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except BaseException:
        remove_db_files(tmp)
        raise
    finally:
        os.umask(old)


def copy_before_upgrade(con: apsw.Connection, backup: Path, db_path: Path) -> None:
    """vacuum_into for the copy an upgrade makes first: nothing is migrated without it, and a
    copy the disk has no room for says the database is unchanged and what the copy needs."""
    try:
        vacuum_into(con, backup)
    except (*REFUSED, OSError) as exc:
        err = (
            refusal(exc, con, backup)
            if isinstance(exc, apsw.Error)
            else oserrors.refused(exc, backup)
        )
        raise type(err)(
            f"the database was not upgraded (it is unchanged): the copy kept before an "
            f"upgrade needs about {db_path.stat().st_size} bytes. {err.message}"
        ) from None


def damaged(path: Path, exc: BaseException) -> str:
    """What to do about a database file SQLite cannot read: where the newest copy is."""
    copies = [
        p
        for folder in ("snapshots", "checkpoints")
        for p in (path.parent / folder).glob("*")
        if p.is_file() and not p.name.endswith(("-wal", "-shm", ".partial"))
    ]
    newest = max(copies, key=lambda p: p.stat().st_mtime, default=None)
    fix = (
        f"stop memoryd, move it (and any {path.name}-wal) away and copy the newest copy, "
        f"{newest}, in its place"
        if newest is not None
        else "stop memoryd and move it (and any -wal file) away: a new index is built from the "
        "workspace (memories come back only from an export: memoryctl import)"
    )
    return f"{path} is not a readable SQLite database ({exc}): damaged, or not memoryd's; {fix}"


# SQLite's errors of a write the system refused: the errno is the connection's system_errno
REFUSED = (apsw.FullError, apsw.IOError, apsw.ReadOnlyError, apsw.CantOpenError)


def refusal(exc: apsw.Error, con: apsw.Connection | None, where: Path) -> MemorydError:
    """The client's error for a write SQLite could not make (oserrors: DiskFull when there is
    no room, else StoreError), naming the file and what the system said."""
    code = con.system_errno if con is not None else 0
    if not code and isinstance(exc, apsw.FullError):
        code = errno.ENOSPC  # (or the file's max_page_count: the same answer)
    detail = f"{os.strerror(code)} (SQLite: {exc})" if code else f"SQLite: {exc}"
    return oserrors.from_code(code or None, where, detail)


def _why_not(path: Path | str, exc: apsw.Error) -> str:
    """Why the file cannot be opened, as the system says it when it is opened (SQLite's
    "unable to open database file" does not say): too many open files, a permission."""
    try:
        os.close(os.open(path, os.O_RDWR))
    except OSError as why:
        return f"cannot open database {path}: {why.strerror}; {oserrors.what_to_do(why.errno)}"
    return f"cannot open database {path}: {exc}"


def connect(path: Path | str, *, writer: bool) -> tuple[apsw.Connection, bool]:
    """Open one connection; returns (connection, whether sqlite-vec loaded)."""
    try:
        con = apsw.Connection(str(path))
    except apsw.Error as exc:
        raise StoreError(_why_not(path, exc)) from exc
    con.set_busy_timeout(BUSY_TIMEOUT_MS)
    try:  # reads the header and the schema: a damaged file says so here, not as a missing FTS5
        con.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except (apsw.NotADBError, apsw.CorruptError) as exc:
        con.close()
        raise StoreError(damaged(Path(path), exc)) from exc
    except REFUSED as exc:  # a WAL file's index (-shm) needs room even to read: a full disk
        err = refusal(exc, con, Path(path))
        con.close()
        raise err from None
    tokenizer.register(con)
    vec = _load_vec(con)
    con.execute("PRAGMA foreign_keys = ON")
    con.execute("PRAGMA temp_store = MEMORY")
    if writer:
        mode = con.execute("PRAGMA journal_mode = WAL").fetchall()[0][0]
        if str(mode).lower() != "wal" and str(path) != ":memory:":
            raise StoreError(f"cannot switch {path} to WAL mode (got {mode})")
        con.execute("PRAGMA synchronous = NORMAL")
        con.execute("PRAGMA journal_size_limit = 67108864")
        con.execute("PRAGMA wal_autocheckpoint = 1000")
    else:
        con.execute("PRAGMA query_only = ON")
        # A reader's page cache (SQLite's default is 2 MB a connection). Each thread that reads
        # opens its own reader, lazily: at 100K chunks a daemon under load had 7 readers at minute 1
        # and more as its pools' threads came, each filling its 2 MB within a minute, so this was a
        # slow climb of RSS after start-up (issue 23.2). The pages are mostly read from the OS's
        # file cache anyway: 512 KB missed 4x as often as 2 MB on the keyword pool's queries (135K
        # against 33K misses over 300) at no measurable cost in time (p95 212 against 223 ms,
        # interleaved, load 9-10), and as rarely as 1 MB (BENCHMARKS.md, branch soak3). The writer
        # keeps the default.
        con.execute("PRAGMA cache_size = -512")
    return con, vec


def backup_path(db_path: Path, version: int) -> Path:
    """The copy of the store made before its upgrade to schema `version` (kept until deleted):
    `memoryd.db.pre-v12.bak` holds the store as schema 11's memoryd left it."""
    return db_path.with_name(f"{db_path.name}.pre-v{version}.bak")


def too_new(current: int, known: int, db_path: Path | None) -> str:
    """Why a store a newer memoryd upgraded cannot be opened, and the ways on: that memoryd, or
    back to the copy its upgrade made of the store this one knows, schema `known`
    (docs/service.md)."""
    why = (
        f"database schema version {current} is newer than this memoryd knows ({known}): "
        "a newer memoryd upgraded it; run that version (upgrade memoryd)"
    )
    if db_path is None:
        return why
    copy = backup_path(db_path, known + 1)
    if not copy.is_file():
        return f"{why}, or use another data_dir"
    return (
        f"{why}, or go back to the store as it was before that upgrade, {copy}: with memoryd "
        f"stopped, move {db_path.name} (and any {db_path.name}-wal) away and copy that file to "
        f"{db_path} (memories added since are only in the daily log; docs/service.md#upgrading)"
    )


def log_applied(current: int, applied: list[str], **context: object) -> None:
    """One line for a run of migrations, on both backends: the versions and every step (a
    line per step met the log's repeat limit: a new store's log named m001..m005 only)."""
    if applied:
        get_logger("memoryd.store").info(
            "schema migrated",
            from_version=current,
            to_version=current + len(applied),
            steps=applied,
            **context,
        )
