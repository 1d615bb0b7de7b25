"""A password rotated on the server (docs/team.md, section 3): the team admin runs
`ALTER ROLE ... PASSWORD` and writes the new password where each daemon reads it. Connections
already open go on; every new one (the pool's, replaced at least hourly, and after any outage;
the change listener's) logs in with the password of that moment: with store.password_file, as
with ~/.pgpass, the file's at that connection, not the one read at start-up (main: every new
connection failed with "password authentication failed" until the daemon was restarted)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import rpc, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def scram_server() -> Iterator[Any]:
    """A server of its own where the role `rotated` logs in with a password (scram-sha-256)
    and owns the database `memoryd`; the extension is created by the superuser."""
    import pgserver
    import psycopg

    with pgserver.PrivateServer() as server:
        hba = Path(server.server.pgdata) / "pg_hba.conf"
        hba.write_text("local all rotated scram-sha-256\n" + hba.read_text())
        with psycopg.connect(server.uri, autocommit=True) as con:
            con.execute("CREATE ROLE rotated LOGIN PASSWORD 'first-password'")
            con.execute("CREATE DATABASE memoryd OWNER rotated")
            con.execute("SELECT pg_reload_conf()")
        with psycopg.connect(server.dsn("memoryd"), autocommit=True) as con:
            con.execute("CREATE EXTENSION vector")
        yield server


def _as_superuser(server: Any, sql: str) -> None:
    import psycopg

    with psycopg.connect(server.uri, autocommit=True) as con:
        con.execute(sql)


def _cut_sessions(server: Any) -> None:
    """The daemon's sessions end (a server restart, the pool's hourly renewal): it connects
    again, with the password of now."""
    _as_superuser(
        server, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'rotated'"
    )


def _added(d: Any, text: str) -> bool:
    return "result" in rpc(d.socket, "add", {"content": text}, timeout=10)


def _daemon(server: Any, daemon_factory: Any, tmp_path: Path) -> tuple[Any, Path]:
    """A daemon that logs in as `rotated` with the password in its store.password_file, and
    has stored a memory; with that file."""
    dsn = server.dsn("memoryd").replace("://postgres@", "://rotated@", 1)
    assert "rotated@" in dsn
    secret = tmp_path / "pg-password"
    secret.write_text("first-password\n")
    secret.chmod(0o600)
    (tmp_path / "ws").mkdir()
    d = daemon_factory(
        workspace=str(tmp_path / "ws"),
        store={"backend": "postgres", "dsn": dsn, "password_file": str(secret)},
        dailylog={"enabled": False},
    )
    assert _added(d, "the deploy key moved to the vault")
    return d, secret


def test_a_password_rotated_in_the_password_file_is_used_without_a_restart(
    scram_server: Any, daemon_factory: Any, tmp_path: Path
) -> None:
    d, secret = _daemon(scram_server, daemon_factory, tmp_path)

    _as_superuser(scram_server, "ALTER ROLE rotated PASSWORD 'second-password'")
    secret.write_text("second-password\n")
    _cut_sessions(scram_server)
    # main: "password authentication failed" at every request, until a restart
    wait_for(lambda: _added(d, "the password was rotated on monday"), timeout=30)
    wait_for(lambda: d.call("status")["store"]["listening"] is True, timeout=30)
    assert d.call("list", {"limit": 5})["total"] == 2


def test_a_password_the_daemon_was_not_given_is_a_clear_error(
    scram_server: Any, daemon_factory: Any, tmp_path: Path
) -> None:
    d, secret = _daemon(scram_server, daemon_factory, tmp_path)
    _as_superuser(scram_server, "ALTER ROLE rotated PASSWORD 'second-password'")  # file not
    _cut_sessions(scram_server)

    def refused() -> str:
        resp = rpc(d.socket, "add", {"content": "written after the rotation"}, timeout=10)
        return "" if "result" in resp else str(resp["error"]["message"])

    message = wait_for(refused, timeout=30)
    # main: "the PostgreSQL server is unreachable (...); ... reconnects by itself when it is back"
    assert "could not log in to the PostgreSQL server (password authentication failed" in message, (
        message
    )
    assert "store.password_file" in message and "unreachable" not in message, message
    assert "second-password" not in message and "first-password" not in message
    secret.write_text("second-password\n")  # put right: works again, no restart
    wait_for(lambda: _added(d, "written after the rotation"), timeout=30)
