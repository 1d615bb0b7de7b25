"""How each of a daemon's connections logs in: with store.password_file, the password is read
from the file at every connection, not once at start-up. A password rotated on the server
(`ALTER ROLE ... PASSWORD`) and written to the file then takes effect at the next connection the
daemon makes (the pool replaces its connections at least hourly, the listener after an outage),
as libpq does with ~/.pgpass, instead of each of them failing until a restart. PGPASSWORD is the
daemon's environment, fixed at start: a service file's password needs a restart (docs/team.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from memoryd.core.dsn import read_password_file
from memoryd.core.errors import ConfigError

PASSWORD_FILE = "memoryd_password_file"  # the keyword argument `Connection.connect` reads


class Connection(psycopg.Connection[Any]):
    """A psycopg connection that takes `memoryd_password_file=PATH` (the pool's `kwargs`):
    the password is that file's at the time of connecting."""

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs: Any) -> Any:
        path = kwargs.pop(PASSWORD_FILE, "")
        if path:
            try:
                kwargs["password"] = read_password_file(Path(path))
            except ConfigError as exc:  # (a failed connection to the pool and the listener)
                raise psycopg.OperationalError(exc.message) from None
        return super().connect(conninfo, **kwargs)


def kwargs(password_file: str) -> dict[str, Any]:
    """The keyword arguments that make `Connection.connect` read this password file."""
    return {PASSWORD_FILE: password_file} if password_file else {}


def connect(conninfo: str, password_file: str, timeout: int) -> psycopg.Connection[Any]:
    """A connection of its own (autocommit), outside the pool."""
    con: psycopg.Connection[Any] = Connection.connect(
        conninfo, autocommit=True, connect_timeout=timeout, **kwargs(password_file)
    )
    return con
