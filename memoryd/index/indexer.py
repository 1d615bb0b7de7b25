"""Workspace indexer: reconcile the workspace with the index, and apply changes file by file.

A file is re-indexed only when its SHA-256 differs from the stored one; a stat change alone
(touch, save without change) only refreshes the stored stat. A file that vanished while another
with the same hash appeared is a move: its chunks keep their rows (and, through their text
hashes, their vectors) under the new path. Odd files (too large, unreadable, symlink loops,
symlinks leading out of the workspace, names that are not UTF-8, vanishing mid-read) are skipped
with one log line each; text in UTF-16/32 with a byte order mark is decoded, bytes that are not
UTF-8 are read as Windows-1252; a file that would make more than `max_chunks_per_file` chunks
keeps its first ones. Nothing here raises for a bad file."""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from memoryd.core.errors import InvalidInput, MemorydError, describe
from memoryd.core.fsutil import as_on_disk, from_absolute, is_dir, resolved, within
from memoryd.core.logsetup import get_logger
from memoryd.index import folders
from memoryd.index.attachments import OtherFiles
from memoryd.index.folders import FileState, Skip, canonical, differences, walk
from memoryd.memory.validation import check_str
from memoryd.store import Store, docpaths, entityclaims, entries, links, logmarks, notetext
from memoryd.store.entitystage import enqueue as entities_later
from memoryd.store.entries import DocumentInfo, NewChunk
from memoryd.text import decoding, logmarkers, markdown, notehead, obsidian
from memoryd.text.decoding import LEGACY
from memoryd.text.pathrules import PathRules, path_accepted, shown, valid_name

log = get_logger("memoryd.index.indexer")


class IndexerSettings(PathRules, Protocol):
    """Read-only: the frozen config section (memoryd.core.config) satisfies it."""

    @property
    def max_file_bytes(self) -> int: ...

    @property
    def chunk_max_tokens(self) -> int: ...

    @property
    def chunk_overlap_tokens(self) -> int: ...

    @property
    def max_chunks_per_file(self) -> int: ...

    @property
    def follow_symlinks(self) -> bool: ...


@dataclass(frozen=True)
class Note:
    fm: markdown.FrontMatter
    chunks: list[markdown.Chunk]
    tags: tuple[str, ...]
    links: list[obsidian.Link]
    text: str  # as indexed, line ends made "\n": its entities are read from it later
    # front-matter values every chunk's keyword row holds, and the first one's too (notehead)
    props: tuple[str | None, str | None] = (None, None)


MAX_SKIPPED_LISTED = 1000


@dataclass
class Report:
    indexed: int = 0
    unchanged: int = 0
    deleted: int = 0
    moved: int = 0
    skipped: int = 0
    chunks: int = 0
    took_ms: float = 0.0
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def changed(self) -> bool:
        return bool(self.indexed or self.deleted or self.moved)


ROOT_AWAY = "the workspace folder is missing (moved, deleted or unmounted); the index is kept"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the indexer -------------------------------------------------------------------------------


