"""A psycopg connection that speaks the small part of apsw's interface the store modules use.

The store modules are written once, in SQL that SQLite and PostgreSQL both accept, with `?`
placeholders. `PgConnection.execute` turns `?` into psycopg's `%s` (and a literal `%` into `%%`),
outside string literals, and answers with a cursor that, like apsw's, yields nothing (rather
than raising) for a statement without a result. The few statements the two engines cannot share
branch on `is_postgres(con)`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import suppress
from functools import lru_cache
from typing import Any

import psycopg
import psycopg_pool

from memoryd.core.errors import DiskFull, StoreError, StoreUnavailable
from memoryd.store.dialect import POSTGRES as DIALECT
from memoryd.store.protocol import Connection, Cursor


@lru_cache(maxsize=4096)
def translate(sql: str) -> str:
    """`?` placeholders -> `%s`, `%` -> `%%`, leaving quoted literals and identifiers alone
    (except for `%`, which psycopg reads everywhere in the text)."""
    out: list[str] = []
    quote: str | None = None
    for ch in sql:
        if ch == "%":
            out.append("%%")
            continue
        if quote:
            out.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in ("'", '"'):
            quote = ch
            out.append(ch)
        elif ch == "?":
            out.append("%s")
        else:
            out.append(ch)
    return "".join(out)


# The statements execute_prepared ran (their text as written, `?` and all), which
# PgConnection.execute sends as server-side prepared statements; a few shapes, kept in bounds.
_PREPARED: set[str] = set()
PREPARED_MAX = 256


def execute_prepared(con: Connection, sql: str, params: Sequence[Any]) -> Cursor:
    """Run a statement whose best plan is the same whatever its parameters as a server-side
    prepared statement on PostgreSQL (psycopg keeps it per connection: parsed once and, after
    five runs, planned once), anywhere else as `execute` does. Every other statement is sent
    unprepared: a keyword pool's or a whole note's best plan follows its words (their generic
    plans cost more: BENCHMARKS.md, issue 23.4, branches pgkw5 and pg19). A search's hits
    (store/searchrows.py `hit_rows`: ~20 rows by id and their snippets) took as long to plan as
    to run: prepared, the server's CPU for the statement halves."""
    if isinstance(con, PgConnection) and sql not in _PREPARED:
        if len(_PREPARED) >= PREPARED_MAX:
            _PREPARED.clear()
        _PREPARED.add(sql)
    return con.execute(sql, params)


class PgCursor:
    """The rows of one statement: iterate, fetchall() or fetchone(); empty without a result."""

    def __init__(self, cur: psycopg.Cursor[Any]) -> None:
        self._cur = cur

    @property
    def _has_rows(self) -> bool:
        return self._cur.description is not None

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self._cur) if self._has_rows else iter(())

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self._cur.fetchall()) if self._has_rows else []

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._cur.fetchone() if self._has_rows else None


class PgConnection:
    """One pooled psycopg connection, inside the transaction the store opened for it.

    `memo`: the store's memory of derived figures for this connection's scope (the keyword
    pool's document frequencies, store/pg/fts.py), shared by every connection of the store;
    a connection made without one remembers nothing. `n`: the entries' count of IDF, read once
    in a read-only transaction (`snapshot`: PgStore.read's, where it cannot change;
    fts.entry_count). `hnsw_ef`: the hnsw.ef_search the session was set
    up with (PgStore's pooled connections, with relaxed iterative scans), so a knn that needs
    it sets nothing (store/pg/vectors.py); None: unknown. `version` (a read-only
    transaction's): its snapshot, `pg_current_snapshot()` as text, what PostgreSQL has for
    SQLite's data version: two snapshots with the same text see the same committed data, so a
    value read under one holds under the other (store/connmemo.py keeps such values per
    `owner`, the store's scope, as SQLite keeps them per connection); None: nothing is
    remembered (a write's own changes are not in its snapshot's text)."""

    dialect = DIALECT

    def __init__(
        self,
        raw: psycopg.Connection[Any],
        memo: dict[Any, Any] | None = None,
        hnsw_ef: int | None = None,
        snapshot: bool = False,
        version: str | None = None,
        owner: object | None = None,
    ) -> None:
        self.raw = raw
        self.memo: dict[Any, Any] = {} if memo is None else memo
        self.hnsw_ef = hnsw_ef
        self.snapshot = snapshot
        self.version = version if snapshot else None
        self.owner = owner
        self.n: int | None = None
        # the evidence's expressions noted ahead (store/pg/fts.py: one statement for every word
        # of a query), and what this read knows of which entries hold which tsquery: by its
        # SQL and parameters, (the entries looked at, those of them holding it); the keyword
        # pool's rows and `matching`'s answers (a read-only transaction's: one snapshot)
        self.ahead: list[str] = []
        self.held: dict[tuple[str, tuple[Any, ...]], tuple[set[int], set[int]]] | None = (
            {} if snapshot else None
        )
        # the entries' lengths read ahead in a read-only transaction (store/pg/held.py)
        self.lengths: dict[int, int] | None = {} if snapshot else None
        # the signal columns (searchsql.SIGNAL_COLUMNS) of the entries the vector pool read
        # with its nearest texts, for the search's read (store/pg/held.py `carry`)
        self.signals: dict[int, tuple[Any, ...]] = {}
        self.carry: str | None = None  # the columns asked for them (held.note_carry)
        self.exported: str | None = None  # its snapshot's name (PgStore.read's `export`)
        self._changes = 0

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        # server-side prepared: the statements execute_prepared was given
        cur = self.raw.execute(translate(sql), list(params or ()), prepare=sql in _PREPARED)
        self._changes = max(cur.rowcount, 0)
        return PgCursor(cur)

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> None:
        """One statement for every parameter row (apsw's executemany; psycopg pipelines it)."""
        rows = [list(p) for p in seq]
        if rows:
            with self.raw.cursor() as cur:
                cur.executemany(translate(sql), rows)
                self._changes = max(cur.rowcount, 0)

    def changes(self) -> int:
        """Rows changed by the last statement (apsw's changes())."""
        return self._changes

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE


