"""The documents a batch of watcher events can touch: those at the events' paths or under them
as folders. The watcher's sync read every document for each batch before: at 100K chunks (24K
notes) ~8 MB of objects and a walk of the table per note edit (issue 23.2)."""

from __future__ import annotations

from collections.abc import Iterable

from memoryd.store.entries import DocumentInfo, documents
from memoryd.store.protocol import Connection


def documents_at(con: Connection, rels: Iterable[str]) -> dict[str, DocumentInfo]:
    """The documents at these paths or under them as folders ("." or "": all of them)."""
    out: dict[str, DocumentInfo] = {}
    for rel in dict.fromkeys(rels):
        if rel in (".", ""):
            return documents(con)
        if not _storable(rel):
            continue  # a name that is not UTF-8 (surrogate-escaped): no stored path is one
        for path, sha, size, mtime in con.execute(
            "SELECT path, sha256, size, mtime FROM documents"
            " WHERE path = ? OR substr(path, 1, ?) = ?",
            (rel, len(rel) + 1, rel + "/"),
        ):
            out[path] = DocumentInfo(path, sha, size, mtime)
    return out


def _storable(rel: str) -> bool:
    """Whether `rel` can be a stored path: the store keeps only paths that encode as UTF-8 (the
    indexer skips the others, naming them), and a driver refuses to bind one that does not."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
