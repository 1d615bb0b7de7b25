"""The embedding worker: embeds every text that has no vector for the active model.

One mechanism serves live indexing, catch-up when a model appears, model switches and the
scheduled backfill: texts are found by hash (`vectors.pending`), embedded in batches on this
thread, and written one transaction per batch. A model that fails halfway leaves the rest
pending, never half-written; the next wake-up (or the backfill job) carries on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from memoryd.logsetup import get_logger
from memoryd.store import Store, vectors

log = get_logger("memoryd.embed")


class Model(Protocol):
    state: str

    @property
    def identity(self) -> Any: ...

    def embed_batch(self, texts: list[str]) -> np.ndarray: ...


class EmbedWorker:
    def __init__(
        self,
        store: Store,
        model: Model,
        *,
        batch_size: int = 8,
        clock: Callable[[], float] = time.time,
        on_progress: Callable[[dict[str, int]], None] | None = None,
    ) -> None:
        self.store = store
        self.model = model
        self.batch_size = batch_size
        self.clock = clock
        self.on_progress = on_progress
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._run_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.model_id: int | None = None
        self.embedded_total = 0
        self.last_error: str | None = None
        self.running = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="memoryd-embed", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        backoff = 1.0
        while not self._stop.is_set():
            self._wake.wait(timeout=60.0)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.run(stop=self._stop)
                backoff = 1.0
            except Exception as exc:
                self.last_error = str(exc)
                log.error("embedding failed; texts stay pending", error=str(exc))
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 300.0)
                self._wake.set()

    def ensure_model(self) -> int | None:
        """Register the loaded model in the store (once); its id, or None while not ready."""
        if self.model.state != "ready":
            return None
        ident = self.model.identity
        if self.model_id is None:
            now = self.clock()
            self.model_id = self.store.run_write(
                lambda con: vectors.ensure_model(con, ident.key, ident.name, ident.dim, now)
            )
        return self.model_id

    def run(self, *, max_batches: int | None = None, stop: threading.Event | None = None) -> dict:
        """Embed pending texts until none are left (or max_batches). Returns counts."""
        with self._run_lock:
            model_id = self.ensure_model()
            if model_id is None:
                return {"embedded": 0, "pending": self.pending(), "model": self.model.state}
            embedded, batches = 0, 0
            self.running = True
            started = time.perf_counter()
            try:
                while max_batches is None or batches < max_batches:
                    if stop is not None and stop.is_set():
                        break
                    todo = self.store.read(
                        lambda con: vectors.pending(con, model_id, self.batch_size)
                    )
                    if not todo:
                        dropped = self.store.run_write(
                            lambda con: vectors.mark_complete(con, model_id)
                        )
                        if dropped:
                            log.info("old model vectors dropped", models=dropped)
                        break
                    vecs = self.model.embed_batch([text for _, text in todo])
                    now = self.clock()
                    items = [(h, vecs[i]) for i, (h, _) in enumerate(todo)]
                    embedded += self.store.run_write(
                        lambda con, items=items, now=now: vectors.store(con, model_id, items, now)
                    )
                    batches += 1
                    if self.on_progress is not None:
                        self.on_progress({"embedded": embedded})
            finally:
                self.running = False
            self.embedded_total += embedded
            self.last_error = None
            if embedded:
                log.info(
                    "embedded",
                    texts=embedded,
                    duration_ms=round((time.perf_counter() - started) * 1000, 1),
                )
            return {"embedded": embedded, "pending": self.pending()}

    def pending(self) -> int:
        return self.counts()["pending"]

    def counts(self) -> dict[str, int]:
        model_id = self.model_id
        return self.store.read(lambda con: vectors.counts(con, model_id))
