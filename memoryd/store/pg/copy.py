"""SQL of `memoryd store migrate --to postgres`: read a SQLite store, write it into PostgreSQL.

The reading functions take an apsw connection (inside one read transaction: a consistent
snapshot), the writing ones a psycopg connection inside the caller's transaction. Rows travel
with COPY (binary for the vectors), so a 10K-chunk store copies in seconds.

Ids: memories keep theirs (agents hold them). Documents and chunks keep theirs too when no row of
the target has any of them (the first store copied into a database); otherwise they get new ids
from the target's sequences, and their history, triggers, access log and links follow. Models
are matched by key; embeddings by (model, content hash), so a text another store already
embedded is not stored twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import psycopg

from memoryd.store import tables
from memoryd.store import vectors as vstore
from memoryd.store.pg import vectors as pgvec
from memoryd.store.pg.conn import PgConnection
from memoryd.store.protocol import Connection, one

Progress = Callable[[str, int, int], None]

ENTRY_COLUMNS = tables.names(tables.ENTRIES)
DOCUMENT_COLUMNS = tables.names(tables.DOCUMENTS)
LINK_COLUMNS = tables.names(tables.LINKS)[1:]  # a link's id is the new database's
LOG_MARK_COLUMNS = tables.names(tables.LOG_MARKS)
PENDING_COLUMNS = tables.names(tables.ENTITY_PENDING)
MENTION_COLUMNS = tables.names(tables.MENTIONS)
BATCH = 5000  # rows between two progress reports
MARKER = "sqlite_copy:"  # meta key prefix: a store copied into this database, by workspace id


# -- the SQLite side --------------------------------------------------------------------------


def count_rows(con: Connection, sql: str, params: Iterable[Any] = ()) -> int:
    return int(con.execute(sql, tuple(params)).fetchall()[0][0])


def sqlite_models(con: Connection) -> list[dict[str, Any]]:
    cols = ("id", "key", "name", "dim", "created_at", "active", "complete")
    rows = con.execute(f"SELECT {', '.join(cols)} FROM models ORDER BY id").fetchall()
    return [dict(zip(cols, r, strict=True)) for r in rows]


def sqlite_counts(con: Connection) -> dict[str, int]:
    """What a copy must carry, counted in the SQLite store."""
    out = {
        "memories": count_rows(con, "SELECT count(*) FROM entries WHERE kind = 'memory'"),
        "chunks": count_rows(con, "SELECT count(*) FROM entries WHERE kind = 'chunk'"),
        "documents": count_rows(con, "SELECT count(*) FROM documents"),
        "history": count_rows(con, "SELECT count(*) FROM history"),
        "triggers": count_rows(con, "SELECT count(*) FROM triggers"),
        "access_log": count_rows(con, "SELECT count(*) FROM access_log"),
        "links": count_rows(con, "SELECT count(*) FROM links"),
        "log_marks": count_rows(con, "SELECT count(*) FROM log_marks"),
        "mentions": count_rows(con, "SELECT count(*) FROM mentions"),
        "vectors": 0,
    }
    for m in sqlite_models(con):
        out["vectors"] += count_rows(
            con,
            f"SELECT count(*) FROM embeddings m JOIN {tables.table_name(m['id'])} v"
            " ON v.rowid = m.id WHERE m.model_id = ?",
            (m["id"],),
        )
    return out


def sqlite_entry_ids(con: Connection) -> tuple[list[int], list[int], list[int]]:
    """(memory ids, chunk ids, document ids)."""
    mem: list[int] = []
    chunk: list[int] = []
    for i, kind in con.execute("SELECT id, kind FROM entries ORDER BY id"):
        (mem if kind == "memory" else chunk).append(int(i))
    docs = [int(r[0]) for r in con.execute("SELECT id FROM documents ORDER BY id")]
    return mem, chunk, docs


def sqlite_memory_keys(con: Connection) -> list[tuple[str, str]]:
    return [
        (str(n), str(h))
        for n, h in con.execute("SELECT namespace, content_hash FROM entries WHERE kind = 'memory'")
    ]


def sqlite_rows(
    con: Connection, table: str, columns: tuple[str, ...], order: str = "rowid"
) -> Iterator[tuple[Any, ...]]:
    yield from con.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}")


def sqlite_vectors(
    con: Connection, model_id: int
) -> Iterator[tuple[str, float, float | None, bytes]]:
    """(content hash, created_at, orphaned_at, float32 blob) of a model's vectors."""
    for h, created, orphaned, emb in con.execute(
        "SELECT m.content_hash, m.created_at, m.orphaned_at, v.embedding FROM embeddings m"
        f" JOIN {tables.table_name(model_id)} v ON v.rowid = m.id WHERE m.model_id = ?"
        " ORDER BY m.id",
        (model_id,),
    ):
        yield str(h), float(created), orphaned, vstore.blob(emb)


