"""`ranking.relevance` for every candidate of one fusion, its settings read once (issue 23.3).

A search at 100K chunks scores ~400 chunks and ~400 notes; `relevance` reads six settings,
builds a dict of its two parts and works out the same shares for each of them (~1 us a call,
~0.8 ms a search). `scorer` takes the settings, the scale and the coverage power once and
returns a function of a candidate and its BM25 norm giving the same three floats, by the same
operations in the same order (tests/test_fusion.py compares them with `relevance` for every
kind of candidate, under both fusions).
"""

from __future__ import annotations

from collections.abc import Callable

from memoryd.search.ranking import Candidate, Scale, SearchSettings

Score = Callable[[Candidate, "float | None"], tuple[float, float, float]]


def scorer(s: SearchSettings, scale: Scale, coverage_power: float) -> Score:
    """A function of (candidate, bm25 norm) giving its relevance, keyword part and vector part:
    `ranking.relevance(c, s, scale, norm, coverage_power)`'s value and its parts' values."""
    wk, wv = s.keyword_weight, s.vector_weight
    total = (wk + wv) or 1.0
    kshare, vshare = wk / total, wv / total
    weak, power = s.partial_match_weight, coverage_power
    floor, top = scale[0], scale[1]
    span = top - floor
    k = s.rrf_k

    def weighted(c: Candidate, best: float | None) -> tuple[float, float, float]:
        partial = weak if c.partial else 1.0
        if c.coverage is not None and power:
            partial *= c.coverage**power
        kw = 0.0
        if c.bm25 is not None and best:
            kw = min(1.0, c.bm25 / best)  # both negative: 1 for the best match
        sim = c.similarity
        vec = 0.0 if sim is None else min(1.0, max(0.0, (sim - floor) / span))
        kpart = kshare * kw * partial
        vpart = vshare * vec
        return kpart + vpart, kpart, vpart

    def rrf(c: Candidate, best: float | None) -> tuple[float, float, float]:
        partial = weak if c.partial else 1.0
        if c.coverage is not None and power:
            partial *= c.coverage**power
        kw = 0.0 if c.keyword_rank is None else (k + 1) / (k + c.keyword_rank)
        sim = c.similarity
        strength = 0.0 if sim is None else min(1.0, max(0.0, (sim - floor) / span))
        vec = (0.0 if c.vector_rank is None else (k + 1) / (k + c.vector_rank)) * strength
        kpart = kshare * kw * partial
        vpart = vshare * vec
        return kpart + vpart, kpart, vpart

    return weighted if s.fusion == "weighted" else rrf
