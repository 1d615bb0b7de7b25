"""A machine gone for good (docs/team.md, "A machine gone for good"): its notes stay in the
shared database under its workspace id, found by every `workspace: "all"` search, until
`memoryd store forget-workspace ID` removes them (its memories stay). `memoryd store
workspaces` lists the ids; a daemon running with the id refuses the removal; an unknown id
says which ids there are. main: no such commands (the rows stayed forever)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import to_toml, wait_for, with_notes

from memoryd.serve import methods as api

pytestmark = pytest.mark.slow


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def memoryd(tmp_path: Path, dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "forget.toml"
    config.write_text(
        to_toml({"data_dir": str(tmp_path / "tool"), "store": {"backend": "postgres", "dsn": dsn}})
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    return subprocess.run(
        [sys.executable, "-m", "memoryd", "store", *args, "--config", str(config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _everywhere(app: Any, query: str) -> list[str]:
    hits = call(app, "search", query=query, mode="keyword", workspace="all")["hits"]
    return sorted(f"{h.get('workspace')}:{h['content']}" for h in hits)


def test_a_machine_gone_for_good_leaves_no_notes_after_forget_workspace(
    team: Any, pg_dsn: str, tmp_path: Path
) -> None:
    alice, bob = team("alice"), team("bob")
    with_notes(alice, {"todo.md": "# Todo\n\nreplace the espresso grinder burrs\n"})
    with_notes(bob, {"todo.md": "# Todo\n\ndescale the espresso machine\n"})
    kept = call(alice, "add", content="the espresso order goes out on mondays")["id"]
    assert len([h for h in _everywhere(bob, "espresso") if h.startswith("alice:")]) == 1
    alice.close()  # the machine is gone

    listed = memoryd(tmp_path, pg_dsn, "workspaces")
    assert listed.returncode == 0, listed.stderr
    rows = sorted(line.split("\t")[:2] for line in listed.stdout.splitlines())
    assert rows == [["alice", "1 notes"], ["bob", "1 notes"]], listed.stdout

    dry = memoryd(tmp_path, pg_dsn, "forget-workspace", "alice", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would remove workspace alice: 1 notes in 1 chunks" in dry.stdout
    assert any(h.startswith("alice:") for h in _everywhere(bob, "espresso"))  # rolled back

    done = memoryd(tmp_path, pg_dsn, "forget-workspace", "alice")
    assert done.returncode == 0, done.stderr
    assert "removed workspace alice: 1 notes in 1 chunks; memories stay" in done.stdout
    hits = _everywhere(bob, "espresso")
    assert not [h for h in hits if h.startswith("alice:")], hits
    assert "None:# Todo\n\ndescale the espresso machine" in hits  # bob's own notes stay
    assert call(bob, "get", id=kept)["content"] == "the espresso order goes out on mondays"
    assert call(bob, "get", path="todo.md")["content"].endswith("descale the espresso machine")
    again = memoryd(tmp_path, pg_dsn, "workspaces")
    assert [line.split("\t")[0] for line in again.stdout.splitlines()] == ["bob"]

    unknown = memoryd(tmp_path, pg_dsn, "forget-workspace", "alice")
    assert unknown.returncode == 1
    assert "no workspace 'alice' in this database (known: bob)" in unknown.stderr


def test_forget_workspace_is_refused_while_a_daemon_runs_with_the_id(
    daemon_factory: Any, pg_dsn: str, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.md").write_text("# A\n\nthe note of carol\n")
    d = daemon_factory(
        workspace=str(ws),
        dailylog={"enabled": False},
        store={"backend": "postgres", "dsn": pg_dsn, "workspace_id": "carol"},
    )
    wait_for(lambda: [n["path"] for n in d.call("note.list", {})["items"]] == ["a.md"], 30)
    refused = memoryd(tmp_path, pg_dsn, "forget-workspace", "carol")
    assert refused.returncode == 1, refused.stdout
    assert "a memoryd is running with workspace id 'carol'" in refused.stderr
    assert "nothing was removed" in refused.stderr
    assert [n["path"] for n in d.call("note.list", {})["items"]] == ["a.md"]
