"""Writes the operating system refuses (no room, no inodes, the file size limit, too many open
files): every write path answers with one clear error (which path, what the system said,
what to do: core/oserrors.py), never as done; the daemon lives on,
`status` shows the condition, and writes work again by themselves once there is room.

Real errors wherever they can be had unprivileged: SQLite's own SQLITE_FULL (max_page_count),
the PostgreSQL server's SQLSTATE 53100 (raised by a trigger, as a full disk raises it), the
file size limit (RLIMIT_FSIZE, lowered and raised again on a running `memoryd run`), the
open-file limit (RLIMIT_NOFILE). A fault is injected only for the daily log's
half-written line (a short write cannot be had without a full disk: the tmpfs variant in
test_diskfull.py does it for real as root).
"""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from memoryd.core import oserrors
from memoryd.core.errors import DiskFull, StoreError
from memoryd.serve import methods as api

from .support import mounted_tmpfs

pytestmark = pytest.mark.backends

DISK_FULL, STORE_ERROR = -32013, -32012


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


@pytest.mark.parametrize(
    ("code", "cls", "fix"),
    [
        (errno.ENOSPC, DiskFull, "free some space"),
        (errno.EDQUOT, DiskFull, "free some space"),
        (errno.EFBIG, DiskFull, "file size limit"),
        (errno.EROFS, StoreError, "read-only file system"),
        (errno.EACCES, StoreError, "write permission"),
        (errno.EMFILE, StoreError, "ulimit -n"),
        (errno.EIO, StoreError, "I/O error"),
    ],
)
def test_one_mapping_names_the_path_the_system_and_the_fix(code: int, cls: type, fix: str) -> None:
    err = oserrors.refused(OSError(code, os.strerror(code), "/data/memoryd.db"))
    assert type(err) is cls
    assert err.message.startswith(f"cannot write /data/memoryd.db: {os.strerror(code)}; ")
    assert "nothing was written" in err.message and fix.lower() in err.message.lower()


def _inject_no_room(app: Any) -> Any:
    """A real "disk full" from the store, and a function that gives the room back."""
    if app.store.backend == "sqlite":  # SQLite's own SQLITE_FULL: the file may not grow
        con = app.store._writer
        pages = con.execute("PRAGMA page_count").fetchall()[0][0]
        con.execute(f"PRAGMA max_page_count = {pages}")
        return lambda: con.execute("PRAGMA max_page_count = 1073741823")
    # the server's own SQLSTATE 53100, as it raises it when it cannot extend a file
    ddl = (
        "CREATE FUNCTION walkp14_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "RAISE EXCEPTION 'could not extend file \"base/1/2\": No space left on device' "
        "USING ERRCODE = 'disk_full'; END $$; "
        "CREATE TRIGGER walkp14_full BEFORE INSERT OR UPDATE ON all_entries "
        "FOR EACH ROW EXECUTE FUNCTION walkp14_full()"
    )
    app.store.run_write(lambda con: con.execute(ddl))
    return lambda: app.store.run_write(
        lambda con: con.execute(
            "DROP TRIGGER walkp14_full ON all_entries; DROP FUNCTION walkp14_full()"
        )
    )


