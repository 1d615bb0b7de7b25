"""The content hash of each row of the vector cache, packed.

At 100K rows, a list of 64-character `str` and a dict from hash to row took ~18 MB of the
daemon's heap (tracemalloc: 10.9 MB of strings, 6.4 MB of dict and int objects, 0.9 MB of
list; BENCHMARKS.md, issue 23.2). Here the hashes sit in one fixed-width bytes array (6.4 MB)
and a hash is found by a binary search over a 64-bit key per row (1.2 MB with the row
numbers); rows added since the last sort are found through a small dict.

Readers take `view(n)` under the cache's lock and read it outside: appends only write rows
past every view handed out, and growing makes a new buffer.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

RESORT = 4096  # rows added since the last sort looked up by dict; past this, sort again
WIDTH = 64  # bytes a row holds (a hex SHA-256); a longer hash widens the buffer


def keys_of(packed: np.ndarray) -> np.ndarray:
    """A 64-bit key per fixed-width bytes row (its 8-byte words XORed together)."""
    width = packed.dtype.itemsize
    if not width:
        return np.zeros(0, np.uint64)
    words = np.ascontiguousarray(packed).view(np.uint64).reshape(len(packed), width // 8)
    # (XORed word by word: numpy 2.5's stubs type no `bitwise_xor.reduce(words, axis=1)`,
    # and mypy failed on Python 3.12+, where pip installs it)
    key = words[:, 0].copy()
    for word in range(1, words.shape[1]):
        key ^= words[:, word]
    return key


class HashRows:
    """Content hashes by row number, and row numbers by content hash."""

    def __init__(self) -> None:
        self._buf = np.zeros(0, dtype=f"S{WIDTH}")
        self._n = 0
        self._keys = np.zeros(0, dtype=np.uint64)  # sorted keys of rows [0, _sorted)
        self._rows = np.zeros(0, dtype=np.int32)  # the row of each sorted key
        self._sorted = 0
        self._recent: dict[str, int] = {}  # rows from _sorted on

    def __len__(self) -> int:
        return self._n

    def append(self, hashes: list[str], headroom: int = 0) -> None:
        """Add rows (with `headroom` spare rows when the buffer has to grow)."""
        packed = [h.encode() for h in hashes]
        width = max([self._buf.dtype.itemsize, *map(len, packed)])
        width += -width % 8
        n, widened = self._n, width != self._buf.dtype.itemsize
        if widened or n + len(packed) > len(self._buf):
            cap = max(len(self._buf), n + len(packed) + headroom)
            buf = np.empty(cap, dtype=f"S{width}")
            buf[:n] = self._buf[:n]
            buf[n:] = b""  # written now, resident from the start (as VectorCache's spare rows)
            self._buf = buf  # a new buffer: views handed out keep the old one
            if widened:
                self._sorted = 0  # the keys change with the width: sort again below
        self._buf[n : n + len(packed)] = packed
        for i, h in enumerate(hashes):
            self._recent[h] = n + i
        self._n = n + len(packed)
        if self._sorted == 0 or len(self._recent) > RESORT:
            self._sort()

    def _sort(self) -> None:
        keys = keys_of(self._buf[: self._n])
        order = np.argsort(keys, kind="stable")
        self._keys, self._rows = keys[order], order.astype(np.int32)
        self._sorted = self._n
        self._recent = {}

    def view(self, n: int) -> np.ndarray:
        """The first n hashes as bytes (`.decode()` one to get the str)."""
        return self._buf[:n]

    def rows(self, wanted: Iterable[str]) -> list[int]:
        """The row of each wanted hash that has one (no order promised)."""
        found: list[int] = []
        rest: list[bytes] = []
        width = self._buf.dtype.itemsize
        for h in wanted:
            row = self._recent.get(h)
            if row is not None:
                found.append(row)
            else:
                b = h.encode()
                if len(b) <= width:
                    rest.append(b)
        if not rest or not self._sorted:
            return found
        want = np.array(rest, dtype=self._buf.dtype)
        keys = keys_of(want)
        lo = np.searchsorted(self._keys, keys, side="left")
        hi = np.searchsorted(self._keys, keys, side="right")
        for j in np.flatnonzero(hi > lo):
            for pos in range(int(lo[j]), int(hi[j])):  # one, unless two hashes share a key
                row = int(self._rows[pos])
                if self._buf[row] == want[j]:
                    found.append(row)
                    break
        return found

    def rows_of_keys(self, keys: np.ndarray, n: int) -> np.ndarray:
        """The rows below `n` whose key (keys_of) is one of `keys`: a binary search each over the
        sorted rows, a comparison over those added since. Two hashes that share a key both
        come back (a row too many, never one too few: callers check what the rows hold)."""
        keys = np.sort(np.asarray(keys, dtype=np.uint64))  # sorted: 10x faster to search
        found: list[np.ndarray] = []
        sk = self._keys
        if self._sorted and len(keys) and len(sk):
            lo = np.searchsorted(sk, keys)
            inside = lo < len(sk)
            lo, keys_in = lo[inside], keys[inside]
            hit = sk[lo] == keys_in
            lo, keys_in = lo[hit], keys_in[hit]
            found.append(self._rows[lo])
            after = np.minimum(lo + 1, len(sk) - 1)
            for j in np.flatnonzero((after > lo) & (sk[after] == keys_in)):  # a shared key: rare
                pos = int(lo[j]) + 1
                while pos < len(sk) and sk[pos] == keys_in[j]:
                    found.append(self._rows[pos : pos + 1])
                    pos += 1
        if self._sorted < n and len(keys):
            recent = keys_of(self._buf[self._sorted : n])
            found.append(np.flatnonzero(np.isin(recent, keys)).astype(np.int32) + self._sorted)
        rows = np.concatenate(found) if found else np.zeros(0, dtype=np.int32)
        return rows[rows < n]
