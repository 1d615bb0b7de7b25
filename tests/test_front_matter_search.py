"""A note's front-matter values are found by a keyword search, as rg finds them in the file
(stop 38, fm13): every kind of value (a word, a name, a list, a nested mapping, a date, a
number as written, a quoted or block text, a `title` the note's own heading hides), in every
mode, on both backends; the keys, yes/no flags and empty values are not words of the note. The
chunks' text, snippets, line numbers, vectors and the `tags` filter stay what they were."""

from __future__ import annotations

from typing import Any

import pytest

from memoryd.serve import methods as api
from memoryd.text import markdown, notehead

pytestmark = pytest.mark.backends

FRONT = """---
status: draft
project: [kestrel, osprey]
author: Ana Lima
due: 2026-12-01
version: 1.10
client:
  name: Harbourside
  contacts:
    - Wenceslas Okoro
summary: "Migrate the ledger to the quarry cluster"
notes: |
  first line
  carillon rehearsal
title: Tidewater plan
tags: [billing]
published: true
reviewer:
---
# Plan

We move the accounts in spring.

## Steps

Book the movers first.
"""
OTHER = "# Other\n\nA note about the accounts and the movers, nothing else.\n"

# (query, what it stands for): each finds FRONT's note, as `rg -i -w -F` finds its file
FOUND = [
    ("draft", "a word"),
    ("osprey", "a list's item"),
    ("Ana Lima", "a name"),
    ('"Ana Lima"', "a name, quoted"),
    ("2026-12-01", "a date as written"),
    ('"1.10"', "a number as written (YAML reads 1.1)"),
    ("harbourside", "a nested mapping's value"),
    ("Okoro", "a list inside a nested mapping"),
    ("quarry", "a quoted text"),
    ("carillon", "a block text"),
    ("tidewater", "a title the note's own heading hides"),
    ("billing", "a tag (as before)"),
    ("kestrel spring", "a value and a word of the body"),
]
# the keys, a flag's value, an empty one: not words of the note
NOT_FOUND = ["status", "reviewer", "published", "true"]


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def paths(app: Any, query: str, **params: Any) -> list[str]:
    hits = call(app, "search", query=query, limit=10, **params)["hits"]
    return [h["path"] for h in hits]


@pytest.fixture
def app(make_app: Any) -> Any:
    from conftest import settle, with_notes

    a = with_notes(make_app(), {"plan.md": FRONT, "other.md": OTHER})
    settle(a)
    return a


@pytest.mark.parametrize(("query", "kind"), FOUND, ids=[k for _, k in FOUND])
@pytest.mark.parametrize("mode", ["keyword", "auto", "hybrid"])
def test_every_kind_of_value_is_found(app: Any, query: str, kind: str, mode: str) -> None:
    assert "plan.md" in paths(app, query, mode=mode), kind


@pytest.mark.parametrize("query", NOT_FOUND)
def test_keys_flags_and_empty_values_are_not_words(app: Any, query: str) -> None:
    assert paths(app, query, mode="keyword") == []


def test_the_hit_shows_the_body_as_before(app: Any) -> None:
    """Text, snippet, heading and lines are the body's; the values are in no chunk's text."""
    (hit,) = call(app, "search", query="osprey", mode="keyword", group="none", limit=1)["hits"]
    assert hit["path"] == "plan.md" and hit["start_line"] >= 20
    assert "osprey" not in hit["snippet"] and "status" not in hit["snippet"]
    both = call(app, "search", query="osprey spring", mode="keyword", group="none")["hits"]
    assert both[0]["heading_path"] == ["Plan"] and "spring" in both[0]["snippet"]
    rows = app.store.read(
        lambda con: con.execute("SELECT content FROM entries WHERE kind = 'chunk'").fetchall()
    )
    assert not any("osprey" in r[0] for r in rows)


