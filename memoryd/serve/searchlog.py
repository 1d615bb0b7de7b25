"""Search latency and volume over the last day, kept in memory for the status page: ten-minute
buckets, each with its count and a bounded sample of latencies (p50, p95, max on read).

The `search` method records every search it answers (socket and web page alike); nothing is
written to disk, and a restart starts the day afresh."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from memoryd.core.timeutil import iso

BUCKET_S = 600.0
DAY_S = 86400.0
SAMPLES_PER_BUCKET = 256  # enough for a p95; a busy bucket keeps every n-th latency


class SearchLog:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        # bucket start -> [count, total ms, max ms, samples]
        self._buckets: dict[int, list[Any]] = {}

    def record(self, ms: float) -> None:
        start = int(self.clock() // BUCKET_S * BUCKET_S)
        with self._lock:
            b = self._buckets.get(start)
            if b is None:
                b = self._buckets[start] = [0, 0.0, 0.0, []]
                self._forget(start)
            b[0] += 1
            b[1] += ms
            b[2] = max(b[2], ms)
            samples: list[float] = b[3]
            if len(samples) < SAMPLES_PER_BUCKET:
                samples.append(ms)
            else:  # deterministic thinning: every slot is overwritten in turn
                samples[b[0] % SAMPLES_PER_BUCKET] = ms

    def _forget(self, now_start: int) -> None:
        for start in [s for s in self._buckets if s <= now_start - DAY_S]:
            del self._buckets[start]

    def series(self) -> dict[str, Any]:
        """The last day, oldest bucket first (buckets without searches are left out)."""
        now = self.clock()
        with self._lock:
            rows = [
                (start, b[0], b[1], b[2], sorted(b[3]))
                for start, b in sorted(self._buckets.items())
                if start > now - DAY_S
            ]
        buckets = [
            {
                "at": iso(start),
                "count": count,
                "mean_ms": round(total / count, 2),
                "p50_ms": round(_pick(s, 0.5), 2),
                "p95_ms": round(_pick(s, 0.95), 2),
                "max_ms": round(high, 2),
            }
            for start, count, total, high, s in rows
        ]
        return {
            "bucket_s": BUCKET_S,
            "count": sum(b["count"] for b in buckets),
            "buckets": buckets,
        }


def _pick(sorted_ms: list[float], q: float) -> float:
    if not sorted_ms:
        return 0.0
    return sorted_ms[min(len(sorted_ms) - 1, int(q * len(sorted_ms)))]
