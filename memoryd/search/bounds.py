"""Which candidates can still reach the top `limit`, from what is known before their signal rows
are read (issue 23.3): the exact bounds of each one's final score, so that the searcher reads
rows, computes signals and sorts for those only, and the hits are the same.

A text's final score (searcher._finish) is min(1, max(0, (1 - SIGNAL_SHARE) x relevance + its
nudges)), the nudges (`ranking.signals`: importance, recency, frequency) each in
0..SIGNAL_SHARE x weight / total weight, so their sum is within 0..`nudge_max`. A memory may
also decay (any factor in 0..1) and carry a tier boost (-SIGNAL_SHARE..SIGNAL_SHARE), so its
bounds are 0..1: memories are always read. `order` sorts by the final score rounded to 6 places
first and puts every backed hit before the `tail` (`ranking.followers`): a candidate whose upper
bound is below the `k`-th best lower bound of its part (by more than the rounding) sorts after
`k` others, and is not among the first `k`.
"""

from __future__ import annotations

from collections.abc import Sequence

from memoryd.search.ranking import SIGNAL_SHARE, Candidate, SearchSettings

# Kept apart from the k-th lower bound: rounding to 6 places (order) and float sums (1e-16).
MARGIN = 1e-5


def nudge_max(s: SearchSettings) -> float | None:
    """The most `ranking.signals` can add to a score (None when a weight is negative: no
    bound is assumed then)."""
    weights = (s.importance_weight, s.recency_weight, s.frequency_weight)
    if any(w < 0 for w in weights):
        return None
    total = sum(weights) or 1.0
    return SIGNAL_SHARE * sum(weights) / total


def reachable(
    candidates: Sequence[Candidate], memories: set[int], limit: int, nudges: float
) -> list[Candidate]:
    """The candidates that may be among the first `limit` once scored and ordered, in their
    given order: every one that is not a memory (`memories`: ids) scores (1 - SIGNAL_SHARE) x
    components["relevance"] plus 0..`nudges`. Backed hits come first; the tail only matters
    when there are fewer than `limit` of them (then every backed hit is kept, and the tail is
    cut the same way for the places left)."""
    backed = [c for c in candidates if not c.tail]
    if len(backed) >= limit:
        keep = _cut(backed, memories, limit, nudges)
    else:
        tail = [c for c in candidates if c.tail]
        keep = {id(c) for c in backed} | _cut(tail, memories, limit - len(backed), nudges)
    return [c for c in candidates if id(c) in keep]


def _cut(part: Sequence[Candidate], memories: set[int], k: int, nudges: float) -> set[int]:
    """The members of `part` (by identity) whose upper bound reaches its k-th best lower one."""
    if k <= 0:
        return set()
    if len(part) <= k:
        return {id(c) for c in part}
    share = 1 - SIGNAL_SHARE
    # ~400 at 100K: min(1, max(0, x)) written out as what it returns (a call of each costs
    # ~0.2 us, 0.1 ms a search), memories (0..1) apart
    bases = [share * c.components.get("relevance", 0.0) for c in part]
    lows = [(x if x < 1.0 else 1.0) if x > 0.0 else 0.0 for x in bases]
    highs = [(x if x < 1.0 else 1.0) if x > 0.0 else 0.0 for x in (b + nudges for b in bases)]
    if memories:
        for n, c in enumerate(part):
            if c.id in memories:
                lows[n], highs[n] = 0.0, 1.0
    bar = sorted(lows, reverse=True)[k - 1] - MARGIN
    return {id(c) for c, hi in zip(part, highs, strict=True) if hi >= bar}
