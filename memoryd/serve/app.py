"""The application: wires store, indexer, watcher, model, embed worker, search and memories.

Plain Python, no sockets and no signals: tests build an App on a tmp dir and call it directly;
the daemon wraps one in the socket server and the process lifecycle.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd import __version__
from memoryd.core import malloc
from memoryd.core.config import Config
from memoryd.core.logsetup import get_logger
from memoryd.core.timeutil import iso
from memoryd.index.embed import ModelHolder, background_threads, load_embedder, resolve_model
from memoryd.index.embedworker import EmbedWorker
from memoryd.index.indexer import Indexer
from memoryd.index.watcher import Watcher
from memoryd.memory import checkpoints, lifecycle
from memoryd.memory.dailylog import DailyLog, marker_ids
from memoryd.memory.memories import Memories
from memoryd.notes.notes import Notes
from memoryd.search.fuzzy import FuzzyMatcher
from memoryd.search.searcher import Searcher
from memoryd.serve.jobs import Jobs
from memoryd.store import entries, vectors
from memoryd.store import lifecycle as lcstore
from memoryd.store.backend import open_store

log = get_logger("memoryd.serve.app")

PROGRESS_EVERY_S = 10.0
SHARED_CACHE_MAX_AGE_S = 30.0  # caches of a shared database are rebuilt at least this often


def default_model_holder(cfg: Config) -> ModelHolder:
    """The model the configuration resolves to, loaded lazily (or none, with the reason)."""
    resolved, reason = resolve_model(cfg.embedding, cfg.data_dir)
    if resolved is None:
        return ModelHolder(
            None, description=reason, query_cache_size=cfg.embedding.query_cache_size
        )
    cache_dir = cfg.data_dir / "models"

    def loader() -> Any:
        # one intra-op thread: queries run beside the backlog, which is parallel across texts
        return load_embedder(
            resolved, cache_dir=cache_dir, threads=1, batch_size=cfg.embedding.batch_size
        )

    return ModelHolder(
        loader,
        description=resolved.description,
        query_cache_size=cfg.embedding.query_cache_size,
        background_threads=background_threads(cfg.embedding.threads),
    )


class App:
    def __init__(
        self,
        cfg: Config,
        *,
        model: ModelHolder | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cfg = cfg
        self.clock = clock
        self.started_at = clock()
        malloc.limit_arenas()  # before our threads exist: freed inference memory goes back
        prepare_dirs(cfg)
        checkpoints.clean_partial(cfg.data_dir)
        self.store = open_store(cfg)
        self.model = model if model is not None else default_model_holder(cfg)
        self.fuzzy = FuzzyMatcher(cfg.search.fuzzy_min_similarity)
        self.searcher = Searcher(
            self.store,
            cfg.search,
            model=self.model,
            fuzzy=self.fuzzy,
            lifecycle_settings=cfg.lifecycle,
            flag_secrets=cfg.secrets.flag_workspace_hits,
        )
        shared = self.store.shared
        self.triggers = lifecycle.TriggerIndex(max_age=SHARED_CACHE_MAX_AGE_S if shared else None)
        self.embedder = EmbedWorker(
            self.store, self.model, batch_size=cfg.embedding.batch_size, clock=clock
        )
        self.searcher.pending_vectors = self.embedder.pending
        self.dailylog = DailyLog(
            cfg.workspace, cfg.dailylog, clock=clock, elsewhere=self._marked_paths
        )
        self.indexer = Indexer(
            self.store,
            cfg.workspace,
            cfg.indexer,
            preprocess=self.dailylog.preprocess,
            on_change=self._index_changed,
            clock=clock,
            private=[
                cfg.data_dir,
                cfg.socket,
                *([Path(cfg.logging.file).expanduser()] if cfg.logging.file else []),
            ],
        )
        self.notes = Notes(self.store, self.indexer, cfg.notes, lock=self.dailylog.lock)
        self.memories = Memories(
            self.store,
            cfg.memories,
            clock=clock,
            on_added=[self.dailylog.append],
            on_changed=[self.embedder.wake, self.triggers.invalidate],
            on_updated=[lambda rec: self._log_rewritten(self.dailylog.rewrite(rec))],
            on_removed=[lambda recs: self._log_rewritten(self.dailylog.forget(recs))],
            copies_since=lambda since: checkpoints.copies_since(cfg.data_dir, since),
            secrets_mode=cfg.secrets.mode,
            temporary_ttl=cfg.lifecycle.temporary_ttl,
            near_duplicates=self.near_duplicates,
        )
        self.jobs = Jobs(self)
        self.watcher: Watcher | None = None
        self.watcher_error: str | None = None
        self.ready = threading.Event()  # the first reconcile is done
        self._reconcile_lock = threading.Lock()
        self._reconcile_wanted = False
        self.index_progress: dict[str, int] | None = None  # while a reconcile runs
        self._bg: threading.Thread | None = None
        self.model.on_ready.append(self.embedder.wake)
        self.store.on_change(self._changed_elsewhere)  # another daemon of a shared database

    def _marked_paths(self, ids: set[int]) -> list[str]:
        """Workspace files whose indexed text holds the daily-log marker of one of `ids`."""
        rows = self.store.read(entries.chunks_with_markers)
        return sorted({p for p, text in rows if marker_ids(text) & ids})

    def _log_rewritten(self, paths: list[Path]) -> None:
        """The daily log was rewritten by us: index it now (the watcher then finds nothing new)."""
        if paths:
            self.indexer.sync_paths(paths)

    def near_duplicates(self, text: str, namespace: str) -> list[dict[str, Any]]:
        """Memories in the namespace that say nearly the same thing: by vector similarity when
        the model is ready (the text's vector is stored at once, so it is embedded only once),
        else by word overlap among keyword matches."""
        lc = self.cfg.lifecycle
        from memoryd.text.markdown import sha256_text

        vec_ok = self.store.vec_enabled  # without sqlite-vec there is no knn: use words
        if vec_ok and self.model.state == "ready" and self.embedder.ensure_model() is not None:
            model_id = self.embedder.model_id
            assert model_id is not None
            vec = self.model.embed_batch([text])[0]
            now = self.clock()
            self.store.run_write(
                lambda con: vectors.store(con, model_id, [(sha256_text(text), vec)], now)
            )

            def by_vector(con: Any) -> list[dict[str, Any]]:
                out = []
                for h, dist in vectors.knn(con, model_id, vec, 10):
                    if 1 - dist < lc.near_duplicate_similarity:
                        break
                    for i in lcstore.memory_ids_by_hash(con, h, namespace):
                        out.append({"id": i, "similarity": round(1 - dist, 4)})
                return out

            return self.store.read(by_vector)
        from memoryd.search.ftsquery import parse_query

        words = set(parse_query(text).terms)
        any_match = parse_query(text).match_any or parse_query(text).match
        if not words or not any_match:
            return []

        def by_words(con: Any) -> list[dict[str, Any]]:
            out = []
            for i, content in lcstore.keyword_memories(con, any_match, namespace):
                other = set(parse_query(content).terms)
                overlap = len(words & other) / max(1, len(words | other))
                if overlap >= lc.near_duplicate_overlap:
                    out.append({"id": i, "similarity": round(overlap, 4)})
            return out

        return self.store.read(by_words)

    def trash_path(self, path: object, *, dry_run: bool = False) -> dict[str, Any]:
        """Delete by workspace path: the file (or folder) moves to <data_dir>/trash/<time>/ (so
        nothing is lost) and its chunks leave the index."""
        from memoryd.core.errors import InvalidInput, NotFound

        # a symlink is deleted itself: the link goes to the trash, never what it points to
        rel, full = self.indexer.resolve_path(path, keep_link=True)
        if self.indexer.holds_private(rel):
            raise InvalidInput(
                f"path: {rel!r} is or holds memoryd's own data (data_dir, log file or socket); "
                "it is not a workspace note and is not deleted through the API"
            )
        docs = self.store.read(entries.documents)
        paths = sorted(p for p in docs if p == rel or p.startswith(rel + "/"))
        here = os.path.lexists(full)
        if not here and not paths:
            raise NotFound(f"nothing at {rel} in the workspace or the index")
        target = self.cfg.data_dir / "trash" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        if not dry_run:
            if here:
                (target / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.move(full, target / rel)
            self.indexer.sync_paths([full])
        return {
            "deleted": len(paths),
            "paths": paths,
            "trash": str(target / rel),
            "dry_run": dry_run,
        }

    def after_restore(self) -> None:
        """The database was replaced under us (checkpoint restore): forget cached state."""
        self.embedder.model_id = None
        self.searcher.vector_cache.invalidate()
        self.fuzzy.invalidate()
        self.triggers.invalidate()
        self.embedder.wake()

    def _changed_elsewhere(self, info: dict[str, Any]) -> None:
        """Another daemon on the shared database changed memories, chunks or trigger phrases
        (or the listener reconnected and may have missed some): drop what is cached. Not the
        fuzzy vocabulary: rebuilding it scans every tsvector (ts_stat), and it refreshes by
        itself every 30 s; a typo correction a few seconds late costs nothing."""
        log.debug(
            "changed by another daemon; caches dropped", **{k: str(v) for k, v in info.items()}
        )
        self.triggers.invalidate()
        self.searcher.vector_cache.invalidate()
        if info.get("reason") == "reconnected":
            # back after an outage: what failed meanwhile is done now, not at the next run
            self.embedder.retry_now()
            if self.ready.is_set():
                self.reconcile_soon("the database is reachable again")

    def _index_changed(self) -> None:
        self.fuzzy.invalidate()
        self.embedder.wake()

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, *, progress: Callable[[str], None] | None = None, jobs: bool = True) -> None:
        """Start background work: model loading, watcher, initial reconcile, embedding, jobs.

        Returns at once; keyword search over what is already indexed works meanwhile.
        """
        self.model.start()
        self.embedder.start()
        if jobs:
            self.jobs.start()
        self._bg = threading.Thread(
            target=self._startup, args=(progress,), name="memoryd-startup", daemon=True
        )
        self._bg.start()

    def _startup(self, progress: Callable[[str], None] | None) -> None:
        try:
            self.start_watcher()

            def report(line: str) -> None:
                if progress is not None:
                    progress(f"indexing workspace: {line}")

            rep = self.reconcile(report)
            self.store.read(self.searcher.vector_cache.warm)
            malloc.trim()
            if progress is not None:
                progress(
                    f"ready: {rep.indexed} indexed, {rep.unchanged} unchanged, "
                    f"{rep.deleted} deleted, {rep.moved} moved"
                )
        except Exception:
            log.exception("startup reconcile failed")
        finally:
            self.ready.set()
            self.embedder.wake()

    def start_watcher(self) -> None:
        w = Watcher(
            self.cfg.workspace,
            self.indexer.sync_paths,
            debounce=self.cfg.indexer.debounce_ms / 1000,
            accept=self.indexer.accepts,
            on_error=self._watch_batch_failed,
            on_overflow=lambda: self.reconcile_soon("inotify queue overflow"),
        )
        try:
            w.start()
        except Exception as exc:
            self.watcher_error = str(exc)
            log.error(
                "file watcher failed to start; changes are picked up by the reconcile job",
                error=str(exc),
            )
            return
        self.watcher = w

    def reconcile(self, report: Callable[[str], None] | None = None) -> Any:
        """indexer.reconcile with progress: `index.progress` in status while it runs, and one
        log line (and `report` call) every 10 s."""
        last = [time.monotonic()]
        started = time.monotonic()

        def step(done: int, total: int) -> None:
            self.index_progress = {"done": done, "total": total}
            now = time.monotonic()
            if now - last[0] < PROGRESS_EVERY_S:
                return
            last[0] = now
            rate = done / max(now - started, 1e-6)
            eta = round((total - done) / rate, 1) if rate else None
            log.info("indexing", done=done, total=total, rate_per_s=round(rate, 1), eta_s=eta)
            if report is not None:
                report(f"{done}/{total} files")

        self.index_progress = {"done": 0, "total": 0}
        try:
            return self.indexer.reconcile(progress=step)
        finally:
            self.index_progress = None
            malloc.trim()  # a reconcile reads every file: hand the freed memory back

    def _watch_batch_failed(self, exc: BaseException) -> None:
        log.error("a batch of file changes was not applied", error=f"{type(exc).__name__}: {exc}")
        self.reconcile_soon("a batch of file changes failed")

    def reconcile_soon(self, reason: str) -> None:
        """Compare the whole workspace with the index now, on a thread of its own: file events
        were lost. A request while one is waiting to start adds nothing."""
        with self._reconcile_lock:
            if self._reconcile_wanted:
                return
            self._reconcile_wanted = True

        def run() -> None:
            with self._reconcile_lock:
                self._reconcile_wanted = False
            log.warning("reconciling the workspace now", reason=reason)
            self.jobs.run_now("reconcile")

        threading.Thread(target=run, name="memoryd-reconcile-now", daemon=True).start()

    def apply_config(self, cfg: Config) -> None:
        """Take reloadable settings from a new configuration (SIGHUP)."""
        self.cfg = cfg
        self.searcher.settings = cfg.search
        self.searcher.lifecycle = cfg.lifecycle
        self.searcher.flag_secrets = cfg.secrets.flag_workspace_hits
        self.memories.secrets_mode = cfg.secrets.mode
        self.memories.temporary_ttl = cfg.lifecycle.temporary_ttl
        self.indexer.settings = cfg.indexer
        self.memories.settings = cfg.memories
        self.dailylog.settings = cfg.dailylog
        self.notes.settings = cfg.notes
        self.jobs.reschedule()
        if self.watcher is not None:
            self.watcher.set_debounce(cfg.indexer.debounce_ms / 1000)

    def close(self) -> None:
        """Stop the watcher and workers, finish the write in progress, close the database."""
        self.jobs.shutdown(wait=True)
        if self.watcher is not None:
            self.watcher.stop()
        if self._bg is not None:
            self._bg.join(timeout=30)
        self.embedder.stop()
        self.model.close()
        self.searcher.close()
        self.store.close()

    # -- reporting ----------------------------------------------------------------------------

    def stats(self, namespace: str | None = None) -> dict[str, Any]:
        def q(con: Any) -> dict[str, Any]:
            return {
                **entries.counts(con, namespace),
                "by_type": entries.by_type(con, namespace),
                "by_tier": lcstore.by_tier(con, namespace),
                "namespaces": lcstore.by_namespace(con),
            }

        out = self.store.read(q)
        vec = self.embedder.counts()
        out.update(
            vectors=vec["done"], pending_vectors=vec["pending"], db_bytes=self.store.size_bytes()
        )
        return out

    def store_status(self) -> dict[str, Any]:
        """The `store` section of status: the backend and whether it answers now."""
        out = dict(self.store.info())
        if out.get("down_since") is not None:
            out["down_since"] = iso(out["down_since"])
        return out

    def status(self, *, check: bool = False) -> dict[str, Any]:
        from memoryd.core.errors import StoreUnavailable

        store = self.store_status()
        try:
            counts: dict[str, Any] | None = self.store.read(entries.counts)
            vec: dict[str, int | None] = dict(self.embedder.counts())
        except StoreUnavailable as exc:  # status still answers: it says the server is gone
            counts, vec = None, {"done": None, "pending": None}
            store.update(ok=False, error=store.get("error") or exc.message)
        watcher_alive = self.watcher is not None and self.watcher.alive
        out: dict[str, Any] = {
            "version": __version__,
            "pid": os.getpid(),
            "started_at": iso(self.started_at),
            "uptime_s": round(self.clock() - self.started_at, 1),
            "workspace": str(self.cfg.workspace),
            "data_dir": str(self.cfg.data_dir),
            "socket": str(self.cfg.socket),
            "db_path": str(self.cfg.db_path),
            "db_bytes": self.store.size_bytes(),
            "counts": counts,
            "store": store,
            "vectors": {
                "done": vec["done"],
                "embedding": self.embedder.running,
                "last_error": self.embedder.last_error,
                **(
                    self.embedder.progress(pending=vec["pending"])
                    if vec["pending"] is not None
                    else {"pending": None, "rate_per_s": None, "eta_s": None, "current": None}
                ),
            },
            "model": self.model.status(),
            "watcher": {"alive": watcher_alive, "error": self.watcher_error},
            "index": {
                "initial_reconcile_done": self.ready.is_set(),
                "last_reconcile": _iso_at(self.indexer.last_reconcile),
                "files_indexed": self.indexer.totals.indexed,
                "files_unchanged": self.indexer.totals.unchanged,
                "files_moved": self.indexer.totals.moved,
                "files_deleted": self.indexer.totals.deleted,
                "files_skipped": self.indexer.totals.skipped,
                "progress": self.index_progress,
            },
        }
        out["jobs"] = self.jobs.list()
        if check and store["ok"]:
            out["drift"] = self.indexer.drift()
        return out


def _iso_at(rep: dict[str, Any] | None) -> dict[str, Any] | None:
    if rep is None:
        return None
    return {**rep, "at": iso(rep["at"])}


def prepare_dirs(cfg: Config) -> None:
    """data_dir private (0700); the workspace created if missing."""
    cfg.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(cfg.data_dir, 0o700)
    Path(cfg.workspace).mkdir(parents=True, exist_ok=True)
