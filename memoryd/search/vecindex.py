"""Fast nearest neighbours for large stores: sign-bit codes in memory, then re-scoring.

sqlite-vec's brute-force scan costs ~7 ms at 10K and ~68 ms at 100K x 384 float32 on a small
machine (and its point lookups by rowid cost ~0.6 ms each at 100K). Above `min_vectors`,
queries go through this cache instead:
1. every vector's signs, taken around the mean vector (text embeddings share a dominant
   direction that would otherwise decide most signs), packed into 48 bytes (4.8 MB at 100K)
   and scanned with XOR + popcount for the closest by Hamming distance (2% of the store, at
   least rerank * k);
2. those re-scored by cosine against a float16 copy (77 MB at 100K; error about 1e-4).
Below `min_vectors` every query is an exact scan of the float16 copy (under a millisecond).
`similarities()` scores a given set of texts exactly: a filtered search uses it when the filter
leaves few candidates, so filters restrict the candidates before ranking instead of after.

The cache follows the store: new vectors (rowid above the highest seen) are appended on the
next query; anything else (vectors collected, a model switch, a checkpoint restore) calls
`invalidate()` and the next query reloads.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from memoryd.search import halfrows
from memoryd.search.entrykeys import EntryKeys
from memoryd.search.hashrows import HashRows
from memoryd.store import entityfilter, searchsql, vectors
from memoryd.store.dialect import is_postgres
from memoryd.store.protocol import Connection, VectorIndex

_POPCOUNT8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def popcount_table(codes: np.ndarray) -> np.ndarray:
    """Set bits per row of a 2-D unsigned array, by a 256-entry lookup table (any NumPy)."""
    as_bytes = np.ascontiguousarray(codes).view(np.uint8).reshape(codes.shape[0], -1)
    return _POPCOUNT8[as_bytes].sum(axis=1, dtype=np.int32)


def popcount_rows(codes: np.ndarray) -> np.ndarray:
    """Set bits per row: np.bitwise_count where it exists (NumPy >= 2), else a lookup table."""
    if _HAS_BITWISE_COUNT:
        return np.bitwise_count(codes).sum(axis=1, dtype=np.int32)
    return popcount_table(codes)


# Rows of codes the Hamming scan takes at a time: its XOR (128 KB) and counts stay in the cache
# and in buffers of the thread's own (`scratch`), where three arrays of the store's length per
# code word were mapped and unmapped per query (800 KB each at 100K: 4.8-7 ms against 1.6-2).
HAMMING_BLOCK = 16384

_SCRATCH = threading.local()


def scratch(name: str, size: int, dtype: Any) -> np.ndarray:
    """A 1-D buffer of this thread's, `size` long (its contents undefined): allocated once and
    reused by every query on the thread, so the per-query arrays over the mmap threshold are
    not mapped and page-faulted each time. The caller must be done with it before it asks for
    the same name again on this thread."""
    bufs: dict[str, np.ndarray] | None = getattr(_SCRATCH, "bufs", None)
    if bufs is None:
        bufs = _SCRATCH.bufs = {}
    buf = bufs.get(name)
    if buf is None or len(buf) < size or buf.dtype != np.dtype(dtype):
        buf = bufs[name] = np.empty(size + size // 16, dtype=dtype)  # room to grow
    return buf[:size]


def hamming(
    codes_t: np.ndarray, query_code: np.ndarray, out: np.ndarray | None = None
) -> np.ndarray:
    """Hamming distance of the query's code to every code, codes stored one word per row
    (shape (words, n)): a column at a time is 5x faster than summing across short rows, and a
    block of HAMMING_BLOCK rows at a time keeps the temporaries small (written into `out`,
    int32, when given; the distances are the same either way)."""
    words, n = codes_t.shape
    if out is None:
        out = np.zeros(n, dtype=np.int32)
    block = min(n, HAMMING_BLOCK)
    xor = scratch("xor", block, np.uint64)
    bits = scratch("bits", block, np.uint8)
    for start in range(0, n, HAMMING_BLOCK):
        end = min(n, start + HAMMING_BLOCK)
        w, dist = end - start, out[start:end]
        dist[:] = 0
        for j in range(words):
            np.bitwise_xor(codes_t[j, start:end], query_code[j], out=xor[:w])
            if _HAS_BITWISE_COUNT:
                np.bitwise_count(xor[:w], out=bits[:w])
                np.add(dist, bits[:w], out=dist)
            else:
                dist += popcount_table(xor[:w, None])
    return out


def nearest_codes(codes_t: np.ndarray, query_code: np.ndarray, m: int) -> np.ndarray:
    """The rows of the m codes nearest the query's by Hamming distance (np.argpartition's
    choice among ties), the distances in a buffer of the thread's."""
    ham = hamming(codes_t, query_code, out=scratch("hamming", codes_t.shape[1], np.int32))
    return np.argpartition(ham, m - 1)[:m]


