"""Whole notes through the daemon: read, write, append, list, move files in the workspace.

Paths are workspace-relative, '/'-separated. Refused, with InvalidInput: absolute paths, `..`
anywhere, NUL bytes and control characters, empty names, and any target the indexer would not
index (not `*.md` under the default `indexer.include`, inside a hidden folder, excluded by
`indexer.exclude`): a note written through the API is always a note the index knows. Symlinks:
a folder or file reached through a symlink must really be inside the workspace (the real path
is checked); writes, appends and moves refuse a note that is itself a symlink (the rename would
replace the link with a file), so write to its target instead.

Writes are atomic: the new text goes to a hidden temp file in the same folder, which is fsynced
and renamed over the note, and then the folder is fsynced. A crash leaves the old note or the
new one, never half of one. An edit may carry the SHA-256 of the file it was based on
(`expected_sha256`); when the file changed since, the edit is refused with Conflict and nothing
is written (`""` means "the note must not exist yet"). The file is compared once more just
before the rename, so a save that lands while the new text is being written is not lost either:
a guarded write becomes a Conflict, and an append is made again on top of it (this is also how
an append and the daily log's own appends to the same file both survive).

Every change is indexed before the call returns (`Indexer.sync_paths`), so the note is
searchable at once; the watcher's later event finds it unchanged. A file system failure (disk
full, name too long) is a Refused with the system's reason, and the old note stays. Notes are
written exactly as given: front matter is the caller's to keep (read, edit, write back), and
`append` never touches it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from memoryd.errors import Conflict, InvalidInput, NotFound, Refused, TooLarge
from memoryd.indexer import Indexer, path_accepted
from memoryd.lifecycle import summary
from memoryd.logsetup import get_logger
from memoryd.store import Store
from memoryd.store import notes as store_notes
from memoryd.timeutil import iso

log = get_logger("memoryd.notes")

MAX_PATH_CHARS = 1024
_SHA = re.compile(r"^[0-9a-f]{64}$")


class NotesSettings(Protocol):
    max_bytes: int


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_sha(value: object) -> str | None:
    """None, "" (must not exist) or 64 lowercase hex digits."""
    if value is None:
        return None
    if not isinstance(value, str) or not (value == "" or _SHA.match(value.lower())):
        raise InvalidInput(
            'expected_sha256: expected the 64 hex digits note.read returned (or "" for a note '
            f"that must not exist yet), got {value!r}"
        )
    return value.lower()


def normalize(path: object, what: str = "path") -> str:
    """A clean workspace-relative path ('a/b.md'), or InvalidInput. Pure: no file access."""
    if not isinstance(path, str) or not path.strip():
        raise InvalidInput(f"{what}: expected a workspace-relative path like 'notes/idea.md'")
    if "\x00" in path:
        raise InvalidInput(f"{what}: contains a NUL byte")
    if any(ord(ch) < 0x20 or ch == "\x7f" for ch in path):
        raise InvalidInput(f"{what}: contains a control character")
    if len(path) > MAX_PATH_CHARS:
        raise InvalidInput(f"{what}: longer than {MAX_PATH_CHARS} characters")
    if path.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:[\\/]", path):
        raise InvalidInput(f"{what}: {path!r} is absolute; give a path inside the workspace")
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise InvalidInput(f"{what}: {path!r} leaves the workspace ('..' is not allowed)")
    if not parts:
        raise InvalidInput(f"{what}: {path!r} names the workspace itself, not a note")
    return "/".join(parts)


class Notes:
    """Whole-note operations on one workspace, indexed through `indexer` after each change."""

    def __init__(
        self,
        store: Store,
        indexer: Indexer,
        settings: NotesSettings,
    ) -> None:
        self.store = store
        self.indexer = indexer
        self.settings = settings
        self.root = indexer.root
        self.root_real = indexer.root_real
        self._lock = threading.Lock()  # check-then-rename is one step for writers in this daemon

    # -- paths --------------------------------------------------------------------------------

    def _inside(self, real: str) -> bool:
        root = str(self.root_real)
        return real == root or real.startswith(root + os.sep)

    def resolve(self, path: object, what: str = "path") -> tuple[str, Path]:
        """(relative path, full path) of a note the API may touch; raises InvalidInput."""
        rel = normalize(path, what)
        if not path_accepted(rel, self.indexer.settings):
            raise InvalidInput(
                f"{what}: {rel!r} is not a note memoryd indexes (notes are files matching "
                "indexer.include, *.md by default, outside hidden folders and indexer.exclude)"
            )
        full = self.root / rel
        real = os.path.realpath(full)
        if not self._inside(real):
            raise InvalidInput(f"{what}: {rel!r} leads outside the workspace through a symlink")
        if self.indexer.is_private(rel):
            raise InvalidInput(
                f"{what}: {rel!r} is memoryd's own data (data_dir, log file or socket), not a note"
            )
        return rel, full

    def limit(self) -> int:
        return min(self.settings.max_bytes, self.indexer.settings.max_file_bytes)

    def _limit_key(self) -> str:
        if self.settings.max_bytes <= self.indexer.settings.max_file_bytes:
            return "notes.max_bytes"
        return "indexer.max_file_bytes"

    def _read_bytes(self, full: Path, rel: str, *, follow: bool) -> tuple[bytes, os.stat_result]:
        """The file's bytes and stat, read without following a final symlink unless `follow`
        (resolve() has checked that where it leads is inside the workspace)."""
        target = Path(os.path.realpath(full)) if follow else full
        # O_NONBLOCK: opening a FIFO named like a note would otherwise wait for a writer
        # forever, and a few such requests would take every worker thread of the daemon.
        flags = (
            os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
        )
        try:
            fd = os.open(target, flags)
        except FileNotFoundError:
            raise NotFound(f"no note at {rel}") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Refused(f"{rel} is a symlink; write to the note it points to") from None
            if exc.errno == errno.EISDIR:
                raise InvalidInput(f"{rel} is a folder, not a note") from None
            raise Refused(f"cannot read {rel}: {exc.strerror}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise InvalidInput(f"{rel} is not a regular file")
            if st.st_size > self.limit():
                raise TooLarge(
                    f"{rel} is {st.st_size} bytes, over the {self.limit()}-byte limit "
                    f"({self._limit_key()})"
                )
            chunks = []
            while block := os.read(fd, 1 << 20):
                chunks.append(block)
            return b"".join(chunks), st
        finally:
            os.close(fd)

    def _current(self, full: Path, rel: str) -> tuple[bytes, os.stat_result] | None:
        """The note's bytes before a change (None if it does not exist); refuses symlinks."""
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):  # _ensure_parent says which is a file
            return None
        if stat.S_ISLNK(st.st_mode):
            raise Refused(f"{rel} is a symlink; write to the note it points to instead")
        if stat.S_ISDIR(st.st_mode):
            raise InvalidInput(f"{rel} is a folder, not a note")
        return self._read_bytes(full, rel, follow=False)

    @staticmethod
    def _check_expected(rel: str, expected: str | None, current: bytes | None) -> None:
        if expected is None:
            return
        if current is None:
            if expected != "":
                raise Conflict(
                    f"{rel} no longer exists (expected sha256 {expected[:12]}…); "
                    "read the workspace again",
                    data={"path": rel, "current_sha256": None},
                )
            return
        actual = sha256_bytes(current)
        if expected != actual:
            what = "already exists" if expected == "" else "changed since you read it"
            raise Conflict(
                f"{rel} {what} (sha256 is {actual[:12]}…, not {expected[:12] or 'absent'}); "
                "read it again, merge, and retry with the new sha256",
                data={"path": rel, "current_sha256": actual},
            )

    def _encode(self, content: object, what: str = "content") -> bytes:
        if not isinstance(content, str):
            raise InvalidInput(f"{what}: expected a string (the note's markdown text)")
        if "\x00" in content:
            raise InvalidInput(f"{what}: contains a NUL byte")
        return content.encode("utf-8")

    def _ensure_parent(self, full: Path, rel: str) -> None:
        # mkdir one level at a time, checking each level's real path (a symlinked folder that
        # leads outside must not be used, even if it appeared after resolve()).
        rel_parts = Path(rel).parts[:-1]
        cur = self.root
        for part in rel_parts:
            cur = cur / part
            with contextlib.suppress(FileExistsError):
                cur.mkdir()
            if not self._inside(os.path.realpath(cur)):
                raise InvalidInput(f"path: {rel!r} leads outside the workspace through a symlink")
            if not cur.is_dir():
                raise InvalidInput(f"path: {cur.relative_to(self.root)} is a file, not a folder")

    def _atomic_write(
        self, full: Path, data: bytes, mode: int | None, *, based_on: bytes | bool | None = True
    ) -> None:
        """Temp file in the same folder, fsync, rename over `full`, fsync the folder.

        `based_on`: the bytes (None: no file) the new text was made from; when the file no
        longer holds them at the last moment before the rename (an editor saved, the daily log
        appended a line), nothing is replaced and _Changed is raised. True: replace regardless.
        """
        folder = full.parent
        tmp = folder / f".{full.name}.{secrets.token_hex(4)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(tmp, flags, 0o666 if mode is None else mode)
        try:
            try:
                if mode is not None:
                    os.fchmod(fd, mode)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            if based_on is not True and _bytes_now(full) != based_on:
                raise _Changed(full)
            os.replace(tmp, full)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        _fsync_dir(folder)

    def _index(self, *paths: Path) -> None:
        report = self.indexer.sync_paths(list(paths))
        if report.errors:
            log.warning("note written but indexing failed", errors=report.errors)

    # -- operations ---------------------------------------------------------------------------

    def read(self, path: object) -> dict[str, Any]:
        rel, full = self.resolve(path)
        data, st = self._read_bytes(full, rel, follow=True)
        return {
            "path": rel,
            "content": data.decode("utf-8", errors="replace"),
            "sha256": sha256_bytes(data),
            "size": len(data),
            "mtime": iso(st.st_mtime),
        }

    def write(
        self, path: object, content: object, expected_sha256: object = None
    ) -> dict[str, Any]:
        rel, full = self.resolve(path)
        data = self._encode(content)
        expected = check_sha(expected_sha256)
        self._check_size(rel, len(data))
        with self._lock, _os_errors(rel):
            current = self._current(full, rel)
            self._check_expected(rel, expected, current[0] if current else None)
            self._ensure_parent(full, rel)
            mode = stat.S_IMODE(current[1].st_mode) if current else None
            based_on = (current[0] if current else None) if expected is not None else True
            try:
                self._atomic_write(full, data, mode, based_on=based_on)
            except _Changed:
                raise Conflict(
                    f"{rel} changed while it was being written; read it again and retry",
                    data={"path": rel, "current_sha256": _sha_now(full)},
                ) from None
            self._index(full)
        log.info("note written", path=rel, bytes=len(data), created=current is None)
        return {"path": rel, "sha256": sha256_bytes(data), "created": current is None}

    def append(
        self, path: object, content: object, expected_sha256: object = None
    ) -> dict[str, Any]:
        """Add text at the end (on a new line); creates the note if it does not exist."""
        rel, full = self.resolve(path)
        added = self._encode(content)
        expected = check_sha(expected_sha256)
        with self._lock, _os_errors(rel):
            for attempt in range(5):  # appends commute: one that raced another is made again
                current = self._current(full, rel)
                if attempt == 0:
                    self._check_expected(rel, expected, current[0] if current else None)
                old = current[0] if current else b""
                sep = b"\n" if old and not old.endswith(b"\n") else b""
                data = old + sep + added
                if not data.endswith(b"\n"):
                    data += b"\n"
                self._check_size(rel, len(data))
                self._ensure_parent(full, rel)
                mode = stat.S_IMODE(current[1].st_mode) if current else None
                try:
                    self._atomic_write(full, data, mode, based_on=current[0] if current else None)
                    break
                except _Changed:
                    continue
            else:
                raise Conflict(f"{rel} kept changing while appending; retry", data={"path": rel})
            self._index(full)
        log.info("note appended", path=rel, bytes=len(added))
        return {"path": rel, "sha256": sha256_bytes(data), "created": current is None}

    def move(
        self, path: object, new_path: object, expected_sha256: object = None
    ) -> dict[str, Any]:
        """Rename a note (never over an existing one); its chunks and vectors follow it."""
        rel, full = self.resolve(path)
        new_rel, new_full = self.resolve(new_path, "new_path")
        expected = check_sha(expected_sha256)
        if expected == "":
            raise InvalidInput('expected_sha256: "" makes no sense for a move')
        if new_rel == rel:
            raise InvalidInput("new_path: same as path")
        with self._lock, _os_errors(rel):
            current = self._current(full, rel)
            if current is None:
                raise NotFound(f"no note at {rel}")
            self._check_expected(rel, expected, current[0])
            if os.path.lexists(new_full):
                raise Refused(f"{new_rel} already exists; move or delete it first")
            self._ensure_parent(new_full, new_rel)
            try:
                os.link(full, new_full)  # fails if new_full appeared meanwhile: no overwrite
            except OSError as exc:
                if exc.errno == errno.EEXIST:
                    raise Refused(f"{new_rel} already exists; move or delete it first") from None
                if exc.errno not in (errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EMLINK):
                    raise
                # Another file system (or no hard links): copy atomically, then remove the old.
                self._atomic_write(new_full, current[0], stat.S_IMODE(current[1].st_mode))
            os.unlink(full)
            _fsync_dir(new_full.parent)
            _fsync_dir(full.parent)
            self._index(full, new_full)
        log.info("note moved", path=rel, new_path=new_rel)
        return {"path": rel, "new_path": new_rel, "sha256": sha256_bytes(current[0])}

    def list(self, path: object = None, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        """Indexed notes under a folder (or all), by path, with title and tags."""
        prefix = "" if path in (None, "", ".", "/") else normalize(path)
        items, total = self.store.read(
            lambda con: store_notes.list_documents(con, prefix, limit, offset)
        )
        return {"items": [note_item(d) for d in items], "total": total}

    def recent(self, *, namespace: str | None, since: float | None, limit: int) -> dict[str, Any]:
        """Recently added or changed memories and recently modified notes, newest first."""

        def q(con: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            return (
                store_notes.recent_memories(con, namespace, since, limit),
                store_notes.recent_documents(con, since, limit),
            )

        memories, docs = self.store.read(q)
        items: list[tuple[float, dict[str, Any]]] = []
        for m in memories:
            items.append(
                (
                    m["updated_at"],
                    {
                        "kind": "memory",
                        "id": m["id"],
                        "at": iso(m["updated_at"]),
                        "change": "added" if m["updated_at"] == m["created_at"] else "updated",
                        "namespace": m["namespace"],
                        "type": m["type"],
                        "tier": m["tier"],
                        "tags": m["tags"],
                        "summary": summary(m["content"]),
                    },
                )
            )
        for d in docs:
            items.append((d["mtime"], {"kind": "note", "at": iso(d["mtime"]), **note_item(d)}))
        items.sort(key=lambda pair: pair[0], reverse=True)
        return {"items": [item for _, item in items[:limit]]}

    def _check_size(self, rel: str, size: int) -> None:
        if size > self.limit():
            raise TooLarge(
                f"{rel}: {size} bytes is over the {self.limit()}-byte note limit "
                f"({self._limit_key()})"
            )


def note_item(d: dict[str, Any]) -> dict[str, Any]:
    """One note for listings: path, size, mtime, title (front matter title, else the first
    heading, else the file name), tags."""
    title = d["meta"].get("title") if isinstance(d.get("meta"), dict) else None
    if not isinstance(title, str) or not title.strip():
        title = d.get("heading") or Path(d["path"]).stem
    return {
        "path": d["path"],
        "size": d["size"],
        "mtime": iso(d["mtime"]),
        "title": title,
        "tags": d["tags"],
    }


class _Changed(Exception):
    """The file changed between reading it and replacing it."""


def _bytes_now(full: Path) -> bytes | None:
    """The file's bytes now (None: no file); never blocks on a FIFO put in the note's place
    (its bytes are then b"", which matches no sha256 a caller read)."""
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        os.set_blocking(fd, True)
        chunks = []
        while block := os.read(fd, 1 << 20):
            chunks.append(block)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _sha_now(full: Path) -> str | None:
    data = _bytes_now(full)
    return None if data is None else sha256_bytes(data)


@contextlib.contextmanager
def _os_errors(rel: str) -> Iterator[None]:
    """A file system failure (disk full, name too long, permission) is the caller's answer, as
    Refused with the system's reason, not an internal error; the old note is still in place."""
    try:
        yield
    except OSError as exc:
        log.warning("note change failed", path=rel, error=str(exc))
        raise Refused(f"cannot change {rel}: {exc.strerror or exc}") from None


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a folder
        pass
    finally:
        os.close(fd)
