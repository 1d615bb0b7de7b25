"""Library exceptions, defined once. Each carries the JSON-RPC error code it maps to."""

from __future__ import annotations

import re

# `memoryd run`'s exit statuses, by what stopped it; the service files act on them
# (serve/service.py: systemd restarts 1, never 2; the launchd agent passes
# --config-error-status 0, as launchd restarts every status but 0)
EXIT_STOPPED = 0  # a clean stop (SIGTERM, SIGINT)
EXIT_START = 1  # could not start or went on (another daemon, a folder it cannot use, a bug)
EXIT_CONFIG = 2  # a configuration error: a restart cannot fix it

# A value quoted back in a message: short, made of name-like characters, and without a long run
# of letters and digits (what API keys and tokens look like). Anything else is described.
# Brackets, quotes and ?! too: a name looked up as written ("[[Jean-Luc Picard]]", "Melanie’s");
# and what file names and paths hold besides (`~/x.md`, `50% done.md`, `$HOME/n.md`, `{a}.md`).
_SHOWABLE = re.compile(r"[\w .,:/#@+()'&\[\]’‘\"!?~%$=;*{}^-]{1,64}")
_KEYLIKE = re.compile(r"[A-Za-z0-9_+/=-]{16,}")


def describe(value: object) -> str:
    """A rejected value for an error message, without repeating what could be a credential or
    a whole document: a short name-like text is quoted; other values are described by kind."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        text = repr(value)
        return text if len(text) <= 24 else f"a number of {len(text)} digits"
    if isinstance(value, str):
        if _SHOWABLE.fullmatch(value) and not _KEYLIKE.search(value.replace("/", " ")):
            return repr(value)
        return f"a text of {len(value)} character{'' if len(value) == 1 else 's'}"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def int_expected(field: str, value: object, low: int, high: int | None = None) -> str:
    """The one message for an integer param that is missing, of the wrong type or out of range
    (every method on the socket, and the MCP tools' own check, say it the same way)."""
    bounds = f"from {low} to {high}" if high is not None else f"of at least {low}"
    return f"{field}: expected an integer {bounds}, got {describe(value)}"


def check_int(value: object, field: str, low: int, high: int | None = None) -> int:
    """An integer from `low` to `high` (None: up to the 64-bit limit), else InvalidInput with
    int_expected's message; null is refused too (a param that is not given is absent)."""
    top = 2**63 - 1 if high is None else high
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= top:
        raise InvalidInput(int_expected(field, value, low, high))
    return value


class MemorydError(Exception):
    """Base class for errors memoryd reports to users."""

    code: int = -32000
    # `memoryd run` (and `memoryd store`) exit with this when it stops them: EXIT_CONFIG for
    # what a restart cannot fix, which the service files do not restart (serve/service.py)
    exit_status: int = EXIT_START

    def __init__(self, message: str, *, data: dict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class ConfigError(MemorydError):
    """The configuration is invalid (names the key and what is wrong)."""

    code = -32010
    exit_status = EXIT_CONFIG


class InvalidInput(MemorydError):
    """A request's parameters are invalid (empty content, bad importance, ...)."""

    code = -32602


class NotFound(MemorydError):
    """No entry, job or checkpoint with that id or name."""

    code = -32004


class TooLarge(MemorydError):
    """Content or a request is over its size limit."""

    code = -32005


class Refused(MemorydError):
    """The request is understood but refused (for instance content that looks like a secret)."""

    code = -32006


class Unavailable(MemorydError):
    """A component the request needs is not ready (the embedding model, the store)."""

    code = -32003


class StoreUnavailable(Unavailable):
    """The database server (store.backend = "postgres") cannot be reached: nothing was written;
    the daemon reconnects by itself when it is back."""

    code = -32014


class StoreBusy(StoreUnavailable):
    """Another program holds the SQLite database's write lock (a write transaction open in the
    sqlite3 shell, DB Browser, a backup or sync tool) past the busy timeout: nothing was
    written; retry once it lets go (the daemon catches up by itself)."""


class AlreadyRunning(MemorydError):
    """Another daemon already owns this database, socket or workspace folder."""

    code = -32011


class StoreError(MemorydError):
    """The database failed in a way the caller cannot fix (corruption, disk full)."""

    code = -32012


class Conflict(MemorydError):
    """The target changed since the caller last saw it (a stale sha256), or the change would
    collide with something already stored."""

    code = -32009


class StoreTooNew(StoreError):
    """The store's schema was upgraded by a newer memoryd: this one cannot use it, and no
    restart will change that (exit status 2, as a configuration error)."""

    exit_status = EXIT_CONFIG


class DiskFull(StoreError):
    """The disk (or the file system holding data_dir) is full: nothing was written."""

    code = -32013