def rescore(full: np.ndarray, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """full[rows] . query in float32, a block of rows at a time (halfrows.py: the float16 rows
    made float32 without a fresh mapping per query, by onnxruntime where it is loaded), on this
    thread: a BLAS call would wake OpenBLAS's worker threads, which costs 10-40 ms on a busy
    machine for 2,000 rows."""
    out = np.empty(len(rows), dtype=np.float32)
    for start, block in halfrows.float32_blocks(full, rows):
        out[start : start + len(block)] = np.einsum("ij,j->i", block, query)
    return out


_HAS_BITWISE_COUNT = hasattr(np, "bitwise_count")


# A masked scan (knn_among) scores every allowed row when there are at most this many: about
# what the Hamming scan and the re-scoring of an unfiltered k-NN cost at 100K (and the
# nearest answer, where the pre-selection's might miss some).
EXACT_ROWS = 8192
LOAD_ROWS = 4096  # vectors read per query while loading: ~6 MB of blobs at 384-d, not the lot
HEADROOM = 1 / 16  # spare rows kept on growth: appends fill them in place (6% ~ 5 MB at 100K)


def sign_code(vecs: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Each row's sign bits around `mean`, packed into uint64 words (rows, words): the stored
    codes and a query's are made alike."""
    bits = np.packbits((vecs - mean) > 0, axis=-1)
    pad = (-bits.shape[-1]) % 8
    if pad:
        bits = np.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, pad)])
    return np.ascontiguousarray(bits).view(np.uint64)


