"""A PostgreSQL connection string as the configuration and `store migrate --dsn` take it:
refused when libpq cannot read it or when it holds a password (both say what one looks like,
and no message repeats the password). libpq itself reads it when psycopg is installed (the
`postgres` extra); without it, a plain reading finds a password."""

from __future__ import annotations

import re
from pathlib import Path

from memoryd.core.errors import ConfigError

DSN_EXAMPLES = (
    "a URI such as postgresql://memoryd@db.internal:5432/memoryd or key=value pairs such as "
    "'host=db.internal dbname=memoryd user=memoryd'"
)
PASSWORD_ADVICE = (
    "remove it and set PGPASSWORD, use ~/.pgpass, or point store.password_file at a file only "
    "you can read"
)


def check_dsn(dsn: str, key: str) -> None:
    """Refuse a connection string libpq cannot read, or one that holds a password (`key` names
    where it came from: store.dsn, --dsn). libpq's message quotes the string, or a word of it:
    it is left out when the string may hold a password."""
    if not dsn:
        return
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:  # without the driver, a plain reading (the daemon says what to install)
        if dsn_has_password(dsn):
            raise ConfigError(f"{key}: holds a password; {PASSWORD_ADVICE}") from None
        return
    import psycopg

    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        if dsn_has_password(dsn) or "password" in dsn.lower():
            raise ConfigError(
                f"{key}: is not a PostgreSQL connection string, and it seems to hold a password; "
                f"{PASSWORD_ADVICE}. Expected {DSN_EXAMPLES}"
            ) from None
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        detail = re.sub(r'\s*in URI: ".*"$', "", detail)
        raise ConfigError(
            f"{key}: is not a PostgreSQL connection string ({detail}); expected {DSN_EXAMPLES}"
        ) from None
    if params.get("password") is not None:
        raise ConfigError(f"{key}: holds a password; {PASSWORD_ADVICE}")


def dsn_has_password(dsn: str) -> bool:
    """True when a libpq URI or key=value string visibly carries a password (the reading
    without the driver; check_dsn asks libpq itself when psycopg is installed)."""
    from urllib.parse import unquote, urlsplit

    if re.match(r"^postgres(ql)?://", dsn):
        try:
            parts = urlsplit(dsn)
            return parts.password is not None or "password=" in unquote(parts.query or "")
        except ValueError:  # malformed (an unclosed [): user:password@ before the host
            return re.match(r"^postgres(ql)?://[^/?#@]*:[^/?#@]*@", dsn) is not None
    return re.search(r"(^|\s)password\s*=", dsn) is not None


WORKSPACE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
DSN_REQUIRED = (
    'store.dsn: required with store.backend = "postgres", e.g. '
    '"postgresql://memoryd@db.internal/memoryd"'
)


def read_password_file(path: Path) -> str:
    """store.password_file's password; ConfigError when it cannot be read or others can."""
    try:
        st = path.stat()
        password = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"store.password_file: cannot read {path}: {exc}") from None
    if st.st_mode & 0o077:
        raise ConfigError(
            f"store.password_file: {path} can be read by others (mode {st.st_mode & 0o777:o}); "
            f"chmod 600 {path}"
        )
    return password
