"""Links between notes, and the note-level facts the indexer takes from a vault (creation date).

Links are stored as written (target, heading, alias, line) with `target_key`, the lower-cased file
name the target names; they are resolved to paths when asked (memoryd.text.obsidian.Resolver), so a
note created later answers links written before it. Functions take an open apsw connection.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memoryd.store.protocol import Connection
from memoryd.text.markdown import FrontMatter, date_of_name
from memoryd.text.obsidian import Link


@dataclass(frozen=True)
class StoredLink:
    source: str  # path of the note the link is written in
    link: Link


def _document_id(con: Connection, path: str) -> int | None:
    rows = con.execute("SELECT id FROM documents WHERE path = ?", (path,)).fetchall()
    return int(rows[0][0]) if rows else None


def replace_links(con: Connection, path: str, links: Iterable[Link]) -> int:
    """Replace the links written in the note at `path` (which must be indexed)."""
    doc_id = _document_id(con, path)
    if doc_id is None:
        return 0
    con.execute("DELETE FROM links WHERE document_id = ?", (doc_id,))
    n = 0
    for link in links:
        con.execute(
            "INSERT INTO links(document_id, target, target_key, heading, alias, line, embed,"
            " kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                doc_id,
                link.target,
                link.key,
                link.heading,
                link.alias,
                link.line,
                int(link.embed),
                link.kind,
            ),
        )
        n += 1
    return n


def _rows(con: Connection, where: str, params: Sequence[Any]) -> list[StoredLink]:
    return [
        StoredLink(src, Link(target, heading, alias, int(line), bool(embed), kind))
        for src, target, heading, alias, line, embed, kind in con.execute(
            "SELECT d.path, l.target, l.heading, l.alias, l.line, l.embed, l.kind"
            f" FROM links l JOIN documents d ON d.id = l.document_id WHERE {where}"
            " ORDER BY d.path, l.line, l.id",
            params,
        )
    ]


def links_from(con: Connection, path: str) -> list[StoredLink]:
    """The links written in one note, in order."""
    return _rows(con, "d.path = ?", (path,))


def links_named(con: Connection, keys: Sequence[str]) -> list[StoredLink]:
    """Every link whose target names one of `keys` (obsidian.note_key: folded file names
    without .md). A link stored before keys were composed (NFC) may hold its name decomposed:
    each key is looked up in both forms."""
    keys = list(dict.fromkeys(f for k in keys for f in (k, unicodedata.normalize("NFD", k))))
    if not keys:
        return []
    return _rows(con, f"l.target_key IN ({','.join('?' * len(keys))})", keys)


def note_paths(con: Connection) -> list[str]:
    return [str(r[0]) for r in con.execute("SELECT path FROM documents")]


def set_dates(
    con: Connection, path: str, created_at: float | None, updated_at: float | None
) -> None:
    """A note's own dates from its front matter for all its chunks, in place of the file's
    mtime and the time it was indexed: filters (since/until) and recency see when the note was
    written, not when it was copied into the workspace. None keeps a value as it is."""
    con.execute(
        "UPDATE entries SET created_at = coalesce(?, created_at),"
        " updated_at = coalesce(?, updated_at)"
        " WHERE kind = 'chunk' AND document_id = (SELECT id FROM documents WHERE path = ?)",
        (created_at, updated_at, path),
    )


def note_dates(con: Connection, path: str, fm: FrontMatter, now: float) -> None:
    """A note's own dates in place of its file's mtime: its front matter's `date`/`created` and
    `updated`, else the date its file name is (a daily note, `2026-03-03.md`). An update time
    after `now` is `now`: a note dated ahead is not the newest text, for recency (test_times)."""
    if fm.created_at is not None or fm.updated_at is not None:
        updated = next(t for t in (fm.updated_at, fm.created_at, now) if t is not None)
        set_dates(con, path, fm.created_at, min(updated, now))
    elif (named := date_of_name(path)) is not None:
        set_dates(con, path, named, None)
