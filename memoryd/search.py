"""Search: candidate pools (keyword, vector), fusion, ranking signals, fallback tiers.

Tiers, in order (mode "auto"):
  hybrid   keyword pool + vector pool, fused (RRF k=60 by default, or weighted scores);
  keyword  when there is no model (or no vectors yet);
  vector   when the keyword index finds nothing but vectors do;
  fuzzy    when the keyword index finds nothing: query terms are corrected against the index's
           vocabulary ("dokcer netwrking" -> docker network) and searched again (fused with the
           vector pool when there is one).
Every response names the mode that answered it. The pure parts (SQL building, fusion, ranking)
are functions tested without a database.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import apsw
import numpy as np

from memoryd import lifecycle, secretguard
from memoryd.errors import InvalidInput, Unavailable
from memoryd.ftsquery import STOP_WORDS, parse_query
from memoryd.store import Store, entries, vectors
from memoryd.store.entries import Filters
from memoryd.vecindex import VectorCache

MODES = ("auto", "keyword", "vector", "hybrid", "fuzzy")


class SearchSettings(Protocol):
    default_limit: int
    max_limit: int
    fusion: str
    rrf_k: int
    candidate_multiplier: int
    keyword_weight: float
    vector_weight: float
    partial_match_weight: float
    importance_weight: float
    recency_weight: float
    recency_half_life_days: float
    frequency_weight: float
    fuzzy: bool


class QueryEmbedder(Protocol):
    state: str

    def embed_query(self, text: str) -> np.ndarray: ...


class Rewriter(Protocol):
    def rewrite(self, con: apsw.Connection, terms: Sequence[str]) -> Any: ...


@dataclass(frozen=True)
class SearchRequest:
    query: str
    limit: int | None = None
    mode: str = "auto"
    filters: Filters = field(default_factory=Filters)
    explain: bool = False
    record_access: bool = True
    use_decay: bool = True
    include_constitutional: bool = False
    max_tokens: int | None = None
    concepts: tuple[str, ...] = ()


@dataclass
class Candidate:
    id: int
    keyword_rank: int | None = None
    bm25: float | None = None
    match: str | None = None  # the FTS5 expression that found it (snippets come from it)
    partial: bool = False  # matched only some of the query's topical terms
    vector_rank: int | None = None
    similarity: float | None = None
    fused: float = 0.0
    components: dict[str, float] = field(default_factory=dict)
    final: float = 0.0


# --- pure parts -------------------------------------------------------------------------------


def keyword_sql(where: str) -> str:
    """SQL for the keyword pool: FTS5 BM25 (content weighs most, then headings, then tags)."""
    return (
        "SELECT e.id, bm25(entries_fts, 1.0, 0.6, 0.4) AS score"
        " FROM entries_fts JOIN entries e ON e.id = entries_fts.rowid"
        " LEFT JOIN documents d ON d.id = e.document_id"
        f" WHERE entries_fts MATCH ? AND {where} ORDER BY score LIMIT ?"
    )


def rrf(
    pools: Sequence[Sequence[int | tuple[int, float]]],
    k: int,
    weights: Sequence[float] | None = None,
) -> dict[int, float]:
    """Reciprocal Rank Fusion: sum over pools of weight / (k + rank), rank from 1.

    A pool item is an id, or (id, weight) to scale that item's contribution."""
    scores: dict[int, float] = {}
    for n, pool in enumerate(pools):
        w = 1.0 if weights is None else weights[n]
        for rank, item in enumerate(pool, start=1):
            entry_id, iw = item if isinstance(item, tuple) else (item, 1.0)
            scores[entry_id] = scores.get(entry_id, 0.0) + w * iw / (k + rank)
    return scores


def normalise(values: dict[int, float], *, higher_is_better: bool) -> dict[int, float]:
    """Min-max to [0, 1] (1 = best). A pool of one, or all equal, scores 1."""
    if not values:
        return {}
    lo, hi = min(values.values()), max(values.values())
    if hi == lo:
        return dict.fromkeys(values, 1.0)
    if higher_is_better:
        return {i: (v - lo) / (hi - lo) for i, v in values.items()}
    return {i: (hi - v) / (hi - lo) for i, v in values.items()}