# -- the PostgreSQL side ------------------------------------------------------------------------


def marker(raw: psycopg.Connection, workspace: str) -> dict[str, Any] | None:
    """What an earlier copy of this workspace's store recorded, or None."""
    row = raw.execute("SELECT value FROM meta WHERE key = %s", [MARKER + workspace]).fetchone()
    return json.loads(row[0]) if row else None


def set_marker(raw: psycopg.Connection, workspace: str, value: dict[str, Any]) -> None:
    raw.execute(
        "INSERT INTO meta(key, value) VALUES (%s, %s)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [MARKER + workspace, json.dumps(value)],
    )


def taken_ids(raw: psycopg.Connection, table: str, ids: list[int]) -> list[int]:
    """The ids among `ids` a row of the target holds (table: all_entries or all_documents)."""
    if not ids:
        return []
    rows = raw.execute(
        f"SELECT id FROM {table} WHERE id = ANY(%s) ORDER BY id LIMIT 20", [ids]
    ).fetchall()
    return [int(r[0]) for r in rows]


def taken_memory_texts(raw: psycopg.Connection, keys: list[tuple[str, str]]) -> list[int]:
    """Ids of target memories with the same (namespace, content hash) as one of `keys`."""
    if not keys:
        return []
    rows = raw.execute(
        "SELECT e.id FROM all_entries e JOIN unnest(%s::text[], %s::text[]) AS k(ns, h)"
        " ON e.namespace = k.ns AND e.content_hash = k.h WHERE e.kind = 'memory'"
        " ORDER BY e.id LIMIT 20",
        [[k[0] for k in keys], [k[1] for k in keys]],
    ).fetchall()
    return [int(r[0]) for r in rows]


def workspace_documents(raw: psycopg.Connection, workspace: str) -> int:
    return int(
        one(raw.execute("SELECT count(*) FROM all_documents WHERE workspace = %s", [workspace]))[0]
    )


def drop_workspace_notes(raw: psycopg.Connection, workspace: str) -> int:
    """Remove a workspace's documents (their chunks, links and triggers go with them)."""
    cur = raw.execute("DELETE FROM all_documents WHERE workspace = %s", [workspace])
    return max(cur.rowcount, 0)


def raise_sequence(raw: psycopg.Connection, table: str, high: int) -> None:
    """The table's identity sequence moves past `high` and past every id in the table (never
    back): ids copied by hand, and ids the SQLite store handed out once, are not handed out."""
    raw.execute(
        f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), greatest(%s, 1,"
        f" (SELECT coalesce(max(id), 0) FROM {table}),"
        f" (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {table}_id_seq)))",
        [int(high)],
    )


def new_ids(raw: psycopg.Connection, table: str, n: int) -> list[int]:
    """n fresh ids from the table's identity sequence."""
    if n == 0:
        return []
    rows = raw.execute(
        f"SELECT nextval(pg_get_serial_sequence('{table}', 'id')) FROM generate_series(1, %s)",
        [n],
    ).fetchall()
    return [int(r[0]) for r in rows]