class VectorCache:
    """The vectors of the active model in memory: float16 rows and sign-bit codes, each in a
    buffer with spare rows at the end. New vectors are written into the spare rows, so a write
    of a few vectors (an added memory, an edited note) costs a few rows, not a copy of the whole
    store (77 MB at 100K, which every add used to allocate and copy under the lock, on the query
    path). Readers take views of the first `n` rows under the lock and use them outside it:
    appends only write rows past every view handed out, and a regrowth makes a new buffer."""

    masks = True  # knn_among's masked scan (its entry keys are SQLite's: entrykeys.py)

    def __init__(self, *, min_vectors: int = 5_000, rerank: int = 10) -> None:
        self.min_vectors = min_vectors
        self.rerank = rerank
        self._lock = threading.Lock()
        self._model_id: int | None = None
        self._max_rowid = 0
        self._n = 0
        self._codes = np.zeros((0, 0), dtype=np.uint64)  # one word per row: (words, capacity)
        self._full = np.zeros((0, 0), dtype=np.float16)  # (capacity, dim)
        self._hashes = HashRows()  # the content hash of each row, and the row of each hash
        self._mean_n = 0
        self._mean = np.zeros(0, dtype=np.float32)
        self.entry_keys = EntryKeys()  # built by warm() or the first search
        # knn_among's last mask per connection: (entry ids, rows' hashes, rows, mask)
        self._masks: weakref.WeakKeyDictionary[Any, tuple[Any, ...]] = weakref.WeakKeyDictionary()

    def invalidate(self) -> None:
        with self._lock:
            self._model_id = None
        self.entry_keys.reset()
        self._masks.clear()

    def __len__(self) -> int:
        return self._n

    def _code(self, vecs: np.ndarray) -> np.ndarray:
        return sign_code(vecs, self._mean)

    def _reserve(self, rows: int) -> None:
        """Room for `rows` more vectors: a bigger buffer (copying the filled rows) only when the
        spare rows run out."""
        need = self._n + rows
        if need <= self._full.shape[0]:
            return
        cap = need + max(1024, int(need * HEADROOM))
        full = np.empty((cap, self._full.shape[1]), dtype=np.float16)
        full[: self._n] = self._full[: self._n]
        codes = np.empty((self._codes.shape[0], cap), dtype=np.uint64)
        codes[:, : self._n] = self._codes[:, : self._n]
        # The spare rows are written now, so they are resident from the start: the cache's
        # memory is what it reserved, and RSS moves at a regrowth, not with the appends (numpy
        # backs buffers of 4 MB and more with 2 MB huge pages, so appends made RSS jump by
        # 2 MB at a time, ~4 MB over the soak's hour at 100K: BENCHMARKS.md, branch soak5).
        full[self._n :] = 0
        codes[:, self._n :] = 0
        self._full, self._codes = full, codes

    def _recode(self) -> None:
        """Re-take the centre the sign bits are taken around, and every code, a block at a time
        (a float32 copy of the whole store would be 154 MB at 100K)."""
        n = self._n
        total = np.zeros(self._full.shape[1], dtype=np.float64)
        for i in range(0, n, LOAD_ROWS):
            total += self._full[i : min(i + LOAD_ROWS, n)].astype(np.float32).sum(axis=0)
        self._mean = (total / max(n, 1)).astype(np.float32)
        self._mean_n = n
        codes = np.empty_like(self._codes)  # a new buffer: readers may hold views of the old
        for i in range(0, n, LOAD_ROWS):
            block = self._full[i : min(i + LOAD_ROWS, n)].astype(np.float32)
            codes[:, i : i + len(block)] = self._code(block).T
        self._codes = codes

    def _sync(self, con: Connection, model_id: int, dim: int, newest: int | None = None) -> None:
        """Load the rows the store has and this cache has not: all of them for another model,
        else those with a row id above the highest seen (`newest`: the store's highest row id,
        when the caller read it already)."""
        if self._model_id != model_id:
            self._model_id, self._max_rowid, self._n = model_id, 0, 0
            self._codes = np.zeros(((dim + 63) // 64, 0), dtype=np.uint64)
            self._full = np.zeros((0, dim), dtype=np.float16)
            self._hashes = HashRows()
            self._mean_n = 0
            self._mean = np.zeros(dim, dtype=np.float32)
        if newest is None:
            newest = vectors.newest_id(con)
        if newest is None or newest <= self._max_rowid:
            return
        if not self._n:
            # first load: size the buffer once for what the store holds
            self._reserve(vectors.model_count(con, model_id))
        start = self._n
        while True:
            rows = vectors.rows_after(con, model_id, self._max_rowid, LOAD_ROWS)
            if not rows:
                break
            block = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(-1, dim)
            self._reserve(len(rows))
            n = self._n
            self._full[n : n + len(rows)] = block
            if self._mean_n:
                self._codes[:, n : n + len(rows)] = self._code(block).T
            self._hashes.append([r[1] for r in rows], headroom=self._full.shape[0] - n - len(rows))
            self._n = n + len(rows)
            self._max_rowid = int(rows[-1][0])
            if len(rows) < LOAD_ROWS:
                break
        if self._n > start and (not self._mean_n or self._n >= 2 * self._mean_n):
            # The centre the sign bits are taken around, re-taken each time the store doubles
            # (a store that starts empty would otherwise keep the mean of its first few texts).
            self._recode()

    def _view(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        n = self._n
        return self._codes[:, :n], self._full[:n], self._hashes.view(n), n

    def count(self, con: Connection, model_id: int) -> int:
        return vectors.model_count(con, model_id)

    def warm(self, con: Connection) -> None:
        """Load the active model's vectors now (startup), and the chunks' hash keys the vector
        pool finds its entries by (`_carrying`), so no query pays for them."""
        active = vectors.active_model(con)
        if active is None or self.count(con, active[0]) < self.min_vectors:
            return
        with self._lock:
            self._sync(con, active[0], active[2])
        if not is_postgres(con):
            self.entry_keys.chunks_with(con, ["0" * 64])  # reads and sorts them

    def knn(
        self, con: Connection, model_id: int, dim: int, query: np.ndarray, k: int
    ) -> list[tuple[str, float]]:
        """The k nearest texts as (content_hash, cosine distance), nearest first."""
        with self._lock:
            self._sync(con, model_id, dim)
        return self._nearest(query, k)[0]

    def _nearest(self, query: np.ndarray, k: int) -> tuple[list[tuple[str, float]], int]:
        """knn over the rows the cache holds now, and how many rows those were."""
        with self._lock:
            codes, full, hashes, n = self._view()
            mean = self._mean
        if n == 0 or k <= 0:
            return [], n
        q = np.asarray(query, dtype=np.float32)
        if n <= self.min_vectors:
            cand = np.arange(n)
        else:
            m = min(n, max(k * self.rerank, 200, n // 50))  # re-score at least 2% of the store
            code = sign_code(q[None, :], mean)[0]
            cand = nearest_codes(codes, code, m) if m < n else np.arange(n)
        sims = rescore(full, cand, q)
        k = min(k, len(cand))
        top = np.argpartition(-sims, k - 1)[:k] if k < len(cand) else np.arange(len(cand))
        top = top[np.lexsort((cand[top], -sims[top]))]
        return [(hashes[int(cand[i])].decode(), float(1.0 - sims[i])) for i in top], n

    def knn_among(
        self,
        con: Connection,
        model_id: int,
        dim: int,
        query: np.ndarray,
        k: int,
        entry_ids: np.ndarray,
        preselect: int,
    ) -> tuple[list[tuple[str, float]], bool, float]:
        """knn's answer among the vectors of the given entries (an entities filter's): the same
        Hamming pre-selection as knn(k=preselect), the rows the entries do not hold masked out
        of it, those left re-scored and the best k kept, so it returns what knn(preselect)
        filtered to these entries afterwards does whenever that holds k of them, re-scoring
        their share of the pre-selection instead of all of it (issue 20.6); every allowed row
        when they are few (EXACT_ROWS). Also: whether every allowed row was scored, and how
        many allowed texts knn(preselect)'s answer would hold, estimated from their share of
        the pre-selection (below k, that one widens). The allowed rows come from entry_keys
        (the chunks' hash keys; a row too many is harmless: the caller checks the entries of
        what comes back)."""
        with self._lock:
            self._sync(con, model_id, dim)
            codes, full, row_hashes, n = self._view()
            mean, hash_rows = self._mean, self._hashes
        # The same entries on the same rows (entries_of hands out one array while nothing was
        # written, and the rows stand while the cache neither grew nor reloaded): the same mask.
        last = self._masks.get(con)
        if last is not None and last[0] is entry_ids and last[1] is hash_rows and last[2] == n:
            allowed = last[3]
        else:
            keys, hashes = self.entry_keys.split(con, entry_ids)
            allowed = np.zeros(n, dtype=bool)
            with self._lock:
                allowed[hash_rows.rows_of_keys(keys, n)] = True
                allowed[[r for r in hash_rows.rows(hashes) if r < n]] = True
            self._masks[con] = (entry_ids, hash_rows, n, allowed)
        if n == 0 or k <= 0 or not allowed.any():
            return [], True, 0.0
        q = np.asarray(query, dtype=np.float32)
        m = min(n, max(preselect * self.rerank, 200, n // 50))
        everything = n <= self.min_vectors or m >= n or np.count_nonzero(allowed) <= EXACT_ROWS
        if everything:
            cand = np.flatnonzero(allowed)
        else:
            cand = nearest_codes(codes, sign_code(q[None, :], mean)[0], m)
            cand = cand[allowed[cand]]
        sims = rescore(full, cand, q)
        k = min(k, len(cand))
        top = np.argpartition(-sims, k - 1)[:k] if k < len(cand) else np.arange(len(cand))
        top = top[np.lexsort((cand[top], -sims[top]))]
        nearest = [(row_hashes[int(cand[i])].decode(), float(1.0 - sims[i])) for i in top]
        if everything:
            return nearest, True, float(len(cand))
        return nearest, False, len(cand) * preselect / m

    def similarities(
        self, con: Connection, model_id: int, dim: int, query: np.ndarray, wanted: set[str]
    ) -> dict[str, float]:
        """Exact cosine similarity of the query to each wanted text that has a vector."""
        with self._lock:
            self._sync(con, model_id, dim)
            _, full, hashes, _ = self._view()
            rows = self._hashes.rows(wanted)
        if not rows:
            return {}
        idx = np.array(sorted(rows), dtype=np.int64)
        sims = rescore(full, idx, np.asarray(query, dtype=np.float32))
        return {hashes[int(i)].decode(): float(s) for i, s in zip(idx, sims, strict=True)}


def nearest_entries(
    con: Connection,
    index: VectorIndex,
    model_id: int,
    dim: int,
    qvec: np.ndarray,
    flt: tuple[str, list[Any]],
    size: int,
    exact_max: int | None,
    knn_max: int,
    start: int | None = None,
    among: tuple[Sequence[Sequence[int]], str, list[Any]] | None = None,
    *,
    first: Neighbours | None = None,
    seen: searchsql.Seen | None = None,
) -> list[tuple[float, int, int | None]]:
    """The vector pool's rows: (similarity, entry id, document id) of the `size` entries
    nearest the query that pass the filter `flt` (entries.filter_sql's where and params),
    nearest first. With `exact_max` (a filter that may pass few texts), when the filter passes
    at most that many entries their vectors are scored exactly; otherwise the nearest-neighbour
    search widens (never past knn_max) until `size` entries pass and, if the filter still
    leaves too few, falls back to scoring every entry it passes, so a filtered query finds
    what an unfiltered one restricted afterwards does. `start`: the first k (a filter known to
    pass a share of the entries: request.wide_first). `among` (request.vector_mask): an
    entities filter's groups (resolved), which the in-memory cache checks as a mask over its
    rows (`_masked`), and the rest of `flt`."""
    where, params = flt
    found: list[tuple[int, str, int | None]] | None = None
    sims: dict[str, float] = {}
    if exact_max is not None:
        allowed = searchsql.filtered_entries(con, where, params, exact_max + 1)
        if len(allowed) <= exact_max:
            found = allowed
            sims = index.similarities(con, model_id, dim, qvec, {h for _, h, _ in allowed})
    if found is None and among is not None and isinstance(index, VectorCache) and index.masks:
        groups, rest = among[0], (among[1], among[2])
        return _masked(con, index, (model_id, dim, qvec), rest, size, knn_max, start, groups)
    if found is None:
        k = first_k(size, knn_max, start)
        both = getattr(index, "knn_entries", None)  # PostgreSQL: one statement for both
        while True:
            if both is not None:
                nearest, found = both(con, model_id, qvec, k, (where, params))
                sims = {h: 1.0 - d for h, d in nearest}
            else:
                nearest = first.nearest if first else index.knn(con, model_id, dim, qvec, k)
                sims = {h: 1.0 - d for h, d in nearest}
                chunks = first.chunks if first else None
                found = _carrying(con, index, list(sims), where, params, seen, chunks)
                first = None  # a wider k-NN is this thread's
            if len(found) >= size or len(nearest) < k:
                break
            if k >= knn_max:
                found = searchsql.filtered_entries(con, where, params, -1)
                sims = index.similarities(con, model_id, dim, qvec, {h for _, h, _ in found})
                break
            k = min(k * 4, knn_max)
    scored = sorted(
        ((sims[h], i, doc) for i, h, doc in found if h in sims), key=lambda t: (-t[0], t[1])
    )
    return scored[:size]


def first_k(size: int, knn_max: int, start: int | None = None) -> int:
    """How many nearest texts nearest_entries' k-NN asks for first."""
    return min(max(size, start or 0), knn_max)


class Neighbours(NamedTuple):
    """nearest_entries' first k-NN on the in-memory cache, found on a thread of its own: the
    nearest texts (content hash, cosine distance), nearest first, and the ids of the chunks
    that may carry them (entrykeys.chunks_with); their entries are read by the caller."""

    nearest: list[tuple[str, float]]
    chunks: np.ndarray


def neighbours(
    con: Connection, cache: VectorCache, model_id: int, dim: int, qvec: np.ndarray, k: int
) -> Neighbours:
    """The first k-NN of nearest_entries (k: `first_k`) without reading any entry."""
    nearest = cache.knn(con, model_id, dim, qvec, k)
    return Neighbours(nearest, cache.entry_keys.chunks_with(con, [h for h, _ in nearest]))


MEMORIES_BY_ID = 128  # memories read by id beside the chunks of the hashes, at most


def _carrying(
    con: Connection,
    index: VectorIndex,
    hashes: list[str],
    where: str,
    params: list[Any],
    seen: searchsql.Seen | None = None,
    chunks: np.ndarray | None = None,
) -> list[tuple[int, str, int | None]]:
    """searchsql.entries_with_hashes: the entries that carry the hashes and pass the filter.
    SQLite with the in-memory cache: read by id, the chunks' from its entry keys
    (entrykeys.chunks_with, or `chunks` when they were found already) and every memory's
    (whose text changes in place) when there are few of them; otherwise through the
    content-hash index."""
    if isinstance(index, VectorCache) and not is_postgres(con):
        memories = searchsql.memory_ids(con, MEMORIES_BY_ID + 1)
        if len(memories) <= MEMORIES_BY_ID:
            if chunks is None:
                chunks = index.entry_keys.chunks_with(con, hashes)
            ids = [*chunks.tolist(), *memories]
            return searchsql.entries_with_ids(con, ids, hashes, where, params, seen)
    return searchsql.entries_with_hashes(con, hashes, where, params, seen)


def _masked(
    con: Connection,
    cache: VectorCache,
    query: tuple[int, int, np.ndarray],
    rest: tuple[str, list[Any]],
    size: int,
    knn_max: int,
    start: int | None,
    among: Sequence[Sequence[int]],
) -> list[tuple[float, int, int | None]]:
    """nearest_entries for an entities filter on the in-memory cache: the entries it allows
    (one read of `mentions`) masked over the rows of the same pre-selection as the k-NN it
    replaces, widened wherever that one may widen (its answer may hold fewer than `size`
    allowed texts: x4, to knn_max, then every allowed row is scored) or where the rest of the
    filter drops some: the same answer, or a nearer one where the k-NN would not have widened
    after all."""
    model_id, dim, qvec = query
    where, params = rest  # the filter but its entities: those are `allowed`, checked here
    allowed = entityfilter.entries_of(con, among)
    k, want = min(max(size, start or 0), knn_max), size
    while True:
        nearest, complete, held = cache.knn_among(con, model_id, dim, qvec, want, allowed, k)
        sims = {h: 1.0 - d for h, d in nearest}
        found = searchsql.entries_with_hashes(con, list(sims), where, params)
        ids = np.array([i for i, _, _ in found], dtype=np.int64)
        at = np.minimum(np.searchsorted(allowed, ids), max(len(allowed) - 1, 0))
        passes = (allowed[at] == ids).tolist() if len(allowed) else [False] * len(ids)
        found = [f for f, keep in zip(found, passes, strict=True) if keep]
        # held is an estimate (about +-sqrt of itself): two of those over `size`, or widen
        if complete or (len(found) >= size and held >= size + 2 * size**0.5):
            break
        k = min(k * 4, knn_max) if k < knn_max else len(cache) + 1  # the last: every row
        want = want if len(found) >= size else want * 4
    scored = sorted(((sims[h], i, doc) for i, h, doc in found), key=lambda t: (-t[0], t[1]))
    return scored[:size]
