"""Issue 13.3 checked as a user would: a 30-note vault with the quirks real vaults have (links
with spaces, unicode and extensions, folder links, missing targets, unicode and dashed tags,
tags in headings and code, nested tags, aliases as a string and a list, dates in several
formats and an invalid one, .obsidian/ and .trash/)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memoryd.notes import vault
from memoryd.store.entries import Filters, list_entries

NOTES = {
    "Home.md": (
        "# Home\nSee [[Project Alpha]], [[Café Ünïcode]], [[Project Alpha.md]] and "
        "[[Projects/Sub/Deep Note]].\nAlso [[Missing Note]], [[Project Alpha#Goals|the goals]], "
        "[link](Projects/Beta.md) and ![[diagram.png]].\n#home #débogage #multi-word-tag\n"
    ),
    "Project Alpha.md": (
        "---\ntags: [project, alpha-1]\naliases: PA\ncreated: 2024-01-05 14:30\n---\n"
        "# Project Alpha\n## Goals\nShip it. #debugging\n```\n#notatag in code\n"
        "[[Not A Link]]\n```\nInline `#codetag` and `[[code link]]`.\n"
    ),
    "Café Ünïcode.md": (
        "---\naliases:\n  - Cafe\n  - Kaffee\ndate: 2024-02-10\n---\n# Café\n"
        "Back to [[Home]]. #ünïcode-tag #nested/child/leaf\n"
    ),
    "Projects/Beta.md": (
        "---\ndate: not-a-date\ntags: beta\n---\n# Beta\n## #HeadingTag in a heading\n"
        "Links [[Home|home page]] and [[Project Alpha]].\n"
    ),
    "Projects/Sub/Deep Note.md": (
        "---\ncreated: 2023-12-31T23:59:00Z\n---\n# Deep\nLinks [[Beta]].\n#projects/deep\n"
    ),
    "People/Ann.md": "---\ncreated: 2024/03/04\n---\n# Ann\n[[Home]] [[Café Ünïcode#Café]]\n",
    "Daily Notes/2024-01-05.md": "# 2024-01-05\nMet with [[People/Ann]]. #meeting\n",
    ".obsidian/workspace.md": "# config\n#hidden-tag [[Home]]\n",
    ".trash/Old.md": "# Old\n[[Home]] #trashtag\n",
}
for i in range(21):
    NOTES[f"Projects/Note {i:02d}.md"] = (
        f'---\ndate: 2024-0{1 + i % 9}-1{i % 10}\ntags: ["gen", "n{i}"]\n---\n# Note {i}\n'
        f"Links to [[Project Alpha]] and [[Note {(i + 1) % 21:02d}]]. #series\n"
    )


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.fixture
def app(make_app: Any) -> Any:
    app = make_app(model=None)
    for rel, text in NOTES.items():
        (app.cfg.workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (app.cfg.workspace / rel).write_text(text, encoding="utf-8")
    assert app.indexer.reconcile().errors == []
    return app


def paths(app: Any, **filters: Any) -> set[str]:
    f = Filters(kind="chunk", **filters)
    rows = app.store.read(lambda con: list_entries(con, f, now=0, limit=500, offset=0)[0])
    return {r["path"] for r in rows}


def test_dot_folders_are_not_indexed(app: Any) -> None:
    assert (app.cfg.workspace / ".obsidian" / "workspace.md").exists()  # there, not indexed
    everything = paths(app)
    assert len(everything) == 28
    assert not any(p.startswith((".obsidian/", ".trash/")) for p in everything)
    assert paths(app, tags=("hidden-tag",)) == paths(app, tags=("trashtag",)) == set()


@pytest.mark.parametrize(
    ("tag", "where"),
    [
        ("debugging", {"Project Alpha.md"}),
        ("débogage", {"Home.md"}),
        ("multi-word-tag", {"Home.md"}),
        ("ünïcode-tag", {"Café Ünïcode.md"}),
        ("nested", {"Café Ünïcode.md"}),
        ("nested/child/leaf", {"Café Ünïcode.md"}),
        ("alpha-1", {"Project Alpha.md"}),
        ("beta", {"Projects/Beta.md"}),
        ("headingtag", {"Projects/Beta.md"}),  # Obsidian counts a #tag in heading text
        ("projects/deep", {"Projects/Sub/Deep Note.md"}),
        ("notatag", set()),
        ("codetag", set()),
    ],
)
def test_tags(app: Any, tag: str, where: set[str]) -> None:
    assert paths(app, tags=(tag,)) == where
    assert len(paths(app, tags=("series",))) == 21


def test_links_of_every_form(app: Any) -> None:
    out = vault.links(app.store, "Home.md")["links"]
    assert [(x["target"], x["path"], x["heading"], x["alias"]) for x in out] == [
        ("Project Alpha", "Project Alpha.md", None, None),
        ("Café Ünïcode", "Café Ünïcode.md", None, None),
        ("Project Alpha.md", "Project Alpha.md", None, None),
        ("Projects/Sub/Deep Note", "Projects/Sub/Deep Note.md", None, None),
        ("Missing Note", None, None, None),
        ("Project Alpha", "Project Alpha.md", "Goals", "the goals"),
        ("diagram.png", None, None, None),  # wikilinks first, then markdown links, a line
        ("Projects/Beta.md", "Projects/Beta.md", None, "link"),
    ]
    alpha = vault.links(app.store, "Project Alpha.md")["links"]
    assert alpha == []  # the ones in code do not count


def test_backlinks_by_path_or_name(app: Any) -> None:
    def back(path: str) -> list[tuple[str, int]]:
        return [(b["path"], b["line"]) for b in vault.backlinks(app.store, path)["backlinks"]]

    assert back("Café Ünïcode.md") == [("Home.md", 2), ("People/Ann.md", 5)]
    assert back("Home") == [
        ("Café Ünïcode.md", 8),
        ("People/Ann.md", 5),
        ("Projects/Beta.md", 7),
    ]  # the links in .obsidian/ and .trash/ do not count
    assert [p for p, _ in back("Project Alpha.md")].count("Home.md") == 3
    assert len(back("Project Alpha.md")) == 3 + 1 + 21
    assert back("Projects/Beta.md") == [("Home.md", 3), ("Projects/Sub/Deep Note.md", 5)]


def test_dates_in_front_matter_drive_since_and_until(app: Any) -> None:
    created = {
        r["path"]: r["created_at"]
        for r in app.store.read(
            lambda con: list_entries(con, Filters(kind="chunk"), now=0, limit=500, offset=0)[0]
        )
    }
    assert created["Project Alpha.md"] == "2024-01-05T14:30:00Z"  # 'YYYY-MM-DD HH:MM'
    assert created["Café Ünïcode.md"] == "2024-02-10T00:00:00Z"  # a date only
    assert created["Projects/Sub/Deep Note.md"] == "2023-12-31T23:59:00Z"
    assert (
        created["Daily Notes/2024-01-05.md"] == "2024-01-05T00:00:00Z"
    )  # its name, no front matter
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    for unparsed in ("Projects/Beta.md", "People/Ann.md"):  # 'not-a-date', '2024/03/04'
        assert created[unparsed].startswith(today), unparsed  # the file's own time instead
    assert paths(app, until=ts("2024-01-01")) == {"Projects/Sub/Deep Note.md"}
    assert paths(app, since=ts("2024-01-05T14:30:00"), until=ts("2024-01-05T14:31:00")) == {
        "Project Alpha.md"
    }
    february = paths(app, since=ts("2024-02-01"), until=ts("2024-03-01"))
    assert february == {
        "Café Ünïcode.md",
        "Projects/Note 01.md",
        "Projects/Note 10.md",
        "Projects/Note 19.md",
    }


def test_aliases_as_a_string_and_a_list_are_searchable(app: Any) -> None:
    from memoryd.search.searcher import SearchRequest

    def found(query: str) -> list[str]:
        res = app.searcher.search(SearchRequest(query=query, mode="keyword", record_access=False))
        return [h["path"] for h in res["hits"]]

    assert found("Kaffee") == ["Café Ünïcode.md"]
    assert found("PA")[:1] == ["Project Alpha.md"]