def test_no_room_is_disk_full_on_both_backends_and_status_says_so(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(model=None)
    kept = call(app, "add", content="kept through the full disk")["id"]
    give_back = _inject_no_room(app)
    try:
        with pytest.raises(DiskFull) as err:
            for i in range(2000):
                call(app, "add", content=f"filler {i} {uuid.uuid4()} " + "word " * 300)
        assert err.value.code == DISK_FULL and "nothing was written" in err.value.message
        refused = call(app, "status")["store"]["writes_refused"]
        assert refused is not None and refused["error"] == err.value.message
        assert refused["since"].endswith("Z")
        assert call(app, "get", id=kept)["content"] == "kept through the full disk"  # reads go on
        assert call(app, "search", query="kept full disk")["hits"]
    finally:
        give_back()
    again = call(app, "add", content="written once there is room again")["id"]
    assert call(app, "get", id=again)["content"] == "written once there is room again"
    shown = call(app, "status")["store"]["writes_refused"]  # refused in the last minutes
    assert shown is not None and shown["last_worked"] >= shown["last_refused"]
    monkeypatch.setattr(oserrors, "REFUSED_WINDOW_S", 0.0)  # the window past
    assert call(app, "status")["store"]["writes_refused"] is None


def _log_lines(app: Any) -> list[str]:
    return [
        line
        for f in sorted((Path(app.cfg.workspace) / "daily").glob("*.md"))
        for line in f.read_text().splitlines()
    ]


def test_a_daily_log_line_the_disk_refuses_is_never_half_written_and_comes_later(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.memory import logfile

    app = make_app(model=None)
    first = call(app, "add", content="the first line fits")["id"]
    real = logfile.write_all

    def half_then_full(fd: int, data: bytes) -> None:  # as a full disk cuts a write short
        os.write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(logfile, "write_all", half_then_full)
    monkeypatch.setattr(oserrors, "REFUSED_WINDOW_S", 0.0)  # cleared by the first write
    one = call(app, "add", content="refused by the full disk")
    two = call(app, "add", content="and this one waits behind it")
    for answer in (one, two):
        assert answer["stored"] and any("not in the daily log yet" in w for w in answer["warnings"])
        assert any("No space left on device" in w for w in answer["warnings"])
    assert [line for line in _log_lines(app) if line.startswith("- ")] == [
        line for line in _log_lines(app) if "<!-- m:" in line
    ]  # no half line: every memory line is whole, marker and all
    status = call(app, "status")
    assert status["daily_log"]["waiting"] == 2
    assert "No space left on device" in status["daily_log"]["refused"]["error"]
    assert call(app, "get", id=one["id"])["content"] == "refused by the full disk"
    monkeypatch.setattr(logfile, "write_all", real)  # room again: the daemon's next look
    assert app.dailylog.append_waiting() == 2
    marked = [line for line in _log_lines(app) if "<!-- m:" in line]
    assert [m.split("<!-- m:")[1].split(":")[0] for m in marked] == [
        str(first),
        str(one["id"]),
        str(two["id"]),
    ]  # in the order they were added
    status = call(app, "status")
    assert status["daily_log"] == {"waiting": 0, "rewrites": 0, "refused": None}


def test_a_note_the_disk_refuses_is_disk_full_and_leaves_nothing(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same answer as the store's, from the notes' door (it was -32006 "refused")."""
    from memoryd.core import fsutil, swap

    app = make_app(model=None)
    ws = Path(app.cfg.workspace)
    call(app, "note.write", path="kept.md", content="kept as it was")

    def full(fd: int, data: bytes) -> None:
        raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))

    monkeypatch.setattr(fsutil, "write_all", full)
    monkeypatch.setattr(swap, "write_all", full)
    with pytest.raises(DiskFull) as err:
        call(app, "note.write", path="kept.md", content="a change with no room")
    assert "cannot write kept.md" in err.value.message
    assert "file size limit" in err.value.message
    assert (ws / "kept.md").read_text() == "kept as it was"
    assert not [p for p in ws.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.sqlite_only("the open-file limit of the process that opens the SQLite file")
def test_too_many_open_files_is_named_when_a_reader_cannot_open(make_app: Any) -> None:
    from memoryd.store import db

    app = make_app(model=None)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    held: list[int] = []
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 8, hard))
        while True:  # use up every descriptor left, then open the database
            try:
                held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError as exc:
                assert exc.errno == errno.EMFILE
                break
        with pytest.raises(StoreError) as err:
            db.connect(app.cfg.db_path, writer=False)
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert "Too many open files" in err.value.message
    assert "ulimit -n" in err.value.message


@pytest.mark.sqlite_only("the file size limit applies to the daemon's own files (the SQLite file)")
@pytest.mark.slow
def test_a_daemon_at_its_file_size_limit_refuses_and_resumes(daemon_factory: Any) -> None:
    """`memoryd run` whose RLIMIT_FSIZE is lowered while it runs (ulimit -f, LimitFSIZE=):
    every write past it is refused with -32013 naming the limit, nothing acknowledged is lost,
    and once the limit is raised again writes work without a restart."""
    from tests.conftest import rpc

    d = daemon_factory()
    assert d.proc is not None
    stored = [d.call("add", {"content": "written under no limit"})["id"]]
    data = Path(d.cfg["data_dir"])
    biggest = max(p.stat().st_size for p in data.iterdir() if p.is_file())
    soft, hard = resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE)
    resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE, (biggest + 256 * 1024, hard))
    try:
        note = rpc(d.socket, "note.write", {"path": "big.md", "content": "x" * (biggest + 300_000)})
        assert note["error"]["code"] == DISK_FULL, note
        assert "file size limit" in note["error"]["message"]
        assert not (d.workspace / "big.md").exists()
        assert not [p for p in d.workspace.rglob("*") if p.name.endswith(".tmp")]
        codes: list[int] = []
        for i in range(400):
            resp = rpc(d.socket, "add", {"content": f"filler {i} {uuid.uuid4()} " + "w " * 4000})
            if "error" in resp:
                codes.append(resp["error"]["code"])
                message = resp["error"]["message"]
                if len(codes) >= 3:
                    break
            else:
                stored.append(resp["result"]["id"])
        assert codes and set(codes) == {DISK_FULL}, codes
        assert "file size limit" in message and "memoryd.db" in message
        # now no file may grow at all (a small write could still fit under the limit above,
        # and the first write that works clears the condition): status says so meanwhile
        resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE, (16, hard))
        refused = rpc(d.socket, "add", {"content": "refused at a limit of 16 bytes"})
        assert refused["error"]["code"] == DISK_FULL, refused
        status = d.call("status")
        assert "file size limit" in status["store"]["writes_refused"]["error"]
        shown = d.ctl("status")
        assert shown.returncode == 0 and "writes refused" in shown.stdout
        assert d.call("get", {"id": stored[0]})["content"] == "written under no limit"
        # a method whose own file the system refuses (the web page's web.json): the same
        # answer through the socket's door, not "internal error" with a traceback
        opened = rpc(d.socket, "web.open", {})
        assert opened["error"]["code"] == DISK_FULL, opened
        assert "web.json" in opened["error"]["message"]
        assert "file size limit" in opened["error"]["message"]
    finally:
        resource.prlimit(d.proc.pid, resource.RLIMIT_FSIZE, (soft, hard))
    again = d.call("add", {"content": "written once the limit is raised"})["id"]
    shown = d.call("status")["store"]["writes_refused"]  # refused in the last minutes: shown,
    assert shown["last_worked"] >= shown["last_refused"]  # with the write that worked since
    assert "working since" in d.ctl("status").stdout
    assert "Traceback" not in d.log()  # refusals are one line each, not a bug's traceback
    d.stop()
    d.start()
    for mid in [*stored, again]:  # every acknowledged write is there after a restart
        assert d.call("get", {"id": mid})["id"] == mid


@pytest.mark.sqlite_only("the copy an upgrade of the SQLite file makes first")
def test_an_upgrade_without_room_for_its_copy_says_so_and_changes_nothing(
    config_dict: dict[str, Any], tmp_path: Path
) -> None:
    """`memoryd run` on a store of the previous schema, whose `memoryd.db.pre-vN.bak` copy the
    file size limit refuses: one line saying the database is unchanged and what is needed
    (it was "cannot open the database: disk I/O error"), exit status 1, no temp file left."""
    from memoryd.store import db, migrations
    from tests.conftest import to_toml

    data = Path(config_dict["data_dir"])
    data.mkdir(parents=True)
    con, _ = db.connect(data / "memoryd.db", writer=True)
    last = len(migrations.MIGRATIONS) - 1
    for version, step in enumerate(migrations.MIGRATIONS[:last], start=1):
        con.execute("BEGIN IMMEDIATE")
        step(con)
        con.execute(f"PRAGMA user_version = {version}")
        con.execute("COMMIT")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    size = (data / "memoryd.db").stat().st_size
    cfg = tmp_path / "config.toml"
    cfg.write_text(to_toml({**config_dict, "embedding": {"enabled": False}}))
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    out = subprocess.run(
        [sys.executable, "-m", "memoryd", "run", "--config", str(cfg)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (size // 2, hard)),
    )
    assert out.returncode == 1, out.stderr
    said = out.stderr + out.stdout
    assert "the database was not upgraded (it is unchanged)" in said
    assert f"memoryd.db.pre-v{last + 1}.bak" in said and "file size limit" in said
    assert "Traceback" not in said
    con, _ = db.connect(data / "memoryd.db", writer=False)
    assert migrations.schema_version(con) == last
    con.close()
    assert not [p.name for p in data.iterdir() if ".tmp" in p.name or ".bak" in p.name]


def test_daily_log_lines_still_waiting_at_a_stop_are_written_after_the_restart(
    make_app: Any,
) -> None:
    """The lines kept back (here: the workspace folder gone, as an unmounted drive) outlive
    the daemon: <data_dir>/dailylog-waiting.json, read at the next start, which writes them."""
    from tests.conftest import DEADLINE_S, wait_for

    app = make_app(model=None)
    ws = Path(app.cfg.workspace)
    first = call(app, "add", content="logged while the folder was there")["id"]
    away = ws.with_name("ws-away")
    ws.rename(away)
    late = call(app, "add", content="added while the folder was away")
    assert any("not in the daily log yet" in w for w in late["warnings"])
    app.close()
    saved = Path(app.cfg.data_dir) / "dailylog-waiting.json"
    assert saved.is_file()
    away.rename(ws)
    again = make_app(model=None)
    again.start(jobs=False)
    assert again.ready.wait(DEADLINE_S)

    def logged() -> list[str]:
        return [line for line in _log_lines(again) if "<!-- m:" in line]

    wait_for(lambda: len(logged()) == 2, timeout=DEADLINE_S)
    assert [m.split("<!-- m:")[1].split(":")[0] for m in logged()] == [
        str(first),
        str(late["id"]),
    ]
    assert not saved.exists()
    assert call(again, "status")["daily_log"]["waiting"] == 0


def test_a_note_deleted_into_a_trash_without_room_stays_and_leaves_no_copy(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`delete --path` moves the note to <data_dir>/trash: across file systems that is a copy,
    which a full data disk cuts short. It left an empty `trash/<time>/note.md` and said
    "nothing was written"; now the cut-short copy goes, and a note trashed before it in the
    same second stays. (The move across file systems is simulated: EXDEV from rename, and the
    copy's own short write; a real one is in the walk, docs/service.md.)"""
    import shutil

    from memoryd.notes import fsops

    app = make_app(model=None)
    ws = Path(app.cfg.workspace)
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "gone-first.md").write_text("trashed first\n")
    (ws / "stays.md").write_text("a note the full trash cannot take\n" * 50)
    app.indexer.reconcile()
    first = call(app, "delete", path="gone-first.md")
    real_rename, real_copy = os.rename, shutil.copy2

    def across(src: Any, dst: Any, *a: Any, **k: Any) -> None:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    def cut_short(src: Any, dst: Any, **k: Any) -> None:
        with open(dst, "wb") as f:
            f.write(Path(src).read_bytes()[:100])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))

    monkeypatch.setattr(fsops.os, "rename", across)
    monkeypatch.setattr(shutil, "copy2", cut_short)
    trash = Path(app.cfg.data_dir) / "trash"
    with pytest.raises(DiskFull) as err:
        call(app, "delete", path="stays.md")
    monkeypatch.setattr(fsops.os, "rename", real_rename)
    monkeypatch.setattr(shutil, "copy2", real_copy)
    assert "stays.md" in err.value.message and "No space left on device" in err.value.message
    assert (ws / "stays.md").read_text() == "a note the full trash cannot take\n" * 50
    assert [p.name for p in trash.rglob("*") if p.is_file()] == ["gone-first.md"]
    assert Path(first["trash"]).read_text() == "trashed first\n"


