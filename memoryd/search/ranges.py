"""A numbered identifier that no text holds as written, but that a note names as a member of a
range: `kafka-broker-02.us` where the on-call sheet says "kafka-broker-01.us to 03.us" (issue
19.3). Operations notes write numbered hosts, shards and tickets as ranges; such a note is the
answer, and the only one: the identifier's namesakes (`kafka-broker-04.eu`, `ERR_AUTH_2202` for
`ERR_AUTH_2207`) still are not, and a number outside every written range (`kafka-broker-09.eu`
beside "01.eu to 06.eu") still answers nothing.

The pure parts (`numbered`, `names_in_range`) are tested on plain strings; `range_pool` finds
the texts that hold the identifier's other words (FTS5) and keeps those whose text writes a
range around its number. Measured on every labelled set: BENCHMARKS.md, issue 19.2 (branch
rank4).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from memoryd.search.ftsquery import quote_term
from memoryd.search.ranking import Candidate
from memoryd.store import entrytexts
from memoryd.store.protocol import Connection

# between the two ends of a range: "01 to 03", "01 through 03", "01..03", "01–03", "01 - 03"
_BETWEEN = r"(?:\s*(?:\.\.\.?|–|—)\s*|\s+(?:to|through|thru|-)\s+)"
POOL = 50  # texts holding the identifier's other words that are read for a range


class Numbered(NamedTuple):
    """An identifier's words (as query_units writes it: lowercased, space-joined) split around
    its last number."""

    prefix: tuple[str, ...]
    number: str
    suffix: tuple[str, ...]


def numbered(unit: str) -> Numbered | None:
    """The identifier split around its last word made of digits alone, when that word has words
    before it ("kafka broker 02 us" -> kafka broker / 02 / us); None otherwise."""
    words = unit.split()
    at = next((i for i in range(len(words) - 1, 0, -1) if words[i].isdigit()), None)
    if at is None:
        return None
    return Numbered(tuple(words[:at]), words[at], tuple(words[at + 1 :]))


def _pattern(n: Numbered) -> re.Pattern[str]:
    sep = r"[\W_]+"
    prefix = sep.join(re.escape(w) for w in n.prefix)
    suffix = sep.join(re.escape(w) for w in n.suffix)
    tail = f"(?:{sep}{suffix})?" if suffix else ""
    return re.compile(
        rf"(?<![\w]){prefix}{sep}(\d+)(?P<s1>{tail}){_BETWEEN}(?:{prefix}{sep})?(\d+)(?P<s2>{tail})(?!\w)",
        re.IGNORECASE,
    )


def names_in_range(text: str, n: Numbered) -> bool:
    """Whether the text writes a range of the identifier's kind around its number: both ends
    after the identifier's words, the number strictly between them, the identifier's suffix
    after either end ("kafka-broker-01.us to 03.us" names kafka-broker-02.us, not
    kafka-broker-02.eu)."""
    value = int(n.number)
    for m in _pattern(n).finditer(text):
        if n.suffix and not (m.group("s1") or m.group("s2")):
            continue
        lo, hi = int(m.group(1)), int(m.group(3))
        if lo < value < hi:
            return True
    return False


Pool = Callable[[Connection, str, str, list[Any], int], list[Candidate]]


def range_pool(
    con: Connection,
    unit: str,
    where: str,
    params: list[Any],
    pool: Pool,
) -> list[Candidate]:
    """The keyword candidates (`pool`: the searcher's keyword pool, with its filters) among the
    texts holding the identifier's other words whose text names it in a range; empty when the
    unit is not numbered or no such text does."""
    n = numbered(unit)
    if n is None:
        return []
    words = [w for w in (*n.prefix, *n.suffix) if not w.isdigit()]
    if not words:
        return []
    found = pool(con, " AND ".join(quote_term(w) for w in words), where, params, POOL)
    texts = entrytexts.texts(con, [c.id for c in found])
    named = [c for c in found if names_in_range(texts.get(c.id, ""), n)]
    for rank, c in enumerate(named, start=1):
        c.keyword_rank = rank
    return named


def credit(candidates: Sequence[Candidate], named: set[int]) -> None:
    """A text that names the identifier in a range holds the whole query (a query of nothing
    but absent identifiers): its coverage is 1, and a note's is its best section's."""
    for c in candidates:
        secs = c.sections or [c]
        for sec in secs:
            if sec.id in named:
                sec.coverage = 1.0
        c.coverage = max((sec.coverage or 0.0) for sec in secs)
