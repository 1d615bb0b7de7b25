"""Scheduled jobs inside the daemon (APScheduler), and the same jobs run on demand.

Each job is a plain function of the parts it uses (the store, the memories door, the embed
worker...); `daemon_jobs` binds them, and the App only passes its parts in. The scheduler runs
each with max_instances=1 and coalesce=True (runs missed while the machine slept become one); a
per-job lock also keeps `run_now` from overlapping a scheduled run. A job that raises is logged
with its name, its error is kept for `memoryctl jobs`, and it runs again next time; nothing here
can stop the daemon.

Several daemons sharing one PostgreSQL database (store.backend = "postgres"): the jobs that
work on the whole database (expiry, optimize: vector collection, access-log pruning, ANALYZE)
run inside `store.exclusive(name)`, an advisory lock; a daemon that does not get it skips that
run. The jobs on the SQLite file (checkpoint, quick_check, snapshot) have nothing to do there
and say so in their result; backfill and reconcile are this daemon's own work.
"""

from __future__ import annotations

import collections
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from memoryd.core import threads
from memoryd.core.config import Config
from memoryd.core.errors import NotFound, describe
from memoryd.core.fsutil import atomic_write
from memoryd.core.logsetup import get_logger
from memoryd.core.timeutil import iso
from memoryd.index.embedworker import EmbedWorker
from memoryd.memory.memories import Memories
from memoryd.store import Store, entries, vectors

log = get_logger("memoryd.serve.jobs")

ACCESS_LOG_DAYS = 90
START_DELAY_S = 120.0  # an overdue job waits this long after a start (the start-up reconcile first)
# The wall clock is compared with the monotonic one this often; a step back of more than
# CLOCK_STEP_S reschedules every job from now (see Jobs._watch_clock).
CLOCK_WATCH_S = 5.0
CLOCK_STEP_S = 60.0
Job = Callable[[], dict[str, Any]]


class Cache(Protocol):
    def invalidate(self) -> None: ...


def _sqlite_only(store: Store, name: str, first: bool) -> dict[str, Any] | None:
    """The skip result of a job on the SQLite file when the store is a server database."""
    if store.file_backed:
        return None
    if first:  # one line per daemon, not one per run
        log.info("job has nothing to do on this store backend", job=name, backend=store.backend)
    return {"skipped": f"{name} works on the SQLite file; store.backend is {store.backend}"}


def expiry(store: Store, memories: Memories) -> dict[str, Any]:
    with store.exclusive("expiry") as mine:
        if not mine:
            log.debug("expiry runs in another daemon now; skipped", job="expiry")
            return {"skipped": "another daemon is running it"}
        return {"removed": memories.expire()}


def backfill(embedder: EmbedWorker) -> dict[str, Any]:
    return embedder.backfill()


def optimize(
    store: Store, embedder: EmbedWorker, vector_cache: Cache, grace_s: float, now: float
) -> dict[str, Any]:
    with store.exclusive("optimize") as mine:
        if not mine:
            log.debug("optimize runs in another daemon now; skipped", job="optimize")
            return {"skipped": "another daemon is running it"}
        return _optimize(store, embedder, vector_cache, grace_s, now)


def _optimize(
    store: Store, embedder: EmbedWorker, vector_cache: Cache, grace_s: float, now: float
) -> dict[str, Any]:
    store.optimize()
    collected = 0
    model_id = embedder.model_id
    # on a shared database, a vector is an orphan only when no workspace's entry uses it
    with store.write(scope="all") as con:
        if model_id is not None:
            collected = vectors.gc(con, model_id, now, grace_s)
        pruned = entries.prune_access_log(con, now - ACCESS_LOG_DAYS * 86400)
    if collected:
        vector_cache.invalidate()
    return {"vectors_collected": collected, "access_log_pruned": pruned}


def checkpoint(store: Store, first: bool = True) -> dict[str, Any]:
    skipped = _sqlite_only(store, "checkpoint", first)
    if skipped is not None:
        return skipped
    busy, wal_pages, moved = store.checkpoint("RESTART")
    if not busy:  # all folded in: cut the WAL file, whose old frames still hold deleted text
        # (RESTART only makes the next writes start over at its beginning; secure_delete
        # overwrites the database's pages, not the WAL's)
        store.checkpoint("TRUNCATE")
    return {"busy": busy, "wal_pages": wal_pages, "checkpointed": moved}


class IntegrityError(Exception):
    """PRAGMA quick_check found a problem."""


