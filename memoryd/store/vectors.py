"""Vectors: one per (text hash, model), in a sqlite-vec vec0 table per model.

A text is embedded once per model, however many entries carry it (a moved file, a restored file,
the same paragraph in two notes). Switching model creates a new table: dimensions never mix, and
search answers by keyword until the new model's vectors exist. Vectors no entry uses any more are
kept for a grace period and then collected (`gc`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memoryd.core.errors import StoreError
from memoryd.store.connmemo import PerVersion, data_version
from memoryd.store.dialect import is_postgres
from memoryd.store.protocol import Connection, one
from memoryd.store.tables import table_name as table_name  # callers name it vectors.table_name


def ensure_model(
    con: Connection, key: str, name: str, dim: int, now: float, adopts: str | None = None
) -> int:
    """Register the model, create its vec0 table, and make it the only active one. `adopts`: the
    key of the same model's vectors stored under its older name (a local model's folder before
    its fingerprint was part of its key), taken over once instead of embedding everything again."""
    if dim <= 0 or dim > 8192:
        raise StoreError(f"unreasonable embedding dimension {dim}")
    rows = con.execute("SELECT id, dim FROM models WHERE key = ?", (key,)).fetchall()
    if not rows and adopts is not None and adopts != key:
        con.execute(
            "UPDATE models SET key = ?, name = ? WHERE key = ? AND dim = ?",
            (key, name, adopts, dim),
        )
        rows = con.execute("SELECT id, dim FROM models WHERE key = ?", (key,)).fetchall()
    if rows:
        model_id = int(rows[0][0])
        if int(rows[0][1]) != dim:
            raise StoreError(f"model {key} is recorded with dimension {rows[0][1]}, not {dim}")
    else:
        model_id = int(
            con.execute(
                "INSERT INTO models(key, name, dim, created_at) VALUES (?, ?, ?, ?) RETURNING id",
                (key, name, dim, now),
            ).fetchall()[0][0]
        )
    if is_postgres(con):
        from memoryd.store.pg import vectors as pgvec

        # only when missing: a daemon's role may lack CREATE on the schema (docs/team.md)
        if one(con.execute("SELECT to_regclass(?)", (table_name(model_id),)))[0] is None:
            pgvec.create_table(con, table_name(model_id), dim)
    else:
        con.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table_name(model_id)} "
            f"USING vec0(embedding float[{int(dim)}] distance_metric=cosine)"
        )
    con.execute("UPDATE models SET active = CASE WHEN id = ? THEN 1 ELSE 0 END", (model_id,))
    return model_id


def drop_inactive(con: Connection) -> list[str]:
    """Remove other models' tables and vectors (after a switch). Returns their keys."""
    dropped = []
    for model_id, key in con.execute("SELECT id, key FROM models WHERE active = 0").fetchall():
        con.execute(f"DROP TABLE IF EXISTS {table_name(model_id)}")
        con.execute("DELETE FROM models WHERE id = ?", (model_id,))
        dropped.append(str(key))
    return dropped


# PostgreSQL: the active model per read snapshot (store/connmemo.py): each search's vector pool
# asks for it, a round trip of its own; a snapshot where nothing was written since knows it.
_ACTIVE: PerVersion[tuple[int, str, int] | None] = PerVersion(1)


def active_model(con: Connection) -> tuple[int, str, int] | None:
    """(id, key, dim) of the model search may use: active, and backfilled once completely."""
    version = data_version(con) if is_postgres(con) else None
    found, known = _ACTIVE.get(con, version, None)
    if found:
        return known
    rows = con.execute(
        "SELECT id, key, dim FROM models WHERE active = 1 AND complete = 1"
    ).fetchall()
    out = (int(rows[0][0]), str(rows[0][1]), int(rows[0][2])) if rows else None
    _ACTIVE.put(con, version, None, out)
    return out


