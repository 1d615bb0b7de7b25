"""Obsidian vaults (issue 13.3): inline tags, front matter tags/aliases/dates, links and
backlinks, dot folders, on a fixture vault with the usual quirks."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import migrations_before, wait_for
from work import cpu_seconds

from memoryd.core.errors import InvalidInput, NotFound
from memoryd.notes import vault
from memoryd.search.searcher import SearchRequest
from memoryd.store.entries import Filters, list_entries
from memoryd.text import obsidian
from memoryd.text.obsidian import Link, Resolver

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

VAULT = Path(__file__).parent / "fixtures" / "vault"


def ts(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


# --- pure extraction -------------------------------------------------------------------------


def test_inline_tags_skip_code_numbers_urls_and_entities() -> None:
    body = (VAULT / "Home.md").read_text().split("---\n", 2)[2]
    assert obsidian.inline_tags(body) == ("debugging", "tools/cli/git")
    assert obsidian.inline_tags("#a #1984 #y1984 #_x x#y (#z) #w/ #ä漢字") == (
        "a",
        "y1984",
        "_x",
        "w",
        "ä漢字",
    )
    assert obsidian.expand_tags(["Tools/CLI/git", "#tools", "work"]) == (
        "tools/cli/git",
        "tools",
        "work",
        "tools/cli",
    )


def test_links_all_forms_and_none_from_code() -> None:
    body = (VAULT / "Home.md").read_text().split("---\n", 2)[2]
    found = obsidian.links(body, first_line=6)
    assert [(x.target, x.heading, x.alias, x.embed, x.kind, x.line) for x in found] == [
        ("Project Plan", None, None, False, "wiki", 8),
        ("Project Plan", None, "the plan", False, "wiki", 8),
        ("Project Plan", "Milestones", None, False, "wiki", 9),
        ("diagram.png", None, None, True, "wiki", 9),
        ("work/Meeting Notes.md", None, "meeting", False, "markdown", 10),
        ("Missing Note", None, None, False, "wiki", 11),
    ]
    table = obsidian.links("| [[a\\|b]] | [x](<sp ace.md#h>) [y](https://h/x.md) [z](#h)")
    assert [(x.target, x.heading, x.alias) for x in table] == [
        ("a", None, "b"),
        ("sp ace.md", "h", "x"),
    ]


def test_extraction_is_linear_on_hostile_lines() -> None:
    def extract(line: str) -> None:
        obsidian.links(line)
        obsidian.inline_tags(line)

    # regular expressions, whose backtracking no call count sees: the CPU time of this thread
    # (tests/work.py; a busy machine does not add to it), measured at 0.05 to 0.2 s each
    for line in ("[[a " * 50_000, "[a](" * 50_000, "`a " * 60_000, "``a` " * 40_000):
        took, _ = cpu_seconds(extract, line)
        assert took < 2, (line[:10], took)
    assert obsidian.mask_code("a `b` c ``d`e`` f ` g") == "a     c         f ` g"


def test_title_from_front_matter_heading_or_name() -> None:
    assert obsidian.title("T", "# H\n", "a/b.md") == "T"
    assert obsidian.title(None, "```\n# not\n```\ntext\n# Real  \n", "a/b.md") == "Real"
    assert obsidian.title(None, "## only h2\n", "a/My Note.md") == "My Note"


def test_resolver_is_obsidian_like() -> None:
    r = Resolver(
        ["Home.md", "work/Meeting Notes.md", "archive/Meeting Notes.md", "work/Project Plan.md"]
    )

    def wiki(target: str, source: str = "Home.md") -> str | None:
        return r.resolve(Link(target, None, None, 1, False, "wiki"), source)

    assert wiki("project plan") == "work/Project Plan.md"  # case-insensitive, by name
    assert wiki("Project Plan.md") == "work/Project Plan.md"
    assert wiki("Meeting Notes") == "work/Meeting Notes.md"  # shortest path
    assert wiki("Meeting Notes", "archive/x.md") == "archive/Meeting Notes.md"  # same folder
    assert wiki("archive/Meeting Notes") == "archive/Meeting Notes.md"  # partial path
    assert wiki("chive/Meeting Notes") is None
    assert wiki("") == "Home.md"  # [[#heading]]
    assert wiki("Nope") is None
    md = Link("../Home.md", None, None, 1, False, "markdown")
    assert r.resolve(md, "work/Meeting Notes.md") == "Home.md"
    assert r.resolve(Link("../../x.md", None, None, 1, False, "markdown"), "Home.md") is None
    # the "relative path to file" link format, in wikilinks too
    assert wiki("../Home", "work/Meeting Notes.md") == "Home.md"
    assert wiki("../archive/meeting notes", "work/Project Plan.md") == "archive/Meeting Notes.md"
    assert wiki("./Project Plan", "work/Meeting Notes.md") == "work/Project Plan.md"
    assert wiki("../Home") is None  # above the vault


# --- the fixture vault, indexed --------------------------------------------------------------


@pytest.fixture
def vault_app(make_app: Any) -> Any:
    app = make_app(model=None)
    shutil.copytree(VAULT, app.cfg.workspace, dirs_exist_ok=True)
    report = app.indexer.reconcile()
    assert report.errors == []
    return app


def chunks(app: Any, **filters: Any) -> list[dict[str, Any]]:
    f = Filters(kind="chunk", **filters)
    return app.store.read(lambda con: list_entries(con, f, now=0, limit=100, offset=0)[0])


def test_vault_dot_folders_are_excluded(vault_app: Any) -> None:
    paths = {c["path"] for c in chunks(vault_app)}
    assert paths == {
        "Home.md",
        "work/Project Plan.md",
        "work/Meeting Notes.md",
        "archive/Meeting Notes.md",
        "notes/Plain note.md",
    }
    res = vault_app.searcher.search(
        SearchRequest(query="hyperdrive", mode="keyword", record_access=False)
    )
    assert res["hits"] == []


def test_vault_tags_from_front_matter_and_text(vault_app: Any) -> None:
    def tagged(tag: str) -> set[str]:
        return {c["path"] for c in chunks(vault_app, tags=(tag,))}

    assert tagged("debugging") == {"Home.md"}
    assert tagged("tools/cli/git") == tagged("tools") == {"Home.md"}  # nested, and its parent
    assert tagged("projects/active") == tagged("projects") == {"Home.md"}  # front matter list
    assert tagged("planning") == tagged("work") == {"work/Project Plan.md"}  # as a string
    assert tagged("milestone") == {"work/Project Plan.md"}
    assert tagged("meeting") == {"work/Meeting Notes.md"}
    for never in ("notatag", "nope", "123", "anchor", "35"):
        assert tagged(never) == set(), never


def test_vault_aliases_are_searchable(vault_app: Any) -> None:
    res = vault_app.searcher.search(
        SearchRequest(query="dashboard", mode="keyword", record_access=False)
    )
    assert [h["path"] for h in res["hits"]] == ["Home.md"]


def test_vault_front_matter_dates_drive_filters(vault_app: Any) -> None:
    home = chunks(vault_app, path_prefix="Home.md")
    assert {c["created_at"] for c in home} == {"2023-05-01T00:00:00Z"}
    plan = chunks(vault_app, path_prefix="work/Project Plan.md")
    assert {c["created_at"] for c in plan} == {"2024-01-15T00:00:00Z"}
    assert {c["updated_at"] for c in plan} == {"2024-01-15T00:00:00Z"}  # recency too
    old = {c["path"] for c in chunks(vault_app, until=ts("2024-01-01"))}
    assert old == {"Home.md"}
    early_2024 = {
        c["path"] for c in chunks(vault_app, since=ts("2024-01-01"), until=ts("2024-02-01"))
    }
    assert early_2024 == {"work/Project Plan.md"}


def test_vault_links_and_backlinks(vault_app: Any) -> None:
    out = vault.links(vault_app.store, "Home.md")
    assert out["path"] == "Home.md"
    assert [
        (x["target"], x["path"], x["heading"], x["alias"], x["line"]) for x in out["links"]
    ] == [
        ("Project Plan", "work/Project Plan.md", None, None, 8),
        ("Project Plan", "work/Project Plan.md", None, "the plan", 8),
        ("Project Plan", "work/Project Plan.md", "Milestones", None, 9),
        ("diagram.png", None, None, None, 9),
        ("work/Meeting Notes.md", "work/Meeting Notes.md", None, "meeting", 10),
        ("Missing Note", None, None, None, 11),
    ]
    back = vault.backlinks(vault_app.store, "work/Project Plan.md")
    assert [(b["path"], b["line"], b["heading"], b["alias"]) for b in back["backlinks"]] == [
        ("Home.md", 8, None, None),
        ("Home.md", 8, None, "the plan"),
        ("Home.md", 9, "Milestones", None),
        ("work/Meeting Notes.md", 3, None, "the project plan"),
    ]
    back = vault.backlinks(vault_app.store, "work/Meeting Notes.md")
    assert [b["path"] for b in back["backlinks"]] == [
        "Home.md",
        "notes/Plain note.md",
        "notes/Plain note.md",
        "work/Project Plan.md",
    ]
    back = vault.backlinks(vault_app.store, "archive/Meeting Notes.md")
    assert [(b["path"], b["heading"]) for b in back["backlinks"]] == [
        ("archive/Meeting Notes.md", "Old"),
        ("archive/Meeting Notes.md", "Old"),
    ]
    # a name works where a path is expected; the trashed note's link does not count
    assert vault.backlinks(vault_app.store, "home")["path"] == "Home.md"
    assert [b["path"] for b in vault.backlinks(vault_app.store, "Home")["backlinks"]] == [
        "work/Meeting Notes.md",
        "work/Project Plan.md",
    ]
    with pytest.raises(NotFound):
        vault.links(vault_app.store, "Missing Note")
    with pytest.raises(InvalidInput):
        vault.links(vault_app.store, "bad\udcff")


def test_links_follow_edits_and_new_notes(vault_app: Any) -> None:
    ws = vault_app.cfg.workspace
    (ws / "Missing Note.md").write_text("# Now it exists\n")
    vault_app.indexer.reconcile()
    out = vault.links(vault_app.store, "Home.md")
    assert out["links"][-1]["path"] == "Missing Note.md"  # resolved when asked
    assert [b["path"] for b in vault.backlinks(vault_app.store, "Missing Note")["backlinks"]] == [
        "Home.md"
    ]
    (ws / "Home.md").write_text("# Home\n\nno links any more\n")
    vault_app.indexer.reconcile()
    assert vault.links(vault_app.store, "Home.md")["links"] == []
    (ws / "work" / "Meeting Notes.md").unlink()
    vault_app.indexer.reconcile()
    assert vault.backlinks(vault_app.store, "work/Project Plan.md")["backlinks"] == []


def test_links_and_backlinks_over_the_socket(daemon_factory: Any, config_dict: dict) -> None:
    shutil.copytree(VAULT, config_dict["workspace"])
    d = daemon_factory()
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"], timeout=30)
    back = d.call("backlinks", {"path": "work/Project Plan.md"})
    assert back["path"] == "work/Project Plan.md" and len(back["backlinks"]) == 4
    assert set(back["backlinks"][0]) >= {"path", "line", "heading", "alias"}
    links = d.call("links", {"path": "Home.md"})["links"]
    assert set(links[0]) >= {"target", "path", "heading", "alias", "line"}
    from conftest import rpc

    err = rpc(d.socket, "links", {"path": "nowhere.md"})["error"]
    assert err["code"] == -32004 and "nowhere.md" in err["message"]
    err = rpc(d.socket, "backlinks", {})["error"]
    assert err["code"] == -32602


@pytest.mark.sqlite_only("migration m005 of the SQLite schema")
def test_m005_upgrades_an_index_and_reindexes_every_note(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.store import migrations

    # an index built before m005: old chunking, no links, file mtimes as creation times
    migrations_before(monkeypatch, migrations, migrations.m005_links)
    app = make_app(model=None)
    shutil.copytree(VAULT, app.cfg.workspace, dirs_exist_ok=True)
    app.indexer.reconcile()
    db_path = app.cfg.db_path
    app.close()
    monkeypatch.undo()
    app = make_app(model=None)
    assert app.cfg.db_path == db_path
    report = app.indexer.reconcile()
    assert report.indexed == 5 and report.errors == []
    assert len(vault.links(app.store, "Home.md")["links"]) == 6
    assert {c["path"] for c in chunks(app, tags=("debugging",))} == {"Home.md"}


@pytest.mark.parametrize("named", ["NFC", "NFD"])  # the file's name: Linux, or a Mac's
@pytest.mark.parametrize("written", ["NFC", "NFD"])  # the names typed in links and requests
def test_names_match_across_unicode_normal_forms(make_app: Any, named: str, written: str) -> None:
    """`Café Plan` typed (NFC) is the note a Mac named `Café Plan.md` (NFD), and the other way
    round: links, backlinks, the graph and a note asked for by name all find it, as do an
    attachment's links."""
    import unicodedata

    def form(kind: str, text: str) -> str:
        return unicodedata.normalize(kind, text)  # type: ignore[arg-type]

    app = make_app(model=None)
    ws = app.cfg.workspace
    note = form(named, "Café Plan.md")
    picture = form(named, "naïve.png")
    (ws / note).write_text("# Plan\n\nquokka\n")
    (ws / picture).write_bytes(b"\x89PNG\r\n\x1a\n")
    link, typed = form(written, "Café Plan"), form(written, "naïve.png")
    (ws / "home.md").write_text(f"# Home\n\n[[{link}]] and ![[{typed}]] and [[{link}|the plan]]\n")
    app.indexer.reconcile()
    files = app.indexer.others.snapshot()
    out = vault.links(app.store, "home.md", files)
    assert [x["path"] for x in out["links"]] == [note, picture, note]
    for asked in (link, form(written, "Café Plan.md")):
        back = vault.backlinks(app.store, asked, files)
        assert back["path"] == note and [b["path"] for b in back["backlinks"]] == ["home.md"] * 2
    assert [b["path"] for b in vault.backlinks(app.store, typed, files)["backlinks"]] == ["home.md"]
    graph = vault.neighbourhood(app.store, link, files)
    assert graph["center"] == note
    assert {n["id"] for n in graph["nodes"]} == {note, "home.md", picture}


