"""The searcher's candidate pools and their fusion: the keyword pool (BM25 over FTS5, pruned by
`store/ftsprune.py`), the vector pool (the vector cache or sqlite-vec, filters applied before
ranking: vecindex.py) and `_fuse`, which merges them per chunk or per note (`ranking.scorer`).

`Pools` is a mixin of `searcher.Searcher`: it needs the searcher's settings, vector cache,
executor and read function, and nothing else.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from memoryd.search.ftsquery import ParsedQuery, prefix_match
from memoryd.search.ranking import (
    DEFAULT_SCALE,
    Candidate,
    Scale,
    SearchSettings,
    bm25_norm,
    group_by_note,
    keyword_note,
    scorer,
    similarity_scale,
    whole_note,
)
from memoryd.search.request import SearchRequest, narrowing, vector_mask, wide_first
from memoryd.search.sharedvec import SharedVectorCache
from memoryd.search.vecindex import (
    Neighbours,
    VectorCache,
    first_k,
    nearest_entries,
    neighbours,
)
from memoryd.store import searchrows, searchsql, vectors, wordrows
from memoryd.store.dialect import is_postgres
from memoryd.store.entries import Filters, filter_sql
from memoryd.store.protocol import Connection

T = TypeVar("T")
Whole = tuple[dict[int, float], float | None]  # notetext.note_bm25's: BM25 by note, the norm


class Soon(Generic[T]):
    """A read handed to another thread, asked for later: `result()` waits for it once it has
    started, and otherwise cancels it and runs `here` on the caller's thread instead, so a
    busy executor (every worker taken) never makes the caller wait behind other work."""

    def __init__(self, future: Future[T], here: Callable[[], T]) -> None:
        self.future, self.here = future, here

    def result(self) -> T:
        return self.here() if self.future.cancel() else self.future.result()


class WordsAhead:
    """The query's words the search's connection has not read yet (which texts hold each: the
    evidence's coverage, search/evidence.py), each read by whichever thread comes to it first:
    the vector pool's after its k-NN (`words_ahead`; the search's connection keeps them when
    its index is the same generation: `adopt`), or the search's after its keyword pool
    (`mine`). On two cores the k-NN is done before the keyword pool is, and a new word's read
    (~1.2 ms at 100K chunks) leaves the search's thread; all of them read before the k-NN
    delayed the vector pool as much (BENCHMARKS.md, issue 23.3, branches q7 and q8)."""

    def __init__(self, words: list[str]) -> None:
        self.words = words
        self._lock = threading.Lock()
        self._taken: set[str] = set()
        self._read: list[wordrows.Ahead] = []

    def _take(self, word: str) -> bool:
        with self._lock:
            if word in self._taken:
                return False
            self._taken.add(word)
            return True

    def mine(self) -> list[str] | None:
        """The words the search's thread reads itself (those the vector pool's has not begun);
        None when no word was left to that thread (every word read already, PostgreSQL)."""
        return [w for w in self.words if self._take(w)] if self.words else None

    def words_ahead(self, con: Connection) -> None:
        """On the vector pool's thread, after its k-NN: each word the search has not taken."""
        for word in self.words:
            if self._take(word):
                found = searchrows.words_ahead(con, [word])
                if found is not None:
                    self._read.append(found)

    def adopt(self, con: Connection) -> None:
        """On the search's connection, once the vector pool's thread is done."""
        for found in self._read:
            searchrows.adopt_words(con, found)


@dataclass(frozen=True)
class Nearest:
    """The vector pool as its own thread leaves it (`Pools._vector_knn`): `pool`, the whole
    pool, when that thread read it all; else `knn`, the in-memory cache's first k-NN
    (vecindex.neighbours), whose entries the search reads on its own connection
    (`Pools._vector_entries`), with the active model (id, key, dimensions) and the query."""

    pool: tuple[list[Candidate], Scale] | None
    knn: Neighbours | None = None
    model: tuple[int, str, int] | None = None
    qvec: np.ndarray | None = None
    rows: int = 0  # the cache's rows `knn` was found among (SharedVectorCache.held)
    carried: Any = None  # what the pool's read read ahead for the search (searchrows.carried)


