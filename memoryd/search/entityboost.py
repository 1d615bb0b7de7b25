"""The entity signal of search (issue 20.3): a query that names a known entity ranks the
passages that mention it (or one of its aliases) above those that only share other words.

The query's names are what the index's own extractor finds in it (memoryd.text.entities:
`Maya`, `Lena's`, `billing-svc`, `ERR_AUTH_2207`; not a lowercase common word), each resolved
to the entities whose key or surface form it is (store/entityread.py). A candidate's share is the
IDF-weighted part of those entities its text mentions (an entity that every text mentions
distinguishes nothing: IDF over the entries that mention it, relative to a name only one entry
holds); a note's share is its best section's. Its relevance is then multiplied by
1 + `search.entity_weight` x share (capped at 1): a soft signal, applied where keyword and vector
pools are fused.

A name counts only where the extractor finds it in most of the texts that hold it
(`RELIABLE`). `entity_weight` is 0.4, chosen leaving each set in bench/data out among the
weights under which no other set falls below its figures without it (`python -m bench.weights
--entity`; BENCHMARKS.md, "Stop 33 (lead)"). 0 turns it off.
"""

from __future__ import annotations

from collections.abc import Sequence

from memoryd.search.ftsquery import quote_term
from memoryd.search.ranking import Candidate, idf
from memoryd.store import entityread, searchsql
from memoryd.store.entityfilter import name_key
from memoryd.store.protocol import Connection
from memoryd.text.entities import extract


def query_keys(query: str) -> list[str]:
    """The canonical keys and surface forms of the names the query holds (pure)."""
    out: dict[str, None] = {}
    for m in extract(query):
        out[m.key] = None
        out[name_key(m.surface)] = None
    return [k for k in out if k]


def shares(con: Connection, query: str, candidates: Sequence[Candidate]) -> dict[int, float]:
    """{chunk id: the IDF-weighted share of the query's named entities it mentions} for the
    candidates and their sections; empty when the query names no known entity."""
    named: dict[int, int] = {}
    for key in query_keys(query):  # each entity judged by the form the query wrote it in
        for e, df in entityread.named(con, [key]).items():
            if e not in named and _found_where_written(con, key, df):
                named[e] = df
    if not named:
        return {}
    n = searchsql.entry_count(con)
    weights = {e: idf(df, max(n, df)) / idf(1, max(n, 1)) for e, df in named.items()}
    total = float(len(weights))
    ids = [sec.id for c in candidates for sec in (c.sections or [c])]
    found = entityread.mentioned_in(con, list(weights), ids)
    return {i: sum(weights[e] for e in ents) / total for i, ents in found.items()}


RELIABLE = 0.75  # an entity counts only where its mentions are this share of its name's texts


def _found_where_written(con: Connection, name: str, mentions: int) -> bool:
    """Whether the extractor finds the entity in most texts that hold the name the query wrote
    it by (at least RELIABLE of them; `mentions`: the entries that mention it in any form). A
    name that is also a word the extractor must leave at the start of a sentence ("Go is mostly
    in the C family") or in lowercase ("Google's" vs "google it") is recognised in only some of
    its texts: boosting those would sink the texts it missed, which are as much about it (go-faq:
    "What are Go's ancestors?" lost its answer, which opens with "Go is"). The query's form, not
    the entity's canonical name: "Maya" asked of Maya Okafor counts the texts that hold "Maya"
    (a phrase no text but one holds would pass every time)."""
    if not any(ch.isalnum() for ch in name):
        return True
    cap = int(mentions / RELIABLE) + 1
    return searchsql.match_count(con, quote_term(name), cap) * RELIABLE <= mentions


def boost(con: Connection, query: str, candidates: Sequence[Candidate], weight: float) -> None:
    """Multiply each candidate's relevance (and its sections') by 1 + weight x its share
    (a note's: its best section's), capped at 1; `components["entity"]` records the share."""
    if weight <= 0 or not candidates:
        return
    got = shares(con, query, candidates)
    if not got:
        return
    for c in candidates:
        secs = c.sections or [c]
        for x in secs:
            _lift(x, got.get(x.id, 0.0), weight)
        if c.sections:
            _lift(c, max(got.get(x.id, 0.0) for x in secs), weight)


def _lift(c: Candidate, share: float, weight: float) -> None:
    if share <= 0:
        return
    c.components["entity"] = round(share, 4)
    lifted = c.fused * (1.0 + weight * share)
    c.beyond = max(0.0, lifted - 1.0)  # ties at the cap go to the stronger (ranking.order)
    c.fused = min(1.0, lifted)
    c.components["relevance"] = c.fused