def quick_check(store: Store, first: bool = True) -> dict[str, Any]:
    skipped = _sqlite_only(store, "quick_check", first)
    if skipped is not None:
        return skipped
    problems = store.quick_check()
    if problems:
        log.critical(
            "DATABASE INTEGRITY CHECK FAILED: restore a snapshot or rebuild the index",
            problems=problems[:20],
            db=str(store.path),
        )
        raise IntegrityError("; ".join(problems[:5]))
    return {"ok": True}


def reconcile(run: Callable[[], Any]) -> dict[str, Any]:
    """`run`: the App's reconcile (Indexer.reconcile with progress reporting)."""
    report = run()
    if report.changed:
        log.warning(
            "reconcile repaired drift the watcher missed",
            indexed=report.indexed,
            deleted=report.deleted,
            moved=report.moved,
        )
    return report.as_dict()


def snapshot(
    store: Store, folder: Path, keep: int, now: float, first: bool = True
) -> dict[str, Any]:
    skipped = _sqlite_only(store, "snapshot", first)
    if skipped is not None:
        return skipped
    if keep <= 0:
        return {"skipped": "jobs.snapshot_keep is 0"}
    name = time.strftime("memoryd-%Y%m%dT%H%M%SZ.db", time.gmtime(now))
    store.backup_to(folder / name)
    removed = prune_snapshots(folder, keep, made=name)
    return {"snapshot": name, "removed": removed}


def prune_snapshots(folder: Path, keep: int, made: str | None = None) -> list[str]:
    """Removes all but the `keep` newest snapshots by name (the UTC time each was made),
    never `made`, the one just written: snapshots made while the wall clock ran ahead (a bad
    hardware clock, since corrected) are named after it, and the newest by name would not be
    the newest made; the job would delete the snapshot it had just made, each day."""
    snaps = sorted(folder.glob("memoryd-*.db"))
    if made is not None and (folder / made) in snaps:
        later = [p.name for p in snaps if p.name > made]
        if later:
            log.warning("snapshots named after now: the wall clock ran ahead", names=later)
        snaps = [p for p in snaps if p.name != made] + [folder / made]
    old = snaps[:-keep] if keep else snaps
    for p in old:
        p.unlink(missing_ok=True)
    return [p.name for p in old]


def daemon_jobs(
    *,
    store: Store,
    memories: Memories,
    embedder: EmbedWorker,
    vector_cache: Cache,
    reconcile_workspace: Callable[[], Any],
    cfg: Callable[[], Config],
    clock: Callable[[], float],
) -> dict[str, tuple[Job, str]]:
    """The daemon's jobs, each bound to the parts it uses, with its interval's config key.
    `cfg` gives the configuration in force (a SIGHUP replaces it)."""
    ran: set[str] = set()

    def first(name: str) -> bool:
        new = name not in ran
        ran.add(name)
        return new

    def grace() -> float:
        return cfg().embedding.vector_gc_days * 86400

    return {
        "expiry": (lambda: expiry(store, memories), "expiry_interval"),
        "backfill": (lambda: backfill(embedder), "backfill_interval"),
        "optimize": (
            lambda: optimize(store, embedder, vector_cache, grace(), clock()),
            "optimize_interval",
        ),
        "checkpoint": (lambda: checkpoint(store, first("checkpoint")), "checkpoint_interval"),
        "quick_check": (lambda: quick_check(store, first("quick_check")), "quick_check_interval"),
        "reconcile": (lambda: reconcile(reconcile_workspace), "reconcile_interval"),
        "snapshot": (
            lambda: snapshot(
                store,
                cfg().data_dir / "snapshots",
                cfg().jobs.snapshot_keep,
                clock(),
                first("snapshot"),
            ),
            "snapshot_interval",
        ),
    }


RECENT_RUNS = 10


@dataclass
class JobState:
    name: str
    fn: Job
    interval_key: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    running: bool = False
    runs: int = 0
    failures: int = 0
    failing: int = 0  # runs failed in a row: the run that works again says how many, once
    last_run_at: float | None = None
    last_result: dict[str, Any] | None = None
    last_error: str | None = None
    last_duration_ms: float | None = None
    # the last runs, newest last: {at, duration_ms, error} (the status page's job history)
    recent: collections.deque[dict[str, Any]] = field(
        default_factory=lambda: collections.deque(maxlen=RECENT_RUNS)
    )


