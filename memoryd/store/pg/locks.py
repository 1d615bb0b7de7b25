"""Another session's lock on memoryd's tables (a user's migration that runs `LOCK TABLE ...`
or `ALTER TABLE`, a transaction left open in psql after an UPDATE): PgStore's statements wait
`lock_timeout` (LOCK_TIMEOUT_MS, as SQLite's busy timeout) for it, not the whole
statement_timeout, and fail with StoreBusy naming the session that holds it, where
pg_locks tells. Writes refused so are said in status (`writes_refused`), and `Watch` looks
every RETRY_S for the lock to be gone; the first look that finds none ends the refusal (the
daemon then reconciles the workspace: Refusals.on_worked).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any

import psycopg

from memoryd.core.errors import MemorydError, StoreBusy
from memoryd.core.oserrors import Refusals
from memoryd.store.pg.conn import first_line, rollback

LOCK_TIMEOUT_MS = 5000
RETRY_S = 2.0

# relation locks of other sessions, on this schema's tables, that keep a write (ROW EXCLUSIVE)
# out: who holds them, for the message, and whether any is left, for Watch
HOLDERS = """
SELECT a.pid, coalesce(a.usename, ''), coalesce(a.application_name, ''), c.relname, l.mode,
       coalesce(left(regexp_replace(a.query, '\\s+', ' ', 'g'), 80), '')
FROM pg_locks l
JOIN pg_class c ON c.oid = l.relation
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
LEFT JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.granted AND l.pid <> pg_backend_pid()
  AND l.mode IN ('ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')
ORDER BY a.pid, c.relname
LIMIT 5
"""


def holders(con: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    """The sessions holding such locks ([] when none, or when pg_locks cannot be read)."""
    with suppress(psycopg.Error):
        return list(con.execute(HOLDERS).fetchall())
    return []


def busy(con: psycopg.Connection[Any], exc: psycopg.Error) -> StoreBusy:
    """The error for a statement that waited lock_timeout for another session's lock."""
    rollback(con)  # the failed transaction: the connection can ask pg_locks
    rows = holders(con)
    if rows:
        pid, user, app, table, mode, query = rows[0]
        who = ", ".join(str(x) for x in (f"pid {pid}", user, app) if x)
        what = f"another session ({who}: {query}) holds {mode} on {table}"
    else:
        what = f"another session holds a lock memoryd needs ({first_line(exc)})"
    return StoreBusy(
        f"the PostgreSQL server made memoryd wait {LOCK_TIMEOUT_MS / 1000:g} s: {what}; "
        "nothing was written. Retry once its transaction has ended"
    )


class Watch:
    """Looks every RETRY_S, while a write is refused on a lock, whether any is left; the first
    look that finds none ends the refusal (`refusals.worked`). `first` lends a pooled connection
    (PgStore._first), `closed` says when to stop."""

    def __init__(
        self, first: Callable[..., Any], closed: Callable[[], bool], refusals: Refusals
    ) -> None:
        self._first = first
        self._closed = closed
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self.refusals = refusals

    def refused(self, err: MemorydError) -> None:
        """A write refused: said in status; one refused on a lock is looked at again."""
        self.refusals.refused(err.message)
        if isinstance(err, StoreBusy):
            self.start()

    def start(self) -> None:
        with self._lock:
            if self._timer is not None or self._closed():
                return
            self._timer = threading.Timer(RETRY_S, self._look)
            self._timer.daemon = True
            self._timer.name = "memoryd-pg-lock-watch"
        self._timer.start()

    def _look(self) -> None:
        with self._lock:
            self._timer = None
        if self._closed():
            return
        try:
            with self._first(HOLDERS) as (_, cur):
                held = bool(cur.fetchall())
        except Exception:  # the server away, pg_locks not readable: look again later
            held = True
        if held:
            self.start()
        else:
            self.refusals.worked()

    def stop(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
