"""What a note write cut short (kill -9, a power cut) leaves beside the note is cleared at the
next start (memoryd/notes/leftovers.py): a second name of the note and the temp of a write never
put in place go, an old version that is nothing else's is kept in DATA_DIR/recovered/."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

from memoryd.notes import leftovers

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


class Rules:
    include = ("**/*.md",)
    exclude = ()
    skip_hidden = True
    skip_tool_files = True


def _state(ws: Path, case: str) -> None:
    """The workspace as a kill at each step of core/swap.guarded_replace leaves it."""
    ws.mkdir(parents=True, exist_ok=True)
    note, old, tmp = ws / "a.md", ws / ".a.md.0123abcd.old", ws / ".a.md.89abcdef.tmp"
    note.write_text("old text\n")
    if case == "linked, not swapped":  # the backup name made, the temp written
        os.link(note, old)
        tmp.write_text("new text\n")
    elif case == "exchanged":  # names exchanged: the temp's name holds the old file
        os.link(note, old)
        os.rename(note, tmp)
        note.write_text("new text\n")
    elif case == "swapped, not checked":  # the old file only under its backup name
        os.rename(note, old)
        note.write_text("new text\n")
    elif case == "temp only":  # killed while the temp was written
        tmp.write_text("new te")


@pytest.mark.parametrize(
    ("case", "note", "recovered"),
    [
        ("linked, not swapped", "old text\n", None),
        ("exchanged", "new text\n", "old text\n"),
        ("swapped, not checked", "new text\n", "old text\n"),
        ("temp only", "old text\n", None),
    ],
)
def test_every_state_a_kill_leaves_is_cleared_and_nothing_lost(
    tmp_path: Path, case: str, note: str, recovered: str | None
) -> None:
    ws, data = tmp_path / "ws", tmp_path / "data"
    _state(ws, case)
    done = leftovers.clear(ws, data / "recovered", Rules(), threading.Lock())
    assert sorted(p.name for p in ws.iterdir()) == ["a.md"]
    assert (ws / "a.md").read_text() == note
    assert (ws / "a.md").stat().st_nlink == 1
    kept = list((data / "recovered").glob("a.md.*.old")) if recovered else []
    assert [p.read_text() for p in kept] == ([recovered] if recovered else [])
    assert done.recovered == [str(p) for p in kept]
    assert all(r.startswith(".a.md.") for r in done.removed)
    assert len(done.removed) + len(done.recovered) == {
        "temp only": 1,
        "swapped, not checked": 1,
    }.get(case, 2)


def test_only_memoryds_own_names_beside_notes_are_touched(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / ".git").mkdir()
    (ws / "own").mkdir()
    keep = [
        ws / ".photo.png.0123abcd.tmp",  # beside no note (not a path memoryd indexes)
        ws / ".a.md.0123abcz.tmp",  # not 8 hex digits
        ws / ".a.md.0123abcd.bak",  # another kind
        ws / "a.md.0123abcd.tmp",  # not hidden
        ws / ".git" / ".a.md.0123abcd.tmp",  # a hidden folder
        ws / "own" / ".a.md.0123abcd.tmp",  # memoryd's own folder inside the workspace
    ]
    for p in keep:
        p.write_text("x")
    (ws / "sub" / ".b.md.0123abcd.tmp").write_text("cut short")
    os.symlink(ws / "sub" / ".b.md.0123abcd.tmp", ws / ".c.md.0123abcd.tmp")  # not a file
    done = leftovers.clear(
        ws, tmp_path / "rec", Rules(), threading.Lock(), {os.path.realpath(ws / "own")}
    )
    assert done.removed == ["sub/.b.md.0123abcd.tmp"]
    assert all(p.exists() for p in keep)
    assert os.path.islink(ws / ".c.md.0123abcd.tmp")


def test_the_daemon_clears_them_before_it_indexes(make_app: Any, config_dict: Any) -> None:
    ws = Path(config_dict["workspace"])
    _state(ws, "exchanged")
    (ws / "notes").mkdir()
    (ws / "notes" / "b.md").write_text("# B\n\nbravo\n")
    os.link(ws / "notes" / "b.md", ws / "notes" / ".b.md.0123abcd.old")
    app = make_app()
    app.start(jobs=False)
    wait_for(app.ready.is_set, timeout=60)
    assert sorted(str(p.relative_to(ws)) for p in ws.rglob("*")) == ["a.md", "notes", "notes/b.md"]
    assert (ws / "notes" / "b.md").stat().st_nlink == 1
    kept = list((Path(config_dict["data_dir"]) / "recovered").glob("a.md.*.old"))
    assert [p.read_text() for p in kept] == ["old text\n"]
    # and a note written now keeps no second name (its writes are not mistaken for leftovers)
    app.notes.write("notes/b.md", "# B\n\nbravo again\n")
    assert (ws / "notes" / "b.md").stat().st_nlink == 1
    assert sorted(p.name for p in (ws / "notes").iterdir()) == ["b.md"]


def test_the_names_writes_make_are_the_names_cleared() -> None:
    """One pattern for the temp and the backup a write makes and what the start clears."""
    from memoryd.core.fsutil import SIDE_NAME, side_name

    for kind in ("tmp", "old"):
        m = SIDE_NAME.match(side_name("notes (1).md", kind))
        assert m is not None and m["name"] == "notes (1).md" and m["kind"] == kind
