"""Database files other than the live one: checkpoints and snapshots (inspect, migrate a copy)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import apsw

from memoryd.store import db
from memoryd.store.migrations import migrate
from memoryd.store.protocol import one


@dataclass(frozen=True)
class FileInfo:
    user_version: int
    tables: frozenset[str]
    quick_check: tuple[str, ...]


def describe(path: Path) -> FileInfo:
    """Schema version, table names and quick_check of a database file (read-only; raises
    apsw.Error when it is not a readable SQLite database)."""
    con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        db._load_vec(con)  # vec0 tables must be readable for quick_check
        version = int(one(con.execute("PRAGMA user_version"))[0])
        tables = frozenset(
            str(r[0]) for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        )
        check = tuple(str(r[0]) for r in con.execute("PRAGMA quick_check"))
    finally:
        con.close()
    return FileInfo(version, tables, check)


def migrated_copy(source: Path, target: Path) -> None:
    """A copy of `source` at `target` (must not exist), migrated to the current schema."""
    db.ensure_private_file(target)
    os.unlink(target)  # VACUUM INTO wants a new file; owner-only through the umask
    old = os.umask(0o077)
    try:
        con = apsw.Connection(str(source), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            con.execute("VACUUM INTO ?", (str(target),))
        finally:
            con.close()
    finally:
        os.umask(old)
    wcon, _ = db.connect(target, writer=True)
    try:
        migrate(wcon, None)
        wcon.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        wcon.close()
