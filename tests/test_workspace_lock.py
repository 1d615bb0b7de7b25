"""One daemon per workspace folder: a second `memoryd run` with a data_dir and socket of its own
on the same folder (the service, and `memoryd run --config other.toml` beside it) refuses to
start, naming the first. Without that, each numbered its memories from 1 and a delete in one
took the other's daily-log line of the same id out of the shared file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from memoryd.core.errors import AlreadyRunning
from memoryd.core.fsutil import _lock_holder
from memoryd.serve.workspaceguard import WorkspaceLock

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def _fatal(d: Any) -> dict[str, Any]:
    assert d.proc is not None
    d.proc.wait(60)
    lines = [json.loads(ln) for ln in d.log().splitlines() if ln.startswith("{")]
    fatal = [ln for ln in lines if ln["event"] == "fatal"]
    assert fatal, d.log()
    return fatal[-1]


def test_a_second_daemon_on_the_workspace_refuses_naming_the_first(
    daemon_factory: Any, tmp_path: Path, short_dir: Path
) -> None:
    """The same path, a symlink to it, a path with ./ and //: each a second daemon of its own
    beside one first daemon (a first daemon per case was two thirds of the file's time)."""
    first = daemon_factory()
    ws = first.workspace
    os.symlink(ws, tmp_path / "link")
    hows = {
        "the same path": str(ws),
        "a symlink to it": str(tmp_path / "link"),
        "a path with ./ and //": f"{ws.parent}/.//{ws.name}/.",
    }
    for n, (how, other_path) in enumerate(hows.items()):
        data = tmp_path / f"data{n}"
        second = daemon_factory(
            wait=False, workspace=other_path, data_dir=str(data), socket=str(short_dir / f"{n}.s")
        )
        fatal = _fatal(second)
        assert second.proc is not None and second.proc.returncode == 1, how
        assert "already serving the workspace" in fatal["error"], (how, fatal)
        assert first.proc is not None and f"pid {first.proc.pid}" in fatal["error"], (how, fatal)
        assert not (data / "memoryd.db").exists(), how  # no store made for nothing
    # the first daemon goes on, and its daily log is its own
    first.call("add", {"content": "Deploys happen on Tuesdays"})
    assert first.call("ping")["pong"] is True


@pytest.mark.parametrize("first_on", ["the outer folder", "the inner folder"])
def test_a_daemon_inside_another_s_workspace_refuses(
    daemon_factory: Any, tmp_path: Path, short_dir: Path, first_on: str
) -> None:
    """A workspace inside another's (or holding it): the outer daemon would index the inner
    one's daily log as notes, each memory shown there with its marker. Whichever starts
    second refuses."""
    outer, inner = tmp_path / "ws", tmp_path / "ws" / "work"
    inner.mkdir(parents=True)
    first_ws, second_ws = (outer, inner) if first_on == "the outer folder" else (inner, outer)
    first = daemon_factory(workspace=str(first_ws))
    second = daemon_factory(
        wait=False,
        workspace=str(second_ws),
        data_dir=str(tmp_path / "data2"),
        socket=str(short_dir / "t.sock"),
    )
    error = _fatal(second)["error"]
    assert first.proc is not None and f"pid {first.proc.pid}" in error, error
    if first_on == "the outer folder":
        assert f"serving the workspace {outer}, which holds {inner}" in error, error
    else:
        assert f"serving a workspace inside {outer}" in error, error


def test_side_by_side_workspaces_both_run(
    daemon_factory: Any, tmp_path: Path, short_dir: Path
) -> None:
    """Two workspaces in one parent folder (~/notes and ~/work) are no conflict."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    daemon_factory(workspace=str(tmp_path / "a"))
    other = daemon_factory(
        workspace=str(tmp_path / "b"),
        data_dir=str(tmp_path / "data2"),
        socket=str(short_dir / "t.sock"),
    )
    other.call("add", {"content": "Billing service owner is Maya"})


def test_the_workspace_is_free_again_once_the_first_stops(
    daemon_factory: Any, tmp_path: Path, short_dir: Path
) -> None:
    first = daemon_factory()
    assert first.stop() == 0
    second = daemon_factory(data_dir=str(tmp_path / "data2"), socket=str(short_dir / "t.sock"))
    second.call("add", {"content": "Billing service owner is Maya"})


def test_memoryctl_through_the_second_config_finds_no_daemon_but_the_first_answers(
    daemon_factory: Any, tmp_path: Path, short_dir: Path
) -> None:
    """What the user sees: the second start exits 1 and `memoryctl` at its socket says no
    daemon is there, while the first still serves the workspace."""
    first = daemon_factory()
    second = daemon_factory(
        wait=False, data_dir=str(tmp_path / "data2"), socket=str(short_dir / "t.sock")
    )
    _fatal(second)
    done = second.ctl("status")
    assert done.returncode != 0
    assert first.ctl("status").returncode == 0


def test_a_folder_put_in_the_workspace_s_place_is_held_again(tmp_path: Path) -> None:
    """The workspace replaced while the daemon serves (a vault restored, a drive mounted
    again): the daemon holds the new folder, so a second daemon on it is refused too."""
    ws = tmp_path / "ws"
    ws.mkdir()
    mine = WorkspaceLock(ws)
    mine.take()
    with pytest.raises(AlreadyRunning, match="already serving the workspace"):
        WorkspaceLock(ws).take()
    ws.rename(tmp_path / "old")
    ws.mkdir()
    mine.take_again()
    with pytest.raises(AlreadyRunning):
        WorkspaceLock(ws).take()
    old = WorkspaceLock(tmp_path / "old")
    old.take()  # the old folder is no longer held
    old.release()
    mine.release()
    other = WorkspaceLock(ws)
    other.take()
    other.release()


def test_a_lock_that_is_not_the_daemon_s_takes_nothing(tmp_path: Path) -> None:
    """Apps built by tests and tools (enabled=False) and a missing folder hold nothing."""
    ws = tmp_path / "ws"
    WorkspaceLock(tmp_path / "missing").take()
    ws.mkdir()
    WorkspaceLock(ws, enabled=False).take()
    held = WorkspaceLock(ws)
    held.take()
    held.release()


def test_the_holder_is_read_from_proc_locks(tmp_path: Path) -> None:
    st = os.stat(tmp_path)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    locks = tmp_path / "locks"
    locks.write_text(
        "1: POSIX  ADVISORY  READ 11 00:01:5 128 128\n"
        f"2: FLOCK  ADVISORY  WRITE {os.getpid()} {dev} 0 EOF\n"
        f"2: -> FLOCK  ADVISORY  WRITE 99999999 {dev} 0 EOF\n"
    )
    holder, kind = _lock_holder(st, ("WRITE",), str(locks))
    assert holder.startswith(f" (pid {os.getpid()}: ") and "python" in holder
    assert kind == "WRITE"
    assert _lock_holder(st, ("READ",), str(locks)) == ("", "")  # the waiting one holds nothing
    assert _lock_holder(st, ("WRITE",), str(tmp_path / "none")) == ("", "")
