"""The cyclic garbage collector, settled for a long-running daemon (issue 23.3).

A search allocates thousands of tuples, lists and dicts (SQL rows, candidates, hits) that die by
reference counting, yet CPython's collector walks whatever is alive each time 700 more of them
exist: at 100K chunks, in process, 120 hybrid searches ran 334 young collections (~0.45 ms of CPU
a search) and every ~40 searches a full one over the ~36,000 objects the imports and start-up
made (45 ms of CPU inside one search, at load ~12), and none of them found anything to collect.

`settle()`, at the end of start-up: one full collection, then everything alive moved out of the
collector's sight (`gc.freeze`: still freed by reference counting, never walked again), and the
young generation's threshold raised to YOUNG, so a search's transient objects are gone before a
collection would see them (120 searches: no collection at all). Cycles made later are still
found and freed, in collections of what was made since. `release()` (an app's close) gives the
frozen objects back to the collector, so a process that opens and closes apps (the tests) frees
those that became garbage in cycles.
"""

from __future__ import annotations

import gc

YOUNG = 10_000  # container objects alive beyond the last collection before a young one runs


def settle(young: int = YOUNG) -> None:
    """Collect once, freeze what survives, and raise the young generation's threshold."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, 1), middle, old)


def release() -> None:
    """Give what `settle` froze back to the collector (its oldest generation)."""
    gc.unfreeze()


def exiting() -> None:
    """The process ends now (`memoryd run`, its app closed): freeze everything again, so the
    interpreter's finalization does not walk every object in its collections for nothing
    (0.1-0.3 s of the daemon's stop after SIGTERM, at load ~9: half of it). Objects are still
    freed by reference counting as the modules are torn down."""
    gc.freeze()
