"""The daily-log markers each indexed file holds (`log_marks`: document, memory id), written by
the indexer from the file's text as it is on disk (memoryd.text.logmarkers), before the daily
log's hook blanks the daemon's own lines. A memory's update or delete reads it to reach the
memory's lines in every file that holds them: a log moved out of the log folder, renamed, or
copied elsewhere in the workspace, whose own lines the index leaves out like the log's. The rows
follow their document (a move keeps its id; a delete cascades). Functions take an open
connection of either backend."""

from __future__ import annotations

from collections.abc import Iterable

from memoryd.store.db import in_batches
from memoryd.store.protocol import Connection


def replace(con: Connection, path: str, ids: Iterable[int]) -> None:
    """The memory ids whose markers the indexed file at `path` holds now."""
    rows = con.execute("SELECT id FROM documents WHERE path = ?", (path,)).fetchall()
    if not rows:
        return
    doc_id = int(rows[0][0])
    now = set(ids)
    before = {
        int(r[0])
        for r in con.execute(
            "SELECT memory_id FROM log_marks WHERE document_id = ?", (doc_id,)
        ).fetchall()
    }
    # only the difference: a log re-read after each append gains one id, not all again
    for memory_id in sorted(before - now):
        con.execute(
            "DELETE FROM log_marks WHERE document_id = ? AND memory_id = ?", (doc_id, memory_id)
        )
    for memory_id in sorted(now - before):
        con.execute(
            "INSERT INTO log_marks(document_id, memory_id) VALUES (?, ?)", (doc_id, memory_id)
        )


def paths_naming(con: Connection, ids: Iterable[int] | None) -> set[str]:
    """The workspace paths of the indexed files holding a marker of one of `ids` (None: any)."""
    if ids is None:
        rows = con.execute(
            "SELECT DISTINCT d.path FROM log_marks l JOIN documents d ON d.id = l.document_id"
        ).fetchall()
        return {str(r[0]) for r in rows}
    found: set[str] = set()
    for part, marks in in_batches(sorted(set(ids))):
        rows = con.execute(
            "SELECT DISTINCT d.path FROM log_marks l JOIN documents d ON d.id = l.document_id"
            f" WHERE l.memory_id IN ({marks})",
            part,
        ).fetchall()
        found.update(str(r[0]) for r in rows)
    return found


def memories_between(con: Connection, since: float, until: float) -> list[int]:
    """The ids of the memories stored from `since` until before `until` (time.time()s), in
    order."""
    rows = con.execute(
        "SELECT id FROM entries WHERE kind = 'memory' AND created_at >= ? AND created_at < ?"
        " ORDER BY id",
        (since, until),
    ).fetchall()
    return [int(r[0]) for r in rows]