def copy_rows(
    raw: psycopg.Connection,
    table: str,
    columns: tuple[str, ...],
    rows: Iterable[tuple[Any, ...]],
    *,
    label: str,
    total: int,
    progress: Progress,
) -> int:
    """COPY rows into table; returns how many were sent."""
    n = 0
    with raw.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as cp:
        for row in rows:
            cp.write_row(row)
            n += 1
            if n % BATCH == 0:
                progress(label, n, total)
    progress(label, n, total)
    return n


def target_model(raw: psycopg.Connection, m: dict[str, Any]) -> tuple[int, bool]:
    """The target's id of a source model (matched by key), created with its vector table when
    absent: (id, created). A new model is active only when the target has no active model."""
    row = raw.execute("SELECT id, dim FROM models WHERE key = %s", [m["key"]]).fetchone()
    if row is not None:
        if int(row[1]) != int(m["dim"]):
            raise ValueError(
                f"model {m['key']} has dimension {row[1]} in the target, {m['dim']} here"
            )
        return int(row[0]), False
    has_active = raw.execute("SELECT 1 FROM models WHERE active = 1").fetchone() is not None
    active = 0 if has_active else int(m["active"])
    complete = int(m["complete"]) if active else 0
    new_id = int(
        one(
            raw.execute(
                "INSERT INTO models(key, name, dim, created_at, active, complete)"
                " VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
                [m["key"], m["name"], int(m["dim"]), float(m["created_at"]), active, complete],
            )
        )[0]
    )
    # The HNSW index is built after the rows are in (copy_vectors): one bulk build is several
    # times faster than inserting 10K vectors into the graph one by one.
    raw.execute(
        f"CREATE TABLE {tables.table_name(new_id)}("
        " rowid BIGINT PRIMARY KEY REFERENCES embeddings(id) ON DELETE CASCADE,"
        f" embedding vector({int(m['dim'])}) NOT NULL)"
    )
    return new_id, True


def copy_vectors(
    raw: psycopg.Connection,
    model_id: int,
    dim: int,
    rows: Iterable[tuple[str, float, float | None, bytes]],
    *,
    total: int,
    progress: Progress,
) -> int:
    """Store a model's vectors (binary COPY into a temporary table, then one INSERT each into
    embeddings and vec_N; texts the target has a vector for already keep theirs). Returns how
    many of the given texts have a vector in the target afterwards."""
    raw.execute(
        "CREATE TEMP TABLE IF NOT EXISTS memoryd_copy_vec(content_hash TEXT PRIMARY KEY,"
        " created_at DOUBLE PRECISION, orphaned_at DOUBLE PRECISION, embedding vector)"
        " ON COMMIT DROP"
    )
    raw.execute("TRUNCATE memoryd_copy_vec")
    n = 0
    with (
        raw.cursor() as cur,
        cur.copy(
            "COPY memoryd_copy_vec (content_hash, created_at, orphaned_at, embedding)"
            " FROM STDIN WITH (FORMAT BINARY)"
        ) as cp,
    ):
        cp.set_types(["text", "float8", "float8", "vector"])
        for h, created, orphaned, emb in rows:
            cp.write_row([h, created, orphaned, np.frombuffer(emb, dtype=np.float32)])
            n += 1
            if n % BATCH == 0:
                progress("vectors", n, total)
    progress("vectors", n, total)
    raw.execute(
        "INSERT INTO embeddings(model_id, content_hash, created_at, orphaned_at)"
        " SELECT %s, content_hash, created_at, orphaned_at FROM memoryd_copy_vec"
        " ORDER BY content_hash ON CONFLICT (model_id, content_hash) DO NOTHING",
        [model_id],
    )
    table = tables.table_name(model_id)
    raw.execute(
        f"INSERT INTO {table}(rowid, embedding) SELECT e.id, t.embedding"
        " FROM memoryd_copy_vec t JOIN embeddings e"
        " ON e.model_id = %s AND e.content_hash = t.content_hash"
        " ON CONFLICT (rowid) DO NOTHING",
        [model_id],
    )
    progress("vectors stored", n, total)
    raw.execute("SET LOCAL maintenance_work_mem = '256MB'")
    pgvec.create_table(PgConnection(raw), table, dim)  # the index, when the table is new
    progress("vector index", n, total)
    return int(
        one(
            raw.execute(
                f"SELECT count(*) FROM memoryd_copy_vec t JOIN embeddings e"
                f" ON e.model_id = %s AND e.content_hash = t.content_hash"
                f" JOIN {table} v ON v.rowid = e.id",
                [model_id],
            )
        )[0]
    )