def test_the_graph_walks_links_not_every_heading_link(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A note's own [[#heading]] links are no edges of the graph, and it does not read them:
    per node walked, the vault's every one of them cost 8 s at depth 3 on 3,000 notes."""
    app = make_app(model=None)
    ws = app.cfg.workspace
    (ws / "a.md").write_text("# A\n\n[[#Part]] and [[b]]\n\n## Part\n\nx\n")
    (ws / "b.md").write_text("# B\n\n[[#Y]] and [[a]] and [[c#Z]]\n\n## Y\n\ny\n")
    (ws / "c.md").write_text("# C\n\n## Z\n\n[[#Z]]\n")
    app.indexer.reconcile()
    asked: list[list[str]] = []
    real = vault.store_links.links_named

    def links_named(con: Any, keys: Any) -> Any:
        asked.append(list(keys))
        return real(con, keys)

    monkeypatch.setattr(vault.store_links, "links_named", links_named)
    graph = vault.neighbourhood(app.store, "a.md", app.indexer.others.snapshot(), depth=3)
    assert {n["id"] for n in graph["nodes"]} == {"a.md", "b.md", "c.md"}
    assert {(e["source"], e["target"]) for e in graph["edges"]} == {
        ("a.md", "b.md"),
        ("b.md", "a.md"),
        ("b.md", "c.md"),
    }
    assert asked and not any("" in keys for keys in asked)


@pytest.mark.parametrize("written", ["NFC", "NFD"])
@pytest.mark.parametrize(
    "door",
    ["search path", "list path", "note.list", "reindex", "delete path", "note.read", "backlinks"],
)
def test_every_door_taking_a_path_finds_it_in_either_unicode_form(
    make_app: Any, written: str, door: str
) -> None:
    """A folder a Mac named `Été` (NFD) answers every door that takes a workspace path when
    `Été` is typed composed (NFC), as the note.* methods already did."""
    import unicodedata

    from memoryd.serve import methods as api

    def call(name: str, **params: Any) -> Any:
        return api.lookup(name, params).fn(app, params)

    app = make_app(model=None)
    ws = app.cfg.workspace
    folder = unicodedata.normalize("NFD", "Été")
    (ws / folder).mkdir()
    (ws / folder / "plan.md").write_text("# Plan\n\nquokka\n")
    (ws / "other.md").write_text("# Other\n\nquokka [[plan]]\n")
    app.indexer.reconcile()
    typed = unicodedata.normalize(written, "Été")  # type: ignore[arg-type]
    note = f"{folder}/plan.md"
    if door == "search path":
        res = call("search", query="quokka", mode="keyword", path=typed)
        assert [h["path"] for h in res["hits"]] == [note]
    elif door == "list path":
        assert [x["path"] for x in call("list", kind="chunk", path=typed)["items"]] == [note]
    elif door == "note.list":
        assert [x["path"] for x in call("note.list", path=typed)["items"]] == [note]
    elif door == "reindex":
        (ws / note).write_text("# Plan\n\nnumbat\n")
        assert call("reindex", path=f"{typed}/plan.md")["indexed"] == 1
    elif door == "delete path":
        assert call("delete", path=typed, dry_run=True)["paths"] == [note]
    elif door == "note.read":
        assert call("note.read", path=f"{typed}/plan.md")["path"] == note
    else:
        assert call("backlinks", path=f"{typed}/plan.md")["path"] == note


def test_a_note_of_front_matter_only_is_found_by_its_aliases_tags_and_values(
    make_app: Any,
) -> None:
    """A note that is all properties (a person, a map of notes) had no chunk: its aliases,
    tags and values were found nowhere (search, list --tags), though README says aliases are
    searchable. Its front matter is now its one chunk."""
    app = make_app(model=None)
    ws = app.cfg.workspace
    (ws / "people").mkdir()
    (ws / "people" / "zed.md").write_text(
        "---\naliases: [Zorblaxian]\ntags: [person]\ncompany: Acmecorp\n---\n"
    )
    (ws / "empty.md").write_text("")
    (ws / "blank fm.md").write_text("---\n---\n")
    app.indexer.reconcile()
    for query in ("Zorblaxian", "Acmecorp"):
        res = app.searcher.search(SearchRequest(query=query, mode="keyword", record_access=False))
        assert [h["path"] for h in res["hits"]] == ["people/zed.md"], query
    found = chunks(app, tags=("person",))
    assert [(c["path"], c["start_line"], c["end_line"]) for c in found] == [("people/zed.md", 1, 5)]
    assert [c["path"] for c in chunks(app)] == ["people/zed.md"]  # empty notes make none
