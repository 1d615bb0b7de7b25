"""Threads when the system has none to give: `RuntimeError: can't start new thread` (the user's
RLIMIT_NPROC, `ulimit -u`, shared with every process of the user; a container's or a unit's
pids.max, systemd's TasksMax=) is one clear error wherever the daemon starts a thread.

- A pool (`Pool`, the ThreadPoolExecutor every pool of the daemon is) that cannot add a thread
  goes on with the threads it has: the work waits for one of them, as it would at the pool's
  size. With none at all the work is refused (`ThreadLimit`, -32003: retry), never left queued
  to run later for nobody (a write acknowledged as failed must not happen after all).
- A thread of its own (`start`) refused raises ThreadLimit; its caller says what waits.
- A library's thread refused deep inside a request is the same answer on every door
  (serve/registry.unexpected: `is_thread_limit`).

The log says it at most once a minute (`thread limit reached`), with what to raise.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from memoryd.core.errors import Unavailable
from memoryd.core.logsetup import get_logger

log = get_logger("memoryd.core.threads")

SAY_EVERY_S = 60.0
FIX = (
    "the system refused a new thread: memoryd is at its limit on threads (RLIMIT_NPROC, "
    "`ulimit -u`, counts every process and thread of the user; or the container's pids.max, "
    "systemd's TasksMax=); retry shortly, or raise the limit"
)
_said = [0.0]
_lock = threading.Lock()


class ThreadLimit(Unavailable):
    """No thread could be started for the work: nothing of it was done; retry."""


def is_thread_limit(exc: BaseException) -> bool:
    """The interpreter's words when the OS refuses a thread (EAGAIN from pthread_create)."""
    return isinstance(exc, RuntimeError) and "can't start new thread" in str(exc)


def refused(what: str) -> ThreadLimit:
    """The error to raise, logged at most once a minute (every refusal until the limit is
    raised would be a line per request)."""
    now = time.monotonic()
    with _lock:
        say = now - _said[0] >= SAY_EVERY_S
        if say:
            _said[0] = now
    if say:
        log.error("thread limit reached", what=what, fix=FIX)
    return ThreadLimit(f"cannot start {what}: {FIX}")


def start(thread: threading.Thread, what: str) -> None:
    """thread.start(), or ThreadLimit naming `what` (the caller says what waits meanwhile)."""
    try:
        thread.start()
    except RuntimeError as exc:
        if not is_thread_limit(exc):
            raise
        raise refused(what) from None


class Pool(ThreadPoolExecutor):
    """A ThreadPoolExecutor that goes on with the threads it has when the system refuses it
    another, and refuses the work (ThreadLimit) only when it has none."""

    def __init__(
        self, max_workers: int | None = None, thread_name_prefix: str = "", **kw: Any
    ) -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix=thread_name_prefix, **kw)
        self.what = f"a thread of {thread_name_prefix or 'a pool'}"

    def _adjust_thread_count(self) -> None:
        try:
            super()._adjust_thread_count()
        except RuntimeError as exc:
            if not is_thread_limit(exc):
                raise
            threads: Any = self._threads
            if any(t.is_alive() for t in threads):
                refused(self.what)  # (logged; the work waits for a thread it has)
                return
            # no thread to run it, ever: the work queued by this submit (and any before it
            # that failed the same way) is cancelled, so it cannot run later for nobody
            queue: Any = self._work_queue
            while True:
                try:
                    item = queue.get_nowait()
                except Exception:
                    break
                if item is not None:
                    item.future.cancel()
            raise refused(self.what) from None
