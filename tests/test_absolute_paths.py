"""Every method that takes a workspace path reads an absolute one inside the workspace (as
configured, as its folder resolves, or written `~/...`) as the relative path: a path a shell
completed or an agent was given names the same note everywhere. Before, `reindex` and `delete
path` took it, while `note.*`, `get`, the `path` filters of `search` and `list`, `links`,
`backlinks` and `graph` refused it ("is absolute; give a path inside the workspace", for a path
inside the workspace) or looked for it under the vault's root. Absolute paths elsewhere are
refused as before."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from memoryd.core.errors import InvalidInput, NotFound
from memoryd.core.fsutil import from_absolute
from memoryd.serve import methods as api

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


# (method, params with {p} for the note's path, what to compare)
DOORS = [
    ("note.read", {"path": "{p}"}, lambda r: r["content"]),
    ("get", {"path": "{p}"}, lambda r: r["path"]),
    ("links", {"path": "{p}"}, lambda r: [x["target"] for x in r["links"]]),
    ("backlinks", {"path": "{p}"}, lambda r: r["path"]),
    ("graph", {"path": "{p}"}, lambda r: r["center"]),
    ("note.list", {"path": "{d}"}, lambda r: [i["path"] for i in r["items"]]),
    ("search", {"query": "quokka", "path": "{d}", "kind": "chunk"}, lambda r: len(r["hits"])),
    ("list", {"path": "{d}", "kind": "chunk"}, lambda r: len(r["items"])),
    ("reindex", {"path": "{p}"}, lambda r: r["unchanged"]),
]


def _spellings(app: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The workspace as configured, through a symlink's target, and from `~`."""
    ws = Path(app.cfg.workspace)
    monkeypatch.setenv("HOME", str(ws.parent))
    return [str(ws), os.path.realpath(ws), f"~/{ws.name}", str(ws) + "/"]


@pytest.mark.parametrize(("method", "params", "answer"), DOORS, ids=[d[0] for d in DOORS])
def test_every_door_reads_an_absolute_path_inside_the_workspace_as_the_relative_one(
    method: str, params: dict[str, Any], answer: Any, make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(model=None)
    ws = Path(app.cfg.workspace)
    (ws / "proj").mkdir(parents=True, exist_ok=True)
    (ws / "proj" / "plan.md").write_text("# Plan\n\nthe quokka plan, see [[other]]\n")
    (ws / "other.md").write_text("# Other\n\nback to [[proj/plan]]\n")
    call(app, "reindex")

    def ask(p: str, d: str) -> Any:
        filled = {k: v.format(p=p, d=d) for k, v in params.items()}
        return answer(call(app, method, **filled))

    expected = ask("proj/plan.md", "proj")
    for base in _spellings(app, monkeypatch):
        root = base.rstrip("/")
        assert ask(f"{root}/proj/plan.md", f"{root}/proj") == expected, base


@pytest.mark.parametrize("method", ["note.read", "note.write", "note.list", "get", "search"])
def test_an_absolute_path_outside_the_workspace_is_still_refused(
    method: str, make_app: Any, tmp_path: Path
) -> None:
    app = make_app(model=None)
    ws = str(app.cfg.workspace)
    params: dict[str, Any] = {"path": f"{ws}/../elsewhere/x.md"}
    if method == "note.write":
        params["content"] = "# X\n"
    if method == "search":
        params["query"] = "x"
    with pytest.raises((InvalidInput, NotFound)):
        call(app, method, **params)
    assert not (Path(ws).parent / "elsewhere").exists()


def test_note_write_and_move_take_absolute_paths_inside(make_app: Any) -> None:
    app = make_app(model=None)
    ws = str(app.cfg.workspace)
    made = call(app, "note.write", path=f"{ws}/a/n.md", content="# N\n\nwombat\n")
    assert made["path"] == "a/n.md"
    moved = call(app, "note.move", path=f"{ws}/a/n.md", new_path=f"{ws}/b/n.md")
    assert moved["new_path"] == "b/n.md" and (Path(ws) / "b" / "n.md").is_file()


def test_from_absolute_is_textual_and_keeps_everything_else(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    assert from_absolute(str(root), root) == "."
    assert from_absolute(f"{root}/a/../b.md", root) == "b.md"
    assert from_absolute(f"{root}/../x.md", root) == f"{root}/../x.md"  # leaves: as given
    assert from_absolute(f"{root}x/a.md", root) == f"{root}x/a.md"  # a sibling folder
    for other in ("a/b.md", "~draft.md", "", None, 7):
        assert from_absolute(other, root) == other
    assert from_absolute("/a.md", None) == "/a.md"
