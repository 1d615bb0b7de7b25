"""The PostgreSQL store: the same interface as the SQLite `Store`, over a psycopg_pool pool.

Several daemons, on several machines, share one database (docs/team.md). Each connection of the
pool is set up for this daemon: its workspace id (`memoryd.workspace`, which the views
`documents` and `entries` read), a statement timeout, and pgvector's types.

If the server goes away, a read or write fails fast with `StoreUnavailable` (the pool waits at
most `connect_timeout_s` for a connection) and nothing is half-written: every write is one
transaction. The pool reconnects by itself when the server is back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import psycopg_pool
from pgvector.psycopg import register_vector

from memoryd.errors import Refused, StoreError, StoreUnavailable
from memoryd.logsetup import get_logger
from memoryd.store.pg import schema
from memoryd.store.pg.conn import PgConnection

T = TypeVar("T")
log = get_logger("memoryd.store")

__all__ = ["PgSettings", "PgStore"]


class PgSettings:
    """What PgStore needs from the config (memoryd.config.StoreConfig and the workspace id)."""

    def __init__(
        self,
        conninfo: str,
        workspace_id: str,
        workspace_label: str,
        *,
        pool_min: int = 1,
        pool_max: int = 8,
        statement_timeout_ms: int = 30000,
        connect_timeout_s: float = 5.0,
    ) -> None:
        self.conninfo = conninfo
        self.workspace_id = workspace_id
        self.workspace_label = workspace_label
        self.pool_min = pool_min
        self.pool_max = pool_max
        self.statement_timeout_ms = statement_timeout_ms
        self.connect_timeout_s = connect_timeout_s


def unavailable(exc: BaseException) -> StoreUnavailable:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreUnavailable(
        f"the PostgreSQL server is unreachable ({first}); nothing was written. memoryd "
        "reconnects by itself when it is back"
    )


class PgStore:
    """Thread-safe: call `read()` / `write()` from any thread."""

    backend = "postgres"
    vec_enabled = True

    def __init__(self, settings: PgSettings) -> None:
        self.settings = settings
        self.path = Path("postgresql")  # for logs; there is no file
        self._lock = threading.RLock()  # one writer per daemon, as with SQLite
        self._closed = False
        self._size: tuple[float, int] = (0.0, 0)
        try:
            with psycopg.connect(
                settings.conninfo, autocommit=True, connect_timeout=_timeout(settings)
            ) as con:
                con.execute(
                    "SELECT set_config('memoryd.workspace', %s, false)", [settings.workspace_id]
                )
                schema.migrate(con)
                now = time.time()
                con.execute(
                    "INSERT INTO workspaces(id, label, first_seen, last_seen)"
                    " VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (id) DO UPDATE SET label = excluded.label,"
                    " last_seen = excluded.last_seen",
                    [settings.workspace_id, settings.workspace_label, now, now],
                )
        except psycopg.OperationalError as exc:
            raise StoreError(f"cannot open the PostgreSQL store: {_first_line(exc)}") from exc
        self.pool = psycopg_pool.ConnectionPool(
            settings.conninfo,
            min_size=settings.pool_min,
            max_size=settings.pool_max,
            kwargs={"connect_timeout": _timeout(settings)},
            configure=self._configure,
            timeout=settings.connect_timeout_s,
            reconnect_timeout=0,  # keep trying forever in the background
            check=psycopg_pool.ConnectionPool.check_connection,
            open=False,
            name="memoryd",
        )
        self.pool.open(wait=False)

    def _configure(self, con: psycopg.Connection[Any]) -> None:
        """Every pooled connection: autocommit (read() and write() open their transactions
        explicitly), this daemon's workspace, the statement timeout, pgvector's types."""
        con.autocommit = True
        register_vector(con)
        con.execute(
            "SELECT set_config('memoryd.workspace', %s, false),"
            " set_config('statement_timeout', %s, false)",
            [self.settings.workspace_id, str(self.settings.statement_timeout_ms)],
        )

    # -- connections --------------------------------------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        if self._closed:
            raise StoreError("the store is closed")
        try:
            with self.pool.connection() as con:
                yield con
        except (psycopg_pool.PoolTimeout, psycopg.OperationalError) as exc:
            raise unavailable(exc) from None
        except psycopg.errors.QueryCanceled as exc:
            raise StoreError(
                f"a statement ran longer than store.statement_timeout_ms "
                f"({self.settings.statement_timeout_ms} ms) and was cancelled"
            ) from exc

    def read(self, fn: Callable[[PgConnection], T], *, scope: str | None = None) -> T:
        """Run fn inside one read-only transaction (a consistent snapshot: REPEATABLE READ)."""
        with self._connection() as raw:
            raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                if scope == "all":
                    raw.execute("SELECT set_config('memoryd.scope', 'all', true)")
                return fn(PgConnection(raw))
            finally:
                if not raw.closed:
                    raw.execute("ROLLBACK")

    @contextmanager
    def write(self, *, durable: bool = False) -> Iterator[PgConnection]:
        """One write transaction, committed when the block ends, rolled back if it raises.
        `durable` is accepted for the SQLite interface: every PostgreSQL commit is durable."""
        with self._lock, self._connection() as raw, raw.transaction():
            yield PgConnection(raw)

    def run_write(self, fn: Callable[[PgConnection], T], *, durable: bool = False) -> T:
        with self.write(durable=durable) as con:
            return fn(con)

    @contextmanager
    def exclusive(self, name: str) -> Iterator[bool]:
        """Yields True in the one daemon that holds the named advisory lock (jobs that must run
        once per database: expiry, prune, vector collection), False in the others."""
        key = _lock_key(name)
        with self._connection() as raw:
            got = bool(raw.execute("SELECT pg_try_advisory_lock(%s)", [key]).fetchone()[0])
            try:
                yield got
            finally:
                if got:
                    raw.execute("SELECT pg_advisory_unlock(%s)", [key])

    def ping(self) -> dict[str, Any]:
        """Whether the server answers now: {"ok": True, "server": version} or {"ok": False,
        "error": ...}."""
        try:
            with self._connection() as raw:
                version = raw.execute("SHOW server_version").fetchone()[0]
            return {"ok": True, "server": str(version)}
        except StoreUnavailable as exc:
            return {"ok": False, "error": exc.message}

    # -- maintenance (the SQLite file operations have no meaning here) ---------------------------

    def checkpoint(self, mode: str = "RESTART") -> tuple[int, int, int]:
        return 0, 0, 0

    def quick_check(self) -> list[str]:
        return []

    def optimize(self) -> None:
        with self._connection() as raw:
            raw.execute("ANALYZE all_entries")
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
                with self._connection() as raw:
                    size = int(
                        raw.execute("SELECT pg_database_size(current_database())").fetchone()[0]
                    )
            except StoreUnavailable:
                return size
            self._size = (time.monotonic(), size)
        return size

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self.pool.close(timeout=5)


def _timeout(settings: PgSettings) -> int:
    return max(1, round(settings.connect_timeout_s))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _lock_key(name: str) -> int:
    """A stable 63-bit advisory lock key for a job name."""
    import hashlib

    return int.from_bytes(hashlib.sha256(f"memoryd:{name}".encode()).digest()[:8], "big") >> 1
