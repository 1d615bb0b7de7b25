"""How many more hits an answer has than it shows (its `more`), so that a search compared with
`rg -l` says when the limit, or the candidate pools, left notes out.

Every hit the ranking lists beyond `limit` counts. When it lists no more than `limit` but the
keyword pool came back full (it holds the best `size` matching texts, 200 by default), notes
that match the query's words may lie outside it: a search for a common word at `-n 100` would
otherwise list 60 notes and say nothing of the 90 others `rg -l` finds. Then the keyword
matches are read again, up to RECOUNT texts (only in that case: a full pool and a short
answer, as `-n 100` asks), and those the answer does not hold count. Either way the figure is
a lower bound ("at least"): a recount that comes back full may have missed more.

Cost: the recount is a keyword pool of RECOUNT texts, ranked as the first one is. At 100K
chunks (/tmp/pg9/large, a loaded 2-core machine) a pool of 200 took 26-30 ms, of 1,000 55-69 ms,
of 5,000 78-217 ms: hence 1,000. A search whose ranked answer reaches its limit (every
default search of a common word) pays nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memoryd.search.ranking import Candidate

RECOUNT = 1000  # texts read to count the keyword matches an answer left out


def more_hits(
    ranked: Sequence[Candidate],
    limit: int,
    group: str,
    full: bool,
    recount: Callable[[int], Sequence[Candidate]],
) -> int:
    """The hits beyond the first `limit` of `ranked` (the whole ranked answer); with none, and
    a `full` keyword pool, the keyword matches (`recount(n)`: the best n of them) that `ranked`
    does not hold, per note unless `group` is "none"."""
    if len(ranked) > limit:
        return len(ranked) - limit
    if not full or not ranked:
        return 0

    def key(c: Candidate) -> tuple[str, int]:
        return ("entry", c.id) if group == "none" else c.group_key

    listed = {key(c) for c in ranked}
    return len({key(c) for c in recount(RECOUNT)} - listed)
