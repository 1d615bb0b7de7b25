"""Entities as a background stage (issue 20.6): a note indexed from a file writes its keyword
rows and a row in `entity_pending` (its text as indexed, its place in indexing order, the keys
its earlier text held), nothing else entity-related; its entities are read later, in batches,
by `drain` (the daemon's stage thread, serve/entitywork.py; or a door that needs them exact).

Why: extraction and its rows were 0.6-0.8 of keyword indexing's CPU (BENCHMARKS.md, ent19),
four-fifths of it per note (each note its own transaction: five B-trees' pages to the WAL per
note). Drained 50 notes a transaction, in the order they were indexed, the rows are the ones
indexing them one by one made: each note's names resolve against what the notes before it
stored, as they did (claims, first names; store/entities.py).

Memories stay synchronous (an agent's `remember` then `entity X` is the common flow): their
rows are written as they are added. A note's row follows its document: an edit replaces it (the
held keys merged), a move keeps it (the path is read when drained), a delete drops it
(ON DELETE CASCADE; entries.delete_document withdraws what it held).

`caught_up` is the one way to the rows being exact: the doors that read entities (the page, the
list, `related`, the entity filter, `kind: "entity"`) call it with a time budget and say
`entities_pending: N` when the queue was longer than that (a search without an entity filter
reads none: its entity weight ignores the notes that wait, a moment);
export, checkpoints, `store migrate`, `reindex` and the benches call it without one."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from memoryd.core.errors import NotFound
from memoryd.core.logsetup import get_logger
from memoryd.store import entityclaims, tables
from memoryd.store.protocol import Connection
from memoryd.text import entities, markdown

T = TypeVar("T")
log = get_logger("memoryd.entities")

BATCH = 50  # notes a transaction: the commit and the statements' set-up shared
# how long a door that reads entities drains the queue itself before it answers with what is
# stored and `entities_pending`: a few edits' worth, never a bulk indexing's
DOOR_BUDGET_S = 2.0

_PENDING = "SELECT count(*) FROM entity_pending p JOIN documents d ON d.id = p.document_id"
_HELD = (
    "SELECT p.held FROM entity_pending p JOIN documents d ON d.id = p.document_id WHERE d.path = ?"
)


def ddl(dialect: tables.Dialect) -> list[str]:
    """The table and its index (SQLite m022, PostgreSQL v20)."""
    cols = tables.create_columns(tables.ENTITY_PENDING, dialect)
    return [
        f"CREATE TABLE entity_pending({cols})",
        "CREATE INDEX entity_pending_seq ON entity_pending(seq)",
    ]


def held_of(con: Connection, path: str) -> set[str]:
    """The keys the note at `path` held before an edit whose entities are still pending."""
    rows = con.execute(_HELD, (path,)).fetchall()
    return set(json.loads(rows[0][0])) if rows else set()


def enqueue(con: Connection, path: str, text: str, held: Iterable[str]) -> None:
    """The note at `path` (just stored) waits for its entities: `text` as indexed (line ends
    made "\\n"), `held` what its earlier text held (with what a pending edit held)."""
    keys = set(held)
    if keys:  # merged with what a pending edit held (a note that declared names: few)
        keys |= held_of(con, path)
    # without keys of its own, a pending row keeps its: no read before the write (the bulk)
    con.execute(
        "INSERT INTO entity_pending(document_id, seq, held, text)"
        " SELECT d.id, (SELECT coalesce(max(seq), 0) + 1 FROM entity_pending), ?, ?"
        " FROM documents d WHERE d.path = ?"
        " ON CONFLICT (document_id) DO UPDATE SET seq = excluded.seq, text = excluded.text,"
        " held = CASE WHEN excluded.held = '[]' THEN entity_pending.held ELSE excluded.held END",
        (json.dumps(sorted(keys)), text, path),
    )


def pending(con: Connection) -> int:
    """How many notes of this workspace wait for their entities."""
    return int(con.execute(_PENDING).fetchall()[0][0])


def drain(con: Connection, limit: int = BATCH) -> int:
    """Read the entities of the `limit` notes indexed first, in that order; their rows gone
    from the queue. Returns how many were read."""
    rows = con.execute(
        "SELECT p.document_id, d.path, p.held, p.text FROM entity_pending p"
        " JOIN documents d ON d.id = p.document_id ORDER BY p.seq LIMIT ?",
        (limit,),
    ).fetchall()
    for _, path, held, text in rows:
        index_now(con, str(path), str(text), json.loads(held))
    if rows:
        marks = ", ".join("?" * len(rows))
        con.execute(
            f"DELETE FROM entity_pending WHERE document_id IN ({marks})", [r[0] for r in rows]
        )
    return len(rows)


def index_now(con: Connection, path: str, text: str, held: Iterable[str]) -> None:
    """The note's entities read as it is indexed, without the queue (a store older than it:
    the tests' older schemas)."""
    entityclaims.index_pending(con, path, _mentions(path, text), set(held))


def _mentions(path: str, text: str) -> list[Any]:
    """The note's mentions; none when reading them fails (a text no rule foresaw: logged),
    so that one note never holds back the queue behind it (the stage would retry it forever).
    The rows are written by the caller: a store's failure still fails the batch, to be retried."""
    try:
        fm, body, first = markdown.parse_front_matter(text)
        return list(entities.extract_document(fm, body, first, text, path))
    except Exception as e:  # (a RecursionError too)
        log.error("entities: reading a note's names failed; it has none", path=path, error=repr(e))
    return []


def caught_up(
    read: Callable[[Callable[[Connection], Any]], Any],
    write: Callable[[Callable[[Connection], Any]], Any],
    budget_s: float | None = None,
    stop: Callable[[], bool] = lambda: False,
    at_most: int | None = None,
) -> int:
    """Drain the queue, a batch a transaction, until it is empty, `budget_s` has passed or
    `stop()` says so; returns how many notes still wait (0: the entity rows are exact).
    `read` and `write` are a store's `read` and `run_write`. With `at_most`, a longer queue
    is not touched (left to the stage's thread)."""
    started = time.monotonic()
    left = int(read(pending))
    if at_most is not None and left > at_most:
        return left
    while True:
        if not left or stop():
            return left
        if budget_s is not None and time.monotonic() - started >= budget_s:
            return left
        write(drain)
        left = int(read(pending))


def store_caught_up(store: Any, budget_s: float | None = None) -> int:
    """caught_up for a Store (either backend)."""
    return caught_up(store.read, store.run_write, budget_s)


def with_pending(answer: T, left: int) -> T:
    """A door's answer, with `entities_pending: N` when notes still wait for their entities."""
    if left and isinstance(answer, dict):
        answer["entities_pending"] = left
    return answer


def answered(left: int, door: Callable[[], T]) -> T:
    """A door's answer (with_pending); a name not found while notes still wait says so, as
    its entity may be in them."""
    try:
        return with_pending(door(), left)
    except NotFound as exc:
        if left:
            exc.message += (
                f" ({left} notes indexed just now still wait for their entities: ask again"
                " in a moment)"
            )
            exc.args = (exc.message,)
            exc.data = {**(exc.data or {}), "entities_pending": left}
        raise
