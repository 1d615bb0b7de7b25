"""The PostgreSQL store: the same interface as the SQLite `Store`, over a psycopg_pool pool.

Several daemons, on several machines, share one database (docs/team.md). Each connection of the
pool is set up for this daemon: its workspace id (`memoryd.workspace`, which the views
`documents` and `entries` read), a statement timeout, and pgvector's types.

If the server goes away, a read or write fails fast with `StoreUnavailable` (the pool waits at
most `connect_timeout_s` for a connection) and nothing is half-written: every write is one
transaction. The pool reconnects by itself when the server is back.

Other daemons' changes: a trigger on the tables (schema.py) notifies the channel `memoryd` at
each commit that changes memories, chunks or trigger phrases. `on_change(cb)` starts a listener
thread on a dedicated connection (outside the pool) that calls the callbacks with the
notification's payload; after an outage it reconnects by itself and calls them with
{"reason": "reconnected"}, since notifications sent meanwhile were lost.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import psycopg_pool

from memoryd.core import oserrors, threads
from memoryd.core.errors import DiskFull, Refused, StoreBusy, StoreError, StoreUnavailable
from memoryd.core.logsetup import get_logger
from memoryd.store.pg import claim, fts, locks, login, notes, pool, schema, session  # noqa: F401
from memoryd.store.pg.conn import (
    REFUSED,
    PgConnection,
    commit,
    connection_lost,
    first_line,
    known_broken,
    lock_key,
    refused,
    rollback,
    unavailable,
)
from memoryd.store.pg.sqlfuncs import NOTIFY_CHANNEL
from memoryd.store.pg.vectors import SESSION_EF, PgVectorIndex
from memoryd.store.pg.wake import Waker
from memoryd.store.protocol import Connection, VectorIndex, one

# notes and pool imported though only writes and searches use them: a daemon imports all its code
# at start, so a `pip install -U` under it is not half-read (docs/service.md#upgrading)
T = TypeVar("T")
# pg_export_snapshot()'s names (hex, hex, decimal): the only text `read` puts in its SQL
_CONN_OK = psycopg.pq.ConnStatus.OK
_SNAPSHOT_NAME = re.compile(r"[0-9A-F]{8}-[0-9A-F]{8}-[0-9]{1,10}")
log = get_logger("memoryd.store")

__all__ = ["PgSettings", "PgStore"]

DOWN_WAIT_S = 0.5  # how long a request waits for a connection while the server is down
LISTEN_POLL_S = 0.5  # the listener's longest wait before it looks whether to probe (close wakes it)
LISTEN_PROBE_S = 15.0  # a quiet listener connection is probed this often
LISTEN_RETRY_S = 0.5  # first wait before the listener reconnects (doubling, up to the max)
LISTEN_RETRY_MAX_S = 10.0


@dataclass(frozen=True)
class PgSettings:
    """What PgStore needs from the config (memoryd.core.config.StoreConfig and the workspace id)."""

    conninfo: str
    workspace_id: str
    workspace_label: str
    pool_min: int = 1
    pool_max: int = 8
    statement_timeout_ms: int = 30000
    connect_timeout_s: float = 5.0
    # the vector pool from the daemon's own copy of the vectors (search/sharedvec.py), not
    # from the server's HNSW index (store.vector_cache; off by default: docs/team.md)
    vector_cache: bool = False
    # hold this workspace id for the store's life (`memoryd run`): a second daemon with the
    # same id is refused (pg/claim.py)
    claim: bool = False
    # store.password_file, read at each connection (pg/login.py); "" for none
    password_file: str = ""


class PgStore:
    """Thread-safe: call `read()` / `write()` from any thread."""

    backend = "postgres"
    vec_enabled = True
    shared = True  # several daemons, one database
    file_backed = False

    def __init__(self, settings: PgSettings) -> None:
        self.settings = settings
        self.path = Path("postgresql")  # for logs; there is no file
        self._lock = threading.RLock()  # one writer per daemon, as with SQLite
        self._closed = False
        # ends reads' transactions after their answer (_end_later)
        self._ender: ThreadPoolExecutor | None = None
        self._ender_lock = threading.Lock()
        self._size: tuple[float, int] = (0.0, 0)
        self._callbacks: list[Callable[[dict[str, Any]], None]] = []
        self._listener: threading.Thread | None = None
        self._stop = threading.Event()
        self._waker: Waker | None = None  # ends the listener's wait at close (pg/wake.py)
        self.listening = False  # the listener's connection is up (status)
        self.last_error: str | None = None  # the last "server unreachable" seen (status)
        self.down_since: float | None = None  # set while the server does not answer
        self.refusals = oserrors.Refusals("store")  # the server's disk full (status)
        # writes refused on another session's lock: looks until it is gone (pg/locks.py)
        self._lock_watch = locks.Watch(self._first, lambda: self._closed, self.refusals)
        # per read scope (this workspace, "all"): what fts.py remembers between searches, and
        # what connmemo.PerVersion keeps under a read's snapshot (the scope is its owner)
        self._scopes: dict[str | None, _Scope] = {None: _Scope(), "all": _Scope()}
        # the connection that holds this workspace's lock (settings.claim), until the listener
        # listens on it
        self._holder: psycopg.Connection[Any] | None = None
        self._newer_said = False  # the log said a newer memoryd upgraded the schema
        self.login = login.Login(settings.password_file)  # its password, the last refusal
        try:
            con = self._connect()
        except psycopg.OperationalError as exc:
            raise StoreError(f"cannot open the PostgreSQL store: {first_line(exc)}") from exc
        try:
            session.hold_open(con, settings.workspace_id)
            schema.migrate(con)
            if settings.claim and not claim.take(con, settings.workspace_id):
                raise claim.refuse(con, settings.workspace_id)
            now = time.time()
            con.execute(
                "INSERT INTO workspaces(id, label, first_seen, last_seen)"
                " VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (id) DO UPDATE SET label = excluded.label,"
                " last_seen = excluded.last_seen",
                [settings.workspace_id, settings.workspace_label, now, now],
            )
        except psycopg.OperationalError as exc:
            con.close()
            raise StoreError(f"cannot open the PostgreSQL store: {first_line(exc)}") from exc
        except BaseException:
            con.close()
            raise
        if settings.claim:
            self._holder = con
        else:
            con.close()
        self.pool: psycopg_pool.ConnectionPool[Any] = psycopg_pool.ConnectionPool(
            settings.conninfo,
            min_size=settings.pool_min,
            max_size=settings.pool_max,
            connection_class=login.Connection,
            kwargs={"connect_timeout": _timeout(settings), **self.login.kwargs()},
            configure=self._configure,
            timeout=settings.connect_timeout_s,
            reconnect_timeout=0,  # keep trying forever in the background
            # no round trip when a connection is lent: the first statement of each use checks
            # it (`_first`), and a connection the server dropped is replaced there
            check=known_broken,
            open=False,
            name="memoryd",
        )
        self.pool.open(wait=False)

    def _connect(self) -> psycopg.Connection[Any]:
        """A connection outside the pool (autocommit): the first one and the listener's."""
        return self.login.connect(self.settings.conninfo, _timeout(self.settings))

    def _configure(self, con: psycopg.Connection[Any]) -> None:
        session.configure(con, self.settings.workspace_id, self.settings.statement_timeout_ms)

    # -- connections --------------------------------------------------------------------------

    @contextmanager
    def _connection(
        self, kept: Callable[[], bool] | None = None
    ) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection, given back when the block ends, unless `kept()` says it was
        handed on (`_end_later`)."""
        if self._closed:
            raise StoreError("the store is closed")
        # While the server is known to be down, wait only briefly for a connection: a search
        # fails fast rather than waiting connect_timeout_s each time. One attempt is made each
        # time (the pool grows again), so the first request after the server is back works.
        timeout = self.settings.connect_timeout_s
        if self.down_since is not None:
            timeout = min(timeout, DOWN_WAIT_S)
        try:
            con = self.pool.getconn(timeout=timeout)
            try:
                yield con
            except psycopg.errors.LockNotAvailable as exc:  # another session's lock (55P03)
                raise locks.busy(con, exc) from None
            finally:
                if kept is None or not kept():
                    self.pool.putconn(con)
        except REFUSED as exc:  # a full disk, a DBA's limit on a transaction
            raise refused(exc) from None
        except psycopg.errors.QueryCanceled as exc:
            raise StoreError(
                f"a statement ran longer than store.statement_timeout_ms "
                f"({self.settings.statement_timeout_ms} ms) and was cancelled"
            ) from exc
        except (psycopg_pool.PoolTimeout, psycopg.OperationalError, psycopg.InterfaceError) as exc:
            if not connection_lost(exc):  # a deadlock, a serialization failure: not an outage
                raise StoreError(f"the PostgreSQL server refused: {first_line(exc)}") from exc
            if isinstance(exc, psycopg_pool.PoolTimeout) and self._pool_busy():
                raise StoreUnavailable(
                    f"all {self.settings.pool_max} connections to the PostgreSQL server were "
                    f"busy for {timeout:g} s (store.pool_size); nothing was written, try again"
                ) from None
            self.last_error = first_line(exc)
            if self.down_since is None:
                self.down_since = time.time()
                log.error("PostgreSQL server unreachable", error=self.last_error)
            raise unavailable(exc, self.login.refused) from None
        # (a connection the server dropped, left for another one by `_first`, is no sign that
        # the server is back: the outage's end was said a second into it, then its start again)
        if self.down_since is not None and not con.closed and con.pgconn.status == _CONN_OK:
            self._back()

    def _back(self) -> None:
        """The server answers again: said once, by whichever of a request and the change
        listener sees it first (the listener said nothing, so a request later did not either)."""
        since, self.down_since = self.down_since, None
        if since is not None:
            log.info("PostgreSQL server reachable again", down_s=round(time.time() - since, 1))

    @contextmanager
    def _first(
        self, sql: str, params: list[Any] | None = None, kept: Callable[[], bool] | None = None
    ) -> Iterator[tuple[psycopg.Connection[Any], psycopg.Cursor[Any]]]:
        """A pooled connection and the cursor of its first statement. The pool lends a
        connection without asking the server first (psycopg_pool's check_connection is a round
        trip of its own, one a read: three a hybrid search); a connection the server dropped
        meanwhile (a restart, an idle timeout) fails this statement, which then runs on another
        one (the pool replaces the dead one), so a request after the server is back works."""
        for attempt in range(self.settings.pool_max + 1):
            with self._connection(kept) as raw:
                try:
                    cur = raw.execute(sql, params)
                except psycopg.OperationalError:
                    dead = raw.closed or raw.pgconn.status != psycopg.pq.ConnStatus.OK
                    if dead and attempt < self.settings.pool_max:
                        continue  # back to the pool, which drops it
                    raise
                except psycopg.Error:
                    rollback(raw)  # a statement that failed: its transaction ends here
                    raise
                yield raw, cur
                return

    def _pool_busy(self) -> bool:
        """Every connection the pool may hold is open and lent out: a wait for one timed out
        because of load, not because the server is gone."""
        stats = self.pool.get_stats()
        return stats.get("pool_size", 0) >= self.settings.pool_max and not stats.get(
            "pool_available", 0
        )

    def read(
        self,
        fn: Callable[[Connection], T],
        *,
        scope: str | None = None,
        export: bool = False,
        snapshot: str | None = None,
    ) -> T:
        """Run fn inside one read-only transaction (a consistent snapshot: REPEATABLE READ).
        `export`: the connection's `exported` names its snapshot (pg_export_snapshot) while fn
        runs; `snapshot`: such a name, so that this read sees what that one sees (a hybrid
        search's vector pool beside its keyword pool: what it reads ahead for the search then
        holds under the search's snapshot, searchrows.carried). A snapshot no longer there (its
        read ended) is not an error: this read takes a snapshot of its own."""
        if snapshot is not None and _SNAPSHOT_NAME.fullmatch(snapshot):
            began = [False]
            try:
                return self._read(fn, scope, export, snapshot, began)
            except (
                psycopg.errors.UndefinedObject,
                psycopg.errors.InvalidParameterValue,
                # its transaction ending as this one imports it: "the source process ... is
                # not running anymore" (the export's file not yet removed)
                psycopg.errors.ObjectNotInPrerequisiteState,
            ):
                if began[0]:
                    raise
        return self._read(fn, scope, export, None, [False])

    def _read(
        self,
        fn: Callable[[Connection], T],
        scope: str | None,
        export: bool,
        snapshot: str | None,
        began: list[bool],
    ) -> T:
        # one round trip: the transaction, its snapshot (imported: `read`), its scope, its
        # snapshot's text (the data version: PgConnection), which the SELECT takes, and N of
        # the keyword IDF where it is the planner's estimate (store/pg/fts.py)
        begin = (
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; "
            + (f"SET TRANSACTION SNAPSHOT '{snapshot}'; " if snapshot is not None else "")
            + "SELECT "
            + ("set_config('memoryd.scope', 'all', true), " if scope == "all" else "")
            + ("pg_export_snapshot(), " if export else "")
            + f"pg_current_snapshot()::text, {fts.N_LARGE_SQL}"
        )
        handed = False
        with self._first(begin, kept=lambda: handed) as (raw, cur):
            began[0] = True
            try:
                while cur.description is None and cur.nextset():
                    pass
                row = one(cur)
                owner = self._scopes["all" if scope == "all" else None]
                con = PgConnection(raw, owner.memo, SESSION_EF, True, str(row[-2]), owner)
                if export:
                    con.exported = str(row[-3])
                if row[-1] is not None:
                    con.n = int(row[-1])
                result = fn(con)
            except BaseException:
                if not raw.closed:
                    raw.execute("ROLLBACK")
                raise
            handed = self._end_later(raw)
            return result

    def _end_later(self, raw: psycopg.Connection[Any]) -> bool:
        """End a read's transaction on the ender thread, which then gives the connection back
        to the pool: the reader has its answer one round trip sooner (a hybrid search makes
        three reads, and their ROLLBACKs waited on a busy server: 0.2-7 ms each, BENCHMARKS.md
        issue 23.4). A read-only transaction ended a little later changes nothing it read.
        False (ended here) while the store closes."""
        with self._ender_lock:
            if self._closed or raw.closed:
                ended = False
            else:
                if self._ender is None:
                    self._ender = threads.Pool(1, thread_name_prefix="memoryd-pg-end")
                try:
                    self._ender.submit(self._end, raw)
                    ended = True
                except threads.ThreadLimit:  # ended here, then
                    ended = False
        if not ended and not raw.closed:
            raw.execute("ROLLBACK")
        return ended

    def _end(self, raw: psycopg.Connection[Any]) -> None:
        try:
            if not raw.closed:
                raw.execute("ROLLBACK")
        except psycopg.Error:
            pass  # a broken connection: the pool replaces it
        finally:
            self.pool.putconn(raw)

    @contextmanager
    def write(self, *, durable: bool = False, scope: str | None = None) -> Iterator[PgConnection]:
        """One write transaction, committed when the block ends, rolled back if it raises.
        `durable` is accepted for the SQLite interface: every PostgreSQL commit is durable.
        scope="all": the views show every workspace's rows (vector collection must not take
        another workspace's vectors for orphans)."""
        begin = "BEGIN"
        if scope == "all":
            begin += "; SELECT set_config('memoryd.scope', 'all', true)"
        try:
            with self._lock, self._first(begin) as (raw, _):
                try:
                    memo = self._scopes["all" if scope == "all" else None].memo
                    yield PgConnection(raw, memo, SESSION_EF)
                except BaseException:
                    rollback(raw)
                    raise
                commit(raw)
        except (DiskFull, StoreBusy) as err:
            self._lock_watch.refused(err)  # (a full disk's too: said in status)
            raise
        self.refusals.worked()

    def run_write(
        self, fn: Callable[[Connection], T], *, durable: bool = False, scope: str | None = None
    ) -> T:
        with self.write(durable=durable, scope=scope) as con:
            return fn(con)

    @contextmanager
    def exclusive(self, name: str) -> Iterator[bool]:
        """Yields True in the one daemon that holds the named advisory lock (jobs that must run
        once per database: expiry, prune, vector collection), False in the others."""
        key = lock_key(name)
        with self._first("SELECT pg_try_advisory_lock(%s)", [key]) as (raw, cur):
            got = bool(one(cur)[0])
            try:
                yield got
            finally:
                if got:
                    raw.execute("SELECT pg_advisory_unlock(%s)", [key])

    def ping(self) -> dict[str, Any]:
        """Whether the server answers now: {"ok": True, "server": version, "schema": the
        database's schema version} or {"ok": False, "error": ...}."""
        try:
            with self._first(
                "SELECT current_setting('server_version'),"
                " (SELECT value FROM meta WHERE key = 'schema_version')"
            ) as (_, cur):
                version, schema_version = one(cur)
            return {"ok": True, "server": str(version), "schema": int(schema_version or 0)}
        except StoreUnavailable as exc:
            return {"ok": False, "error": exc.message}
        except StoreError as exc:
            return {"ok": False, "error": exc.message}

    def info(self) -> dict[str, Any]:
        """The `store` section of status: backend, whether the server answers now, its
        version, this daemon's workspace id, the pool and the change listener."""
        ping = self.ping()
        stats = self.pool.get_stats()
        # another daemon of a newer memoryd migrated the shared database under this one, which
        # goes on as the earlier version (and would not start again): upgrade it (service.md)
        newer = ping.get("schema", 0) > len(schema.MIGRATIONS)
        if newer and not self._newer_said:
            self._newer_said = True
            log.warning("a newer memoryd upgraded the shared database", schema=ping["schema"])
        return {
            "backend": self.backend,
            "ok": ping["ok"],
            "error": ping.get("error"),
            "server_version": ping.get("server"),
            "schema_newer": newer,
            "workspace_id": self.settings.workspace_id,
            "down_since": self.down_since,
            "writes_refused": self.refusals.info(),
            "pool": {
                "size": stats.get("pool_size", 0),
                "available": stats.get("pool_available", 0),
                "max": self.settings.pool_max,
            },
            "listening": self.listening if self._listener is not None else None,
        }

    def vector_index(self) -> VectorIndex | None:
        """The server's HNSW index answers nearest-neighbour queries (store/pg/vectors.py), by
        default; None with store.vector_cache: the searcher keeps the vectors in memory and
        follows other daemons' writes (search/sharedvec.py)."""
        return None if self.settings.vector_cache else PgVectorIndex()

    # -- other daemons' changes (LISTEN/NOTIFY) ------------------------------------------------

    def on_change(self, cb: Callable[[dict[str, Any]], None]) -> None:
        """Call cb(payload) when another daemon changes memories, chunks or triggers, and
        cb({"reason": "reconnected"}) after the listener lost its connection. Starts the
        listener on first use."""
        self._callbacks.append(cb)
        if self._listener is None and not self._closed:
            self._waker = Waker()
            self._listener = threading.Thread(
                target=self._listen, name="memoryd-pg-listen", daemon=True
            )
            self._listener.start()

    def _fire(self, payload: dict[str, Any]) -> None:
        for cb in list(self._callbacks):
            try:
                cb(payload)
            except Exception:
                log.exception("change callback failed")

    def _listen(self) -> None:
        backoff, connected_before, warned = LISTEN_RETRY_S, False, False
        while not self._stop.is_set():
            connected = False
            try:
                held, self._holder = self._holder, None
                with held if held is not None else self._connect() as con:
                    if held is None:
                        session.hold_open(con, self.settings.workspace_id)
                    if held is None and self.settings.claim:
                        claim.take_again(con, self.settings.workspace_id)
                    con.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    connected, self.listening, backoff = True, True, LISTEN_RETRY_S
                    self._back()
                    if connected_before:
                        log.info("change listener reconnected; caches dropped")
                        self._fire({"reason": "reconnected"})
                    connected_before, warned = True, False
                    self._listen_on(con)
            except psycopg.Error as exc:
                if self._stop.is_set():
                    break
                if not connected and self.down_since is None:
                    # the server refuses connections: requests fail fast from now on, without
                    # each waiting connect_timeout_s for the pool first
                    self.last_error = first_line(exc)
                    self.down_since = time.time()
                    log.error("PostgreSQL server unreachable", error=self.last_error)
                if not warned:  # once per outage, not once per retry
                    log.warning("change listener lost the server; retrying", error=first_line(exc))
                    warned = True
            finally:
                self.listening = False
            self._stop.wait(backoff)
            backoff = min(backoff * 2, LISTEN_RETRY_MAX_S)

    def _listen_on(self, con: psycopg.Connection[Any]) -> None:
        """Deliver notifications until stopped; a quiet connection is probed now and then
        (a server that vanished without a word is noticed)."""
        own = self.settings.workspace_id
        last = time.monotonic()
        while not self._stop.is_set():
            got = False
            for note in con.notifies(timeout=0):  # those read already (a probe's), and waiting
                got = True
                try:
                    payload = json.loads(note.payload)
                except ValueError:
                    payload = {"raw": note.payload}
                if isinstance(payload, dict) and payload.get("workspace") == own:
                    continue  # this daemon's own change: its own hooks saw it
                self._fire(payload if isinstance(payload, dict) else {"raw": payload})
            if got:
                last = time.monotonic()
            elif time.monotonic() - last > LISTEN_PROBE_S:
                con.execute("SELECT 1")
                last = time.monotonic()
            elif self._waker is not None:
                self._waker.wait(con.fileno(), LISTEN_POLL_S)

    # -- maintenance (the SQLite file operations have no meaning here) ---------------------------

    def checkpoint(self, mode: str = "RESTART") -> tuple[int, int, int]:
        return 0, 0, 0

    def quick_check(self) -> list[str]:
        return []

    def optimize(self) -> None:
        with self._first("ANALYZE all_entries") as (raw, _):
            raw.execute("ANALYZE embeddings")

    def backup_to(self, target: Path) -> None:
        raise Refused(
            'checkpoints copy the SQLite file; with store.backend = "postgres" back the '
            "database up with pg_dump or your server's backups (docs/team.md)"
        )

    def restore_from(self, source: Path) -> None:
        self.backup_to(source)

    def size_bytes(self) -> int:
        """The database's size, read at most once a minute (status asks often)."""
        at, size = self._size
        if time.monotonic() - at > 60:
            try:
                with self._first("SELECT pg_database_size(current_database())") as (_, cur):
                    size = int(one(cur)[0])
            except StoreUnavailable:
                return size
            self._size = (time.monotonic(), size)
        return size

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            with self._ender_lock:
                self._closed = True
                ender, self._ender = self._ender, None
            if ender is not None:
                ender.shutdown(wait=True)  # every read's connection back in the pool
            self._stop.set()
            self._lock_watch.stop()
            if self._listener is not None and self._waker is not None:
                self._waker.end(self._listener, timeout=LISTEN_POLL_S + 5)
            if self._holder is not None:  # the listener never took it
                self._holder.close()
                self._holder = None
            self.pool.close(timeout=5)


class _Scope:
    """One read scope's memory: fts.py's `memo` (document frequencies), and the owner under
    which connmemo.PerVersion keeps values read in this scope's snapshots."""

    def __init__(self) -> None:
        self.memo: dict[Any, Any] = {}


def _timeout(settings: PgSettings) -> int:
    return max(1, round(settings.connect_timeout_s))
