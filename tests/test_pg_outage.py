"""The PostgreSQL server goes away and comes back: status says so, searches fail fast with
StoreUnavailable (-32014), adds are refused and nothing is half-written, the daemon and its
threads live on, and it recovers by itself. Against a private server the test stops and starts
(tests/pgserver.py: PrivateServer), never the session's shared one."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import wait_for

from memoryd.core.errors import StoreUnavailable
from memoryd.serve import methods as api

# A request while the server is down fails at once (measured about 0.1 s) instead of waiting
# for the request timeout (30 s): the bound is a third of that timeout, not a speed target, so
# a busy machine cannot make it fail.
FAST_S = 10.0


@pytest.fixture
def private_pg() -> Iterator[Any]:
    import pgserver

    with pgserver.PrivateServer() as server:
        yield server


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def _note(app: Any, path: str) -> dict[str, Any] | None:
    from memoryd.core.errors import NotFound

    try:
        return call(app, "get", path=path)
    except NotFound:
        return None


def timed(fn: Any) -> tuple[float, BaseException | None]:
    started = time.monotonic()
    try:
        fn()
    except Exception as exc:
        return time.monotonic() - started, exc
    return time.monotonic() - started, None


def test_app_survives_an_outage_and_recovers_by_itself(private_pg: Any, make_app: Any) -> None:
    app = make_app(
        dailylog={"enabled": False},
        store={"backend": "postgres", "dsn": private_pg.dsn(), "connect_timeout_s": 5},
    )
    app.start()
    wait_for(app.ready.is_set, timeout=30)
    first = app.memories.add("the database is in the basement").id
    wait_for(lambda: app.embedder.counts()["pending"] == 0, timeout=30)
    assert app.status()["store"]["ok"] is True
    assert app.status()["store"]["server_version"]

    private_pg.stop()
    # status answers, and says the server is gone
    took, _ = timed(app.status)
    st = app.status()
    assert took < FAST_S * 2
    assert st["store"]["ok"] is False and "unreachable" in st["store"]["error"]
    assert st["counts"] is None
    # searches and reads fail fast with -32014, every time
    for _ in range(3):
        took, exc = timed(lambda: call(app, "search", query="basement", mode="vector"))
        assert isinstance(exc, StoreUnavailable) and exc.code == -32014, exc
        assert took < FAST_S, took
    took, exc = timed(lambda: call(app, "get", id=first))
    assert isinstance(exc, StoreUnavailable) and took < FAST_S
    # an add is refused; a job fails and is recorded; the worker threads live on
    took, exc = timed(lambda: app.memories.add("written while the server was down"))
    assert isinstance(exc, StoreUnavailable) and took < FAST_S, (took, exc)
    job = app.jobs.run_now("expiry")
    assert job["error"] and "unreachable" in job["error"]
    app.embedder.wake()
    wait_for(lambda: app.embedder.last_error is not None, timeout=10)  # it met the outage
    assert app.embedder.alive
    # a note written meanwhile: the watcher cannot index it now, and lives on
    from pathlib import Path

    (Path(app.cfg.workspace) / "outage.md").write_text("# Outage\n\nwritten while it was down\n")
    wait_for(lambda: app.jobs.states["reconcile"].last_error is not None, timeout=10)
    assert app.watcher is not None and app.watcher.alive

    private_pg.start()
    # back by itself: nothing restarted
    wait_for(lambda: app.status()["store"]["ok"], timeout=15)
    new = app.memories.add("written after the server came back")
    assert not new.duplicate
    assert call(app, "get", id=new.id)["content"] == "written after the server came back"
    assert call(app, "get", id=first)["content"] == "the database is in the basement"
    contents = [m["content"] for m in call(app, "list", kind="memory")["items"]]
    assert "written while the server was down" not in contents  # refused means not written
    wait_for(lambda: app.embedder.counts()["pending"] == 0, timeout=30)
    assert app.embedder.alive
    assert app.jobs.run_now("expiry")["error"] is None
    # the note written during the outage is indexed once the server is back (reconcile)
    note = wait_for(lambda: _note(app, "outage.md"), timeout=15)
    assert "written while it was down" in note["content"]
    # the change listener reconnected too
    wait_for(lambda: app.status()["store"]["listening"] is True, timeout=15)


def test_daemon_reports_the_outage_over_the_socket_and_recovers(
    private_pg: Any, daemon_factory: Any
) -> None:
    d = daemon_factory(
        store={"backend": "postgres", "dsn": private_pg.dsn(), "connect_timeout_s": 5},
        dailylog={"enabled": False},
    )
    from conftest import rpc

    added = d.call("add", {"content": "the daemon keeps running"})
    assert d.call("status")["store"]["ok"] is True

    private_pg.stop()
    st = d.call("status")
    assert st["store"]["ok"] is False and st["store"]["backend"] == "postgres"
    shown = d.ctl("status")
    assert shown.returncode == 0 and "unreachable" in shown.stdout, shown
    for method, params in (
        ("search", {"query": "daemon keeps running"}),
        ("add", {"content": "refused while down"}),
        ("get", {"id": added["id"]}),
    ):
        started = time.monotonic()
        resp = rpc(d.socket, method, params)
        assert resp.get("error", {}).get("code") == -32014, (method, resp)
        assert time.monotonic() - started < FAST_S, method
    assert d.proc is not None and d.proc.poll() is None

    private_pg.start()
    wait_for(lambda: d.call("status")["store"]["ok"], timeout=15)
    assert d.call("get", {"id": added["id"]})["content"] == "the daemon keeps running"
    again = d.call("add", {"content": "accepted after the restart"})
    assert again["duplicate"] is False
    assert d.call("add", {"content": "refused while down"})["duplicate"] is False  # never stored


def test_a_busy_pool_is_not_an_outage(pg_dsn: str) -> None:
    import threading

    from memoryd.store.pg import PgSettings, PgStore

    store = PgStore(PgSettings(pg_dsn, "ws", "test:ws", pool_max=1, connect_timeout_s=0.5))
    held, release = threading.Event(), threading.Event()

    def hold(con: Any) -> None:
        held.set()
        release.wait(10)

    t = threading.Thread(target=store.read, args=(hold,))
    t.start()
    try:
        held.wait(10)
        with pytest.raises(StoreUnavailable, match="busy"):
            store.read(lambda con: None)
        assert store.down_since is None  # the next request waits the full time again
    finally:
        release.set()
        t.join(10)
        store.close()


def test_an_outage_is_one_line_and_its_end_one_line(private_pg: Any, make_app: Any) -> None:
    """A pooled connection the server dropped was retried on another (`_first`), and leaving
    that retry counted as a request that worked: 'PostgreSQL server reachable again' a second
    into the outage, then 'unreachable' again. The end of an outage is said once, when it ends."""
    import io
    import json

    from memoryd.core import logsetup

    app = make_app(
        dailylog={"enabled": False},
        store={"backend": "postgres", "dsn": private_pg.dsn(), "connect_timeout_s": 5},
    )
    app.start()
    wait_for(app.ready.is_set, timeout=30)
    for _ in range(3):  # connections in the pool, which the stop cuts
        call(app, "search", query="basement")
    stream = io.StringIO()
    logsetup.configure("info", "json", stream=stream)
    private_pg.stop()
    for _ in range(4):
        _, exc = timed(lambda: call(app, "search", query="basement"))
        assert isinstance(exc, StoreUnavailable), exc

    def events() -> list[str]:
        return [json.loads(x)["event"] for x in stream.getvalue().splitlines() if x.strip()]

    assert "PostgreSQL server reachable again" not in events()
    assert events().count("PostgreSQL server unreachable") == 1
    private_pg.start()
    wait_for(lambda: app.status()["store"]["ok"], timeout=15)
    call(app, "search", query="basement")
    assert events().count("PostgreSQL server reachable again") == 1
    assert events().count("PostgreSQL server unreachable") == 1
