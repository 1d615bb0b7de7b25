"""Pages of the lists that page by a cursor (`list`, `note.list`; core/pagecursor.py says what
a cursor is): each reads one row more than the page holds, to tell the last page (no cursor)
from the others (the cursor of their last row)."""

from __future__ import annotations

from typing import Any

from memoryd.core import pagecursor
from memoryd.store import entries
from memoryd.store import notes as store_notes
from memoryd.store.entityread import resolved
from memoryd.store.protocol import Connection

Page = tuple[list[dict[str, Any]], int, str | None]  # the rows, how many match, the next cursor


def entry_page(
    con: Connection, f: entries.Filters, now: float, limit: int, offset: int, cursor: object
) -> Page:
    """Entries newest first (ties by id), from `offset` or after the `cursor`'s entry. The names
    of an `entities` filter mean what they mean to `search` and `entity` (entityread.resolved:
    the one entity each means)."""
    after = pagecursor.read_entry_cursor(cursor)
    pagecursor.one_way(after, offset)
    f = resolved(con, f)
    keys: list[tuple[float, int]] = []
    rows, total = entries.list_entries(
        con, f, now=now, limit=limit + 1, offset=offset, after=after, keys=keys
    )
    following = pagecursor.entry_cursor(*keys[limit - 1]) if len(rows) > limit else None
    return rows[:limit], total, following


def document_page(con: Connection, prefix: str, limit: int, offset: int, cursor: object) -> Page:
    """Indexed files under `prefix` by path, from `offset` or after the `cursor`'s path."""
    after = pagecursor.read_path_cursor(cursor)
    pagecursor.one_way(after, offset)
    rows, total = store_notes.list_documents(con, prefix, limit + 1, offset, after)
    return rows[:limit], total, (rows[limit - 1]["path"] if len(rows) > limit else None)