def copy_entities(raw: psycopg.Connection, lite: Connection) -> dict[int, int]:
    """The SQLite store's entities in the target, matched by key (one the target has keeps its
    row): {SQLite id: target id}. Their counts and relations are counted again once the
    mentions are in (recount_entities)."""
    raw.execute(
        "CREATE TEMP TABLE IF NOT EXISTS memoryd_copy_entities(id BIGINT, key TEXT, name TEXT,"
        " type TEXT) ON COMMIT DROP"
    )
    raw.execute("TRUNCATE memoryd_copy_entities")
    with (
        raw.cursor() as cur,
        cur.copy("COPY memoryd_copy_entities (id, key, name, type) FROM STDIN") as cp,
    ):
        for row in lite.execute("SELECT id, key, name, type FROM entities ORDER BY id"):
            cp.write_row(tuple(row))
    raw.execute(
        "INSERT INTO entities(key, name, type) SELECT key, name, type FROM memoryd_copy_entities"
        " ORDER BY id ON CONFLICT (key) DO NOTHING"
    )
    return {
        int(a): int(b)
        for a, b in raw.execute(
            "SELECT c.id, e.id FROM memoryd_copy_entities c JOIN entities e ON e.key = c.key"
        ).fetchall()
    }


def recount_entities(raw: psycopg.Connection) -> None:
    """The entities' counts and relations, from every mention (the copied ones too)."""
    from memoryd.store import entities

    entities.recount(PgConnection(raw))


def table_count(raw: psycopg.Connection, table: str) -> int:
    return int(one(raw.execute(f"SELECT count(*) FROM {table}"))[0])


def target_counts(
    raw: psycopg.Connection, workspace: str, memory_ids: list[int], entry_ids: list[int]
) -> dict[str, int]:
    """What the target holds of this copy: its memories (by id), this workspace's chunks,
    documents and links, and the triggers of the copied entries. History and the access log
    (rows without a key of their own) are counted by the caller, before and after."""

    def count(sql: str, params: list[Any]) -> int:
        return int(one(raw.execute(sql, params))[0])

    return {
        "memories": count(
            "SELECT count(*) FROM all_entries WHERE kind = 'memory' AND id = ANY(%s)",
            [memory_ids],
        ),
        "chunks": count(
            "SELECT count(*) FROM all_entries WHERE kind = 'chunk' AND workspace = %s",
            [workspace],
        ),
        "documents": count("SELECT count(*) FROM all_documents WHERE workspace = %s", [workspace]),
        "links": count(
            "SELECT count(*) FROM links l JOIN all_documents d ON d.id = l.document_id"
            " WHERE d.workspace = %s",
            [workspace],
        ),
        "log_marks": count(
            "SELECT count(*) FROM log_marks l JOIN all_documents d ON d.id = l.document_id"
            " WHERE d.workspace = %s",
            [workspace],
        ),
        "triggers": count("SELECT count(*) FROM triggers WHERE entry_id = ANY(%s)", [entry_ids]),
        "mentions": count("SELECT count(*) FROM mentions WHERE entry_id = ANY(%s)", [entry_ids]),
    }
