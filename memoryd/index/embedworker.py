"""The embedding worker: embeds every text that has no vector for the active model.

One mechanism serves live indexing, catch-up when a model appears, model switches and the
scheduled backfill: texts are found by hash (`vectors.pending_newest`), embedded in batches on
this thread, and written one transaction per batch. A model that fails halfway leaves the rest
pending, never half-written; the next wake-up (or the backfill job) carries on.

Newest first: the worker takes a window of the most recently written pending texts and embeds
it batch by batch; a change (an edited note, an added memory) wakes it and makes it read the
window again before the next batch, so new text never waits behind the old backlog. Batches go
to the model's low-priority background threads (`embed_background`) when it has them, so
queries are never queued behind a batch.

Progress: `progress()` gives the rate over the last minute, the ETA and the text being embedded;
one log line every `log_every` seconds while it works.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from memoryd.core import malloc
from memoryd.core.logsetup import get_logger
from memoryd.store import Store, vectors

log = get_logger("memoryd.index.embed")

RATE_WINDOW_S = 60.0
MAX_FAILED = 256  # texts set aside at most (each widens the pending window by one)
PROBE = "memoryd"  # a text any model embeds: tells a failing model from a failing text
IDLE_TRIM_S = 30.0
# While texts keep coming (an add every few seconds never leaves the worker idle for 30 s), freed
# memory goes back at least this often: searches and foreground embeddings free buffers between
# the background runs' own trims, and at 100K chunks under the soak's mix ~13 MB of freed pages
# was resident after 20 minutes without an idle trim (issue 23.2; BENCHMARKS.md, branch soak3).
BUSY_TRIM_S = 10.0
FULL_SCAN_S = 600.0  # how often the whole store is checked for texts without a vector


class ModelNotActive(RuntimeError):
    """The store's active model is another daemon's (a shared database)."""


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
        log_every: float = 10.0,
    ) -> None:
        self.store = store
        self.model = model
        self.batch_size = batch_size
        self.window = max(64, batch_size * 8)
        self.clock = clock
        self.on_progress = on_progress
        self.log_every = log_every
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._changed = threading.Event()  # new text since the window was read
        self._retry = threading.Event()  # ends the wait after a failure early
        self._run_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.model_id: int | None = None
        self.embedded_total = 0
        self.last_error: str | None = None
        self.running = False
        self.current: str | None = None
        self._samples: deque[tuple[float, int]] = deque()  # (monotonic time, embedded_total)
        # Every entry with an id up to `_clear_below` had a vector when last looked (None: not
        # known, look at everything). Entries get new ids when written and only memories change
        # text in place, so after one full scan a wake-up looks at what came since and at the
        # memories: a few rows instead of every hash in the store (issue 23: at 100K chunks the
        # full scans after each add cost more CPU than embedding the add).
        self._clear_below: int | None = None
        self._full_scan_at = 0.0
        self._completed: int | None = None  # the model marked complete by this worker
        # texts the model failed on while others of their batch embedded (content hash ->
        # error): skipped until the daemon restarts, so one text the model cannot take does not
        # hold every other text back; they stay found by keyword (status: vectors.failed)
        self.failed: dict[str, str] = {}

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="memoryd-embed", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """New or changed text: embed it before the rest of the backlog."""
        self._changed.set()
        self._wake.set()

    def retry_now(self) -> None:
        """The store is reachable again after an outage: retry at once, not after the
        failure backoff (up to 5 minutes)."""
        self._clear_below = None  # what changed meanwhile is not known: look at everything
        self._retry.set()
        self._wake.set()

    def stopping(self) -> None:
        """The daemon stops: runs going (the worker's, the backfill job's) end after their
        batch in hand; `stop` then waits for the worker."""
        self._stop.set()
        self._retry.set()
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        self.stopping()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def complete(self) -> bool:
        """Whether this worker found every text embedded by its model (marked complete)."""
        return self.model_id is not None and self._completed == self.model_id

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        malloc.lower_thread_priority()  # the backlog yields the CPU to queries
        backoff = 1.0
        trimmed = time.monotonic()
        while not self._stop.is_set():
            if not self._wake.wait(timeout=IDLE_TRIM_S):
                malloc.trim()  # idle: hand back what searches and adds freed meanwhile
                trimmed = time.monotonic()
                continue
            if time.monotonic() - trimmed >= BUSY_TRIM_S and not self._foreground():
                malloc.trim()  # busy: the same, at most every BUSY_TRIM_S
                trimmed = time.monotonic()
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.run(stop=self._stop, report=False)
                backoff = 1.0
            except Exception as exc:
                self.last_error = str(exc)
                log.error("embedding failed; texts stay pending", error=str(exc))
                self._retry.clear()
                self._retry.wait(backoff)  # retry_now() (the store is back) cuts it short
                backoff = min(backoff * 2, 300.0)
                self._wake.set()

    def _foreground(self) -> int:
        """Searches (and foreground embeddings) in flight. A trim holds each malloc arena's lock
        while it hands pages back (a few to ~20 ms with ~10 MB free): not while a search runs."""
        gate = getattr(self.model, "gate", None)
        return int(getattr(gate, "active", 0) or 0)

    def ensure_model(self) -> int | None:
        """Register the loaded model in the store (once); its id, or None while not ready."""
        if self.model.state != "ready":
            return None
        ident = self.model.identity
        if self.model_id is None:
            self._clear_below, self._completed = None, None  # a new model, or a restored file
            now = self.clock()
            for attempt in range(3):
                try:
                    self.model_id = self.store.run_write(
                        lambda con: vectors.ensure_model(
                            con, ident.key, ident.name, ident.dim, now, ident.adopts
                        )
                    )
                    break
                except Exception as exc:
                    # on a shared database another daemon registered the same model (or created
                    # its vector table) at the same moment: it is there now, look again
                    if getattr(exc, "sqlstate", None) != "23505" or attempt == 2:
                        raise
        return self.model_id

    def _embed(self, texts: list[str]) -> np.ndarray:
        background = getattr(self.model, "embed_background", None)
        return background(texts) if background is not None else self.model.embed_batch(texts)

    def _embed_each(
        self, todo: list[tuple[str, str, str]]
    ) -> tuple[list[tuple[str, str, str]], np.ndarray]:
        """The batch's vectors. When the model fails on the batch: each text alone, and those it
        fails on are set aside (self.failed), unless the model fails on a probe text as well:
        then the model is at fault, not the texts, and the error goes up (backoff, retry)."""
        try:
            return todo, self._embed([text for _, text, _ in todo])
        except Exception as exc:
            batch_error = exc
        done: list[tuple[str, str, str]] = []
        vecs: list[np.ndarray] = []
        errors: dict[str, str] = {}
        for item in todo:
            try:
                vecs.append(self._embed([item[1]])[0])
                done.append(item)
            except Exception as exc:
                errors[item[0]] = f"{type(exc).__name__}: {exc}"
        if errors and not self._model_works():  # the model broke, not these texts: retry
            raise batch_error
        for h, _, source in todo:
            if h in errors:
                if len(self.failed) < MAX_FAILED:
                    self.failed[h] = errors[h]
                log.error("the model failed on a text; no vector", source=source, error=errors[h])
        return done, np.stack(vecs) if vecs else np.zeros((0, 0), dtype=np.float32)

    def _model_works(self) -> bool:
        try:
            self._embed([PROBE])
        except Exception:
            return False
        return True

    def _window(self, model_id: int) -> list[tuple[str, str, str]]:
        """The next texts to embed, newest first: everything since the last clear look when it
        is known, else (and every FULL_SCAN_S) the whole store."""
        clear = self._clear_below
        full = clear is None or time.monotonic() - self._full_scan_at > FULL_SCAN_S

        size = self.window + len(self.failed)

        def read(con: Any) -> tuple[int, list[tuple[str, str, str]]]:
            top = vectors.top_entry_id(con)
            if full or clear is None:
                return top, vectors.pending_newest(con, model_id, size)
            return top, vectors.pending_since(con, model_id, size, clear)

        top, window = self.store.read(read)
        window = [w for w in window if w[0] not in self.failed]
        if full:
            self._full_scan_at = time.monotonic()
        # Not on a shared database: there, concurrent transactions can commit ids out of order,
        # so "everything up to the highest id" would not hold.
        if not window and self.model_id == model_id and not self.store.shared:
            self._clear_below = top
        return window

    def _pending_count(self, model_id: int | None) -> int | None:
        """Pending texts, counted over what changed since the last clear look; None when that
        is not known."""
        clear = self._clear_below
        if model_id is None or clear is None or model_id != self.model_id:
            return None
        return self.store.read(lambda con: vectors.count_pending_since(con, model_id, clear))

    def run(
        self,
        *,
        max_batches: int | None = None,
        stop: threading.Event | None = None,
        report: bool = True,
        wait: bool = True,
    ) -> dict:
        """Embed pending texts until none are left (or max_batches). Returns counts (the
        pending count only when `report`). Without `wait`, a run already going (the worker's
        own, which embeds the whole backlog: hours after a change of model at 100K chunks)
        is left to it: {"embedded": 0, "running": true} at once."""
        if not self._run_lock.acquire(blocking=wait):
            out: dict[str, Any] = {"embedded": 0, "running": True}
            return {**out, "pending": self.pending()} if report else out
        try:
            return self._run(max_batches, stop, report)
        finally:
            self._run_lock.release()

    def backfill(self) -> dict:
        """The backfill job's run: none while the worker is at it (the job waited for the
        whole backlog, `jobs run backfill` timed out), and it stops with the worker when the
        daemon stops (it went on with the backlog: the daemon did not stop until SIGKILL)."""
        return self.run(stop=self._stop, wait=False)

    def _run(self, max_batches: int | None, stop: threading.Event | None, report: bool) -> dict:
        model_id = self.ensure_model()
        if model_id is None:
            return {"embedded": 0, "pending": self.pending(), "model": self.model.state}
        model_id = self._still_active(model_id)
        embedded, batches = 0, 0
        self.running = True
        self._samples.clear()
        self._samples.append((time.monotonic(), self.embedded_total))
        started = time.perf_counter()
        last_log = time.monotonic()
        window: list[tuple[str, str, str]] = []
        try:
            while max_batches is None or batches < max_batches:
                if stop is not None and stop.is_set():
                    break
                if not window or self._changed.is_set():
                    self._changed.clear()
                    window = self._window(model_id)
                if not window:
                    if self._completed != model_id:
                        dropped = self.store.run_write(
                            lambda con: vectors.mark_complete(con, model_id)
                        )
                        self._completed = model_id
                        if dropped:
                            log.info("old model vectors dropped", models=dropped)
                    break
                todo, window = window[: self.batch_size], window[self.batch_size :]
                self.current = todo[0][2]
                todo, vecs = self._embed_each(todo)
                now = self.clock()
                items = [(h, vecs[i]) for i, (h, _, _) in enumerate(todo)]
                new = self.store.run_write(
                    functools.partial(vectors.store, model_id=model_id, items=items, now=now)
                )
                embedded += new
                batches += 1
                self._count(new)
                if self.on_progress is not None:
                    self.on_progress({"embedded": embedded})
                if time.monotonic() - last_log >= self.log_every:
                    last_log = time.monotonic()
                    log.info("embedding", **self.progress())
        finally:
            self.running = False
            self.current = None
        self.last_error = None
        if embedded:
            log.info(
                "embedded",
                texts=embedded,
                duration_ms=round((time.perf_counter() - started) * 1000, 1),
            )
        return {"embedded": embedded, **({"pending": self.pending()} if report else {})}

    def _still_active(self, model_id: int) -> int:
        """The model's id, when it is still the store's active model. On a shared database
        another daemon with another model may have made its own the active one (docs/team.md:
        every daemon must use one): this daemon's vectors would be dropped when that one's
        backfill completes, and written into a table gone afterwards. Say so, and embed nothing
        (the loop retries: the other daemon may switch back, and then its row is looked up
        again)."""
        current = self.store.read(vectors.embedding_model)
        if current is None or current[0] == model_id:
            return model_id
        ident = self.model.identity
        if ident is not None and current[1] == ident.key:  # registered again, under a new id
            self.model_id = None
            return self.ensure_model() or model_id
        raise ModelNotActive(
            f"another daemon of this shared database made {current[1]} its embedding model; "
            f"this daemon's is {ident.key if ident else '?'}: every daemon of a shared database "
            "must use the same embedding.model (docs/team.md); nothing is embedded until they do"
        )

    def _count(self, new: int) -> None:
        self.embedded_total += new
        now = time.monotonic()
        self._samples.append((now, self.embedded_total))
        while len(self._samples) > 2 and now - self._samples[1][0] > RATE_WINDOW_S:
            self._samples.popleft()

    def rate(self) -> float | None:
        """Texts per second over the last minute of work, or None before two batches."""
        samples = list(self._samples)
        if len(samples) < 2 or not self.running:
            return None
        (t0, n0), (t1, n1) = samples[0], samples[-1]
        return (n1 - n0) / (t1 - t0) if t1 > t0 else None

    def progress(self, pending: int | None = None) -> dict[str, Any]:
        """{done, pending, rate_per_s, eta_s, current} for status and the progress log line."""
        if pending is None:
            counts = self.counts()
            done, pending = counts["done"], counts["pending"]
        else:
            done = None
        rate = self.rate()
        return {
            **({"done": done} if done is not None else {}),
            "pending": pending,
            "rate_per_s": None if rate is None else round(rate, 2),
            "eta_s": None if not rate or not pending else round(pending / rate, 1),
            "current": self.current,
        }

    def pending(self) -> int:
        fast = self._pending_count(self.model_id)
        return fast if fast is not None else self.counts()["pending"]

    def counts(self) -> dict[str, int]:
        model_id = self.model_id
        if model_id is not None:
            return self.store.read(lambda con: vectors.counts(con, model_id))
        return self.store.read(lambda con: vectors.counts(con, self._stored_model(con)))

    def _stored_model(self, con: Any) -> int | None:
        """Before this worker registered its model (the first seconds after a start, or the
        whole first scan of a large workspace): the stored model it will use, so that status
        and a search's pending_vectors do not call every text pending after a restart. The
        loaded model's row when it is ready (none yet: a new model, every text is pending);
        while it loads, the store's active model; none without a model."""
        ident = self.model.identity if self.model.state == "ready" else None
        if ident is not None:
            keys = (ident.key, ident.adopts or ident.key)  # (the same model's older key)
            rows = con.execute(
                "SELECT id FROM models WHERE key IN (?, ?) ORDER BY id", keys
            ).fetchall()
        elif self.model.state == "loading":
            rows = con.execute("SELECT id FROM models WHERE active = 1 ORDER BY id").fetchall()
        else:
            return None
        return int(rows[0][0]) if rows else None