def weighted(
    bm25: dict[int, float], similarity: dict[int, float], w_keyword: float, w_vector: float
) -> dict[int, float]:
    """Weighted fusion of normalised scores; a pool an entry is missing from contributes 0."""
    kw = normalise(bm25, higher_is_better=False)  # bm25() is lower-is-better in FTS5
    vec = normalise(similarity, higher_is_better=True)
    return {i: w_keyword * kw.get(i, 0.0) + w_vector * vec.get(i, 0.0) for i in {*kw, *vec}}


def signals(row: dict[str, Any], s: SearchSettings, now: float) -> dict[str, float]:
    """Ranking boosts beside relevance: importance, recency decay, access frequency.
    `row` has the entry's importance, access_count and updated_at (unix seconds)."""
    importance = (max(1, min(10, int(row["importance"]))) - 1) / 9
    age_days = max(0.0, (now - row["updated_at"]) / 86400)
    recency = 0.5 ** (age_days / s.recency_half_life_days)
    frequency = min(1.0, math.log1p(row["access_count"]) / math.log1p(100))
    return {
        "importance": s.importance_weight * importance,
        "recency": s.recency_weight * recency,
        "frequency": s.frequency_weight * frequency,
    }


def tier_decay(tier: str, last_used: float, now: float, lc: Any) -> float:
    """How much of its relevance a memory keeps with age: halves every half-life of its tier,
    never below decay_floor; constitutional memories never decay."""
    if tier == "constitutional" or lc is None:
        return 1.0
    half_life = getattr(lc, f"half_life_days_{tier}", lc.half_life_days_normal)
    age_days = max(0.0, (now - last_used) / 86400)
    return max(lc.decay_floor, 0.5 ** (age_days / half_life))


# --- the searcher ------------------------------------------------------------------------------


