"""SQL of the memory lifecycle: trigger phrases, change history, feedback, tiers, selections.

Functions take an open connection; the caller (memoryd.memory.memories, memoryd.memory.lifecycle)
picks the transaction. Pure rules (tiers, phrase folding, budgets) live in
memoryd.memory.lifecycle.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from memoryd.store import entityclaims
from memoryd.store.db import in_batches
from memoryd.store.dialect import is_postgres
from memoryd.store.protocol import Connection


def set_triggers(con: Connection, entry_id: int, phrases: Sequence[tuple[str, str]]) -> None:
    """Replace a memory's trigger phrases: (phrase, normalised phrase) pairs."""
    con.execute("DELETE FROM triggers WHERE entry_id = ?", (entry_id,))
    for phrase, norm in phrases:
        con.execute(
            "INSERT INTO triggers(entry_id, phrase, norm) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (entry_id, phrase, norm),
        )


def trigger_norms(con: Connection) -> list[tuple[int, str]]:
    return [
        (int(i), str(n))
        for i, n in con.execute(
            "SELECT t.entry_id, t.norm FROM triggers t JOIN entries e ON e.id = t.entry_id"
        )
    ]


def trigger_phrases(con: Connection, entry_id: int) -> list[str]:
    return [
        str(r[0])
        for r in con.execute(
            "SELECT phrase FROM triggers WHERE entry_id = ? ORDER BY rowid", (entry_id,)
        )
    ]


def add_history(
    con: Connection, entry_id: int, ts: float, field: str, old: str | None, new: str | None
) -> None:
    con.execute(
        "INSERT INTO history(entry_id, ts, field, old, new) VALUES (?, ?, ?, ?, ?)",
        (entry_id, ts, field, old, new),
    )


def history_rows(con: Connection, entry_id: int) -> list[tuple[float, str, Any, Any]]:
    return [
        (float(ts), str(f), o, n)
        for ts, f, o, n in con.execute(
            "SELECT ts, field, old, new FROM history WHERE entry_id = ? ORDER BY ts, id",
            (entry_id,),
        )
    ]


def history_page(
    con: Connection, entry_id: int, after: tuple[float, int] | None, limit: int
) -> tuple[list[tuple[float, int, str, Any, Any]], int]:
    """At most `limit` history rows of an entry after (ts, id) `after`, oldest first, with
    their ids, and how many rows the entry has."""
    total = int(
        con.execute("SELECT count(*) FROM history WHERE entry_id = ?", (entry_id,)).fetchall()[0][0]
    )
    ts, rid = after if after is not None else (float("-inf"), 0)
    rows = con.execute(
        "SELECT ts, id, field, old, new FROM history WHERE entry_id = ?"
        " AND (ts > ? OR (ts = ? AND id > ?)) ORDER BY ts, id LIMIT ?",
        (entry_id, ts, ts, rid, limit),
    ).fetchall()
    return [(float(t), int(i), str(f), o, n) for t, i, f, o, n in rows], total


def access_rows(con: Connection, entry_id: int) -> list[tuple[float, str, int]]:
    return [
        (float(ts), str(q), int(r))
        for ts, q, r in con.execute(
            "SELECT ts, query, rank FROM access_log WHERE entry_id = ? ORDER BY ts, id",
            (entry_id,),
        )
    ]


def add_access(con: Connection, entry_id: int, ts: float, query: str, rank: int) -> None:
    con.execute(
        "INSERT INTO access_log(ts, query, entry_id, rank) VALUES (?, ?, ?, ?)",
        (ts, query, entry_id, rank),
    )


def kind_of(con: Connection, entry_id: int) -> str | None:
    """An entry's kind ("memory" or "chunk"), or None when there is no entry with that id."""
    rows = con.execute("SELECT kind FROM entries WHERE id = ?", (entry_id,)).fetchall()
    return str(rows[0][0]) if rows else None


