"""The near-duplicate check at add time (search/neardup.py): which memories it names, pinned on
a set of cases on both backends, and its work, counted (tests/work.py), as memories saying
nearly the same accumulate: a walk saw `add` slow down as near-identical memories grew, so the
check must not read, rank or compare every similar memory."""

from __future__ import annotations

from typing import Any

import pytest
from work import calls

pytestmark = pytest.mark.backends

SERIES = "status update {i}: the deploy of the api to production is green and every check passed"
SHORT = "status update {i}: the deploy is green"


def _ready(app: Any) -> Any:
    app.model.start()
    assert app.model.wait_ready(10)
    return app


def _decisions(app: Any, probes: list[tuple[str, str]]) -> list[list[tuple[int, float]]]:
    return [
        [(n["id"], n["similarity"]) for n in app.near_duplicates(text, ns)] for text, ns in probes
    ]


def test_by_words_names_the_same_memories(make_app: Any) -> None:
    """Without a model: keyword matches whose word overlap reaches near_duplicate_overlap."""
    app = make_app(model=None)
    first = app.memories.add("the staging database runs on port 5433").id
    app.memories.add("the staging database runs on port 5433", namespace="other")
    for i in range(3):
        app.memories.add(SHORT.format(i=i))
    series = [app.memories.add(SERIES.format(i=i)).id for i in range(25)]
    found = _decisions(
        app,
        [
            ("the staging database runs on port 5433 now", "default"),
            ("staging database runs on port 5433", "default"),
            ("lunch is at noon", "default"),
            ("the staging database runs on port 5433 now", "nowhere"),
            (SHORT.format(i=99), "default"),  # 6 of 8 words: below 0.8
        ],
    )
    assert found == [[(first, 0.875)], [(first, 0.8571)], [], [], []]
    many = app.near_duplicates(SERIES.format(i=99), "default")
    # at most 20 (the best keyword matches), each sharing all words but the number
    assert len(many) == 20 and {n["id"] for n in many} <= set(series)
    assert {n["similarity"] for n in many} == {0.875}


def test_by_vector_names_the_same_memories(make_app: Any) -> None:
    """With a model: the namespace's memories at least near_duplicate_similarity alike, the
    10 most alike, most alike first."""
    app = _ready(make_app())
    first = app.memories.add("cats sleep most of the day").id
    app.memories.add("cats sleep most of the day", namespace="other")
    app.memories.add("lunch is at noon")
    series = [app.memories.add(SERIES.format(i=i)).id for i in range(25)]
    app.embedder.run()
    found = _decisions(
        app,
        [
            ("cats sleep most of the day!", "default"),
            ("dogs bark at night", "default"),
            ("cats sleep most of the day!", "nowhere"),
        ],
    )
    assert [[i for i, _ in f] for f in found] == [[first], [], []]
    assert found[0][0][1] == pytest.approx(1.0, abs=1e-4)  # float32 here, float8 on PostgreSQL
    many = app.near_duplicates(SERIES.format(i=99), "default")
    assert len(many) == 10 and {n["id"] for n in many} <= set(series)
    sims = [n["similarity"] for n in many]
    assert sims == sorted(sims, reverse=True) and min(sims) >= 0.92


def _filled(app: Any, similar: int, total: int, namespace: str) -> None:
    """`total` memories in `namespace`, `similar` of them saying nearly SERIES."""
    for i in range(total):
        text = SERIES.format(i=i) if i < similar else f"note {i} word{i} thing{i * 7} other{i * 13}"
        app.memories.add(text, namespace=namespace)


@pytest.mark.parametrize("model", [None, "fake"])
def test_the_check_does_not_grow_with_similar_memories(make_app: Any, model: Any) -> None:
    """The same number of memories in two namespaces, 30 of them similar in one, all 240 in
    the other: the check makes the same number of calls in both (it may score every memory of
    the namespace, as numpy or SQL does, but never handles each similar one in Python: the
    best 10 are chosen without a Python call per candidate; by words, 20 keyword matches at
    most are compared)."""
    app = make_app(model=model)
    if model is not None:
        _ready(app)
    _filled(app, 30, 240, "few")
    _filled(app, 240, 240, "many")
    app.embedder.run()
    for ns in ("few", "many"):  # warm: caches read, queries planned
        app.near_duplicates(SERIES.format(i=10_000), ns)
    counts = {}
    for ns in ("few", "many"):
        counts[ns], found = calls(app.near_duplicates, SERIES.format(i=10_000), ns)
        assert len(found) == 10 if model else 20
    # 210 more similar memories: ~420 more calls before (two per similar memory); a few calls
    # apart is the texts' own (a 3-digit number parses a little differently) and the pool's
    assert abs(counts["many"] - counts["few"]) <= 25, counts
