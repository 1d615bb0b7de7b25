"""A read handed to a search thread and asked for later (search/pools.py `Soon`): the thread's
answer once it started, else the caller's own, never a wait behind other work."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from conftest import DEADLINE_S

from memoryd.search.pools import Soon


def test_started_reads_are_waited_for_and_queued_ones_run_here() -> None:
    here: list[str] = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        started, release = threading.Event(), threading.Event()

        def slow() -> str:
            started.set()
            release.wait(10)
            return "thread"

        running = Soon(pool.submit(slow), lambda: here.append("x") or "here")
        assert started.wait(DEADLINE_S)
        queued = Soon(pool.submit(lambda: "thread"), lambda: "here")  # the one worker is busy
        assert queued.result() == "here"  # not waited for: cancelled and read here
        assert queued.future.cancelled()
        release.set()
        assert running.result() == "thread" and here == []


def test_an_error_on_the_thread_is_raised_to_the_caller() -> None:
    with ThreadPoolExecutor(max_workers=1) as pool:

        def fail() -> str:
            raise ValueError("no such table")

        soon = Soon(pool.submit(fail), lambda: "here")
        soon.future.exception(10)  # it ran
        try:
            soon.result()
        except ValueError as exc:
            assert "no such table" in str(exc)
        else:
            raise AssertionError("the thread's error was swallowed")
