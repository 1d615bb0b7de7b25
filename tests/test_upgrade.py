"""Upgrades, restarts and two versions (walkn13): what a person meets around a running daemon
when memoryd is upgraded, restarted, reloaded or run at two versions.

- A store a newer memoryd upgraded stops `memoryd run` with the exit status the systemd unit
  does not restart (a restart cannot fix it), on both backends, and on SQLite the message names
  the copy that upgrade made, which does bring the store back when copied as it says.
- `memoryctl status` lists those copies (nothing removes them).
- A SIGHUP while the daemon starts (before it serves) is a reload once it serves, never the end
  of the process; one while it stops is ignored.
- A daemon imports all of its code at start: a `pip install -U` that replaces the package's
  files under it leaves what it runs whole until it restarts.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, doc_commands, wait_for

pytestmark = pytest.mark.backends

UNIT = ROOT / "systemd" / "memoryd.service"
SERVICE_MD = ROOT / "docs" / "service.md"


def _last_steps() -> tuple[str, str]:
    """The newest migration of each backend: an older store is one step before it."""
    from memoryd.store import migrations
    from memoryd.store.pg import schema

    return migrations.MIGRATIONS[-1].__name__, schema.MIGRATIONS[-1].__name__


_LAST = _last_steps()


def _not_restarted() -> set[int]:
    """The exit statuses the systemd unit does not restart (RestartPreventExitStatus=)."""
    found = re.search(r"^RestartPreventExitStatus=(.+)$", UNIT.read_text(), re.M)
    assert found, UNIT
    return {int(x) for x in found.group(1).split()}


def _fatal(log: str) -> dict[str, Any]:
    lines = [json.loads(ln) for ln in log.splitlines() if ln.startswith("{")]
    return [ln for ln in lines if ln.get("event") == "fatal"][-1]


def _set_version(cfg: dict[str, Any], version: int) -> None:
    """The store's schema version, as a newer (or this) memoryd would have left it."""
    store = cfg.get("store") or {}
    if store.get("backend") == "postgres":
        import psycopg

        with psycopg.connect(store["dsn"], autocommit=True) as con:
            con.execute("UPDATE meta SET value = %s WHERE key = 'schema_version'", [str(version)])
        return
    import apsw

    con = apsw.Connection(str(Path(cfg["data_dir"]) / "memoryd.db"))
    con.execute(f"PRAGMA user_version = {int(version)}")
    con.close()


def _known(backend: str) -> int:
    if backend == "postgres":
        from memoryd.store.pg import schema

        return len(schema.MIGRATIONS)
    from memoryd.store import migrations

    return len(migrations.MIGRATIONS)


def test_a_store_a_newer_memoryd_upgraded_stops_memoryd_for_good(
    backend: str, daemon_factory: Any
) -> None:
    """The older memoryd started on it exits with a status the unit does not restart (five
    quick restarts would end in start-limit-hit, hiding the reason), saying why and what to do;
    on SQLite the copy the upgrade made, put back as the message says, starts again."""
    first = daemon_factory()
    first.call("add", {"content": "The deploy window is Tuesday 10:00"})
    assert first.stop() == 0
    cfg, data = first.cfg, Path(first.cfg["data_dir"])
    known = _known(backend)
    if backend == "sqlite":  # what the newer memoryd's first start made before migrating
        shutil.copyfile(data / "memoryd.db", data / f"memoryd.db.pre-v{known + 1}.bak")
    _set_version(cfg, known + 1)
    try:
        older = daemon_factory(wait=False)
        assert older.proc is not None
        status = older.proc.wait(60)
        fatal = _fatal(older.log())
        assert status in _not_restarted(), older.log()
        assert fatal["exit_status"] == status
        assert f"version {known + 1} is newer than this memoryd knows ({known})" in fatal["error"]
        assert "upgrade memoryd" in fatal["error"]
        if backend == "postgres":
            return
        backup = data / f"memoryd.db.pre-v{known + 1}.bak"
        assert str(backup) in fatal["error"]
        assert "docs/service.md#upgrading" in fatal["error"]
        # docs/service.md's way back, command by command (its example is schema 13 over 12)
        again = None
        for line in doc_commands(SERVICE_MD, "downgrade"):
            line = line.replace("~/.local/share/memoryd", str(data))
            line = line.replace("pre-v13.bak", f"pre-v{known + 1}.bak")
            words = shlex.split(line)
            if words[0] == "mv":
                Path(words[1]).rename(words[2])
            elif words[0] == "cp":
                shutil.copyfile(words[1], words[2])
            elif line == "systemctl --user start memoryd":
                again = daemon_factory()
            else:
                assert line == "systemctl --user stop memoryd", line  # stopped already
        assert again is not None
        hits = again.call("search", {"query": "deploy window", "mode": "keyword"})["hits"]
        assert [h["content"] for h in hits] == ["The deploy window is Tuesday 10:00"]
    finally:
        if backend == "postgres":  # the database is reused by the next test
            _set_version(cfg, known)