class Indexer:
    """Keeps the store's documents and chunks equal to the workspace's markdown files."""

    def __init__(
        self,
        store: Store,
        workspace: Path,
        settings: IndexerSettings,
        *,
        preprocess: Callable[[str, str], str] | None = None,
        on_change: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.time,
        private: Iterable[Path] = (),
    ) -> None:
        self.store = store
        self.root = Path(workspace)
        self.root_real = Path(os.path.realpath(self.root))
        # memoryd's own files (data_dir, the log file, the socket) inside the workspace: never
        # indexed, written or trashed through the API (a checkpoint would keep deleted memories
        # searchable, the log would index itself, `delete path` could move the database away)
        self.private = tuple(
            real
            for real in (os.path.realpath(p) for p in private)
            if self._inside(real) and real != str(self.root_real)
        )
        self.settings = settings
        # preprocess(relpath, text) -> text: the daily log strips the daemon's own lines here.
        self.preprocess = preprocess
        self.on_change = on_change
        self.clock = clock
        self._lock = threading.RLock()
        # set when the daemon stops: a reconcile under way ends after the file in hand (the
        # next start's reconcile indexes the rest), instead of the store closing under it
        self.stopping = threading.Event()
        self.totals = Report()
        # the files skipped now, by path, with the reason (status names them); bounded
        self.skipped: dict[str, str] = {}
        # the notes that are symlinks to other files, by the file they lead to (other_names)
        self.links_to: dict[str, set[str]] = {}
        self.dangling: set[str] = set()  # the symlinks last seen leading nowhere (folders.py)
        self.gone = folders.Vanished()  # the hashes of notes that vanished lately (other_names)
        self.last_reconcile: dict[str, Any] | None = None
        # the names of the files that are not notes, for links to attachments
        self.others = OtherFiles(self.root, lambda: self.settings, self.is_private, self.relpath)

    # -- paths --------------------------------------------------------------------------------

    def relpath(self, path: Path) -> str | None:
        """Workspace-relative '/' path, or None for a path outside the workspace."""
        p = Path(os.path.abspath(path))
        for root in (self.root, self.root_real):
            try:
                return p.relative_to(root).as_posix()
            except ValueError:
                continue
        return None

    def resolve_path(
        self, path: object, *, root_ok: bool = False, keep_link: bool = False
    ) -> tuple[str, Path]:
        """A workspace file or folder an API request names: (workspace-relative path, resolved
        full path). InvalidInput when it is not text, cannot be resolved (a symlink loop) or
        lies outside the workspace (or is the workspace itself, unless root_ok). keep_link:
        resolve the folders on the way but not the last name (a symlink names itself)."""
        text = str(from_absolute(check_str(path, "path", limit=4096).strip(), self.root))
        if not text:
            raise InvalidInput(
                "path: must not be empty (a workspace-relative path like 'notes/idea.md')"
            )
        raw = self.root / as_on_disk(self.root, text)  # 'café' typed: the 'café' on disk
        try:
            last = keep_link and raw.name not in ("", ".", "..")
            full = resolved(raw.parent) / raw.name if last else resolved(raw)
        except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, ...
            raise InvalidInput(f"path: cannot resolve {describe(text)} ({exc})") from None
        rel = self.relpath(full)
        if rel is None or (rel in (".", "") and not root_ok):
            raise InvalidInput(f"path: {describe(text)} is outside the workspace")
        return rel, full

    def accepts(self, path: Path) -> bool:
        rel = self.relpath(path)
        return (
            rel is not None
            and rel != "."
            and path_accepted(rel, self.settings)
            and not self.is_private(rel)
        )

    def is_private(self, rel: str) -> bool:
        """True for a workspace path that is, or lies under, one of memoryd's own files."""
        if not self.private:
            return False
        real = os.path.realpath(self.root / rel)
        return any(within(real, p) for p in self.private)

    def holds_private(self, rel: str) -> bool:
        """True for a workspace path that is, or holds, one of memoryd's own files."""
        if not self.private:
            return False
        real = os.path.realpath(self.root / rel)
        return self.is_private(rel) or any(p.startswith(real + os.sep) for p in self.private)

    def _inside(self, real: str) -> bool:
        return within(real, str(self.root_real))

    def scan(self, report: Report | None = None, under: str = ".") -> dict[str, FileState]:
        """Every accepted regular file under the workspace (or its folder `under`), following
        only inner symlinks. Files skipped on the way are logged (and counted in `report`);
        the names of the other files seen are kept (self.others)."""
        found: dict[str, FileState] = {}
        for _, files in walk(self, report, under):
            found.update(files)
        return found

    def _skip(self, rel: str, exc: Skip, report: Report | None) -> None:
        """Log, count and remember a skipped file (status lists them with the reason)."""
        log.warning("skipped file", path=shown(rel), reason=str(exc))
        if report is not None:
            report.skipped += 1
        if rel in self.skipped or len(self.skipped) < MAX_SKIPPED_LISTED:
            self.skipped[shown(rel)] = str(exc)

    def _stat(self, rel: str) -> FileState:
        if not valid_name(rel):
            raise Skip("file name is not valid UTF-8 (rename the file to index it)")
        full = os.path.join(self.root, rel)
        try:
            st = os.lstat(full)
            real = full
            if stat.S_ISLNK(st.st_mode):
                if not self.settings.follow_symlinks:
                    raise Skip("symlink (indexer.follow_symlinks is false)")
                target = os.path.realpath(full)
                if not self._inside(target):
                    raise Skip("symlink leads outside the workspace")
                real = target
                self.links_to.setdefault(target, set()).add(rel)
                st = folders.stat_target(self, rel, real)
        except FileNotFoundError:
            raise
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Skip("symlink loop") from exc
            raise Skip(f"unreadable ({exc.strerror or exc})") from exc
        if not stat.S_ISREG(st.st_mode):
            raise Skip("not a regular file")
        if st.st_size > self.settings.max_file_bytes:
            raise Skip(f"larger than indexer.max_file_bytes ({self.settings.max_file_bytes})")
        return FileState(rel, real, st.st_size, st.st_mtime)

    def _read(self, state: FileState) -> bytes:
        # O_NONBLOCK: a file swapped for a FIFO between the scan's stat and this open would
        # otherwise block the indexer thread until some writer opens the FIFO (forever).
        flags = (
            os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        )
        try:
            fd = os.open(state.real, flags)
        except PermissionError as exc:
            raise Skip("unreadable (permission denied)") from exc
        except OSError as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise Skip(f"unreadable ({exc.strerror})") from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise Skip("not a regular file")
            limit = self.settings.max_file_bytes
            chunks, total = [], 0
            while True:
                block = os.read(fd, 1 << 20)
                if not block:
                    break
                chunks.append(block)
                total += len(block)
                if total > limit:
                    raise Skip(f"larger than indexer.max_file_bytes ({limit})")
            return b"".join(chunks)
        finally:
            os.close(fd)

    # -- applying changes ---------------------------------------------------------------------

    def reconcile(self, progress: Callable[[int, int], None] | None = None) -> Report:
        """Compare the whole workspace with the index and repair every difference."""
        with self._lock:
            started = time.perf_counter()
            report = Report()
            if self._root_away(report):
                self.last_reconcile = {"at": self.clock(), **report.as_dict()}
                return report
            # a folder at a time: one folder's files and stored rows held, not the workspace's
            diff = differences(self, report)
            report.unchanged += diff.unchanged
            self._apply(diff.todo, diff.vanished, report, progress)
            report.took_ms = round((time.perf_counter() - started) * 1000, 1)
            if self.stopping.is_set():  # cut short (_apply): not a reconcile of the workspace
                return report
            self.last_reconcile = {"at": self.clock(), **report.as_dict()}
            log.info("reconciled", files=diff.files, **_brief(report))
            return report

    def sync_paths(self, paths: Iterable[Path]) -> Report:
        """Bring the given paths (files or folders, existing or not) up to date: the watcher's
        entry point. Moves are recognised when the old and new path come in one call."""
        with self._lock:
            started = time.perf_counter()
            report = Report()
            if self._root_away(report):
                return report
            # a file under a symlinked folder is the real folder's file (folders.canonical)
            rels = [
                canonical(self, r) for r in map(self.relpath, map(Path, paths)) if r is not None
            ]
            # only the documents at or under these paths, not the whole table (issue 23.2)
            indexed = self.store.read(lambda con: docpaths.documents_at(con, rels))
            todo: dict[str, FileState] = {}
            vanished: dict[str, DocumentInfo] = {}
            for rel in rels:
                full = self.root / rel if rel != "." else self.root
                if is_dir(full):
                    if rel in indexed:  # a note replaced by a folder of its name
                        vanished[rel] = indexed[rel]
                    for p, s in self._scan_under(rel).items():
                        todo[p] = s
                    prefix = "" if rel == "." else rel + "/"
                    for p, d in indexed.items():
                        if p.startswith(prefix) and not (self.root / p).exists():
                            vanished[p] = d
                    continue
                prefix = rel + "/"
                gone_under = [p for p in indexed if p.startswith(prefix)]
                for p in gone_under:  # a folder that vanished
                    if not (self.root / p).exists():
                        vanished[p] = indexed[p]
                if not path_accepted(rel, self.settings) or self.is_private(rel):
                    if rel in indexed:  # excluded since it was indexed
                        vanished[rel] = indexed[rel]
                    continue
                try:
                    todo[rel] = self._stat(rel)
                except FileNotFoundError:
                    self.skipped.pop(shown(rel), None)
                    if rel in indexed:
                        vanished[rel] = indexed[rel]
                except Skip as exc:
                    self._skip(rel, exc, report)
                    if rel in indexed:
                        vanished[rel] = indexed[rel]
            self._apply(list(todo.values()), vanished, report, None)
            report.took_ms = round((time.perf_counter() - started) * 1000, 1)
            if report.changed or report.skipped:
                log.info("synced", **_brief(report))
            return report

    def _root_away(self, report: Report) -> bool:
        """The workspace folder itself is gone (unmounted, moved away, deleted): nothing is
        applied, so the index is not emptied of every note (and re-embedded when it is back);
        the App looks for the folder and reconciles when it returns."""
        if is_dir(self.root):
            return False
        report.errors.append(f"{ROOT_AWAY}: {self.root}")
        log.error(ROOT_AWAY, root=str(self.root))
        return True

    def _scan_under(self, rel: str) -> dict[str, FileState]:
        if rel in (".", ""):
            return self.scan()
        if os.path.realpath(self.root / rel) != os.path.join(self.root_real, rel):
            # a symlink on the way (a loop, an alias of another folder): the whole walk decides
            # where its files belong, as a reconcile would
            prefix = rel + "/"
            return {p: s for p, s in self.scan().items() if p.startswith(prefix)}
        return self.scan(under=rel)  # a folder event walks that folder only

    def _apply(
        self,
        todo: list[FileState],
        vanished: dict[str, DocumentInfo],
        report: Report,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        by_sha: dict[str, list[str]] = {}
        for p, d in vanished.items():
            by_sha.setdefault(d.sha256, []).append(p)
        self.gone.add(by_sha, time.monotonic())
        total = len(todo)
        moved_from: set[str] = set()
        for n, state in enumerate(sorted(todo, key=lambda s: s.path), start=1):
            if self.stopping.is_set():
                log.info("indexing stopped: memoryd is stopping", left=total - n + 1)
                return
            try:
                old = self._index_one(state, by_sha, report)
                if old is not None:
                    moved_from.add(old)
            except FileNotFoundError:
                log.info("file vanished while reading", path=state.path)
            except Skip as exc:
                self._skip(state.path, exc, report)
            except Exception as exc:  # one bad file never stops the rest; a refusal: no traceback
                bug = not isinstance(exc, MemorydError)  # (a full disk is said in one line)
                log.error("indexing failed", path=state.path, error=str(exc), exc_info=bug)
                report.errors.append(f"{state.path}: {exc}")
            if progress is not None:
                progress(n, total)
        for p in vanished:
            if p in moved_from:
                continue
            self.skipped.pop(p, None)
            chunks = self.store.run_write(functools.partial(entries.delete_document, path=p))
            report.deleted += 1
            log.info("deleted", path=p, chunks=chunks)
        for rel in folders.symlinks_to(self, vanished):  # they lead nowhere now, or somewhere else
            try:
                self._index_one(self._stat(rel), {}, report)
            except (FileNotFoundError, Skip):
                if self.store.run_write(functools.partial(entries.delete_document, path=rel)):
                    report.deleted += 1
                    log.info("deleted: its symlink leads nowhere now", path=rel)
        for state in folders.dangling_back(self) if report.changed else ():
            with contextlib.suppress(FileNotFoundError, Skip):  # gone again, or its event says
                self._index_one(state, {}, report)  # a symlink leads to a note again
        for key in ("indexed", "unchanged", "deleted", "moved", "skipped", "chunks"):
            setattr(self.totals, key, getattr(self.totals, key) + getattr(report, key))
        if report.changed and self.on_change is not None:
            self.on_change()

    def _index_one(
        self, state: FileState, by_sha: dict[str, list[str]], report: Report
    ) -> str | None:
        """Index one file; returns the old path when it turned out to be a move."""
        started = time.perf_counter()
        data = self._read(state)
        self.skipped.pop(state.path, None)
        sha = sha256_bytes(data)
        current = self.store.read(lambda con: entries.document(con, state.path))
        if current is not None and current.sha256 == sha:
            self.store.run_write(
                lambda con: entries.touch_document(con, state.path, state.size, state.mtime)
            )
            report.unchanged += 1
            return None
        if current is None and by_sha.get(sha) and self._reads_alike(by_sha[sha][0], state, data):
            old = by_sha[sha].pop(0)
            # chunks and vectors stay; the mentions are read again, as the file name is a form
            # of the note's title (`[[new-name]]` names it, `[[old-name]]` in no new note does)
            text, fm, _, _ = self._front(
                state.path, self._preprocessed(state.path, self._decoded(state, data))
            )

            def move(con: Any) -> None:
                entries.move_document(con, old, state.path, state.mtime)
                links.note_dates(con, state.path, fm, self.clock())
                entities_later(con, state.path, text, ())  # its mentions read again

            self.store.run_write(move)
            report.moved += 1
            log.info("moved", path=state.path, old_path=old)
            return old
        raw = self._decoded(state, data)
        note = self._parse(state.path, self._preprocessed(state.path, raw))
        marks = logmarkers.marker_ids(raw)  # before the daily log blanks its own lines
        doc = DocumentInfo(state.path, sha, state.size, state.mtime, note.fm.raw)
        every, lead = note.props  # the note's front-matter values (notehead.props)
        new_chunks = [
            NewChunk(
                c.seq,
                c.content,
                c.content_hash,
                c.heading_path,
                c.start_line,
                c.end_line,
                "\n".join(v for v in (every, lead if i == 0 else None) if v) or None,
            )
            for i, c in enumerate(note.chunks)
        ]
        now = self.clock()
        fm = note.fm

        def write(con: Any) -> int:
            held = entityclaims.held_by_note(con, state.path)  # what its old text claimed
            count = entries.replace_document(
                con,
                doc,
                new_chunks,
                type_=fm.type or "note",
                tags=note.tags,
                importance=fm.importance or 5,
                expires_at=fm.expires_at,
                now=now,
            )
            notetext.refresh(con, state.path)  # the whole note's keyword row (issue 19.2)
            links.replace_links(con, state.path, note.links)
            logmarks.replace(con, state.path, marks)
            links.note_dates(con, state.path, fm, now)
            # its entities later, in indexing order (store/entitystage.py)
            entities_later(con, state.path, note.text, held)
            return count

        n = self.store.run_write(write)
        report.indexed += 1
        report.chunks += n
        # a note with other names changed under them too
        before = [current.sha256] if current is not None else self.gone.recent(time.monotonic())
        for other in folders.other_names(self, state, before):
            self._index_one(other, by_sha, report)
        log.debug(
            "indexed",
            path=state.path,
            chunks=n,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )
        return None

    def _reads_alike(self, old: str, state: FileState, data: bytes) -> bool:
        """Whether a file moved from `old` reads the same at its new path (its chunks are kept
        only if so): the preprocess hook may read by path (the daily log's header), and a note
        with no title of its own files its chunks under its file name (notehead.title_of)."""
        text, pre = decoding.decode(data)[0], self.preprocess or (lambda _, t: t)
        fm, body, _ = markdown.parse_front_matter(pre(state.path, text).replace("\r\n", "\n"))
        named = notehead.title_of(old, fm, body) == notehead.title_of(state.path, fm, body)
        return named and pre(old, text) == pre(state.path, text)

    def _preprocessed(self, path: str, text: str) -> str:
        """The file's text as indexed: through the preprocess hook."""
        return text if self.preprocess is None else self.preprocess(path, text)

    def _decoded(self, state: FileState, data: bytes) -> str:
        """The file's text (a warning when bytes were replaced)."""
        text, encoding, lossy = decoding.decode(data)
        if lossy:
            log.warning(
                "invalid text, indexed with replacement characters",
                path=state.path,
                encoding=encoding,
            )
        elif encoding.endswith(LEGACY):
            log.info("not UTF-8: its other bytes read as Windows-1252", path=state.path)
        return text

    def _front(self, path: str, text: str) -> tuple[str, markdown.FrontMatter, str, int]:
        """The note's text with its line ends made "\n", its front matter (a warning when it
        is ignored), its body and the body's first line."""
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        fm, body, first = markdown.parse_front_matter(text)
        if fm.error:
            log.warning("front matter ignored", path=path, reason=fm.error)
        return text, fm, body, first

    def _parse(self, path: str, text: str) -> Note:
        """Front matter, chunks, tags (front matter and inline) and links of one note."""
        s = self.settings
        text, fm, body, first = self._front(path, text)
        chunks = markdown.chunk_markdown(
            body,
            first_line=first,
            max_tokens=s.chunk_max_tokens,
            overlap_tokens=s.chunk_overlap_tokens,
            max_chunks=s.max_chunks_per_file,
        )
        if len(chunks) > s.max_chunks_per_file:
            log.warning(
                "too many chunks: only the first ones are indexed",
                path=path,
                kept=s.max_chunks_per_file,
                setting="indexer.max_chunks_per_file",
            )
            chunks = chunks[: s.max_chunks_per_file]
        props = notehead.props(path, fm, body)  # its front-matter values, for the keyword rows
        if not chunks and first > 1 and fm.raw:
            # a note of properties only (a person, a map of notes): its front matter, as
            # written, is its one chunk, so its aliases, tags and values are found
            block = "\n".join(text.split("\n")[: first - 1])
            chunks = [markdown.Chunk(0, block, (), 1, first - 1, markdown.sha256_text(block))]
            props = (None, None)
        masked = obsidian.mask_code(body)
        tags = obsidian.expand_tags([*fm.tags, *obsidian.inline_tags(body, masked)])
        chunks = notehead.dressed(chunks, path, fm, body, first)  # title, aliases
        return Note(fm, chunks, tags, obsidian.links(body, first, masked), text, props)

    # -- drift --------------------------------------------------------------------------------

    def drift(self) -> dict[str, Any]:
        """Compare the index with the workspace on disk without changing anything."""
        return folders.drift(self, self.scan(), self._read)


def _brief(r: Report) -> dict[str, Any]:
    return {k: v for k, v in r.as_dict().items() if v and k != "errors"} | (
        {"errors": len(r.errors)} if r.errors else {}
    )
