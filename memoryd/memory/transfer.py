"""Export and import of memories as JSON lines: every field, ids, history and access log,
vectors optional.

A round trip loses nothing: ids, timestamps (unix seconds), tags, triggers, tier, feedback and
access counts, the change history and the access log travel as they are. Import is all or
nothing (one transaction) and de-duplicates by (namespace, content hash): a memory already stored
is skipped, never duplicated or overwritten. An imported memory keeps its id unless this store
has handed that id out before (ids are never reused); then it gets a new one and the answer says
so (`renumbered`).

Validation of the memory fields is memoryd.memory.validation's, through Memories.import_items,
exactly as for add; this module checks the fields only an export carries, and stores checked items.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from memoryd.core.errors import InvalidInput
from memoryd.memory import lifecycle
from memoryd.memory.validation import check_count, check_str, check_time
from memoryd.store import entries, vectors
from memoryd.store import lifecycle as lcstore
from memoryd.store import transfer as tstore
from memoryd.store.protocol import Connection
from memoryd.text import secretguard

# Fields of an exported item that are not memory fields (checked here, not by check_fields).
EXTRAS = frozenset({"id", "kind", "content_hash", "history", "access_log", "vector", "model"})
MAX_LIST = 100_000
# The highest id an import keeps. Ids come from one AUTOINCREMENT sequence, so a kept id moves
# the sequence up to it for good: an item with id 2^53 - 1 would make every later memory and
# chunk id larger than a JSON reader holds exactly (a JavaScript client would then address a
# neighbouring entry), and an export of them could not be imported back. Above this, an item is
# renumbered, leaving 2^32 ids of room below 2^53.
MAX_KEPT_ID = 2**53 - 1 - 2**32


def export(
    con: Connection, *, namespace: str | None = None, with_vectors: bool = False
) -> Iterator[dict[str, Any]]:
    active = vectors.embedding_model(con) if with_vectors else None
    for item in tstore.memory_rows(con, namespace):
        entry_id = item["id"]
        item["tags"] = json.loads(item["tags"])
        item["triggers"] = lcstore.trigger_phrases(con, entry_id)
        item["history"] = [
            {"ts": ts, "field": f, "old": _as_json_text(o), "new": _as_json_text(n)}
            for ts, f, o, n in lcstore.history_rows(con, entry_id)
        ]
        item["access_log"] = [
            {"ts": ts, "query": q, "rank": r} for ts, q, r in lcstore.access_rows(con, entry_id)
        ]
        if active is not None:
            vec = tstore.vector_of(con, active[0], item["content_hash"])
            if vec is not None:
                item["vector"] = np.frombuffer(vec, dtype=np.float32).tolist()
                item["model"] = active[1]
        yield item


def _as_json_text(value: Any) -> str | None:
    """A stored history value as JSON text; a row that is not JSON (an older import stored
    values as given) is exported as a JSON string, so the export imports back."""
    if value is None:
        return None
    try:
        json.loads(value)
    except (TypeError, json.JSONDecodeError):
        return json.dumps(str(value))
    return str(value)


def _list(item: dict[str, Any], key: str) -> list[Any]:
    value = item.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_LIST:
        raise InvalidInput(f"{key}: expected a list of at most {MAX_LIST} objects")
    return value


def _history_value(value: object) -> str | None:
    """An old/new value of an exported change: JSON text, as export writes it (the history
    table stores JSON). Stored as the history of an update would store it: re-encoded, with
    credentials redacted, so an import cannot plant a value `history` cannot read, nor a secret
    the write path would never have kept."""
    if value is None:
        return None
    text = check_str(value, "history", limit=200_000)
    try:
        decoded = json.loads(text)
    except json.JSONDecodeError:
        raise InvalidInput(
            "history: old and new are JSON text, as export writes them (a string is '\"...\"')"
        ) from None
    return json.dumps(lifecycle.redacted(decoded))


def check_extras(item: dict[str, Any]) -> dict[str, Any]:
    """history, access_log, vector and model of an exported item -> checked values."""
    out: dict[str, Any] = {"history": [], "access_log": [], "vector": None, "model": None}
    for h in _list(item, "history"):
        if not isinstance(h, dict) or set(h) - {"ts", "field", "old", "new"}:
            raise InvalidInput("history: each change is {ts, field, old, new}")
        old, new = (_history_value(h.get(k)) for k in ("old", "new"))
        out["history"].append(
            (
                check_time(h.get("ts"), "history.ts"),
                check_str(h.get("field"), "history", limit=64),
                old,
                new,
            )
        )
    for a in _list(item, "access_log"):
        if not isinstance(a, dict) or set(a) - {"ts", "query", "rank"}:
            raise InvalidInput("access_log: each access is {ts, query, rank}")
        out["access_log"].append(
            (
                check_time(a.get("ts"), "access_log.ts"),
                secretguard.redact(check_str(a.get("query", ""), "access_log.query", limit=10_000)),
                check_count(a.get("rank", 1), "access_log.rank"),
            )
        )
    vec, model = item.get("vector"), item.get("model")
    if vec is not None:
        ok = isinstance(vec, list) and 0 < len(vec) <= 8192
        if not ok or not all(
            isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in vec
        ):
            raise InvalidInput("vector: expected a list of finite numbers")
        out["vector"] = vec
        out["model"] = check_str(model, "model", limit=500) if model is not None else None
    return out


def store_items(con: Connection, items: list[dict[str, Any]], *, now: float) -> dict[str, Any]:
    """Insert checked items (Memories.import_items) inside the caller's transaction. An item's
    vector is stored when it is of the model texts are embedded with (a new daemon's, whose first
    backfill of the notes may take hours, too: every vector dropped was embedded again)."""
    active = vectors.embedding_model(con)
    counts: dict[str, Any] = {"imported": 0, "skipped_duplicates": 0, "vectors": 0}
    renumbered: list[dict[str, int]] = []
    ids: list[int] = []
    # An id this store has handed out before (to a memory or a chunk, deleted since or not) is
    # never handed out again: an agent holding "#12" of a deleted entry must not find another
    # thing there. Only ids above the store's high-water mark at the start are kept.
    high = entries.id_high_water(con)
    for v in items:
        if tstore.memory_by_hash(con, v["namespace"], v["content_hash"]) is not None:
            counts["skipped_duplicates"] += 1
            continue
        wanted = v.get("id")
        keep = wanted is not None and high < wanted <= MAX_KEPT_ID and tstore.free(con, wanted)
        entry_id = tstore.insert_memory(con, v, wanted if keep else None)
        if wanted is not None and wanted != entry_id:
            renumbered.append({"from": wanted, "to": entry_id})
        ids.append(entry_id)
        lifecycle.set_triggers(con, entry_id, v.get("triggers") or [])
        for ts, field, old, new in v["history"]:
            lcstore.add_history(con, entry_id, ts, field, old, new)
        for ts, query, rank in v["access_log"]:
            lcstore.add_access(con, entry_id, ts, query, rank)
        vec = v.get("vector")
        if vec is not None and active is not None and v.get("model") == active[1]:
            arr = np.asarray(vec, dtype=np.float32)
            if arr.shape == (active[2],):
                counts["vectors"] += vectors.store(con, active[0], [(v["content_hash"], arr)], now)
        counts["imported"] += 1
    counts["ids"] = ids
    counts["renumbered"] = renumbered
    return counts


def plan_items(con: Connection, items: list[dict[str, Any]]) -> dict[str, Any]:
    """What store_items would do, without writing: counts only."""
    seen: set[tuple[str, str]] = set()
    counts: dict[str, Any] = {"imported": 0, "skipped_duplicates": 0, "vectors": 0}
    for v in items:
        key = (v["namespace"], v["content_hash"])
        if key in seen or tstore.memory_by_hash(con, *key) is not None:
            counts["skipped_duplicates"] += 1
        else:
            counts["imported"] += 1
        seen.add(key)
    return counts


def parse_lines(text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, item) for each non-blank line of an export file."""
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"line {n}: not JSON ({exc.msg})") from None