# Scheduled runs go to one thread, one after the other. APScheduler's default pool has 10: jobs
# due at the same moment (every interval divides the hour, so at minute 60 expiry, backfill,
# checkpoint and reconcile all are) each got a thread of their own, and every new thread kept
# what it had made for good (its SQLite reader and page cache, its malloc cache, the reconcile's
# garbage scattered over more arenas): at 100K chunks the daemon's RSS stepped up at minutes 10,
# 30 and 60 (issue 23.2; BENCHMARKS.md, branch soak5). A job that comes due while another runs
# waits for it (misfire_grace_time is at least a minute, and at least its own interval).
JOB_THREADS = 1


class Jobs:
    """Runs jobs on their intervals, and on demand. `settings()`: the [jobs] section in force
    (a SIGHUP replaces it; reschedule() takes the intervals again)."""

    def __init__(
        self,
        jobs: dict[str, tuple[Job, str]],
        *,
        settings: Callable[[], Any],
        clock: Callable[[], float] = time.time,
        state_file: Path | None = None,
        wall: Callable[[], float] | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        # the scheduler's clock, time.time (a test moves it, and APScheduler's with it)
        self.wall = wall if wall is not None else lambda: time.time()
        self._watching = threading.Event()
        self.states = {name: JobState(name, fn, key) for name, (fn, key) in jobs.items()}
        self._scheduler: Any = None
        # when each job last ran, and since when its interval counts, across restarts: a daemon
        # restarted more often than a job's interval (a laptop shut down every evening) would
        # otherwise never run its daily jobs (snapshot, optimize, quick_check)
        self.state_file = state_file
        self._save_lock = threading.Lock()
        self._saved: dict[str, dict[str, float | None]] = self._load()
        for name, st in self.states.items():
            st.last_run_at = self._saved.get(name, {}).get("last_run_at")

    def _load(self) -> dict[str, dict[str, float | None]]:
        if self.state_file is None or not self.state_file.exists():
            return {}
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
            return {
                str(k): {
                    f: float(v[f]) if isinstance(v.get(f), int | float) else None
                    for f in ("last_run_at", "counting_from")
                }
                for k, v in data.items()
                if isinstance(v, dict)
            }
        except (OSError, ValueError, AttributeError) as exc:
            log.warning("job times unreadable; intervals count from now", error=str(exc))
            return {}

    def _save(self) -> None:
        if self.state_file is None:
            return
        try:
            data = json.dumps(self._saved, sort_keys=True).encode()
            atomic_write(self.state_file, data, mode=0o600)
        except OSError as exc:  # the jobs still run; only the next start counts from then
            log.warning("job times not saved", error=str(exc))

    def _first_run(self, name: str, seconds: float) -> float:
        """The first run after a start: an interval after the last run (or, for a job that has
        not run yet, after the first start), but not sooner than START_DELAY_S from now. Real
        time, as the scheduler's (self.clock may be a test's)."""
        now = self.wall()
        saved = self._saved.setdefault(name, {"last_run_at": None, "counting_from": now})
        base = saved.get("last_run_at") or saved.get("counting_from") or now
        if not math.isfinite(base) or base > now:  # a clock that was ahead, a hand-edited file
            base = now
        return max(base + seconds, now + min(seconds, START_DELAY_S))

    def interval(self, name: str) -> float:
        return float(getattr(self.settings(), self.states[name].interval_key))

    def start(self) -> None:
        from apscheduler.executors.pool import BasePoolExecutor
        from apscheduler.schedulers.background import BackgroundScheduler

        class JobPool(BasePoolExecutor):
            """APScheduler's thread pool, as core/threads.Pool: at the thread limit a run
            waits for a thread the pool has, or is skipped (logged; the next one is due)."""

            def __init__(self, workers: int) -> None:
                super().__init__(threads.Pool(workers, thread_name_prefix="memoryd-job"))

        # UTC, as every time given to it: APScheduler's default zone is tzlocal's reading of
        # $TZ, which raises on what libc takes (TZ=UTC+3, "<+0545>-5:45", a misspelt zone)
        # and stopped the daemon at start
        self._scheduler = BackgroundScheduler(
            daemon=True, executors={"default": JobPool(JOB_THREADS)}, timezone=UTC
        )
        for name in self.states:
            self._schedule(name)
        self._save()
        self._scheduler.start()
        self._watching.clear()
        threading.Thread(target=self._watch_clock, name="memoryd-clock", daemon=True).start()

    def _watch_clock(self) -> None:
        """APScheduler sleeps until the next run's wall-clock time, measured when it fell
        asleep: after the wall clock steps back (an NTP correction of a clock that ran ahead, a
        VM restored, `date -s`), it would run no job until the wall clock caught up again, an
        hour later for an hour's step, years for a clock that had started in the future. A
        step back of more than CLOCK_STEP_S reschedules every job an interval from now. A step
        forward (or a resume from sleep) needs nothing: each job that came due runs once
        (coalesce)."""
        offset = self.wall() - time.monotonic()
        while not self._watching.wait(CLOCK_WATCH_S):
            now = self.wall() - time.monotonic()
            moved, offset = now - offset, now
            if moved < -CLOCK_STEP_S:
                log.warning("the wall clock moved back; jobs rescheduled", seconds=round(moved))
                try:
                    self.reschedule()
                except Exception as exc:  # stopping meanwhile: nothing left to reschedule
                    log.warning("jobs not rescheduled", error=f"{type(exc).__name__}: {exc}")
            elif moved > CLOCK_STEP_S:
                log.info("the wall clock moved forward; jobs due run once", seconds=round(moved))

    def _schedule(self, name: str) -> None:
        seconds = self.interval(name)
        first = datetime.fromtimestamp(self._first_run(name, seconds), UTC)
        self._scheduler.add_job(
            self._scheduled,
            "interval",
            seconds=seconds,
            next_run_time=first,
            args=[name],
            id=name,
            name=name,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(60, int(seconds)),
            replace_existing=True,
        )

    def reschedule(self) -> None:
        """SIGHUP: take the intervals from the [jobs] section again."""
        if self._scheduler is None:
            return
        for name in self.states:
            self._schedule(name)

    def shutdown(self, wait: bool = True) -> None:
        self._watching.set()
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=wait)
            self._scheduler = None

    def _scheduled(self, name: str) -> None:
        self._run(name, blocking=False)

    def _run(self, name: str, *, blocking: bool) -> dict[str, Any]:
        st = self.states[name]
        if not st.lock.acquire(blocking=blocking):
            log.info("job still running; this run skipped", job=name)
            return {"name": name, "result": None, "error": "already running", "duration_ms": 0}
        started = time.perf_counter()
        st.running = True
        error: str | None = None
        result: dict[str, Any] | None = None
        try:
            result = st.fn()
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            st.failures += 1
            st.failing += 1
            log.error("job failed", job=name, error=error)
        finally:
            st.running = False
            recovered, st.failing = (st.failing, 0) if error is None else (0, st.failing)
            st.runs += 1
            st.last_run_at = self.clock()
            st.last_duration_ms = round((time.perf_counter() - started) * 1000, 1)
            st.last_result, st.last_error = result, error
            st.recent.append(
                {"at": iso(st.last_run_at), "duration_ms": st.last_duration_ms, "error": error}
            )
            with self._save_lock:
                self._saved.setdefault(name, {})["last_run_at"] = self.wall()
                self._save()
            st.lock.release()
        if error is None:
            if recovered:  # (a failure that recurs is written 10 times in 10 minutes, then
                log.info("job works again", job=name, failed_runs=recovered)  # counted)
            log.info("job done", job=name, duration_ms=st.last_duration_ms, **(result or {}))
        return {
            "name": name,
            "result": result,
            "error": error,
            "duration_ms": st.last_duration_ms,
        }

    def run_now(self, name: str) -> dict[str, Any]:
        """Run a job in this thread (waiting for a scheduled run of it to finish first)."""
        if name not in self.states:
            raise NotFound(f"no job named {describe(name)} (jobs: {', '.join(self.states)})")
        return self._run(name, blocking=True)

    def list(self) -> list[dict[str, Any]]:
        out = []
        for name, st in self.states.items():
            next_run = None
            if self._scheduler is not None:
                job = self._scheduler.get_job(name)
                if job is not None and job.next_run_time is not None:
                    next_run = iso(job.next_run_time.timestamp())
            out.append(
                {
                    "name": name,
                    "interval_s": self.interval(name),
                    "running": st.running,
                    "runs": st.runs,
                    "failures": st.failures,
                    "last_run_at": iso(st.last_run_at),
                    "last_result": st.last_result,
                    "last_error": st.last_error,
                    "last_duration_ms": st.last_duration_ms,
                    "next_run_at": next_run,
                    "recent_runs": list(st.recent),
                }
            )
        return out
