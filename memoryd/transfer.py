"""Export and import of memories as JSON lines: every field, vectors optional.

A round trip loses nothing: timestamps travel as unix seconds, tags, triggers, tier, feedback
counts and access counts as they are. Import de-duplicates by (namespace, content hash): a
memory already stored is skipped, never duplicated or overwritten.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import apsw
import numpy as np

from memoryd import lifecycle
from memoryd.errors import InvalidInput
from memoryd.markdown import sha256_text
from memoryd.memories import check_confidence, check_importance, check_name, check_tags
from memoryd.store import vectors

FIELDS = (
    "content",
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


def export(
    con: apsw.Connection, *, namespace: str | None = None, with_vectors: bool = False
) -> Iterator[dict[str, Any]]:
    active = vectors.active_model(con) if with_vectors else None
    where, params = "kind = 'memory'", []
    if namespace and namespace != "*":
        where += " AND namespace = ?"
        params.append(namespace)
    cols = ", ".join(FIELDS)
    rows = con.execute(
        f"SELECT id, content_hash, {cols} FROM entries WHERE {where} ORDER BY id", params
    ).fetchall()
    for row in rows:
        entry_id, content_hash, *values = row
        item: dict[str, Any] = dict(zip(FIELDS, values, strict=True))
        item["tags"] = json.loads(item["tags"])
        item["content_hash"] = content_hash
        item["triggers"] = [
            str(r[0])
            for r in con.execute(
                "SELECT phrase FROM triggers WHERE entry_id = ? ORDER BY rowid", (entry_id,)
            )
        ]
        if active is not None:
            found = con.execute(
                f"SELECT v.embedding FROM embeddings m JOIN {vectors.table_name(active[0])} v"
                " ON v.rowid = m.id WHERE m.model_id = ? AND m.content_hash = ?",
                (active[0], content_hash),
            ).fetchall()
            if found:
                item["vector"] = np.frombuffer(found[0][0], dtype=np.float32).tolist()
                item["model"] = active[1]
        yield item


def _number(item: dict[str, Any], key: str, *, optional: bool = True) -> float | None:
    value = item.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{key}: expected unix seconds, got {value!r}")
    return float(value)


def import_items(
    con: apsw.Connection, items: Iterable[dict[str, Any]], *, now: float, max_bytes: int
) -> dict[str, int]:
    """Insert what is not stored yet (by namespace + content hash). Returns counts."""
    active = vectors.active_model(con)
    counts = {"imported": 0, "skipped_duplicates": 0, "vectors": 0}
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            raise InvalidInput(f"line {n}: expected an object with a content string")
        content = item["content"]
        if not content.strip() or len(content.encode()) > max_bytes:
            raise InvalidInput(f"line {n}: content is empty or over {max_bytes} bytes")
        content_hash = sha256_text(content)
        namespace = check_name(item.get("namespace") or "default", "namespace")
        if con.execute(
            "SELECT 1 FROM entries WHERE kind = 'memory' AND namespace = ? AND content_hash = ?",
            (namespace, content_hash),
        ).fetchall():
            counts["skipped_duplicates"] += 1
            continue
        created = _number(item, "created_at") or now
        row = con.execute(
            "INSERT INTO entries(kind, namespace, content, content_hash, type, tags, source,"
            " context, confidence, importance, tier, created_at, updated_at, expires_at,"
            " access_count, last_accessed_at, useful_count, validation_count)"
            " VALUES ('memory', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                namespace,
                content,
                content_hash,
                check_name(item.get("type") or "fact", "type"),
                json.dumps(list(check_tags(item.get("tags") or []))),
                item.get("source"),
                item.get("context"),
                check_confidence(item.get("confidence", 1.0)),
                check_importance(item.get("importance", 5)),
                lifecycle.check_tier(item.get("tier") or "normal"),
                created,
                _number(item, "updated_at") or created,
                _number(item, "expires_at"),
                int(item.get("access_count") or 0),
                _number(item, "last_accessed_at"),
                int(item.get("useful_count") or 0),
                int(item.get("validation_count") or 0),
            ),
        ).fetchall()
        entry_id = int(row[0][0])
        lifecycle.set_triggers(con, entry_id, lifecycle.check_triggers(item.get("triggers") or []))
        vec = item.get("vector")
        if vec is not None and active is not None and item.get("model") == active[1]:
            arr = np.asarray(vec, dtype=np.float32)
            if arr.shape == (active[2],):
                counts["vectors"] += vectors.store(con, active[0], [(content_hash, arr)], now)
        counts["imported"] += 1
    return counts


def parse_lines(text: str) -> Iterator[dict[str, Any]]:
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"line {n}: not JSON ({exc.msg})") from None
