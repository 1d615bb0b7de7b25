"""The SQLite store (memoryd.store.protocol.Store over one file in data_dir): one writer
connection behind a lock, one read connection per thread.

WAL mode: readers never block the writer and see the last committed state. Writes that carry
data found nowhere else (memories added through the API) commit with synchronous=FULL; derived
index data (chunks of workspace files, vectors) commits with NORMAL.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import apsw

from memoryd.core import oserrors
from memoryd.core.errors import StoreError, StoreUnavailable
from memoryd.core.logsetup import get_logger
from memoryd.store import db
from memoryd.store.migrations import migrate
from memoryd.store.protocol import Connection, VectorIndex, one

T = TypeVar("T")

__all__ = ["SqliteStore"]


log = get_logger("memoryd.store")


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def _end(con: apsw.Connection, how: str) -> None:
    """End the open transaction, if there still is one (a failed COMMIT may have ended it)."""
    if not con.in_transaction:
        return
    try:
        con.execute(how)
    except apsw.Error:
        if con.in_transaction:
            con.execute("ROLLBACK")


def _fts_secure_delete(con: apsw.Connection) -> None:
    """FTS5 keeps deleted tokens in its segments until a merge unless 'secure-delete' is set.
    The setting lives in the FTS table, so a migration that recreates the table drops it:
    checked at every open, written only when missing."""
    rows = con.execute("SELECT v FROM entries_fts_config WHERE k = 'secure-delete'").fetchall()
    if not rows or not rows[0][0]:
        with con:
            con.execute("INSERT INTO entries_fts(entries_fts, rank) VALUES ('secure-delete', 1)")


class SqliteStore:
    """Owns the database file. Thread-safe: call `read()` / `write()` from any thread.
    Implements memoryd.store.protocol.Store."""

    backend = "sqlite"
    shared = False  # one daemon per file
    file_backed = True

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        db.ensure_private_file(self.path)
        self._lock = threading.RLock()
        self._writer, self.vec_enabled = db.connect(self.path, writer=True)
        try:
            # Deleted content is overwritten in the file, not left in free space: forget means
            # forget.
            self._writer.execute("PRAGMA secure_delete = ON")
            migrate(self._writer, self.path)
            _fts_secure_delete(self._writer)
        except db.REFUSED as exc:  # a full disk at start: said as every refused write is
            raise db.refusal(exc, self._writer, self.path) from None
        self._local = threading.local()
        self._readers: list[apsw.Connection] = []
        self._readers_lock = threading.Lock()
        self._closed = False
        self._identity = _identity(self.path)  # the file the writer has open
        self._replaced_said = False
        self.refusals = oserrors.Refusals("store")  # writes the system refuses (status)

    def replaced(self) -> str | None:
        """Why the file at `path` is no longer the database this store has open, or None.

        A copy moved over memoryd.db while the daemon runs (`mv snapshot.db memoryd.db`, a
        restore by hand) leaves the writer on the old file, unlinked: every write after it is
        lost at the next start, and a new reader opened the new file with the old file's WAL
        ("database disk image is malformed"). So reads that need a new connection and every
        write are refused until a restart opens the file now at the path."""
        if _identity(self.path) == self._identity:
            return None
        why = (
            f"the database file {self.path} was replaced or removed while memoryd was running "
            "(its writes would go to the old file and be lost): restart memoryd to open the "
            "file now at that path; to go back to a copy while it runs, use `memoryctl "
            "checkpoint restore`"
        )
        if not self._replaced_said:
            self._replaced_said = True
            log.error("the database file was replaced under the daemon", path=str(self.path))
        return why

    def _check_file(self) -> None:
        why = self.replaced()
        if why is not None:
            raise StoreUnavailable(why)

    # -- connections --------------------------------------------------------------------------

    def reader(self) -> apsw.Connection:
        """This thread's read connection (opened on first use)."""
        if self._closed:
            raise StoreError("the store is closed")
        con = getattr(self._local, "con", None)
        if con is None:
            self._check_file()
            con, _ = db.connect(self.path, writer=False)
            self._local.con = con
            with self._readers_lock:
                self._readers.append(con)
        return con

    def read(
        self,
        fn: Callable[[Connection], T],
        *,
        scope: str | None = None,
        export: bool = False,
        snapshot: str | None = None,
    ) -> T:
        """Run fn on this thread's reader inside one read transaction (a consistent snapshot).
        `scope`, `export` and `snapshot` are accepted for the Store interface: the file holds
        one workspace, and each reader's snapshot is its own."""
        con = self.reader()
        con.execute("BEGIN")
        try:
            return fn(con)
        except db.REFUSED as exc:
            raise db.refusal(exc, con, self.path) from None
        finally:
            _end(con, "COMMIT")

    @contextmanager
    def write(
        self, *, durable: bool = False, scope: str | None = None
    ) -> Iterator[apsw.Connection]:
        """One write transaction (BEGIN IMMEDIATE) on the writer connection, serialised by a lock.

        durable=True commits with synchronous=FULL: for data that exists nowhere else.
        `scope` is accepted for the Store interface: the file holds one workspace.
        """
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            self._check_file()
            con = self._writer
            if durable:
                con.execute("PRAGMA synchronous = FULL")
            try:
                con.execute("BEGIN IMMEDIATE")
                try:
                    yield con
                except BaseException:
                    _end(con, "ROLLBACK")
                    raise
                try:
                    self._commit(con)
                except BaseException:
                    # COMMIT can fail (disk full, I/O error) and leave the transaction open:
                    # roll it back, or every later write fails until a restart.
                    _end(con, "ROLLBACK")
                    raise
                self.refusals.worked()
            except db.REFUSED as exc:
                err = db.refusal(exc, con, self.path)
                self.refusals.refused(err.message)
                raise err from None
            finally:
                if durable:
                    con.execute("PRAGMA synchronous = NORMAL")

    def _commit(self, con: apsw.Connection) -> None:
        """COMMIT (a method so tests can inject a failing commit)."""
        con.execute("COMMIT")

    def run_write(
        self, fn: Callable[[Connection], T], *, durable: bool = False, scope: str | None = None
    ) -> T:
        with self.write(durable=durable) as con:
            return fn(con)

    @contextmanager
    def exclusive(self, name: str) -> Iterator[bool]:
        """Whether this daemon runs the once-per-database job `name`: always, with one daemon
        per SQLite file (PgStore takes an advisory lock)."""
        yield True

    def info(self) -> dict[str, Any]:
        """The `store` section of status (PgStore's says more: server, pool, listener)."""
        why = self.replaced()
        return {
            "backend": self.backend,
            "ok": why is None,
            "error": why,
            "writes_refused": self.refusals.info(),
        }

    def vector_index(self) -> VectorIndex | None:
        """None: the searcher keeps its vectors in memory (search/vecindex.py: VectorCache)."""
        return None

    def on_change(self, cb: Callable[[dict[str, Any]], None]) -> None:
        """No other daemon writes this file: cb is never called."""

    # -- maintenance --------------------------------------------------------------------------

    def checkpoint(self, mode: str = "RESTART") -> tuple[int, int, int]:
        if mode not in {"PASSIVE", "FULL", "RESTART", "TRUNCATE"}:
            raise ValueError(mode)
        with self._lock:
            try:
                row = one(self._writer.execute(f"PRAGMA wal_checkpoint({mode})"))
            except db.REFUSED as exc:  # the database must grow to take the WAL's pages
                raise db.refusal(exc, self._writer, self.path) from None
        return int(row[0]), int(row[1]), int(row[2])

    def quick_check(self) -> list[str]:
        """[] when the database is sound, else SQLite's complaints."""
        with self._lock:
            rows = [str(r[0]) for r in self._writer.execute("PRAGMA quick_check")]
        return [] if rows == ["ok"] else rows

    def optimize(self) -> None:
        with self._lock:
            try:
                self._writer.execute("INSERT INTO entries_fts(entries_fts) VALUES ('optimize')")
                self._writer.execute("PRAGMA optimize")
            except db.REFUSED as exc:
                raise db.refusal(exc, self._writer, self.path) from None

    def backup_to(self, target: Path) -> None:
        """Online backup (VACUUM INTO): a consistent copy while the daemon runs, all or nothing
        (db.vacuum_into)."""
        try:
            con = apsw.Connection(str(self.path))  # its own connection: readers are query_only
            try:
                con.set_busy_timeout(db.BUSY_TIMEOUT_MS)
                db.vacuum_into(con, target)
            finally:
                con.close()
        except db.REFUSED as exc:
            raise db.refusal(exc, None, target) from None
        except OSError as exc:  # the folder, the rename
            raise oserrors.refused(exc, target) from None

    def restore_from(self, source: Path) -> None:
        """Replace the whole database with `source` through SQLite's backup API, under the
        writer lock (readers finish on their snapshot; writes wait). The caller checks that
        `source` is a memoryd database of the current schema (memoryd.memory.checkpoints)."""
        src = apsw.Connection(str(source), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            with self._lock, self._writer.backup("main", src, "main") as backup:
                while not backup.done:
                    backup.step(-1)
        except db.REFUSED as exc:
            raise db.refusal(exc, self._writer, self.path) from None
        finally:
            src.close()

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total

    def close(self) -> None:
        """Checkpoint, optimize and close every connection. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with self._readers_lock:
                for con in self._readers:
                    con.close()
                self._readers.clear()
            try:
                self._writer.execute("PRAGMA optimize")
                self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except apsw.Error:
                pass
            self._writer.close()