# --- a connection's failures (PgStore's) ---------------------------------------------------


def rollback(raw: psycopg.Connection[Any]) -> None:
    """End a failed write's transaction; a broken connection has nothing left to end."""
    if raw.closed or raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        return
    with suppress(psycopg.Error):
        raw.execute("ROLLBACK")


def commit(raw: psycopg.Connection[Any]) -> None:
    """COMMIT a write's transaction. The server's disk full (53100) is raised as it is (nothing
    was committed: PgStore._connection makes it DiskFull); a connection that broke while
    committing is StoreUnavailable, saying the change may or may not be stored."""
    try:
        raw.execute("COMMIT")
    except psycopg.errors.DiskFull:
        rollback(raw)
        raise
    except psycopg.OperationalError as exc:
        # a retry is safe: the same memory added again is answered as a duplicate
        raise StoreUnavailable(
            f"the connection to PostgreSQL broke while committing ({first_line(exc)}): the "
            "change may or may not be stored. Retrying is safe: the same memory added again is "
            "answered as a duplicate"
        ) from None


def disk_full(exc: psycopg.Error) -> DiskFull:
    """The server's disk is full (SQLSTATE 53100): the statement failed and its transaction
    was rolled back; reads go on (a write's is said in status: PgStore.write)."""
    return DiskFull(
        f"the PostgreSQL server's disk is full ({first_line(exc)}); nothing was written. "
        "Free some space on the server (its data directory) and retry"
    )


# a DBA's limits on a transaction (ALTER ROLE / DATABASE ... SET): the server ends the session
LIMITS: dict[type[psycopg.Error], str] = {
    psycopg.errors.IdleInTransactionSessionTimeout: "idle_in_transaction_session_timeout"
}
if (_ENDED := getattr(psycopg.errors, "TransactionTimeout", None)) is not None:  # PostgreSQL 17+
    LIMITS[_ENDED] = "transaction_timeout"
REFUSED: tuple[type[psycopg.Error], ...] = (psycopg.errors.DiskFull, *LIMITS)


def refused(exc: psycopg.Error) -> StoreError:
    """What a failure of REFUSED says: the server's disk is full, or a DBA's limit ended the
    session (its transaction rolled back: nothing of it was written; the pool drops it)."""
    setting = LIMITS.get(type(exc))
    if setting is None:
        return disk_full(exc)
    return StoreError(
        f"the PostgreSQL server ended the session: its transaction outlasted the server's "
        f"{setting} ({first_line(exc)}); nothing of it was written. A DBA set it for "
        "memoryd's role or database: raise it for memoryd's role (docs/team.md), or ask for "
        "less at once (an export by namespace)"
    )


def known_broken(con: psycopg.Connection[Any]) -> None:
    """The pool's check before lending a connection: only what the client knows already (a
    connection closed or broken on its last use), no round trip (PgStore._first)."""
    if con.closed or con.pgconn.status != psycopg.pq.ConnStatus.OK:
        raise psycopg.OperationalError("the connection is broken")


def connection_lost(exc: BaseException) -> bool:
    """The server is gone (or refuses connections for now), as opposed to an error in a
    statement: no SQLSTATE (a client-side connection failure), class 08 (connection
    exception) or 57P01-57P03 (shut down, crashed, starting)."""
    if isinstance(exc, psycopg_pool.PoolTimeout | psycopg.InterfaceError):
        return True
    state = getattr(exc, "sqlstate", None)
    return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def unavailable(exc: BaseException, refused: str | None = None) -> StoreUnavailable:
    """The error a request gets when the server cannot be reached (exc: the driver's), or
    refused the login (`refused`: why, store/pg/login.py)."""
    if refused:
        return StoreUnavailable(
            f"memoryd could not log in to the PostgreSQL server ({refused}); nothing was "
            "written. If the role's password changed, write the new one to ~/.pgpass or "
            "store.password_file (read at each connection) or to PGPASSWORD in the service's "
            "environment (then restart the daemon): docs/team.md"
        )
    return StoreUnavailable(
        f"the PostgreSQL server is unreachable ({first_line(exc)}); nothing was written. memoryd "
        "reconnects by itself when it is back"
    )


def lock_key(name: str) -> int:
    """A stable 63-bit advisory lock key for a job name (PgStore.exclusive)."""
    return int.from_bytes(hashlib.sha256(f"memoryd:{name}".encode()).digest()[:8], "big") >> 1
