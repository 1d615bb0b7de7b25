"""The reconcile compares the workspace with the store a folder at a time (memoryd/index/
folders.py): the same result as a comparison of the whole workspace, holding one folder's files."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from memoryd.index import folders
from memoryd.store import docpaths, entries

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

# names whose order puts a folder's notes apart from each other: "a/b.md" < "a/b/c.md" < "a/c.md"
# bytewise, and "a-b", "a b", "a0" sort around "a/" ('-' and ' ' before '/', '0' after it)
TREE = {
    "a.md": "alpaca top",
    "a/b.md": "bongo in a",
    "a/b/c.md": "caracal in a/b",
    "a/d.md": "dingo in a",
    "a-b/x.md": "xerus in a-b",
    "a b/z.md": "zorilla in a b",
    # titled: a move keeps its rows (an untitled note is filed under its file name, so a
    # rename reads it again: stop 39, ent14)
    "a0/y.md": "# Yak\n\nyak in a0",
    "ü/é.md": "emu in ü",
    "p/q/r/s.md": "serval deep",
}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def stored(app: Any) -> set[str]:
    return set(app.store.read(entries.documents))


def test_reconcile_by_folder_finds_every_difference(make_app: Any) -> None:
    app = make_app(model=None)
    ws = app.cfg.workspace
    for rel, text in TREE.items():
        write(ws / rel, text)
    r = app.indexer.reconcile()
    assert (r.indexed, r.unchanged, r.deleted) == (len(TREE), 0, 0)
    assert stored(app) == set(TREE)
    r = app.indexer.reconcile()
    assert (r.indexed, r.unchanged, r.deleted, r.moved) == (0, len(TREE), 0, 0)

    shutil.rmtree(ws / "a/b")  # a folder gone: the walk never reaches it
    (ws / "p").rename(ws / ".p")  # now hidden: not walked either
    (ws / "a.md").unlink()  # a file gone from a folder the walk reaches
    (ws / "a0/y.md").rename(ws / "a/y2.md")  # a move from one folder to another
    write(ws / "a-b/x.md", "xerus edited in a-b")
    write(ws / "a/new.md", "newt in a")
    r = app.indexer.reconcile()
    assert (r.indexed, r.moved, r.deleted, r.unchanged) == (2, 1, 3, 4), r
    assert stored(app) == {
        "a/b.md",
        "a/d.md",
        "a/y2.md",
        "a/new.md",
        "a-b/x.md",
        "a b/z.md",
        "ü/é.md",
    }
    assert app.indexer.drift()["total"] == 0


def test_reconcile_holds_one_folder_at_a_time(make_app: Any, monkeypatch: Any) -> None:
    """No read of the whole documents table, and never more than one folder's files at once."""
    app = make_app(model=None)
    ws = app.cfg.workspace
    for folder in ("one", "two", "three"):
        for n in range(4):
            write(ws / folder / f"n{n}.md", f"{folder} note {n}")
    write(ws / "top.md", "top note")
    app.indexer.reconcile()

    def whole_table(con: Any) -> Any:
        raise AssertionError("the reconcile read every document at once")

    monkeypatch.setattr(entries, "documents", whole_table)
    monkeypatch.setattr(docpaths, "documents", whole_table)
    held: list[int] = []
    compare = folders.Differences.folder

    def spy(self: Any, con: Any, folder: str, found: dict[str, Any]) -> None:
        held.append(len(found))
        compare(self, con, folder, found)

    monkeypatch.setattr(folders.Differences, "folder", spy)
    write(ws / "two/n1.md", "two note 1 edited")
    r = app.indexer.reconcile()
    assert (r.indexed, r.unchanged) == (1, 12)
    assert sorted(held) == [1, 4, 4, 4]