@pytest.mark.sqlite_only("the daemon's own files at start")
@pytest.mark.parametrize("where", ["socket", "data_dir"])
def test_a_start_on_a_disk_without_inodes_names_the_path(
    where: str, config_dict: dict[str, Any], tmp_path: Path
) -> None:
    """A tmpfs whose inode table is full (root only: skipped otherwise) under the socket or
    data_dir: one line naming the path (the socket's said "the device holding a file")."""
    from tests.conftest import to_toml

    with mounted_tmpfs(tmp_path / "noinodes", "size=4m,nr_inodes=8") as mnt:
        (mnt / "in").mkdir()
        n = 0
        while True:  # use up the inodes
            try:
                (mnt / f"f{n}").touch()
            except OSError:
                break
            n += 1
        cfg = dict(config_dict)
        path = mnt / "in" / ("m.sock" if where == "socket" else "data")
        cfg[where] = str(path)
        if where == "data_dir":
            subprocess.run(["rm", str(mnt / "f0")], check=True)  # room for the folder only
            path.mkdir()
        (tmp_path / "c.toml").write_text(to_toml({**cfg, "embedding": {"enabled": False}}))
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
        ran = subprocess.run(
            [sys.executable, "-m", "memoryd", "run", "--config", str(tmp_path / "c.toml")],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert ran.returncode == 1, ran.stderr
        said = ran.stderr + ran.stdout
        assert f"cannot start: {where}: {path}" in said  # (the folder, or a file in it)
        assert "No space left on device; free some space" in said
        assert "df -i" in said


def test_a_delete_whose_log_rewrite_the_disk_refuses_says_so_and_forgets_later(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forget means forget, a full disk or not: the delete answered `deleted` and exit 0 while
    the text stayed in the daily log for good. Now `still_in` names the log file, status says
    so, and the line goes once the disk has room (the waiting lines' retry)."""
    from memoryd.memory import dailylog

    app = make_app(model=None)
    kept = call(app, "add", content="a memory that stays")["id"]
    gone = call(app, "add", content="a memory to forget on a full disk")["id"]

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    real = dailylog.replace_text
    monkeypatch.setattr(dailylog, "replace_text", full)
    monkeypatch.setattr(oserrors, "REFUSED_WINDOW_S", 0.0)  # cleared by the first write
    answer = call(app, "delete", id=gone)
    assert answer["deleted"] is True
    logs = [c for c in answer["still_in"] if c["kind"] == "daily_log"]
    assert [c["name"] for c in logs] == [f"daily/{Path(logs[0]['path']).name}"]
    assert any("to forget on a full disk" in line for line in _log_lines(app))
    status = call(app, "status")
    assert "No space left on device" in status["daily_log"]["refused"]["error"]
    assert status["daily_log"]["rewrites"] == 1
    monkeypatch.setattr(dailylog, "replace_text", real)  # room again: the daemon's next look
    app.dailylog.append_waiting()
    lines = _log_lines(app)
    assert not any("to forget on a full disk" in line for line in lines)
    assert any(f"<!-- m:{kept}:" in line for line in lines)
    assert call(app, "status")["daily_log"] == {"waiting": 0, "rewrites": 0, "refused": None}


def test_an_update_whose_log_rewrite_the_disk_refuses_says_so_as_a_delete_does(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An update (a secret taken out, say) answered as if done while its old text stayed in the
    daily log, without a word (a delete lists the file in `still_in`). Now its answer names the
    log file too, memoryctl and the MCP tool say it, and the line is rewritten once there is
    room; another memory's refused rewrite is not this one's."""
    from memoryd.agents.formats import fmt_record
    from memoryd.memory import dailylog

    app = make_app(model=None)
    other = call(app, "add", content="a memory whose update waits too")["id"]
    eid = call(app, "add", content="the token was hunter2 once")["id"]

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    real = dailylog.replace_text
    monkeypatch.setattr(dailylog, "replace_text", full)
    answer = call(app, "update", id=eid, content="the token was rotated")
    assert answer["content"] == "the token was rotated"
    logs = [c for c in answer["still_in"] if c["kind"] == "daily_log"]
    assert [c["name"] for c in logs] == [f"daily/{Path(logs[0]['path']).name}"]
    assert any("hunter2" in line for line in _log_lines(app))
    assert "still in the daily log daily/" in fmt_record(answer)
    monkeypatch.setattr(dailylog, "replace_text", real)  # room again: the daemon's next look
    app.dailylog.append_waiting()
    assert not any("hunter2" in line for line in _log_lines(app))
    assert any("the token was rotated" in line for line in _log_lines(app))
    monkeypatch.setattr(dailylog, "replace_text", full)
    call(app, "update", id=other, content="a memory updated on a full disk")
    monkeypatch.setattr(dailylog, "replace_text", real)
    assert "still_in" not in call(app, "update", id=eid, tags=["rotated"])  # its line is done
    assert "still_in" not in call(app, "get", id=eid)


def test_an_update_answer_names_its_stale_log_in_memoryctl(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from argparse import Namespace

    from memoryd.ctl.handlers import s_update

    res = {"id": 7, "still_in": [{"kind": "daily_log", "name": "daily/2026-11-27.md"}]}
    assert s_update(res, Namespace()) == 0
    out = capsys.readouterr().out
    assert out.startswith("updated 7\n") and "still in daily log daily/2026-11-27.md" in out


def test_a_refused_forget_outlives_a_restart(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The delete's log rewrite that a full disk refused is still done after a stop (or a
    crash) before the disk had room: its id is kept in dailylog-waiting.json."""
    from memoryd.memory import dailylog
    from tests.conftest import DEADLINE_S, wait_for

    app = make_app(model=None)
    gone = call(app, "add", content="forgotten across a restart")["id"]

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    real = dailylog.replace_text
    monkeypatch.setattr(dailylog, "replace_text", full)
    call(app, "delete", id=gone)
    app.close()  # its last try is refused too
    monkeypatch.setattr(dailylog, "replace_text", real)
    assert (Path(app.cfg.data_dir) / "dailylog-waiting.json").is_file()
    assert any("forgotten across a restart" in line for line in _log_lines(app))
    again = make_app(model=None)
    again.start(jobs=False)
    assert again.ready.wait(DEADLINE_S)
    wait_for(
        lambda: not any("forgotten across a restart" in line for line in _log_lines(again)),
        timeout=DEADLINE_S,
    )
    assert not (Path(app.cfg.data_dir) / "dailylog-waiting.json").exists()


def test_writes_refused_is_one_answer_while_a_nearly_full_disk_takes_some(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A disk with a little room refuses some writes and takes others: `writes_refused` flipped
    between null and set at each write. Now it is set from the first refusal until none came for
    REFUSED_WINDOW_S and a write has worked since, with the times of the last of each."""
    from types import SimpleNamespace

    clock = SimpleNamespace(now=1_800_000_000.0)
    monkeypatch.setattr(oserrors, "time", SimpleNamespace(time=lambda: clock.now))
    retried: list[float] = []
    r = oserrors.Refusals("store")
    r.on_worked = lambda: retried.append(clock.now)
    r.worked()
    assert r.info() is None and retried == []
    for error in ("cannot write a: No space left on device", "cannot write b: No space left"):
        r.refused(error)
        clock.now += 5
        assert r.info() is not None  # refused, and after a write that worked too
        r.worked()
        r.worked()  # (the retry hook: once per recovery)
        clock.now += 5
        assert r.info() is not None
    info = r.info()
    assert info is not None and info["refusals"] == 2 and info["error"].startswith("cannot write b")
    assert info["since"] < info["last_refused"] < info["last_worked"]
    assert len(retried) == 2
    clock.now += oserrors.REFUSED_WINDOW_S
    assert r.info() is None  # none refused for the window, and a write worked since
    r.refused("cannot write c: No space left on device")
    clock.now += 2 * oserrors.REFUSED_WINDOW_S
    assert r.info() is not None  # no write has worked since: still refused, however long
    r.worked()
    assert r.info() is None


def test_an_imports_renumbering_the_disk_refuses_is_done_once_there_is_room(
    make_app: Any, new_store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import renumbers a memory whose id is taken and renames its line's marker in the log
    files a vault brought along; a full disk refused that rewrite and nothing tried it again:
    the line named the other memory for good (its delete took the line). Now it waits and is
    done with the log's waiting lines, as a refused delete's rewrite is, across a restart too."""
    import shutil

    from memoryd.memory import dailylog

    src = make_app(workspace=str(tmp_path / "ws-a"), data_dir=str(tmp_path / "data-a"))
    alpha = call(src, "add", content="alpha memory from the laptop")["id"]
    items = call(src, "export")["items"]
    (log_a,) = (Path(src.cfg.workspace) / "daily").glob("*.md")
    dst = make_app(
        workspace=str(tmp_path / "ws-b"), data_dir=str(tmp_path / "data-b"), store=new_store()
    )
    assert call(dst, "add", content="gamma memory of the desktop")["id"] == alpha  # taken
    copied = Path(dst.cfg.workspace) / "daily" / "from-laptop.md"
    shutil.copyfile(log_a, copied)
    dst.indexer.reconcile()

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    real = dailylog.replace_text
    monkeypatch.setattr(dailylog, "replace_text", full)
    (moved,) = call(dst, "import", items=items)["renumbered"]
    assert f"<!-- m:{alpha}:" in copied.read_text()  # refused: the old id still
    status = call(dst, "status")
    assert status["daily_log"]["rewrites"] == 1
    from memoryd.ctl.output import attention

    assert "daily log changes waiting for the disk" in attention(status)
    saved = (Path(dst.cfg.data_dir) / "dailylog-waiting.json").read_text()
    assert f"[{alpha}, {moved['to']}]" in saved  # kept for a restart
    monkeypatch.setattr(dailylog, "replace_text", real)  # room again: the daemon's next look
    dst.dailylog.append_waiting()
    assert f"<!-- m:{moved['to']}:" in copied.read_text()
    assert call(dst, "status")["daily_log"]["rewrites"] == 0
    assert not (Path(dst.cfg.data_dir) / "dailylog-waiting.json").exists()
