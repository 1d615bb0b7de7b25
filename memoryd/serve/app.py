"""The application: wires store, indexer, watcher, model, embed worker, search and memories.

Plain Python, no sockets and no signals: tests build an App on a tmp dir and call it directly;
the daemon wraps one in the socket server and the process lifecycle.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.core import collector, malloc, threads
from memoryd.core.config import Config
from memoryd.core.errors import MemorydError
from memoryd.core.logsetup import get_logger
from memoryd.index import chunking
from memoryd.index.embed import (
    ModelHolder,
    background_threads,
    load_embedder,
    model_fix,
    resolve_model,
)
from memoryd.index.embedworker import EmbedWorker
from memoryd.index.indexer import Indexer
from memoryd.index.watcher import Watcher
from memoryd.memory import checkpoints, dailycatchup, dailyrenumber, lifecycle
from memoryd.memory.dailylog import DailyLog
from memoryd.memory.memories import Memories
from memoryd.notes import leftovers
from memoryd.notes.notes import Notes
from memoryd.search.fuzzy import FuzzyMatcher
from memoryd.search.neardup import NearDuplicates
from memoryd.search.searcher import Searcher
from memoryd.serve import appstatus
from memoryd.serve.entitywork import EntityWork
from memoryd.serve.jobs import Jobs, daemon_jobs
from memoryd.serve.searchlog import SearchLog
from memoryd.serve.workspaceguard import (
    WorkspaceGuard,
    WorkspaceLock,
    prepare_dirs,
    prepare_workspace,
)
from memoryd.store import docpaths, entries, ftsprune, logmarks
from memoryd.store.backend import open_store
from memoryd.text import entity_typer

log = get_logger("memoryd.serve.app")

PROGRESS_EVERY_S = 10.0
# the settings that decide which workspace files are notes and can change on a reload
NOTE_RULE_KEYS = ("include", "exclude", "skip_hidden", "skip_tool_files")
SHARED_CACHE_MAX_AGE_S = 30.0  # caches of a shared database are rebuilt at least this often
GONE_LOOK_S = 1.0  # a team: how soon after a change the daily log drops lines deleted elsewhere


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
        background_threads=background_threads(cfg.embedding.threads, resolved),
        fix=model_fix(resolved),
    )


class App:
    def __init__(
        self,
        cfg: Config,
        *,
        model: ModelHolder | None = None,
        clock: Callable[[], float] = time.time,
        claim_workspace: bool = False,
    ) -> None:
        self.cfg = cfg
        self.clock = clock
        self.started_at = clock()
        # Daemon: when the previous run started, if it did not stop cleanly (crashlog)
        self.unclean_since: float | None = None
        self._started = time.monotonic()  # uptime: the wall clock may step back (or forward)
        self.search_log = SearchLog(clock)
        # settings changed in the file that only a restart applies (the daemon's reload; status)
        self.restart_needed: list[str] = []
        # set by the daemon when it can serve the web page (memoryd.web): starts it, says where
        self.open_page: Callable[[], dict[str, Any]] | None = None
        malloc.limit_arenas()  # before our threads exist: freed inference memory goes back
        malloc.fix_mmap_threshold()  # buffers of a few MB are unmapped when freed (issue 23.2)
        prepare_dirs(cfg)
        # the daemon's: one per workspace folder (before a store is made), on PostgreSQL one per
        # workspace id (store/pg/claim.py)
        self.workspace_lock = WorkspaceLock(cfg.workspace, enabled=claim_workspace)
        self.workspace_lock.take()
        checkpoints.clean_partial(cfg.data_dir)
        if os.path.exists(cfg.workspace) and not os.path.isdir(cfg.workspace):
            # a file in the way (a dangling symlink is a drive not mounted: prepare_workspace)
            raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(cfg.workspace))
        self.store = open_store(cfg, claim=claim_workspace)
        prepare_workspace(cfg, self.store)
        self.workspace_lock.take()  # made just now
        self.model = model if model is not None else default_model_holder(cfg)
        # rebuilt in the background after index changes, never by a query (issue 23)
        self.fuzzy = FuzzyMatcher(cfg.search.fuzzy_min_similarity, read=self.store.read)
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
        self.entity_work = EntityWork(self.store, self.model)  # notes' entities, after indexing
        self.searcher.registered = lambda: self.embedder.model_id
        self.dailylog = DailyLog(
            cfg.workspace,
            cfg.dailylog,
            clock=clock,
            elsewhere=self._marked_paths,
            known=lambda ids: self.store.read(lambda con: entries.memory_ids_among(con, ids)),
        )
        self.dailylog.current = self._stored_memory  # a line written late: the memory now
        self.dailylog.waiting_file = cfg.data_dir / "dailylog-waiting.json"  # across restarts
        self.dailylog.read_waiting()
        self.dailylog.renumber_again = dailyrenumber.renumber_again  # (a refused renumbering)
        # files whose indexing a full disk (or another program's lock on the SQLite file) refused
        # are read once the store takes writes again; the vectors it refused, written at once
        self.store.refusals.on_worked = self._writes_work_again
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
        self.notes = Notes(
            self.store,
            self.indexer,
            cfg.notes,
            lock=self.dailylog.lock,
            trash=cfg.data_dir / "trash",
            secrets_mode=cfg.secrets.mode,
        )
        # another chunk size than the index was built with: every note is read again (its
        # first reconcile), as a change of model re-embeds (index/chunking.py)
        chunking.check(self.store, cfg.indexer, self.notes.forget_hashes)
        self._ids_above_the_log()
        self.near_duplicates = NearDuplicates(
            self.store,
            self.model,
            self.embedder,
            cfg.lifecycle,
            clock=clock,
            vector_index=self.searcher.vector_cache,
        )
        self.memories = Memories(
            self.store,
            cfg.memories,
            clock=clock,
            on_added=[self.dailylog.append],
            on_changed=[self.embedder.wake, self.triggers.invalidate],
            on_updated=[lambda rec: self._log_rewritten(self.dailylog.rewrite(rec))],
            on_removed=[lambda recs: self._log_rewritten(self.dailylog.forget(recs))],
            on_imported=[self._log_read_again],
            changing=self.dailylog.changing,
            storing=self.dailylog.storing,
            copies_since=lambda since: [
                *checkpoints.copies_since(cfg.data_dir, since),
                *self.dailylog.unforgotten(),  # a full disk refused its rewrite: done later
            ],
            stale_lines=self.dailylog.unforgotten,
            secrets_mode=cfg.secrets.mode,
            temporary_ttl=cfg.lifecycle.temporary_ttl,
            near_duplicates=self.near_duplicates,
            lifecycle_settings=cfg.lifecycle,
        )
        self.jobs = Jobs(
            daemon_jobs(
                store=self.store,
                memories=self.memories,
                embedder=self.embedder,
                vector_cache=self.searcher.vector_cache,
                reconcile_workspace=self.reconcile,
                cfg=lambda: self.cfg,
                clock=lambda: self.clock(),  # the App's clock, even when replaced (tests)
            ),
            settings=lambda: self.cfg.jobs,
            clock=lambda: self.clock(),
            state_file=cfg.data_dir / "jobs.json",  # last runs, kept across restarts
        )
        self.watcher: Watcher | None = None
        self.watcher_error: str | None = None
        # what each server did at its connection limit since the start (status: connections):
        # "socket" and "web" (serve/places.Places.info), "accept" (streams.EventLoop's)
        self.doors: dict[str, Callable[[], dict[str, Any]]] = {}
        self.workspace_guard = WorkspaceGuard(
            cfg.workspace,
            watched=lambda: self.watcher.identity if self.watcher is not None else None,
            stopped=lambda: self.watcher is not None and not self.watcher.alive,
            rewatch=self._rewatch,
        )
        self.ready = threading.Event()  # the first reconcile is done
        self._reconcile_lock = threading.Lock()
        self._reconcile_wanted = False
        self._reconciling: list[threading.Thread] = []  # reconcile_soon's, joined by close
        self.index_progress: dict[str, Any] | None = None  # while a reconcile runs
        self._bg: threading.Thread | None = None
        self.model.on_ready.append(self.embedder.wake)
        self.store.on_change(self._changed_elsewhere)  # another daemon of a shared database
        self._gone_timer: threading.Timer | None = None
        self._gone_timer_lock = threading.Lock()
        if self.store.shared:
            self.dailylog.team = True
            self._forget_gone()  # takes stock of the memories the daily log names

    def _writes_work_again(self) -> None:
        self.embedder.retry_now()
        self.reconcile_soon("the store takes writes again")

    def _marked_paths(self, ids: set[int] | None) -> list[str]:
        """Workspace files whose text, as last indexed, holds a daily-log marker of `ids`."""
        return sorted(self.store.read(lambda con: logmarks.paths_naming(con, ids)))

    def _log_rewritten(self, paths: list[Path]) -> None:
        """The daily log was rewritten by us: index it now (the watcher then finds nothing new)."""
        if paths:
            self.indexer.sync_paths(paths)

    def _log_read_again(self, counts: dict[str, Any]) -> None:
        """Memories were imported with ids the daily log names (an export brought into a new
        store), or renumbered, their lines naming old ids (dailyrenumber: in a new store whose
        workspace was indexed first, the notes took the low ids): those lines, indexed as text
        while the store did not have them, are the memories' own now. Read them again."""
        moved = {int(r["from"]): int(r["to"]) for r in counts.get("renumbered") or []}
        renamed: list[Path] = []
        if moved:
            now = self.store.read(lambda con: entries.get_many(con, sorted(moved.values())))
            triples = [
                (old, new, str(now[new]["content"])) for old, new in moved.items() if new in now
            ]
            renamed = dailyrenumber.renumber(self.dailylog, triples)
        paths = sorted({*renamed, *self.dailylog.files_naming(set(counts.get("ids") or []))})
        rels = [path.relative_to(self.cfg.workspace).as_posix() for path in paths]

        def forget(con: Any) -> None:
            for rel in rels:
                docpaths.forget_hashes_under(con, rel)

        if paths:
            self.store.run_write(forget)
            self.indexer.sync_paths(paths)

    def _forget_gone_soon(self) -> None:
        """One look a second at most: another daemon indexing its notes notifies per statement."""
        with self._gone_timer_lock:
            if self._gone_timer is not None:
                return
            timer = threading.Timer(GONE_LOOK_S, self._forget_gone)
            timer.daemon = True
            try:
                threads.start(timer, "the look at other daemons' forgotten memories")
            except threads.ThreadLimit:  # (logged) the next notification asks again
                return
            self._gone_timer = timer

    def _forget_gone(self) -> None:
        """Forget means forget in a team too: the daily log lines of memories another daemon
        deleted leave this workspace's log (DailyLog.forget_gone), and it is indexed again."""
        with self._gone_timer_lock:
            self._gone_timer = None
        try:
            self._log_rewritten(
                self.dailylog.forget_gone(
                    lambda ids: self.store.read(lambda con: entries.memory_ids_among(con, ids))
                )
            )
        except Exception as exc:  # the next change looks again
            log.warning("daily log lines of memories deleted elsewhere not checked", error=str(exc))

    def _ids_above_the_log(self) -> None:
        """A store older than its daily log (a snapshot copied into data_dir, the restore of
        docs/service.md): its id sequence was behind ids the log names, so a new memory took
        such an id, and deleting it took the old line of that id out of the log too. New ids
        start above every id the log names (ids are never reused). Not in a store without
        memories: one made to import an export into keeps the ids the log names (as its lines
        are those memories)."""
        if not self.store.read(entries.counts).get("memories"):
            return
        logged = self.dailylog.highest_id()
        if logged > self.store.read(entries.id_high_water):
            self.store.run_write(lambda con: entries.raise_id_high_water(con, logged))
            log.warning(
                "the daily log names memories this store never had (restored from an older "
                "copy?): new ids start above them",
                highest_logged_id=logged,
            )

    def after_restore(self) -> None:
        """The database was replaced under us (checkpoint restore): forget cached state."""
        self.embedder.model_id = None
        self.searcher.vector_cache.invalidate()
        self.fuzzy.invalidate()
        self.triggers.invalidate()
        self.embedder.wake()
        # a copy chunked with other settings: the reconcile after the restore reads every note
        chunking.check(self.store, self.cfg.indexer, self.notes.forget_hashes)

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
        if info.get("table") == "all_entries" or info.get("reason") == "reconnected":
            self._forget_gone_soon()
        if info.get("reason") == "reconnected":
            # back after an outage: what failed meanwhile is done now, not at the next run
            self.embedder.retry_now()
            if self.ready.is_set():
                self.reconcile_soon("the database is reachable again")

    def _index_changed(self) -> None:
        self.fuzzy.invalidate()
        self.embedder.wake()
        self.entity_work.wake()

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, *, progress: Callable[[str], None] | None = None, jobs: bool = True) -> None:
        """Start background work: model loading, watcher, initial reconcile, embedding, the
        entity stage, jobs. Returns at once; keyword search over what is indexed works meanwhile."""
        self.model.start()
        self.embedder.start()
        self.entity_work.start()
        if jobs:
            self.jobs.start()
        self._bg = threading.Thread(
            target=self._startup, args=(progress,), name="memoryd-startup", daemon=True
        )
        self._bg.start()

    def _startup(self, progress: Callable[[str], None] | None) -> None:
        try:
            if self.indexer.stopping.is_set():  # closed as it started (a stop at once)
                return
            if self.workspace_guard.check() != "away":
                self._clear_leftovers()
                self.start_watcher()
            self.workspace_guard.start()
            entity_typer.preload()  # the data files now, not a newer install's at the first add
            if self.dailylog.pending:  # lines an earlier run's full disk kept back
                self.dailylog.append_waiting()
            # lines the previous run was killed before it wrote (unclean_since: not stopped)
            dailycatchup.catch_up(self.dailylog, self.store, self.unclean_since, self.started_at)

            def report(line: str) -> None:
                if progress is not None:
                    progress(f"indexing workspace: {line}")

            rep = self.reconcile(report)
            if self.indexer.stopping.is_set():  # a stop: the caches below serve no search
                return
            self.store.read(self.searcher.vector_cache.warm)
            self.store.read(ftsprune.learn)  # common words' bounds for the keyword pool
            malloc.trim()
            collector.settle()  # start-up's objects out of the collector's walks (issue 23.3)
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

    def _clear_leftovers(self) -> None:
        """What note writes cut short by an earlier run's end left beside notes (leftovers)."""
        try:
            leftovers.clear(
                self.cfg.workspace,
                self.cfg.data_dir / "recovered",
                self.cfg.indexer,
                self.dailylog.lock,  # every note and daily-log write holds it
                set(self.indexer.private),
            )
        except OSError as exc:  # a folder it cannot read: the reconcile says so too
            log.warning("could not clear what writes cut short left", error=str(exc))

    def start_watcher(self) -> None:
        w = Watcher(
            self.cfg.workspace,
            self.indexer.sync_paths,
            debounce=self.cfg.indexer.debounce_ms / 1000,
            accept=self.indexer.accepts,
            on_error=self._watch_batch_failed,
            on_overflow=lambda: self.reconcile_soon("inotify queue overflow"),
            on_file=self.indexer.others.event,
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

    def _rewatch(self) -> None:
        """The workspace folder is back (or another is at its path): watch it, catch up."""
        old, self.watcher = self.watcher, None
        if old is not None:
            old.stop(flush=False)
        self.workspace_lock.take_again()
        self.watcher_error = None
        self.start_watcher()
        self.dailylog.append_waiting()
        self.reconcile_soon("the workspace folder is back")

    def _stored_memory(self, record: dict[str, Any]) -> dict[str, Any] | None:
        """A memory as stored now (None once deleted): a daily-log line written late."""
        try:
            return self.memories.get(int(record["id"]), record_access=False)
        except MemorydError:
            return None

    def reconcile(self, report: Callable[[str], None] | None = None) -> Any:
        """indexer.reconcile with progress: `index.progress` in status while it runs, and one
        log line (and `report` call) every 10 s."""
        last = [time.monotonic()]
        started = time.monotonic()

        def step(done: int, total: int) -> None:
            now = time.monotonic()
            rate = done / max(now - started, 1e-6)
            eta = round((total - done) / rate, 1) if rate else None
            self.index_progress = {
                "done": done,
                "total": total,
                "rate_per_s": round(rate, 1),
                "eta_s": eta,
            }
            if now - last[0] < PROGRESS_EVERY_S:
                return
            last[0] = now
            log.info("indexing", done=done, total=total, rate_per_s=round(rate, 1), eta_s=eta)
            self.embedder.wake()  # what is read so far is embedded meanwhile, on a first start too
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
            if self.indexer.stopping.is_set():  # closing: the next start reconciles
                return
            log.warning("reconciling the workspace now", reason=reason)
            self.jobs.run_now("reconcile")

        thread = threading.Thread(target=run, name="memoryd-reconcile-now", daemon=True)
        with self._reconcile_lock:  # (started under it: close never joins one not started)
            self._reconciling = [t for t in self._reconciling if t.is_alive()]
            try:
                threads.start(thread, "the reconcile thread")
            except threads.ThreadLimit:  # the reconcile job's next run does it (logged)
                self._reconcile_wanted = False
                return
            self._reconciling.append(thread)

    def apply_config(self, cfg: Config) -> None:
        """Take reloadable settings from a new configuration (SIGHUP). New note rules
        (include, exclude, skip_hidden, skip_tool_files) reconcile the workspace at once: the
        notes they leave out leave the index, the ones they let in are indexed."""
        old = self.cfg.indexer
        rules_changed = any(
            getattr(old, key) != getattr(cfg.indexer, key) for key in NOTE_RULE_KEYS
        )
        self.cfg = cfg
        self.searcher.settings = cfg.search
        self.fuzzy.min_similarity = cfg.search.fuzzy_min_similarity
        self.searcher.lifecycle = cfg.lifecycle
        self.searcher.flag_secrets = cfg.secrets.flag_workspace_hits
        self.memories.secrets_mode = cfg.secrets.mode
        self.memories.temporary_ttl = cfg.lifecycle.temporary_ttl
        self.memories.lifecycle = cfg.lifecycle
        self.indexer.settings = cfg.indexer
        self.memories.settings = cfg.memories
        self.dailylog.settings = cfg.dailylog
        self.notes.settings = cfg.notes
        self.notes.secrets_mode = cfg.secrets.mode
        self.near_duplicates.settings = cfg.lifecycle
        self.jobs.reschedule()
        if self.watcher is not None:
            self.watcher.set_debounce(cfg.indexer.debounce_ms / 1000)
        if rules_changed:
            self.reconcile_soon("indexer.include, exclude, skip_hidden or skip_tool_files changed")

    def stop_work(self) -> None:
        """memoryd is stopping: a reconcile under way (a request's `reindex` too) ends after
        its file in hand, and a backfill after its batch. Server.close calls it once requests
        in flight have had server.shutdown_timeout_s, then waits for their threads."""
        self.indexer.stopping.set()
        self.embedder.stopping()  # (the job's too, which jobs.shutdown awaits)
        self.entity_work.stopping()

    def close(self) -> None:
        """Stop the watcher and workers, finish the write in progress, close the database."""
        self.stop_work()
        with self._gone_timer_lock:
            if self._gone_timer is not None:
                self._gone_timer.cancel()
        self.jobs.shutdown(wait=True)
        with self._reconcile_lock:
            reconciling = list(self._reconciling)
        for thread in reconciling:  # a reconcile run now (reconcile_soon) reads the store
            thread.join(timeout=30)
        self.workspace_guard.stop()
        if self._bg is not None:  # start-up first: it may be starting the watcher right now
            self._bg.join(timeout=30)
        if self.watcher is not None:
            self.watcher.stop()
        self.embedder.stop()
        self.entity_work.stop()
        self.model.close()
        if self.dailylog.pending:  # a last try (waiting_file)
            self.dailylog.append_waiting()
        self.searcher.close()
        self.fuzzy.close()
        self.store.close()
        self.workspace_lock.release()
        collector.release()  # what start-up froze is collectable again (a process of many apps)

    # -- reporting ----------------------------------------------------------------------------

    def stats(self, namespace: str | None = None) -> dict[str, Any]:
        return appstatus.stats(self, namespace)

    def store_status(self) -> dict[str, Any]:
        """The `store` section of status: the backend and whether it answers now."""
        return appstatus.store_status(self)

    def status(self, *, check: bool = False) -> dict[str, Any]:
        return appstatus.status(self, check=check)
