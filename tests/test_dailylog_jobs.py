"""Issue 4: the daily log without a feedback loop, and the scheduled jobs."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

from memoryd.search.searcher import SearchRequest
from memoryd.serve.jobs import Jobs

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def today_log(app: Any) -> Path:
    return app.cfg.workspace / "daily" / f"{datetime.now().astimezone():%Y-%m-%d}.md"


def entry_lines(path: Path) -> list[str]:
    return [ln for ln in path.read_text().splitlines() if ln.startswith("- ")]


def count_hits(app: Any, query: str) -> int:
    res = app.searcher.search(SearchRequest(query=query, limit=100, record_access=False))
    return len(res["hits"])


def test_hundred_adds_give_hundred_lines_and_hits_and_stay_steady(make_app: Any) -> None:
    app = make_app(model=None)
    app.start(jobs=False)
    wait_for(app.ready.is_set)
    for i in range(100):
        app.memories.add(f"zeppelin fact number {i}", tags=["air"])
    log = today_log(app)
    assert len(entry_lines(log)) == 100
    # the watcher sees the log change; the index must not pick the daemon's lines up again
    wait_for(
        lambda: (
            app.store.read(
                lambda con: con.execute("SELECT count(*) FROM documents").fetchall()[0][0]
            )
            == 1
        )
    )
    deadline = time.monotonic() + 5 * app.cfg.indexer.debounce_ms / 1000
    while time.monotonic() < deadline:  # several debounce periods: nothing may grow
        assert count_hits(app, "zeppelin") == 100
        assert app.stats()["memories"] == 100
        time.sleep(0.05)
    assert app.stats()["chunks"] <= 1  # the header only
    assert len(entry_lines(log)) == 100


def test_hand_edit_is_indexed_and_survives_the_next_append(make_app: Any) -> None:
    app = make_app(model=None)
    app.start(jobs=False)
    wait_for(app.ready.is_set)
    app.memories.add("the first memory of the day")
    log = today_log(app)
    text = log.read_text()
    edited = text.replace("the first memory", "the FIRST memory (fixed by hand)")
    log.write_text(edited + "\nA paragraph about a quokka, typed by a person.\n")
    wait_for(lambda: count_hits(app, "quokka") == 1)
    wait_for(lambda: count_hits(app, "fixed hand") == 1)  # the edited line is a chunk now
    generation = app.indexer.totals.indexed  # before the append: its indexing may be quick
    app.memories.add("the second memory of the day")
    content = log.read_text()
    assert "quokka" in content and "fixed by hand" in content
    assert "the second memory of the day" in content
    wait_for(lambda: app.indexer.totals.indexed > generation)  # the append was indexed
    assert count_hits(app, "quokka") == 1
    assert count_hits(app, '"second memory"') == 1  # the memory, not its log line too


def test_day_boundary_goes_to_the_right_files(make_app: Any) -> None:
    midnight = datetime.now().astimezone().replace(hour=0, minute=0, second=0, microsecond=0)
    t = [midnight.timestamp() - 1]
    app = make_app(model=None)
    app.memories.clock = lambda: t[0]
    app.memories.add("just before midnight")
    t[0] = midnight.timestamp() + 1
    app.memories.add("just after midnight")
    folder = app.cfg.workspace / "daily"
    before = datetime.fromtimestamp(midnight.timestamp() - 1).astimezone()
    files = sorted(p.name for p in folder.glob("*.md"))
    assert files == [f"{before:%Y-%m-%d}.md", f"{midnight:%Y-%m-%d}.md"]
    assert "before" in (folder / files[0]).read_text()
    assert "after" in (folder / files[1]).read_text()


def test_expired_memories_go_after_the_job_and_not_before(make_app: Any) -> None:
    now = [1_000_000.0]
    app = make_app(model=None, dailylog={"enabled": False})
    app.memories.clock = lambda: now[0]
    app.searcher.clock = lambda: now[0]
    mid = app.memories.add("short lived memory", ttl="1h").id
    app.memories.add("long lived memory")
    assert app.jobs.run_now("expiry")["result"] == {"removed": 0}
    assert app.memories.get(mid)
    now[0] += 3601
    assert count_hits(app, "lived") == 1  # hidden from search once expired ...
    assert app.memories.get(mid)  # ... but still stored until the job runs
    assert app.jobs.run_now("expiry")["result"] == {"removed": 1}
    with pytest.raises(Exception, match="no entry"):
        app.memories.get(mid)


def test_failing_job_does_not_stop_others_and_never_runs_twice(make_app: Any) -> None:
    app = make_app(model=None)
    calls: list[str] = []
    gate = threading.Event()

    def boom() -> dict:
        calls.append("boom")
        raise RuntimeError("job exploded")

    def slow() -> dict:
        calls.append("slow")
        gate.wait(5)
        return {"ok": True}

    jobs = Jobs(
        {"boom": (boom, "expiry_interval"), "slow": (slow, "backfill_interval")},
        settings=lambda: app.cfg.jobs,
        clock=app.clock,
    )
    res = jobs.run_now("boom")
    assert res["error"] == "RuntimeError: job exploded"
    listed = {j["name"]: j for j in jobs.list()}
    assert listed["boom"]["last_error"] == "RuntimeError: job exploded"
    assert listed["boom"]["failures"] == 1
    t = threading.Thread(target=jobs.run_now, args=("slow",))
    t.start()
    wait_for(lambda: jobs.states["slow"].running)
    assert jobs._run("slow", blocking=False)["error"] == "already running"
    gate.set()
    t.join(5)
    assert calls.count("slow") == 1
    assert jobs.run_now("slow")["result"] == {"ok": True}


def test_scheduled_jobs_run_and_report(make_app: Any) -> None:
    app = make_app(model=None, jobs={"expiry_interval": "200ms", "checkpoint_interval": 0.2})
    app.start()
    wait_for(
        lambda: all(
            j["runs"] >= 1 for j in app.jobs.list() if j["name"] in ("expiry", "checkpoint")
        )
    )
    listed = app.jobs.list()
    assert {j["name"] for j in listed} == {
        "expiry",
        "backfill",
        "optimize",
        "checkpoint",
        "quick_check",
        "reconcile",
        "snapshot",
    }
    assert all(j["next_run_at"] for j in listed)


def test_reconcile_repairs_what_the_watcher_missed(make_app: Any) -> None:
    app = make_app(model=None)
    ws = app.cfg.workspace
    (ws / "a.md").write_text("# A\n\nold armadillo\n")
    app.indexer.reconcile()
    (ws / "a.md").write_text("# A\n\nnew axolotl\n")  # no watcher running: the index is stale
    (ws / "b.md").write_text("# B\n\nbeaver\n")
    res = app.jobs.run_now("reconcile")
    assert res["result"]["indexed"] == 2
    assert count_hits(app, "axolotl") == 1 and count_hits(app, "armadillo") == 0


@pytest.mark.sqlite_only("quick_check reads the SQLite file; the job skips on PostgreSQL")
def test_quick_check_failure_is_loud(make_app: Any, capsys: pytest.CaptureFixture[str]) -> None:
    app = make_app(model=None)
    app.store.quick_check = lambda: ["*** in database main *** Page 7: btreeInitPage() error"]
    res = app.jobs.run_now("quick_check")
    assert res["error"] and "btreeInitPage" in res["error"]
    assert "INTEGRITY CHECK FAILED" in capsys.readouterr().out
    assert {j["name"]: j for j in app.jobs.list()}["quick_check"]["failures"] == 1


@pytest.mark.sqlite_only("snapshots copy the SQLite file (PgStore.backup_to refuses)")
def test_snapshots_keep_the_newest(make_app: Any) -> None:
    app = make_app(model=None, jobs={"snapshot_keep": 2})
    t = [1_700_000_000.0]
    app.clock = lambda: t[0]
    for _ in range(4):
        assert app.jobs.run_now("snapshot")["error"] is None
        t[0] += 60
    snaps = sorted((app.cfg.data_dir / "snapshots").glob("*.db"))
    assert len(snaps) == 2


def test_memoryctl_jobs_end_to_end(daemon_factory: Any) -> None:
    d = daemon_factory()
    out = d.ctl("add", "expiring soon", "--ttl", "1s")
    assert out.returncode == 0, out.stderr
    mid = int(out.stdout.split()[-1])
    wait_for(lambda: d.call("search", {"query": "expiring", "include_expired": True})["hits"])
    time.sleep(1.1)  # the ttl itself is the condition under test
    out = d.ctl("jobs", "run", "expiry")
    assert out.returncode == 0, out.stderr
    assert d.ctl("get", str(mid)).returncode == 1
    out = d.ctl("--json", "jobs")
    jobs = json.loads(out.stdout)["jobs"]
    assert {j["name"] for j in jobs} >= {"expiry", "reconcile", "snapshot"}
    assert all(j["next_run_at"] for j in jobs)
    assert next(j for j in jobs if j["name"] == "expiry")["last_run_at"]
    log = Path(d.cfg["workspace"]) / "daily" / f"{datetime.now().astimezone():%Y-%m-%d}.md"
    assert "expiring soon" not in log.read_text()  # expiry forgets, as delete does


def test_scheduled_jobs_due_together_run_on_one_thread() -> None:
    # Jobs due at the same moment each got a thread of APScheduler's pool of 10, and the threads
    # kept what they made (their SQLite readers, their malloc caches) for the daemon's life.
    seen: dict[str, list[int]] = {"a": [], "b": [], "c": []}

    def job(name: str) -> Any:
        def run() -> dict[str, Any]:
            seen[name].append(threading.get_ident())
            time.sleep(0.05)  # still running when the others come due
            return {}

        return run

    class Intervals:
        expiry_interval = backfill_interval = checkpoint_interval = 0.2

    keys = {"a": "expiry_interval", "b": "backfill_interval", "c": "checkpoint_interval"}
    jobs = Jobs({n: (job(n), keys[n]) for n in seen}, settings=Intervals)
    jobs.start()
    try:
        wait_for(lambda: all(len(runs) >= 3 for runs in seen.values()), timeout=20)
    finally:
        jobs.shutdown()
    assert len({ident for runs in seen.values() for ident in runs}) == 1


def test_a_jobs_interval_counts_across_restarts(tmp_path: Path, monkeypatch: Any) -> None:
    """A daemon restarted more often than a job's interval (a laptop shut down every evening)
    never ran its daily jobs: each start counted the day again. The last run (and, before the
    first, the first start) is kept in data_dir/jobs.json; an overdue job runs soon after a
    start, once."""
    from memoryd.serve import jobs as jobs_mod

    class Daily:
        snapshot_interval = 86400.0

    first = time.time()  # the scheduler's own clock is real: the fake one runs ahead of it
    now = [first]
    monkeypatch.setattr(jobs_mod.time, "time", lambda: now[0])
    state = tmp_path / "jobs.json"
    ran: list[float] = []

    def start() -> Jobs:
        j = Jobs(
            {"snapshot": (lambda: ran.append(now[0]) or {}, "snapshot_interval")},
            settings=Daily,
            state_file=state,
        )
        j.start()
        return j

    def next_run(j: Jobs) -> float:
        return float(j._scheduler.get_job("snapshot").next_run_time.timestamp())

    j = start()  # the first start: a day from now
    assert next_run(j) == pytest.approx(now[0] + 86400)
    j.shutdown()
    now[0] += 8 * 3600  # the next morning, before the day is up: still a day from the first
    j = start()
    assert next_run(j) == pytest.approx(first + 86400)
    j.shutdown()
    now[0] += 20 * 3600  # overdue: soon after this start, not a day later
    j = start()
    assert next_run(j) == pytest.approx(now[0] + jobs_mod.START_DELAY_S)
    j.run_now("snapshot")  # as the scheduler would
    j.shutdown()
    assert ran == [now[0]]
    j = start()  # counted from that run
    assert next_run(j) == pytest.approx(now[0] + 86400)
    assert j.list()[0]["last_run_at"] is not None  # shown after a restart too
    j.shutdown()
    state.write_text("{not json")  # unreadable: counted from now, with a warning, no crash
    j = start()
    assert next_run(j) == pytest.approx(now[0] + 86400)
    j.shutdown()
    for odd in ('{"snapshot": {"last_run_at": 1e300}}', '{"snapshot": {"last_run_at": NaN}}'):
        state.write_text(odd)  # a clock that was ahead, a hand-edited file: from now
        j = start()
        assert next_run(j) == pytest.approx(now[0] + 86400)
        j.shutdown()


@pytest.mark.parametrize("step", [-3600.0, -86400.0 * 365])
def test_jobs_run_on_after_the_wall_clock_steps_back(monkeypatch: Any, step: float) -> None:
    """APScheduler sleeps until a wall-clock time: when the wall clock stepped back (an NTP
    correction of a clock that ran ahead, a VM restored), no job ran until it caught up again,
    an hour later for an hour's step. The jobs' clock watch reschedules them from now."""
    from datetime import datetime, timedelta

    from apscheduler.executors import base as executors
    from apscheduler.schedulers import base as schedulers
    from apscheduler.triggers import interval as triggers

    from memoryd.serve import jobs as jobs_mod

    moved = [0.0]

    class Wall(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return datetime.now(tz) + timedelta(seconds=moved[0])

    for module in (executors, schedulers, triggers):
        monkeypatch.setattr(module, "datetime", Wall)
    monkeypatch.setattr(jobs_mod, "CLOCK_WATCH_S", 0.05)

    class Often:
        expiry_interval = 0.3

    runs: list[float] = []
    jobs = Jobs(
        {"expiry": (lambda: runs.append(time.monotonic()) or {}, "expiry_interval")},
        settings=Often,
        wall=lambda: time.time() + moved[0],
    )
    jobs.start()
    try:
        wait_for(lambda: len(runs) >= 2, timeout=30)
        moved[0] = step
        before = len(runs)
        wait_for(lambda: len(runs) >= before + 3, timeout=30)
    finally:
        jobs.shutdown()


@pytest.mark.sqlite_only("snapshots copy the SQLite file (PgStore.backup_to refuses)")
def test_a_snapshot_is_kept_after_the_wall_clock_ran_ahead(make_app: Any) -> None:
    """Snapshots made while the wall clock ran ahead (2090) sort after today's by name: the
    job pruned to the newest names and deleted the snapshot it had just made, every day."""
    app = make_app(model=None, jobs={"snapshot_keep": 2})
    folder = app.cfg.data_dir / "snapshots"
    folder.mkdir(parents=True, exist_ok=True)
    for day in (1, 2):
        (folder / f"memoryd-209001{day:02d}T000000Z.db").write_bytes(b"")
    made = app.jobs.run_now("snapshot")["result"]
    assert made["snapshot"] not in made["removed"]
    assert (folder / made["snapshot"]).stat().st_size > 0
    assert len(list(folder.glob("memoryd-*.db"))) == 2


@pytest.mark.parametrize("zone", ["UTC+3", "<+0545>-5:45", "Foo/Bar", "Australia/Lord_Howe"])
def test_the_daemon_runs_in_any_zone_libc_reads(daemon_factory: Any, zone: str) -> None:
    """TZ=UTC+3 (a POSIX zone), <+0545>-5:45 or a misspelt zone stopped the daemon at start:
    the scheduler asked tzlocal for the local zone, which refuses what libc reads. The daily
    log is named by libc's local date, as the person's day."""
    import subprocess
    import sys

    d = daemon_factory(extra_env={"TZ": zone})
    made = d.call("add", {"content": "a memory in another zone"})["memory"]["created_at"]
    ts = datetime.fromisoformat(made.replace("Z", "+00:00")).timestamp()
    day = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import datetime; print(f'{{datetime.datetime.fromtimestamp({ts}):%Y-%m-%d}}')",
        ],
        env={"TZ": zone},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    log = Path(d.cfg["workspace"]) / "daily" / f"{day}.md"
    assert "a memory in another zone" in log.read_text()
    assert all(j["next_run_at"].endswith("Z") for j in d.call("jobs")["jobs"])


def test_uptime_counts_on_after_the_wall_clock_steps_back(make_app: Any) -> None:
    """status's uptime_s was the wall clock minus the start: an hour's step back made it
    negative (`memoryctl status`: "up -3599s")."""
    from memoryd.serve import methods as api

    moved = [0.0]
    app = make_app(model=None, dailylog={"enabled": False})
    app.clock = lambda: time.time() + moved[0]
    moved[0] = -3600.0
    assert api.lookup("status", {}).fn(app, {})["uptime_s"] >= 0
