"""A kill -9 between a memory's removal (or update) in the store and the rewrite of its daily log
line: the next start rewrites the line as the memory then is, so a forgotten memory is never left
in a log file, where it would be indexed again as a person's text and found by search.

The daemon is a real `memoryd run`; a sitecustomize on its PYTHONPATH holds the daily log's
rewrite (or append, or an add's transaction once its id is kept) while a flag file exists, so the
kill lands exactly there."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import rpc, wait_for

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

SITECUSTOMIZE = """
import os, time
flag = os.environ.get("HOLD_REWRITE_FLAG")
if flag:
    import memoryd.memory.dailylog as dl
    def wait(path):
        while os.path.exists(path):
            open(path + ".reached", "w").close()
            time.sleep(0.01)
    def held(method):
        def run(self, *args, **kw):
            wait(flag)
            return method(self, *args, **kw)
        return run
    dl.DailyLog._rewrite = held(dl.DailyLog._rewrite)
    dl.DailyLog._append = held(dl.DailyLog._append)
    storing = dl.DailyLog.storing
    def storing_held(self, entry_id):  # after it ran: in the add's transaction, uncommitted
        storing(self, entry_id)
        wait(flag + "-storing")
    dl.DailyLog.storing = storing_held
"""


def _log_text(ws: Path) -> str:
    return "".join(p.read_text() for p in sorted((ws / "daily").glob("*.md")))


def _held_daemon(daemon_factory: Any, tmp_path: Path) -> tuple[Any, Path]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    flag = tmp_path / "hold"
    env = {
        "HOLD_REWRITE_FLAG": str(flag),
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }
    d = daemon_factory(extra_env=env, dailylog={"enabled": True})
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"], timeout=60)
    return d, flag


def _ask(d: Any, method: str, params: dict[str, Any]) -> None:
    def ask() -> None:
        with contextlib.suppress(OSError, ValueError):  # killed before it answers
            rpc(d.socket, method, params, timeout=60)

    threading.Thread(target=ask, daemon=True).start()


@pytest.mark.parametrize("change", ["delete", "update"])
def test_a_kill_between_the_store_and_the_log_leaves_no_forgotten_line(
    daemon_factory: Any, tmp_path: Path, change: str
) -> None:
    d, flag = _held_daemon(daemon_factory, tmp_path)
    mid = d.call("add", {"content": "the vault code is zebra-4417"})["id"]
    wait_for(lambda: "zebra-4417" in _log_text(d.workspace), timeout=30)
    flag.touch()
    params: dict[str, Any] = {"id": mid}
    if change == "update":
        params["content"] = "the vault code was changed; ask Ana"
    _ask(d, change, params)
    wait_for(lambda: Path(str(flag) + ".reached").exists(), timeout=30)  # the store has it
    d.stop(signal.SIGKILL)
    assert "zebra-4417" in _log_text(d.workspace)  # the kill landed between the two
    flag.unlink()
    d.start()
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"], timeout=60)
    assert "zebra-4417" not in _log_text(d.workspace)
    hits = d.call("search", {"query": "zebra-4417", "mode": "keyword"})["hits"]
    assert hits == []
    if change == "update":
        assert "ask Ana" in _log_text(d.workspace)
        assert d.call("get", {"id": mid})["content"].endswith("ask Ana")


def test_a_kill_between_the_store_and_the_line_of_an_add_writes_the_line_at_the_next_start(
    daemon_factory: Any, tmp_path: Path
) -> None:
    """The add was stored, not answered: a client retrying it is told it is a duplicate (no
    line written then either), so the next start writes the line the killed run did not
    (SQLite: the memories of its last minutes that no log names; PostgreSQL, a store other
    daemons may share: the adds it kept in dailylog-waiting.json before their commit)."""
    d, flag = _held_daemon(daemon_factory, tmp_path)
    d.call("add", {"content": "the first memory, logged"})
    flag.touch()
    _ask(d, "add", {"content": "the standup moved to 9:30"})
    wait_for(lambda: Path(str(flag) + ".reached").exists(), timeout=30)  # stored, no line
    d.stop(signal.SIGKILL)
    assert "9:30" not in _log_text(d.workspace)
    flag.unlink()
    d.start()
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"], timeout=60)
    again = d.call("add", {"content": "the standup moved to 9:30"})  # the client's retry
    assert again["duplicate"] is True
    assert _log_text(d.workspace).count(f"<!-- m:{again['id']}:") == 1
    assert _log_text(d.workspace).count("<!-- m:") == 2
    # a clean restart writes nothing back: a line a person deleted by hand stays deleted
    path = next((d.workspace / "daily").glob("*.md"))
    path.write_text(
        "".join(line for line in path.read_text().splitlines(True) if "9:30" not in line)
    )
    d.stop()
    d.start()
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"], timeout=60)
    assert "9:30" not in _log_text(d.workspace)


def test_a_kill_before_an_adds_commit_leaves_no_line_and_keeps_nothing(
    daemon_factory: Any, tmp_path: Path
) -> None:
    """Killed in the add's transaction after its id was kept, before the commit: the store
    never had the memory, so the next start writes no line for it and keeps the id no longer;
    the client's retry is a new memory, with its line."""
    d, flag = _held_daemon(daemon_factory, tmp_path)
    first = d.call("add", {"content": "the first memory, logged"})["id"]
    flag = Path(f"{flag}-storing")
    flag.touch()
    _ask(d, "add", {"content": "the standup moved to 9:30"})
    wait_for(lambda: Path(str(flag) + ".reached").exists(), timeout=30)  # kept, not committed
    d.stop(signal.SIGKILL)
    flag.unlink()
    d.start()
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"], timeout=60)
    assert d.call("list", {})["total"] == 1
    assert "9:30" not in _log_text(d.workspace)
    again = d.call("add", {"content": "the standup moved to 9:30"})
    assert again["duplicate"] is False
    text = _log_text(d.workspace)
    assert text.count("<!-- m:") == 2 and f"<!-- m:{first}:" in text
    assert f"<!-- m:{again['id']}:" in text