class Searcher:
    """Answers SearchRequests against the store; keyword search never waits for the model."""

    def __init__(
        self,
        store: Store,
        settings: SearchSettings,
        *,
        model: QueryEmbedder | None = None,
        fuzzy: Rewriter | None = None,
        clock: Callable[[], float] = time.time,
        lifecycle_settings: Any = None,
        flag_secrets: bool = True,
    ) -> None:
        self.store = store
        self.settings = settings
        self.model = model
        self.fuzzy = fuzzy
        self.clock = clock
        self.lifecycle = lifecycle_settings
        self.flag_secrets = flag_secrets
        self.vector_cache = VectorCache()

    def search(self, req: SearchRequest) -> dict[str, Any]:
        started = time.perf_counter()
        s = self.settings
        if req.mode not in MODES:
            raise InvalidInput(f"mode: expected one of {', '.join(MODES)}, got {req.mode!r}")
        limit = req.limit if req.limit is not None else s.default_limit
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= s.max_limit:
            raise InvalidInput(f"limit: expected an integer from 1 to {s.max_limit}, got {limit!r}")
        if req.concepts:
            if not 2 <= len(req.concepts) <= 5 or not all(
                isinstance(c, str) and c.strip() for c in req.concepts
            ):
                raise InvalidInput("concepts: expected 2 to 5 non-empty strings")
            vecs = [self._query_vector(replace(req, query=c)) for c in req.concepts]
            result = self.store.read(lambda con: self._concepts(con, req, limit, vecs))
        else:
            if not isinstance(req.query, str) or not req.query.strip():
                raise InvalidInput("query: must be a non-empty string")
            query_vec = self._query_vector(req)
            result = self.store.read(lambda con: self._run(con, req, limit, query_vec))
        if req.include_constitutional:
            result["hits"] = self._pinned(req) + [
                h for h in result["hits"] if h.get("tier") != "constitutional"
            ]
        hits = result["hits"]
        if req.record_access and hits:
            ids = [h["id"] for h in hits]
            now = self.clock()
            self.store.run_write(lambda con: entries.record_access(con, req.query, ids, now))
        if req.max_tokens is not None:
            if (
                isinstance(req.max_tokens, bool)
                or not isinstance(req.max_tokens, int)
                or (req.max_tokens < 1)
            ):
                raise InvalidInput("max_tokens: expected a positive integer")
            result.update(lifecycle.budgeted(result["hits"], req.max_tokens))
        result["took_ms"] = round((time.perf_counter() - started) * 1000, 2)
        return result

    def _pinned(self, req: SearchRequest) -> list[dict[str, Any]]:
        budget = self.lifecycle.session_max_tokens if self.lifecycle is not None else 500
        now = self.clock()
        found, _, _ = self.store.read(
            lambda con: lifecycle.session_memories(con, req.filters.namespace, budget, now)
        )
        return [{**r, "score": None, "pinned": True, "snippet": r["content"]} for r in found]

    def _concepts(
        self, con: apsw.Connection, req: SearchRequest, limit: int, vecs: list[np.ndarray | None]
    ) -> dict[str, Any]:
        """Entries that match every concept (by keywords, or by meaning when there is a model),
        ranked by their summed reciprocal ranks."""
        now = self.clock()
        where, params = entries.filter_sql(req.filters, now)
        size = max(200, limit * self.settings.candidate_multiplier)
        pools: list[list[int]] = []
        used_vectors = False
        for concept, vec in zip(req.concepts, vecs, strict=True):
            parsed = parse_query(concept)
            ids: list[int] = []
            if parsed.match:
                ids = [c.id for c in self._keyword_pool(con, parsed.match, where, params, size)]
            if vec is not None:
                near = self._vector_pool(con, vec, where, params, size)
                close = [c.id for c in near if (c.similarity or 0) >= 0.3]
                used_vectors = used_vectors or bool(close)
                ids += [i for i in close if i not in set(ids)]
            pools.append(ids)
        common = set(pools[0]).intersection(*map(set, pools[1:])) if pools else set()
        scores = rrf([[i for i in p if i in common] for p in pools], self.settings.rrf_k)
        top = max(scores.values(), default=1.0) or 1.0
        candidates = [
            Candidate(id=i, fused=v, components={"relevance": v / top}) for i, v in scores.items()
        ]
        mode = "hybrid" if used_vectors else "keyword"
        return {
            "query": " + ".join(req.concepts),
            "concepts": list(req.concepts),
            "mode": mode,
            "hits": self._finish(con, candidates, limit, now, req.explain, mode, req.use_decay),
        }

    def _query_vector(self, req: SearchRequest) -> np.ndarray | None:
        if req.mode in ("keyword", "fuzzy") or self.model is None:
            if req.mode == "vector" and self.model is None:
                raise Unavailable("vector search needs an embedding model; none is configured")
            return None
        if self.model.state != "ready":
            if req.mode == "vector":
                raise Unavailable(f"the embedding model is {self.model.state}; try mode keyword")
            return None
        return self.model.embed_query(req.query)

    def _run(
        self, con: apsw.Connection, req: SearchRequest, limit: int, qvec: np.ndarray | None
    ) -> dict[str, Any]:
        s = self.settings
        now = self.clock()
        pool_size = limit * s.candidate_multiplier
        parsed = parse_query(req.query)
        where, params = entries.filter_sql(req.filters, now)
        out: dict[str, Any] = {"query": req.query}

        keyword: list[Candidate] = []
        fuzzy_used = False
        if req.mode in ("auto", "keyword", "hybrid") and parsed.match:
            keyword = self._keyword_pool(con, parsed.match, where, params, pool_size)
            if parsed.match_any and len(keyword) < pool_size:
                # Entries with every term rank first; entries with some of the topical terms
                # fill the pool, so a question ("what did we decide about auth?") finds its note.
                seen = {c.id for c in keyword}
                extra = self._keyword_pool(con, parsed.match_any, where, params, pool_size)
                for c in extra:
                    c.partial = True
                keyword += [c for c in extra if c.id not in seen][: pool_size - len(keyword)]
                for rank, c in enumerate(keyword, start=1):
                    c.keyword_rank = rank
        want_fuzzy = req.mode == "fuzzy" or (req.mode == "auto" and s.fuzzy and not keyword)
        topical = [t for t in parsed.terms if t not in STOP_WORDS]
        if want_fuzzy and self.fuzzy is not None and topical:
            rewritten = self.fuzzy.rewrite(con, topical)
            if rewritten is not None:
                keyword = self._keyword_pool(con, rewritten.match, where, params, pool_size)
                if keyword:
                    fuzzy_used = True
                    out["corrected_query"] = rewritten.corrected_query

        vector: list[Candidate] = []
        if qvec is not None and req.mode in ("auto", "vector", "hybrid"):
            vector = self._vector_pool(con, qvec, where, params, pool_size)

        if fuzzy_used:
            mode = "fuzzy"
        elif keyword and vector:
            mode = "hybrid"
        elif vector:
            mode = "vector"
        elif req.mode in ("auto", "hybrid"):
            mode = "keyword"
        else:
            mode = req.mode
        out["mode"] = mode
        ranked = self._fuse(keyword, vector)
        out["hits"] = self._finish(con, ranked, limit, now, req.explain, mode, req.use_decay)
        return out

    def _keyword_pool(
        self, con: apsw.Connection, match: str, where: str, params: list[Any], size: int
    ) -> list[Candidate]:
        rows = con.execute(keyword_sql(where), [match, *params, size]).fetchall()
        return [
            Candidate(id=int(i), keyword_rank=rank, bm25=float(score), match=match)
            for rank, (i, score) in enumerate(rows, start=1)
        ]

    def _vector_pool(
        self, con: apsw.Connection, qvec: np.ndarray, where: str, params: list[Any], size: int
    ) -> list[Candidate]:
        active = vectors.active_model(con)
        if active is None or active[2] != int(qvec.shape[-1]):
            return []
        model_id, dim = active[0], active[2]
        k = size
        # Filters apply after the nearest-neighbour search; widen k until enough survive.
        while True:
            nearest = self.vector_cache.knn(con, model_id, dim, qvec, k)
            if not nearest:
                return []
            dist = {h: d for h, d in nearest}
            hashes = list(dist)
            found: list[tuple[int, str]] = []
            for start in range(0, len(hashes), 500):
                part = hashes[start : start + 500]
                found += con.execute(
                    "SELECT e.id, e.content_hash FROM entries e"
                    " LEFT JOIN documents d ON d.id = e.document_id"
                    f" WHERE e.content_hash IN ({','.join('?' * len(part))}) AND {where}",
                    [*part, *params],
                ).fetchall()
            if len(found) >= size or len(nearest) < k or k >= size * 64:
                break
            k *= 4
        found.sort(key=lambda row: (dist[row[1]], row[0]))
        return [
            Candidate(id=int(i), vector_rank=rank, similarity=1.0 - dist[h])
            for rank, (i, h) in enumerate(found[:size], start=1)
        ]

    def _fuse(self, keyword: list[Candidate], vector: list[Candidate]) -> list[Candidate]:
        s = self.settings
        by_id: dict[int, Candidate] = {c.id: c for c in keyword}
        for c in vector:
            if c.id in by_id:
                by_id[c.id].vector_rank = c.vector_rank
                by_id[c.id].similarity = c.similarity
            else:
                by_id[c.id] = c
        if s.fusion == "weighted":
            fused = weighted(
                {c.id: c.bm25 for c in keyword if c.bm25 is not None},
                {c.id: c.similarity for c in vector if c.similarity is not None},
                s.keyword_weight,
                s.vector_weight,
            )
        else:
            # A keyword match on only some of the query's words is weaker evidence than a match
            # on all of them (on notes-qa: hybrid nDCG@10 0.970 at weight 1, 0.985 at 0.25).
            partial = s.partial_match_weight
            fused = rrf(
                [[(c.id, partial if c.partial else 1.0) for c in keyword], [c.id for c in vector]],
                s.rrf_k,
                [2 * s.keyword_weight, 2 * s.vector_weight],
            )
        top = max(fused.values(), default=1.0) or 1.0
        for c in by_id.values():
            c.fused = fused.get(c.id, 0.0)
            c.components["relevance"] = c.fused / top
        return list(by_id.values())

    def _snippets(self, con: apsw.Connection, top: list[Candidate]) -> dict[int, str]:
        """FTS5 snippets (matches wrapped in **) for the final hits only: computing them for
        every candidate would cost a snippet per match at scale."""
        by_match: dict[str, list[int]] = {}
        for c in top:
            if c.match:
                by_match.setdefault(c.match, []).append(c.id)
        out: dict[int, str] = {}
        for match, ids in by_match.items():
            for i, snip in con.execute(
                "SELECT rowid, snippet(entries_fts, 0, '**', '**', '…', 24) FROM entries_fts"
                f" WHERE entries_fts MATCH ? AND rowid IN ({','.join('?' * len(ids))})",
                [match, *ids],
            ):
                out[int(i)] = str(snip)
        return out

    def _finish(
        self,
        con: apsw.Connection,
        candidates: list[Candidate],
        limit: int,
        now: float,
        explain: bool,
        mode: str,
        use_decay: bool = True,
    ) -> list[dict[str, Any]]:
        if not candidates:
            return []
        # Score every candidate from a few columns; build full records only for the winners.
        raw = {
            int(row[0]): dict(zip(_SIGNAL_COLUMNS, row[1:], strict=True))
            for start in range(0, len(candidates), 500)
            for row in con.execute(
                f"SELECT id, {', '.join(_SIGNAL_COLUMNS)} FROM entries WHERE id IN"
                f" ({','.join('?' * len(candidates[start : start + 500]))})",
                [c.id for c in candidates[start : start + 500]],
            )
        }
        lc = self.lifecycle
        for c in candidates:
            r = raw.get(c.id)
            if r is None:
                c.final = -1.0
                continue
            if use_decay and r["kind"] == "memory" and lc is not None:
                last_used = max(r["updated_at"], r["last_accessed_at"] or 0)
                decay = tier_decay(r["tier"], last_used, now, lc)
                c.components["decay"] = decay
                c.components["relevance"] *= decay
            c.components.update(signals(r, self.settings, now))
            if lc is not None and r["kind"] == "memory":
                c.components["tier"] = getattr(lc, f"boost_{r['tier']}", 0.0)
            c.final = sum(v for k, v in c.components.items() if k != "decay")
        candidates = sorted((c for c in candidates if c.id in raw), key=lambda c: (-c.final, c.id))
        top = candidates[:limit]
        records = entries.get_many(con, [c.id for c in top])
        snippets = self._snippets(con, top)
        hits = []
        for c in top:
            rec = records.get(c.id)
            if rec is None:
                continue
            hit = {
                **rec,
                "score": round(c.final, 6),
                "snippet": snippets.get(c.id) or _snippet(rec),
            }
            if self.flag_secrets and rec["kind"] == "chunk":
                found = secretguard.kinds(rec["content"])
                if found:
                    hit["secrets"] = found
            if explain:
                hit["explain"] = {
                    "mode": mode,
                    "keyword_rank": c.keyword_rank,
                    "bm25": c.bm25,
                    "vector_rank": c.vector_rank,
                    "similarity": c.similarity,
                    "fusion": self.settings.fusion,
                    "fused": c.fused,
                    **{k: round(v, 6) for k, v in c.components.items()},
                    "final": round(c.final, 6),
                }
            hits.append(hit)
        return hits


_SIGNAL_COLUMNS = ("kind", "importance", "access_count", "tier", "updated_at", "last_accessed_at")


def _snippet(record: dict[str, Any], width: int = 160) -> str:
    text = " ".join(record["content"].split())
    return text if len(text) <= width else text[: width - 1] + "…"
