"""Whole notes through the daemon: read, write, append, list, move files in the workspace.

Paths are workspace-relative, '/'-separated. Refused, with InvalidInput: absolute paths, `..`
anywhere, NUL bytes, control and bidirectional-override characters, empty names, and any target
the indexer would not index (not `*.md` under the default `indexer.include`, inside a hidden
folder, excluded by `indexer.exclude`): a note written through the API is always a note the
index knows. A path that differs from an existing note's only in Unicode normalization
(composed or decomposed accents) names that note.

Symlinks: a folder or file reached through a symlink must really be inside the workspace (the
real path is checked); writes, appends and moves refuse a note that is itself a symlink (the
rename would replace the link with a file), so write to its target instead. The checks and the
file operations cannot be raced apart: every read, write, rename and link happens relative to a
descriptor of the note's folder, opened one real component at a time from the workspace
without following any symlink, so a folder swapped for a symlink after the check is refused,
never followed.

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
import os
import re
import stat
import threading
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from memoryd.core.errors import Conflict, InvalidInput, NotFound, Refused, TooLarge
from memoryd.core.fsutil import atomic_write_at, fsync_dir, within
from memoryd.core.logsetup import get_logger
from memoryd.core.timeutil import iso
from memoryd.index.indexer import Indexer, sha256_bytes
from memoryd.memory.lifecycle import summary
from memoryd.memory.validation import check_str
from memoryd.store import Store
from memoryd.store import notes as store_notes
from memoryd.text.pathrules import path_accepted

log = get_logger("memoryd.notes.notes")

MAX_PATH_CHARS = 1024
_SHA = re.compile(r"^[0-9a-f]{64}$")
# Right-to-left/left-to-right marks, embeddings, overrides and isolates: they reorder how a
# name is displayed, so a note listed to a person could pass for another.
_BIDI_CONTROLS = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_DIR_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
# O_NONBLOCK: opening a FIFO named like a note would otherwise wait for a writer forever, and a
# few such requests would take every worker thread of the daemon (no effect on regular files).
_READ_FLAGS = (
    os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
)


class NotesSettings(Protocol):
    """Read-only: the frozen config section (memoryd.core.config) satisfies it."""

    @property
    def max_bytes(self) -> int: ...


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
    check_str(path, what)  # no NUL, no lone surrogate
    if any(unicodedata.category(ch) == "Cc" for ch in path):
        raise InvalidInput(f"{what}: contains a control character")
    if any(ch in _BIDI_CONTROLS for ch in path):
        raise InvalidInput(
            f"{what}: contains a bidirectional control character (it makes a name display as "
            "another, e.g. 'x\u202egpj.md' shows as 'xdm.jpg')"
        )
    if len(path) > MAX_PATH_CHARS:
        raise InvalidInput(f"{what}: longer than {MAX_PATH_CHARS} characters")
    # "~/x.md" would mean the home folder to a shell; a file named "~draft.md" is a note
    if (
        path.startswith(("/", "\\", "~/", "~\\"))
        or path == "~"
        or re.match(r"^[A-Za-z]:[\\/]", path)
    ):
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
        lock: threading.Lock | None = None,
    ) -> None:
        self.store = store
        self.indexer = indexer
        self.settings = settings
        self.root = indexer.root
        self.root_real = indexer.root_real
        # Check-then-rename is one step for every writer in this daemon: pass the daily log's
        # lock, or its O_APPEND lines could land in a file an append is about to replace.
        self._lock = lock or threading.Lock()

    # -- paths --------------------------------------------------------------------------------

    def _inside(self, real: str) -> bool:
        return within(real, str(self.root_real))

    def resolve(self, path: object, what: str = "path") -> tuple[str, Path]:
        """(relative path, full path) of a note the API may touch; raises InvalidInput."""
        rel = self._as_on_disk(normalize(path, what))
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

    def _as_on_disk(self, rel: str) -> str:
        """`rel` with each part that does not exist replaced by the one entry of its folder that
        is the same text up to Unicode normalization (NFC), if there is one: 'café.md' typed
        composed finds the note saved decomposed (by macOS, or a vault synced from it) instead
        of creating a second note that looks the same. Names are otherwise kept as given."""
        parts = rel.split("/")
        folder = self.root
        for i, part in enumerate(parts):
            if os.path.lexists(folder / part):
                folder = folder / part
                continue
            key = unicodedata.normalize("NFC", part)
            try:
                same = [n for n in os.listdir(folder) if unicodedata.normalize("NFC", n) == key]
            except OSError:  # the folder does not exist (yet): nor does anything under it
                break
            if len(same) != 1:
                break
            parts[i] = same[0]
            folder = folder / same[0]
        return "/".join(parts)

    def limit(self) -> int:
        return min(self.settings.max_bytes, self.indexer.settings.max_file_bytes)

    def _limit_key(self) -> str:
        if self.settings.max_bytes <= self.indexer.settings.max_file_bytes:
            return "notes.max_bytes"
        return "indexer.max_file_bytes"

    @contextlib.contextmanager
    def _folder(self, rel: str, folder: Path) -> Iterator[int]:
        """A descriptor of `folder`, opened from the workspace one real component at a time
        with O_NOFOLLOW: a component swapped for a symlink after the checks (a race) makes
        this fail instead of leading the write or read out of the workspace."""
        real = os.path.realpath(folder)
        if not self._inside(real):
            raise InvalidInput(f"path: {rel!r} leads outside the workspace through a symlink")
        root = str(self.root_real)
        parts = Path(os.path.relpath(real, root)).parts if real != root else ()
        fd = os.open(root, _DIR_FLAGS)
        try:
            for part in parts:
                try:
                    nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                        raise
                    raise Refused(
                        f"{rel}: a folder on its path was replaced (by a symlink, a file, or "
                        "removed) while the note was being changed; nothing was done, retry"
                    ) from None
                os.close(fd)
                fd = nxt
            yield fd
        finally:
            os.close(fd)

    def _read_at(self, dfd: int, name: str, rel: str) -> tuple[bytes, os.stat_result]:
        """The bytes and stat of `name` in the folder `dfd`, never through a symlink."""
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=dfd)
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

    def _current(self, dfd: int, name: str, rel: str) -> tuple[bytes, os.stat_result] | None:
        """The note's bytes before a change (None if it does not exist); refuses symlinks."""
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(st.st_mode):
            raise Refused(f"{rel} is a symlink; write to the note it points to instead")
        if stat.S_ISDIR(st.st_mode):
            raise InvalidInput(f"{rel} is a folder, not a note")
        return self._read_at(dfd, name, rel)

    def _peek(self, full: Path, rel: str) -> tuple[bytes, os.stat_result] | None:
        """_current before the note's folders may exist (None: no folder, no note; when a part
        of the path is a file, _ensure_parent says which)."""
        if not os.path.isdir(full.parent):
            return None
        with self._folder(rel, full.parent) as dfd:
            return self._current(dfd, full.name, rel)

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
        return check_str(content, what).encode("utf-8")

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
        self,
        dfd: int,
        name: str,
        data: bytes,
        mode: int | None,
        *,
        based_on: bytes | bool | None = True,
    ) -> None:
        """fsutil.atomic_write_at, checking the file at the last moment before the rename.

        `based_on`: the bytes (None: no file) the new text was made from; when the file no
        longer holds them at the last moment before the rename (an editor saved, the daily log
        appended a line), nothing is replaced and _Changed is raised. True: replace regardless.
        """

        def unchanged() -> None:
            if based_on is not True and _bytes_now(dfd, name) != based_on:
                raise _Changed(name)

        atomic_write_at(dfd, name, data, mode, before_replace=unchanged)

    def _index(self, *paths: Path) -> None:
        report = self.indexer.sync_paths(list(paths))
        if report.errors:
            log.warning("note written but indexing failed", errors=report.errors)

    # -- operations ---------------------------------------------------------------------------

    def read(self, path: object) -> dict[str, Any]:
        rel, full = self.resolve(path)
        real = Path(os.path.realpath(full))  # an inner symlink is followed (resolve checked it)
        if not os.path.isdir(real.parent):
            raise NotFound(f"no note at {rel}")
        with self._folder(rel, real.parent) as dfd:
            data, st = self._read_at(dfd, real.name, rel)
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
            current = self._peek(full, rel)
            self._check_expected(rel, expected, current[0] if current else None)
            self._ensure_parent(full, rel)
            mode = stat.S_IMODE(current[1].st_mode) if current else None
            based_on = (current[0] if current else None) if expected is not None else True
            with self._folder(rel, full.parent) as dfd:
                try:
                    self._atomic_write(dfd, full.name, data, mode, based_on=based_on)
                except _Changed:
                    raise Conflict(
                        f"{rel} changed while it was being written; read it again and retry",
                        data={"path": rel, "current_sha256": _sha_now(dfd, full.name)},
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
                current = self._peek(full, rel)
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
                    with self._folder(rel, full.parent) as dfd:
                        based_on = current[0] if current else None
                        self._atomic_write(dfd, full.name, data, mode, based_on=based_on)
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
            current = self._peek(full, rel)
            if current is None:
                raise NotFound(f"no note at {rel}")
            self._check_expected(rel, expected, current[0])
            if os.path.lexists(new_full):
                raise Refused(f"{new_rel} already exists; move or delete it first")
            self._ensure_parent(new_full, new_rel)
            with (
                self._folder(rel, full.parent) as sfd,
                self._folder(new_rel, new_full.parent) as dfd,
            ):
                try:  # fails if new_full appeared meanwhile: no overwrite
                    os.link(
                        full.name,
                        new_full.name,
                        src_dir_fd=sfd,
                        dst_dir_fd=dfd,
                        follow_symlinks=False,
                    )
                except OSError as exc:
                    if exc.errno == errno.EEXIST:
                        raise Refused(
                            f"{new_rel} already exists; move or delete it first"
                        ) from None
                    if exc.errno not in (errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EMLINK):
                        raise
                    # No hard links here: copy atomically, then remove the old.
                    mode = stat.S_IMODE(current[1].st_mode)
                    self._atomic_write(dfd, new_full.name, current[0], mode, based_on=None)
                os.unlink(full.name, dir_fd=sfd)
                fsync_dir(dfd)
                fsync_dir(sfd)
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


def _bytes_now(dfd: int, name: str) -> bytes | None:
    """The file's bytes now (None: no file); a FIFO put in the note's place reads as b"" (which
    matches no sha256 a caller read) instead of blocking."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dfd)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return f.read()


def _sha_now(dfd: int, name: str) -> str | None:
    data = _bytes_now(dfd, name)
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
