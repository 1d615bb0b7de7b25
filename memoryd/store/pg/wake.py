"""The change listener's wait (PgStore's LISTEN thread): until its connection's socket has
something to read, or `close()` wakes it, or the poll interval passes.

psycopg's `notifies(timeout=...)` cannot be interrupted from another thread, so a store's close
waited out the rest of the listener's poll interval (up to 0.5 s for every App or daemon on
PostgreSQL that stopped). The listener now waits here, on its socket and a pipe that `wake()`
writes to, and reads what arrived with `notifies(timeout=0)`.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading


class Waker:
    """A pipe a waiting thread selects on beside its socket; `wake()` ends its wait at once
    (and every later one: it is for stopping). `close()` once the waiting thread is gone."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self.closed = False

    def wait(self, fd: int, timeout: float) -> bool:
        """Until `fd` is readable, `wake()` was called or `timeout` seconds passed; True when
        `fd` is readable."""
        readable, _, _ = select.select([fd, self._read], [], [], timeout)
        return fd in readable

    def wake(self) -> None:
        if self.closed:
            return
        with contextlib.suppress(OSError):
            os.write(self._write, b"x")  # a full pipe is already a wake

    def end(self, thread: threading.Thread, timeout: float) -> None:
        """Wake `thread` (its stop flag set already), wait for it, then close the pipe; left
        open if the thread outlived `timeout` (it may still be selecting on it)."""
        self.wake()
        thread.join(timeout)
        if not thread.is_alive():
            self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self._read)
            os.close(self._write)
