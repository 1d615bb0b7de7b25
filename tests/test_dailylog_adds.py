"""What an earlier run left undone in the daily log is done by the next, whatever the new run does
first: the adds under way of a shared store (memory/dailyadds.py, kept from the add's
transaction until its line is written), and the rewrites kept in dailylog-waiting.json, read
when the daemon is built, before a client's first change can write the file again."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

from memoryd.memory import dailyadds
from memoryd.memory.dailyadds import AddsUnderWay
from memoryd.store import lifecycle as lcstore

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def _log_text(app: Any) -> str:
    return "".join(p.read_text() for p in sorted((app.cfg.workspace / "daily").glob("*.md")))


def _started(app: Any) -> Any:
    app.start(jobs=False)
    wait_for(app.ready.is_set, timeout=60)
    return app


def test_the_journal_keeps_what_is_under_way_across_a_restart(tmp_path: Path) -> None:
    path = tmp_path / dailyadds.FILE_NAME
    first = AddsUnderWay(path)
    first.storing(5)
    first.storing(6)
    first.storing(7)
    first.done({5, 7})
    with path.open("a") as f:  # a power cut's torn line and a stranger's are skipped
        f.write("+1x\nnonsense\n+")
    second = AddsUnderWay(path)
    assert second.read() == {6}
    assert second.before == {6} and second.ids == {6}
    second.storing(8)  # this run's add: written to the same journal, kept apart from `before`
    assert second.before == {6}
    second.done({6, 8})
    assert AddsUnderWay(path).read() == set()
    assert not path.exists()  # an empty journal is removed at the start that reads it


def test_the_journal_is_written_anew_once_it_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dailyadds, "MAX_BYTES", 200)
    path = tmp_path / dailyadds.FILE_NAME
    adds = AddsUnderWay(path)
    adds.storing(1)  # in doubt (its commit failed): kept to the end of the run
    for i in range(100, 400):
        adds.storing(i)
        adds.done({i})
        assert path.stat().st_size <= 200 + 20
    assert path.read_text() == "+1\n" or AddsUnderWay(path).read() == {1}
    adds.done({1})
    for i in range(400, 450):
        adds.storing(i)
        adds.done({i})
    assert AddsUnderWay(path).read() == set()


def test_a_journal_the_disk_refuses_never_fails_the_add(tmp_path: Path) -> None:
    adds = AddsUnderWay(tmp_path / "gone" / dailyadds.FILE_NAME)  # its folder is missing
    adds.storing(3)
    adds.done({3})
    assert adds.ids == set()


def test_an_add_stored_but_not_logged_by_the_last_run_gets_its_line(
    make_app: Any, backend: str
) -> None:
    if backend == "sqlite":
        pytest.skip(
            "SQLite keeps no journal: after an unclean stop the next start writes the lines of "
            "the memories its last minutes stored (test_dailylog_crash.py kills a daemon)"
        )
    first = _started(make_app(dailylog={"enabled": True}))
    first.memories.add("the first memory, logged")
    first.memories.on_added = []  # the run ends (a kill) between the commit and the line
    kept = first.memories.add("the standup moved to 9:30").id
    first.memories.on_added = [first.dailylog.append]
    journal = first.cfg.data_dir / dailyadds.FILE_NAME
    assert f"+{kept}\n" in journal.read_text()
    with journal.open("a") as f:  # an add whose commit never came (no such memory)
        f.write(f"+{kept + 1000}\n")
    make_app.close(first)
    assert "9:30" not in _log_text(first)
    second = _started(make_app(dailylog={"enabled": True}))
    assert _log_text(second).count(f"<!-- m:{kept}:") == 1
    assert _log_text(second).count("<!-- m:") == 2
    assert second.dailylog.adds.ids == set()
    make_app.close(second)
    third = _started(make_app(dailylog={"enabled": True}))  # nothing written twice
    assert _log_text(third).count("<!-- m:") == 2
    assert not journal.exists()


def test_a_rewrite_kept_by_the_last_run_is_done_though_a_change_came_first(
    make_app: Any,
) -> None:
    """The file is read when the daemon is built: a delete answered before start-up looked at
    it (a client's retry at once after a restart) wrote it without the earlier run's ids."""
    first = _started(make_app(dailylog={"enabled": True}))
    gone = first.memories.add("the vault code is zebra-4417").id
    other = first.memories.add("lunch is at noon").id
    assert "zebra-4417" in _log_text(first)
    # the killed run's state: the memory deleted in the store, its line not yet rewritten
    first.store.run_write(lambda con: lcstore.delete_ids(con, [gone]), durable=True)
    make_app.close(first)
    waiting = first.cfg.data_dir / "dailylog-waiting.json"
    waiting.write_text(json.dumps({"ids": [], "rewrite": [gone], "renumber": []}))
    os.chmod(waiting, 0o600)
    second = make_app(dailylog={"enabled": True})
    second.memories.delete(other)  # before start-up: its rewrite saves the file
    _started(second)
    wait_for(lambda: "zebra-4417" not in _log_text(second), timeout=30)
    assert "lunch" not in _log_text(second)
    assert not waiting.exists()
    assert f"{datetime.now().astimezone():%Y-%m-%d}" in _log_text(second)
