"""search/ranking.py: `relevance` gives `scorer`'s value and parts, to the last bit, for
every kind of candidate (keyword only, vector only, both, partial, with or without coverage,
no BM25 norm) under both fusions and any weights, scale and coverage power."""

from __future__ import annotations

import dataclasses
import random

import pytest

from memoryd.core.sections import SearchConfig
from memoryd.search.ranking import Candidate, Scale, relevance, scorer


def _candidates(rng: random.Random, n: int) -> list[Candidate]:
    out = []
    for i in range(n):
        keyword, vector = rng.random() < 0.7, rng.random() < 0.6
        out.append(
            Candidate(
                id=i,
                keyword_rank=rng.randint(1, 400) if keyword else None,
                bm25=-rng.uniform(0.1, 30.0) if keyword else None,
                partial=rng.random() < 0.2,
                vector_rank=rng.randint(1, 400) if vector else None,
                similarity=rng.uniform(-0.2, 1.0) if vector else None,
                coverage=rng.choice([None, 0.0, 1.0, rng.random()]),
            )
        )
    return out


@pytest.mark.parametrize("fusion", ["weighted", "rrf"])
def test_scorer_is_relevance(fusion: str) -> None:
    rng = random.Random(7)
    for _ in range(30):
        s = dataclasses.replace(
            SearchConfig(),
            fusion=fusion,
            keyword_weight=rng.choice([0.0, 0.6, rng.uniform(0, 3)]),
            vector_weight=rng.choice([0.0, 0.4, rng.uniform(0, 3)]),
            partial_match_weight=rng.random(),
            rrf_k=rng.randint(1, 100),
        )
        floor = rng.uniform(0.0, 0.6)
        scale = Scale(floor, floor + rng.uniform(0.05, 0.5), floor)
        power = rng.choice([0.0, 3.0, rng.uniform(0, 5)])
        best = rng.choice([None, 0.0, -rng.uniform(5, 40)])
        score = scorer(s, scale, power)
        for c in _candidates(rng, 60):
            value, parts = relevance(c, s, scale, best, power)
            assert score(c, best) == (value, parts["keyword"], parts["vector"])
