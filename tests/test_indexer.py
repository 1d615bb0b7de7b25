"""The indexer against real files: reconcile, change detection, moves, odd files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from memoryd.search.searcher import SearchRequest
from memoryd.text.pathrules import matches

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def search_paths(app: Any, query: str) -> list[str]:
    res = app.searcher.search(SearchRequest(query=query, mode="keyword", record_access=False))
    return [h.get("path") for h in res["hits"]]


def chunk_rows(app: Any) -> list[tuple]:
    return app.store.read(
        lambda con: con.execute(
            "SELECT e.id, d.path, e.content_hash FROM entries e JOIN documents d"
            " ON d.id = e.document_id WHERE e.kind = 'chunk' ORDER BY e.id"
        ).fetchall()
    )


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("**/*.md", "a.md", True),
        ("**/*.md", "x/y/a.md", True),
        ("*.md", "x/a.md", True),
        ("**/*.md", "a.txt", False),
        ("drafts/**", "drafts/a.md", True),
        ("drafts", "drafts/sub/a.md", True),
        ("drafts/*.md", "drafts/sub/a.md", False),
        ("a?.md", "ab.md", True),
        ("a?.md", "a/b.md", False),
        ("drafts/", "x/drafts/a.md", True),
        ("/a.md", "x/a.md", False),
        ("[abc]*.md", "sub/b1.md", True),
        ("[abc]*.md", "d1.md", False),
        ("[!abc]*.md", "d1.md", True),
        ("202[0-4]/*.md", "2023/x.md", True),
        ("202[0-4]/*.md", "2025/x.md", False),
    ],
)
def test_globs(pattern: str, path: str, expected: bool) -> None:
    assert matches([pattern], path) is expected


@pytest.mark.parametrize(
    ("patterns", "path", "expected"),
    [
        (["drafts/", "!drafts/keep.md"], "drafts/keep.md", False),
        (["drafts/", "!drafts/keep.md"], "drafts/other.md", True),
        (["*.md", "!secret-*.md"], "x/secret-1.md", False),
        (["*.md", "!secret-*.md", "secret-ok.md"], "secret-ok.md", True),  # last match wins
        (["!a.md"], "a.md", False),
        (["\\!bang.md"], "!bang.md", True),
    ],
)
def test_gitignore_negation(patterns: list[str], path: str, expected: bool) -> None:
    assert matches(patterns, path) is expected


def test_reconcile_new_edited_deleted_moved(make_app: Any) -> None:
    app = make_app()
    ws = app.cfg.workspace
    write(ws / "a.md", "# Alpha\n\naardvark facts\n")
    write(ws / "sub/b.md", "# Beta\n\nbison facts\n")
    write(ws / "c.md", "# Gamma\n\ncapybara facts\n")
    r = app.indexer.reconcile()
    assert (r.indexed, r.deleted, r.moved) == (3, 0, 0)
    assert search_paths(app, "bison") == ["sub/b.md"]

    # while "the daemon was down": edit one, delete one, move one
    write(ws / "a.md", "# Alpha\n\naardvark and anteater facts\n")
    (ws / "c.md").unlink()
    (ws / "sub/b.md").rename(ws / "moved-b.md")
    before = {p: (i, h) for i, p, h in chunk_rows(app)}
    r = app.indexer.reconcile()
    assert (r.indexed, r.deleted, r.moved, r.unchanged) == (1, 1, 1, 0)
    assert search_paths(app, "anteater") == ["a.md"]
    assert search_paths(app, "capybara") == []
    assert search_paths(app, "bison") == ["moved-b.md"]
    after = {p: (i, h) for i, p, h in chunk_rows(app)}
    assert after["moved-b.md"] == before["sub/b.md"]  # same rows: nothing re-chunked


def test_a_moved_note_titled_by_its_file_name_is_filed_under_the_new_one(make_app: Any) -> None:
    """A note with no title of its own files its chunks under its file name (notehead.title_of):
    moved, it is read again, as a rebuild would file it (bench/entity_rebuild.py found the old
    name kept); one with a title keeps its rows."""
    app = make_app(model=None)
    ws = app.cfg.workspace
    write(ws / "plans.md", "aardvark facts\n")
    write(ws / "titled.md", "# Beta\n\nbison facts\n")
    app.indexer.reconcile()
    before = {p: (i, h) for i, p, h in chunk_rows(app)}
    (ws / "plans.md").rename(ws / "budget.md")
    (ws / "titled.md").rename(ws / "beta.md")
    r = app.indexer.reconcile()
    assert (r.indexed, r.moved) == (1, 1)
    heads = dict(
        app.store.read(
            lambda con: con.execute(
                "SELECT d.path, e.heading_path FROM entries e JOIN documents d"
                " ON d.id = e.document_id"
            ).fetchall()
        )
    )
    assert json.loads(heads["budget.md"]) == ["budget"]
    assert {p: (i, h) for i, p, h in chunk_rows(app)}["beta.md"] == before["titled.md"]


def test_touch_or_identical_save_reindexes_nothing(make_app: Any) -> None:
    app = make_app()
    f = write(app.cfg.workspace / "n.md", "# Note\n\nunchanging words\n")
    app.indexer.reconcile()
    ids = chunk_rows(app)
    os.utime(f, (1, 1))
    f.write_text(f.read_text())  # a save without change
    r = app.indexer.reconcile()
    assert (r.indexed, r.unchanged) == (0, 1)
    assert chunk_rows(app) == ids
    r = app.indexer.reconcile()  # stat now matches: not even read
    assert (r.indexed, r.unchanged) == (0, 1)


def test_front_matter_applies_to_chunks(make_app: Any) -> None:
    app = make_app()
    write(
        app.cfg.workspace / "fm.md",
        "---\ntags: [infra, docker]\ntype: decision\nimportance: 9\n---\n# Net\n\nbridge mode\n",
    )
    app.indexer.reconcile()
    hit = app.searcher.search(SearchRequest(query="bridge", record_access=False))["hits"][0]
    assert hit["type"] == "decision" and hit["tags"] == ["infra", "docker"]
    assert hit["importance"] == 9 and hit["start_line"] >= 6
    assert hit["heading_path"] == ["Net"]


def test_odd_files_are_skipped_or_decoded_never_fatal(make_app: Any, tmp_path: Path) -> None:
    app = make_app(indexer={"max_file_bytes": 2048})
    ws = app.cfg.workspace
    write(ws / "big.md", "x" * 5000)
    write(ws / "latin1.md", "caf\xe9 ol\xe9 ñandu tapir".encode("latin-1"))
    outside = write(tmp_path / "outside.md", "secret outside words")
    (ws / "link-out.md").symlink_to(outside)
    write(ws / "real.md", "inner linked words")
    (ws / "link-in.md").symlink_to(ws / "real.md")
    (ws / "dir.md").mkdir()
    os.mkfifo(ws / "fifo.md")
    write(ws / ".hidden/h.md", "hidden words")
    write(ws / "notes.txt", "text file words")
    r = app.indexer.reconcile()
    assert r.errors == []
    assert search_paths(app, "outside") == []
    assert search_paths(app, "hidden") == []
    assert search_paths(app, "text") == []
    assert sorted(search_paths(app, "inner")) == ["link-in.md", "real.md"]
    assert search_paths(app, "tapir") == ["latin1.md"]
    assert search_paths(app, "café") == ["latin1.md"]  # its bytes read as Windows-1252
    assert r.skipped >= 3  # big, link-out, fifo


def test_include_exclude_settings(make_app: Any) -> None:
    app = make_app(indexer={"include": ["**/*.md", "**/*.txt"], "exclude": ["drafts/**"]})
    ws = app.cfg.workspace
    write(ws / "a.txt", "walrus")
    write(ws / "drafts/d.md", "walrus draft")
    app.indexer.reconcile()
    assert search_paths(app, "walrus") == ["a.txt"]


def test_gitignore_classes_and_negation_pick_the_notes(make_app: Any) -> None:
    app = make_app(
        indexer={
            # hidden folders stay skipped (skip_hidden) whatever the patterns say
            "include": ["**/*.md", "[0-9][0-9]-*.txt", "!scratch-*.md", ".trash/**", ".obsidian/"],
            "exclude": ["drafts/", "!drafts/keep.md"],
        }
    )
    ws = app.cfg.workspace
    for rel in (
        "a.md",
        "01-plan.txt",
        "x-plan.txt",
        "scratch-1.md",
        "drafts/d.md",
        "drafts/keep.md",
        "sub/drafts/deep.md",
        ".obsidian/o.md",
        ".trash/t.md",
    ):
        write(ws / rel, f"okapi {rel}")
    app.indexer.reconcile()
    assert sorted(search_paths(app, "okapi")) == ["01-plan.txt", "a.md", "drafts/keep.md"]


def test_sync_paths_handles_moves_deletes_and_folders(make_app: Any) -> None:
    app = make_app()
    ws = app.cfg.workspace
    write(ws / "x/one.md", "# One\n\nplatypus\n")
    write(ws / "x/two.md", "# Two\n\nnumbat\n")
    app.indexer.reconcile()
    (ws / "x/one.md").rename(ws / "uno.md")
    r = app.indexer.sync_paths([ws / "x/one.md", ws / "uno.md"])
    assert (r.moved, r.deleted, r.indexed) == (1, 0, 0)
    import shutil

    shutil.rmtree(ws / "x")
    r = app.indexer.sync_paths([ws / "x"])
    assert r.deleted == 1
    assert search_paths(app, "numbat") == []
    assert search_paths(app, "platypus") == ["uno.md"]


def test_a_hard_link_renamed_and_edited_a_batch_later_updates_its_other_name(
    make_app: Any,
) -> None:
    """A git pull renames a hard link and edits it; on a loaded machine the old name's event
    and the new name's come in two batches, and the other name (a.md, the same file) kept the
    old text until the next reconcile (a CI run, stop 39): the vanished hashes are remembered
    a minute (folders.Vanished)."""
    import os

    app = make_app()
    ws = app.cfg.workspace
    write(ws / "a.md", "# A\n\nwombat\n")
    (ws / "sub").mkdir()
    os.link(ws / "a.md", ws / "sub/b.md")
    app.indexer.reconcile()
    (ws / "sub/b.md").rename(ws / "moved.md")
    assert app.indexer.sync_paths([ws / "sub/b.md"]).deleted == 1  # the old name alone
    with open(ws / "moved.md", "a", encoding="utf-8") as f:
        f.write("\nquokka after the move\n")
    app.indexer.sync_paths([ws / "moved.md"])  # a batch later
    assert sorted(search_paths(app, "quokka")) == ["a.md", "moved.md"]


def test_drift_report(make_app: Any) -> None:
    app = make_app()
    ws = app.cfg.workspace
    write(ws / "a.md", "one")
    write(ws / "b.md", "two")
    app.indexer.reconcile()
    assert app.indexer.drift()["total"] == 0
    write(ws / "a.md", "one changed")
    (ws / "b.md").unlink()
    write(ws / "c.md", "three")
    d = app.indexer.drift()
    assert d["stale"] == ["a.md"]
    assert d["missing_on_disk"] == ["b.md"]
    assert d["files_missing_from_index"] == ["c.md"]
    assert d["total"] == 3


def doc_paths(app: Any) -> list[str]:
    return sorted(
        r[0]
        for r in app.store.read(lambda con: con.execute("SELECT path FROM documents").fetchall())
    )


@pytest.mark.parametrize("first", ["alias", "real folder"])
@pytest.mark.parametrize("door", ["reconcile", "event at the real path", "event at the alias"])
def test_a_folder_reached_through_a_symlink_is_indexed_once_under_its_real_path(
    make_app: Any, monkeypatch: pytest.MonkeyPatch, first: str, door: str
) -> None:
    """A symlinked folder inside the workspace (and a loop back to its parent) is the real
    folder: its files are indexed once, under the real path, whichever way the walk (in either
    order of the folder's entries) or an event reaches them first, and status --check finds
    no drift."""
    import memoryd.index.folders as folders

    walk = os.walk

    def ordered(top: Any, **kw: Any) -> Any:  # the walk meets the alias first, or last
        for dirpath, dirnames, filenames in walk(top, **kw):
            dirnames.sort(key=lambda d: (d == "link") != (first == "alias"))
            yield dirpath, dirnames, filenames

    monkeypatch.setattr(folders.os, "walk", ordered)
    app = make_app()
    ws = app.cfg.workspace
    write(ws / "projects/plan.md", "# Plan\n\nquokka migration\n")
    os.symlink("projects", ws / "link")
    os.symlink("..", ws / "projects" / "up")  # a loop back to the top
    app.indexer.reconcile()
    if door != "reconcile":
        write(ws / "projects/plan.md", "# Plan\n\nquokka migration, numbat rollout\n")
        seen = ws / ("projects" if door == "event at the real path" else "link") / "plan.md"
        app.indexer.sync_paths([seen])
    assert doc_paths(app) == ["projects/plan.md"]
    assert search_paths(app, "quokka") == ["projects/plan.md"]
    if door != "reconcile":
        assert search_paths(app, "numbat") == ["projects/plan.md"]
    assert app.indexer.drift()["total"] == 0
    assert not app.indexer.reconcile().changed
    assert doc_paths(app) == ["projects/plan.md"]


@pytest.mark.parametrize("path", ["a/one.md", "a", "."])
def test_reindex_of_a_path_with_full_reads_its_notes_again(
    make_app: Any, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """`memoryctl reindex PATH --full` chunks the notes at or under PATH again even when their
    bytes did not change (after an upgrade that reads notes differently, as Latin-1 bytes
    are now): it ignored --full and answered "unchanged"."""
    from memoryd.serve import methods as api
    from memoryd.text import decoding

    app = make_app(model=None)
    ws = app.cfg.workspace
    write(ws / "a/one.md", "# One\n\nquokka\n")
    write(ws / "b/two.md", "# Two\n\nwombat\n")
    decode = decoding.decode
    with monkeypatch.context() as m:  # an older reader, which made other text of the bytes
        m.setattr(decoding, "decode", lambda data: (decode(data)[0] + "stale\n", "utf-8", False))
        app.indexer.reconcile()
    assert sorted(search_paths(app, "stale")) == ["a/one.md", "b/two.md"]
    params: dict[str, Any] = {"path": path}
    assert api.lookup("reindex", params).fn(app, params)["indexed"] == 0
    params = {"path": path, "full": True}
    res = api.lookup("reindex", params).fn(app, params)
    assert res["indexed"] == (2 if path == "." else 1)
    assert search_paths(app, "stale") == ([] if path == "." else ["b/two.md"])
    assert search_paths(app, "quokka") == ["a/one.md"]