def feedback(con: Connection, entry_id: int) -> tuple[str, str, int, int, float] | None:
    """(kind, tier, useful_count, validation_count, confidence) or None. On PostgreSQL the row stays
    locked until the transaction ends: two daemons validating the same memory at once would
    otherwise both count from the same numbers, and one outcome would be lost."""
    lock = " FOR UPDATE" if is_postgres(con) else ""  # SQLite: one writer at a time anyway
    rows = con.execute(
        "SELECT kind, tier, useful_count, validation_count, confidence FROM entries WHERE id = ?"
        + lock,
        (entry_id,),
    ).fetchall()
    if not rows:
        return None
    kind, tier, good, total, conf = rows[0]
    return str(kind), str(tier), int(good), int(total), float(conf)


def set_feedback(
    con: Connection, entry_id: int, useful: int, total: int, confidence: float
) -> None:
    con.execute(
        "UPDATE entries SET useful_count = ?, validation_count = ?, confidence = ? WHERE id = ?",
        (useful, total, confidence, entry_id),
    )


def validated_memories(con: Connection) -> list[tuple[int, str, int, int]]:
    """(id, tier, useful_count, validation_count) of every memory found useful at least once,
    most useful first: what memory.lifecycle.is_promotion_candidate judges."""
    return [
        (int(r[0]), str(r[1]), int(r[2]), int(r[3]))
        for r in con.execute(
            "SELECT id, tier, useful_count, validation_count FROM entries"
            " WHERE kind = 'memory' AND useful_count > 0 ORDER BY useful_count DESC, id"
        )
    ]


def constitutional_ids(con: Connection, namespace: str | None, now: float) -> list[int]:
    """Constitutional, unexpired memories, most important first."""
    where = "kind = 'memory' AND tier = 'constitutional' AND (expires_at IS NULL OR expires_at > ?)"
    params: list[Any] = [now]
    if namespace and namespace != "*":
        where += " AND namespace = ?"
        params.append(namespace)
    return [
        int(r[0])
        for r in con.execute(
            f"SELECT id FROM entries WHERE {where} ORDER BY importance DESC, created_at, id",
            params,
        )
    ]


def any_expired(con: Connection, now: float) -> bool:
    """Whether an entry (a memory, or a note's chunk by front-matter `expires`) has expired and
    is still stored: one look-up in entries_expires."""
    sql = "SELECT 1 FROM entries WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT 1"
    return bool(con.execute(sql, (now,)).fetchall())


def select_ids(
    con: Connection,
    *,
    tag: str | None = None,
    namespace: str | None = None,
    expired_before: float | None = None,
    deprecated: bool = False,
) -> list[int]:
    """Memory ids by tag, namespace, or (for prune) expired / deprecated."""
    parts, params = ["kind = 'memory'"], list[object]()
    if tag:
        parts.append("EXISTS (SELECT 1 FROM json_each(entries.tags) WHERE json_each.value = ?)")
        params.append(tag)
    if namespace:
        parts.append("namespace = ?")
        params.append(namespace)
    either = []
    if expired_before is not None:
        either.append("(expires_at IS NOT NULL AND expires_at <= ?)")
        params.append(expired_before)
    if deprecated:
        either.append("tier = 'deprecated'")
    if either:
        parts.append("(" + " OR ".join(either) + ")")
    sql = f"SELECT id FROM entries WHERE {' AND '.join(parts)} ORDER BY id"
    return [int(r[0]) for r in con.execute(sql, params)]


def delete_ids(con: Connection, ids: Iterable[int]) -> int:
    """Delete memories with everything that holds their text or use: the change history (old
    contents), the access log; triggers go by cascade; a claim a deleted memory held on a
    name (writing the full name) is withdrawn where it no longer holds (entityclaims)."""
    n, held = 0, set()
    for i in ids:
        held |= entityclaims.held_by(con, "?", (i,))
        con.execute("DELETE FROM entries WHERE id = ? AND kind = 'memory'", (i,))
        if con.changes():
            n += 1
            con.execute("DELETE FROM history WHERE entry_id = ?", (i,))
            con.execute("DELETE FROM access_log WHERE entry_id = ?", (i,))
    entityclaims.withdraw(con, held)
    return n


