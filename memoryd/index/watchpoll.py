"""The folders inotify cannot watch, polled; and watchdog's inotify observer with the two hooks the
watcher needs (a queue overflow, a folder it could not watch).

inotify watches one folder per watch, and the watches of a user are shared by every program
(`fs.inotify.max_user_watches`: IDEs, sync tools, other daemons); the inotify instances too
(`fs.inotify.max_user_instances`). watchdog skips a folder it cannot watch without a word, so a
vault with more folders than the watches left would silently stop seeing changes in some of
them. Here each folder whose watch the kernel refused (ENOSPC, EMFILE: a limit) is polled
instead: its entries are compared with the last look every `POLL_EVERY_S` seconds (longer when
a look takes long: never more than a tenth of the time), and a change is handed to the watcher
as if an event had said it. Each round first tries to watch the folder again (another program
may have freed watches, or the limit was raised): a folder watched again leaves the poll, after
one last look. When no inotify instance can be had at all, every folder is polled.

`status` shows the count and the sysctl to raise (watcher.polled); the log says it once.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.core.logsetup import get_logger

log = get_logger("memoryd.index.watcher")

# flags of a pending path (the watcher's)
DIR = 1  # a folder
WALK = 2  # a folder that appeared: deliver the accepted files under it as well
OPTIONAL = 4  # drop the folder if nothing accepted is under it (only created/moved-in folders)

POLL_EVERY_S = 5.0  # seconds between two looks at the folders that are not watched
LIMITS = (errno.ENOSPC, errno.EMFILE)  # the kernel's words for "a limit is reached"

WATCHES = "fs.inotify.max_user_watches"
INSTANCES = "fs.inotify.max_user_instances"
RAISE = {
    WATCHES: f"sudo sysctl {WATCHES}=524288",
    INSTANCES: f"sudo sysctl {INSTANCES}=1024",
}

Entry = tuple[Path, int]
Snapshot = dict[str, tuple[bool, int, int, int]]  # name -> (folder, mtime_ns, size, inode)


def limit_value(name: str) -> int | None:
    """The sysctl's value on Linux, else None."""
    try:
        return int(Path("/proc/sys", *name.split(".")).read_text())
    except (OSError, ValueError):
        return None


def _look(folder: Path) -> Snapshot | None:
    """The folder's entries now, None when it is gone or unreadable."""
    out: Snapshot = {}
    try:
        with os.scandir(folder) as it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                    is_dir = e.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                out[e.name] = (is_dir, st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        return None
    return out


class Poller:
    """The folders that are not watched, each with its last look; a thread looks again."""

    def __init__(
        self,
        touch: Callable[[list[Entry], list[Path]], None],
        *,
        every: float | None = None,
        watch_again: Callable[[Path], bool] | None = None,
    ) -> None:
        # the watcher's: entries as if an event had named them, and the paths that appeared or
        # vanished among them (the others changed)
        self.touch = touch
        self.every = POLL_EVERY_S if every is None else every
        self.watch_again = watch_again  # True when inotify watches the folder now
        self.limit: str | None = None  # the sysctl reached (WATCHES or INSTANCES)
        self._folders: dict[Path, Snapshot] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._said = False
        self.last_round_s: float | None = None

    # -- folders in and out -------------------------------------------------------------------

    def add(self, folder: Path, code: int | None = None) -> None:
        """The kernel refused to watch `folder` (code: its errno): poll it from now on."""
        snap = _look(folder)
        if snap is None:
            return  # gone already: its parent's event or look says so
        limit = INSTANCES if code == errno.EMFILE else WATCHES
        with self._lock:
            self._folders.setdefault(folder, snap)
            self.limit = self.limit or limit
            said, self._said = self._said, True
        if not said:
            value = limit_value(limit)
            log.warning(
                "inotify limit reached: folders that cannot be watched are polled every "
                f"{self.every:g} s instead (status: watcher.polled); raise the limit: "
                f"`{RAISE[limit]}`",
                folder=str(folder),
                limit=f"{limit} = {value}" if value is not None else limit,
            )
        self.start()

    def add_tree(self, root: Path, code: int | None) -> None:
        """No inotify at all (the instance limit): every folder under `root` is polled."""
        self.add(root, code)
        for dirpath, dirs, _files in os.walk(root):
            for d in dirs:
                p = Path(dirpath, d)
                if not p.is_symlink():
                    self.add(p, code)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._folders)

    def info(self) -> dict[str, Any] | None:
        """For status: None when every folder is watched."""
        with self._lock:
            n, limit = len(self._folders), self.limit
        if not n or limit is None:
            return None
        return {
            "folders": n,
            "every_s": round(max(self.every, 10 * (self.last_round_s or 0.0)), 1),
            "limit": limit,
            "value": limit_value(limit),
            "raise": RAISE[limit],
        }

    # -- the thread ---------------------------------------------------------------------------

    def start(self) -> None:
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(
                target=self._run, name="memoryd-watch-poll", daemon=True
            )
        try:
            self._thread.start()
        except RuntimeError:  # no thread to be had (RLIMIT_NPROC): the reconcile job finds it
            log.error("cannot start the thread that polls unwatched folders", exc_info=True)
            with self._lock:
                self._thread = None

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout)

    @property
    def alive(self) -> bool:
        """No folder to poll, or the thread polling them runs."""
        t = self._thread
        return not self.count or (t is not None and t.is_alive())

    def _run(self) -> None:
        wait = self.every
        while not self._stop.wait(wait):
            started = time.monotonic()
            try:
                self.look_once()
            except Exception:  # an odd folder must not end the polling
                log.exception("polling the unwatched folders failed")
            self.last_round_s = time.monotonic() - started
            wait = max(self.every, 10 * self.last_round_s)  # at most a tenth of the time

    def look_once(self) -> None:
        """One round: each folder watched again if it can be, else compared with its last look."""
        with self._lock:
            folders = list(self._folders)
        entries: list[Entry] = []
        ends: list[Path] = []
        for folder in folders:
            watched = False
            if self.watch_again is not None:
                try:
                    watched = self.watch_again(folder)
                except Exception:
                    log.debug("watching a polled folder again failed", exc_info=True)
            entries.extend(self._compare(folder, ends, drop=watched))
        if entries:
            self.touch(entries, ends)

    def _compare(self, folder: Path, ends: list[Path], *, drop: bool) -> list[Entry]:
        now = _look(folder)
        with self._lock:
            before = self._folders.get(folder)
            if before is None:
                return []
            if now is None or drop:  # gone (its parent says so), or watched from now on
                self._folders.pop(folder, None)
            else:
                self._folders[folder] = now
        if now is None:
            with self._lock:  # the folders under it went with it
                for p in [p for p in self._folders if p.is_relative_to(folder)]:
                    del self._folders[p]
            return []
        out: list[Entry] = []
        for name in before.keys() | now.keys():
            old, new = before.get(name), now.get(name)
            if old == new:
                continue
            path = folder / name
            if old is None or new is None:
                ends.append(path)
            if new is None:  # vanished: a folder's path stands for everything under it
                out.append((path, DIR if old is not None and old[0] else 0))
            elif new[0]:
                if old is None or not old[0] or old[3] != new[3]:  # a folder appeared
                    out.append((path, DIR | WALK | OPTIONAL))
                    self.add_tree(path, None)  # polled too (the next round tries to watch it)
            else:
                out.append((path, 0))
        return out


def make_observer(
    on_overflow: Callable[[], None], on_unwatched: Callable[[Path, int], None]
) -> Any:
    """watchdog's observer for this platform; on Linux, one that also reports an inotify queue
    overflow (watchdog only re-adds its watches and logs it) and each folder the kernel refused
    to watch for a limit (watchdog skips it without a word)."""
    try:
        from watchdog.observers.inotify import InotifyEmitter, InotifyObserver
    except ImportError:  # not Linux
        from watchdog.observers import Observer

        return Observer()
    group_class = _group_class(on_unwatched)

    class _Emitter(InotifyEmitter):
        def on_thread_start(self) -> None:
            if group_class is not None and hasattr(self, "_inotify_fd"):
                self._inotify = group_class(
                    self._inotify_fd,
                    os.fsencode(self.watch.path),
                    is_recursive=self.watch.is_recursive,
                    event_mask=self.get_event_mask_from_filter(),
                    follow_symlink=self.watch.follow_symlink,
                )
            else:
                super().on_thread_start()
            group = getattr(self, "_inotify", None)
            rebuild = getattr(group, "on_queue_overflow", None)
            if group is None or rebuild is None:
                log.warning("this watchdog version hides inotify overflows from memoryd")
                return

            def overflowed() -> None:
                rebuild()
                on_overflow()

            group.on_queue_overflow = overflowed

        def watch_again(self, folder: Path) -> bool:
            group = getattr(self, "_inotify", None)
            again = getattr(group, "watch_again", None)
            return bool(again is not None and again(os.fsencode(folder)))

    observer = InotifyObserver()
    observer._emitter_class = _Emitter  # the only way in: its constructor fixes the class
    observer.reports_unwatched = group_class is not None  # type: ignore[attr-defined]
    return observer


def _group_class(on_unwatched: Callable[[Path, int], None]) -> Any:
    """watchdog's (>= 6) recursive watch group, telling of the folders it could not watch."""
    try:
        from watchdog.observers.inotify import InotifyWatchGroup
    except ImportError:  # an older watchdog: the folder count is checked at start instead
        return None
    if not hasattr(InotifyWatchGroup, "_add_callback"):
        return None

    class _Group(InotifyWatchGroup):
        def _add_callback(self, path: bytes) -> None:
            try:
                wd = self._inotify_fd.add_callback(path, self.event_mask, self._callback, self._id)
            except OSError as exc:
                if path == self.path:
                    raise  # the root: the watcher polls the whole tree
                if exc.errno in LIMITS:
                    on_unwatched(Path(os.fsdecode(path)), exc.errno)
                return  # (a folder gone or unreadable meanwhile: its events say so)
            self._active_callbacks_by_path[path] = wd
            self._active_callbacks_by_watch[wd] = path

        def watch_again(self, path: bytes) -> bool:
            with self._lock:
                if not self.is_active:
                    return False
                if path in self._active_callbacks_by_path:
                    return True
                try:
                    wd = self._inotify_fd.add_callback(
                        path, self.event_mask, self._callback, self._id
                    )
                except OSError:
                    return False
                self._active_callbacks_by_path[path] = wd
                self._active_callbacks_by_watch[wd] = path
                return True

    return _Group
