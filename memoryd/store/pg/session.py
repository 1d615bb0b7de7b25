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


def hold_open(con: psycopg.Connection[Any], workspace_id: str) -> None:
    """The daemon's first connection (schema migrations, then the workspace id's lock and the
    change listener) and the listener's later ones: this workspace, kept however long it idles,
    and no statement_timeout: a migration step of a big store runs as long as it takes (v7 at
    100K chunks: 14 s), under its advisory lock, whatever the DBA set for other clients."""
    con.execute(
        "SELECT set_config('memoryd.workspace', %s, false),"
        " set_config('statement_timeout', '0', false)" + _no_idle_timeout(con),
        [workspace_id],
    )
