"""Rows of the vector cache's float16 copy as float32, a block at a time (vecindex.rescore).

NumPy (2.4 here) converts float16 to float32 one element at a time in C (its wheels' baseline has
no F16C): ~1.7 ms of CPU of the ~2.6 that re-scoring a 100K query's 2,000 rows costs. onnxruntime
converts with F16C/AVX where the CPU has them (a one-node Cast model: index/onnxgraph.py), ~4x
less for the same block. Every float16 value is a float32 value, so both give the very same
floats, NaN and infinity included (tests/test_halfrows.py), and the similarities computed from
them are the same.

onnxruntime is used when the process has loaded it already: the offline model runs on it
(index/onnxembed.py). Loading it for this alone would cost ~30 MB of RSS and 0.25 s, so a daemon
with another model (or none) keeps numpy's conversion, and so does any failure of the session.

The rows pass through two buffers of the calling thread's own (BLOCK_ROWS x the vectors' width,
float16 and float32: 576 KB at 384-d), bound to the session once per thread, so a query
allocates nothing: blocks over the daemon's fixed mmap threshold (core/malloc.py) would be
mapped and page-faulted on every query. Without onnxruntime, each block is a float32 copy under
that threshold (NUMPY_BLOCK_BYTES), as before.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from memoryd.index import onnxgraph

BLOCK_ROWS = 256  # rows converted per call: 0.76 ms for 2,000 rows, 0.64 at 512 (2x the buffers)
NUMPY_BLOCK_BYTES = 128 * 1024  # numpy's path: each float32 copy under the mmap threshold

_LOCK = threading.Lock()
_SESSION: Any = None  # the Cast session, once made
_FAILED = False  # onnxruntime could not make or run it: numpy from now on
_LOCAL = threading.local()


def _session() -> Any:
    """The Cast session when onnxruntime is loaded and works; else None."""
    global _SESSION, _FAILED
    if _FAILED or _SESSION is not None:
        return None if _FAILED else _SESSION
    ort = sys.modules.get("onnxruntime")
    if ort is None:
        return None
    with _LOCK:
        if _SESSION is None and not _FAILED:
            try:
                opts = ort.SessionOptions()
                # on the caller's thread: no pool of onnxruntime's own, nothing spinning
                opts.intra_op_num_threads = opts.inter_op_num_threads = 1
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                opts.enable_cpu_mem_arena = False  # both ends are bound: it allocates nothing
                opts.log_severity_level = 4  # fatal only: nothing on fd 2 (index/embed.py)
                _SESSION = ort.InferenceSession(
                    onnxgraph.half_to_float(), opts, providers=["CPUExecutionProvider"]
                )
            except Exception:  # any failure: numpy converts instead
                _FAILED = True
    return _SESSION


class _Bound:
    """One thread's buffers for one width, bound as the session's input and output."""

    def __init__(self, session: Any, width: int) -> None:
        self.half = np.zeros((BLOCK_ROWS, width), dtype=np.float16)
        self.float = np.zeros((BLOCK_ROWS, width), dtype=np.float32)
        self.binding = session.io_binding()
        shape = self.half.shape
        self.binding.bind_input("half", "cpu", 0, np.float16, shape, self.half.ctypes.data)
        self.binding.bind_output("float", "cpu", 0, np.float32, shape, self.float.ctypes.data)


def _bound(session: Any, width: int) -> _Bound:
    found: dict[int, _Bound] | None = getattr(_LOCAL, "bound", None)
    if found is None:
        found = _LOCAL.bound = {}
    if width not in found:
        found[width] = _Bound(session, width)
    return found[width]


def float32_blocks(full: np.ndarray, rows: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(start, full[rows[start : start + len(block)]] as float32) for consecutive blocks of
    `rows`. Each block may be a buffer of the thread's own, overwritten by the next: use it
    before asking for the next one."""
    session = _session() if full.dtype == np.float16 and full.ndim == 2 else None
    if session is not None:
        bound = _bound(session, full.shape[1])
        for start in range(0, len(rows), BLOCK_ROWS):
            part = rows[start : start + BLOCK_ROWS]
            n = len(part)
            # mode "clip": no bounds-checked copy of its own (the rows are in range)
            np.take(full, part, axis=0, out=bound.half[:n], mode="clip")
            if not _run(session, bound):
                break
            yield start, bound.float[:n]
        else:
            return
        rows, offset = rows[start:], start  # the session failed here: numpy does the rest
    else:
        offset = 0
    step = max(16, NUMPY_BLOCK_BYTES // (4 * max(1, full.shape[-1])))
    for start in range(0, len(rows), step):
        yield offset + start, full[rows[start : start + step]].astype(np.float32)


def _run(session: Any, bound: _Bound) -> bool:
    global _FAILED
    try:
        session.run_with_iobinding(bound.binding)
    except Exception:  # numpy converts from now on
        _FAILED = True
        return False
    return True
