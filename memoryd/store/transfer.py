"""SQL of export and import: memory rows with every field, inserts that keep ids."""

from __future__ import annotations

from typing import Any

from memoryd.store import entityclaims, tables
from memoryd.store.dialect import is_postgres
from memoryd.store.entries import raise_id_high_water
from memoryd.store.protocol import Connection
from memoryd.store.tables import table_name
from memoryd.store.vectors import blob

EXPORT_FIELDS = (
    "id",
    "content",
    "content_hash",
    "type",
    "tags",
    "source",
    "context",
    "confidence",
    "importance",
    "tier",
    "namespace",
    "created_at",
    "updated_at",
    "expires_at",
    "access_count",
    "last_accessed_at",
    "useful_count",
    "validation_count",
)


def memory_rows(con: Connection, namespace: str | None = None) -> list[dict[str, Any]]:
    where, params = "kind = 'memory'", []
    if namespace and namespace != "*":
        where += " AND namespace = ?"
        params.append(namespace)
    rows = con.execute(
        f"SELECT {', '.join(EXPORT_FIELDS)} FROM entries WHERE {where} ORDER BY id", params
    ).fetchall()
    return [dict(zip(EXPORT_FIELDS, row, strict=True)) for row in rows]


def vector_of(con: Connection, model_id: int, content_hash: str) -> bytes | None:
    rows = con.execute(
        f"SELECT v.embedding FROM embeddings m JOIN {table_name(model_id)} v ON v.rowid = m.id"
        " WHERE m.model_id = ? AND m.content_hash = ?",
        (model_id, content_hash),
    ).fetchall()
    return blob(rows[0][0]) if rows else None


def memory_by_hash(con: Connection, namespace: str, content_hash: str) -> int | None:
    rows = con.execute(
        "SELECT id FROM entries WHERE kind = 'memory' AND namespace = ? AND content_hash = ?",
        (namespace, content_hash),
    ).fetchall()
    return int(rows[0][0]) if rows else None


def free(con: Connection, entry_id: int) -> bool:
    """No entry holds this id now (an id used before and deleted may come back with its
    memory: the import restores what was exported). On PostgreSQL the table itself is asked:
    the `entries` view hides the other workspaces' chunks, whose ids are taken all the same."""
    table = "all_entries" if is_postgres(con) else "entries"
    return not con.execute(f"SELECT 1 FROM {table} WHERE id = ?", (entry_id,)).fetchall()


def insert_memory(con: Connection, v: dict[str, Any], entry_id: int | None) -> int:
    """Insert a checked memory with every field; entry_id None: the next id."""
    # The id column is named only when the id is given: PostgreSQL's identity column takes its
    # default only when the column is left out (an explicit NULL breaks NOT NULL).
    id_col, id_mark = ("id, ", "?, ") if entry_id is not None else ("", "")
    rows = con.execute(
        f"INSERT INTO entries({id_col}kind, namespace, content, content_hash, type, tags, source,"
        " context, confidence, importance, tier, created_at, updated_at, expires_at,"
        " access_count, last_accessed_at, useful_count, validation_count)"
        f" VALUES ({id_mark}'memory', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " RETURNING id",
        (
            *(() if entry_id is None else (entry_id,)),
            v["namespace"],
            v["content"],
            v["content_hash"],
            v["type"],
            tables.json_list(v.get("tags") or ()),
            v.get("source"),
            v.get("context"),
            v.get("confidence", 1.0),
            v["importance"],
            v.get("tier") or "normal",
            v["created_at"],
            v["updated_at"],
            v.get("expires_at"),
            v.get("access_count", 0),
            v.get("last_accessed_at"),
            v.get("useful_count", 0),
            v.get("validation_count", 0),
        ),
    ).fetchall()
    if entry_id is not None and is_postgres(con):
        # SQLite's AUTOINCREMENT moves past an id given by hand; a PostgreSQL sequence does not
        raise_id_high_water(con, entry_id)
    entityclaims.index_memory(con, int(rows[0][0]), v["content"], v.get("tags") or ())
    return int(rows[0][0])
