"""The workspace folder itself: gone (a drive not mounted, the folder moved away or deleted)
and back.

While it is gone the indexer applies nothing (`Indexer._root_away`: the index is not emptied of
every note, to be re-read and re-embedded when it returns), nothing is written in its place (the
daily log, `note write`), and `status` says so. A look at the folder every few seconds notices
its return, or another folder now at its path (a drive mounted again, a vault restored): the
watcher then watches the new folder and a reconcile catches up with what changed meanwhile.
The same look starts a watcher whose threads died again (at most once a minute).

One daemon per workspace folder (`WorkspaceLock`): two daemons with their own data_dirs on one
folder (the service, and a `memoryd run --config other.toml` beside it) would each number
their memories from 1 and write their daily-log lines into the same files, and a delete or an
update in one would take out or rewrite the other's line of the same id; a daemon on a folder
inside another's workspace has its daily log indexed by the other as notes (each memory shown
there with its marker), and the other's delete can reach its lines. The daemon holds flocks on
the folder and the folders above it (fsutil.lock_workspace; nothing is written into them); a
second one on the same folder, inside it or above it refuses to start, naming the first.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

from memoryd.core.errors import AlreadyRunning
from memoryd.core.fsutil import lock_workspace
from memoryd.core.logsetup import get_logger
from memoryd.index.indexer import ROOT_AWAY

log = get_logger("memoryd.serve.workspaceguard")

CHECK_EVERY_S = 5.0  # a stat of one folder: nothing, even on a laptop's battery
RESTART_EVERY_S = 60.0  # a watcher that keeps dying is started again at most this often
TWO_DAEMONS = (
    "two daemons over the same notes would index them twice and delete and rewrite each "
    "other's daily-log lines; stop that one first, or give this configuration a workspace of "
    "its own, outside the other's"
)


class WorkspaceLock:
    """The daemon's hold on its workspace folder (see the module docstring)."""

    def __init__(self, root: Path, *, enabled: bool = True) -> None:
        self.root = Path(root)
        self.enabled = enabled  # the daemon's App; not a test's or a tool's
        self._fds: list[int] = []
        self._identity: tuple[int, int] | None = None

    def take(self) -> None:
        """Hold the folder now at the root (again, when another folder took its place);
        AlreadyRunning when another daemon holds it. A missing folder is held once it is made
        or back (`take` again then)."""
        if not self.enabled:
            return
        try:
            st = os.stat(self.root)
        except OSError:
            return
        if (st.st_dev, st.st_ino) == self._identity:
            return
        self.release()  # the folder that was here: the one now here is locked instead
        self._fds = lock_workspace(self.root, why=TWO_DAEMONS)
        if self._fds:
            self._identity = (st.st_dev, st.st_ino)

    def take_again(self) -> None:
        """`take` for a folder that came back while serving: another daemon on it is an
        error in the log (this one goes on; the other was there first)."""
        try:
            self.take()
        except AlreadyRunning as exc:
            log.error("workspace folder held by another daemon", error=exc.message)

    def release(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds, self._identity = [], None


class WorkspaceGuard:
    def __init__(
        self,
        root: Path,
        *,
        watched: Callable[[], tuple[int, int] | None],
        rewatch: Callable[[], None],
        stopped: Callable[[], bool] = lambda: False,
        interval: float = CHECK_EVERY_S,
    ) -> None:
        """`watched()`: (st_dev, st_ino) of the folder the watcher watches, None without one;
        `stopped()`: whether that watcher's threads died; `rewatch()`: watch the folder now at
        `root` and reconcile."""
        self.root = Path(root)
        self.watched = watched
        self.stopped = stopped
        self.rewatch = rewatch
        self.interval = interval
        self.away = False
        self._restarted_at = -RESTART_EVERY_S
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def error(self) -> str | None:
        """What status says while the folder is gone (looked at now: the last check may be a
        few seconds old)."""
        away = self.away or not os.path.isdir(self.root)
        return f"{ROOT_AWAY}: {self.root}" if away else None

    def check(self) -> str | None:
        """Look once: "away" when the folder is gone, "back" when it returned (or another
        folder took its path) and was watched again, "restarted" when the watcher had stopped
        (an inotify error, a bug: at most once a minute), None when nothing changed. One look at
        a time (the guard's thread, start-up, a test): a watcher is replaced once."""
        with self._lock:
            return self._check()

    def _check(self) -> str | None:
        try:
            st = os.stat(self.root)
        except OSError:
            st = None
        if st is None or not stat.S_ISDIR(st.st_mode):
            if not self.away:
                self.away = True
                log.error(ROOT_AWAY, root=str(self.root))
            return "away"
        watched = self.watched()
        if not self.away and watched is not None and watched == (st.st_dev, st.st_ino):
            if not self.stopped() or time.monotonic() - self._restarted_at < RESTART_EVERY_S:
                return None
            self._restarted_at = time.monotonic()
            log.warning("the file watcher had stopped; watching again", root=str(self.root))
            self.rewatch()
            return "restarted"
        if not self.away and watched is None:
            return None
        self.away = False
        log.warning("the workspace folder is back; watching it again", root=str(self.root))
        self.rewatch()
        return "back"

    def start(self) -> None:
        """Look every `interval` seconds, on a thread; nothing once stop() was called (a daemon
        stopped while it started)."""
        with self._lock:
            if self._stop.is_set() or self._thread is not None:
                return
            thread = threading.Thread(target=self._run, name="memoryd-workspace", daemon=True)
            thread.start()
            self._thread = thread

    def stop(self) -> None:
        self._stop.set()
        with self._lock:  # a start() under way has finished: its thread is started
            thread = self._thread
        if thread is not None:
            thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check()
            except Exception:  # never the end of the daemon
                log.exception("workspace check failed")
