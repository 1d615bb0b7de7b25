"""A note that writes no level-1 heading (Obsidian titles a note by its file name) files its
chunks under its title, front-matter `title` else its file name: found by it on both backends,
shown as its heading; a note that writes `# Title` keeps its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memoryd.serve import methods as api
from memoryd.text import notehead
from memoryd.text.markdown import FrontMatter


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


@pytest.mark.parametrize(
    ("body", "has"),
    [
        ("# Title\n\ntext\n", True),
        ("intro\n\n   # Late title #\n", True),
        ("Title\n=====\n\ntext\n", True),
        ("## Only a section\n\ntext\n", False),
        ("```sh\n# a shell comment\n```\ntext\n", False),
        ("> ```\n> # quoted code\n> ```\n", False),
        ("#tag and text\n", False),
        ("text\n===\n", True),  # (a setext underline under a paragraph)
        ("text\n\n===\n", False),  # (after a blank line: a paragraph of its own)
        ("\n===\n", False),
        ("", False),
    ],
)
def test_a_level_one_heading_is_told_apart(body: str, has: bool) -> None:
    assert notehead.has_title_heading(body) is has


def test_the_title_is_the_front_matters_else_the_file_names() -> None:
    fm = FrontMatter()
    assert notehead.title_of("guides/Create a  vault.md", fm, "text") == "Create a vault"
    assert notehead.title_of("x.md", FrontMatter(title="Canvas"), "text") == "Canvas"
    assert notehead.title_of("Canvas.md", fm, "# Canvas basics\n") is None  # its own
    for nameless in ("2026-03-03.md", "001.md", "  .md"):
        assert notehead.title_of(nameless, fm, "text") is None


@pytest.mark.backends
def test_a_note_is_found_by_its_title_and_shows_it(make_app: Any) -> None:
    a = make_app(model=None)
    ws = Path(a.cfg.workspace)
    (ws / "guides").mkdir(parents=True, exist_ok=True)
    (ws / "guides" / "Kestrel migration.md").write_text(
        "Plan the move in spring.\n\n## Steps\n\nBook the ringers first.\n"
    )
    (ws / "Owls.md").write_text("# Night birds\n\nThey hunt at dusk.\n")
    (ws / "props.md").write_text("---\ntitle: Harbour cranes\n---\nRented by the week.\n")
    assert a.indexer.reconcile().errors == []
    hits = call(a, "search", query="kestrel", mode="keyword", group="none")["hits"]
    assert {h["path"] for h in hits} == {"guides/Kestrel migration.md"} and len(hits) == 2
    assert sorted(tuple(h["heading_path"]) for h in hits) == [
        ("Kestrel migration",),
        ("Kestrel migration", "Steps"),
    ]
    assert [h["path"] for h in call(a, "search", query="harbour", mode="keyword")["hits"]] == [
        "props.md"
    ]
    owls = call(a, "search", query="dusk", mode="keyword")["hits"]
    assert [h["heading_path"] for h in owls] == [["Night birds"]]  # it writes its own
    note = call(a, "get", path="guides/Kestrel migration.md", section="kestrel migration")
    assert note["content"].startswith("Plan the move")  # the section before the first heading


@pytest.mark.backends
def test_an_upgraded_store_files_its_notes_under_their_titles(
    make_app: Any, backend: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Schema m011 / v10: notes are read again at the next reconcile, nothing is embedded."""
    from conftest import indexed_by_older, older_store, settle

    store = older_store(monkeypatch, request, backend, "m011_note_titles", "_v10_note_titles")
    monkeypatch.setattr(notehead, "title_of", lambda path, fm, body: None)  # as before
    indexed_by_older(make_app, store, {"Kestrel migration.md": "Plan the move in spring.\n"})
    monkeypatch.undo()
    new = make_app(**store)
    assert new.indexer.reconcile().indexed == 1  # read again
    hits = call(new, "search", query="spring", mode="keyword")["hits"]
    assert [h["heading_path"] for h in hits] == [["Kestrel migration"]]
    settle(new)
    assert new.model.fake.seen == []  # nothing embedded again
