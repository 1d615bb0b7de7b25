"""Search: candidate pools (keyword, vector), fusion per note, ranking signals, fallback tiers.

Tiers, in order (mode "auto"):
  hybrid   keyword pool + vector pool, fused per note (`ranking.scorer`);
  keyword  when there is no model (or no vectors yet);
  vector   when the keyword index finds nothing but vectors do;
  fuzzy    when the keyword index finds nothing: query terms corrected against the index's
           vocabulary ("dokcer netwrking" -> docker network), searched again (and fused).
Every response names the mode that answered it.

What a hit is (see docs/protocol.md, "Scores"):
- only a candidate backed by a keyword match, or by a similarity at or above the model's
  calibrated `alone` floor (`ranking.SIMILARITY_SCALE`), is returned: no padding (once one is,
  the other neighbours above the floor follow them all: `ranking.followers`). After typo
  correction, when no candidate holds any query word, similarity must reach the model's
  `unkeyed` floor if it has one; a CJK query's hits need one of its units (`cjk_alone` for
  vectors); a short chunk ranks by a similarity pulled toward its note's (`ranking.steadied`);
  a word no text holds lowers the scores (`ranking.damp`), and only a query of nothing but
  absent names or identifiers answers nothing (`answerability.only_absent_names`), and one of
  symbol words alone (`C#`, `$HOME`) only texts that write them (`symbols`); `coverage`
  is the IDF-weighted share of the query's units in a hit's best chunk (whole-index DFs);
- filters restrict both pools before ranking (the vector pool scans the filtered texts exactly
  when the filter leaves few of them), and BM25 is normalised without them, so a filtered search
  returns what an unfiltered one restricted afterwards does, with the same scores;
- by default one result per note (its best chunk and the other sections the same rules admit)
  or memory; `group="none"` gives raw chunks; pools are as large at every limit and recency
  counts from the newest text ranked, so the order depends on neither the limit nor the clock;
- `score` is in 0..1 and means the same in every query: 1 = the best keyword match on every
  query word that is also as similar as the top of the model's scale.
Pure parts: ranking.py (fusion, scores, order), snippets.py; tested without a DB.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Protocol, TypeVar

import numpy as np

from memoryd.core import threads
from memoryd.core.errors import InvalidInput, check_int, describe
from memoryd.memory import lifecycle
from memoryd.memory.lifecycle import tier_decay
from memoryd.search import bounds, concepts, entityboost, ranges, spelled, symbols
from memoryd.search import hits as hits_
from memoryd.search.answerability import absent_units, only_absent_names
from memoryd.search.evidence import KeywordEvidence
from memoryd.search.ftsquery import STOP_WORDS, parse_query, unit_term
from memoryd.search.more import more_hits
from memoryd.search.pools import Nearest, Pools, Soon, Whole, WordsAhead
from memoryd.search.ranking import (
    DEFAULT_SCALE,
    SIGNAL_SHARE,
    Candidate,
    Scale,
    SearchSettings,
    admitted,
    bm25_norm,
    damp,
    followers,
    listed_sections,
    order,
    query_units,
    several_chunks,
    signals,
    steadied,
)
from memoryd.search.request import (
    GROUPS,
    MODES,
    WORKSPACES,
    SearchRequest,
    base_filters,
    composed,
    keyword_prefilter,
    model_note,
    narrowing,
    query_vector,
    refuse_no_vectors,
    resolved_entities,
    unanswered,
)
from memoryd.search.sharedvec import vector_index
from memoryd.store import Store, entityread, notetext, searchrows, searchsql
from memoryd.store.entries import filter_sql
from memoryd.store.protocol import Connection
from memoryd.store.searchsql import Seen
from memoryd.store.tokenizer import has_cjk
from memoryd.text import secretguard

T = TypeVar("T")

MIN_POOL = 50  # chunks per pool at least (notes need several chunks each)


class QueryEmbedder(Protocol):
    state: str

    def embed_query(self, text: str) -> np.ndarray: ...


class Rewriter(Protocol):
    def rewrite(self, con: Connection, terms: Sequence[str], ex: Sequence[str] = (), /) -> Any: ...


def _quoted(query: str) -> list[str]:
    """The query's units as the evidence asks for them (KeywordEvidence.prefetch)."""
    return [unit_term(u) for u in query_units(query)]


