"""Every memory's mentions read at once: a migration to the entity schema, a newer extractor's
names (`reindex --full`), an upgrade that types mentions (store/entities.py holds the rules)."""

from __future__ import annotations

from memoryd.store import entityclaims, entitypairs
from memoryd.store.dialect import is_postgres
from memoryd.store.entities import (
    _tags,
    adopt_first_names,
    known_as,
    memory_mentions,
    remember,
)
from memoryd.store.protocol import Connection


def backfill_memories(con: Connection, table: str = "entries") -> int:
    """Extract the mentions of every memory that has none (a migration to the entity schema;
    PostgreSQL's reads its table `all_entries`, as no workspace is set while it migrates)."""
    assert table in ("entries", "all_entries")
    if table == "all_entries":  # firstnames.claims reads the view `entries`: every workspace's
        con.execute(
            "SELECT set_config('memoryd.workspace',"
            " coalesce(current_setting('memoryd.workspace', true), ''), true),"
            " set_config('memoryd.scope', 'all', true)"
        )
    rows = con.execute(
        f"SELECT id, created_at, content, tags FROM {table} x WHERE kind = 'memory'"
        " AND NOT EXISTS (SELECT 1 FROM mentions m WHERE m.entry_id = x.id) ORDER BY id"
    ).fetchall()
    ids: dict[str, int] = {}
    columns = entitypairs.mention_columns(con, is_postgres(con))
    for entry_id, at, content, tags in rows:
        found = known_as(con, memory_mentions(str(content), _tags(tags)), columns)
        remember(con, int(entry_id), float(at), found, ids, columns)
        if adopt_first_names(con, found, columns, entityclaims.withdraw):
            ids.clear()  # an adopted first name's entity is gone
    return len(rows)


def reindex_memories(con: Connection, table: str = "entries") -> int:
    """Every memory's mentions read again (`reindex --full`: a newer extractor's names; a
    migration, `table` as backfill_memories')."""
    assert table in ("entries", "all_entries")
    con.execute(
        f"DELETE FROM mentions WHERE entry_id IN (SELECT id FROM {table} WHERE kind = 'memory')"
    )
    return backfill_memories(con, table)