def test_the_tags_filter_and_the_tags_are_as_before(app: Any) -> None:
    assert paths(app, "accounts", mode="keyword", tags=["billing"]) == ["plan.md"]
    assert paths(app, "accounts", mode="keyword", tags=["draft"]) == []  # a value, not a tag
    hit = call(app, "search", query="draft", mode="keyword")["hits"][0]
    assert hit["tags"] == ["billing"]


def test_a_short_value_is_every_chunks_a_long_one_the_first_ones(make_app: Any) -> None:
    """A short value is a fact about the note, as a tag (every chunk holds it: `osprey steps`
    finds the Steps section); a long one is text, its first chunk's alone (on every chunk, a
    long `description` put every section of its note in the pool of its words)."""
    from conftest import with_notes

    long = "synopsis: the bell ringers meet at the vestry every thursday before the service"
    text = FRONT.replace("---\n# Plan", long + "\n---\n# Plan")
    a = with_notes(make_app(model=None), {"plan.md": text})
    kw = {"mode": "keyword", "group": "none", "limit": 10}
    hits = call(a, "search", query="osprey", **kw)["hits"]
    assert sorted(h["heading_path"] for h in hits) == [["Plan"], ["Plan", "Steps"]]
    hits = call(a, "search", query="vestry", **kw)["hits"]
    assert [h["heading_path"] for h in hits] == [["Plan"]]


def test_an_edit_of_a_value_is_searched_at_once(app: Any) -> None:
    from conftest import write_synced

    write_synced(app, "plan.md", FRONT.replace("status: draft", "status: shipped"))
    assert paths(app, "draft", mode="keyword") == []
    assert paths(app, "shipped", mode="keyword") == ["plan.md"]


def test_a_note_of_front_matter_only_is_found_once(make_app: Any) -> None:
    from conftest import with_notes

    a = with_notes(make_app(model=None), {"person.md": "---\nrole: harpist\n---\n"})
    hits = call(a, "search", query="harpist", mode="keyword", group="none")["hits"]
    assert [h["path"] for h in hits] == ["person.md"]
    assert "harpist" in hits[0]["snippet"]  # its one chunk is the front matter as written


def test_values_text_reads_values_as_written() -> None:
    fm, _, _ = markdown.parse_front_matter(FRONT)
    assert fm.values.split("\n") == [
        "draft",
        "kestrel",
        "osprey",
        "Ana Lima",
        "2026-12-01",
        "1.10",
        "Harbourside",
        "Wenceslas Okoro",
        "Migrate the ledger to the quarry cluster",
        "first line carillon rehearsal",
    ]
    body = FRONT.split("---\n", 2)[2]
    assert notehead.props("plan.md", fm, body) == ("Tidewater plan\n" + fm.values, None)
    # a title that is the heading path's root already is not repeated
    plain = markdown.parse_front_matter("---\ntitle: Cranes\n---\ntext\n")[0]
    assert notehead.props("x.md", plain, "text\n") == (None, None)
    # a long value is text: the first chunk's alone
    about = "a long description of the ledger move, its steps and the people who run it"
    both = markdown.parse_front_matter(f"---\nowner: Bo\nabout: {about}\n---\n")[0]
    assert notehead.props("x.md", both, "") == ("Bo", about)
    long = markdown.parse_front_matter("---\nabout: " + "word " * 2000 + "\n---\n")[0]
    assert len(long.values) <= 4096


def test_an_upgraded_store_finds_its_values(
    make_app: Any, backend: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Schema m015 / v14: notes are read again at the next reconcile; nothing is embedded."""
    from conftest import indexed_by_older, older_store, settle

    store = older_store(
        monkeypatch, request, backend, "m015_front_matter_values", "_v14_front_matter_values"
    )
    indexed_by_older(make_app, store, {"plan.md": FRONT})
    monkeypatch.undo()
    new = make_app(**store)
    assert new.indexer.reconcile().indexed == 1  # read again
    assert paths(new, "osprey", mode="keyword") == ["plan.md"]
    assert paths(new, "spring", mode="keyword") == ["plan.md"]
    settle(new)
    assert new.model.fake.seen == []  # nothing embedded again
