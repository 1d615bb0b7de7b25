"""Keep glibc malloc from holding on to freed inference buffers.

Each onnxruntime run allocates tens of MB of activations (batch x tokens x hidden x layers) and
frees them at the end. glibc keeps freed memory in per-thread arenas (up to 8 per core) and
returns little of it to the kernel, so a daemon that embedded a backlog on a few threads sat at
550-800 MB RSS afterwards (measured, BENCHMARKS.md "memory"). Two calls fix most of it without
slowing the model down: fewer arenas (`M_ARENA_MAX`, as `MALLOC_ARENA_MAX=2` would) and
`malloc_trim(0)` after each embedding batch, which hands the freed pages back.

Everything here is a no-op where glibc is not the allocator (macOS, musl).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from typing import Any

M_ARENA_MAX = -8  # from glibc's malloc.h
M_MMAP_THRESHOLD = -3
ARENAS = 2
MMAP_THRESHOLD = 256 * 1024

_libc: Any = None
_loaded = False
_lock = threading.Lock()


def _glibc() -> Any:
    global _libc, _loaded
    with _lock:
        if not _loaded:
            _loaded = True
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt"):
                    _libc = libc
            except OSError:
                _libc = None
    return _libc


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap the number of malloc arenas (unless MALLOC_ARENA_MAX is set). Call it early: arenas
    that threads already created stay. True when the limit was set."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    libc = _glibc()
    return bool(libc is not None and libc.mallopt(M_ARENA_MAX, int(arenas)) == 1)


def fix_mmap_threshold(nbytes: int = MMAP_THRESHOLD) -> bool:
    """Serve every block over `nbytes` from its own mapping, handed back to the kernel when it
    is freed (unless MALLOC_MMAP_THRESHOLD_ is set). glibc starts at 128 KB but raises the
    threshold to the size of each mapped block freed (up to 32 MB): after the first search's
    float32 copies (~3 MB) or the first inference run's activations were freed, the next ones
    came from the heap arenas and stayed resident between uses and in fragments. Measured at
    100K chunks under the soak's mix, two daemons side by side for 7 minutes: 343 MB RSS
    against 395 (BENCHMARKS.md, issue 23.2). The price is page faults on every such block: a
    background inference run of 4 x 128 tokens took about twice as long in-process under load
    (docs/configuration.md says how to choose speed instead). A fixed threshold also keeps the
    trim threshold at its default (128 KB) instead of twice the raised one. True when set."""
    if os.environ.get("MALLOC_MMAP_THRESHOLD_"):
        return False
    libc = _glibc()
    return bool(libc is not None and libc.mallopt(M_MMAP_THRESHOLD, int(nbytes)) == 1)


def trim() -> bool:
    """Give freed heap memory back to the kernel (all arenas). True if some was released."""
    libc = _glibc()
    return bool(libc is not None and libc.malloc_trim(0))


def lower_thread_priority(niceness: int = 10) -> bool:
    """Make the calling thread yield the CPU to the daemon's other threads (Linux: niceness is
    per thread, and threads it creates inherit it). True when it worked."""
    if not sys.platform.startswith("linux"):  # elsewhere a thread id is not a process id
        return False
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, niceness)
    except (OSError, AttributeError):
        return False
    return os.getpriority(os.PRIO_PROCESS, tid) == niceness
