"""The entity page keeps to its token budget (stop 35, walk a): `about` with max_tokens 50 answered
245 tokens, since only the sources were cut and the relations always came whole. Now the weakest
relations go first when the page is over the budget before any source (`relations_cut`), and
the page is within max_tokens but for the name's own fields and its first source, which always
come. Both backends: the page reads the store."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import with_notes

from memoryd.agents.entitytools import fmt_about
from memoryd.search import entities
from memoryd.text.markdown import estimate_tokens

pytestmark = pytest.mark.backends

PEOPLE = ["Ann Lee", "Bob Stone", "Cleo Park", "Dan Wu", "Eva Roth", "Finn Ode", "Gil Amar"]


@pytest.fixture
def app(make_app: Any) -> Any:
    notes = {
        f"n{i}.md": f"# Meeting {i}\n\nbilling-svc was discussed with {p} and {q}.\n"
        for i, (p, q) in enumerate(zip(PEOPLE, PEOPLE[1:] + PEOPLE[:1], strict=True))
    }
    return with_notes(make_app(model=None), notes)


@pytest.mark.parametrize("budget", [50, 80, 120, 200, 400, 1000])
def test_the_page_is_within_its_budget_but_for_the_first_source(app: Any, budget: int) -> None:
    page = entities.page(app.store, "billing-svc", max_tokens=budget)
    first = page["sources"][0]
    floor = estimate_tokens(json.dumps(first, ensure_ascii=False))
    if page["tokens_used"] > budget + floor:  # the name's own fields alone are over it
        assert page["relations"] == [] and len(page["sources"]) == 1, page
    whole = entities.page(app.store, "billing-svc", max_tokens=10_000)
    if page.get("relations_cut"):
        assert len(page["relations"]) < len(whole["relations"])
        assert page["relations"] == whole["relations"][: len(page["relations"])]  # strongest kept
        assert "more (raise max_tokens" in fmt_about(page)
    else:
        assert page["relations"] == whole["relations"]
    assert entities.page(app.store, "billing-svc", max_tokens=50).get("relations_cut")