class Searcher(Pools):
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
        pending_vectors: Callable[[], int] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.model = model
        self.fuzzy = fuzzy
        self.clock = clock
        self.lifecycle = lifecycle_settings
        self.flag_secrets = flag_secrets
        self.pending_vectors = pending_vectors
        self.registered: Callable[[], object] | None = None  # the worker's model id (App)
        self.vector_cache = vector_index(store)
        self._pool: ThreadPoolExecutor | None = None
        self._secrets: dict[str, list[str]] = {}
        self.evidence = KeywordEvidence()
        self._pending: tuple[int | None, float] = (None, -1e9)
        self._pending_future: Future[int] | None = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def search(self, req: SearchRequest) -> dict[str, Any]:
        """The answer; no background model run starts meanwhile (index/foreground.py)."""
        foreground = getattr(self.model, "foreground", None)
        with foreground() if foreground is not None else contextlib.nullcontext():
            return self._search(req)

    def _search(self, req: SearchRequest) -> dict[str, Any]:
        started = time.perf_counter()
        s = self.settings
        if req.mode not in MODES:
            raise InvalidInput(
                f"mode: expected one of {', '.join(MODES)}, got {describe(req.mode)}"
            )
        if req.workspace not in WORKSPACES:
            raise InvalidInput(
                f"workspace: expected one of {', '.join(WORKSPACES)}, got {describe(req.workspace)}"
            )
        if req.group not in GROUPS:
            raise InvalidInput(
                f"group: expected one of {', '.join(GROUPS)}, got {describe(req.group)}"
            )
        limit = req.limit if req.limit is not None else s.default_limit
        check_int(limit, "limit", 1, s.max_limit)
        if req.max_tokens is not None:
            check_int(req.max_tokens, "max_tokens", 1)
        req = composed(req)
        req = resolved_entities(req, functools.partial(self._read, req))  # once, for every pool
        query_vec: np.ndarray | None = None
        if req.concepts:
            if not 2 <= len(req.concepts) <= 5 or not all(
                isinstance(c, str) and c.strip() for c in req.concepts
            ):
                raise InvalidInput("concepts: expected 2 to 5 non-empty strings")
            vecs = [self._query_vector(replace(req, query=c)) for c in req.concepts]
            result = self._read(req, lambda con: self._concepts(con, req, limit, vecs))
        else:
            if not isinstance(req.query, str) or not req.query.strip():
                raise InvalidInput("query: must be a non-empty string")
            query_vec = self._query_vector(req)
            result = self._run(req, limit, query_vec)
            if req.explain and (why := unanswered(req.query, result["hits"])):
                result["unanswered"] = why
        if req.include_constitutional:
            result["hits"] = self._pinned(req) + [
                h for h in result["hits"] if h.get("tier") != "constitutional"
            ]
        if req.max_tokens is not None:
            result.update(lifecycle.budgeted(result["hits"], req.max_tokens))
        # why nothing can match, as `entity NAME` would; the other entities a name is for
        result.update(entityread.filter_answer(req.filters))
        pending = self._pending_vectors(req)
        if req.mode == "vector" and query_vec is not None and not result["hits"]:
            mine = self.registered is not None and self.registered() is not None
            self._read(req, lambda con: refuse_no_vectors(con, self.model, pending, mine))
        if pending:
            result["pending_vectors"] = pending
        if note := model_note(self.model, req, query_vec):
            result["model_state"] = note  # this answer could only use keywords
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
        self, con: Connection, req: SearchRequest, limit: int, vecs: list[np.ndarray | None]
    ) -> dict[str, Any]:
        now, pools = self.clock(), (self._keyword_pool, self._vector_pool)
        size = max(200, self.pool_size(limit))

        def finish(candidates: list[Candidate], mode: str) -> list[dict[str, Any]]:
            return self._finish(con, candidates, limit, now, req, mode)

        return concepts.answer(con, req, vecs, now, size, self.settings.rrf_k, pools, finish)

    def _query_vector(self, req: SearchRequest) -> np.ndarray | None:
        if req.mode in ("keyword", "fuzzy"):
            return None
        return query_vector(self.model, req)

    def _secret_kinds(self, content_hash: str, content: str) -> list[str]:
        """secretguard.kinds, remembered by content hash (scanning costs ~0.15 ms a hit)."""
        found = self._secrets.get(content_hash)
        if found is None:
            found = list(secretguard.kinds(content))
            if len(self._secrets) >= 4096:
                self._secrets.clear()
            self._secrets[content_hash] = found
        return found

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            # the vector pool, half of the keyword pool's ranking, the pending-vector count
            self._pool = threads.Pool(max_workers=3, thread_name_prefix="memoryd-search")
        return self._pool

    def _pending_vectors(self, req: SearchRequest) -> int | None:
        """Texts still waiting for a vector (the answer may be keyword-only meanwhile). Counting
        costs about 50 ms at 100K chunks, so it is refreshed off the query path and a search
        reports the last count."""
        if (
            self.pending_vectors is None
            or self.model is None
            or self.model.state in ("none", "failed")
            or req.mode in ("keyword", "fuzzy")
        ):
            return None
        value, at = self._pending
        fut = self._pending_future
        if fut is not None and fut.done():
            self._pending_future = None
            if fut.exception() is None:
                value, at = fut.result(), time.monotonic()
                self._pending = (value, at)
        # every 2 s while texts are pending, every 30 s once none were (50 ms of CPU at 100K)
        if self._pending_future is None and time.monotonic() - at > (2.0 if value else 30.0):
            self._pending_future = self._executor().submit(self.pending_vectors)
        return value

    def _read(self, req: SearchRequest, fn: Callable[[Connection], T], **how: Any) -> T:
        """store.read, over every workspace's notes when asked (PostgreSQL), `how` it says."""
        return self.store.read(fn, scope="all" if req.workspace == "all" else None, **how)

    def pool_size(self, limit: int) -> int:
        """Chunks per pool: the same for every limit up to max_limit (issue 19.4), so the first
        10 hits at limit 10 are the first 10 at limit 100: a pool cut by the limit would drop
        candidates that a wider one fuses into the top."""
        s = self.settings
        return max(MIN_POOL, limit, s.max_limit * s.candidate_multiplier)

    def _run(self, req: SearchRequest, limit: int, qvec: np.ndarray | None) -> dict[str, Any]:
        now = self.clock()
        size = self.pool_size(limit)
        submitted: list[Future[Nearest]] = []

        def answer(con: Connection) -> dict[str, Any]:
            pending, ahead = None, WordsAhead([])
            if qvec is not None and req.mode in ("auto", "vector", "hybrid"):
                # The vector pool's nearest texts are found on its own thread and read
                # connection, beside the keyword pool (SQLite and numpy both release the GIL),
                # then the query's words this connection has not read (pools.WordsAhead); their
                # entries are read on this one's (pools.Nearest). PostgreSQL: under this read's
                # snapshot (`export`), with what the search asks of them next (note_ahead).
                ahead = WordsAhead(searchrows.new_words(con, _quoted(req.query)))

                def nearest(other: Connection) -> Nearest:
                    searchrows.note_ahead(other, _quoted(req.query))
                    found = self._vector_knn(other, qvec, req.filters, now, size)
                    ahead.words_ahead(other)
                    return replace(found, carried=searchrows.carried(other))

                run, snapshot = self._executor().submit, getattr(con, "exported", None)
                pending = run(self._vector_thread, req, qvec, now, size, nearest, snapshot)
                submitted.append(pending)
            return self._answer(con, req, limit, now, size, pending, ahead)

        try:
            return self._read(req, answer, export=qvec is not None)
        finally:
            for fut in submitted:
                fut.cancel()

    def _answer(
        self,
        con: Connection,
        req: SearchRequest,
        limit: int,
        now: float,
        size: int,
        pending: Future[Nearest] | None,
        ahead: WordsAhead,
    ) -> dict[str, Any]:
        s = self.settings
        parsed = parse_query(req.query)
        where, params = filter_sql(req.filters, now)
        out: dict[str, Any] = {"query": req.query}
        if parsed.ignored and req.mode != "vector":  # a pasted page: words past the 64th
            out["terms_ignored"] = parsed.ignored
        pre = keyword_prefilter(req.filters, now)  # an entities filter, checked on FTS5's rowids
        # rows the keyword pools read on `con`: the signal rows need not read them again (Seen)
        seen: searchsql.Seen = {}
        pool: dict[str, Any] = {
            "narrow": narrowing(req.filters),
            "beside": self._beside(req),
            "seen": seen,
        }
        base = base_filters(req.filters)
        plain, bwhere, bparams = req.filters == base, *filter_sql(base, now)
        filtered, norm_soon = s.fusion == "weighted" and not plain, None
        typed = parsed.match_any or parsed.match
        # a filtered search's BM25 norm (below): known, or ranked beside the keyword pool
        nkey = (typed, base)
        known, norm = searchsql.known_best(con, nkey, now) if typed else (True, None)
        if filtered and typed and not known and req.mode in ("auto", "keyword", "hybrid", "fuzzy"):
            best = functools.partial(searchsql.best_bm25, match=typed, where=bwhere, params=bparams)
            norm_soon = self._executor().submit(self._read, req, best)

        keyword: list[Candidate] = []
        fuzzy_used = False
        if req.mode in ("auto", "keyword", "hybrid", "fuzzy"):  # fuzzy: unless a word corrects
            keyword = self.keyword_candidates(
                con, parsed, where, params, size, widen=not pending, **pool, pre=pre
            )
        topical = [t for t in parsed.terms if t not in STOP_WORDS]
        want_fuzzy = req.mode == "fuzzy" or (req.mode == "auto" and s.fuzzy and not keyword)
        rewritten = None
        if want_fuzzy and self.fuzzy is not None and topical:
            rewritten = self.fuzzy.rewrite(con, topical, parsed.excluded)  # `-term` holds too
            if rewritten is not None:
                keyword = self._keyword_pool(
                    con, rewritten.match, where, params, size, **pool, pre=pre
                )
                for c in keyword:
                    c.partial = True  # a corrected query is weaker evidence than the typed one
                if keyword:
                    fuzzy_used = True
                    out["corrected_query"] = ""  # as the answer's texts write it (below)

        # BM25 over whole notes for an answer by note (19.2; keywords alone: a fifth,
        # `ranking.keyword_note`), on a search thread once the keyword pool is known, while this
        # one reads the evidence's words, waits for the vector pool and fuses (~3 ms at 100K)
        whole: Soon[Whole] | None = None
        if req.group == "note" and keyword and keyword[0].match:
            docs = sorted({c.document_id for c in keyword if c.document_id is not None})
            note_bm25 = functools.partial(
                notetext.note_bm25, match=keyword[0].match, doc_ids=docs, everywhere=filtered
            )
            soon = self._executor().submit(self._read, req, note_bm25)
            whole = Soon(soon, functools.partial(note_bm25, con))
        if keyword and pending is not None and not fuzzy_used:
            # which texts hold each query word (the evidence's coverage, after fusion), read
            # here while the vector pool's thread works, but those it has begun to read
            mine = ahead.mine()
            if mine is None:
                self.evidence.prefetch(con, query_units(req.query))
            for match in mine or ():
                searchsql.remember_matches(con, match)
        vector: list[Candidate] = []
        scale = DEFAULT_SCALE
        if pending is not None:  # its entries read here: their rows go in `seen` too
            nearest = pending.result()
            ahead.adopt(con)
            vector, scale = self._vector_entries(con, nearest, req.filters, now, size, seen)
        # No padding: a vector neighbour is a candidate only at or above the model's floor,
        # and never one that holds what the query excludes (`-term`, as the keyword pool)
        vector = [c for c in vector if (c.similarity or 0.0) >= scale[0]]
        if vector and parsed.excluded:
            held = searchsql.matching(con, " OR ".join(parsed.excluded), [c.id for c in vector])
            vector = [c for c in vector if c.id not in held]
        # what follows asks of the vector pool's texts (PostgreSQL: one round trip, not three)
        searchrows.read_ahead(con, [c.id for c in vector], seen)
        if req.group == "note":
            steadied(vector, searchsql.text_lengths(con, several_chunks(vector)))

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
        # BM25 normalised by the query's best match without the filter: scores do not depend on it
        if not (keyword and filtered):
            if plain and keyword and typed and not (fuzzy_used or keyword[0].partial):
                searchsql.note_best(con, nkey, now, keyword[0].bm25)  # unfiltered
            norm = None
        elif fuzzy_used and rewritten is not None:
            norm = searchsql.best_bm25(con, rewritten.match, bwhere, bparams)
        elif norm_soon is not None:
            norm = norm_soon.result()
        units = query_units(
            rewritten.corrected_query if fuzzy_used and rewritten is not None else req.query
        )

        def annotate(candidates: list[Candidate]) -> None:
            self.evidence.annotate(con, units, candidates, prefix=fuzzy_used)

        def kpool(con: Connection, match: str, w: str, p: list[Any], n: int) -> list[Candidate]:
            return self._keyword_pool(con, match, w, p, n, **pool, pre=pre)

        def kbase(con: Connection, match: str, w: str, p: list[Any], n: int) -> list[Candidate]:
            return self._keyword_pool(con, match, w, p, n, beside=pool["beside"])  # unfiltered

        fused = self._fuse(keyword, vector, scale, req.group, norm, annotate, whole)
        if mode == "hybrid" and s.entity_weight:
            entityboost.boost(con, req.query, fused, s.entity_weight)  # issue 20.3
        cjk, corrected = has_cjk(req.query), req.mode in ("auto", "fuzzy")
        ranked = admitted(fused, scale, cjk=cjk, corrected=corrected)
        if s.weak_neighbours:
            ranked += followers(fused, ranked, cjk)  # after every backed hit (issue 19.2)
        # A word no text holds lowers the scores; only a query of nothing but absent names or
        # identifiers answers nothing (issue 19.3; docs/protocol.md, "No answer").
        absent, share = absent_units(con, req.query, self.evidence)
        missing = only_absent_names(con, req.query, absent, self.fuzzy) if absent else None
        if missing is not None:
            # nothing holds the identifier asked about: its namesakes do not answer, a note that
            # names it in a range does (search/ranges.py)
            named = self._named(con, absent, where, params, kpool)
            if not named:
                ranked = []
            elif req.mode == "vector":  # those notes' neighbours, as vector search found them
                ranked = [c for c in ranked if c.group_key in {n.group_key for n in named}]
            else:  # BM25 measured against the unfiltered best, as for any keyword match
                every = named if plain else self._named(con, absent, bwhere, bparams, kbase)
                rnorm = bm25_norm(every)
                ranked = self._in_range(named, vector, scale, req.group, annotate, rnorm)
            if req.explain and not ranked:
                out["unanswered"] = f"no text contains {missing!r}"
        if absent and ranked:
            damp(ranked, share)
            if req.explain:
                out["absent"] = absent
        ranked = symbols.holding(con, req.query, ranked)  # C#, .NET, $HOME alone: as written
        if fuzzy_used and rewritten is not None:  # the words the answer's first texts write
            out["corrected_query"] = spelled.answered(con, rewritten, req.query, ranked, keyword)
        listing = ranked if req.group == "note" else None  # whose hits' sections are listed
        out["hits"] = self._finish(con, ranked, limit, now, req, mode, scale, seen, listing)
        full = len(keyword) >= size and not fuzzy_used and missing is None  # search/more.py
        again = functools.partial(
            kpool, con, (keyword[0].match if full else None) or "", where, params
        )
        if more := more_hits(ranked, limit, req.group, full, again):
            out["more"] = more
        if not out["hits"] and fuzzy_used and rewritten is not None:
            out["suggestion"] = out["corrected_query"]  # what it found does not answer
        if not out["hits"] and topical and self.fuzzy is not None and not fuzzy_used:
            if rewritten is None and req.mode != "fuzzy":
                rewritten = self.fuzzy.rewrite(con, topical, parsed.excluded)
            if rewritten is not None and rewritten.corrected_query != req.query:
                out["suggestion"] = spelled.as_written(con, rewritten, req.query)
        return out

    @staticmethod
    def _named(
        con: Connection, absent: list[str], where: str, params: list[Any], kpool: ranges.Pool
    ) -> list[Candidate]:
        """The texts that name one of the absent identifiers in a range (ranges.range_pool)."""
        return [c for u in absent for c in ranges.range_pool(con, u, where, params, kpool)]

    def _in_range(
        self,
        named: list[Candidate],
        vector: list[Candidate],
        scale: Scale,
        group: str,
        annotate: Callable[[list[Candidate]], None],
        best: float | None,
    ) -> list[Candidate]:
        """The answer of a query of nothing but absent identifiers that notes name in a range
        (`named`, ranges.range_pool): those notes alone, fused with the vector pool as any
        keyword match is, each holding the whole query (ranges.credit)."""
        ids = {c.id for c in named}

        def credited(candidates: list[Candidate]) -> None:
            annotate(candidates)
            ranges.credit(candidates, ids)

        fused = self._fuse(named, vector, scale, group, best, credited, None)
        return [c for c in fused if c.keyword_rank is not None]

    def _signal_rows(
        self, con: Connection, candidates: list[Candidate], limit: int, seen: Seen | None = None
    ) -> tuple[dict[int, dict[str, Any]], float | None]:
        """The signal rows of the candidates that can still reach the first `limit`
        (bounds.reachable), and the newest `updated_at` of the backed ones; every row and None
        when the bounds cannot be known (PostgreSQL, an entry gone, an id twice, a negative
        access count or weight). `seen`: rows read on `con` already (searchsql.Seen)."""
        ids = [c.id for c in candidates]
        nudges = bounds.nudge_max(self.settings)
        summary = None
        if nudges is not None and len(set(ids)) == len(ids) and len(ids) > limit:
            backed = [c.id for c in candidates if not c.tail]
            tail = [c.id for c in candidates if c.tail]
            summary = searchsql.signal_summary(con, backed, tail, seen)
        if summary is not None:
            count, newest, memories, low = summary
            if count == len(ids) and (low is None or low >= 0):
                keep = bounds.reachable(candidates, memories, limit, nudges or 0.0)
                raw = searchsql.signal_rows(con, (c.id for c in keep), seen)
                if len(raw) == len(keep):  # the same snapshot: always, but checked
                    return raw, newest
        return searchsql.signal_rows(con, ids, seen), None

    def _finish(
        self,
        con: Connection,
        candidates: list[Candidate],
        limit: int,
        now: float,
        req: SearchRequest,
        mode: str,
        scale: Scale = DEFAULT_SCALE,
        seen: searchsql.Seen | None = None,
        every: list[Candidate] | None = None,
    ) -> list[dict[str, Any]]:
        if not candidates:
            return []
        # Score the candidates from a few columns; build full records only for the winners.
        # Only those that can still reach the first `limit` are read and scored (bounds.py).
        raw, newest = self._signal_rows(con, candidates, limit, seen)
        if newest is None:
            # Recency is measured from the newest of the texts ranked, not from the wall clock:
            # the same query on the same index gives the same order hours apart (issue 19.4).
            backed = [raw[c.id] for c in candidates if c.id in raw and not c.tail]
            newest = max((float(r["updated_at"]) for r in backed), default=now)
        candidates = [c for c in candidates if c.id in raw]
        lc = self.lifecycle
        for c in candidates:
            r = raw[c.id]
            rel = c.components["relevance"]
            if req.use_decay and r["kind"] == "memory" and lc is not None:
                last_used = max(r["updated_at"], r["last_accessed_at"] or 0)
                decay = tier_decay(r["tier"], last_used, now, lc)
                c.components["decay"] = decay
                rel *= decay
            c.components["relevance"] = rel
            nudges = signals(r, self.settings, newest)
            c.components.update(nudges)
            if lc is not None and r["kind"] == "memory":
                boost = getattr(lc, f"boost_{r['tier']}", 0.0)
                c.components["tier"] = boost  # the configured boost; it moves the score by
                nudges["tier"] = SIGNAL_SHARE * max(-1.0, min(1.0, boost))  # this much
            c.final = min(1.0, max(0.0, (1 - SIGNAL_SHARE) * rel + sum(nudges.values())))
            c.components["updated_at"] = float(r["updated_at"])
        top = order(candidates)[:limit]
        if every is not None:  # the hits' sections only: the others' go unread (issue 23.3)
            listed_sections(top, scale, has_cjk(req.query), req.mode in ("auto", "fuzzy"), every)
        return hits_.render(
            con,
            top,
            req,
            mode,
            scale,
            self.settings.fusion,
            self._secret_kinds if self.flag_secrets else None,
        )
