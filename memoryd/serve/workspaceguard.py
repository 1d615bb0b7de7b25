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

At start: `prepare_dirs` (the private data_dir) and `prepare_workspace` (the folder made, or
waited for when notes are indexed from it).
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

from memoryd.core import threads
from memoryd.core.config import Config
from memoryd.core.errors import AlreadyRunning
from memoryd.core.fsutil import PRIVATE_DIR, SHARED_DIR, lock_workspace, make_dirs
from memoryd.core.logsetup import get_logger
from memoryd.index.indexer import ROOT_AWAY
from memoryd.store import Store, entries

log = get_logger("memoryd.serve.workspaceguard")

WORKSPACE_META_KEY = "workspace.path"  # the folder the notes were indexed from
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
            try:
                threads.start(thread, "the thread that watches the workspace folder")
            except threads.ThreadLimit:  # (logged) the daemon goes on without this look
                return
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


def prepare_dirs(cfg: Config) -> None:
    """data_dir private (0700); the workspace is prepare_workspace's."""
    make_dirs(cfg.data_dir, PRIVATE_DIR)
    os.chmod(cfg.data_dir, 0o700)


def prepare_workspace(cfg: Config, store: Store) -> None:
    """The workspace made when missing, unless notes are indexed from it: then it is away (a
    drive not mounted yet, a symlink to it dangling), and a new empty folder in its place would
    have the reconcile empty the index (WorkspaceGuard waits for it). Notes indexed from
    another path (the `workspace` setting changed to a folder not made yet) are no reason to
    wait: the folder is made and the first reconcile takes the old notes out, as it does when
    the new folder exists. The path is kept in the store's meta table (per workspace id on
    PostgreSQL); a store without it (made before) is taken to be from this path. A file in
    the way stops start-up (make_dirs: NotADirectoryError)."""
    ws = Path(cfg.workspace)
    workspace_id = store.info().get("workspace_id")
    key = f"{WORKSPACE_META_KEY}:{workspace_id}" if workspace_id else WORKSPACE_META_KEY
    before = store.read(lambda con: entries.get_meta(con, key))
    if not os.path.isdir(ws):
        elsewhere = before is not None and before != str(ws)
        if not os.path.exists(ws) and not elsewhere and store.read(entries.documents):
            log.error(ROOT_AWAY + "; not made again", root=str(ws))
            return
        if elsewhere:
            log.info(
                "the workspace setting changed: its folder is made, and the notes indexed "
                "from the old one leave the index",
                workspace=str(ws),
                before=before,
            )
        make_dirs(ws, SHARED_DIR)
    if before != str(ws):
        store.run_write(lambda con: entries.set_meta(con, key, str(ws)))
