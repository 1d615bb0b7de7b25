"""Read-only queries behind `note.list` and `recent_activity`: documents and their chunks, recent
memories. Functions take an open apsw connection."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memoryd.store.db import in_batches
from memoryd.store.protocol import Connection


def _prefix_sql(prefix: str) -> tuple[str, list[Any]]:
    if not prefix:
        return "1 = 1", []
    return "(d.path = ? OR substr(d.path, 1, ?) = ?)", [prefix, len(prefix) + 1, prefix + "/"]


def list_documents(
    con: Connection, prefix: str, limit: int, offset: int, after: str | None = None
) -> tuple[list[dict[str, Any]], int]:
    """Indexed files under `prefix` ('' for all), by path: path, size, mtime, meta, title;
    `after` (the last path of the page before) starts after that path."""
    where, params = _prefix_sql(prefix)
    total = con.execute(f"SELECT count(*) FROM documents d WHERE {where}", params).fetchall()[0][0]
    if after is not None:
        where, params = f"{where} AND d.path > ?", [*params, after]
    rows = con.execute(
        f"SELECT d.id, d.path, d.size, d.mtime, d.meta FROM documents d WHERE {where}"
        " ORDER BY d.path LIMIT ? OFFSET ?",
        [*params, limit, offset],
    ).fetchall()
    return _with_details(con, rows), int(total)


def recent_documents(con: Connection, since: float | None, limit: int) -> list[dict[str, Any]]:
    """Indexed files, most recently modified first (file mtime)."""
    # Conditions are left out rather than written `? IS NULL OR ...`: PostgreSQL cannot type a
    # parameter that is only compared with NULL.
    where, params = ("d.mtime >= ?", [since]) if since is not None else ("1 = 1", [])
    rows = con.execute(
        f"SELECT d.id, d.path, d.size, d.mtime, d.meta FROM documents d WHERE {where}"
        " ORDER BY d.mtime DESC, d.path LIMIT ?",
        [*params, limit],
    ).fetchall()
    return _with_details(con, rows)


def _with_details(con: Connection, rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    ids = [int(r[0]) for r in rows]
    headings, tags = _first_headings(con, ids), _tags(con, ids)
    out = []
    for doc_id, path, size, mtime, meta in rows:
        out.append(
            {
                "path": path,
                "size": int(size),
                "mtime": float(mtime),
                "meta": json.loads(meta or "{}"),
                "heading": headings.get(int(doc_id)),
                "tags": tags.get(int(doc_id), []),
            }
        )
    return out


def _first_headings(con: Connection, ids: list[int]) -> dict[int, str]:
    """The first heading of each document (the top of its first chunk's heading path)."""
    out: dict[int, str] = {}
    for part, marks in in_batches(ids):
        for doc_id, heading_path in con.execute(
            "SELECT document_id, heading_path FROM entries WHERE kind = 'chunk'"
            f" AND document_id IN ({marks}) AND heading_path IS NOT NULL"
            " AND heading_path != '[]' ORDER BY document_id, seq",
            part,
        ):
            if int(doc_id) not in out:
                path = json.loads(heading_path or "[]")
                if path:
                    out[int(doc_id)] = str(path[0])
    return out


def _tags(con: Connection, ids: list[int]) -> dict[int, list[str]]:
    """Every tag carried by any chunk of each document (front matter and inline tags)."""
    out: dict[int, list[str]] = {}
    for part, marks in in_batches(ids):
        for doc_id, tag in con.execute(
            "SELECT DISTINCT e.document_id, j.value FROM entries e, json_each(e.tags) j"
            f" WHERE e.kind = 'chunk' AND e.document_id IN ({marks})"
            " ORDER BY e.document_id, j.value",
            part,
        ):
            out.setdefault(int(doc_id), []).append(str(tag))
    return out


def recent_memories(
    con: Connection, namespace: str | None, since: float | None, limit: int, now: float
) -> list[dict[str, Any]]:
    """Memories most recently added or changed first: id, namespace, type, tier, content,
    created_at, updated_at (unix seconds). namespace None = every namespace. Expired ones are
    left out, as from search and list, until the expiry job deletes them."""
    where = ["kind = 'memory'", "(expires_at IS NULL OR expires_at > ?)"]
    params: list[object] = [now]
    if namespace is not None:
        where.append("namespace = ?")
        params.append(namespace)
    if since is not None:
        where.append("coalesce(updated_at, created_at) >= ?")
        params.append(since)
    rows = con.execute(
        "SELECT id, namespace, type, tier, content, tags, created_at, updated_at FROM entries"
        f" WHERE {' AND '.join(where)}"
        " ORDER BY coalesce(updated_at, created_at) DESC, id DESC LIMIT ?",
        [*params, limit],
    ).fetchall()
    return [
        {
            "id": int(i),
            "namespace": ns,
            "type": t,
            "tier": tier,
            "content": content,
            "tags": json.loads(tags or "[]"),
            "created_at": created,
            "updated_at": updated if updated is not None else created,
        }
        for i, ns, t, tier, content, tags, created, updated in rows
    ]
