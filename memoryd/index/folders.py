"""The indexer's walk of the workspace a folder at a time, and the reconcile's comparison of each
folder with the documents stored for it.

A reconcile compared a scan of the whole workspace (a `FileState` per file) with every stored
document (a `DocumentInfo` per note) at once: at 24K notes ~17 MB of Python objects at its peak,
and the hourly reconcile left ~5 MB of the daemon's memory resident after it (the allocator's
arenas that other threads' objects landed in meanwhile stay; BENCHMARKS.md, issue 23.2). Here it
holds one folder's files and reads that folder's documents one row at a time; only the
differences (new, changed and vanished files) are kept for the whole walk, because a move is
recognised across folders (its old path's hash). And the other names of a note (symlinks to
it, hard links), which change with it (other_names)."""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from memoryd.core.logsetup import get_logger
from memoryd.index.attachments import OtherFiles
from memoryd.store import docpaths, entries
from memoryd.store.entries import DocumentInfo
from memoryd.store.protocol import Connection, Store
from memoryd.text.pathrules import PathRules, path_accepted, shown

log = get_logger("memoryd.index.indexer")


class Skip(Exception):
    """This file is not indexed; the message says why."""


@dataclass(frozen=True, slots=True)
class FileState:
    """A file the walk found. Lean (`__slots__`, the path to open as a `str`): a walk of 24,368
    notes held 16 MB of these with a `Path` and a `__dict__` each, 7.7 MB without (BENCHMARKS.md,
    issue 23.2, branch soak5); the reconcile now holds one folder's at a time."""

    path: str  # workspace-relative, '/' separated
    real: str | Path  # the file to open: the path in the workspace, or a symlink's target
    size: int
    mtime: float


class WalkSettings(PathRules, Protocol):
    @property
    def follow_symlinks(self) -> bool: ...


class Walker(Protocol):
    """What the walk reads of the indexer (memoryd.index.indexer.Indexer)."""

    root: Path
    root_real: Path
    private: tuple[str, ...]
    skipped: dict[str, str]
    links_to: dict[str, set[str]]
    dangling: set[str]
    others: OtherFiles
    store: Store

    @property
    def settings(self) -> WalkSettings: ...

    def is_private(self, rel: str) -> bool: ...

    def _inside(self, real: str) -> bool: ...

    def _stat(self, rel: str) -> FileState: ...

    def _skip(self, rel: str, exc: Skip, report: Any) -> None: ...


def walk(ix: Walker, report: Any, under: str = ".") -> Iterator[tuple[str, dict[str, FileState]]]:
    """(folder, its accepted regular files) for every folder under the workspace (or its folder
    `under`), following only inner symlinks; "" is the workspace's top. Files skipped on the way
    are logged (and counted in `report`, an indexer Report or None); when the walk ends, the
    names of the other files seen are kept (ix.others)."""
    others: set[str] = set()
    seen_dirs: set[str] = set()
    if under in (".", ""):
        ix.skipped.clear()  # a whole walk finds again every file still skipped
    s = ix.settings
    for dirpath, dirnames, filenames in os.walk(ix.root / under, followlinks=s.follow_symlinks):
        real_dir = os.path.realpath(dirpath)
        rel_dir = Path(dirpath).relative_to(ix.root).as_posix()
        folder = "" if rel_dir == "." else rel_dir
        if real_dir in seen_dirs or not ix._inside(real_dir) or alias_of(ix, folder) is not None:
            dirnames[:] = []
            if not ix._inside(real_dir):
                log.warning(
                    "skipped folder: symlink leads outside the workspace", path=shown(dirpath)
                )
            continue
        seen_dirs.add(real_dir)
        prefix = folder + "/" if folder else ""
        if s.skip_hidden:
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        if ix.private:
            dirnames[:] = [d for d in dirnames if not ix.is_private(prefix + d)]
        found: dict[str, FileState] = {}
        for name in filenames:
            rel = prefix + name
            if not path_accepted(rel, s) or ix.is_private(rel):
                if ix.others.wanted(rel):
                    others.add(rel)
                continue
            try:
                found[rel] = ix._stat(rel)
            except Skip as exc:
                ix._skip(rel, exc, report)
            except FileNotFoundError:
                continue
        yield folder, found
    ix.others.replace(under, others)