_NO_CHUNKS = np.zeros(0, dtype=np.int64)  # PostgreSQL reads a neighbour's entries by hash
EXACT_SCAN_MAX = 20_000  # a filter leaving at most this many entries: exact vector scan
KNN_MAX = 4096  # never ask the nearest-neighbour search for more than this


class Pools:
    """Candidate pools and fusion, mixed into `Searcher`."""

    settings: SearchSettings
    vector_cache: Any
    model: Any  # the query's model (index/embed.ModelHolder): its identity names its vectors

    def _executor(self) -> ThreadPoolExecutor:
        raise NotImplementedError

    def _read(self, req: SearchRequest, fn: Callable[[Connection], T], **how: Any) -> T:
        raise NotImplementedError

    def keyword_candidates(
        self,
        con: Connection,
        parsed: ParsedQuery,
        where: str,
        params: list[Any],
        size: int,
        *,
        widen: bool = False,
        **pool: Any,
    ) -> list[Candidate]:
        """The keyword pool: BM25 over the texts that hold any of the query's topical terms
        (the query as typed when it has one group only), so a question ("what did we decide
        about auth?") finds its note; how much of the query a text holds weighs its keyword
        part later (`ranking.relevance`, coverage), not its place in the pool (issue 19.2).
        `pool`, _keyword_pool's: `narrow`, the filter may leave few texts (`narrowing`);
        `beside`, ranks half of a large index's matches on another thread at the same time
        (`_beside`); `pre`, an entities filter checked on FTS5's rowids (`keyword_prefilter`);
        `seen`, the signal columns of the rows read on `con` (searchsql.Seen).
        `widen` (keywords alone, no vector pool): when no text holds any of the words as typed,
        their prefixes are searched instead (`ftsquery.prefix_match`: "when is the retro" finds
        the retrospectives), as weak evidence (`partial`, like a typo correction). Beside a
        vector pool they are not: there the neighbours and typo correction answer, and a
        question about other notes altogether would find their prefixes (issue 19.6)."""
        if not parsed.match:
            return []
        match = parsed.match_any or parsed.match
        found = self._keyword_pool(con, match, where, params, size, **pool)
        widened = None if found or not widen else prefix_match(parsed)
        if widened is None:
            return found
        found = self._keyword_pool(con, widened, where, params, size, **pool)
        for c in found:
            c.partial = True
        return found

    def _keyword_pool(
        self,
        con: Connection,
        match: str,
        where: str,
        params: list[Any],
        size: int,
        *,
        narrow: bool = False,
        beside: searchsql.Beside | None = None,
        pre: searchsql.Prefilter | None = None,
        seen: searchsql.Seen | None = None,
    ) -> list[Candidate]:
        found = searchsql.keyword_pool(
            con, match, where, params, size, narrow=narrow, beside=beside, pre=pre, seen=seen
        )
        return [
            Candidate(id=i, document_id=doc, keyword_rank=rank, bm25=score, match=match)
            for rank, (i, score, doc) in enumerate(found, start=1)
        ]

    def _beside(self, req: SearchRequest) -> searchsql.Beside:
        """Runs a function of a read connection on a search thread (keyword_pool's `beside`)."""
        return lambda fn: self._executor().submit(self._read, req, fn)

    def _usable(self, model: tuple[int, str, int] | None, qvec: np.ndarray) -> bool:
        """Whether the store's vectors of `model` (the active one, or the one the shared cache
        holds) can be compared with a query embedded by this daemon's model: the same model
        (its key: name and dimension), not only the same dimension. multilingual-e5-small and
        all-MiniLM-L6-v2 both make 384 numbers, and the store's active model is another than
        the daemon's for a moment after a change of model (before the worker registers the
        new one) and for as long as another daemon of a shared database uses another model."""
        if model is None or model[2] != int(qvec.shape[-1]):
            return False
        ident = getattr(self.model, "identity", None)
        return ident is None or model[1] == ident.key

    def _vector_pool(
        self, con: Connection, qvec: np.ndarray, filters: Filters, now: float, size: int
    ) -> tuple[list[Candidate], Scale]:
        """The `size` nearest entries that pass the filters, nearest first, and the model's
        similarity scale; filters restrict the candidates before ranking (vecindex.py)."""
        active = vectors.active_model(con)
        if active is None or not self._usable(active, qvec):
            return [], DEFAULT_SCALE
        return self._vector_rest(con, Nearest(None, None, active, qvec), filters, now, size)

    def _vector_thread(
        self,
        req: SearchRequest,
        qvec: np.ndarray,
        now: float,
        size: int,
        pool: Callable[[Connection], Nearest],
        snapshot: str | None = None,
    ) -> Nearest:
        """The vector pool's thread (searcher._run): on a shared store's cache with no filter
        that narrows the texts or names entities, the nearest texts from the rows it holds,
        with no read of its own (`SharedVectorCache.held`: no BEGIN, no statement, no
        ROLLBACK); their entries are read with what search asks of them next, on the search's
        own read, which first checks that the cache was current (`_vector_entries`).
        Otherwise `pool` (`_vector_knn`, then the words ahead) on a read of its own, under
        the search's `snapshot` when it has one (PgStore.read)."""
        cache, filters = self.vector_cache, req.filters
        if isinstance(cache, SharedVectorCache) and not (
            narrowing(filters, vector=True) or filters.entities
        ):
            model = cache.model
            if model is not None and self._usable(model, qvec):
                held = cache.held(model[0], qvec, first_k(size, KNN_MAX))
                if held is not None:
                    nearest = Neighbours(held[0], _NO_CHUNKS)
                    return Nearest(None, nearest, model, qvec, held[1])
        return self._read(req, pool, snapshot=snapshot)

    def _vector_knn(
        self, con: Connection, qvec: np.ndarray, filters: Filters, now: float, size: int
    ) -> Nearest:
        """The vector pool's part on a thread of its own (searcher._run), beside the keyword
        pool: with the in-memory cache on SQLite and no filter that narrows the texts or names
        entities, the nearest texts alone; their entries are read afterwards on the search's
        own connection (`_vector_entries`), in its read transaction: its later statements (the
        signal summary and rows) then have them (searchsql.Seen), and this thread is done
        before the keyword pool is (at 100K chunks the k-NN ~3 ms, the entries ~1.5 ms of
        CPU, the keyword pool ~4.5). Otherwise the whole pool, here."""
        active = vectors.active_model(con)
        if active is None or not self._usable(active, qvec):
            return Nearest(([], DEFAULT_SCALE))
        here = Nearest(None, None, active, qvec)
        if (
            is_postgres(con)
            or not isinstance(self.vector_cache, VectorCache)
            or narrowing(filters, vector=True)
            or filters.entities
        ):
            return Nearest(self._vector_rest(con, here, filters, now, size))
        model_id, _, dim = active
        knn = neighbours(con, self.vector_cache, model_id, dim, qvec, first_k(size, KNN_MAX))
        return Nearest(None, knn, active, qvec)

    def _vector_entries(
        self,
        con: Connection,
        found: Nearest,
        filters: Filters,
        now: float,
        size: int,
        seen: searchsql.Seen | None = None,
    ) -> tuple[list[Candidate], Scale]:
        """The vector pool from what its thread left (`_vector_knn`), its entries read on `con`
        (the search's: their signal columns go in `seen`), and what its read read ahead for
        this one when both saw the same snapshot (searchrows.carried: PostgreSQL)."""
        if seen is not None:
            searchrows.adopt_carried(con, found.carried, seen)
        if found.pool is not None:
            return found.pool
        cache = self.vector_cache
        if isinstance(cache, SharedVectorCache) and found.knn is not None:
            # `held` answered from what the cache had: still this read's, or ask again here
            assert found.qvec is not None
            active = vectors.active_model(con)
            if active is None or not self._usable(active, found.qvec):
                return [], DEFAULT_SCALE
            if found.model != active or not cache.current(con, active[0], active[2], found.rows):
                found = Nearest(None, None, active, found.qvec)
        return self._vector_rest(con, found, filters, now, size, seen)

    def _vector_rest(
        self,
        con: Connection,
        found: Nearest,
        filters: Filters,
        now: float,
        size: int,
        seen: searchsql.Seen | None = None,
    ) -> tuple[list[Candidate], Scale]:
        assert found.model is not None and found.qvec is not None
        model_id, key, dim = found.model
        if isinstance(self.vector_cache, SharedVectorCache):
            self.vector_cache.model = found.model
        where, params = filter_sql(filters, now, wide=True)  # a common name: checked per text
        exact = EXACT_SCAN_MAX if narrowing(filters, vector=True) else None
        flt, start = (where, params), wide_first(filters, size, con)
        among = vector_mask(filters, now) if start is not None else None  # a wide one
        scored = nearest_entries(
            con,
            self.vector_cache,
            model_id,
            dim,
            found.qvec,
            flt,
            size,
            exact,
            KNN_MAX,
            start,
            among,
            first=found.knn,
            seen=seen,
        )
        return [
            Candidate(id=i, document_id=doc, vector_rank=rank, similarity=sim)
            for rank, (sim, i, doc) in enumerate(scored, start=1)
        ], similarity_scale(key)

    def _fuse(
        self,
        keyword: list[Candidate],
        vector: list[Candidate],
        scale: Scale,
        group: str,
        best_bm25: float | None = None,
        annotate: Callable[[list[Candidate]], None] | None = None,
        whole: Whole | Soon[Whole] | None = None,
    ) -> list[Candidate]:
        """Merge the pools and score each chunk; with group "note", score each note by its own
        ranks in the pools (fusion per note) and keep its chunks as sections. `annotate` sets
        the keyword coverage of each candidate (and of a note's sections) before scoring.
        `whole`: each note's BM25 over the whole note and the best of them
        (store/notetext.py): in a hybrid answer the note's keyword part is measured by it
        (`ranking.whole_note`), with keywords alone partly (`ranking.keyword_note`); as a
        `Soon` (read on another thread), asked for after `annotate`, so the two overlap."""
        s = self.settings
        by_id: dict[int, Candidate] = {c.id: c for c in keyword}
        for c in vector:
            if c.id in by_id:
                by_id[c.id].vector_rank = c.vector_rank
                by_id[c.id].similarity = c.similarity
            else:
                by_id[c.id] = c
        chunks = list(by_id.values())
        if best_bm25 is None:
            best_bm25 = bm25_norm(keyword)
        notes = chunks if group == "none" else group_by_note(chunks)
        if annotate is not None:
            annotate(notes)
        if isinstance(whole, Soon):
            whole = whole.result()
        # coverage weighs keyword matches beside a vector pool only (ranking.scorer: the
        # settings read once for every candidate)
        score = scorer(s, scale, s.coverage_power if vector else 0.0)
        for c in chunks:
            c.fused, kpart, vpart = score(c, best_bm25)
            parts = c.components
            parts["keyword"], parts["vector"], parts["relevance"] = kpart, vpart, c.fused
        if group == "none":
            return chunks
        for n in notes:
            if len(n.sections) > 1:
                n.sections.sort(key=lambda c: (-c.fused, c.id))
            best = n.sections[0]
            n.id, n.match = best.id, best.match or n.match
            norm = None
            if whole is not None and vector:
                norm = whole_note(n, whole)
            elif whole is not None:
                keyword_note(n, whole, best_bm25)  # keywords alone: partly the whole note
            n.fused, kpart, vpart = score(n, best_bm25 if norm is None else norm)
            parts = n.components
            parts["keyword"], parts["vector"], parts["relevance"] = kpart, vpart, n.fused
        return notes
