"""Opening the store the config names: the SQLite file in data_dir (the default), or a shared
PostgreSQL database (store.backend = "postgres", docs/team.md)."""

from __future__ import annotations

import os
import re
import socket
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.core.dsn import DSN_REQUIRED, WORKSPACE_ID, read_password_file
from memoryd.core.errors import ConfigError
from memoryd.core.fsutil import PRIVATE_DIR, make_dirs
from memoryd.store.protocol import Store
from memoryd.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from memoryd.core.config import Config

WORKSPACE_ID_FILE = "workspace-id"
_ID = WORKSPACE_ID


def open_store(cfg: Config, *, claim: bool = False) -> Store:
    """The store for this config: `SqliteStore` or `PgStore` (memoryd.store.protocol.Store).
    `claim` (the daemon): on PostgreSQL, hold the workspace id; another daemon holding it is
    AlreadyRunning (store/pg/claim.py)."""
    if cfg.store.backend == "sqlite":
        return SqliteStore(cfg.db_path)
    require_driver()
    from memoryd.store.pg import PgSettings, PgStore

    if not cfg.store.dsn:
        raise ConfigError(DSN_REQUIRED)
    return PgStore(
        PgSettings(
            cfg.store.dsn,
            workspace_id(cfg),
            f"{socket.gethostname()}:{cfg.workspace}",
            pool_max=cfg.store.pool_size,
            statement_timeout_ms=cfg.store.statement_timeout_ms,
            connect_timeout_s=cfg.store.connect_timeout_s,
            vector_cache=cfg.store.vector_cache,
            claim=claim,
            # read at each connection (store/pg/login.py): a rotated password without a restart
            password_file=password_path(cfg),
        )
    )


def require_driver() -> None:
    """ConfigError unless the PostgreSQL driver is installed (`memoryd run` and `memoryd config
    check` say the same)."""
    try:
        import memoryd.store.pg  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            'store.backend = "postgres" needs the PostgreSQL driver: '
            f"pip install 'memoryd[postgres]' ({exc})"
        ) from None


def conninfo(cfg: Config) -> str:
    """store.dsn, with the password from store.password_file when one is set (libpq itself
    reads PGPASSWORD and ~/.pgpass)."""
    if not cfg.store.dsn:
        raise ConfigError(DSN_REQUIRED)
    if not cfg.store.password_file:
        return cfg.store.dsn
    password = read_password_file(Path(password_path(cfg)))
    from psycopg.conninfo import make_conninfo

    return make_conninfo(cfg.store.dsn, password=password)


def password_path(cfg: Config) -> str:
    """store.password_file, its ~ expanded; "" for none."""
    return os.path.expanduser(cfg.store.password_file) if cfg.store.password_file else ""


def workspace_id(cfg: Config) -> str:
    """This workspace's stable id in a shared database: store.workspace_id, or one made up
    once and kept in data_dir, so two machines' `notes/todo.md` never collide."""
    if cfg.store.workspace_id:
        if not _ID.match(cfg.store.workspace_id):
            raise ConfigError(
                "store.workspace_id: expected letters, digits and . _ : - (at most 128), "
                f"got {cfg.store.workspace_id!r}"
            )
        return cfg.store.workspace_id
    path = cfg.data_dir / WORKSPACE_ID_FILE
    try:
        text = path.read_text(encoding="utf-8").strip()
        if _ID.match(text):
            return text
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the workspace id in {path}: {exc}") from None
    new = f"{socket.gethostname().split('.')[0] or 'host'}-{uuid.uuid4().hex[:12]}"
    new = re.sub(r"[^A-Za-z0-9._:-]", "-", new)
    make_dirs(path.parent, PRIVATE_DIR)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(new + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    try:
        os.link(tmp, path)  # never replaces an id another process wrote first
    except FileExistsError:
        return path.read_text(encoding="utf-8").strip()
    finally:
        tmp.unlink(missing_ok=True)
    return new
