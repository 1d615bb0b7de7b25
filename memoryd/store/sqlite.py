"""The SQLite store (memoryd.store.protocol.Store over one file in data_dir): one writer
connection behind a lock, one read connection per thread.

WAL mode: readers never block the writer and see the last committed state. Writes that carry
data found nowhere else (memories added through the API) commit with synchronous=FULL; derived
index data (chunks of workspace files, vectors) commits with NORMAL.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import apsw

from memoryd.core import oserrors, threads
from memoryd.core.errors import StoreBusy, StoreError, StoreUnavailable
from memoryd.core.fsutil import sqlite_lock_holders
from memoryd.core.logsetup import get_logger
from memoryd.core.timeutil import iso
from memoryd.store import db
from memoryd.store.migrations import migrate
from memoryd.store.protocol import Connection, VectorIndex, one

T = TypeVar("T")

__all__ = ["SqliteStore"]


log = get_logger("memoryd.store")

# SQLite's answer when another connection holds the lock past the busy timeout (db.connect)
BUSY = (apsw.BusyError, apsw.LockedError)
SIDE_FILES = ("-wal", "-shm")
BUSY_RETRY_S = 2.0  # how often a write refused on another program's lock is tried again
WAL_RETRY_S = 30.0  # how often a checkpoint a transaction kept from finishing is tried again


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def _open_as(identity: tuple[int, int] | None) -> str | None:
    """The name the file `identity` (st_dev, st_ino), which this process has open, has now:
    Linux's /proc/self/fd shows it, "PATH (deleted)" when it has none left. None where that
    cannot be told."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            st = os.stat(f"/proc/self/fd/{fd}")  # the open file, named or not
            if (st.st_dev, st.st_ino) == identity:
                return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
    return None


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


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
        except BUSY:  # another program's lock on the file at start (a migration's write)
            self._writer.close()
            raise self._busy(writing=True) from None
        self._local = threading.local()
        # (thread, its read connection): a thread's is closed once that thread has ended
        self._readers: list[tuple[threading.Thread, apsw.Connection]] = []
        self._readers_lock = threading.Lock()
        self._closed = False
        self._identity = _identity(self.path)  # the file the writer has open
        # the WAL and its index (-shm), as SQLite made them beside it: kept open, by every
        # connection, until the last one closes
        self._sides = {s: _identity(Path(f"{self.path}{s}")) for s in SIDE_FILES}
        self._side_gone: str | None = None  # why, once one of them was removed or replaced
        self._replaced_said = False
        self._saved: Path | None = None  # where a removed file's content was copied to
        self._now_at: str | None = None  # the name the file has now (/proc), once replaced
        self.refusals = oserrors.Refusals("store")  # writes the system refuses (status)
        self._timers: dict[str, threading.Timer] = {}  # retries (_later), cancelled by close
        # since when a transaction (another program's read, most often) keeps checkpoints from
        # folding the WAL into the database, and what it is (status: checkpoint_blocked)
        self._wal_held: dict[str, Any] | None = None

    def replaced(self) -> str | None:
        """Why the file at `path` is no longer the database this store has open, or None.

        A copy moved over memoryd.db while the daemon runs (`mv snapshot.db memoryd.db`, a
        restore by hand) leaves the writer on the old file, unlinked: every write after it is
        lost at the next start, and a new reader opened the new file with the old file's WAL
        ("database disk image is malformed"). So reads that need a new connection and every
        write are refused until a restart opens the file now at the path. The same for its
        -wal and -shm files (side_gone)."""
        if _identity(self.path) != self._identity:
            self._now_at = _open_as(self._identity)  # moved, removed, or neither
            if not self._replaced_said:
                self._replaced_said = True
                self._saved = self._save_removed()
                log.error(
                    "the database file was replaced under the daemon",
                    path=str(self.path),
                    saved=str(self._saved) if self._saved else None,
                )
            if self._saved is not None and self._saved.suffix == ".recovered":
                return (
                    f"the database file {self.path} was removed while memoryd was running: "
                    f"everything it held is copied to {self._saved}. Stop memoryd, move that "
                    f"copy to {self.path} (with no {self.path.name}-wal or -shm beside it: "
                    "they were the removed file's) and start it again (a start without it "
                    "makes an empty store)"
                )
            moved = self._moved_to()
            if moved is not None:
                return (
                    f"the database file {self.path} was moved to {moved} while memoryd was "
                    f"running (a folder renamed): move it back, or point data_dir to its "
                    "folder, and restart memoryd (a start without it makes an empty store)"
                )
            old = self._saved or (self._now_at if os.path.lexists(self.path) else None)
            kept = f" (the file it replaced, with every write memoryd made, is at {old})"
            return (
                f"the database file {self.path} was replaced or removed while memoryd was "
                "running (its writes would go to the old file and be lost): restart memoryd to "
                "open the file now at that path; to go back to a copy while it runs, use "
                f"`memoryctl checkpoint restore`{kept if old else ''}"
            )
        return self._side_gone or self.side_gone()

    def _moved_to(self) -> str | None:
        """Where memoryd.db is now when it was moved away (its folder renamed), else None."""
        now = self._now_at
        if now and not now.endswith(" (deleted)") and not os.path.lexists(self.path):
            return now
        return None

    def _save_removed(self) -> Path | None:
        """When the file the writer has open has no name left (Linux's /proc says: `rm
        memoryd.db`, a cleaner, or a copy moved over it), a copy of all it holds, through the
        writer that still has it open: at `memoryd.db.recovered` when the path is empty (a
        restart would otherwise make an empty store, every memory gone), else at
        `memoryd.db.replaced` (the writes made since the copy moved over it was taken). None
        otherwise, or when no copy could be made."""
        if not (self._now_at or "").endswith(" (deleted)"):
            return None
        gone = not os.path.lexists(self.path)
        target = self.path.with_name(self.path.name + (".recovered" if gone else ".replaced"))
        try:
            with self._lock:
                db.vacuum_into(self._writer, target)
        except (apsw.Error, OSError) as exc:
            log.error("no copy of the removed database could be made", error=str(exc))
            return None
        return target

    def side_gone(self) -> str | None:
        """Why memoryd.db-wal or -shm is not the file SQLite has open any more, or None.

        Removed (a cleaner, a sync client, `rm` of "temporary" files) or replaced, the writer
        went on writing into the unlinked WAL: the memories added since existed nowhere else
        and were lost at a crash (at the next start), and a new connection made new files
        beside a database whose pages were still in the old ones. So at once the writer folds
        what the old WAL holds into memoryd.db (TRUNCATE: it is safe there), and every write
        and new reader is refused, as for a replaced file, until a restart makes them anew."""
        for side, was in self._sides.items():
            now = _identity(Path(f"{self.path}{side}"))
            if was is None:  # not there at start: SQLite makes it with the first read
                self._sides[side] = now
                continue
            if now == was:
                continue
            folded = self._fold_in()
            self._side_gone = (
                f"{self.path}{side} was removed or replaced while memoryd was running "
                f"({folded}): restart memoryd to make it anew; until then writes are refused, "
                "as they would go to a file nobody else can see"
            )
            log.error(
                "a file SQLite keeps beside the database was removed or replaced",
                path=f"{self.path}{side}",
                folded=folded,
            )
            return self._side_gone
        return None

    def _fold_in(self) -> str:
        """Checkpoint the writer's WAL (the unlinked one it still has open) into the database."""
        try:
            with self._lock:
                busy, pages, moved = (
                    int(x) for x in one(self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
                )
        except apsw.Error as exc:
            return f"what it held is folded in at the next clean stop ({exc})"
        if busy and moved < pages:
            return "what it held is folded in at the next clean stop"
        return "every write it held is in the database file"

    def _check_file(self) -> None:
        why = self.replaced()
        if why is not None:
            raise StoreUnavailable(why)

    # -- connections --------------------------------------------------------------------------

    def reader(self) -> apsw.Connection:
        """This thread's read connection (opened on first use). Those of threads that have
        ended (a reconcile_soon's, a timer's) are closed here: kept, each held two file
        descriptors and its page cache for as long as the daemon ran."""
        if self._closed:
            raise StoreError("the store is closed")
        con = getattr(self._local, "con", None)
        if con is None:
            self._check_file()
            con, _ = db.connect(self.path, writer=False)
            self._local.con = con
            with self._readers_lock:
                ended = [c for t, c in self._readers if not t.is_alive()]
                self._readers = [(t, c) for t, c in self._readers if t.is_alive()]
                self._readers.append((threading.current_thread(), con))
            for old in ended:
                old.close(True)  # force: a statement its thread left unfinished
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
        except BUSY:
            raise self._busy(writing=False) from None
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
            except BUSY:
                raise self._write_busy() from None
            finally:
                if durable:
                    con.execute("PRAGMA synchronous = NORMAL")

    def _busy(self, *, writing: bool) -> StoreBusy:
        """The error for a lock another program held past the busy timeout, naming it where
        the system tells (Linux: /proc/locks)."""
        who = "".join(sqlite_lock_holders(self.path, writer=True))
        held = f"{db.BUSY_TIMEOUT_MS / 1000:g} s"
        if not writing:  # only an exclusive lock keeps a WAL reader out (locking_mode)
            return StoreBusy(
                f"cannot read {self.path}: another program{who} holds it locked and did not "
                f"let go within {held}. Retry once it has finished (close it there)"
            )
        return StoreBusy(
            f"cannot write {self.path}: another program{who} holds its write lock (a write "
            "transaction left open in the sqlite3 shell, DB Browser, a backup or sync tool) "
            f"and did not let go within {held}; nothing was written. Retry once it has "
            "finished (commit or close it there)"
        )

    def _write_busy(self) -> StoreBusy:
        """_busy for a write: said in status (writes_refused) until the lock is free."""
        busy = self._busy(writing=True)
        self.refusals.refused(busy.message)
        self._retry_when_free()
        return busy

    def _later(self, name: str, delay: float, fn: Callable[[], None]) -> None:
        """Run `fn` once in `delay` seconds on a thread of its own, unless one named `name` is
        already waiting (close() cancels them)."""
        with self._readers_lock:
            if self._closed or name in self._timers:
                return
            timer = threading.Timer(delay, fn)
            timer.daemon = True
            timer.name = f"memoryd-store-{name}"
            self._timers[name] = timer
        try:
            threads.start(timer, f"the store's {name} retry")
        except threads.ThreadLimit:  # (logged) the next write that needs it asks again
            with self._readers_lock:
                self._timers.pop(name, None)

    def _fired(self, name: str) -> None:
        with self._readers_lock:
            self._timers.pop(name, None)

    def _retry_when_free(self) -> None:
        """Try an empty write every BUSY_RETRY_S until the lock is free: the first that works
        clears `refusals` (status), whose on_worked reconciles the workspace (the watcher's
        changes refused meanwhile are indexed), with no other write needed."""
        self._later("busy", BUSY_RETRY_S, self._try_free)

    def _try_free(self) -> None:
        self._fired("busy")
        with self._lock:
            r = self.refusals  # a write worked since the last refusal: nothing to look for
            if self._closed or r.since is None or (r.last_worked or 0) >= (r.last_refused or 0):
                return
            if self.replaced() is not None:
                return
            con = self._writer
            con.set_busy_timeout(0)  # a look, not a wait: the requests' writes wait their turn
            try:
                con.execute("BEGIN IMMEDIATE")
                con.execute("COMMIT")
                free = True
            except apsw.Error:
                _end(con, "ROLLBACK")
                free = False
            finally:
                con.set_busy_timeout(db.BUSY_TIMEOUT_MS)
        if free:
            self.refusals.worked()
        else:
            self._retry_when_free()

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
        held = self._wal_held
        return {
            "backend": self.backend,
            "ok": why is None,
            "error": why,
            "writes_refused": self.refusals.info(),
            "recovered": str(self._saved)
            if why is not None and self._saved and self._saved.suffix == ".recovered"
            else None,
            "moved_to": self._moved_to() if why is not None else None,
            "wal_bytes": self._wal_bytes(),
            "checkpoint_blocked": None
            if held is None
            else {"since": iso(held["since"]), "error": held["error"]},
        }

    def vector_index(self) -> VectorIndex | None:
        """None: the searcher keeps its vectors in memory (search/vecindex.py: VectorCache)."""
        return None

    def on_change(self, cb: Callable[[dict[str, Any]], None]) -> None:
        """No other daemon writes this file: cb is never called."""

    # -- maintenance --------------------------------------------------------------------------

    def checkpoint(self, mode: str = "RESTART") -> tuple[int, int, int]:
        """PRAGMA wal_checkpoint(mode): (busy, WAL pages, pages folded in). A RESTART or
        TRUNCATE that a transaction kept from finishing (another program's read left open: the
        WAL then grows with every write until it ends) is said in the log and in status
        (`checkpoint_blocked`), and tried again every WAL_RETRY_S until it finishes."""
        if mode not in {"PASSIVE", "FULL", "RESTART", "TRUNCATE"}:
            raise ValueError(mode)
        with self._lock:
            try:
                row = one(self._writer.execute(f"PRAGMA wal_checkpoint({mode})"))
            except db.REFUSED as exc:  # the database must grow to take the WAL's pages
                raise db.refusal(exc, self._writer, self.path) from None
        busy, pages, moved = int(row[0]), int(row[1]), int(row[2])
        if mode in ("RESTART", "TRUNCATE"):
            self._wal_blocked(bool(busy))
        return busy, pages, moved

    def _wal_blocked(self, blocked: bool) -> None:
        held = self._wal_held
        if not blocked:
            if held is not None:
                self._wal_held = None
                log.info(
                    "the WAL is folded into the database again",
                    blocked_s=round(time.time() - held["since"], 1),
                )
            return
        who = "".join(
            sqlite_lock_holders(self.path, writer=False)
            or sqlite_lock_holders(self.path, writer=True)
        )
        what = f"another program{who}" if who else "another program (or a long export)"
        error = (
            f"{self.path.name}-wal ({_mb(self._wal_bytes())}) cannot be folded into the "
            f"database: {what} holds a transaction open on it, and the WAL grows with every "
            "write until it ends (end it there: memoryd folds it in by itself)"
        )
        if held is None:
            log.warning("a checkpoint could not finish", error=error)
        self._wal_held = {"since": held["since"] if held else time.time(), "error": error}
        self._later("wal", WAL_RETRY_S, self._try_checkpoint)

    def _try_checkpoint(self) -> None:
        self._fired("wal")
        with self._lock:
            if self._closed or self._wal_held is None or self.replaced() is not None:
                return
            con = self._writer
            con.set_busy_timeout(0)  # a look: a request's write is not kept waiting
            try:
                busy, _, _ = self.checkpoint("RESTART")
                if not busy:
                    self.checkpoint("TRUNCATE")  # as the checkpoint job: cut the file too
            except Exception as exc:  # the next look tries again
                log.debug("checkpoint retry failed", error=str(exc))
                self._later("wal", WAL_RETRY_S, self._try_checkpoint)
            finally:
                con.set_busy_timeout(db.BUSY_TIMEOUT_MS)

    def _wal_bytes(self) -> int:
        try:
            return os.stat(f"{self.path}-wal").st_size
        except OSError:
            return 0

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
            except BUSY:
                raise self._write_busy() from None

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
        except BUSY:
            raise self._busy(writing=True) from None
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
                for timer in self._timers.values():
                    timer.cancel()
                self._timers.clear()
                for _, con in self._readers:
                    con.close()
                self._readers.clear()
            try:
                self._writer.execute("PRAGMA optimize")
                self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except apsw.Error:
                pass
            self._writer.close()
