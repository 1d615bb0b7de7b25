"""Places: one rule for the connections of both servers (the Unix socket's and the web page's).

At most `limit` connections are served at once. A new one takes a free place; at the limit it
makes room by closing the connection silent the longest (for EVICT_AFTER_S at least: a burst's
own newcomers, whose requests are on their way, are not taken for idle ones); while none is, it
waits, up to `wait_s` (first_request_timeout_s), for a connection to end, finish its request or
fall silent; only then is it refused. A browser's keep-alive connections between two polls and
a client that connected and said nothing are silent; a request being answered is not.

What happened is kept for `status` (nobody can ask while the server is full; they can
afterwards): how many connections waited for a place, were refused, or were closed for room
since the start, and when the last of each was (`info`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from memoryd.core.logsetup import get_logger
from memoryd.core.timeutil import iso

log = get_logger("memoryd.serve.places")

# A connection silent this long may be closed to make room at the limit
EVICT_AFTER_S = 0.5


class Place:
    """One connection: idle since when (None while a request runs), requests served."""

    __slots__ = ("idle_since", "served", "writer")

    def __init__(self, writer: Any) -> None:
        self.writer = writer
        self.idle_since: float | None = time.monotonic()
        self.served = 0


class Places:
    """The connections a server serves, with the waits and refusals at its limit."""

    def __init__(
        self,
        limit: Callable[[], int],
        wait_s: Callable[[], float],
        close_idle: Callable[[Place], None],
    ) -> None:
        self.limit = limit  # read at each use: a reload may change it
        self.wait_s = wait_s
        self.close_idle = close_idle  # says why (the socket's error line) and closes
        self.conns: dict[Any, Place] = {}
        # connections closed for room whose handlers have not ended yet: they no longer count
        # against the limit (a burst would otherwise find only these and be refused)
        self.closing: dict[Any, Place] = {}
        self._room = asyncio.Event()  # set when a connection ends or finishes a request
        self.waited = 0
        self.refused = 0
        self.evicted = 0
        self.last_waited: float | None = None
        self.last_refused: float | None = None
        self.last_evicted: float | None = None

    def make_room(self) -> bool:
        """A place now: a free one, or the one of the connection silent the longest (closed);
        False if none is free nor silent long enough."""
        if len(self.conns) < self.limit():
            return True
        now = time.monotonic()
        idle = [
            (key, p)
            for key, p in self.conns.items()
            if p.idle_since is not None and now - p.idle_since >= EVICT_AFTER_S
        ]
        if not idle:
            return False
        key, oldest = min(idle, key=lambda kp: kp[1].idle_since or 0.0)
        oldest.idle_since = None  # never picked twice
        self.closing[key] = self.conns.pop(key)
        self.evicted += 1
        self.last_evicted = time.time()
        log.info("closed an idle connection to make room", connections=len(self.conns))
        with contextlib.suppress(Exception):
            self.close_idle(oldest)
        return True

    async def take(self, key: Any, writer: Any) -> Place | None:
        """A place for the connection `key` (its handler's task), waiting up to wait_s for one
        (never less than twice EVICT_AFTER_S); None when refused (the caller says so)."""
        if not self.make_room():
            self.waited += 1
            self.last_waited = time.time()
            try:
                async with asyncio.timeout(max(self.wait_s(), 2 * EVICT_AFTER_S)):
                    while not self.make_room():
                        self._room.clear()
                        with contextlib.suppress(TimeoutError):
                            async with asyncio.timeout(EVICT_AFTER_S):  # one may be idle then
                                await self._room.wait()
            except TimeoutError:
                self.refused += 1
                self.last_refused = time.time()
                return None
        place = self.conns[key] = Place(writer)
        return place

    def busy(self, place: Place) -> None:
        """A request arrived on the connection: it is not silent now."""
        place.idle_since = None
        place.served += 1

    def idle(self, place: Place) -> None:
        """Its answer is sent: silent from now on (a waiting newcomer may take its place)."""
        place.idle_since = time.monotonic()
        self._room.set()

    def leave(self, key: Any) -> None:
        """The connection ended."""
        self.conns.pop(key, None)
        self.closing.pop(key, None)
        self._room.set()

    def info(self) -> dict[str, Any]:
        """For status: the places, and since the start how many connections waited for one,
        were refused after waiting, were closed for room; the last of each (ISO times)."""
        return {
            "open": len(self.conns),
            "limit": self.limit(),
            "waited": self.waited,
            "refused": self.refused,
            "closed_idle": self.evicted,
            "last_waited": iso(self.last_waited),
            "last_refused": iso(self.last_refused),
            "last_closed_idle": iso(self.last_evicted),
        }
