"""Settings a DBA puts on the database or the role (`ALTER DATABASE ... SET`, `ALTER ROLE ...
SET`, a managed service's defaults) that memoryd's sessions inherit. `idle_session_timeout`
(PostgreSQL 14+) ends sessions idle that long: the one that holds the daemon's workspace id and
listens for the other daemons' changes idles by design, and so does the one holding a
once-per-database job's lock while the job runs; ended, the id and the job were free for another
daemon. `statement_timeout` cancelled a schema migration step that ran longer (v7 rewrote the
keyword rows: 14 s at 100K chunks), so a daemon of a new version could not start."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for
from test_pg_workspace_claim import _daemon

pytestmark = pytest.mark.slow


def _dba_sets(dsn: str, setting: str, value: str) -> None:
    """`ALTER DATABASE <this one> SET setting = value`, as a DBA would: new sessions inherit it."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as con:
        name = con.execute("SELECT current_database()").fetchone()
        assert name is not None
        con.execute(f'ALTER DATABASE "{name[0]}" SET {setting} = {value}')


def _lock_holders(dsn: str) -> list[float]:
    """How long each session of this database that holds an advisory lock (a workspace id, a
    job) has been idle (not in a transaction), in seconds."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True, options="-c idle_session_timeout=0") as con:
        rows = con.execute(
            "SELECT extract(epoch FROM now() - a.state_change) FROM pg_stat_activity a"
            " WHERE a.datname = current_database() AND a.state = 'idle' AND a.pid IN"
            " (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)"
        ).fetchall()
    return [float(r[0]) for r in rows]


def _held_idle_or_gone(dsn: str, seconds: float) -> bool:
    """Past the DBA's timeout: a session holding an advisory lock has idled longer than it
    (`seconds`), or none holds one any more (ended by the server: main)."""
    held = _lock_holders(dsn)
    return not held or max(held) > seconds


@pytest.fixture
def idle_timeout_dsn(pg_dsn: str) -> Iterator[str]:
    _dba_sets(pg_dsn, "idle_session_timeout", "'1s'")
    yield pg_dsn


def test_a_dba_idle_session_timeout_leaves_the_workspace_id_held(
    daemon_factory: Any, idle_timeout_dsn: str, tmp_path: Path
) -> None:
    first = _daemon(daemon_factory, tmp_path / "alice", idle_timeout_dsn, "a.md")
    wait_for(lambda: first.call("status")["store"]["listening"] is True, timeout=30)
    # the listener's session holds the id; main: the server ended it after a second idle
    wait_for(lambda: _held_idle_or_gone(idle_timeout_dsn, 2.5), timeout=30)
    assert "change listener lost the server" not in first.log()
    assert first.call("status")["store"]["listening"] is True
    second = _daemon(daemon_factory, tmp_path / "bob", idle_timeout_dsn, "b.md", wait=False)
    assert second.proc is not None
    wait_for(lambda: second.proc.poll() is not None, timeout=30)
    assert second.stop() == 1, second.log()
    assert "another memoryd uses workspace id 'shared-id'" in second.log()
    # and the first one answers as before
    assert [n["path"] for n in first.call("note.list", {})["items"]] == ["a.md"]
    assert "Traceback" not in first.log()


def _store(dsn: str, workspace: str) -> Any:
    from memoryd.store.pg import PgSettings, PgStore

    return PgStore(PgSettings(dsn, workspace, f"test:{workspace}"))


def test_a_dba_idle_session_timeout_leaves_a_jobs_lock_held_while_it_runs(
    idle_timeout_dsn: str,
) -> None:
    a, b = _store(idle_timeout_dsn, "a"), _store(idle_timeout_dsn, "b")
    try:
        with a.exclusive("expire") as got:
            assert got
            # the job runs longer than the DBA's timeout on a's other connections
            wait_for(lambda: _held_idle_or_gone(idle_timeout_dsn, 2.5), timeout=30)
            with b.exclusive("expire") as also:
                assert not also  # main: the lock went with the ended session
        with b.exclusive("expire") as after:
            assert after  # and free once the job is done
    finally:
        a.close()
        b.close()


def test_a_dba_statement_timeout_does_not_cancel_a_schema_migration(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.store.pg import schema

    _dba_sets(pg_dsn, "statement_timeout", "'200ms'")

    def _v_slow_step(cur: Any) -> None:  # a migration step of a big store, as v7 at 100K
        cur.execute("SELECT pg_sleep(0.5)")

    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, _v_slow_step])
    store = _store(pg_dsn, "a")  # main: "cannot open ...: canceling statement due to ..."
    try:
        assert store.ping()["schema"] == len(schema.MIGRATIONS)
        # the daemon's own statements keep store.statement_timeout_ms
        with store.write() as con:
            row = con.execute("SELECT current_setting('statement_timeout')").fetchone()
        assert row is not None and row[0] == "30s"
    finally:
        store.close()


class _Recorder:
    """A connection that records what it is sent, from a server of the given version."""

    def __init__(self, version: int) -> None:
        self.info = type("Info", (), {"server_version": version})()
        self.sent: list[str] = []
        self.autocommit = False
        self.adapters = None

    def execute(self, sql: str, params: Any = None) -> None:
        self.sent.append(sql)


@pytest.mark.parametrize("version", [130012, 140000, 170002])
def test_idle_session_timeout_is_named_only_where_the_server_has_it(
    version: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before PostgreSQL 14 the setting does not exist, and set_config of an unknown setting
    is an error: every connection to such a server would fail."""
    from memoryd.store.pg import session

    monkeypatch.setattr(session, "register_vector", lambda con: None)
    con = _Recorder(version)
    session.configure(con, "w1", 5000)  # type: ignore[arg-type]
    session.hold_open(con, "w1")  # type: ignore[arg-type]
    named = ["idle_session_timeout" in sql for sql in con.sent]
    assert named == [version >= 140000] * 2