def embedding_model(con: Connection) -> tuple[int, str, int] | None:
    """(id, key, dim) of the model texts are embedded with now, whether or not its first
    backfill has finished (search waits for that, active_model; a vector of it is valid
    before): what export --vectors writes and import stores."""
    rows = con.execute("SELECT id, key, dim FROM models WHERE active = 1").fetchall()
    return (int(rows[0][0]), str(rows[0][1]), int(rows[0][2])) if rows else None


def mark_complete(con: Connection, model_id: int) -> list[str]:
    """The model's first full backfill is done: search may use it, older models go."""
    con.execute("UPDATE models SET complete = 1 WHERE id = ?", (model_id,))
    return drop_inactive(con)


def pending(con: Connection, model_id: int, limit: int) -> list[tuple[str, str]]:
    """(content_hash, content) of texts that have no vector for this model yet."""
    return [
        (str(h), str(c))
        for h, c in con.execute(
            "SELECT e.content_hash, min(e.content) FROM entries e"
            " WHERE NOT EXISTS (SELECT 1 FROM embeddings m"
            "   WHERE m.model_id = ? AND m.content_hash = e.content_hash)"
            " GROUP BY e.content_hash LIMIT ?",
            (model_id, limit),
        )
    ]


_SOURCE = (
    "CASE WHEN e.kind = 'memory' THEN 'memory ' || e.id"
    " ELSE (SELECT d.path FROM documents d WHERE d.id = e.document_id) END"
)
_NO_VECTOR = (
    "NOT EXISTS (SELECT 1 FROM embeddings m"
    " WHERE m.model_id = ? AND m.content_hash = e.content_hash)"
)


def pending_newest(
    con: Connection, model_id: int, limit: int, fresh_rows: int = 4096
) -> list[tuple[str, str, str]]:
    """(content_hash, content, source) of texts without a vector for this model: first those of
    the `fresh_rows` most recently stored entries, newest first (an edited note's new chunks, a
    new memory: new rows get the highest ids), then the rest of the backlog in hash order.
    source is the note's path or "memory N", for progress reports.

    Both parts are cheap at 100K entries: the first reads a bounded id range, the second walks
    the content_hash index and stops after `limit` groups."""
    out: dict[str, tuple[str, str, str]] = {}
    top = con.execute("SELECT max(id) FROM entries").fetchall()[0][0]
    if top is None:
        return []
    for h, c, src in con.execute(
        f"SELECT e.content_hash, e.content, {_SOURCE} FROM entries e"
        f" WHERE e.id > ? AND {_NO_VECTOR} ORDER BY e.id DESC",
        (int(top) - fresh_rows, model_id),
    ):
        out.setdefault(str(h), (str(h), str(c), str(src)))
        if len(out) >= limit:
            return list(out.values())
    for h, c, src in con.execute(
        f"SELECT e.content_hash, min(e.content), max({_SOURCE}) FROM entries e"
        f" WHERE {_NO_VECTOR} GROUP BY e.content_hash LIMIT ?",
        (model_id, limit + len(out)),
    ):
        out.setdefault(str(h), (str(h), str(c), str(src)))
        if len(out) >= limit:
            break
    return list(out.values())


def top_entry_id(con: Connection) -> int:
    """The highest entry id (0 when there is none): ids only grow (m003), so every entry
    written after this call has a higher one."""
    top = con.execute("SELECT max(id) FROM entries").fetchall()[0][0]
    return 0 if top is None else int(top)


def pending_since(
    con: Connection, model_id: int, limit: int, after: int
) -> list[tuple[str, str, str]]:
    """What `pending_newest` returns, for a caller that knows every entry up to id `after` had
    a vector: the entries written since (a range on the primary key, newest first) and the
    memories (their content can change in place: `update`), each without a vector. Bounded by
    what changed, not by the size of the store (pending_newest's backlog part walks every
    entry's hash when there is no backlog: ~0.1 s at 100K chunks, at every wake-up)."""
    out: dict[str, tuple[str, str, str]] = {}
    for sql, params in (
        (
            f"SELECT e.content_hash, e.content, {_SOURCE} FROM entries e"
            f" WHERE e.id > ? AND {_NO_VECTOR} ORDER BY e.id DESC",
            (after, model_id),
        ),
        (
            f"SELECT e.content_hash, e.content, {_SOURCE} FROM entries e"
            f" WHERE e.kind = 'memory' AND {_NO_VECTOR} ORDER BY e.id DESC",
            (model_id,),
        ),
    ):
        for h, c, src in con.execute(sql, params):
            out.setdefault(str(h), (str(h), str(c), str(src)))
            if len(out) >= limit:
                return list(out.values())
    return list(out.values())


