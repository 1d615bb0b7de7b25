"""One rule for the connections of both servers at their limit (serve/places.py; stop 42,
branch res18): a new connection waits up to first_request_timeout_s for a place, and only a
silent connection is closed to make one. The web page refused its 33rd connection at once
(403 "refused") while the socket waited; and what the limits did was told nowhere afterwards:
status now counts, on both doors, the connections that waited, were refused, or were closed for
room since the start, with the time of the last."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import rpc, wait_for
from webclient import WebHarness

from memoryd.serve import places
from memoryd.web.server import MAX_CONNECTIONS

pytestmark = pytest.mark.backends


class Writer:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_a_newcomer_waits_for_a_place_and_is_refused_only_when_none_comes() -> None:
    async def run() -> None:
        closed: list[places.Place] = []
        p = places.Places(lambda: 2, lambda: 0.1, closed.append)
        busy = await p.take("busy", Writer())
        talking = await p.take("talking", Writer())
        assert busy is not None and talking is not None
        p.busy(busy)
        p.busy(talking)
        started = time.monotonic()
        # both are answering a request: a newcomer waits, then is refused (never at once)
        assert await p.take("late", Writer()) is None
        assert time.monotonic() - started >= 2 * places.EVICT_AFTER_S - 0.05
        assert (p.waited, p.refused, p.evicted) == (1, 1, 0)
        assert p.last_refused is not None and p.last_waited is not None
        # one finishes its answer: silent from then on, a newcomer takes its place (waiting
        # until it has been silent EVICT_AFTER_S), and it is closed
        p.idle(talking)
        assert await p.take("next", Writer()) is not None
        assert closed == [talking] and (p.waited, p.refused, p.evicted) == (2, 1, 1)
        p.leave("talking")
        info = p.info()
        assert info["open"] == 2 and info["limit"] == 2 and info["closed_idle"] == 1
        assert info["last_refused"].endswith("Z")

    asyncio.run(run())


@pytest.fixture
def page(make_app: Any) -> Iterator[WebHarness]:
    app = make_app(model=None)
    h = WebHarness(app)
    yield h
    h.close()


def silent_tcp(port: int, n: int) -> list[socket.socket]:
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        out.append(s)
    return out


def test_the_web_page_past_its_connections_waits_instead_of_refusing(page: WebHarness) -> None:
    """MAX_CONNECTIONS silent connections (a browser's keep-alive ones, tabs left open): the
    next request is answered, a silent connection closed for it; main answered 403 "refused"."""
    socks = silent_tcp(page.port, MAX_CONNECTIONS)
    try:
        wait_for(lambda: len(page.server.places.conns) == MAX_CONNECTIONS)
        answer = page.request("GET", "/api/status")  # no token: 401, but answered by the page
        assert answer.status != 503 and answer.text != "refused\n", answer.text
        info = page.app.status()["connections"]["web"]
        assert info["closed_idle"] >= 1 and info["refused"] == 0 and info["limit"] == 32
        assert info["last_closed_idle"] is not None
    finally:
        for s in socks:
            s.close()


def test_the_socket_and_the_page_say_what_their_limits_did(daemon_factory: Any) -> None:
    """status (memoryctl's and the web page's answer, the same method): per door, how many
    waited, were refused, were closed for room since the start, and when the last was."""
    d = daemon_factory(server={"max_connections": 2})
    before = d.call("status")["connections"]
    assert before["socket"]["waited"] == 0 and before["socket"]["closed_idle"] == 0
    assert before["accept"]["refused"] == 0
    socks = []
    try:
        for _ in range(2):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(d.socket))
            socks.append(s)
        answer = rpc(d.socket, "status")  # the third: waits for a silent one to go
        assert "result" in answer, answer
        after = answer["result"]["connections"]["socket"]
        assert after["waited"] + after["closed_idle"] >= 1 and after["refused"] == 0
        assert after["last_closed_idle"] is not None
    finally:
        for s in socks:
            with contextlib.suppress(OSError):
                s.close()
    shown = d.ctl("status").stdout
    assert "connections.socket.closed_idle:" in shown and "connections.socket.waited:" in shown
