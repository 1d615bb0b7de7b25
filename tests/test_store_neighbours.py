"""Other programs on the store file (stop 40, walkx16): the sqlite3 shell, DB Browser, a backup
or sync tool with memoryd.db open while the daemon runs.

- A write lock another program holds (`BEGIN IMMEDIATE` left open): every write door (add,
  update, a note's write, the watcher's indexing, a job) answers -32014 naming the cause after
  the busy timeout, not "internal error: database is locked" with a traceback; nothing is half
  written; status says `writes refused`; once the lock is let go the store takes writes again
  by itself (no other write needed) and the workspace is reconciled, so a note changed
  meanwhile is found.
- PostgreSQL: a table another session locked (a user's migration, `LOCK TABLE`) made every
  write wait the whole statement_timeout and the request end in "add timed out" (the
  request timeout is as long), saying nothing; now lock_timeout (5 s) and the same -32014
  naming the session (pg_locks), status `writes refused`, and the same catching up.
- A read transaction another program holds open: checkpoints cannot fold the WAL in, and it
  grows with every write. Status says so (`checkpoint_blocked`, naming the program where the
  system tells), and the WAL is folded in and cut again once the reader ends, without waiting
  for the next checkpoint job.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import wait_for

from memoryd.core.errors import StoreBusy, StoreUnavailable
from memoryd.core.fsutil import sqlite_lock_holders
from memoryd.ctl.output import attention
from memoryd.serve import methods as api
from memoryd.store import db
from memoryd.store import sqlite as sqlite_store

# SQLite's file locks, but for the one PostgreSQL test at the end (a table another session
# locked): the two stores' locks have nothing in common to parametrise over


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """A short busy timeout and short retries, so a held lock answers within a second."""
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 300)
    monkeypatch.setattr(sqlite_store, "BUSY_RETRY_S", 0.1)
    monkeypatch.setattr(sqlite_store, "WAL_RETRY_S", 0.2)


def other_program(path: Path) -> apsw.Connection:
    """A connection of another program: plain apsw, as the sqlite3 shell opens the file."""
    con = apsw.Connection(str(path))
    con.set_busy_timeout(0)
    return con


# each write door, and what it leaves when refused: (door, call it, whether it raises)
def _add(app: Any) -> Any:
    return call(app, "add", content="the lock held by another program")


def _update(app: Any) -> Any:
    return call(app, "update", id=app.kept_id, content="changed while the lock was held")


def _note_write(app: Any) -> Any:
    return call(app, "note.write", path="held.md", content="# Held\n\nwritten under a lock\n")


def _note_append(app: Any) -> Any:
    return call(app, "note.append", path="kept.md", content="appended under a lock\n")


def _job(app: Any) -> Any:
    return app.store.optimize()  # the optimize job's write


DOORS: dict[str, Callable[[Any], Any]] = {
    "add": _add,
    "update": _update,
    "note.write": _note_write,
    "note.append": _note_append,
    "job": _job,
}


@pytest.mark.parametrize("door", list(DOORS))
def test_a_write_lock_held_by_another_program_is_a_clear_refusal_and_caught_up_after(
    make_app: Any, quick: None, door: str
) -> None:
    app = make_app(model=None)
    app.store._writer.set_busy_timeout(db.BUSY_TIMEOUT_MS)
    app.kept_id = call(app, "add", content="stored before the lock")["id"]
    call(app, "note.write", path="kept.md", content="# Kept\n\nbefore the lock\n")
    before = app.stats(namespace="*")
    holder = other_program(app.cfg.db_path)
    holder.execute("BEGIN IMMEDIATE")
    try:
        if door.startswith("note."):  # the file is written: the answer says the index waits
            out = DOORS[door](app)
            assert out["indexed"] is False and "another program" in out["warning"]
            assert "do not retry" in out["warning"]
        else:
            with pytest.raises(StoreBusy) as err:
                DOORS[door](app)
            assert err.value.code == StoreUnavailable.code == -32014
            assert "another program" in err.value.message
            assert "holds its write lock" in err.value.message
            assert "nothing was written" in err.value.message
        refused = app.status()["store"]["writes_refused"]
        assert refused and "holds its write lock" in refused["error"]
        assert attention(app.status())[0].startswith("writes refused: cannot write")
        assert app.stats(namespace="*") == before  # nothing half written
        assert call(app, "search", query="stored before the lock")["hits"]  # reads go on
        # and the entity doors, whose notes wait to be read (kept.md): they say so, not fail
        assert call(app, "entities")["entities_pending"] >= 1
        assert call(app, "search", query="Kept", entities=["Kept"], mode="keyword")
    finally:
        holder.execute("COMMIT")
        holder.close()
    # no other write is needed: the store looks again by itself, and reconciles
    wait_for(lambda: app.status()["store"]["writes_refused"]["last_worked"])  # working again
    if door.startswith("note."):
        words = "written under a lock" if door == "note.write" else "appended under a lock"
        wait_for(lambda: call(app, "search", query=words, mode="keyword")["hits"])
    DOORS[door](app)  # and the same write works now


def test_a_note_changed_under_the_lock_is_indexed_once_it_is_let_go(
    make_app: Any, quick: None
) -> None:
    """The watcher's indexing of a file changed while another program held the lock failed and
    nothing read the file again until the hourly reconcile."""
    app = make_app(model=None)
    app.start(jobs=False)
    wait_for(app.ready.is_set)
    holder = other_program(app.cfg.db_path)
    holder.execute("BEGIN IMMEDIATE")
    try:
        (app.cfg.workspace / "quokka.md").write_text("# Quokka\n\nquokkas live on Rottnest\n")
        wait_for(lambda: app.status()["store"]["writes_refused"], timeout=20)
        assert not call(app, "search", query="quokkas", mode="keyword")["hits"]
    finally:
        holder.execute("COMMIT")
        holder.close()
    wait_for(lambda: call(app, "search", query="quokkas", mode="keyword")["hits"], timeout=20)


def test_a_read_transaction_held_open_is_said_in_status_and_the_wal_cut_after(
    make_app: Any, quick: None
) -> None:
    app = make_app(model=None)
    call(app, "add", content="before the reader")
    app.store.checkpoint("TRUNCATE")
    reader = other_program(app.cfg.db_path)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM documents").fetchall()
    try:
        for n in range(5):
            call(app, "add", content=f"written while another program reads, number {n}")
        busy, _, _ = app.store.checkpoint("RESTART")  # what the checkpoint job runs
        assert busy
        store = app.status()["store"]
        assert store["wal_bytes"] > 0
        blocked = store["checkpoint_blocked"]
        assert blocked and "cannot be folded into the database" in blocked["error"]
        assert "grows with every write" in blocked["error"]
        assert any(
            w.startswith("checkpoint blocked: memoryd.db-wal (") for w in attention(app.status())
        )
    finally:
        reader.execute("COMMIT")
        reader.close()
    # folded in and cut by the store's own retry, not the next checkpoint job (15 min)
    wait_for(lambda: app.status()["store"]["checkpoint_blocked"] is None)
    assert app.status()["store"]["wal_bytes"] == 0
    assert not [w for w in attention(app.status()) if w.startswith("checkpoint")]


HOLD = textwrap.dedent(
    """
    import sys, time, apsw
    con = apsw.Connection(sys.argv[1])
    con.execute(sys.argv[2])
    con.execute("SELECT count(*) FROM sqlite_master").fetchall()
    print("held", flush=True)
    sys.stdin.readline()
    con.execute("COMMIT")
    """
)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Callable[[Path, str], subprocess.Popen[str]]]:
    """Another process holding a transaction on the file until its stdin is closed."""
    procs: list[subprocess.Popen[str]] = []

    def hold(path: Path, begin: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(path), begin],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        return proc

    yield hold
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="Linux names the holder")
@pytest.mark.parametrize("writer", [True, False])
def test_the_program_holding_the_lock_is_named(tmp_path: Path, holder: Any, writer: bool) -> None:
    path = tmp_path / "x.db"
    con = apsw.Connection(str(path))
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("CREATE TABLE t(x)")
    con.execute("INSERT INTO t VALUES (1)")  # a WAL frame: a reader's snapshot then pins it
    proc = holder(path, "BEGIN IMMEDIATE" if writer else "BEGIN")
    try:
        [who] = sqlite_lock_holders(path, writer=writer)
        assert who.startswith(f" (pid {proc.pid}: {sys.executable} -c")
        if not writer:  # (a writer reads too: it holds a read lock as well)
            assert sqlite_lock_holders(path, writer=True) == []
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(30)
        con.close()
    assert sqlite_lock_holders(path, writer=writer) == []


def test_memoryctl_add_under_another_programs_lock_names_it_and_the_daemon_catches_up(
    daemon_factory: Any, holder: Any
) -> None:
    """End to end: `memoryd run`, a second process holding the write lock, memoryctl."""
    d = daemon_factory()
    db_path = Path(d.cfg["data_dir"]) / "memoryd.db"
    proc = holder(db_path, "BEGIN IMMEDIATE")
    try:
        (d.workspace / "wombat.md").write_text("# Wombat\n\nwombats dig burrows\n")
        out = d.ctl("add", "a memory while the lock is held")
        assert out.returncode == 1, out
        assert f"another program (pid {proc.pid}:" in out.stderr
        assert "holds its write lock" in out.stderr and "Traceback" not in d.log()
        status = d.ctl("status")
        assert "needs attention: writes refused: cannot write" in status.stdout
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(30)
    wait_for(lambda: d.call("status")["store"]["writes_refused"]["last_worked"], timeout=30)
    wait_for(lambda: d.call("search", {"query": "wombats"})["hits"], timeout=30)
    assert d.ctl("add", "a memory while the lock is held").returncode == 0
    assert d.stop() == 0


@pytest.mark.parametrize("side", ["-wal", "-shm"])
def test_a_wal_or_shm_removed_under_the_daemon_loses_nothing_acknowledged(
    daemon_factory: Any, side: str
) -> None:
    """`rm memoryd.db-wal` (a cleaner, a sync client) while the daemon runs: it went on
    writing into the unlinked WAL, and a crash then lost every memory added since the last
    checkpoint, though each had been acknowledged. Now what the WAL holds is folded into
    memoryd.db at once, writes are refused until a restart, and a kill -9 loses nothing."""
    import signal

    d = daemon_factory()
    db_path = Path(d.cfg["data_dir"]) / "memoryd.db"
    kept = d.call("add", {"content": "acknowledged before the file went"})["id"]
    Path(f"{db_path}{side}").unlink()
    out = d.ctl("add", "a memory after the file went")
    assert out.returncode == 1
    assert f"memoryd.db{side} was removed or replaced while memoryd was running" in out.stderr
    assert "every write it held is in the database file" in out.stderr
    assert "restart memoryd" in out.stderr
    status = d.ctl("status")
    assert "needs attention: database file replaced under the daemon: restart it" in status.stdout
    d.stop(signal.SIGKILL)  # a crash: nothing folds the WAL in at a clean stop
    d = daemon_factory()
    assert d.call("get", {"id": kept})["content"] == "acknowledged before the file went"
    assert d.ctl("add", "a memory after the restart").returncode == 0


def test_a_table_another_session_locked_is_a_clear_refusal_on_postgres(
    team: Any, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from memoryd.store.pg import locks

    monkeypatch.setattr(locks, "LOCK_TIMEOUT_MS", 500)
    monkeypatch.setattr(locks, "RETRY_S", 0.1)
    app = team("a")
    call(app, "note.write", path="kept.md", content="# Kept\n\nbefore the lock\n")
    other = psycopg.connect(pg_dsn)  # a user's migration, in a transaction
    other.execute("LOCK TABLE all_entries IN ACCESS EXCLUSIVE MODE")
    try:
        with pytest.raises(StoreBusy) as err:
            call(app, "add", content="a memory while the table is locked")
        assert err.value.code == -32014
        assert f"another session (pid {other.info.backend_pid}" in err.value.message
        assert "AccessExclusiveLock on all_entries" in err.value.message
        assert "nothing was written" in err.value.message
        out = call(app, "note.write", path="held.md", content="# Held\n\nnumbats dig\n")
        assert out["indexed"] is False and "do not retry" in out["warning"]
        said = attention(app.status())
        assert said and said[0].startswith("writes refused: the PostgreSQL server made")
        assert "store unreachable" not in said
    finally:
        other.rollback()
        other.close()
    wait_for(lambda: app.status()["store"]["writes_refused"]["last_worked"])  # working again
    wait_for(lambda: call(app, "search", query="numbats", mode="keyword")["hits"])
    assert call(app, "add", content="a memory while the table is locked")["id"]


def test_a_write_past_the_request_timeout_says_it_goes_on_and_it_does(
    daemon_factory: Any, holder: Any
) -> None:
    """A write queued behind another program's lock past server.request_timeout_s was answered
    "add timed out", nothing in the log, though it went on and was stored a moment later."""
    from conftest import rpc

    d = daemon_factory(server={"request_timeout_s": 1})
    db_path = Path(d.cfg["data_dir"]) / "memoryd.db"
    proc = holder(db_path, "BEGIN IMMEDIATE")
    try:
        resp = rpc(d.socket, "add", {"content": "a memory that outlives its request"})
        message = resp["error"]["message"]
        assert message.startswith("add timed out: it did not finish within")
        assert "server.request_timeout_s (1 s)" in message and "may still complete" in message
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # let go within the busy timeout: the add goes on and is stored
        proc.wait(30)
    found = wait_for(lambda: d.call("list", {"limit": 5})["items"], timeout=30)
    assert [m["content"] for m in found] == ["a memory that outlives its request"]
    assert "request timed out; it goes on" in d.log()


def test_a_start_that_must_write_under_another_programs_lock_says_so(
    daemon_factory: Any, holder: Any, tmp_path: Path
) -> None:
    """A start whose migration must write while another program holds the write lock ended
    with a traceback ("unexpected error"); it is one line naming the program, exit 1 (the
    service manager tries again), and the next start once it is let go works."""
    data = tmp_path / "locked"
    data.mkdir(mode=0o700)
    con = apsw.Connection(str(data / "memoryd.db"))  # an empty database, in WAL mode
    con.execute("PRAGMA journal_mode = WAL")
    con.close()
    proc = holder(data / "memoryd.db", "BEGIN IMMEDIATE")
    try:
        d = daemon_factory(wait=False, data_dir=str(data))
        assert d.proc is not None
        assert d.proc.wait(60) == 1
        log = d.log()
        assert f"another program (pid {proc.pid}:" in log and "holds its write lock" in log
        assert "Traceback" not in log
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(30)
    d = daemon_factory(data_dir=str(data))
    assert d.call("status")["store"]["ok"] is True


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="Linux tells a removed file")
def test_a_database_removed_under_the_daemon_is_copied_out_before_anything_is_lost(
    daemon_factory: Any,
) -> None:
    """`rm memoryd.db` while the daemon runs: the daemon said "restart memoryd", and the
    restart made an empty store, every memory gone (they were only in the removed file, which
    the daemon still had open). Now a copy of it is written to memoryd.db.recovered at once,
    and the message and status say to move it back before starting again."""
    import signal

    d = daemon_factory()
    db_path = Path(d.cfg["data_dir"]) / "memoryd.db"
    kept = d.call("add", {"content": "the only copy is in the removed file"})["id"]
    db_path.unlink()
    out = d.ctl("add", "a memory after the file went")
    recovered = Path(f"{db_path}.recovered")
    assert out.returncode == 1
    assert f"everything it held is copied to {recovered}" in out.stderr
    status = d.ctl("status")
    assert f"stop it, move {recovered} back, start it" in status.stdout
    d.stop(signal.SIGKILL)
    recovered.replace(db_path)  # what the message says to do
    for side in ("-wal", "-shm"):  # the removed file's, beside no file now
        Path(f"{db_path}{side}").unlink(missing_ok=True)
    d = daemon_factory()
    assert d.call("get", {"id": kept})["content"] == "the only copy is in the removed file"


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="Linux tells where it went")
def test_a_database_folder_renamed_under_the_daemon_is_named_where_it_went(
    make_app: Any, tmp_path: Path
) -> None:
    """The data_dir folder renamed while the daemon runs: "restart memoryd to open the file now
    at that path" made an empty store there. Now the error and status name where it went."""
    app = make_app(model=None, data_dir=str(tmp_path / "data"))
    call(app, "add", content="in the folder that moves")
    moved = tmp_path / "data-moved"
    (tmp_path / "data").rename(moved)
    try:
        with pytest.raises(StoreUnavailable) as err:
            call(app, "add", content="after the move")
        assert f"was moved to {moved / 'memoryd.db'}" in err.value.message
        assert "move it back" in err.value.message
        said = attention(app.status())
        assert said[0] == (
            f"database file moved under the daemon to {moved / 'memoryd.db'}: move it back, "
            "restart it"
        )
    finally:
        moved.rename(tmp_path / "data")
    assert call(app, "add", content="after the move back")["id"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="Linux tells a removed file")
def test_a_copy_moved_over_the_live_file_keeps_the_writes_it_replaced(make_app: Any) -> None:
    """A sync client or a restore by hand moves a copy over memoryd.db: what was written
    since that copy was taken lived only in the replaced file, gone at the restart. Now it is
    kept beside it (memoryd.db.replaced), and the message says where."""
    app = make_app(model=None)
    copy = app.cfg.data_dir / "copy.db"
    app.store.backup_to(copy)
    added = call(app, "add", content="written after the copy was taken")["id"]
    copy.replace(app.cfg.db_path)
    with pytest.raises(StoreUnavailable) as err:
        call(app, "add", content="would have gone to the old file")
    kept = app.cfg.data_dir / "memoryd.db.replaced"
    assert f"the file it replaced, with every write memoryd made, is at {kept})" in (
        err.value.message
    )
    assert attention(app.status())[0] == "database file replaced under the daemon: restart it"
    con = apsw.Connection(str(kept), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = con.execute("SELECT content FROM entries WHERE id = ?", (added,)).fetchall()
    finally:
        con.close()
    assert rows == [("written after the copy was taken",)]