def count_pending_since(con: Connection, model_id: int, after: int) -> int:
    """How many texts `pending_since` would find with no limit (distinct hashes). Two queries,
    one per index (the primary-key range, the kind index): SQLite answers `id > ? OR kind = ?`
    with a scan of the whole table."""
    hashes: set[str] = set()
    for sql, params in (
        (
            f"SELECT e.content_hash FROM entries e WHERE e.id > ? AND {_NO_VECTOR}",
            (after, model_id),
        ),
        (
            f"SELECT e.content_hash FROM entries e WHERE e.kind = 'memory' AND {_NO_VECTOR}",
            (model_id,),
        ),
    ):
        hashes.update(str(h) for (h,) in con.execute(sql, params))
    return len(hashes)


def newest_id(con: Connection) -> int | None:
    """The highest embeddings row id (None when there is none)."""
    newest = con.execute("SELECT max(id) FROM embeddings").fetchall()[0][0]
    return None if newest is None else int(newest)


def rows_after(
    con: Connection, model_id: int, after: int, limit: int = -1
) -> list[tuple[int, str, bytes]]:
    """(row id, content hash, float32 blob) of the model's vectors with a row id above `after`,
    in id order, at most `limit` (-1: all). Driven from the embeddings table (a range on its
    primary key): vec0 answers lookups by rowid quickly but would scan itself for a rowid range;
    `+m.model_id` keeps SQLite on the primary key instead of the (model, hash) index."""
    return [
        (int(i), str(h), blob(b))
        for i, h, b in con.execute(
            f"SELECT m.id, m.content_hash, v.embedding FROM embeddings m"
            f" JOIN {table_name(model_id)} v ON v.rowid = m.id"
            " WHERE m.id > ? AND +m.model_id = ? ORDER BY m.id"
            + (" LIMIT ?" if limit >= 0 else ""),  # PostgreSQL refuses LIMIT -1
            (after, model_id, *([limit] if limit >= 0 else [])),
        )
    ]


def blob(value: object) -> bytes:
    """float32 bytes of a stored vector (sqlite-vec gives bytes, pgvector a Vector or an array)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    to_numpy = getattr(value, "to_numpy", None)  # pgvector.Vector
    if to_numpy is not None:
        value = to_numpy()
    return np.ascontiguousarray(value, dtype=np.float32).tobytes()


def model_count(con: Connection, model_id: int) -> int:
    """How many vectors the model has."""
    return int(
        con.execute("SELECT count(*) FROM embeddings WHERE model_id = ?", (model_id,)).fetchall()[
            0
        ][0]
    )


# The counts while the data version holds: status and stats are polled (the web page's status
# every 2 s, scripts), and at 100K the two DISTINCT counts cost 20-80 ms of CPU a call; a store
# where nothing was written since answers from memory. PostgreSQL: while a read's snapshot is
# the same (store/connmemo.py): there they cost 1-1.5 s of the server's CPU at 100K chunks, and
# search asks for the pending count every 2 s while texts are pending (searcher.py), every 30 s
# otherwise; inside a write they are counted.
_COUNTS: PerVersion[dict[str, int]] = PerVersion(2)


def counts(con: Connection, model_id: int | None) -> dict[str, int]:
    """{done, pending, stored}: distinct texts with and without a vector of the model, and the
    model's stored vectors."""
    version = data_version(con)
    found, known = _COUNTS.get(con, version, model_id)
    if found and known is not None:
        return dict(known)
    out = _counts(con, model_id)
    _COUNTS.put(con, version, model_id, out)
    return dict(out)