def test_status_lists_the_copy_an_upgrade_made(
    backend: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, make_app: Any
) -> None:
    """An upgrade's `memoryd.db.pre-vN.bak` is the way back to the earlier memoryd, and nothing
    removes it: `status` names it (JSON and text) so it is neither lost nor forgotten."""
    from conftest import older_store

    from memoryd.ctl.admin import r_status

    if backend == "postgres":  # no copy: the server's backups are the way back (team.md)
        app = make_app(model=None)
        assert app.status()["migration_backups"] == []
        return
    store = older_store(monkeypatch, request, backend, *_LAST)
    old = make_app(model=None, **store)
    old.memories.add("a memory from before the upgrade")
    old.close()
    monkeypatch.undo()
    app = make_app(model=None, **store)
    backups = app.status()["migration_backups"]
    path = Path(app.cfg.data_dir) / f"memoryd.db.pre-v{_known(backend)}.bak"
    assert [b["path"] for b in backups] == [str(path)]
    assert backups[0]["bytes"] == path.stat().st_size > 0

    class Answers:
        path = "x.sock"

        def call(self, method: str, params: Any = None) -> Any:
            return json.loads(json.dumps(app.status()))

    import argparse
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        r_status(Answers(), argparse.Namespace(watch=False, check=False, json=False))  # type: ignore[arg-type]
    text = out.getvalue()
    assert "migration backups (1)" in text and str(path) in text, text
    assert "migration_backups" not in text  # a section of its own, not a flattened key


