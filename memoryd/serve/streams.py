"""Connections: the bookkeeping that lets a stream server close every connection it accepted.

asyncio.start_server and start_unix_server leave four ways for a socket to outlive the server's
close():
- a socket accepted a moment before close() is handed to a task that makes its transport; when
  that task first runs after close(), the transport's constructor fails (Python 3.11: the
  server's `_attach` asserts it still has sockets) after taking the socket, and the task swallows
  the error: nobody closes that socket until the garbage collector warns about it;
- a socket accepted a moment ago is not yet a transport;
- a handler task cancelled before its first step never runs its `finally`;
- StreamWriter.close() waits for unsent bytes, which a client that stopped reading never takes (a
  handler awaiting wait_closed() then never ends, and neither does the shutdown that gathers it).
Both servers (the Unix socket and the web page) build their connections here instead, so that
every one of them ends:

    conns = Connections(handler, limit)
    server = await loop.create_server(conns.protocol, host, port)
    ...
    await conns.stop_accepting(server)   # not server.close()
    await conns.shutdown()
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Coroutine[Any, Any, None]]

# the loop's task that turns an accepted socket into a transport (one per connection)
_ACCEPTING = "BaseSelectorEventLoop._accept_connection2"
SETTLE_TURNS = 1000
# how long shutdown lets a half-sent answer go on to a client that is reading it
FLUSH_GRACE_S = 2.0


class Connections:
    """Every transport from its making to its socket's close, and every handler task from its
    creation (not its first step) to its end."""

    def __init__(self, handler: Handler, limit: int) -> None:
        self.handler = handler
        self.limit = limit
        self.open: set[asyncio.BaseTransport] = set()
        self.tasks: set[asyncio.Task[None]] = set()

    def protocol(self) -> asyncio.StreamReaderProtocol:
        """The protocol factory for loop.create_server / create_unix_server."""
        return _Protocol(self)

    def _started(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        task: asyncio.Task[None] = loop.create_task(self.handler(reader, writer))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def stop_accepting(self, server: asyncio.AbstractServer) -> None:
        """Stop listening: no new connection is accepted, and every socket accepted before
        becomes a tracked transport before the server closes (closing first would leave a
        socket accepted a moment ago with no owner; see the module's docstring)."""
        loop = asyncio.get_running_loop()
        for sock in getattr(server, "sockets", ()) or ():
            loop.remove_reader(sock.fileno())  # no accept runs from here on
        await self.settle()
        server.close()

    async def settle(self) -> None:
        """Let sockets accepted just now become transports (and handlers), so that shutdown()
        sees them."""
        for _ in range(SETTLE_TURNS):
            if not any(_accepting(t) for t in asyncio.all_tasks()):
                return
            await asyncio.sleep(0)

    async def shutdown(self, grace_s: float = FLUSH_GRACE_S) -> None:
        """Cancel every handler; give answers still being sent `grace_s` to reach a client
        that reads them; then close every socket left, unsent bytes dropped. Returns when
        every socket is closed."""
        await self.settle()
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        if tasks:  # each handler's `finally` closes its writer, which sends what is buffered
            await asyncio.wait(tasks, timeout=grace_s)
        # abort, not close: close() would wait for a reader that may never read
        for transport in list(self.open):
            if isinstance(transport, asyncio.Transport):
                transport.abort()
            else:
                transport.close()
        await asyncio.gather(*tasks, return_exceptions=True)
        for _ in range(SETTLE_TURNS):  # connection_lost runs a turn after abort()
            if not self.open:
                return
            await asyncio.sleep(0)


def _accepting(task: asyncio.Task[Any]) -> bool:
    return not task.done() and getattr(task.get_coro(), "__qualname__", "") == _ACCEPTING


class _Protocol(asyncio.StreamReaderProtocol):
    """start_server's protocol, plus the bookkeeping above. The handler's task is made here
    (the callback returns None, so asyncio makes none of its own)."""

    def __init__(self, conns: Connections) -> None:
        loop = asyncio.get_running_loop()
        super().__init__(
            asyncio.StreamReader(limit=conns.limit, loop=loop), conns._started, loop=loop
        )
        self._conns = conns
        self._mine: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._mine = transport
        self._conns.open.add(transport)
        super().connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            super().connection_lost(exc)
        finally:
            if self._mine is not None:
                self._conns.open.discard(self._mine)
