"""Several daemons on one PostgreSQL database (issue 14): idempotent concurrent adds, change
notifications between daemons, once-per-database jobs, and the three-daemon end-to-end test."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

from memoryd.serve import methods as api
from memoryd.store import entries


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def test_same_text_added_by_two_daemons_at_once_is_one_memory(
    team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = team("a"), team("b")
    first = a.memories.add("the release train leaves on thursdays")
    # b checked for the text before a's commit: its insert meets the unique index
    real = entries.find_memory_by_hash
    misses = [2]  # b's check in add() and the one in insert_memory see nothing

    def stale(con: Any, namespace: str, content_hash: str) -> int | None:
        if misses[0] > 0:
            misses[0] -= 1
            return None
        return real(con, namespace, content_hash)

    monkeypatch.setattr(entries, "find_memory_by_hash", stale)
    second = b.memories.add("the release train leaves on thursdays")
    assert misses == [0]  # the race really happened
    assert second.id == first.id and second.duplicate and second.record is not None
    assert second.record["content"] == "the release train leaves on thursdays"
    monkeypatch.setattr(entries, "find_memory_by_hash", real)
    assert a.store.read(entries.counts)["memories"] == 1


def test_update_to_a_text_another_daemon_just_stored_is_refused(
    team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.core.errors import InvalidInput

    a, b = team("a"), team("b")
    a.memories.add("deploys need two approvals")
    mine = b.memories.add("deploys need one approval").id
    monkeypatch.setattr(entries, "find_memory_by_hash", lambda *args: None)  # the check missed
    with pytest.raises(InvalidInput, match="already has this content"):
        b.memories.update(mine, {"content": "deploys need two approvals"})
    monkeypatch.undo()
    assert b.memories.get(mine)["content"] == "deploys need one approval"


def test_concurrent_identical_adds_give_one_memory_and_no_error(team: Any) -> None:
    apps = [team("a"), team("b"), team("c")]
    texts = [f"shared decision number {i}" for i in range(15)]
    results: list[tuple[str, int, bool]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(apps))

    def run(app: Any) -> None:
        start.wait()
        for text in texts:
            try:
                got = app.memories.add(text)
                results.append((text, got.id, got.duplicate))
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=run, args=(app,)) for app in apps]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    ids = {text: {i for t, i, _ in results if t == text} for text in texts}
    assert all(len(v) == 1 for v in ids.values()), ids
    assert sum(1 for *_, dup in results if not dup) == len(texts)  # one "stored" per text
    assert apps[0].store.read(entries.counts)["memories"] == len(texts)


def test_trigger_phrase_added_in_one_daemon_matches_in_another(team: Any) -> None:
    a, b = team("a"), team("b")
    assert call(b, "match_triggers", prompt="please run the blue green deploy")["memories"] == []
    added = a.memories.add("blue-green deploys swap the router last", triggers=["blue green"])

    def matched() -> bool:
        found = call(b, "match_triggers", prompt="please run the blue green deploy")
        return [m["id"] for m in found["memories"]] == [added.id]

    wait_for(matched, timeout=5)
    # and a change there is seen here: the phrase removed in b stops matching in a
    assert [m["id"] for m in call(a, "match_triggers", prompt="blue green")["memories"]]
    b.memories.update(added.id, {"triggers": []})
    wait_for(lambda: call(a, "match_triggers", prompt="blue green")["memories"] == [], timeout=5)


def test_constitutional_memory_added_in_one_daemon_starts_sessions_in_another(
    team: Any,
) -> None:
    a, b = team("a"), team("b")
    assert call(b, "session_start")["memories"] == []
    added = a.memories.add("never force-push to main", tier="constitutional")
    found = call(b, "session_start")["memories"]
    assert [m["id"] for m in found] == [added.id]


def test_listener_reconnects_after_its_connection_is_cut(team: Any) -> None:
    import psycopg

    a, b = team("a"), team("b")
    seen: list[dict[str, Any]] = []
    b.store.on_change(seen.append)
    wait_for(lambda: b.store.listening, timeout=5)
    with psycopg.connect(b.store.settings.conninfo, autocommit=True) as con:
        con.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()"
        )
    wait_for(lambda: {"reason": "reconnected"} in seen, timeout=10)
    a.memories.add("after the reconnect", triggers=["late phrase"])
    wait_for(lambda: any(s.get("table") == "triggers" for s in seen), timeout=5)
    assert b.store.info()["listening"] is True


def test_once_per_database_jobs_run_in_one_daemon_at_a_time(
    team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = team("a"), team("b")
    now = time.time()
    for i in range(5):
        a.memories.add(f"short lived fact {i}", expires_at=now + 3600)
    later = now + 7200
    a.memories.clock = b.memories.clock = lambda: later
    inside = threading.Barrier(2, timeout=10)
    expire = type(a.memories).expire

    def slow_expire(self: Any) -> int:
        n = expire(self)
        inside.wait()  # both daemons' jobs are running now: one holds the lock
        return n

    monkeypatch.setattr(type(a.memories), "expire", slow_expire)
    results: dict[str, dict[str, Any]] = {}
    start = threading.Barrier(2)

    def run(name: str, app: Any) -> None:
        start.wait()
        results[name] = app.jobs.run_now("expiry")
        with contextlib.suppress(threading.BrokenBarrierError):
            inside.wait()  # the one that skipped lets the other finish

    threads = [threading.Thread(target=run, args=(n, x)) for n, x in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    outcomes = sorted(str(r["result"]) for r in results.values())
    assert outcomes == ["{'removed': 5}", "{'skipped': 'another daemon is running it'}"], results
    assert all(r["error"] is None for r in results.values())
    assert a.store.read(entries.counts)["memories"] == 0


def test_sqlite_file_jobs_say_they_have_nothing_to_do(team: Any) -> None:
    a = team("a")
    for name in ("checkpoint", "quick_check", "snapshot"):
        out = a.jobs.run_now(name)
        assert out["error"] is None and "skipped" in out["result"], out
    out = a.jobs.run_now("optimize")
    assert out["error"] is None and "vectors_collected" in out["result"]


def test_vector_collection_keeps_other_workspaces_vectors(team: Any) -> None:
    import numpy as np

    from memoryd.store import vectors

    a, b = team("a", embedding={"vector_gc_days": 0.0}), team("b")
    (Path(b.cfg.workspace) / "notes").mkdir(parents=True)
    (Path(b.cfg.workspace) / "notes" / "b.md").write_text("# B\n\nonly in b's workspace\n")
    b.reconcile()
    hashes = b.store.read(
        lambda con: [c["content_hash"] for c in entries.document_chunks(con, "notes/b.md")]
    )
    assert hashes
    model_id = a.store.run_write(lambda con: vectors.ensure_model(con, "k", "m", 4, 1.0))
    vec = np.ones(4, dtype=np.float32)
    a.store.run_write(lambda con: vectors.store(con, model_id, [(h, vec) for h in hashes], 1.0))
    a.embedder.model_id = model_id
    for _ in range(2):  # marked, then collected: neither touches b's vectors
        assert a.jobs.run_now("optimize")["result"]["vectors_collected"] == 0
    assert a.store.read(lambda con: vectors.model_count(con, model_id)) == len(hashes)


# --- three daemons, one database ---------------------------------------------------------------

ADDS = 1000
SHARED = 50  # texts added through all three daemons at once
THREADS_PER_DAEMON = 6


@pytest.mark.slow
def test_three_daemons_share_one_database(
    pg_dsn: str, daemon_factory: Any, tmp_path: Path, short_dir: Path
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from conftest import rpc

    names = ("alpha", "beta", "gamma")
    daemons = []
    for name in names:
        ws = tmp_path / name / "ws"
        (ws / "notes").mkdir(parents=True)
        (ws / "notes" / "todo.md").write_text(f"# Todo\n\nbuy {name}-brand coffee filters\n")
        daemons.append(
            daemon_factory(
                wait=False,
                workspace=str(ws),
                data_dir=str(tmp_path / name / "data"),
                socket=str(short_dir / f"{name}.sock"),
                dailylog={"enabled": False},
                store={"backend": "postgres", "dsn": pg_dsn},
            )
        )
    for d in daemons:
        wait_for(d.answers, timeout=60)
    for d in daemons:
        wait_for(lambda d=d: d.call("status")["index"]["initial_reconcile_done"], timeout=30)

    # 1,000 adds over real sockets: each daemon's own texts, and SHARED texts sent through
    # all three daemons at the same moment
    jobs: list[tuple[int, str]] = []
    for i in range(SHARED):
        jobs += [(k, f"shared decision {i}: the team agreed on option {i % 7}") for k in range(3)]
    for i in range(ADDS - 3 * SHARED):
        jobs.append((i % 3, f"note {i} from {names[i % 3]}: fact number {i * 7919 % 10007}"))
    assert len(jobs) == ADDS
    distinct = {text for _, text in jobs}

    def add(job: tuple[int, str]) -> tuple[int, str, dict[str, Any]]:
        k, text = job
        return k, text, rpc(daemons[k].socket, "add", {"content": text}, timeout=60)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=3 * THREADS_PER_DAEMON) as pool:
        answers = list(pool.map(add, jobs))
    took = time.monotonic() - started
    errors = [a for a in answers if "error" in a[2]]
    assert not errors, errors[:5]
    acked: dict[str, set[int]] = {}
    for _, text, resp in answers:
        acked.setdefault(text, set()).add(resp["result"]["id"])
    assert all(len(ids) == 1 for ids in acked.values()), "one text, several ids"
    stored_once = sum(1 for _, _, r in answers if not r["result"]["duplicate"])
    assert stored_once == len(distinct)

    # 0 lost, 0 duplicated: straight from the database
    from memoryd.store import entries as ent
    from memoryd.store.pg import PgSettings, PgStore

    check = PgStore(PgSettings(pg_dsn, "checker", "test:checker"))
    try:
        ids = [next(iter(v)) for v in acked.values()]
        rows = check.read(lambda con: ent.get_many(con, ids))
        assert {rows[i]["content"] for i in ids} == distinct  # every acknowledged id, its text
        assert check.read(ent.counts)["memories"] == len(distinct)  # and nothing else
    finally:
        check.close()

    # each daemon finds the others' memories
    for k, d in enumerate(daemons):
        assert d.call("list", {"limit": 1})["total"] == len(distinct)
        others = [
            (text, r["result"]["id"])
            for j, text, r in answers
            if j != k and not text.startswith("shared")
        ][:20]
        for text, entry_id in others:
            assert d.call("get", {"id": entry_id})["content"] == text
        for text, entry_id in others[:5]:  # and by keyword search
            hits = d.call("search", {"query": text, "mode": "keyword", "limit": 5})["hits"]
            assert entry_id in [h["id"] for h in hits], (text, hits)

    # each daemon's notes stay apart: the same path, each its own text, and a search finds
    # only this workspace's
    for name, d in zip(names, daemons, strict=True):
        note = d.call("get", {"path": "notes/todo.md"})
        assert f"buy {name}-brand coffee filters" in note["content"]
        for other in names:
            if other != name:
                assert other not in note["content"]
        hits = d.call("search", {"query": "coffee filters", "mode": "keyword"})["hits"]
        notes = [h for h in hits if h.get("path")]
        assert notes and all(h["path"] == "notes/todo.md" for h in notes), hits
        assert all(name in h["content"] for h in notes), hits
        # the all-workspaces scope finds the three of them, each marked with its workspace
        every = d.call(
            "search", {"query": "coffee filters", "mode": "keyword", "workspace": "all"}
        )["hits"]
        found = {h["content"].split("buy ")[1].split("-brand")[0] for h in every if h.get("path")}
        assert found == set(names), every
        assert len({h.get("workspace") for h in every if h.get("path")}) == 3, every
    print(f"{ADDS} adds over 3 daemons in {took:.1f} s")


def test_import_of_a_text_another_daemon_just_stored_skips_it(
    team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.store import transfer as tstore

    a, b = team("a"), team("b")
    a.memories.add("imports are idempotent")
    real = tstore.memory_by_hash
    misses = [1]

    def stale(con: Any, namespace: str, content_hash: str) -> int | None:
        if misses[0] > 0:
            misses[0] -= 1
            return None
        return real(con, namespace, content_hash)

    monkeypatch.setattr(tstore, "memory_by_hash", stale)
    items = [{"content": "imports are idempotent"}, {"content": "a new one"}]
    out = b.memories.import_items(items)
    assert misses == [0]
    assert out["imported"] == 1 and out["skipped_duplicates"] == 1, out
    assert b.store.read(entries.counts)["memories"] == 2


def test_embed_worker_takes_a_model_another_daemon_registered_at_once(
    team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from memoryd.index import embedworker

    a = team("a", model="fake")
    real = embedworker.vectors.ensure_model
    raced = [1]

    def racing(con: Any, *args: Any) -> int:
        if raced[0]:
            raced[0] -= 1
            raise psycopg.errors.UniqueViolation("duplicate key value violates models_key_key")
        return real(con, *args)

    monkeypatch.setattr(embedworker.vectors, "ensure_model", racing)
    a.model.start()
    wait_for(lambda: a.model.state == "ready", timeout=10)
    assert a.embedder.ensure_model() is not None and raced == [0]


def test_feedback_from_two_daemons_at_once_is_all_counted(team: Any) -> None:
    a, b = team("a"), team("b")
    entry_id = a.memories.add("feedback counts add up").id
    start = threading.Barrier(2)

    def run(app: Any) -> None:
        start.wait()
        for i in range(15):
            app.memories.validate(entry_id, i % 3 != 0)

    threads = [threading.Thread(target=run, args=(app,)) for app in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    rec = a.memories.get(entry_id)
    assert rec["validation_count"] == 30 and rec["useful_count"] == 20, rec


def test_a_memory_another_daemon_deletes_leaves_this_daemons_daily_log(team: Any) -> None:
    """Forget means forget in a team: alice logged the memory, bob deletes it; its line leaves
    alice's daily log too (her daemon hears of the change), and a line of an id the database
    never had (an older store's) stays (walkj12)."""
    with_log = {"enabled": True}
    alice, bob = team("alice", dailylog=with_log), team("bob", dailylog=with_log)
    gone = alice.memories.add("the launch plan is to ship on friday")
    kept = alice.memories.add("the retro is on monday")
    log = next((alice.cfg.workspace / "daily").glob("*.md"))
    older = {"id": 999_999, "content": "a line of an older store", "created_at": "2026-11-26"}
    with log.open("a") as f:
        f.write(alice.dailylog.render(older, alice.dailylog.when(older)) + "\n")
    wait_for(lambda: alice.store.listening)  # a change made before would go unheard
    bob.memories.delete(gone.id)
    wait_for(lambda: "friday" not in log.read_text())
    text = log.read_text()
    assert "the retro is on monday" in text and "a line of an older store" in text
    assert alice.memories.get(kept.id)["content"] == "the retro is on monday"
