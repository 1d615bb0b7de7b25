"""Typo tolerance: rewrite query terms to the closest terms in the index's vocabulary.

Search's last tier: when keywords find nothing, "dokcer netwrking" becomes docker + network.
The vocabulary comes from the fts5vocab table `entries_vocab` over entries_fts; its terms are
porter stems, so query terms are stemmed with the same tokenizer (through apsw) before
comparing. Candidates share the first letter and are within two characters in length (a cheap
filter that keeps transposed and dropped letters in), ranked by Damerau-Levenshtein distance,
then document frequency. The vocabulary is cached and refreshed at most every
`refresh_interval` seconds, or after invalidate().
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import apsw

from memoryd.ftsquery import quote_term


@dataclass(frozen=True)
class FuzzyResult:
    match: str
    corrections: dict[str, str]
    corrected_query: str


def damerau(a: str, b: str, limit: int = 3) -> int:
    """Optimal string alignment distance (a transposition counts 1), capped at limit+1."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        best = cur[0]
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
            best = min(best, cur[j])
        if best > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


class FuzzyMatcher:
    def __init__(self, min_similarity: float = 0.4, refresh_interval: float = 30.0) -> None:
        self.min_similarity = min_similarity
        self.refresh_interval = refresh_interval
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, int], list[tuple[str, int]]] = {}
        self._terms: set[str] = set()
        self._built_at = 0.0
        self._dirty = True

    def invalidate(self) -> None:
        self._dirty = True

    def _vocab(self, con: apsw.Connection) -> None:
        now = time.monotonic()
        if not self._dirty and now - self._built_at < self.refresh_interval:
            return
        with self._lock:
            if not self._dirty and now - self._built_at < self.refresh_interval:
                return
            buckets: dict[tuple[str, int], list[tuple[str, int]]] = {}
            terms: set[str] = set()
            for term, docs in con.execute("SELECT term, doc FROM entries_vocab"):
                t = str(term)
                if len(t) < 3 or t.isdigit():
                    continue
                terms.add(t)
                buckets.setdefault((t[0], len(t)), []).append((t, int(docs)))
            self._buckets, self._terms = buckets, terms
            self._built_at, self._dirty = now, False

    def _stem(self, con: apsw.Connection, term: str) -> str:
        try:
            tok = con.fts5_tokenizer("porter", ["unicode61", "remove_diacritics", "2"])
            out = tok(term.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None, include_offsets=False)
            tokens = [t[0] if isinstance(t, tuple) else t for t in out]
            return str(tokens[0]) if tokens else term
        except Exception:
            return term

    def _best(self, stem: str) -> str | None:
        best: tuple[int, int, str] | None = None
        for length in range(len(stem) - 2, len(stem) + 3):
            for term, docs in self._buckets.get((stem[0], length), ()):
                dist = damerau(stem, term, 2)
                if dist > 2:
                    continue
                if 1 - dist / max(len(stem), len(term)) < self.min_similarity:
                    continue
                key = (dist, -docs, term)
                if best is None or key < best:
                    best = key
        return best[2] if best else None

    def rewrite(self, con: apsw.Connection, terms: Sequence[str]) -> FuzzyResult | None:
        try:
            self._vocab(con)
        except apsw.Error:
            return None
        corrections: dict[str, str] = {}
        groups: list[str] = []
        words: list[str] = []
        for term in terms:
            if not term:
                continue
            stem = self._stem(con, term.lower())
            if stem in self._terms or len(stem) < 4 or stem.isdigit():
                groups.append(quote_term(term))
                words.append(term)
                continue
            best = self._best(stem)
            if best is None:
                groups.append(quote_term(term))
                words.append(term)
                continue
            corrections[term] = best
            groups.append(f"({quote_term(term)} OR {quote_term(best)}*)")
            words.append(best)
        if not corrections:
            return None
        return FuzzyResult(" AND ".join(groups), corrections, " ".join(words))
