"""Whole notes through the daemon: read, write, append, list, move files in the workspace.

Paths are workspace-relative, '/'-separated (an absolute one inside it is read so). Refused,
with InvalidInput: other absolute paths, `..`, NUL bytes, control and bidi characters, empty
names, and any target the indexer would not index (not `*.md` under the default include, in a
hidden folder, excluded): a note written through the API is always one the index knows. A path
that differs from a note's only in Unicode normalization (NFC or NFD accents) names that note.

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
written as given, in the encoding and line ends of the note they replace (notes/keep.py: also
its mode and extended attributes; a read-only note is refused): front matter is the caller's to
keep (read, edit, write back), and `append` never touches it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from memoryd.core.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    Refused,
    StoreError,
    StoreUnavailable,
    TooLarge,
    Unavailable,
    describe,
)
from memoryd.core.fsutil import (
    PRIVATE_DIR,
    SHARED_DIR,
    as_on_disk,
    from_absolute,
    fsync_dir,
    make_dirs,
    unused_folder,
    within,
)
from memoryd.core.logsetup import get_logger
from memoryd.core.swap import READ_FLAGS, Changed, bytes_now, guarded_write_at
from memoryd.core.timeutil import iso
from memoryd.index.indexer import ROOT_AWAY, Indexer, sha256_bytes
from memoryd.memory.lifecycle import summary
from memoryd.memory.validation import check_str, guard
from memoryd.notes import keep
from memoryd.notes.fsops import (
    DIR_FLAGS,
    check_expected,
    check_sha,
    move_whole,
    normalize,
    os_errors,
    sha_now,
)
from memoryd.store import Store, docpaths, entries, pages
from memoryd.store import notes as store_notes
from memoryd.text import decoding
from memoryd.text.pathrules import path_accepted

log = get_logger("memoryd.notes.notes")


class NotesSettings(Protocol):
    """Read-only: the frozen config section (memoryd.core.config) satisfies it."""

    @property
    def max_bytes(self) -> int: ...


class Notes:
    """Whole-note operations on one workspace, indexed through `indexer` after each change."""

    def __init__(
        self,
        store: Store,
        indexer: Indexer,
        settings: NotesSettings,
        lock: threading.Lock | None = None,
        *,
        trash: Path | None = None,
        secrets_mode: str = "refuse",
    ) -> None:
        self.store = store
        # where `trash` moves deleted paths (one folder per deletion, named by the time)
        self.trash_dir = trash
        # [secrets] mode: the same guard, error and allow_secrets switch as a memory's content
        self.secrets_mode = secrets_mode
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
        """(relative path, full path) of a note the API may touch; raises InvalidInput, and
        Unavailable while the workspace folder is gone (nothing is made in its place)."""
        rel = normalize(from_absolute(path, self.root), what)
        self._root_here()
        rel = self._as_on_disk(rel)
        if not path_accepted(rel, self.indexer.settings):
            raise InvalidInput(
                f"{what}: {describe(rel)} is not a note memoryd indexes (notes are files matching "
                "indexer.include, *.md by default, outside hidden folders and indexer.exclude, "
                "and not an editor's or sync tool's own file)"
            )
        full = self.root / rel
        real = os.path.realpath(full)
        if not self._inside(real):
            raise InvalidInput(
                f"{what}: {describe(rel)} leads outside the workspace through a symlink"
            )
        if self.indexer.is_private(rel):
            raise InvalidInput(
                f"{what}: {describe(rel)} is memoryd's own data (data_dir, log file or socket), "
                "not a note"
            )
        return rel, full

    def _root_here(self) -> None:
        """Unavailable while the workspace folder is gone (serve/workspaceguard.py)."""
        if not os.path.isdir(self.root):
            raise Unavailable(
                f"{ROOT_AWAY}: {self.root}; notes can be read, written and deleted once it is back"
            )

    def _as_on_disk(self, rel: str) -> str:
        """fsutil.as_on_disk in this workspace: 'café.md' typed composed is the note saved
        decomposed, instead of a second note that looks the same."""
        return as_on_disk(self.root, rel)

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
            raise InvalidInput(
                f"path: {describe(rel)} leads outside the workspace through a symlink"
            )
        root = str(self.root_real)
        parts = Path(os.path.relpath(real, root)).parts if real != root else ()
        fd = os.open(root, DIR_FLAGS)
        try:
            for part in parts:
                try:
                    nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
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
            fd = os.open(name, READ_FLAGS, dir_fd=dfd)
        except FileNotFoundError:
            raise NotFound(f"no note at {describe(rel)}") from None
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
            raise Refused(keep.symlinked(rel, self.root / rel, self.root_real))
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
                cur.mkdir(mode=SHARED_DIR)
            if not self._inside(os.path.realpath(cur)):
                raise InvalidInput(
                    f"path: {describe(rel)} leads outside the workspace through a symlink"
                )
            if not cur.is_dir():
                raise InvalidInput(f"path: {cur.relative_to(self.root)} is a file, not a folder")

    def _atomic_write(
        self,
        dfd: int,
        name: str,
        data: bytes,
        mode: int | None,
        *,
        based_on: bytes | None,
    ) -> None:
        """core.swap.guarded_write_at; with `based_on` (the bytes the new text was made from,
        None: no file): when the file does not hold them at the moment
        of the swap (an editor saved or appended, the daily log added a line), nothing of the
        new text stays and Changed is raised. The old file's extended attributes go to the new
        one (keep.copy_xattrs)."""

        def xattrs(tmp: str) -> None:
            keep.copy_xattrs(dfd, name, tmp)

        guarded_write_at(dfd, name, data, mode, based_on, before=xattrs)

    def _index(self, rel: str, *paths: Path) -> dict[str, Any]:
        """Index what was just changed. The file change is done whatever happens here: a store
        that fails or refuses its write now (PostgreSQL away, a full disk, another program's
        lock) makes no error of the answer (a client would append twice); the index catches up."""
        refusals, before = self.store.refusals, self.store.refusals.last_refused
        try:
            report = self.indexer.sync_paths(list(paths))
            refused = refusals.error if report.errors and refusals.last_refused != before else None
        except (StoreError, StoreUnavailable) as exc:
            refused = exc.message
        if refused is not None:
            log.warning("note written; indexing it waits for the store", path=rel, error=refused)
            warning = f"the file was written; the index is not updated yet ({refused}) and "
            return {"indexed": False, "warning": warning + "catches up by itself: do not retry"}
        if report.errors:
            log.warning("note written but indexing failed", errors=report.errors)
        return {}

    def _guard(self, text: bytes, allow_secrets: object) -> None:
        """The secret guard memories use (memory.validation.guard), over a note's new text:
        in refuse mode (the default) a credential is refused with the same error and hint,
        unless allow_secrets; redact and warn modes keep the text as written (a note is the
        person's file, never rewritten by memoryd), off does nothing."""
        guard({"content": text.decode("utf-8", errors="replace")}, self.secrets_mode, allow_secrets)

    def _incoming(
        self, path: object, content: object, expected_sha256: object, allow_secrets: object
    ) -> tuple[str, Path, bytes, str | None]:
        """What every write through the door checks first, in this order: the path, the text,
        the expected sha256, the secret guard. (rel, full path, bytes, expected sha)."""
        rel, full = self.resolve(path)
        data = self._encode(content)
        expected = check_sha(expected_sha256)
        self._guard(data, allow_secrets)
        return rel, full, data, expected

    # -- operations ---------------------------------------------------------------------------

    def read(self, path: object) -> dict[str, Any]:
        rel, full = self.resolve(path)
        real = Path(os.path.realpath(full))  # an inner symlink is followed (resolve checked it)
        if not os.path.isdir(real.parent):
            raise NotFound(f"no note at {describe(rel)}")
        with self._folder(rel, real.parent) as dfd:
            data, st = self._read_at(dfd, real.name, rel)
        text, encoding, _ = decoding.decode(data)  # as the indexer reads it
        return {
            "path": rel,
            "content": text,
            "encoding": encoding,
            "sha256": sha256_bytes(data),
            "size": len(data),
            "mtime": iso(st.st_mtime),
        }

    def write(
        self,
        path: object,
        content: object,
        expected_sha256: object = None,
        *,
        allow_secrets: object = False,
    ) -> dict[str, Any]:
        rel, full, data, expected = self._incoming(path, content, expected_sha256, allow_secrets)
        self._check_size(rel, len(data))
        with self._lock, os_errors(rel):
            for _ in range(5):  # without expected: the version replaced is the one it names
                current = self._peek(full, rel)
                check_expected(rel, expected, current[0] if current else None)
                out, kept = keep.replacing(rel, data, current)  # its encoding; not read-only
                self._check_size(rel, len(out))
                self._ensure_parent(full, rel)
                mode = stat.S_IMODE(current[1].st_mode) if current else None
                with self._folder(rel, full.parent) as dfd:
                    try:
                        old = current[0] if current else None
                        self._atomic_write(dfd, full.name, out, mode, based_on=old)
                        break
                    except Changed:
                        if expected is not None:
                            raise Conflict(
                                f"{rel} changed while it was being written; read it again and "
                                "retry",
                                data={"path": rel, "current_sha256": sha_now(dfd, full.name)},
                            ) from None
            else:
                raise Conflict(
                    f"{rel} kept changing while it was written; retry", data={"path": rel}
                )
            index = self._index(rel, full)
        log.info("note written", path=rel, bytes=len(out), created=current is None)
        if "warning" in kept and "warning" in index:  # both said
            index["warning"] = f"{kept['warning']}; {index['warning']}"
        sha = sha256_bytes(out)
        return {"path": rel, "sha256": sha, "created": current is None, **kept, **index}

    def append(
        self,
        path: object,
        content: object,
        expected_sha256: object = None,
        *,
        allow_secrets: object = False,
    ) -> dict[str, Any]:
        """Add text at the end (on a new line); creates the note if it does not exist."""
        if content == "":  # it would change nothing, or create an empty note, and say "appended"
            raise InvalidInput("content: must not be empty (nothing to append)")
        rel, full, added, expected = self._incoming(path, content, expected_sha256, allow_secrets)
        with self._lock, os_errors(rel):
            for attempt in range(5):  # appends commute: one that raced another is made again
                current = self._peek(full, rel)
                if attempt == 0:
                    check_expected(rel, expected, current[0] if current else None)
                if current is not None:
                    keep.check_writable(rel, current[1])
                old = current[0] if current else b""
                data = old + keep.appended(old, added)
                self._check_size(rel, len(data))
                self._ensure_parent(full, rel)
                mode = stat.S_IMODE(current[1].st_mode) if current else None
                try:
                    with self._folder(rel, full.parent) as dfd:
                        based_on = current[0] if current else None
                        self._atomic_write(dfd, full.name, data, mode, based_on=based_on)
                    break
                except Changed:
                    continue
            else:
                raise Conflict(f"{rel} kept changing while appending; retry", data={"path": rel})
            index = self._index(rel, full)
        log.info("note appended", path=rel, bytes=len(added))
        return {"path": rel, "sha256": sha256_bytes(data), "created": current is None, **index}

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
        with self._lock, os_errors(rel):
            current = self._peek(full, rel)
            if current is None:
                raise NotFound(f"no note at {describe(rel)}")
            check_expected(rel, expected, current[0])
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
            index = self._index(rel, full, new_full)
        log.info("note moved", path=rel, new_path=new_rel)
        return {"path": rel, "new_path": new_rel, "sha256": sha256_bytes(current[0]), **index}

    def trash(
        self, path: object, *, dry_run: bool = False, expected_sha256: object = None
    ) -> dict[str, Any]:
        """Delete by workspace path: the file (or folder) moves to <data_dir>/trash/<time>/ (so
        nothing is lost) and its chunks leave the index; with `expected_sha256`, only the note
        at that version (checked under the writers' lock, as a write's)."""
        if self.trash_dir is None:
            raise Refused("deleting notes needs a trash folder; this Notes has none")
        self._root_here()
        # a symlink is deleted itself: the link goes to the trash, never what it points to
        rel, full = self.indexer.resolve_path(path, keep_link=True)
        expected = check_sha(expected_sha256)
        if expected == "":
            raise InvalidInput('expected_sha256: "" makes no sense for a delete')
        if self.indexer.holds_private(rel):
            raise InvalidInput(
                f"path: {describe(rel)} is or holds memoryd's own data (data_dir, log file or "
                "socket); it is not a workspace note and is not deleted through the API"
            )
        docs = self.store.read(entries.documents)
        paths = sorted(p for p in docs if p == rel or p.startswith(rel + "/"))
        here = os.path.lexists(full)
        if not here and not paths:
            raise NotFound(f"nothing at {describe(rel)} in the workspace or the index")
        target = unused_folder(self.trash_dir, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()), rel)
        index: dict[str, Any] = {}
        with self._lock, os_errors(rel):
            if expected is not None and not here:
                check_expected(rel, expected, None)
            elif expected is not None:
                with self._folder(rel, full.parent) as dfd:
                    check_expected(rel, expected, bytes_now(dfd, full.name))
            if not dry_run:
                if here:
                    make_dirs((target / rel).parent, PRIVATE_DIR)
                    move_whole(full, target / rel, target)
                index = self._index(rel, full)
                log.info("note deleted", path=rel, trash=str(target / rel))
        return {
            "deleted": len(paths),
            "paths": paths,
            "trash": str(target / rel),
            "dry_run": dry_run,
            **index,
        }

    def forget_hashes(self, under: str | None = None) -> None:
        """Make the next reconcile read, chunk and store every note again (or those at or under
        the workspace path `under`), in place (search keeps answering meanwhile; vectors are
        reused through their text hashes)."""
        if under is None:
            self.store.run_write(entries.forget_document_hashes)
        else:
            self.store.run_write(lambda con: docpaths.forget_hashes_under(con, under))

    def list(
        self, path: object = None, limit: int = 50, offset: int = 0, cursor: object = None
    ) -> dict[str, Any]:
        """Indexed notes under a folder (or all), by path, with title and tags; next_cursor."""
        prefix = "" if path in (None, "", ".", "/") else self._as_on_disk(normalize(path))
        got = self.store.read(lambda c: pages.document_page(c, prefix, limit, offset, cursor))
        return {"items": [note_item(d) for d in got[0]], "total": got[1], "next_cursor": got[2]}

    def recent(self, *, namespace: str | None, since: float | None, limit: int, now: float) -> Any:
        """Memories added or changed (not expired at `now`), notes modified, newest first;
        `has_more`: `limit` left some out (one more of each is read to know)."""

        def q(con: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            return (
                store_notes.recent_memories(con, namespace, since, limit + 1, now),
                store_notes.recent_documents(con, since, limit + 1),
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
        return {"items": [item for _, item in items[:limit]], "has_more": len(items) > limit}

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