def _catches_sighup_or_imports(pid: int) -> bool:
    """The daemon is past the interpreter's start: its handler for SIGHUP is in place, or it
    has loaded the SQLite module (its heavy imports, before its event loop, are under way)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(re.search(r"^SigCgt:\s*([0-9a-f]+)", status, re.M).group(1), 16)  # type: ignore[union-attr]
    if caught & (1 << (signal.SIGHUP - 1)):
        return True
    return "apsw" in Path(f"/proc/{pid}/maps").read_text()


@pytest.mark.sqlite_only("signals, not the store")
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc")
def test_a_sighup_while_the_daemon_starts_is_a_reload_not_its_end(daemon_factory: Any) -> None:
    """`systemctl --user reload`, launchd's `kill HUP` or a log rotation's `kill -HUP` can come
    while the daemon imports and opens its store (a second or more): the default action would
    end it, killed by a signal that systemd counts as a clean exit, so it would not be
    restarted. It is a reload once the daemon serves; a SIGHUP while it stops changes
    nothing."""
    d = daemon_factory(wait=False)
    assert d.proc is not None
    wait_for(lambda: _catches_sighup_or_imports(d.proc.pid), timeout=30, interval=0.002)
    d.proc.send_signal(signal.SIGHUP)
    wait_for(d.answers, timeout=30)
    wait_for(lambda: '"configuration reloaded"' in d.log(), timeout=15)
    assert d.proc.poll() is None
    d.proc.send_signal(signal.SIGTERM)
    wait_for(lambda: '"stopping"' in d.log(), timeout=15)
    d.proc.send_signal(signal.SIGHUP)
    assert d.stop() == 0, d.log()
    assert '"stopped"' in d.log()


# one call of every kind a client makes (memoryctl, the MCP bridge, the web page)
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("add", {"content": "Kafka brokers run on three hosts, Maya said", "tags": ["infra"]}),
    ("search", {"query": "kafka brokers"}),
    ("search", {"query": "kafak brokrs", "mode": "fuzzy"}),
    ("search", {"query": "kafka", "mode": "hybrid", "explain": True}),
    ("list", {}),
    ("recent_activity", {}),
    ("entities", {}),
    ("entity", {"name": "Maya"}),
    ("related", {"name": "Maya"}),
    ("note.write", {"path": "n/ops.md", "content": "# Ops\n\nPage [[oncall]] for Kafka.\n"}),
    ("note.read", {"path": "n/ops.md"}),
    ("note.list", {}),
    ("links", {"path": "n/ops.md"}),
    ("backlinks", {"path": "n/ops.md"}),
    ("graph", {"path": "n/ops.md"}),
    ("session_start", {}),
    ("match_triggers", {"prompt": "kafka"}),
    ("export", {}),
    ("stats", {}),
    ("status", {"check": True}),
    ("jobs", {}),
    ("searches", {}),
    ("reindex", {}),
]


def _memoryd_imports(log: str) -> set[str]:
    """The memoryd modules `python -X importtime` reported importing."""
    return set(re.findall(r"^import time:.*\|\s*(memoryd(?:\.\w+)*)\s*$", log, re.M))


def test_a_daemon_imports_all_its_code_at_start(backend: str, daemon_factory: Any) -> None:
    """A `pip install -U` replaces the package's files under a running daemon: a module it
    imported only at its first search or write would be the new version's, read by the old
    (an ImportError, or half of a change). Once it serves and has read the workspace, no
    request of any kind imports more of memoryd."""
    d = daemon_factory(extra_env={"PYTHONPROFILEIMPORTTIME": "1"})
    d.workspace.mkdir(parents=True, exist_ok=True)
    (d.workspace / "oncall.md").write_text("# On call\n\nMaya is on call for Kafka.\n")
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"], timeout=30)
    d.call("reindex", {})
    before = _memoryd_imports(d.log())
    assert "memoryd.serve.daemon" in before, d.log()[:2000]
    for method, params in CALLS:
        d.call(method, params)
    late = _memoryd_imports(d.log()) - before
    assert late == set(), f"imported after the start: {sorted(late)}"
    assert d.stop() == 0


def test_a_daemon_reads_its_data_files_at_start(make_app: Any) -> None:
    """The word lists and weights in memoryd/data too: a start that re-reads no note (every
    file unchanged) and adds nothing would otherwise read them at its first add, from whatever
    version is installed by then."""
    from memoryd.text import entity_cues as cues
    from memoryd.text import entity_typer

    loaders = [cues.common_words, cues.first_names, cues.systems, cues.places]
    loaders.append(entity_typer._shipped)
    for load in loaders:
        load.cache_clear()
    app = make_app(model=None)
    app.start(jobs=False)
    assert app.ready.wait(30)
    assert [load.cache_info().currsize for load in loaders] == [1] * len(loaders)


@pytest.mark.sqlite_only("the installed files, not the store")
def test_a_daemon_whose_files_were_installed_again_says_restart_me(
    daemon_factory: Any, tmp_path: Path
) -> None:
    """`pip install -U` under a running daemon: it goes on with its earlier code, so `status`
    says so with what to do, and an error the earlier daemon gives a newer client (an unknown
    method or param: a `--since 2026-11` an older daemon does not read) names the cause and the
    cure, in memoryctl and in the MCP bridge alike. After a restart, nothing to say."""
    from memoryd.agents.tools import Bridge, ToolFailure
    from memoryd.core import installed

    site = tmp_path / "site"
    shutil.copytree(
        Path(installed.PACKAGE), site / "memoryd", ignore=shutil.ignore_patterns("__pycache__")
    )
    env = {"PYTHONPATH": str(site), "PYTHONSAFEPATH": "1"}  # this copy, not the checkout's
    d = daemon_factory(extra_env=env)
    status = d.call("status")
    assert status["code_replaced"] is False

    def refused() -> str:
        out = d.ctl("note", "read", "../outside.md")
        assert out.returncode == 2, out
        return out.stderr

    assert "earlier memoryd" not in refused()
    loaded = time.time()
    wait_for(lambda: time.time() > loaded + 1.5, timeout=5)  # past the second's slack
    data = site / "memoryd" / "data" / "places-en.txt"
    data.write_bytes(data.read_bytes())  # the install: the same file written again
    status = d.call("status")
    assert status["code_replaced"] is True
    summary = d.ctl("status").stdout.splitlines()[0]
    assert "needs attention: memoryd was installed again since it started: restart it" in summary
    assert "earlier memoryd than this one" in refused()
    assert "systemctl --user restart memoryd" in refused()
    with pytest.raises(ToolFailure, match="earlier memoryd than this one"):
        Bridge(str(d.socket), None).call("note.read", {"path": "../outside.md"})
    assert d.stop() == 0
    again = daemon_factory(extra_env=env)
    assert again.call("status")["code_replaced"] is False
    assert "earlier memoryd" not in d.ctl("note", "read", "../outside.md").stderr


@pytest.mark.sqlite_only("a client's wait, not the store")
def test_status_watch_waits_through_a_restart(
    daemon_factory: Any, config_dict: Any, tmp_path: Path
) -> None:
    """`memoryctl status --watch` follows a first index; `systemctl --user restart memoryd`
    (or an upgrade's) in the middle ended it with "memoryd is not running ... Start it" and exit
    3. It says it waits, and follows the restarted daemon to the end (exit 0)."""
    import subprocess
    import sys
    import threading

    from conftest import HELD_ENV, held_scan

    ws = Path(config_dict["workspace"])
    ws.mkdir(parents=True)
    section = "## Count {}\n\nThe numbat count on day {} was {} at the {} burrow.\n\n"
    for i in range(40):
        text = "".join(section.format(i, i, i * j, ("north", "south")[j % 2]) for j in range(4))
        (ws / f"n{i:04d}.md").write_text(f"# Note {i}\n\n{text}")
    # a first scan that lasts while the daemon is stopped and started (5,000 notes took 36 s)
    env, hold = held_scan(tmp_path)
    d = daemon_factory(extra_env=env)
    ctl = [sys.executable, "-m", "memoryd.ctl", "--socket", str(d.socket)]
    watcher = subprocess.Popen(
        [*ctl, "status", "--watch", "--interval", "0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={k: v for k, v in d.env.items() if k != HELD_ENV},
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(watcher.stdout or []), daemon=True)
    reader.start()
    try:
        wait_for(lambda: lines, timeout=30)
        assert not lines[0].startswith("idle"), f"the first scan ended before the watch: {lines}"
        assert d.stop() == 0
        wait_for(lambda: any("waiting for memoryd to answer again" in ln for ln in lines))
        assert watcher.poll() is None, lines
        hold.unlink()
        daemon_factory()
        assert watcher.wait(120) == 0, lines
    finally:
        if watcher.poll() is None:
            watcher.kill()
    reader.join(10)
    if watcher.stdout is not None:
        watcher.stdout.close()
    assert lines[-1].startswith("idle: "), lines


def test_a_running_daemon_says_when_a_newer_memoryd_upgraded_the_shared_database(
    backend: str, make_app: Any, config_dict: dict[str, Any]
) -> None:
    """A team on PostgreSQL: one machine upgrades and its first start migrates the shared
    schema under the others' running daemons, which go on as the earlier version (and would not
    start again). Their status says so, with what to do. (SQLite: one daemon per file.)"""
    from memoryd.ctl.output import status_summary

    app = make_app(model=None)
    if backend == "sqlite":
        assert "schema_newer" not in app.status()["store"]
        return
    assert app.status()["store"]["schema_newer"] is False
    known = _known(backend)
    _set_version(config_dict, known + 1)
    try:
        status = json.loads(json.dumps(app.status()))
        assert status["store"]["schema_newer"] is True
        assert status["store"]["ok"] is True  # it still answers
        assert "a newer memoryd upgraded the shared database: upgrade this one" in (
            status_summary(status)
        )
    finally:
        _set_version(config_dict, known)


@pytest.mark.sqlite_only("the socket's answer at a stop, not the store")
def test_a_request_the_stop_cuts_short_is_answered_so(
    daemon_factory: Any, config_dict: Any, tmp_path: Path
) -> None:
    """`systemctl --user restart memoryd` during a long `memoryctl reindex --full`: past
    server.shutdown_timeout_s the connection was closed without a word, which memoryctl could
    only report as "closed the connection ... (it may be stopping, or overloaded)". The request
    is answered: the daemon is stopping and cut it short (exit 1, as a daemon's error)."""
    from conftest import HELD_ENV, held_scan

    ws = Path(config_dict["workspace"])
    ws.mkdir(parents=True)
    for i in range(20):
        (ws / f"n{i:04d}.md").write_text(f"# Note {i}\n\nThe numbat count on day {i}.\n")
    # a reindex that lasts past the stop's 0.2 s (3,000 notes took 22 s): held until it stops
    env, hold = held_scan(tmp_path)
    hold.unlink()
    d = daemon_factory(server={"shutdown_timeout_s": 0.2}, extra_env=env)
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"], timeout=60)
    hold.touch()
    import subprocess
    import sys

    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memoryd.ctl",
            "--socket",
            str(d.socket),
            "reindex",
            "--full",
            "--no-progress",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in d.env.items() if k != HELD_ENV},
    ) as reindex:
        wait_for(lambda: d.call("status")["index"]["progress"], timeout=30)
        assert d.stop() == 0
        out, err = reindex.communicate(timeout=60)
    assert reindex.returncode == 1, (out, err)
    assert "memoryd is stopping: reindex did not finish within server.shutdown_timeout_s" in err


