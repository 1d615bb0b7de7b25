"""malloc tuning and thread priorities (Linux with glibc; elsewhere they are no-ops)."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import pytest
from conftest import wait_for

from memoryd.core import malloc

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


@linux
def test_trim_and_arena_limit_reach_glibc() -> None:
    assert malloc._glibc() is not None
    junk = [bytes(1000) for _ in range(50_000)]
    del junk
    assert isinstance(malloc.trim(), bool)


@linux
def test_mmap_threshold_is_set_unless_the_environment_sets_it(monkeypatch: Any) -> None:
    assert malloc.fix_mmap_threshold() is True
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "131072")
    assert malloc.fix_mmap_threshold() is False  # the operator's setting wins


@linux
def test_lower_thread_priority_touches_only_the_calling_thread() -> None:
    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    out: list[tuple[bool, int]] = []

    def body() -> None:
        ok = malloc.lower_thread_priority()
        out.append((ok, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert out == [(True, 10)]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == base


@linux
def test_backlog_threads_run_at_low_priority_queries_do_not(make_app: Any) -> None:
    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    app = make_app()
    (app.cfg.workspace / "a.md").write_text("# A\n\nsome text to embed\n")
    app.start(jobs=False)
    wait_for(lambda: app.embedder.pending() == 0 and app.embedder.embedded_total > 0)
    by_name = {t.name: t for t in threading.enumerate()}
    worker = by_name["memoryd-embed"]
    pool = [t for name, t in by_name.items() if name.startswith("memoryd-embed-bg")]
    assert pool
    for t in [worker, *pool]:
        assert os.getpriority(os.PRIO_PROCESS, t.native_id) == 10, t.name
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == base
