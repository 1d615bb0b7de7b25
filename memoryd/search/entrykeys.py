"""The content hash of every chunk by entry id, for the vector cache's masked scan.

A search filtered by a name in a seventh of the sections (issue 20.6) knows which entries it
allows (an index-only read of `mentions`: 3.6 ms for 14,000 at 100K chunks) but not which rows
of the vector cache those are: reading their content hashes through `entries` costs 20-100 ms
there. This keeps, per chunk entry, the 64-bit key of its content hash (hashrows.keys_of; 16
bytes a chunk, 1.6 MB at 100K), so the allowed rows are a binary search away.

Why it stays exact without being told of writes:
- new entries have ids above every id seen (AUTOINCREMENT); each call reads those first;
- a chunk's content never changes in place (an edited note's chunks are deleted and inserted
  anew), and a deleted chunk's id is never given to another chunk; a deleted chunk's row here
  is never asked for again (its mentions went with it; `chunks_with` may name it, and the
  read by id finds nothing) and only takes room, until the rows outnumber the entries twice
  over (looked at every RECOUNT_S) and everything is read again (a search on an older
  snapshot at that moment could miss a chunk the newer one had deleted: the price of not
  re-reading on every write);
- memories change in place (an update, an import reusing an id) and are left out: their
  hashes are read each time (`split`), as are ids not found here;
- a checkpoint restore replaces the database: the vector cache's `invalidate()` resets this.
It is built when first needed (about 100 ms at 100K chunks).

The vector pool also finds its neighbours' entries through it (`chunks_with`): the ids of the
chunks whose hash key is one of the neighbours' hashes, read by id (~0.9 ms for 200 at 100K
chunks, against ~1.9 through the content-hash index: BENCHMARKS.md, branch q6). For that the
keys are also kept sorted, with their ids in key order (16 bytes more a chunk, 1.6 MB at
100K), sorted again once RESORT chunks were added since; those are compared one by one.
The daemon builds it at start-up (vecindex.VectorCache.warm).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np

from memoryd.search.hashrows import keys_of
from memoryd.store import searchsql
from memoryd.store.protocol import Connection

LOAD = 20_000  # entries read per statement while loading
RESORT = 4096  # chunks added since the keys were last sorted, compared one by one until then
RECOUNT_S = 30.0  # how often the rows are compared with the entries (a count: ~1 ms at 100K)


class EntryKeys:
    """Chunk entry ids (ascending) and the key of each one's content hash."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = np.zeros(0, dtype=np.int64)
        self._keys = np.zeros(0, dtype=np.uint64)
        self._n = 0
        self._after = 0  # the highest entry id read, of any kind
        self._sorted = 0  # the first chunks, whose keys are in _by_key (sorted) with their ids
        self._counted = -RECOUNT_S  # when (monotonic) the rows were last compared with the entries
        self._by_key = np.zeros(0, dtype=np.uint64)
        self._ids_by_key = np.zeros(0, dtype=np.int64)

    def reset(self) -> None:
        with self._lock:
            self._n, self._after, self._sorted = 0, 0, 0

    def __len__(self) -> int:
        return self._n

    def _append(self, ids: list[int], hashes: list[str]) -> None:
        need = self._n + len(ids)
        if need > len(self._ids):
            cap = need + max(1024, need // 16)
            grown_ids = np.zeros(cap, dtype=np.int64)
            grown_keys = np.zeros(cap, dtype=np.uint64)
            grown_ids[: self._n] = self._ids[: self._n]
            grown_keys[: self._n] = self._keys[: self._n]
            self._ids, self._keys = grown_ids, grown_keys
        width = max(8, *(len(h) for h in hashes))
        packed = np.array([h.encode() for h in hashes], dtype=f"S{width + (-width % 8)}")
        self._ids[self._n : need] = ids
        self._keys[self._n : need] = keys_of(packed)
        self._n = need

    def _sync(self, con: Connection) -> None:
        # mostly deleted chunks: read anew (checked every RECOUNT_S: every search reads the
        # vector pool's entries through here, and under writes each would count them again)
        now = time.monotonic()
        if now - self._counted >= RECOUNT_S:
            self._counted = now
            if self._n > 2 * searchsql.entry_count(con) + 4096:
                self._n, self._after, self._sorted = 0, 0, 0
        while True:
            rows = searchsql.entries_after(con, self._after, LOAD)
            if not rows:
                return
            chunks = [(i, h) for i, chunk, h in rows if chunk]
            if chunks:
                self._append([i for i, _ in chunks], [h for _, h in chunks])
            self._after = rows[-1][0]
            if len(rows) < LOAD:
                return

    def split(self, con: Connection, entry_ids: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """For the given entries: the content-hash keys of those that are chunks known here,
        and the content hashes (read now) of the others (memories, ids not known)."""
        with self._lock:
            self._sync(con)
            ids, keys = self._ids[: self._n], self._keys[: self._n]
        want = np.asarray(entry_ids, dtype=np.int64)
        memories = np.asarray(searchsql.memory_ids(con), dtype=np.int64)
        is_memory = np.isin(want, memories) if len(memories) else np.zeros(len(want), bool)
        chunks = want[~is_memory]
        pos = np.minimum(np.searchsorted(ids, chunks), max(len(ids) - 1, 0))
        known = (ids[pos] == chunks) if len(ids) else np.zeros(len(chunks), bool)
        rest = [int(i) for i in want[is_memory]] + [int(i) for i in chunks[~known]]
        return keys[pos[known]], searchsql.hashes_of(con, rest)

    def chunks_with(self, con: Connection, hashes: Sequence[str]) -> np.ndarray:
        """The ids of the chunks known here whose content hash may be one of `hashes`: every
        chunk that carries one of them (a chunk's hash never changes), and a chunk too many
        where two hashes share a key (callers check the rows' hashes). Memories are not here."""
        if not hashes:
            return np.zeros(0, dtype=np.int64)
        width = max(len(h) for h in hashes)
        want = np.sort(keys_of(np.array([h.encode() for h in hashes], f"S{width + -width % 8}")))
        with self._lock:
            self._sync(con)
            n = self._n
            if n - self._sorted > RESORT or self._sorted > n:
                order = np.argsort(self._keys[:n], kind="stable")
                self._by_key, self._ids_by_key = self._keys[:n][order], self._ids[:n][order]
                self._sorted = n
            found = [np.zeros(0, dtype=np.int64)]
            if self._sorted:  # (after a reset, the sorted keys are an old read's)
                lo = np.searchsorted(self._by_key, want, side="left")
                runs = np.searchsorted(self._by_key, want, side="right") - lo
                at = runs > 0
                lo, runs = lo[at], runs[at]  # each key's run of chunks (one, unless shared)
                out = np.cumsum(runs) - runs  # where each run starts in the answer
                every = np.repeat(lo - out, runs) + np.arange(int(runs.sum()))
                found.append(self._ids_by_key[every])
            if n > self._sorted:
                recent = self._keys[self._sorted : n]
                found.append(self._ids[self._sorted : n][np.isin(recent, want)])
            # in id order, the table's (an id twice, for two hashes of one key, is harmless)
            return np.sort(np.concatenate(found))
