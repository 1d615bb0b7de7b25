"""How each of a daemon's connections logs in, and why the last one could not.

With store.password_file, the password is read from the file at every connection, not once at
start-up. A password rotated on the server (`ALTER ROLE ... PASSWORD`) and written to the file
then takes effect at the next connection the daemon makes (the pool replaces its connections at
least hourly, the listener after an outage), as libpq does with ~/.pgpass, instead of each of
them failing until a restart. PGPASSWORD is the daemon's environment, fixed at start: a service
file's password needs a restart (docs/team.md).

The pool connects in the background, so a request that waited for a connection in vain only
knows it got none; `Login.refused` keeps the server's refusal of the last login (a wrong
password, no pg_hba.conf line), for the request's error and status to say that rather than
"unreachable".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from memoryd.core.dsn import read_password_file
from memoryd.core.errors import ConfigError

LOGIN = "memoryd_login"  # the keyword argument `Connection.connect` takes its Login from

# libpq's words when the server refuses the login itself (SQLSTATE 28P01 / 28000 reach the client
# only as the text of a failed connection): the server is there, and no retry will do until the
# password (or pg_hba.conf) is put right
_REFUSED = ("password authentication failed", "no password supplied", "no pg_hba.conf entry")


def refusal(exc: BaseException) -> str | None:
    """The server's reason for refusing a login, without libpq's "connection to server at ...
    failed: FATAL:" around it; None for any other failure."""
    for line in str(exc).splitlines():
        if any(words in line for words in _REFUSED):
            return line.rsplit("FATAL:", 1)[-1].strip()
    return None


class Login:
    """One store's way in: its password file ("" for none) and the last login's refusal."""

    def __init__(self, password_file: str) -> None:
        self.password_file = password_file
        self.refused: str | None = None

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments for `Connection.connect` (the pool's `kwargs`)."""
        return {LOGIN: self}

    def connect(self, conninfo: str, timeout: int) -> psycopg.Connection[Any]:
        """A connection of its own (autocommit), outside the pool."""
        con: psycopg.Connection[Any] = Connection.connect(
            conninfo, autocommit=True, connect_timeout=timeout, **self.kwargs()
        )
        return con


class Connection(psycopg.Connection[Any]):
    """A psycopg connection that takes `memoryd_login=Login`: the password is its file's at
    the time of connecting, and a refused login is kept there."""

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs: Any) -> Any:
        login: Login | None = kwargs.pop(LOGIN, None)
        if login is None:
            return super().connect(conninfo, **kwargs)
        if login.password_file:
            try:
                kwargs["password"] = read_password_file(Path(login.password_file))
            except ConfigError as exc:  # (a failed connection to the pool and the listener)
                login.refused = exc.message
                raise psycopg.OperationalError(exc.message) from None
        try:
            con = super().connect(conninfo, **kwargs)
        except psycopg.OperationalError as exc:
            login.refused = refusal(exc)
            raise
        login.refused = None
        return con
