"""Queries first, on the CPU as well: while a search runs, the backlog leaves it a core.

The backlog's model runs go on low-priority threads (niceness 10), but on a machine that is busy
with other work that is not enough: the kernel shares the CPU between processes first (an
autogroup per session) and splits the daemon's share between its runnable threads, so a search
that starts while two background runs keep both cores busy gets about half the CPU it gets when
the daemon is otherwise idle (issue 23.5: three backlog runs in twelve at 1.9-3.2x the idle
p95, with no lock, queue or GIL wait in a profile). So every search (the whole of it, its query
embedding included) and every foreground embedding holds the gate:
- a background thread waits for no holder before it starts its next run (at most
  `HOLD_MAX_S` a run, so searches sent back to back slow the backlog down instead of stopping
  it);
- a search that arrives stops `preempt` of the runs in flight (onnxruntime's
  `RunOptions.terminate`; the runs started last, which have done the least work), so that one
  core is left to it (ModelHolder sets background threads - cores + 1: one on two cores with
  two threads). A stopped run starts again once the gate is clear and is never stopped twice;
  the work it had done is lost (a run is at most `embed.RUN_TOKENS` tokens, ~0.2 s on a core).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

HOLD_MAX_S = 1.0


class ForegroundGate:
    """Counts foreground work in flight; background runs wait for none before they start."""

    def __init__(self, hold_max_s: float = HOLD_MAX_S, preempt: int = 0) -> None:
        self.hold_max_s = hold_max_s
        self.preempt = preempt  # background runs in flight a search stops (to run again later)
        self._cond = threading.Condition()
        self._active = 0
        self._running: list[Any] = []  # stoppable background runs in flight (RunOptions)
        self.held_s = 0.0  # background time spent waiting, for the bench and status
        self.stopped = 0

    @contextmanager
    def held(self) -> Iterator[None]:
        """Foreground work (a search, a query's embedding) while the block runs."""
        with self._cond:
            self._active += 1
            # the runs started last: they have done the least work
            for handle in self._running[::-1][: self.preempt]:
                if not handle.terminate:
                    handle.terminate = True
                    self.stopped += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                if not self._active:
                    self._cond.notify_all()

    @contextmanager
    def stoppable(self, handle: Any) -> Iterator[None]:
        """A background run a search may stop: `handle.terminate` is set to True."""
        with self._cond:
            self._running.append(handle)
        try:
            yield
        finally:
            with self._cond:
                self._running.remove(handle)

    @property
    def active(self) -> int:
        return self._active

    def wait_clear(self) -> bool:
        """Before a background run: wait until no foreground work is in flight (at most
        hold_max_s). True when it is clear."""
        with self._cond:
            if not self._active:
                return True
            started = time.monotonic()
            clear = self._cond.wait_for(lambda: not self._active, self.hold_max_s)
            self.held_s += time.monotonic() - started
            return clear
