"""App.close and the work it started: a reconcile run now (reconcile_soon, after the store took
writes again or the workspace came back) reads the store on a thread of its own, and the store
must not close under it (a teardown in the fresh-clone CI: "Connection is busy in another
thread" from the closing store, "the store is closed" from the reconcile)."""

from __future__ import annotations

import threading
import time
from typing import Any

from memoryd.serve.app import App


def test_close_waits_for_a_reconcile_run_now(make_app: Any, monkeypatch: Any) -> None:
    started = threading.Event()
    seen: list[object] = []

    def reconcile(self: App) -> None:  # a reconcile that is still reading when close begins
        started.set()
        self.indexer.stopping.wait(10)  # close has begun
        deadline = time.monotonic() + 2  # the time close takes to reach the store, unwaited
        while not self.store._closed and time.monotonic() < deadline:
            threading.Event().wait(0.02)
        try:
            seen.append(self.store.read(lambda con: con.execute("SELECT 1").fetchall()[0][0]))
        except Exception as exc:  # the store closed under it
            seen.append(exc)

    monkeypatch.setattr(App, "reconcile", reconcile)
    app = make_app()
    app.reconcile_soon("a test")
    assert started.wait(10)
    make_app.close(app)
    assert seen == [1]


def test_no_reconcile_starts_once_close_has_begun(make_app: Any, monkeypatch: Any) -> None:
    ran: list[bool] = []
    monkeypatch.setattr(App, "reconcile", lambda self: ran.append(True))
    app = make_app()
    app.indexer.stopping.set()
    app.reconcile_soon("a test")
    make_app.close(app)
    assert ran == []
