"""Keyword evidence for "does anything answer this query?" (issue 11.3; docs/protocol.md, "No
answer"): how many texts of the whole index hold each of a query's units, and how much of the
query each candidate holds (its coverage). The pure parts (units, IDF, coverage, identifiers)
are in ranking.py; the SQL in store/searchsql.py."""

from __future__ import annotations

from memoryd.search.ftsquery import quote_term, unit_term
from memoryd.search.ranking import (
    Candidate,
    absent_identifier,
    coverage,
    identifier,
    idf,
    query_units,
)
from memoryd.store import searchsql
from memoryd.store.protocol import Connection

DF_CAP = 10_000  # document frequencies are counted up to this (a term this common weighs ~0)
CACHE_MAX = 4096


class KeywordEvidence:
    """Per searcher; the document frequencies it remembers are keyed by the index's size."""

    def __init__(self) -> None:
        self._df: dict[tuple[str, int], int] = {}

    def doc_freq(self, con: Connection, expr: str, n: int | None = None) -> int:
        """How many texts match expr (up to DF_CAP), remembered while the index size holds."""
        n = searchsql.entry_count(con) if n is None else n
        key = (expr, n)
        df = self._df.get(key)
        if df is None:
            if len(self._df) >= CACHE_MAX:
                self._df.clear()
            df = self._df[key] = searchsql.match_count(con, expr, DF_CAP)
        return df

    def annotate(
        self, con: Connection, units: list[str], candidates: list[Candidate], prefix: bool
    ) -> dict[str, int]:
        """Set each candidate's keyword coverage: the IDF-weighted share of the query's units
        found in its best chunk (a unit no text has weighs most: nothing answers it), and in
        components["note_coverage"] the same over all its sections. `prefix`: the units are
        typo corrections, matched as prefixes. Returns each unit's document frequency."""
        dfs: dict[str, int] = {}
        if not units:
            return dfs
        n = searchsql.entry_count(con)
        if not prefix:  # read once: the document frequencies below are counted from them
            self.prefetch(con, units)
        chunk_ids = [sec.id for c in candidates for sec in (c.sections or [c])]
        weights: dict[str, float] = {}
        found: dict[int, list[str]] = {}
        for u in units:
            expr = quote_term(u) + "*" if prefix else unit_term(u)
            df = dfs[u] = self.doc_freq(con, expr, n)
            weights[u] = idf(df, max(n, df))
            for i in searchsql.matching(con, expr, chunk_ids, df if df < DF_CAP else None):
                found.setdefault(i, []).append(u)
        # The candidates hold few distinct lists of units (most hold every word, or the same
        # one): each list's coverage is computed once (the same list, the same float).
        known: dict[tuple[str, ...], float] = {(): coverage((), weights)}

        def covered(units: tuple[str, ...]) -> float:
            share = known.get(units)
            if share is None:
                share = known[units] = coverage(units, weights)
            return share

        held = {i: tuple(us) for i, us in found.items()}
        for c in candidates:
            secs = c.sections or [c]
            if len(secs) == 1:  # most notes: its coverage is its one section's
                c.coverage = secs[0].coverage = share = covered(held.get(secs[0].id, ()))
                c.components["note_coverage"] = share
                continue
            for sec in secs:
                sec.coverage = covered(held.get(sec.id, ()))
            c.coverage = max(sec.coverage or 0.0 for sec in secs)
            c.components["note_coverage"] = covered(
                tuple(u for sec in secs for u in held.get(sec.id, ()))
            )
        return dfs

    def prefetch(self, con: Connection, units: list[str]) -> None:
        """Read ahead what `annotate` will ask of each unit (as typed, not as a prefix): the
        texts that hold it (`searchsql.remember_matches`), before the candidates are known."""
        for u in units:
            searchsql.remember_matches(con, unit_term(u))

    def missing_identifier(self, con: Connection, query: str) -> str | None:
        """An exact identifier the query names that no text of the index holds, if any."""
        idents = [u for u in query_units(query) if identifier(u)]
        return absent_identifier({u: self.doc_freq(con, unit_term(u)) for u in idents})