def _counts(con: Connection, model_id: int | None) -> dict[str, int]:
    texts = con.execute("SELECT count(DISTINCT content_hash) FROM entries").fetchall()[0][0]
    if model_id is None:
        return {"done": 0, "pending": int(texts), "stored": 0}
    done = con.execute(
        "SELECT count(DISTINCT e.content_hash) FROM entries e JOIN embeddings m"
        " ON m.content_hash = e.content_hash AND m.model_id = ?",
        (model_id,),
    ).fetchall()[0][0]
    stored = con.execute(
        "SELECT count(*) FROM embeddings WHERE model_id = ?", (model_id,)
    ).fetchall()[0][0]
    return {"done": int(done), "pending": int(texts) - int(done), "stored": int(stored)}


def store(
    con: Connection,
    model_id: int,
    items: Sequence[tuple[str, np.ndarray]],
    now: float,
) -> int:
    """Write vectors for text hashes (skipping ones already stored). Returns how many were new."""
    table = table_name(model_id)
    new = 0
    for content_hash, vec in items:
        rows = con.execute(
            "INSERT INTO embeddings(model_id, content_hash, created_at) VALUES (?, ?, ?)"
            " ON CONFLICT(model_id, content_hash) DO NOTHING RETURNING id",
            (model_id, content_hash, now),
        ).fetchall()
        if not rows:
            continue
        value = np.ascontiguousarray(vec, dtype=np.float32)  # pgvector takes the array itself
        con.execute(
            f"INSERT INTO {table}(rowid, embedding) VALUES (?, ?)",
            (rows[0][0], value if is_postgres(con) else value.tobytes()),
        )
        new += 1
    return new


def knn(con: Connection, model_id: int, query: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The k nearest texts: (content_hash, cosine distance), nearest first."""
    if is_postgres(con):
        from memoryd.store.pg import vectors as pgvec

        return pgvec.knn(con, table_name(model_id), query, k)
    blob = np.ascontiguousarray(query, dtype=np.float32).tobytes()
    return [
        (str(h), float(dist))
        for h, dist in con.execute(
            f"SELECT m.content_hash, v.distance FROM {table_name(model_id)} v"
            " JOIN embeddings m ON m.id = v.rowid"
            " WHERE v.embedding MATCH ? AND k = ? ORDER BY v.distance",
            (blob, int(k)),
        )
    ]


def orphan_count(con: Connection, model_id: int) -> int:
    return int(
        con.execute(
            "SELECT count(*) FROM embeddings m WHERE m.model_id = ?"
            " AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.content_hash = m.content_hash)",
            (model_id,),
        ).fetchall()[0][0]
    )


def gc(con: Connection, model_id: int, now: float, grace: float) -> int:
    """Collect vectors that no entry has used for `grace` seconds. Returns how many went.

    A vector whose text disappears is first marked orphaned; it is deleted only when it is still
    unused `grace` seconds later, so deleting and restoring a file re-embeds nothing.
    """
    unused = "NOT EXISTS (SELECT 1 FROM entries e WHERE e.content_hash = embeddings.content_hash)"
    con.execute(
        f"UPDATE embeddings SET orphaned_at = NULL WHERE model_id = ? AND orphaned_at IS NOT NULL"
        f" AND NOT ({unused})",
        (model_id,),
    )
    con.execute(
        f"UPDATE embeddings SET orphaned_at = ? WHERE model_id = ? AND orphaned_at IS NULL"
        f" AND {unused}",
        (now, model_id),
    )
    ids = [
        int(r[0])
        for r in con.execute(
            f"SELECT id FROM embeddings WHERE model_id = ? AND orphaned_at < ? AND {unused}",
            (model_id, now - grace),
        )
    ]
    table = table_name(model_id)
    for vid in ids:
        con.execute(f"DELETE FROM {table} WHERE rowid = ?", (vid,))
        con.execute("DELETE FROM embeddings WHERE id = ?", (vid,))
    return len(ids)
