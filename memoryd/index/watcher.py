"""File watching: the watchdog observer feeding a per-file debounce.

Each pending path becomes due `debounce` seconds after its last event, so an editor's burst of
write/rename/chmod yields one delivery; a path written without pause is still delivered
`max_wait` (1 s) after its first event, so a file that is appended to all the time is searchable
within about a second of any write. Paths are kept in groups: the two ends of a move share one
group, so they are always delivered in the same batch and the indexer can match the vanished
path's hash with the appeared one's; a later event on either end postpones both. Everything
under a folder that is being moved joins that folder's group.

Files are filtered by `accept`. Folder events are not (a folder's name says nothing about the
files in it): a deleted or moved-away folder is delivered as its path (the consumer treats a
missing path as everything indexed under it); a created or moved-in folder is walked when it
comes due and delivered, with the accepted files under it, only if it holds any (an empty folder,
or one with nothing but `.git` objects, is nothing to index). A folder nested in another folder
of the same batch is left out: the outer one covers it.

Only events that can change content are subscribed to (create, write, close after writing,
attributes, delete, move): opening and reading files in the workspace (an `rg`, an editor's
preview) costs the daemon nothing, because the kernel does not report it. An attribute change
counts (watchdog reports it as its own event type): a file made readable again with chmod is
indexed at once, and a folder made readable again is walked like one that appeared.

`on_file`, when given, hears at once of every file or folder that appears or vanishes, notes or
not: the indexer keeps the names of the other files (attachments) current with it.

When the kernel's event queue overflows, events are lost: the watcher calls `on_overflow` so the
owner can compare the whole workspace with the index at once.

A folder the kernel will not watch (fs.inotify.max_user_watches reached: the watches are the
user's, shared with every program) is polled instead, and with no inotify instance at all
(fs.inotify.max_user_instances) every folder is: index/watchpoll.py; `stats["polled"]` says so.

One dispatcher thread calls `on_change` with sorted, unique absolute paths, so deliveries never
overlap; an exception there goes to `on_error` (or the log) and the watcher carries on.
"""

from __future__ import annotations

import errno
import math
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from watchdog.events import (
    DirAttribEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)

from memoryd.core.logsetup import get_logger
from memoryd.index import fstype, watchpoll

log = get_logger("memoryd.index.watcher")

# flags of a pending path
_DIR = watchpoll.DIR  # a folder
_WALK = watchpoll.WALK  # a folder that appeared: deliver the accepted files under it as well
_OPTIONAL = watchpoll.OPTIONAL  # drop the folder if nothing accepted is under it

_IGNORED_TYPES = frozenset({"opened", "closed_no_write"})
_IGNORED_DIR_TYPES = frozenset({"modified", "closed", "opened", "closed_no_write"})


# The events that can change what is indexed. Left out: opened, closed without writing (reads)
# and a folder's own "modified" (its mtime changes with every file event inside it); the inotify
# mask is built from this list, so the kernel does not even queue those.
CONTENT_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileAttribEvent,  # chmod: a file made readable again is indexed now
    FileClosedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    DirAttribEvent,  # chmod on a folder: the files in it may be readable now
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]

MAX_WAIT = 1.0  # seconds: the longest a path waits for its events to pause


class _Group:
    """Paths delivered together, with the times of their first and last event."""

    __slots__ = ("first", "last", "paths")

    def __init__(self, now: float) -> None:
        self.first = now
        self.last = now
        self.paths: dict[Path, int] = {}


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def dispatch(self, event: FileSystemEvent) -> None:
        self.watcher.handle(event)


