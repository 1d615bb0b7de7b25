"""What every pooled connection of PgStore is set to when the pool opens it (its `configure`
hook): autocommit (read() and write() open their transactions explicitly), this daemon's
workspace, the statement and lock timeouts, pgvector's types, the HNSW search settings of a
default search's vector pool (so its knn sets nothing: store/pg/vectors.py), and no JIT: no
statement of memoryd's reaches jit_above_cost at 100K chunks, and one that did (a keyword pool
of common words at a few million) would pay tens of ms compiling a plan that runs once
(BENCHMARKS.md, issue 23.4). The lock timeout: store/pg/locks.py.

A DBA's `idle_session_timeout` (PostgreSQL 14+: `ALTER DATABASE/ROLE ... SET`, a managed
service's default) would end sessions memoryd keeps idle by design: the one that holds this
daemon's workspace id and listens for the other daemons' changes, a once-per-database job's lock
while the job runs on other connections, the pool's spare ones. Every session of memoryd sets it
to 0 (as it sets its own statement_timeout); the pool's size bounds them (docs/team.md).

A schema migration's session (the daemon's first, `memoryd store migrate`'s copy: `long_work`)
also turns off what a DBA may set to end long or waiting work: `lock_timeout` (a second daemon
waits on the migration's advisory lock while the first migrates), `transaction_timeout`
(PostgreSQL 17+: a step of a big store, a copy, runs as long as it takes) and
`idle_in_transaction_session_timeout` (between a step's statements, or the copy's tables, the
client computes: a note's rows again, a million-character class, the SQLite rows it reads).
The pool's sessions keep them (theirs are short transactions; memoryd sets its own
lock_timeout there: store/pg/locks.py).
"""

from __future__ import annotations

from typing import Any

import psycopg
from pgvector.psycopg import register_vector

from memoryd.store.pg import locks
from memoryd.store.pg.vectors import SESSION_EF


def configure(con: psycopg.Connection[Any], workspace_id: str, statement_timeout_ms: int) -> None:
    con.autocommit = True
    register_vector(con)
    con.execute(
        "SELECT set_config('memoryd.workspace', %s, false),"
        " set_config('statement_timeout', %s, false), set_config('jit', 'off', false),"
        " set_config('lock_timeout', %s, false),"
        " set_config('hnsw.ef_search', %s, false),"
        " set_config('hnsw.iterative_scan', 'relaxed_order', false)" + _no_idle_timeout(con),
        [workspace_id, str(statement_timeout_ms), str(locks.LOCK_TIMEOUT_MS), str(SESSION_EF)],
    )


def _no_idle_timeout(con: psycopg.Connection[Any]) -> str:
    """The select list's item that turns a DBA's idle_session_timeout off, on a server that
    has the setting (PostgreSQL 14+); before 14 it does not exist, and naming it is an error."""
    if con.info.server_version < 140000:
        return ""
    return ", set_config('idle_session_timeout', '0', false)"


def long_work(con: psycopg.Connection[Any], *, local: bool = False) -> None:
    """No statement, transaction, lock-wait or idle-in-transaction limit on this session (or,
    `local`, this transaction): a schema migration's, whatever the DBA set for other clients."""
    con.execute("SELECT " + _no_limits(con, local))


def _no_limits(con: psycopg.Connection[Any], local: bool) -> str:
    """The select list that turns those limits off (transaction_timeout only where the server
    has it: PostgreSQL 17+; naming a setting the server lacks is an error)."""
    names = ["statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"]
    if con.info.server_version >= 170000:
        names.append("transaction_timeout")
    flag = "true" if local else "false"
    return ", ".join(f"set_config('{n}', '0', {flag})" for n in names)


def hold_open(con: psycopg.Connection[Any], workspace_id: str) -> None:
    """The daemon's first connection (schema migrations, then the workspace id's lock and the
    change listener) and the listener's later ones: this workspace, kept however long it idles,
    and no limit on long work (`long_work`): a migration step of a big store runs as long as it
    takes (v7 at 100K chunks: 14 s), under its advisory lock, whatever the DBA set for other
    clients."""
    con.execute(
        "SELECT set_config('memoryd.workspace', %s, false), "
        + _no_limits(con, local=False)
        + _no_idle_timeout(con),
        [workspace_id],
    )
