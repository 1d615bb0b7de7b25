"""Work measured without the wall clock (issue 18): a test that asserts how long something took
fails when the machine is busy, so the unit tests count instead.

`calls()` counts the function calls (Python and built-in) a call makes: exact, the same on any
machine under any load, and it grows as the algorithm does (a loop over every previous line
shows as quadratic counts). It cannot see the work inside one built-in call, such as a regular
expression backtracking; for that, `cpu_seconds()` is the CPU time of the calling thread, which
waiting for a core does not add to: the guards that use it bound catastrophic behaviour (a
regex that took 160 s) with a wide margin over the measured cost. Speed targets themselves are
in the bench suite (`python -m bench targets`, bench/targets.py).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any


def calls(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[int, Any]:
    """(the number of calls fn(*args, **kwargs) made in this thread, its result)."""
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        result = fn(*args, **kwargs)
    finally:
        sys.setprofile(previous)
    return count, result


def cpu_seconds(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """(the CPU time this thread spent in fn(*args, **kwargs), its result)."""
    started = time.thread_time()
    result = fn(*args, **kwargs)
    return time.thread_time() - started, result
