"""memoryctl commands that glue branches together, against a real daemon: import (all or
nothing across batches, file line numbers), checkpoint delete and the copies named by delete."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _lines(items: list[Any]) -> str:
    return "".join(json.dumps(i) + "\n" for i in items)


def test_import_is_all_or_nothing_across_batches_and_names_the_files_line(
    daemon_factory: Any, tmp_path: Path
) -> None:
    d = daemon_factory()
    # ~9 KB memories: the file is sent in several batches of at most 256 KiB
    items: list[Any] = [{"content": f"memory {i} " + "x" * 9000} for i in range(40)]
    items.append({"content": ""})  # bad, in the last batch
    path = tmp_path / "big.jsonl"
    path.write_text(_lines(items))
    done = d.ctl("import", str(path))
    assert done.returncode == 2  # an item the daemon refuses: bad input, as a usage error
    assert done.stderr.startswith(f"memoryctl: {path}: line 41: content")
    assert "nothing was imported" in done.stderr
    assert d.call("stats")["memories"] == 0  # the batches before the bad one were not stored

    # a blank line does not shift the numbering: the bad item is on the file's line 5
    path.write_text(
        _lines([{"content": "one"}, {"content": "two"}])
        + "\n"
        + _lines([{"content": "four"}, {"content": "five\x00"}])
    )
    done = d.ctl("import", str(path))
    assert done.returncode == 2 and ": line 5: content" in done.stderr, done.stderr
    assert d.call("stats")["memories"] == 0

    path.write_text(_lines(items[:40]))
    done = d.ctl("import", str(path))
    assert done.returncode == 0
    assert done.stdout == "imported 40, skipped 0 already stored, 0 vectors\n"
    assert d.call("stats")["memories"] == 40


def test_import_allow_secrets_and_renumbered_ids(daemon_factory: Any, tmp_path: Path) -> None:
    d = daemon_factory()
    taken = d.call("add", {"content": "already here"})["id"]
    path = tmp_path / "in.jsonl"
    path.write_text(
        _lines([{"id": taken, "content": "wants the same id"}, {"content": f"token {GHP}"}])
    )
    done = d.ctl("import", str(path))
    assert done.returncode == 1 and ": line 2: looks like a credential" in done.stderr
    assert d.call("stats")["memories"] == 1
    done = d.ctl("import", "--allow-secrets", str(path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "imported 2, skipped 0 already stored, 0 vectors"
    assert lines[1] == "renumbered 1 (their id was taken):"
    assert lines[2].startswith(f"  {taken} -> ")
    assert d.call("stats")["memories"] == 3
    as_json = json.loads(d.ctl("--json", "import", "--allow-secrets", str(path)).stdout)
    assert as_json == {"imported": 0, "skipped_duplicates": 2, "vectors": 0, "renumbered": []}


@pytest.mark.sqlite_only("checkpoints and snapshots copy the SQLite file")
def test_checkpoint_delete_and_delete_names_the_copies(daemon_factory: Any) -> None:
    d = daemon_factory()
    mid = d.call("add", {"content": "the vault code is 1234"})["id"]
    done = d.ctl("checkpoint", "create", "before")
    assert done.returncode == 0, done.stderr
    done = d.ctl("delete", str(mid))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"deleted {mid}"
    assert lines[1].startswith("still in 1 copy made since")
    assert lines[2].startswith("  checkpoint before (") and lines[2].endswith(
        "): memoryctl checkpoint delete before"
    )
    done = d.ctl("checkpoint", "delete", "before")
    assert (done.returncode, done.stdout) == (0, "deleted checkpoint before\n")
    assert d.call("checkpoint.list")["checkpoints"] == []
    done = d.ctl("checkpoint", "delete", "before")
    assert done.returncode == 1 and "no checkpoint named 'before'" in done.stderr
    done = d.ctl("checkpoint", "delete", "--snapshot", "nope")
    assert done.returncode == 1 and "no snapshot named 'nope'" in done.stderr

    # by tag: the same list
    d.call("add", {"content": "scratch thought", "tags": ["scratch"]})
    d.ctl("checkpoint", "create", "again")
    done = d.ctl("delete", "--tag", "scratch", "--dry-run")
    assert "would still be in 1 copy" in done.stdout
    assert "memoryctl checkpoint delete again" in done.stdout
    wait_for(lambda: d.answers())


# --- links and backlinks on the fixture vault (issue 13: "memoryctl backlinks NOTE works") -------

VAULT = Path(__file__).parent / "fixtures" / "vault"


def test_links_and_backlinks_on_the_fixture_vault(daemon_factory: Any, tmp_path: Path) -> None:
    ws = tmp_path / "vault"
    shutil.copytree(VAULT, ws)
    d = daemon_factory(workspace=str(ws))
    # .obsidian/ and .trash/ are not notes: five documents
    wait_for(lambda: d.call("status")["counts"]["documents"] == 5, timeout=30)

    done = d.ctl("links", "Home.md")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "l.8  [[Project Plan]] -> work/Project Plan.md",
        "l.8  [[Project Plan|the plan]] -> work/Project Plan.md",
        "l.9  [[Project Plan#Milestones]] -> work/Project Plan.md#Milestones",
        "l.9  ![[diagram.png]] -> (unresolved)",
        "l.10  [meeting](<work/Meeting Notes.md>) -> work/Meeting Notes.md",
        "l.11  [[Missing Note]] -> (unresolved)",
    ]
    # a note name works as a wikilink would resolve it
    assert d.ctl("links", "Home").stdout == done.stdout

    done = d.ctl("backlinks", "Project Plan")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Home.md:8  -> (note)",
        "Home.md:8  -> (note)  as 'the plan'",
        "Home.md:9  -> #Milestones",
        "work/Meeting Notes.md:3  -> (note)  as 'the project plan'",
    ]
    done = d.ctl("backlinks", "work/Meeting Notes.md")
    assert done.stdout.splitlines() == [
        "Home.md:10  -> (note)  as 'meeting'",
        "notes/Plain note.md:4  -> (note)",
        "notes/Plain note.md:4  -> (note)  as 'partial path'",
        "work/Project Plan.md:7  -> (note)",
    ]
    assert d.ctl("backlinks", "archive/Meeting Notes.md").stdout.splitlines() == [
        "archive/Meeting Notes.md:3  -> #Old",
        "archive/Meeting Notes.md:3  -> #Old",
    ]
    done = d.ctl("backlinks", "notes/Plain note.md")  # nothing found: exit 1, as grep
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "nothing links to notes/Plain note.md\n"
    done = d.ctl("backlinks", "Nowhere At All")
    assert done.returncode == 1 and "no indexed note 'Nowhere At All'" in done.stderr

    # links follow edits: a new link is a backlink once indexed; a moved note keeps its backlinks
    done = d.ctl("note", "append", "notes/Plain note.md", "\nAlso [[Home]].\n")
    assert done.returncode == 0, done.stderr
    wait_for(lambda: "notes/Plain note.md:" in d.ctl("backlinks", "Home").stdout, timeout=30)
    done = d.ctl("note", "move", "work/Project Plan.md", "work/Plan.md")
    assert done.returncode == 0, done.stderr
    # [[Project Plan]] no longer resolves; the markdown link in Meeting Notes never named it
    wait_for(lambda: "(unresolved)" in d.ctl("links", "Home.md").stdout.splitlines()[0])
    done = d.ctl("--json", "backlinks", "work/Plan.md")  # a known note nothing links to
    assert (done.returncode, json.loads(done.stdout)["backlinks"]) == (1, [])


@pytest.mark.sqlite_only("checkpoints and snapshots copy the SQLite file")
def test_prune_names_the_copies_too(daemon_factory: Any) -> None:
    d = daemon_factory()
    mid = d.call("add", {"content": "an old plan", "tier": "deprecated"})["id"]
    d.call("checkpoint.create", {"name": "weekly"})
    done = d.ctl("prune")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith(f"  #{mid} [deprecated]")
    assert "still in 1 copy made since" in done.stdout
    assert "checkpoint weekly (" in done.stdout


def test_the_mcp_forget_answer_names_the_copies() -> None:
    from memoryd.agents.tools import fmt_forgot

    assert fmt_forgot({"id": 4, "still_in": []}) == "Forgot [4]"
    text = fmt_forgot(
        {"id": 4, "still_in": [{"kind": "checkpoint", "name": "weekly", "path": "/x"}]}
    )
    assert text.startswith("Forgot [4]. Its text is still in 1 older copy(ies) of the store")
    assert "checkpoint weekly" in text and "memoryctl checkpoint delete NAME" in text
