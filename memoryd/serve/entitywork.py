"""The daemon's entity stage (store/entitystage.py): a thread that reads the entities of the
notes indexed since, a batch of 50 a transaction, in the order they were indexed, woken by the
indexer's changes, as the embedding worker is. It runs at a low CPU priority and starts no batch
while a search is in flight (index/foreground.py), so keyword search comes first; a door that
needs the rows exact drains a few batches itself (entitystage.caught_up)."""

from __future__ import annotations

import threading
from typing import Any

from memoryd.core import malloc
from memoryd.core.logsetup import get_logger
from memoryd.store import entitystage

log = get_logger("memoryd.entities")

RETRY_S = 5.0  # after a failed batch (the store unreachable): the next try


class EntityWork:
    def __init__(self, store: Any, model: Any = None) -> None:
        self.store = store
        self.gate = getattr(model, "gate", None)  # the model holder's ForegroundGate
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="memoryd-entities", daemon=True)
        self._thread.start()
        self._wake.set()  # a queue left by the last run (a stop, kill -9) is drained now

    def wake(self) -> None:
        self._wake.set()

    def stopping(self) -> None:
        """The daemon stops: the batch in hand is committed, the rest waits for the next run."""
        self._stop.set()
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        self.stopping()
        if self._thread is not None:
            self._thread.join(timeout)

    def _write(self, fn: Any) -> Any:
        if self.gate is not None:
            self.gate.wait_clear()  # a search first
        return self.store.run_write(fn)

    def _loop(self) -> None:
        malloc.lower_thread_priority()
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            try:
                entitystage.caught_up(self.store.read, self._write, stop=self._stop.is_set)
            except Exception as e:  # the store unreachable, a bad row: logged, tried again
                log.warning("entity stage: a batch failed; tried again", error=str(e))
                if self._stop.wait(RETRY_S):
                    return
                self._wake.set()