class Watcher:
    """Watches `root` recursively and calls `on_change(paths)` with debounced batches."""

    def __init__(
        self,
        root: Path,
        on_change: Callable[[list[Path]], object],
        *,
        debounce: float = 0.5,
        accept: Callable[[Path], bool] = lambda p: True,
        on_error: Callable[[BaseException], None] | None = None,
        on_overflow: Callable[[], None] | None = None,
        max_wait: float = MAX_WAIT,
        on_file: Callable[[Path], None] | None = None,
    ) -> None:
        self.root = Path(os.path.abspath(root))
        self._bases = {self.root, Path(os.path.realpath(self.root))}
        self.identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the folder watched
        self.filesystem: str | None = None  # its fstype (index/fstype.py), when it can be told
        self.on_change = on_change
        self.debounce = _check_debounce(debounce)
        self.accept = accept
        self.on_error = on_error
        self.on_overflow = on_overflow
        # on_file(path): a file or folder (accepted or not) appeared or vanished; called on the
        # observer thread at once, for cheap bookkeeping (the indexer's attachment names)
        self.on_file = on_file
        self.max_wait = _check_debounce(max_wait)
        self._cond = threading.Condition()
        self._where: dict[Path, _Group] = {}  # pending path -> its group
        self._groups: set[_Group] = set()
        self._moving_dirs: set[Path] = set()  # pending ends of folder moves
        self._started = False
        self._stopping = False
        self._flush = True
        self._observer: Any = None
        self._dispatcher: threading.Thread | None = None
        # the folders inotify may not watch (its limits), polled; paths join the debounce
        self.poller = watchpoll.Poller(self._polled)
        self._counts: dict[str, Any] = {
            "events_seen": 0,
            "batches_delivered": 0,
            "errors": 0,
            "overflows": 0,
            "last_event_at": None,
        }

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the observer and the dispatcher thread.

        Raises OSError when the root is missing or cannot be watched for another reason than a
        limit; nothing is left running then. A folder inotify may not watch (its limits) is
        polled instead (index/watchpoll.py); with no inotify instance at all, every folder is.
        """
        with self._cond:
            if self._started:
                raise RuntimeError("a Watcher can be started once")
            self._started = True
        root = str(self.root)
        if not os.path.exists(root):
            raise FileNotFoundError(errno.ENOENT, f"cannot watch {root}: no such folder", root)
        if not os.path.isdir(root):
            raise NotADirectoryError(errno.ENOTDIR, f"cannot watch {root}: not a folder", root)
        st = os.stat(root)
        self.identity = (st.st_dev, st.st_ino)  # the folder watched; the App compares it
        self.filesystem = fstype.filesystem(root)
        if fstype.remote(self.filesystem):
            log.warning(
                "the workspace is on a network or shared file system: a change made from "
                "another machine (or the host) raises no file event here; the reconcile job "
                "finds it (jobs.reconcile_interval)",
                root=root,
                filesystem=self.filesystem,
            )
        # the folder itself, not a symlink naming it (`workspace = "~/notes"`, a link to a
        # synced folder): watchdog watches a symlink as a symlink (IN_DONT_FOLLOW), which has
        # no events for the files in the folder; the events name the real folder's paths, which
        # _inside takes as the root's
        real = os.path.realpath(root)
        self._dispatcher = threading.Thread(
            target=self._run, name="memoryd-watch-dispatch", daemon=True
        )
        self._dispatcher.start()  # first: a folder found unwatched is polled into it at once
        observer = None
        try:
            observer = watchpoll.make_observer(self._overflowed, self.poller.add)
            observer.name = "memoryd-watch-observer"
            self.poller.watch_again = lambda folder: any(
                e.watch_again(folder) for e in list(observer.emitters) if hasattr(e, "watch_again")
            )
            if not getattr(observer, "reports_unwatched", True) and _too_many_folders(real):
                raise OSError(errno.ENOSPC, "inotify watch limit reached")
            observer.schedule(_Handler(self), real, recursive=True, event_filter=CONTENT_EVENTS)
            observer.start()
        except Exception as exc:
            if observer is not None:
                observer.stop()  # the inotify reader thread runs from the constructor on
            code = getattr(exc, "errno", None)
            if code not in watchpoll.LIMITS:
                self.stop(flush=False)
                raise _start_error(root, exc) from exc
            self.poller.watch_again = None  # no inotify here: every folder is polled
            self.poller.add_tree(Path(real), code)
            log.info("polling workspace", root=root, every_s=self.poller.every)
            return
        self._observer = observer
        log.info("watching workspace", root=root, debounce=self.debounce)

    def stop(self, timeout: float = 5.0, *, flush: bool = True) -> None:
        """Stop watching and join the threads (within `timeout` seconds in all).

        With `flush`, paths still waiting for their debounce are delivered before this returns;
        without, they are dropped. Safe to call more than once, before start, or from on_change
        (the last delivery then happens once on_change returns).
        """
        deadline = time.monotonic() + timeout
        self.poller.stop(timeout / 4)
        observer = self._observer
        if observer is not None:
            try:
                observer.stop()
                # at most half the time: a slow observer thread (a loaded machine) must not
                # leave the dispatcher, which delivers the pending paths, no time at all
                observer.join(timeout / 2)
            except Exception:
                log.exception("stopping the file observer failed")
        with self._cond:
            if not self._stopping:
                self._stopping = True
                self._flush = flush
            self._cond.notify_all()
        dispatcher = self._dispatcher
        if dispatcher is not None and dispatcher is not threading.current_thread():
            dispatcher.join(max(0.0, deadline - time.monotonic()))
            if dispatcher.is_alive():
                log.warning("file change handler still busy after stop", timeout=timeout)

    @property
    def alive(self) -> bool:
        """The observer (its inotify reader and emitter) and the dispatcher are running."""
        observer, dispatcher = self._observer, self._dispatcher
        if dispatcher is None or self._stopping:
            return False
        if observer is None:  # no inotify instance: every folder is polled
            return dispatcher.is_alive() and self.poller.alive and self.poller.count > 0
        emitters = list(observer.emitters)
        # watchdog's inotify observer reads the kernel queue in a thread of its own
        reader = getattr(observer, "_inotify_fd", None)
        return (
            observer.is_alive()
            and dispatcher.is_alive()
            and bool(emitters)
            and all(e.is_alive() for e in emitters)
            and (not isinstance(reader, threading.Thread) or reader.is_alive())
            and self.poller.alive
        )

    @property
    def stats(self) -> dict[str, Any]:
        """A snapshot: events_seen (watchdog events received), batches_delivered, errors
        (on_change raised), last_event_at (unix seconds or None), pending (paths waiting), alive,
        polled (the folders inotify may not watch, polled instead: watchpoll.Poller.info)."""
        with self._cond:
            snap = dict(self._counts, pending=len(self._where))
        snap["alive"] = self.alive
        snap["polled"] = self.poller.info()
        return snap

    def set_debounce(self, seconds: float) -> None:
        """Change the debounce (SIGHUP); it applies to paths already waiting as well."""
        seconds = _check_debounce(seconds)
        with self._cond:
            self.debounce = seconds
            self._cond.notify_all()

    # -- events (observer thread) --------------------------------------------------------------

    def handle(self, event: FileSystemEvent) -> None:
        """Take one watchdog event (the observer calls this). Never raises."""
        try:
            self._handle(event)
        except Exception:  # an odd event must not kill the observer thread
            log.exception("ignored a file event that could not be handled", event=repr(event))

    def _handle(self, event: FileSystemEvent) -> None:
        kind = event.event_type
        with self._cond:
            self._counts["events_seen"] += 1
            self._counts["last_event_at"] = time.time()
        if kind in _IGNORED_TYPES:
            return
        src = self._inside(event.src_path)
        dest = self._inside(getattr(event, "dest_path", None)) if kind == "moved" else None
        if self.on_file is not None and kind in ("created", "deleted", "moved"):
            for end in (src, dest):
                if end is not None:
                    self.on_file(end)
        if event.is_directory:
            if kind in _IGNORED_DIR_TYPES:
                return
            if src is None and dest is None and self._is_root(event.src_path):
                log.warning("the workspace folder itself was deleted or moved; watching stopped")
                return
            entries: list[tuple[Path, int]] = []
            if src is not None:
                appeared = kind in ("created", "attrib")  # attrib: chmod +rx, walk it again
                entries.append((src, _DIR | _WALK | _OPTIONAL if appeared else _DIR))
            if dest is not None:
                entries.append((dest, _DIR | _WALK | _OPTIONAL))
            self._touch(entries, moving=kind == "moved")
            return
        ends = [p for p in (src, dest) if p is not None]
        # a move is delivered whole if either end is wanted (renamed, moved in or moved out)
        if ends and any(self._accepts(p) for p in ends):
            self._touch([(p, 0) for p in ends])

    def _polled(self, entries: list[tuple[Path, int]], ends: list[Path]) -> None:
        """Changes the poller found in folders inotify does not watch, taken as their events."""
        with self._cond:
            self._counts["events_seen"] += len(entries)
            self._counts["last_event_at"] = time.time()
        if self.on_file is not None:
            for path in ends:
                self.on_file(path)
        self._touch([(p, f) for p, f in entries if f & _DIR or self._accepts(p)])

    def _overflowed(self) -> None:
        """The kernel dropped events (watchdog has re-added its watches by now)."""
        with self._cond:
            self._counts["overflows"] += 1
        log.warning("file events were lost (inotify queue overflow); the owner reconciles")
        if self.on_overflow is not None:
            try:
                self.on_overflow()
            except Exception:
                log.exception("the watcher's overflow handler failed")

    def _inside(self, raw: str | bytes | None) -> Path | None:
        """The absolute path if it is strictly under the root, else None."""
        if not raw:
            return None
        path = Path(os.path.abspath(os.fsdecode(raw)))
        for base in self._bases:
            if path != base and path.is_relative_to(base):
                return path
        return None

    def _is_root(self, raw: str | bytes) -> bool:
        return Path(os.path.abspath(os.fsdecode(raw))) in self._bases

    def _accepts(self, path: Path) -> bool:
        try:
            return bool(self.accept(path))
        except Exception:  # let the consumer decide; it applies its own rules again
            log.exception("accept filter failed; passing the path on", path=str(path))
            return True

    def _touch(self, entries: list[tuple[Path, int]], *, moving: bool = False) -> None:
        """Record events on `entries` (path, flags): they join one group, whose last event is
        now. Paths under a folder being moved join that folder's group."""
        if not entries:
            return
        now = time.monotonic()
        with self._cond:
            linked = {self._where[p] for p, _ in entries if p in self._where}
            if self._moving_dirs:
                for p, _ in entries:
                    for parent in p.parents:
                        if parent in self._moving_dirs:
                            linked.add(self._where[parent])
                            break
            group = self._merge(linked) if linked else _Group(now)
            self._groups.add(group)
            group.last = now
            for path, flags in entries:
                old = group.paths.get(path)
                merged = (old or 0) | flags
                if not flags & _OPTIONAL or (old is not None and not old & _OPTIONAL):
                    merged &= ~_OPTIONAL  # deleted, or moved away, at some point: deliver it
                group.paths[path] = merged
                self._where[path] = group
                if moving:
                    self._moving_dirs.add(path)
            # a new event never brings a deadline forward, so the dispatcher needs waking only
            # when it is waiting for the first one
            if len(self._groups) == 1 and not linked:
                self._cond.notify_all()

    def _merge(self, groups: set[_Group]) -> _Group:
        keep = max(groups, key=lambda g: len(g.paths))
        for other in groups - {keep}:
            keep.first = min(keep.first, other.first)
            keep.last = max(keep.last, other.last)
            keep.paths.update(other.paths)  # a path is in one group only
            for path in other.paths:
                self._where[path] = keep
            self._groups.discard(other)
        return keep

    # -- delivery (dispatcher thread) ----------------------------------------------------------

    def _due_at(self, group: _Group) -> float:
        return min(group.last + self.debounce, group.first + self.max_wait)

    def _take(self, groups: Iterable[_Group]) -> dict[Path, int]:
        batch: dict[Path, int] = {}
        for group in list(groups):
            self._groups.discard(group)
            for path, flags in group.paths.items():
                batch[path] = batch.get(path, 0) | flags
                del self._where[path]
                self._moving_dirs.discard(path)
        return batch

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopping:
                        pending = self._take(self._groups)
                        batch, final = (pending if self._flush else {}), True
                        break
                    now = time.monotonic()
                    due = [g for g in self._groups if self._due_at(g) <= now]
                    if due:
                        batch, final = self._take(due), False
                        break
                    wake = min((self._due_at(g) for g in self._groups), default=None)
                    self._cond.wait(None if wake is None else wake - now)
            paths = self._expand(batch)
            if paths:
                self._deliver(paths)
            if final:
                return

    def _expand(self, batch: dict[Path, int]) -> list[Path]:
        """The batch's paths, with the accepted files under appeared folders, nested folders
        left out, and appeared folders holding nothing accepted dropped."""
        folders = {p for p, f in batch.items() if f & _DIR}
        out: set[Path] = set()
        for path, flags in batch.items():
            if not flags & _DIR:
                out.add(path)
                continue
            if any(parent in folders for parent in path.parents):
                continue  # the outer folder covers it
            found = self._accepted_files_under(path) if flags & _WALK else []
            if found or not flags & _OPTIONAL:
                out.add(path)
            with self._cond:  # a file with events of its own waits for its own debounce
                out.update(p for p in found if p not in self._where)
        return sorted(out)

    def _accepted_files_under(self, folder: Path) -> list[Path]:
        found: list[Path] = []
        for dirpath, _dirs, files in os.walk(folder):
            found.extend(p for p in (Path(dirpath, f) for f in files) if self._accepts(p))
        return found

    def _deliver(self, paths: list[Path]) -> None:
        try:
            self.on_change(paths)
        except Exception as exc:
            with self._cond:
                self._counts["errors"] += 1
            if self.on_error is None:
                log.exception("handling file changes failed", paths=len(paths))
                return
            try:
                self.on_error(exc)
            except Exception:
                log.exception("the watcher's error handler failed", paths=len(paths))
        else:
            with self._cond:
                self._counts["batches_delivered"] += 1


def _check_debounce(seconds: float) -> float:
    seconds = float(seconds)
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"debounce must be a number of seconds >= 0, not {seconds!r}")
    return seconds


def _too_many_folders(root: str) -> bool:
    """The tree has more folders than inotify may watch (for a watchdog that skips the folders
    it cannot watch without a word)."""
    limit = watchpoll.limit_value(watchpoll.WATCHES)
    if limit is None:
        return False
    folders = 0
    for _dirpath, dirs, _files in os.walk(root):
        folders += len(dirs)
        if folders + 1 > limit:
            return True
    return False


def _start_error(root: str, exc: BaseException) -> OSError:
    code = getattr(exc, "errno", None)
    return OSError(code or errno.EIO, f"cannot watch {root}: {exc}")