def memory_hashes(con: Connection, namespace: str) -> list[tuple[int, str]]:
    """(id, content_hash) of every memory in `namespace` (the kind index, then the namespace)."""
    return [
        (int(i), str(h))
        for i, h in con.execute(
            "SELECT id, content_hash FROM entries WHERE kind = 'memory' AND namespace = ?",
            (namespace,),
        )
    ]


def memory_ids_by_hash(con: Connection, content_hash: str, namespace: str) -> list[int]:
    return [
        int(r[0])
        for r in con.execute(
            "SELECT id FROM entries WHERE content_hash = ? AND kind = 'memory' AND namespace = ?",
            (content_hash, namespace),
        )
    ]


def keyword_memories(
    con: Connection, match: str, namespace: str, limit: int = 20
) -> list[tuple[int, str]]:
    """Memories of a namespace matching an FTS5 expression, best first: (id, content)."""
    if is_postgres(con):
        from memoryd.store.pg import fts

        return fts.keyword_memories(con, match, namespace, limit)
    return [
        (int(i), str(c))
        for i, c in con.execute(
            "SELECT e.id, e.content FROM entries_fts JOIN entries e ON e.id = entries_fts.rowid"
            " WHERE entries_fts MATCH ? AND e.kind = 'memory' AND e.namespace = ?"
            " ORDER BY bm25(entries_fts) LIMIT ?",
            (match, namespace, limit),
        )
    ]


def by_tier(con: Connection, namespace: str | None = None) -> dict[str, int]:
    sql, params = "SELECT tier, count(*) FROM entries WHERE kind = 'memory'", []
    if namespace and namespace != "*":
        sql += " AND namespace = ?"
        params.append(namespace)
    return {str(t): int(n) for t, n in con.execute(sql + " GROUP BY tier", params)}


def by_namespace(con: Connection) -> dict[str, int]:
    return {
        str(ns): int(n)
        for ns, n in con.execute(
            "SELECT namespace, count(*) FROM entries WHERE kind = 'memory' GROUP BY namespace"
        )
    }


def expired_among(con: Connection, ids: Sequence[int], now: float) -> set[int]:
    """Those of `ids` whose expiry has passed at `now` (the expiry job deletes them later)."""
    out: set[int] = set()
    for part, marks in in_batches(ids):
        sql = f"SELECT id FROM entries WHERE id IN ({marks}) AND expires_at <= ?"
        out.update(int(row[0]) for row in con.execute(sql, [*part, now]))
    return out


def same_text_stored(exc: BaseException) -> bool:
    """The database's unique index on a memory's (namespace, content hash) refused a write:
    on PostgreSQL, another daemon stored the same text at the same time. Read from the
    exception's SQLSTATE (23505) and constraint name, so psycopg need not be imported."""
    if getattr(exc, "sqlstate", None) != "23505":
        return False
    diag = getattr(exc, "diag", None)
    return getattr(diag, "constraint_name", None) == "entries_memory_hash"


def lock_entry(con: Connection, entry_id: int, now: float) -> float:
    """The time to stamp a change of the entry with: `now`, or the second after its last
    change when that was in this second or later, so every change shows another `updated_at`
    (update's expected_updated_at compares them, to the second as records show them). On
    PostgreSQL the row stays locked until the transaction ends: a read of it that follows sees
    the last committed change, and a second writer waits (SQLite has one writer anyway)."""
    lock = " FOR UPDATE" if is_postgres(con) else ""
    rows = con.execute("SELECT updated_at FROM entries WHERE id = ?" + lock, (entry_id,))
    last = rows.fetchall()
    if not last or last[0][0] is None:
        return now
    floor = math.floor(float(last[0][0]))
    return now if math.floor(now) > floor else floor + 1.0
