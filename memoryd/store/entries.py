"""Memories and file chunks (one `entries` table), documents, and the access log. Functions
take an open apsw connection; the Store decides transactions and durability."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memoryd.core.errors import InvalidInput, NotFound
from memoryd.core.timeutil import iso
from memoryd.store import entitybackfill, entityclaims, entityfilter, entitystage, tables
from memoryd.store.db import in_batches
from memoryd.store.dialect import is_postgres
from memoryd.store.protocol import Connection

RECORD_COLUMNS = (
    "e.id, e.kind, e.namespace, e.content, e.content_hash, e.type, e.tags, e.source, e.context, "
    "e.confidence, e.importance, e.created_at, e.updated_at, e.expires_at, e.access_count, "
    "e.last_accessed_at, e.document_id, e.seq, e.start_line, e.end_line, e.heading_path, d.path, "
    "e.tier, e.useful_count, e.validation_count, "
    "(SELECT json_group_array(t.phrase) FROM triggers t WHERE t.entry_id = e.id) AS triggers"
)
RECORD_FROM = "entries e LEFT JOIN documents d ON d.id = e.document_id"
_NAMES = [*(c.strip().split(".")[1] for c in RECORD_COLUMNS.split(",")[:-1]), "triggers"]


@dataclass(frozen=True)
class NewMemory:
    content: str
    content_hash: str
    type: str
    tags: tuple[str, ...] = ()
    source: str | None = None
    context: str | None = None
    confidence: float = 1.0
    importance: int = 5
    expires_at: float | None = None
    namespace: str = "default"
    tier: str = "normal"


@dataclass(frozen=True)
class NewChunk:
    seq: int
    content: str
    content_hash: str
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    props: str | None = None  # the note's front-matter values, for the keyword row (notehead)


@dataclass(frozen=True, slots=True)  # a reconcile holds one per note at once (issue 23.2)
class DocumentInfo:
    path: str
    sha256: str
    size: int
    mtime: float
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Filters:
    """What search and list narrow by. Tags match entries that carry all of the given tags."""

    kind: str | None = None  # 'memory' | 'chunk' | None for both
    types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    source: str | None = None
    path_prefix: str | None = None
    since: float | None = None
    until: float | None = None
    min_importance: int | None = None
    include_expired: bool = False
    namespace: str | None = None  # memories of this namespace ("*": all); chunks are shared
    tiers: tuple[str, ...] = ()
    include_deprecated: bool = False
    entities: tuple[str, ...] = ()  # names every entry must mention (store/entities.py)
    entity_ids: tuple[tuple[int, ...], ...] | None = None  # resolved once: entityread.resolved
    entity_mentions: int | None = None  # ... and the least mentioned name's mentions
    entity_also: tuple[tuple[tuple[str, str, int], ...], ...] = ()  # ... `means`, `also`


def filter_sql(f: Filters, now: float, wide: bool = False) -> tuple[str, list[Any]]:
    """Filters -> (SQL over aliases e/d, parameters). Pure. `wide`: see entityfilter.filter_sql."""
    parts: list[str] = []
    params: list[Any] = []
    if f.kind:
        parts.append("e.kind = ?")
        params.append(f.kind)
    if f.types:
        parts.append(f"e.type IN ({','.join('?' * len(f.types))})")
        params.extend(f.types)
    if f.entities:
        sql, more = entityfilter.filter_sql(f.entities, f.entity_ids, wide and f.entity_mentions)
        parts.append(sql)
        params.extend(more)
    for tag in f.tags:
        parts.append("EXISTS (SELECT 1 FROM json_each(e.tags) WHERE json_each.value = ?)")
        params.append(tag)
    if f.source:
        parts.append("e.source = ?")
        params.append(f.source)
    if f.path_prefix:
        prefix = f.path_prefix.strip("/")
        parts.append("(d.path = ? OR substr(d.path, 1, ?) = ?)")
        params.extend([prefix, len(prefix) + 1, prefix + "/"])
    if f.since is not None:
        parts.append("e.created_at >= ?")
        params.append(f.since)
    if f.until is not None:
        parts.append("e.created_at < ?")
        params.append(f.until)
    if f.min_importance is not None:
        parts.append("e.importance >= ?")
        params.append(f.min_importance)
    if not f.include_expired:
        parts.append("(e.expires_at IS NULL OR e.expires_at > ?)")
        params.append(now)
    if f.namespace and f.namespace != "*":
        parts.append("(e.kind = 'chunk' OR e.namespace = ?)")
        params.append(f.namespace)
    if f.tiers:
        parts.append(f"e.tier IN ({','.join('?' * len(f.tiers))})")
        params.extend(f.tiers)
    elif not f.include_deprecated:
        parts.append("e.tier != 'deprecated'")
    return (" AND ".join(parts) or "1 = 1"), params


def _iso(ts: Any) -> str | None:
    """ISO time of a stored timestamp (timeutil.iso: one stored out of range, an old import's
    1e20, shows as the nearest representable time instead of failing every list and search)."""
    if ts is None:
        return None
    try:
        return iso(float(ts))
    except (TypeError, ValueError):
        return None


def row_to_record(row: Sequence[Any]) -> dict[str, Any]:
    raw = dict(zip(_NAMES, row, strict=True))
    rec: dict[str, Any] = {
        "id": raw["id"],
        "kind": raw["kind"],
        "content": raw["content"],
        "type": raw["type"],
        "tags": json.loads(raw["tags"] or "[]"),
        "importance": raw["importance"],
        "confidence": raw["confidence"],
        "source": raw["source"],
        "context": raw["context"],
        "namespace": raw["namespace"],
        "content_hash": raw["content_hash"],
        "created_at": _iso(raw["created_at"]),
        "updated_at": _iso(raw["updated_at"]),
        "expires_at": _iso(raw["expires_at"]),
        "access_count": raw["access_count"],
        "last_accessed_at": _iso(raw["last_accessed_at"]),
        "tier": raw["tier"],
    }
    if raw["kind"] == "memory":
        rec["triggers"] = json.loads(raw["triggers"] or "[]")
        rec["useful_count"] = raw["useful_count"]
        rec["validation_count"] = raw["validation_count"]
    if raw["kind"] == "chunk":
        rec["path"] = raw["path"]
        rec["heading_path"] = json.loads(raw["heading_path"] or "[]")
        rec["start_line"] = raw["start_line"]
        rec["end_line"] = raw["end_line"]
    return rec


def get(con: Connection, entry_id: int) -> dict[str, Any] | None:
    rows = con.execute(
        f"SELECT {RECORD_COLUMNS} FROM {RECORD_FROM} WHERE e.id = ?", (entry_id,)
    ).fetchall()
    return row_to_record(rows[0]) if rows else None


def get_many(con: Connection, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for part, marks in in_batches(ids):
        sql = f"SELECT {RECORD_COLUMNS} FROM {RECORD_FROM} WHERE e.id IN ({marks})"
        for row in con.execute(sql, part):
            rec = row_to_record(row)
            out[rec["id"]] = rec
    return out


def list_entries(
    con: Connection,
    f: Filters,
    *,
    now: float,
    limit: int,
    offset: int,
    newest_first: bool = True,
    after: tuple[float, int] | None = None,
    keys: list[tuple[float, int]] | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """`after`: a page cursor's (created_at, id); `keys` gets each row's (store/pages.py)."""
    where, params = filter_sql(f, now)
    total = con.execute(f"SELECT count(*) FROM {RECORD_FROM} WHERE {where}", params).fetchall()[0][
        0
    ]
    order = "DESC" if newest_first else "ASC"
    if after is not None:  # the entries after that one, in this order (a row value compared)
        past = "<" if newest_first else ">"
        where, params = f"{where} AND (e.created_at, e.id) {past} (?, ?)", [*params, *after]
    rows = con.execute(
        f"SELECT {RECORD_COLUMNS} FROM {RECORD_FROM} WHERE {where} "
        f"ORDER BY e.created_at {order}, e.id {order} LIMIT ? OFFSET ?",
        [*params, limit, offset],
    ).fetchall()
    if keys is not None:
        keys.extend((float(r[_NAMES.index("created_at")]), int(r[0])) for r in rows)
    return [row_to_record(r) for r in rows], int(total)


def find_memory_by_hash(con: Connection, namespace: str, content_hash: str) -> int | None:
    rows = con.execute(
        "SELECT id FROM entries WHERE kind = 'memory' AND namespace = ? AND content_hash = ?",
        (namespace, content_hash),
    ).fetchall()
    return int(rows[0][0]) if rows else None


def insert_memory(con: Connection, m: NewMemory, now: float) -> tuple[int, bool]:
    """Store a memory; identical content in the same namespace returns (existing id, True)."""
    existing = find_memory_by_hash(con, m.namespace, m.content_hash)
    if existing is not None:
        return existing, True
    rows = con.execute(
        "INSERT INTO entries(kind, namespace, content, content_hash, type, tags, source, context,"
        " confidence, importance, created_at, updated_at, expires_at, tier)"
        " VALUES ('memory', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            m.namespace,
            m.content,
            m.content_hash,
            m.type,
            tables.json_list(m.tags),
            m.source,
            m.context,
            m.confidence,
            m.importance,
            now,
            now,
            m.expires_at,
            m.tier,
        ),
    ).fetchall()
    entityclaims.index_memory(con, int(rows[0][0]), m.content, m.tags)
    return int(rows[0][0]), False


UPDATABLE = (
    "tier",
    "content",
    "content_hash",
    "type",
    "tags",
    "source",
    "context",
    "confidence",
    "importance",
    "expires_at",
    "namespace",
)


def update_memory(con: Connection, entry_id: int, changes: dict[str, Any], now: float) -> None:
    kind = _kind(con, entry_id)
    if kind != "memory":
        raise InvalidInput(
            f"entry {entry_id} is a chunk of a workspace file; edit the file instead"
        )
    unknown = set(changes) - set(UPDATABLE)
    if unknown:
        raise InvalidInput(f"cannot update {', '.join(sorted(unknown))}")
    if not changes:
        return
    values = dict(changes)
    if "tags" in values:
        values["tags"] = tables.json_list(values["tags"])
    if "content_hash" in values or "namespace" in values:
        other = find_memory_by_hash(
            con,
            values.get("namespace") or _namespace(con, entry_id),
            values.get("content_hash") or _content_hash(con, entry_id),
        )
        if other is not None and other != entry_id:
            where = values.get("namespace") or "this namespace"
            raise InvalidInput(
                f"memory {other} in {where} already has this content; delete one of the two "
                "(or change the text) first"
            )
    cols = ", ".join(f"{name} = ?" for name in values)  # names come from UPDATABLE only
    con.execute(
        f"UPDATE entries SET {cols}, updated_at = ? WHERE id = ?",
        [*values.values(), now, entry_id],
    )
    if "content" in values or "tags" in values:
        entityclaims.reindex_memory(con, entry_id)


def delete_memory(con: Connection, entry_id: int) -> None:
    kind = _kind(con, entry_id)
    if kind == "chunk":
        raise InvalidInput(
            f"entry {entry_id} is a chunk of a workspace file; delete or edit the file instead"
        )
    held = entityclaims.held_by(con, "?", (entry_id,))
    con.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
    entityclaims.withdraw(con, held)


def _kind(con: Connection, entry_id: int) -> str:
    rows = con.execute("SELECT kind FROM entries WHERE id = ?", (entry_id,)).fetchall()
    if not rows:
        raise NotFound(f"no entry with id {entry_id}")
    return str(rows[0][0])


def _content_hash(con: Connection, entry_id: int) -> str:
    return str(
        con.execute("SELECT content_hash FROM entries WHERE id = ?", (entry_id,)).fetchall()[0][0]
    )


def document_chunks(con: Connection, path: str) -> list[dict[str, Any]]:
    """The chunks of one indexed document, in order (empty when the path is not indexed)."""
    rows = con.execute(
        f"SELECT {RECORD_COLUMNS} FROM {RECORD_FROM} WHERE d.path = ? ORDER BY e.seq, e.id",
        (path,),
    ).fetchall()
    return [row_to_record(r) for r in rows]


def _namespace(con: Connection, entry_id: int) -> str:
    return str(
        con.execute("SELECT namespace FROM entries WHERE id = ?", (entry_id,)).fetchall()[0][0]
    )


def delete_expired(con: Connection, now: float) -> int:
    """Delete expired memories and expired chunks (front matter `expires`); returns how many."""
    expired = "SELECT id FROM entries WHERE expires_at IS NOT NULL AND expires_at <= ?"
    held = entityclaims.held_by(con, expired, (now,))
    rows = con.execute(
        "DELETE FROM entries WHERE expires_at IS NOT NULL AND expires_at <= ? RETURNING id", (now,)
    ).fetchall()
    entityclaims.withdraw(con, held)
    return len(rows)


def record_access(con: Connection, query: str, ids: Sequence[int], now: float) -> None:
    for rank, entry_id in enumerate(ids, start=1):
        con.execute(
            "INSERT INTO access_log(ts, query, entry_id, rank) VALUES (?, ?, ?, ?)",
            (now, query, entry_id, rank),
        )
    if ids:
        con.execute(
            f"UPDATE entries SET access_count = access_count + 1, last_accessed_at = ?"
            f" WHERE id IN ({','.join('?' * len(ids))})",
            [now, *ids],
        )


# --- documents -------------------------------------------------------------------------------


def documents(con: Connection) -> dict[str, DocumentInfo]:
    return {
        path: DocumentInfo(path, sha, size, mtime)
        for path, sha, size, mtime in con.execute("SELECT path, sha256, size, mtime FROM documents")
    }


def document(con: Connection, path: str) -> DocumentInfo | None:
    rows = con.execute(
        "SELECT path, sha256, size, mtime, meta FROM documents WHERE path = ?", (path,)
    ).fetchall()
    if not rows:
        return None
    p, sha, size, mtime, meta = rows[0]
    return DocumentInfo(p, sha, size, mtime, json.loads(meta))


def replace_document(
    con: Connection,
    doc: DocumentInfo,
    chunks: Iterable[NewChunk],
    *,
    type_: str,
    tags: Sequence[str],
    importance: int,
    expires_at: float | None,
    now: float,
) -> int:
    """Insert or replace a document and all its chunks; returns the number of chunks."""
    rows = con.execute("SELECT id FROM documents WHERE path = ?", (doc.path,)).fetchall()
    meta = json.dumps(doc.meta, default=str)
    if rows:
        doc_id = int(rows[0][0])
        con.execute("DELETE FROM entries WHERE document_id = ?", (doc_id,))
        con.execute(
            "UPDATE documents SET sha256 = ?, size = ?, mtime = ?, indexed_at = ?, meta = ?"
            " WHERE id = ?",
            (doc.sha256, doc.size, doc.mtime, now, meta, doc_id),
        )
    else:
        doc_id = int(
            con.execute(
                "INSERT INTO documents(path, sha256, size, mtime, indexed_at, meta)"
                " VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                (doc.path, doc.sha256, doc.size, doc.mtime, now, meta),
            ).fetchall()[0][0]
        )
    tags_json = tables.json_list(tags)
    count = 0
    for c in chunks:
        # (`props` named only when there are some: a store before m015 / v14 has no such column)
        props = ", props" if c.props is not None else ""
        con.execute(
            "INSERT INTO entries(kind, content, content_hash, type, tags, source, importance,"
            " created_at, updated_at, expires_at, document_id, seq, start_line, end_line,"
            f" heading_path{props}) VALUES ('chunk', ?, ?, ?, ?, 'workspace', ?, ?, ?, ?, ?, ?,"
            f" ?, ?, ?{', ?' if props else ''})",
            (
                c.content,
                c.content_hash,
                type_,
                tags_json,
                importance,
                doc.mtime,
                now,
                expires_at,
                doc_id,
                c.seq,
                c.start_line,
                c.end_line,
                tables.json_list(c.heading_path),
                *([c.props] if props else []),
            ),
        )
        count += 1
    return count


def forget_document_hashes(con: Connection) -> None:
    """Every document looks changed to the next reconcile (reindex full); memories' entities
    are read again now."""
    con.execute("UPDATE documents SET sha256 = '', size = -1")
    entitybackfill.reindex_memories(con)


def touch_document(con: Connection, path: str, size: int, mtime: float) -> None:
    """Same content, new stat (touch, save without change): remember the stat, index nothing."""
    con.execute("UPDATE documents SET size = ?, mtime = ? WHERE path = ?", (size, mtime, path))


def move_document(con: Connection, old: str, new: str, mtime: float) -> None:
    """Content unchanged, new path: chunks (and through their hashes, vectors) stay."""
    con.execute("DELETE FROM documents WHERE path = ?", (new,))
    con.execute("UPDATE documents SET path = ?, mtime = ? WHERE path = ?", (new, mtime, old))


def delete_document(con: Connection, path: str) -> int:
    rows = con.execute(
        "SELECT count(*) FROM entries e JOIN documents d ON d.id = e.document_id WHERE d.path = ?",
        (path,),
    ).fetchall()
    held = entityclaims.held_by_note(con, path) | entitystage.held_of(con, path)
    con.execute("DELETE FROM documents WHERE path = ?", (path,))
    entityclaims.withdraw(con, held)  # what the note declared names nothing now
    return int(rows[0][0])


def counts(con: Connection, namespace: str | None = None) -> dict[str, int]:
    """Memories (of one namespace, or all), documents and chunks."""
    if namespace and namespace != "*":
        memories = con.execute(
            "SELECT count(*) FROM entries WHERE kind = 'memory' AND namespace = ?", (namespace,)
        ).fetchall()[0][0]
    else:
        memories = con.execute("SELECT count(*) FROM entries WHERE kind = 'memory'").fetchall()[0][
            0
        ]
    chunks = con.execute("SELECT count(*) FROM entries WHERE kind = 'chunk'").fetchall()[0][0]
    docs = con.execute("SELECT count(*) FROM documents").fetchall()[0][0]
    return {"memories": int(memories), "documents": int(docs), "chunks": int(chunks)}


def by_type(con: Connection, namespace: str | None = None) -> dict[str, int]:
    sql, params = "SELECT type, count(*) FROM entries WHERE kind = 'memory'", []
    if namespace and namespace != "*":
        sql += " AND namespace = ?"
        params.append(namespace)
    return {t: int(n) for t, n in con.execute(sql + " GROUP BY type ORDER BY type", params)}


def orphan_chunk_count(con: Connection) -> int:
    """Chunks whose document row is gone (should be 0; `status --check` reports them)."""
    return int(
        con.execute(
            "SELECT count(*) FROM entries e WHERE e.kind = 'chunk' AND NOT EXISTS"
            " (SELECT 1 FROM documents d WHERE d.id = e.document_id)"
        ).fetchall()[0][0]
    )


def prune_access_log(con: Connection, before: float) -> int:
    """Forget accesses older than `before`; returns how many rows went."""
    return len(
        con.execute("DELETE FROM access_log WHERE ts < ? RETURNING id", (before,)).fetchall()
    )


def vocabulary(con: Connection) -> list[tuple[str, int]]:
    """Every term of the keyword index with the number of entries that hold it (fts5vocab;
    on PostgreSQL ts_stat over the tsvectors: store/pg/fts.py)."""
    if is_postgres(con):
        from memoryd.store.pg import fts

        return fts.vocabulary(con)
    has_main = con.execute(
        "SELECT 1 FROM main.sqlite_master WHERE name = 'entries_vocab'"
    ).fetchall()
    if has_main:
        table = "main.entries_vocab"
    else:
        con.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.fuzzy_vocab"
            " USING fts5vocab(main, entries_fts, 'row')"
        )
        table = "temp.fuzzy_vocab"
    return [(str(t), int(d)) for t, d in con.execute(f"SELECT term, doc FROM {table}")]


def memory_ids_among(con: Connection, ids: Iterable[int]) -> set[int]:
    """Those of `ids` that are memories now."""
    found: set[int] = set()
    for part, marks in in_batches(sorted(set(ids))):
        rows = con.execute(
            f"SELECT id FROM entries WHERE kind = 'memory' AND id IN ({marks})", part
        ).fetchall()
        found.update(int(r[0]) for r in rows)
    return found


def id_high_water(con: Connection) -> int:
    """The highest entry id ever handed out (AUTOINCREMENT's sequence)."""
    if is_postgres(con):
        rows = con.execute(
            "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM all_entries_id_seq"
        ).fetchall()
    else:
        rows = con.execute("SELECT seq FROM sqlite_sequence WHERE name = 'entries'").fetchall()
    top = con.execute("SELECT coalesce(max(id), 0) FROM entries").fetchall()[0][0]
    return max(int(rows[0][0]) if rows else 0, int(top))


def raise_id_high_water(con: Connection, high: int) -> None:
    """Ids up to `high` are never handed out again (after a restore to an older copy, or an
    import that kept an id)."""
    if is_postgres(con):
        if high < 1:
            return
        # The sequence itself, not max(id): a row just inserted with an id given by hand is
        # already in max(id) but not in the sequence. Never moves it back.
        con.execute(
            "SELECT setval('all_entries_id_seq', greatest(?,"
            " (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM all_entries_id_seq)))",
            (high,),
        )
        return
    if id_high_water(con) >= high:
        return
    con.execute("DELETE FROM sqlite_sequence WHERE name = 'entries'")
    con.execute("INSERT INTO sqlite_sequence(name, seq) VALUES ('entries', ?)", (high,))


def get_meta(con: Connection, key: str) -> str | None:
    rows = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchall()
    return str(rows[0][0]) if rows else None


def set_meta(con: Connection, key: str, value: str) -> None:
    con.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?)"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )
