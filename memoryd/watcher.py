"""File watching: the watchdog observer feeding a per-file debounce.

Each path becomes due `debounce` seconds after its last event, so an editor's burst of
write/rename/chmod yields one delivery. A move delivers its old and new path in the same batch
(the indexer recognises moves by matching hashes). One dispatcher thread calls `on_change`, so
deliveries never overlap; an exception there is logged and the watcher carries on.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from memoryd.logsetup import get_logger

log = get_logger("memoryd.watcher")


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_directory and event.event_type == "modified":
            return  # a folder's mtime changes with every file event inside it: nothing to do
        try:
            src = os.fsdecode(event.src_path)
            dest = os.fsdecode(getattr(event, "dest_path", "") or "")
            self.watcher._event(Path(src), Path(dest) if dest else None, event.is_directory)
        except Exception:  # never let an odd event kill the observer thread
            log.exception("bad file event", event=repr(event))


class Watcher:
    def __init__(
        self,
        root: Path,
        on_change: Callable[[list[Path]], None],
        *,
        debounce: float = 0.5,
        accept: Callable[[Path], bool] = lambda p: True,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.root = Path(root)
        self.on_change = on_change
        self.debounce = debounce
        self.accept = accept
        self.on_error = on_error
        self._due: dict[Path, float] = {}
        self._cond = threading.Condition()
        self._stopping = False
        self._observer: Any = None
        self._dispatcher: threading.Thread | None = None
        self.stats: dict[str, Any] = {
            "events_seen": 0,
            "batches_delivered": 0,
            "last_event_at": None,
        }

    def start(self) -> None:
        if not self.root.is_dir():
            raise OSError(f"cannot watch {self.root}: not a folder")
        observer = Observer()
        observer.schedule(_Handler(self), str(self.root), recursive=True)
        observer.daemon = True
        observer.start()  # raises OSError when inotify watches are exhausted
        self._observer = observer
        self._dispatcher = threading.Thread(
            target=self._dispatch, name="memoryd-watch-dispatch", daemon=True
        )
        self._dispatcher.start()

    def stop(self, timeout: float = 5.0, flush: bool = True) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout)
        with self._cond:
            self._stopping = True
            if flush:
                for p in self._due:
                    self._due[p] = 0.0
            else:
                self._due.clear()
            self._cond.notify_all()
        if self._dispatcher is not None:
            self._dispatcher.join(timeout)

    @property
    def alive(self) -> bool:
        return bool(
            self._observer is not None
            and self._observer.is_alive()
            and self._dispatcher is not None
            and self._dispatcher.is_alive()
        )

    def set_debounce(self, seconds: float) -> None:
        with self._cond:
            self.debounce = seconds
            self._cond.notify_all()

    def set_accept(self, accept: Callable[[Path], bool]) -> None:
        self.accept = accept

    # -- events -------------------------------------------------------------------------------

    def _event(self, src: Path, dest: Path | None, is_dir: bool) -> None:
        paths = [p for p in (src, dest) if p is not None]
        if not is_dir:
            # a move is delivered whole if either end is wanted (moved in, out, or renamed)
            if not any(self._accepts(p) for p in paths):
                return
        elif dest is not None and dest.is_dir():
            paths += [p for p in _files_under(dest) if self._accepts(p)]
        now = time.monotonic()
        with self._cond:
            self.stats["events_seen"] += 1
            self.stats["last_event_at"] = time.time()
            deadline = now + self.debounce
            for p in paths:
                self._due[p] = deadline  # all ends of a move share one deadline
            self._cond.notify_all()

    def _accepts(self, path: Path) -> bool:
        try:
            return bool(self.accept(path))
        except Exception:
            return False

    def _dispatch(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopping and not self._due:
                        return
                    now = time.monotonic()
                    ready = sorted(p for p, t in self._due.items() if t <= now)
                    if ready:
                        for p in ready:
                            del self._due[p]
                        break
                    wait = min(self._due.values()) - now if self._due else None
                    self._cond.wait(wait)
            try:
                self.on_change(ready)
                self.stats["batches_delivered"] += 1
            except Exception as exc:
                if self.on_error is not None:
                    self.on_error(exc)
                else:
                    log.exception("handling file changes failed", paths=len(ready))


def _files_under(folder: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, _dirs, files in os.walk(folder):
        out.extend(Path(dirpath) / f for f in files)
    return out
