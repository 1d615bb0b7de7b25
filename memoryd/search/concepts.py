"""Concept search (`concepts: [...]` in a search request): the entries that match every one of
2 to 5 concepts, by keywords or, when there is a model, by meaning, ranked by their summed
reciprocal ranks. The searcher passes its pools and its finishing step (searcher.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from memoryd.search.ftsquery import parse_query
from memoryd.search.ranking import Candidate, Scale, rrf
from memoryd.search.request import SearchRequest
from memoryd.store.entries import filter_sql
from memoryd.store.protocol import Connection

KeywordPool = Callable[[Connection, str, str, list[Any], int], list[Candidate]]
VectorPool = Callable[[Connection, np.ndarray, Any, float, int], tuple[list[Candidate], Scale]]
Finish = Callable[[list[Candidate], str], list[dict[str, Any]]]


def answer(
    con: Connection,
    req: SearchRequest,
    vecs: Sequence[np.ndarray | None],
    now: float,
    size: int,
    rrf_k: int,
    pools: tuple[KeywordPool, VectorPool],
    finish: Finish,
) -> dict[str, Any]:
    """The response to a concept search: each concept's pool (its keyword matches, then its
    neighbours at or above the model's floor), the entries in every pool, fused by RRF."""
    keyword_pool, vector_pool = pools
    where, params = filter_sql(req.filters, now)
    found: list[list[int]] = []
    used_vectors = False
    for concept, vec in zip(req.concepts or [], vecs, strict=True):
        parsed = parse_query(concept)
        ids: list[int] = []
        if parsed.match:
            ids = [c.id for c in keyword_pool(con, parsed.match, where, params, size)]
        if vec is not None:
            near, scale = vector_pool(con, vec, req.filters, now, size)
            close = [c.id for c in near if (c.similarity or 0) >= scale[0]]
            used_vectors = used_vectors or bool(close)
            ids += [i for i in close if i not in set(ids)]
        found.append(ids)
    common = set(found[0]).intersection(*map(set, found[1:])) if found else set()
    scores = rrf([[i for i in p if i in common] for p in found], rrf_k)
    best = len(found) / (rrf_k + 1)
    candidates = [
        Candidate(id=i, fused=v, components={"relevance": v / best}) for i, v in scores.items()
    ]
    mode = "hybrid" if used_vectors else "keyword"
    return {
        "query": " + ".join(req.concepts or []),
        "concepts": list(req.concepts or []),
        "mode": mode,
        "hits": finish(candidates, mode),
    }
