"""The documents a batch of watcher events can touch: those at the events' paths or under them
as folders. The watcher's sync read every document for each batch before: at 100K chunks (24K
notes) ~8 MB of objects and a walk of the table per note edit (issue 23.2). And the documents of
one folder, for the reconcile that compares the workspace a folder at a time."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from memoryd.store.dialect import is_postgres
from memoryd.store.entries import DocumentInfo, documents
from memoryd.store.protocol import Connection

Row = tuple[str, str, int, float]  # path, sha256, size, mtime


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


def in_folder(con: Connection, folder: str) -> Iterator[Row]:
    """The documents directly in `folder` ("" for the workspace's top), not in its subfolders,
    as rows read one at a time (consume them inside the read transaction)."""
    if not _storable(folder):
        return iter(())
    if not folder:
        return iter(con.execute(_COLUMNS + " WHERE path NOT LIKE '%/%'"))
    prefix = folder + "/"
    args: tuple[object, ...] = (len(prefix), prefix, len(prefix) + 1)
    sql = _COLUMNS + " WHERE substr(path, 1, ?) = ? AND substr(path, ?) NOT LIKE '%/%'"
    if not is_postgres(con):  # SQLite compares text bytewise: the range reads the path index
        sql += " AND path > ? AND path < ?"
        args += (prefix, folder + chr(ord("/") + 1))
    return iter(con.execute(sql, args))


def with_sha(con: Connection, sha: str) -> list[str]:
    """The paths of the documents whose stored bytes have this SHA-256 (the other names of a
    hard-linked note are among them)."""
    return [path for (path,) in con.execute("SELECT path FROM documents WHERE sha256 = ?", (sha,))]


def every(con: Connection) -> Iterator[Row]:
    """Every document as rows read one at a time (consume them inside the read transaction)."""
    return iter(con.execute(_COLUMNS))


_COLUMNS = "SELECT path, sha256, size, mtime FROM documents"


def _storable(rel: str) -> bool:
    """Whether `rel` can be a stored path: the store keeps only paths that encode as UTF-8 (the
    indexer skips the others, naming them), and a driver refuses to bind one that does not."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def forget_hashes_under(con: Connection, rel: str) -> None:
    """The documents at or under the workspace path `rel` look changed to the next sync
    (reindex PATH --full): read and chunked again even when their bytes did not change."""
    con.execute(
        "UPDATE documents SET sha256 = '', size = -1 WHERE path = ? OR substr(path, 1, ?) = ?",
        (rel, len(rel) + 1, rel + "/"),
    )
