"""kill -9 during mixed work: every acknowledged write is kept, nothing is duplicated, the
database passes integrity_check, and file edits made before the kill are indexed after it."""

from __future__ import annotations

import collections
import random
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

from .support import Conn, size

pytestmark = [pytest.mark.slow, pytest.mark.backends]  # SQLite and PostgreSQL (conftest.py)

DUPLICATES = (
    "SELECT namespace, content_hash, COUNT(*) FROM entries WHERE kind = 'memory' "
    "GROUP BY namespace, content_hash HAVING COUNT(*) > 1"
)


class Ledger:
    """What the daemon acknowledged, and what is in doubt (sent, killed before the answer)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.added: dict[int, str] = {}
        self.deleted: set[int] = set()
        self.doubtful: set[int] = set()  # a delete was sent but not acknowledged
        self.adds = self.deletes = self.edits = self.jobs = 0

    def alive(self) -> list[int]:
        with self.lock:
            return [i for i in self.added if i not in self.deleted and i not in self.doubtful]


def _adder(sock: Path, ledger: Ledger, stop: threading.Event, tag: str) -> None:
    n = 0
    try:
        with Conn(sock, timeout=10) as c:
            while not stop.is_set():
                n += 1
                content = f"reliability {tag} memory {n} {random.random():.12f}"
                resp = c.call("add", {"content": content, "tags": ["rel"]})
                if "result" in resp:
                    with ledger.lock:
                        ledger.added[resp["result"]["id"]] = content
                        ledger.adds += 1
    except (OSError, ValueError):
        return  # killed: whatever was in flight is neither acknowledged nor checked


def _deleter(sock: Path, ledger: Ledger, stop: threading.Event) -> None:
    try:
        with Conn(sock, timeout=10) as c:
            while not stop.is_set():
                candidates = ledger.alive()
                if len(candidates) < 5 or len(ledger.deleted) > len(ledger.added) // 4:
                    time.sleep(0.01)
                    continue
                victim = random.choice(candidates)
                with ledger.lock:
                    ledger.doubtful.add(victim)
                resp = c.call("delete", {"id": victim})
                if "result" in resp:
                    with ledger.lock:
                        ledger.doubtful.discard(victim)
                        ledger.deleted.add(victim)
                        ledger.deletes += 1
    except (OSError, ValueError):
        return


def _editor(workspace: Path, ledger: Ledger, stop: threading.Event, cycle: int) -> None:
    rng = random.Random(cycle)
    while not stop.is_set():
        path = workspace / f"note-{rng.randrange(40)}.md"
        if path.exists() and rng.random() < 0.2:
            path.unlink()
        else:
            path.write_text(f"# Note {cycle}\n\nedited in cycle {cycle}: {rng.random()}\n")
        with ledger.lock:
            ledger.edits += 1
        time.sleep(0.01)


def _jobs(sock: Path, ledger: Ledger, stop: threading.Event) -> None:
    try:
        with Conn(sock, timeout=30) as c:
            while not stop.is_set():
                c.call("jobs.run", {"name": random.choice(["reconcile", "optimize", "expiry"])})
                with ledger.lock:
                    ledger.jobs += 1
                time.sleep(0.05)
    except (OSError, ValueError):
        return


def _pg_rows(dsn: str, sql: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True, options="-c memoryd.workspace=-") as con:
        return list(con.execute(sql).fetchall())  # (memories are every workspace's)


def check_database(db: Path, dsn: str | None) -> None:
    """With the daemon dead: integrity_check, the FTS index, and no memory stored twice
    (PostgreSQL: the last)."""
    from memoryd.store.db import connect

    if dsn is not None:
        dups = _pg_rows(dsn, DUPLICATES)
        assert dups == [], f"memories stored twice: {dups[:5]}"
        return
    con, _ = connect(db, writer=True)
    try:
        assert [r[0] for r in con.execute("PRAGMA integrity_check")] == ["ok"]
        con.execute("INSERT INTO entries_fts(entries_fts) VALUES ('integrity-check')")
        dups = con.execute(DUPLICATES).fetchall()
        assert dups == [], f"memories stored twice: {dups[:5]}"
    finally:
        con.close()


def check_daily_log(workspace: Path, db: Path, dsn: str | None) -> None:
    """After the restart: every memory stored has one line in the daily log and no line names
    a memory the store no longer has (a kill between the two writes is caught up at start)."""
    from memoryd.store.db import connect

    text = "".join(p.read_text() for p in sorted((workspace / "daily").glob("*.md")))
    lines = collections.Counter(int(m) for m in re.findall(r"<!-- m:(\d+):[0-9a-f]{8} -->", text))
    ids = "SELECT id FROM entries WHERE kind = 'memory'"
    if dsn is not None:
        stored = {int(r[0]) for r in _pg_rows(dsn, ids)}
    else:
        con, _ = connect(db, writer=False)
        try:
            stored = {int(r[0]) for r in con.execute(ids)}
        finally:
            con.close()
    assert sorted(i for i, n in lines.items() if n > 1) == [], "memories logged twice"
    assert sorted(stored - set(lines)) == [], "memories stored without a daily log line"
    assert sorted(set(lines) - stored) == [], "lines of memories the store no longer has"


def check_acknowledged(sock: Path, ledger: Ledger) -> None:
    """Every acknowledged add is there with its text; every acknowledged delete is gone."""
    keep = ledger.alive()
    gone = sorted(ledger.deleted)
    with Conn(sock) as c:
        for start in range(0, len(keep), 100):
            ids = keep[start : start + 100]
            for entry_id, resp in zip(ids, c.batch([("get", {"id": i}) for i in ids]), strict=True):
                assert "result" in resp, f"acknowledged memory {entry_id} lost: {resp}"
                assert resp["result"]["content"] == ledger.added[entry_id]
        for start in range(0, len(gone), 100):
            ids = gone[start : start + 100]
            for entry_id, resp in zip(ids, c.batch([("get", {"id": i}) for i in ids]), strict=True):
                assert resp.get("error", {}).get("code") == -32004, (
                    f"acknowledged delete of {entry_id} undone: {resp}"
                )


def test_kill9_cycles_keep_every_acknowledged_write(daemon_factory: Any, backend: str) -> None:
    cycles = size(4, 100)
    d = daemon_factory(dailylog={"enabled": True})
    db = Path(d.cfg["data_dir"]) / "memoryd.db"
    dsn = d.cfg["store"]["dsn"] if backend == "postgres" else None
    ledger = Ledger()
    rng = random.Random(1)
    started = time.monotonic()
    for cycle in range(cycles):
        if cycle:
            d.start()
            check_acknowledged(d.socket, ledger)
            # edits made before the kill are found by the startup reconcile
            wait_for(lambda: d.call("status", {"check": True})["drift"]["total"] == 0, timeout=60)
        stop = threading.Event()
        workers = [
            threading.Thread(target=_adder, args=(d.socket, ledger, stop, f"{cycle}-{i}"))
            for i in range(2)
        ]
        workers.append(threading.Thread(target=_deleter, args=(d.socket, ledger, stop)))
        workers.append(threading.Thread(target=_editor, args=(d.workspace, ledger, stop, cycle)))
        workers.append(threading.Thread(target=_jobs, args=(d.socket, ledger, stop)))
        for w in workers:
            w.start()
        time.sleep(rng.uniform(0.4, 1.2))  # the kill lands at a random point of the work
        d.stop(signal.SIGKILL)
        stop.set()
        for w in workers:
            w.join(30)
        check_database(db, dsn)
    d.start()
    check_acknowledged(d.socket, ledger)
    # the daily log's redo and catch-up run in the start-up's thread, before its reconcile
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"], timeout=60)
    check_daily_log(d.workspace, db, dsn)
    took = time.monotonic() - started
    print(
        f"\nkill -9: {cycles} cycles in {took:.0f} s; {ledger.adds} acknowledged adds, "
        f"{ledger.deletes} deletes, {ledger.edits} file edits, {ledger.jobs} jobs; "
        f"{len(ledger.alive())} memories checked present, {len(ledger.deleted)} checked gone, "
        f"{len(ledger.doubtful)} deletes in doubt (killed in flight); integrity ok every cycle"
    )
    assert ledger.adds > cycles  # the work really ran