def alias_of(ix: Walker, folder: str) -> str | None:
    """The workspace folder that `folder` ("" for the top) stands for through a symlink on its
    way (`notes/link -> ../projects`, a loop `a/up -> ..`), when the walk visits that folder
    under its own name; None for a folder that is itself, or whose target the walk skips (a
    hidden or private folder, outside the workspace). The files of a folder reached two ways are
    indexed once, under the real folder's path, whichever way the walk or a watcher's event
    came first."""
    own = os.path.join(ix.root_real, folder) if folder else str(ix.root_real)
    real = os.path.realpath(ix.root / folder) if folder else own
    if real == own or not ix._inside(real):
        return None
    target = Path(os.path.relpath(real, ix.root_real)).as_posix()
    target = "" if target == "." else target
    hidden = ix.settings.skip_hidden and any(p.startswith(".") for p in target.split("/") if p)
    if hidden or (target and ix.is_private(target)):
        return None
    return target


def canonical(ix: Walker, rel: str) -> str:
    """A workspace path as the walk indexes it: a file under a symlinked folder that stands for
    another workspace folder (alias_of) is that folder's file."""
    folder, _, name = rel.rpartition("/")
    if not folder:
        return rel
    target = alias_of(ix, folder)
    if target is None:
        return rel
    return f"{target}/{name}" if target else name


MAX_OLD_HASHES = 64  # the old bytes looked up for a new name with hard links (a batch's moves)


class Vanished:
    """The hashes of the notes that vanished in the last minute, newest first: a hard link
    renamed and edited (a git pull) is indexed under its new name in a later batch than the one
    its old name vanished in when the rename's two events come apart (a loaded machine), and its
    other names are found by the old bytes' hash (other_names)."""

    def __init__(self, keep_s: float = 60.0) -> None:
        self.keep_s = keep_s
        self._at: dict[str, float] = {}

    def add(self, shas: Iterable[str], now: float) -> None:
        for sha in shas:
            self._at.pop(sha, None)
            self._at[sha] = now
        self._at = {s: t for s, t in self._at.items() if now - t <= self.keep_s}

    def recent(self, now: float) -> list[str]:
        return [s for s, t in reversed(self._at.items()) if now - t <= self.keep_s]


def other_names(ix: Walker, state: FileState, old_shas: Iterable[str]) -> list[FileState]:
    """The other names of a note just indexed at `state` with new bytes, which changed with it:
    the symlinks leading to its file (ix.links_to, kept by the walk; they are notes again when
    the file comes back) and, when it has hard links, the documents stored with its old bytes
    (`old_shas`: the note's own, or for a new name the vanished ones of its batch, as when a
    hard link is renamed and edited) that are still the same file. A save through any name
    raises a file event for one name only (the file's own, or the hard link written through)."""
    try:
        st = os.stat(state.real)
    except OSError:
        return []
    names = set(ix.links_to.get(os.path.realpath(state.real), ()))
    if st.st_nlink > 1:
        for sha in list(dict.fromkeys(old_shas))[:MAX_OLD_HASHES]:
            names.update(ix.store.read(functools.partial(docpaths.with_sha, sha=sha)))
    names.discard(state.path)
    found = []
    for rel in sorted(names):
        try:
            other = ix._stat(rel)
            same = os.stat(other.real)
        except (OSError, Skip):
            continue  # gone or skipped: its own event or the reconcile says so
        if (same.st_dev, same.st_ino) == (st.st_dev, st.st_ino):
            log.info("another name of a note changed", path=rel, via=state.path)
            found.append(other)
    return found


