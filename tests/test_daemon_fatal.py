"""Why `memoryd run` stops, said where its log is read: one JSON line off a terminal (journald,
launchd's log file, a pipe), a plain `memoryd: ...` line on one, both when the log is a file.
Every way of failing to start is covered, so a log reader never meets a line it cannot parse."""

from __future__ import annotations

import json
import os
import plistlib
import pty
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memoryd.serve import service


def _config(tmp: Path, short: Path, **over: str) -> Path:
    paths = {
        "workspace": str(tmp / "ws"),
        "data_dir": str(tmp / "data"),
        "socket": str(short / "f.sock"),
    } | over
    cfg = tmp / "c.toml"
    cfg.write_text(
        "".join(f'{k} = "{v}"\n' for k, v in paths.items()) + "[embedding]\nenabled = false\n"
    )
    return cfg


def _bad_config(tmp: Path, short: Path) -> Path:
    cfg = _config(tmp, short)
    cfg.write_text(cfg.read_text() + '[search]\nrrf_k = "sixty"\n')
    return cfg


def _file_as_workspace(tmp: Path, short: Path) -> Path:
    (tmp / "afile").write_text("x\n")
    return _config(tmp, short, workspace=str(tmp / "afile"))


def _file_as_data_dir(tmp: Path, short: Path) -> Path:
    (tmp / "afile").write_text("x\n")
    return _config(tmp, short, data_dir=str(tmp / "afile"))


def _file_as_socket_folder(tmp: Path, short: Path) -> Path:
    (short / "afile").write_text("x\n")
    return _config(tmp, short, socket=str(short / "afile" / "s.sock"))


def _folder_as_log_file(tmp: Path, short: Path) -> Path:
    (tmp / "adir").mkdir()
    cfg = _config(tmp, short)
    cfg.write_text(cfg.read_text() + f'[logging]\nfile = "{tmp / "adir"}"\n')
    return cfg


def _file_in_the_log_file_s_way(tmp: Path, short: Path) -> Path:
    (tmp / "afile").write_text("x\n")
    cfg = _config(tmp, short)
    cfg.write_text(cfg.read_text() + f'[logging]\nfile = "{tmp / "afile" / "m.log"}"\n')
    return cfg


# every path setting that names a place memoryd cannot use is named by its key
FAILURES = {
    "configuration": (_bad_config, 2, "search.rrf_k"),
    "workspace is a file": (_file_as_workspace, 1, "workspace: "),
    "data_dir is a file": (_file_as_data_dir, 1, "data_dir: "),
    "socket folder is a file": (_file_as_socket_folder, 1, "socket folder"),
    "logging.file is a folder": (_folder_as_log_file, 1, "logging.file: "),
    "a file in logging.file's way": (_file_in_the_log_file_s_way, 1, "logging.file: "),
}


def _run(cfg: Path, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", "run", "--config", str(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
        **kw,
    )


@pytest.mark.parametrize("name", list(FAILURES))
def test_off_a_terminal_the_reason_is_one_json_line(
    name: str, tmp_path: Path, short_dir: Path
) -> None:
    make, status, words = FAILURES[name]
    done = _run(make(tmp_path, short_dir))
    assert done.returncode == status, done.stderr
    lines = [json.loads(ln) for ln in done.stderr.splitlines()]  # every line is JSON
    fatal = [ln for ln in lines if ln["event"] == "fatal"]
    assert len(fatal) == 1, done.stderr
    assert fatal[0]["level"] == "error" and fatal[0]["exit_status"] == status
    assert words in fatal[0]["error"]
    if status == 1 and "socket" not in name:  # found before a store is made for nothing
        assert not (tmp_path / "data" / "memoryd.db").exists()


def test_a_second_daemon_says_so_in_json(daemon_factory: Any) -> None:
    d = daemon_factory()
    done = _run(d.config_path, env=d.env)
    assert done.returncode == 1
    fatal = [json.loads(ln) for ln in done.stderr.splitlines()][-1]
    assert fatal["event"] == "fatal" and "already" in fatal["error"]


def test_with_a_log_file_the_reason_is_in_it_and_on_stderr(tmp_path: Path, short_dir: Path) -> None:
    cfg = _file_as_workspace(tmp_path, short_dir)
    log = tmp_path / "logs" / "memoryd.log"
    cfg.write_text(cfg.read_text() + f'[logging]\nfile = "{log}"\n')
    done = _run(cfg)
    assert done.returncode == 1
    assert done.stderr.startswith("memoryd: cannot start: ") and "afile" in done.stderr
    fatal = [json.loads(ln) for ln in log.read_text().splitlines()][-1]
    assert fatal["event"] == "fatal" and "afile" in fatal["error"]


def test_on_a_terminal_the_reason_is_a_plain_line(tmp_path: Path, short_dir: Path) -> None:
    cfg = _bad_config(tmp_path, short_dir)
    main, tty = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "memoryd", "run", "--config", str(cfg)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=tty,
            timeout=60,
        )
        os.close(tty)
        out = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(main)
    assert done.returncode == 2
    text = out.decode()
    assert text.startswith(f"memoryd: configuration error: {cfg}:7: search.rrf_k"), text
    assert "{" not in text


def test_a_bug_in_the_daemon_is_one_json_line_with_its_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    from memoryd import cli
    from memoryd.core import logsetup

    def boom(args: Any) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "cmd_run", boom)
    stream = io.StringIO()
    try:
        logsetup.configure("info", "json", stream=stream)
        assert cli.main(["run"]) == 1
        (line,) = [json.loads(ln) for ln in stream.getvalue().splitlines()]
        assert line["event"] == "stopped by an unexpected error"
        assert "RuntimeError: boom" in line["exception"]
        logsetup.configure("info", "console", stream=stream)  # a terminal: the traceback
        with pytest.raises(RuntimeError):
            cli.main(["run"])
    finally:
        logsetup.reset()


