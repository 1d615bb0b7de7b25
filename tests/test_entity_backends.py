"""The entity doors answer the same on both backends where the rows are the same: which chunk's
line a note's source shows when its chunks tie, which relations make the cut when their counts
tie, and (on a store several daemons share) one mention count for an entity whichever door is
asked: the page, `entities`, `related` and `search` with `kind: "entity"`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest import with_notes

from memoryd.serve import methods as api

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def test_a_note_whose_chunks_tie_shows_its_last_mentioning_chunk(make_app: Any) -> None:
    sections = "\n\n".join(
        f"## Part {i}\n\nMaya Chen reviewed part {i} of the rollout plan with care.\n\n"
        + "More words about the rollout and its checks follow here. " * 30
        for i in range(1, 5)
    )
    app = with_notes(make_app(model=None), {"team/plan.md": f"# Plan\n\n{sections}\n"})
    chunks = call(app, "stats")["chunks"]
    assert chunks >= 4  # the sections are chunks of their own
    page = call(app, "entity", name="Maya Chen")
    (source,) = page["sources"]
    assert source["mentions"] == 4
    assert source["heading"] == "Plan > Part 4", source
    assert "part 4" in source["text"]


def test_relations_that_tie_at_the_cut_are_picked_by_mentions(make_app: Any) -> None:
    app = make_app(model=None)
    # 19 tags and #hub: the most entities one entry pairs (store/entitypairs.py, PAIRED)
    tags = [f"#topic{i:02d}" for i in range(1, 20)]
    call(app, "add", content="The hub note #hub links " + " ".join(tags))
    # the first topics are mentioned more often elsewhere: topic01 most, then topic02, ...
    # (SQLite walks its index's ties from the other end, PostgreSQL in no set order)
    for i in range(1, 11):
        for k in range(11 - i):
            call(app, "add", content=f"Another note {k} about #topic{i:02d} alone")
    page = call(app, "entity", name="#hub")
    top = [r["name"] for r in page["relations"]]
    assert top == [f"#topic{i:02d}" for i in range(1, 11)], top
    assert all(r["together"] == 1 for r in page["relations"])
    related = call(app, "related", name="#hub", top=5)
    assert [n["name"] for n in related["nodes"][1:]] == top[:5]


def test_one_mention_count_for_an_entity_at_every_door_of_a_shared_store(
    team: Callable[[str], Any], backend: str
) -> None:
    if backend != "postgres":
        pytest.skip("several daemons share a PostgreSQL store")
    alice, bob = team("alice"), team("bob")
    with_notes(alice, {"a.md": "# A\n\nPriya Raman runs the deploys.\n"})
    with_notes(bob, {"b.md": "# B\n\nPriya Raman owns billing.\n\nPriya Raman said so.\n"})
    for app in (alice, bob):
        page = call(app, "entity", name="Priya Raman")
        listed = {e["name"]: e["mentions"] for e in call(app, "entities", top=100)["entities"]}
        found = call(app, "search", query="Priya Raman", kind="entity")["hits"][0]
        root = call(app, "related", name="Priya Raman")["nodes"][0]
        counts = [page["mentions"], listed["Priya Raman"], found["mentions"], root["mentions"]]
        assert counts == [3, 3, 3, 3], counts
        # the sources are this daemon's notes only
        assert len(page["sources"]) == 1