def stat_target(ix: Walker, rel: str, target: str) -> os.stat_result:
    """os.stat of a symlink's target, remembering the symlinks that lead nowhere: every one
    (a bound would leave the rest out of the index when their files come back, until the next
    reconcile); they are files of the workspace, and a whole walk forgets those gone."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        ix.dangling.add(rel)
        raise
    ix.dangling.discard(rel)
    return st


def dangling_back(ix: Walker) -> list[FileState]:
    """The symlinks last seen leading nowhere that lead to a note again, looked at after every
    change: their file came back, and its event names the file, not the symlinks, however it
    came (renamed back, checked out, its folder made or moved back or made a symlink, a link of
    a chain made; and when the daemon only ever saw the symlink dangling, after a restart)."""
    found = []
    for rel in sorted(ix.dangling):
        try:
            found.append(ix._stat(rel))
        except FileNotFoundError:
            if not os.path.lexists(os.path.join(ix.root, rel)):
                ix.dangling.discard(rel)  # the symlink itself is gone
        except Skip:
            ix.dangling.discard(rel)  # its own event or the reconcile says why
    return found


def symlinks_to(ix: Walker, gone: Iterable[str]) -> list[str]:
    """The notes that are symlinks (ix.links_to) to these notes that vanished or moved away:
    the file event names the note, not the symlinks that now lead nowhere."""
    names: set[str] = set()
    for rel in gone:
        names |= ix.links_to.get(os.path.realpath(os.path.join(ix.root, rel)), set())
    return sorted(names.difference(gone))


def drift(
    ix: Walker, on_disk: dict[str, FileState], read: Callable[[FileState], bytes]
) -> dict[str, Any]:
    """The differences between the index and the files on disk (`on_disk`, a scan), changing
    nothing: `memoryctl status --check`."""
    indexed = ix.store.read(entries.documents)
    missing = sorted(p for p in on_disk if p not in indexed)
    gone = sorted(p for p in indexed if p not in on_disk)
    stale = []
    for p, s in on_disk.items():
        d = indexed.get(p)
        if d is None or (d.size == s.size and d.mtime == s.mtime):
            continue
        try:
            if hashlib.sha256(read(s)).hexdigest() != d.sha256:
                stale.append(p)
        except (Skip, OSError):
            stale.append(p)
    orphans = ix.store.read(entries.orphan_chunk_count)
    return {
        "files_missing_from_index": missing,
        "missing_on_disk": gone,
        "stale": sorted(stale),
        "orphan_chunks": int(orphans),
        "total": len(missing) + len(gone) + len(stale) + int(orphans),
    }


class Differences:
    """What a reconcile found different, folder by folder: the files to index (new or with
    another size or mtime than stored) and the stored documents whose file is gone."""

    def __init__(self) -> None:
        self.todo: list[FileState] = []
        self.vanished: dict[str, DocumentInfo] = {}
        self.files = 0
        self.unchanged = 0
        self._folders: set[str] = set()

    def folder(self, con: Connection, folder: str, found: dict[str, FileState]) -> None:
        """Compare one folder's files with the documents stored directly in it."""
        self._folders.add(folder)
        self.files += len(found)
        for path, sha, size, mtime in docpaths.in_folder(con, folder):
            state = found.pop(path, None)
            if state is None:
                self.vanished[path] = DocumentInfo(path, sha, size, mtime)
            elif state.size == size and state.mtime == mtime:
                self.unchanged += 1
            else:
                self.todo.append(state)
        self.todo.extend(found.values())  # not stored yet

    def rest(self, con: Connection) -> None:
        """The stored documents of every folder the walk did not reach (gone, now hidden,
        excluded, memoryd's own, or an alias of a folder already walked)."""
        for path, sha, size, mtime in docpaths.every(con):
            if path.rpartition("/")[0] not in self._folders:
                self.vanished[path] = DocumentInfo(path, sha, size, mtime)


def differences(ix: Walker, report: Any) -> Differences:
    """Walk the workspace a folder at a time against the store. The walk finds again every
    symlinked note (where it leads, or that it leads nowhere): the symlink maps hold the
    workspace's symlinks of now, and those that events found since, never every one seen."""
    ix.links_to.clear()
    ix.dangling.clear()
    diff = Differences()
    for folder, found in walk(ix, report):
        ix.store.read(functools.partial(diff.folder, folder=folder, found=found))
    ix.store.read(diff.rest)
    return diff