def _garbage(db: Path) -> None:
    db.write_bytes(os.urandom(100_000))


def _header_only(db: Path) -> None:
    db.write_bytes(b"SQLite format 3\x00")


def _cut_short(db: Path) -> None:
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])


def _schema_damaged(db: Path) -> None:
    data = bytearray(db.read_bytes())
    for i in range(100, 4096, 7):  # page 1 holds sqlite_master
        data[i] ^= 0x5A
    db.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_garbage, _header_only, _cut_short, _schema_damaged])
def test_a_damaged_database_is_named_with_where_its_newest_copy_is(
    damage: Any, make_app: Any
) -> None:
    app = make_app(model=None)
    app.memories.add("a memory to lose")
    cfg_path = Path(app.cfg.data_dir).parent / "damaged.toml"
    cfg_path.write_text(
        f'workspace = "{app.cfg.workspace}"\ndata_dir = "{app.cfg.data_dir}"\n'
        f'socket = "{app.cfg.socket}"\n[embedding]\nenabled = false\n'
    )
    app.close()
    db = Path(app.cfg.data_dir) / "memoryd.db"
    snapshots = Path(app.cfg.data_dir) / "snapshots"
    snapshots.mkdir()
    (snapshots / "memoryd-20261126T000000Z.db").write_bytes(db.read_bytes())
    damage(db)
    done = _run(cfg_path)
    assert done.returncode == 1, done.stderr
    fatal = [json.loads(ln) for ln in done.stderr.splitlines()][-1]
    assert fatal["event"] == "fatal", done.stderr
    assert "is not a readable SQLite database" in fatal["error"]
    assert "FTS5" not in fatal["error"]
    assert str(snapshots / "memoryd-20261126T000000Z.db") in fatal["error"]


def test_a_log_reader_that_went_away_costs_lines_not_requests(daemon_factory: Any) -> None:
    """`memoryd run 2>&1 | head` or a closed terminal: every log line raised EPIPE in whatever
    logged it, so an `add` was stored and not answered, and the watcher died ("watcher
    stopped"). A failed write now costs the line only."""
    from conftest import rpc, wait_for

    d = daemon_factory()
    d.stop()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "run", "--config", str(d.config_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=d.env,
    )
    try:
        assert proc.stderr is not None
        proc.stderr.readline()  # the daemon logs, and its reader goes away
        proc.stderr.close()

        def answers() -> bool:
            try:
                return rpc(d.socket, "ping", timeout=2).get("result", {}).get("pong") is True
            except OSError:
                return False

        wait_for(answers, timeout=30)
        for i in range(3):
            answer = rpc(d.socket, "add", {"content": f"the pipe memory number {i}"})
            assert "id" in answer["result"], answer
        (d.workspace / "pipe.md").write_text("# Pipe\n\nA note about the broken pipe\n")
        wait_for(
            lambda: rpc(d.socket, "search", {"query": "broken pipe note", "mode": "keyword"})[
                "result"
            ]["hits"]
        )
        status = rpc(d.socket, "status")["result"]
        assert status["watcher"]["alive"] is True
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(30)


# -- what the service managers do with each exit status -----------------------------------------

# (why it stops) -> whether a service manager should start it again: never for a configuration
# error (a restart cannot fix it: systemd's unit prevents it, launchd's agent exits 0 for it),
# always for a start that failed (the other daemon stops, the folder is fixed)
RESTARTED = {name: name != "configuration" for name in FAILURES}


def _service_args(manager: str, cfg: Path) -> tuple[list[str], Callable[[int], bool]]:
    """`memoryd run`'s arguments as the installed service file gives them, and whether that
    service manager starts it again after an exit status, read from the same file."""
    if manager == "systemd":
        unit = service.render_unit(sys.executable, cfg)
        keys = dict(ln.split("=", 1) for ln in unit.splitlines() if "=" in ln and ln[0] != "#")
        argv = shlex.split(keys["ExecStart"].replace("%%", "%"))
        assert keys["Restart"] == "on-failure"
        prevented = {int(s) for s in keys["RestartPreventExitStatus"].split()}
        return argv, lambda status: status != 0 and status not in prevented
    plist = plistlib.loads(service.render_plist(sys.executable, cfg, cfg.parent).encode())
    assert plist["KeepAlive"] == {"SuccessfulExit": False}  # restarted unless it exits 0
    return list(plist["ProgramArguments"]), lambda status: status != 0


@pytest.mark.parametrize("manager", ["systemd", "launchd"])
@pytest.mark.parametrize("name", list(FAILURES))
def test_a_service_manager_restarts_what_a_restart_can_fix(
    name: str, manager: str, tmp_path: Path, short_dir: Path
) -> None:
    make, status, words = FAILURES[name]
    argv, restarts = _service_args(manager, make(tmp_path, short_dir))
    assert argv[:4] == [sys.executable, "-m", "memoryd", "run"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    fatal = [json.loads(ln) for ln in done.stderr.splitlines()][-1]
    assert fatal["event"] == "fatal" and words in fatal["error"]  # the reason, logged once
    assert fatal["exit_status"] == done.returncode
    assert restarts(done.returncode) == RESTARTED[name], (manager, done.returncode)
    if manager == "systemd":
        assert done.returncode == status  # what scripts read (memoryd run --help)


def test_the_config_error_status_is_checked() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "run", "--config-error-status", "300"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "a whole number from 0 to 255" in done.stderr