@pytest.mark.sqlite_only("the SQLite store's migration backup")
def test_upgrading_again_after_going_back_copies_the_store_again(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, make_app: Any
) -> None:
    """Upgrade, go back to the copy as service.md says, use the earlier version a while, then
    upgrade again: the second upgrade kept the first one's `.bak` (a file of that name
    existed), so going back a second time lost every memory added in between."""
    from conftest import older_store

    store = older_store(monkeypatch, request, "sqlite", *_LAST)
    older = make_app(model=None, **store)
    older.memories.add("before the first upgrade")
    older.close()
    monkeypatch.undo()
    newer = make_app(model=None, **store)  # the first upgrade
    newer.close()
    data = Path(newer.cfg.data_dir)
    backup = data / f"memoryd.db.pre-v{_known('sqlite')}.bak"
    (data / "memoryd.db").rename(data / "memoryd.db.newer")  # going back
    shutil.copyfile(backup, data / "memoryd.db")
    older_store(monkeypatch, request, "sqlite", *_LAST)
    older = make_app(model=None, **store)
    older.memories.add("added while back on the earlier version")
    older.close()
    monkeypatch.undo()
    make_app(model=None, **store).close()  # the second upgrade
    shutil.copyfile(backup, data / "memoryd.db")  # and back again
    older_store(monkeypatch, request, "sqlite", *_LAST)
    older = make_app(model=None, **store)
    from memoryd.serve import methods as api

    items = api.lookup("list", {}).fn(older, {})["items"]
    contents = {m["content"] for m in items}
    assert contents == {"before the first upgrade", "added while back on the earlier version"}


def test_an_older_daemon_is_told_by_its_start_before_this_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A daemon older than `code_replaced` says only when it started: earlier than the files of
    this memoryctl's installation, it runs an earlier version. A daemon that has the field is
    believed (its own files may be another installation's)."""
    from memoryd.ctl import installed

    (tmp_path / "memoryd").mkdir()
    (tmp_path / "memoryd" / "cli.py").write_text("# installed now\n")
    monkeypatch.setattr(installed, "PACKAGE", str(tmp_path / "memoryd"))
    assert installed.daemon_older({"started_at": "2020-01-01T00:00:00Z"}) is True
    later = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    assert installed.daemon_older({"started_at": later}) is False
    assert (
        installed.daemon_older({"started_at": "2020-01-01T00:00:00Z", "code_replaced": False})
        is False
    )
    assert installed.daemon_older({"started_at": "not a time"}) is False