def _server_version(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as con:
        return int(con.info.server_version)


def _migrates_under(dsn: str, monkeypatch: pytest.MonkeyPatch, setting: str, step: Any) -> None:
    """A DBA sets `setting` to 300 ms; a migration step outlasts it (`step`, added last): the
    store opens migrated, and the pool's sessions keep the DBA's setting."""
    from memoryd.store.pg import schema

    _dba_sets(dsn, setting, "'300ms'")
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, step])
    store = _store(dsn, "a")  # main: "terminating connection due to ... timeout"
    try:
        assert store.ping()["schema"] == len(schema.MIGRATIONS)
        assert _the_dbas(store, setting) == "300ms"
    finally:
        store.close()


def _the_dbas(store: Any, setting: str) -> str:
    """The setting on one of the pool's sessions (theirs is the DBA's: only the sessions whose
    work needs it turn it off)."""
    with store.write() as con:
        row = con.execute("SELECT current_setting(?)", [setting]).fetchone()
    assert row is not None
    return str(row[0])


def test_a_dba_transaction_timeout_does_not_end_a_schema_migration(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if _server_version(pg_dsn) < 170000:
        pytest.skip("transaction_timeout is PostgreSQL 17's")

    def _v_long_step(cur: Any) -> None:  # a step of a big store: statements, each short
        for _ in range(4):
            cur.execute("SELECT pg_sleep(0.2)")

    _migrates_under(pg_dsn, monkeypatch, "transaction_timeout", _v_long_step)


def test_a_dba_idle_in_transaction_timeout_does_not_end_a_schema_migration(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    def _v_computing_step(cur: Any) -> None:  # the client computes between two statements
        cur.execute("SELECT 1")
        time.sleep(0.8)  # (v19 builds a million-character class; notes.fill a note's rows)
        cur.execute("SELECT 1")

    _migrates_under(pg_dsn, monkeypatch, "idle_in_transaction_session_timeout", _v_computing_step)


def test_a_dba_lock_timeout_lets_a_daemon_wait_out_another_ones_migration(pg_dsn: str) -> None:
    """A second daemon started while the first migrates waits on the migration's advisory lock
    (v7 at 100K chunks: 14 s); a DBA's lock_timeout ended that wait: the daemon did not start."""
    import threading

    import psycopg

    from memoryd.store.pg import schema

    _store(pg_dsn, "a").close()  # the schema made: what the second finds is the lock alone
    _dba_sets(pg_dsn, "lock_timeout", "'100ms'")
    first = psycopg.connect(pg_dsn, autocommit=True)
    first.execute("SELECT pg_advisory_lock(%s)", [schema.MIGRATE_LOCK])  # the first migrates
    done = threading.Timer(0.8, first.close)  # its migration ends: the lock goes
    done.start()
    try:
        store = _store(pg_dsn, "b")  # main: "canceling statement due to lock timeout"
        try:
            assert store.ping()["ok"] is True
            assert _the_dbas(store, "lock_timeout") == "5s"  # memoryd's own (store/pg/locks.py)
        finally:
            store.close()
    finally:
        done.join()
        first.close()


def test_a_dba_idle_in_transaction_and_transaction_timeouts_do_not_end_store_migrate(
    make_app: Any, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memoryd store migrate` copies in one transaction: between its tables the client reads
    the SQLite rows (a large store: seconds), and the whole copy outlasts any short limit."""
    import time

    from conftest import settle
    from test_pg_migrate import _sqlite_store

    from memoryd.store import pgmigrate
    from memoryd.store.pg import copy as pc

    cfg, _ = _sqlite_store(make_app, settle)
    _dba_sets(pg_dsn, "idle_in_transaction_session_timeout", "'300ms'")
    if _server_version(pg_dsn) >= 170000:
        _dba_sets(pg_dsn, "transaction_timeout", "'1s'")
    copy_rows = pc.copy_rows

    def slowly(*args: Any, **kw: Any) -> Any:  # a large table's rows read from SQLite first
        time.sleep(0.5)
        return copy_rows(*args, **kw)

    monkeypatch.setattr(pc, "copy_rows", slowly)
    result = pgmigrate.migrate(cfg, dsn=pg_dsn, say=lambda line: None)
    assert result["target"]["memories"] == 2  # main: "the copy failed ... idle-in-transaction"


@pytest.mark.parametrize("setting", ["transaction_timeout", "idle_in_transaction_session_timeout"])
def test_a_dba_limit_that_ends_a_daemons_transaction_is_said_as_such(
    make_app: Any, pg_dsn: str, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    """An export reads in one transaction; one outlasting the DBA's limit (a large store, a
    loaded machine) was an internal error with a traceback (-32603: a bug), the limit unnamed."""
    import time

    from memoryd.core.errors import StoreError
    from memoryd.memory import transfer
    from memoryd.serve import methods

    if setting == "transaction_timeout" and _server_version(pg_dsn) < 170000:
        pytest.skip("transaction_timeout is PostgreSQL 17's")
    store = {"backend": "postgres", "dsn": pg_dsn}
    first = make_app(store=store, dailylog={"enabled": False})
    for i in range(3):
        first.memories.add(f"memory number {i} to export")
    make_app.close(first)
    _dba_sets(pg_dsn, setting, "'300ms'")  # new sessions inherit it: the next App's
    app = make_app(store=store, dailylog={"enabled": False})
    rows = transfer.tstore.memory_rows

    def slowly(con: Any, namespace: Any) -> Any:  # the client computes between statements
        for item in rows(con, namespace):
            time.sleep(0.5)
            yield item

    monkeypatch.setattr(transfer.tstore, "memory_rows", slowly)
    with pytest.raises(StoreError, match=f"outlasted the server's {setting}"):
        methods.export(app, {})
    monkeypatch.setattr(transfer.tstore, "memory_rows", rows)
    assert len(methods.export(app, {})["items"]) == 3  # the next session works
    assert app.store.down_since is None  # not taken for an outage
