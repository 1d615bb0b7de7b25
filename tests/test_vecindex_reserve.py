"""The vector cache's spare rows are resident once reserved (memoryd/search/vecindex.py), so RSS
moves when the cache regrows, not with each append (issue 23.2)."""

from __future__ import annotations

import ctypes
import mmap
import sys

import numpy as np
import pytest

from memoryd.search.hashrows import HashRows
from memoryd.search.vecindex import VectorCache

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mincore(2) as on Linux")


def _resident(arr: np.ndarray) -> float:
    """The share of the whole pages under `arr` that are in memory (mincore)."""
    libc = ctypes.CDLL(None, use_errno=True)
    page = mmap.PAGESIZE
    start = -(-arr.ctypes.data // page) * page
    end = (arr.ctypes.data + arr.nbytes) // page * page
    pages = (end - start) // page
    assert pages > 0
    vec = (ctypes.c_ubyte * pages)()
    rc = libc.mincore(ctypes.c_void_p(start), ctypes.c_size_t(end - start), vec)
    assert rc == 0, ctypes.get_errno()
    return sum(b & 1 for b in vec) / pages


@linux
def test_spare_rows_are_resident_and_empty_once_reserved() -> None:
    cache = VectorCache()
    cache._full = np.zeros((0, 384), dtype=np.float16)
    cache._codes = np.zeros((6, 0), dtype=np.uint64)
    cache._reserve(4000)  # 4000 rows and 1024 spare: 3.9 MB, a mapping of its own
    assert cache._full.shape[0] == 5024 and cache._codes.shape == (6, 5024)
    assert _resident(cache._full) == 1.0 and _resident(cache._codes) == 1.0
    assert not cache._full.any() and not cache._codes.any()


@linux
def test_hash_rows_spare_rows_are_resident() -> None:
    rows = HashRows()
    rows.append(["a" * 64], headroom=20_000)  # 1.3 MB
    assert _resident(rows._buf) == 1.0
    assert rows.view(1)[0].decode() == "a" * 64 and not rows._buf[1:].any()
