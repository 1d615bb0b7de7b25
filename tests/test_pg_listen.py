"""PgStore's change listener (LISTEN/NOTIFY) waits on its socket and a wake pipe
(memoryd/store/pg/wake.py): another daemon's change arrives as it is sent, and a store's close
wakes the listener at once instead of waiting out its poll interval (which held every App or
daemon on PostgreSQL half a second at stop)."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import psycopg
import pytest
from conftest import wait_for

from memoryd.store.pg import sqlfuncs
from memoryd.store.pg.wake import Waker

AN_HOUR = 3600.0


@pytest.fixture
def slow_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    """A poll interval no test outlives: what the listener does, it does on a wake."""
    import memoryd.store.pg as pg

    monkeypatch.setattr(pg, "LISTEN_POLL_S", AN_HOUR)


def _store(dsn: str, workspace: str) -> Any:
    from memoryd.store.pg import PgSettings, PgStore

    return PgStore(PgSettings(dsn, workspace, f"test:{workspace}"))


def test_close_wakes_the_listener_at_once(pg_dsn: str, slow_poll: None) -> None:
    store = _store(pg_dsn, "ws-a")
    store.on_change(lambda payload: None)
    wait_for(lambda: store.listening)
    listener = store._listener
    closing = threading.Thread(target=store.close, daemon=True)
    closing.start()
    # before the wake, close() waited for the listener's notifies(timeout=LISTEN_POLL_S)
    wait_for(lambda: not closing.is_alive())
    assert listener is not None and not listener.is_alive()
    assert store._waker is not None and store._waker.closed  # its pipe closed with it


def test_another_daemons_change_arrives_as_it_is_sent(pg_dsn: str, slow_poll: None) -> None:
    store = _store(pg_dsn, "ws-a")
    try:
        seen: list[dict[str, Any]] = []
        store.on_change(seen.append)
        wait_for(lambda: store.listening)
        with psycopg.connect(pg_dsn, autocommit=True) as con:
            for n in (1, 2):
                payload = json.dumps({"workspace": "ws-b", "n": n})
                con.execute("SELECT pg_notify(%s, %s)", [sqlfuncs.NOTIFY_CHANNEL, payload])
            # this store's own change: its own hooks saw it, the listener passes it over
            own = json.dumps({"workspace": "ws-a", "n": 3})
            con.execute("SELECT pg_notify(%s, %s)", [sqlfuncs.NOTIFY_CHANNEL, own])
        wait_for(lambda: len(seen) >= 2)
        assert [p["n"] for p in seen] == [1, 2]
    finally:
        store.close()


def test_a_waker_ends_a_wait_and_says_when_the_socket_is_readable() -> None:
    waker = Waker()
    read, write = os.pipe()
    try:
        waker.wake()
        assert waker.wait(read, AN_HOUR) is False  # woken, nothing to read
        os.write(write, b"x")
        assert waker.wait(read, AN_HOUR) is True
    finally:
        waker.close()
        os.close(read)
        os.close(write)
    waker.wake()  # after close: nothing (its descriptors may belong to others by now)
    assert waker.closed
