"""`memoryd store workspaces` and `memoryd store forget-workspace ID`: the machines' notes in a
shared PostgreSQL database, and how a machine gone for good leaves it.

A daemon's notes are an index of its machine's files, kept under its workspace id
(docs/team.md, section 3). A machine retired, rebuilt under another id, or a data_dir deleted
(its made-up id with it) leaves that index behind: searches with `workspace: "all"` keep
finding those notes, entity counts keep counting them, and nothing removes them by itself (a
daemon stopped for a week is not gone). `forget-workspace` removes one id's notes, chunks,
links, log marks and whole-note rows (one transaction; the rows cascade from its documents),
its statistics row and its record; memories stay, whoever added them. The vectors of its texts
go at the next vector collection (a text another workspace holds keeps its vector). A daemon
running with that id holds its lock (store/pg/claim.py): refused.
"""

from __future__ import annotations

from typing import Any

from memoryd.core.config import Config
from memoryd.core.errors import Refused, StoreError


def _connect(cfg: Config, dsn: str | None) -> Any:
    from memoryd.store.backend import conninfo, require_driver
    from memoryd.store.pgmigrate import target_config

    require_driver()
    import psycopg

    from memoryd.store.pg.conn import first_line

    tcfg = target_config(cfg, dsn)
    info = conninfo(tcfg)  # ConfigError without a dsn
    try:
        return psycopg.connect(info, connect_timeout=max(1, round(cfg.store.connect_timeout_s)))
    except psycopg.OperationalError as exc:
        raise StoreError(f"cannot connect to PostgreSQL: {first_line(exc)}") from None


_LIST = (
    "SELECT w.id, w.label, w.last_seen,"
    " (SELECT count(*) FROM all_documents d WHERE d.workspace = w.id)"
    " FROM workspaces w ORDER BY w.last_seen DESC, w.id"
)


def listing(cfg: Config, dsn: str | None = None) -> list[dict[str, Any]]:
    """Every workspace id the database knows: its label (`host:folder`), when its daemon last
    started, and how many notes it holds."""
    with _connect(cfg, dsn) as raw:
        return [
            {"id": r[0], "label": r[1], "last_seen": float(r[2]), "notes": int(r[3])}
            for r in raw.execute(_LIST).fetchall()
        ]


def forget(
    cfg: Config, workspace: str, *, dsn: str | None = None, dry_run: bool = False
) -> dict[str, Any]:
    """Remove one workspace's notes and record; {"workspace", "notes", "chunks", "dry_run"}.
    Refused when no such workspace is known or a daemon runs with it."""
    from memoryd.store.pg import claim
    from memoryd.store.pg.copy import MARKER

    with _connect(cfg, dsn) as raw:
        raw.autocommit = True
        if not claim.take(raw, workspace):  # held until the connection closes
            raise Refused(
                f"a memoryd is running with workspace id {workspace!r} "
                f"({claim.holder(raw, workspace)}): stop it first; nothing was removed"
            )
        raw.autocommit = False
        with raw.transaction(force_rollback=dry_run):
            raw.execute("SELECT set_config('memoryd.workspace', %s, true)", [workspace])
            known = raw.execute("SELECT 1 FROM workspaces WHERE id = %s", [workspace]).fetchone()
            chunks = raw.execute(
                "SELECT count(*) FROM all_entries WHERE workspace = %s", [workspace]
            ).fetchone()
            notes = raw.execute(
                "DELETE FROM all_documents WHERE workspace = %s", [workspace]
            ).rowcount
            if known is None and not notes:
                ids = ", ".join(r[0] for r in raw.execute(_LIST).fetchall()) or "none"
                raise Refused(f"no workspace {workspace!r} in this database (known: {ids})")
            raw.execute("DELETE FROM notes_stats WHERE workspace = %s", [workspace])
            raw.execute("DELETE FROM workspaces WHERE id = %s", [workspace])
            raw.execute("DELETE FROM meta WHERE key = %s", [MARKER + workspace])
    return {
        "workspace": workspace,
        "notes": max(notes, 0),
        "chunks": int(chunks[0]) if chunks else 0,
        "dry_run": dry_run,
    }
