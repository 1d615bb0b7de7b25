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
import errno
import time
from collections.abc import Callable, Coroutine
from typing import Any

from memoryd.core import oserrors
from memoryd.core.logsetup import get_logger
from memoryd.core.timeutil import iso

log = get_logger("memoryd.serve.streams")

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Coroutine[Any, Any, None]]

# the loop's task that turns an accepted socket into a transport (one per connection)
_ACCEPTING = "BaseSelectorEventLoop._accept_connection2"
SETTLE_TURNS = 1000
# how long shutdown lets a half-sent answer go on to a client that is reading it
FLUSH_GRACE_S = 2.0
# accept() refused for want of a file descriptor or memory: tried again this much later
ACCEPT_RETRY_S = 1.0
OUT_OF = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


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


async def drain(writer: asyncio.StreamWriter, stall_s: float) -> None:
    """writer.drain(), except that a client that takes none of what is sent for `stall_s` is
    dropped (its socket aborted, ConnectionResetError raised): one that never reads its answer
    (a stopped process, a hung agent) held its connection, a descriptor and, on the Unix
    socket, a place of max_connections that no other client could take, for as long as it
    lived. A slow reader that takes some of it in each `stall_s` goes on."""
    transport = writer.transport
    while True:
        before = transport.get_write_buffer_size()
        try:
            async with asyncio.timeout(stall_s):
                await writer.drain()
            return
        except TimeoutError:
            if transport.get_write_buffer_size() < before:
                continue
            left = transport.get_write_buffer_size()
            transport.abort()
            log.warning(
                "dropped a client that took none of its answer", waited_s=stall_s, unsent=left
            )
            raise ConnectionResetError(
                f"the client took none of its answer in {stall_s:g} s"
            ) from None


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


# The private parts of asyncio's selector loop EventLoop builds on (CPython 3.11 to 3.13); a
# Python without them keeps asyncio's own accept loop.
_ASYNCIO_PARTS = all(
    hasattr(asyncio.SelectorEventLoop, name)
    for name in ("_accept_connection", "_accept_connection2", "_start_serving", "_remove_reader")
)


class EventLoop(asyncio.SelectorEventLoop):
    """The daemon's loop (`asyncio.Runner(loop_factory=EventLoop)`): asyncio's, but for what
    accept() does when the process is out of file descriptors (or the system out of memory).

    asyncio (CPython before gh-151615) goes on calling accept() after such a refusal, up to the
    listen backlog (1024) times a round, each time scheduling one more retry and calling the
    exception handler: at the open-file limit, thousands of failed accepts and log calls a
    second, a core busy while nothing can be served. Here the first refusal ends the round,
    the socket is not watched for ACCEPT_RETRY_S, then accepts are tried again (the clients
    wait in the kernel's queue meanwhile). The log says it once, as for refused writes
    (oserrors.Refusals: a warning when accepts start failing, an info line once none failed for
    ten minutes and one worked), and each retry at debug level."""

    def __init__(self) -> None:
        super().__init__()
        self.accepts = oserrors.Refusals(
            "accept",
            started="new connections wait: accept() refused",
            ended="new connections accepted again",
        )
        self.accepts_refused = 0  # since the start (the spell's count above ends with it)
        self.accepts_last_refused: float | None = None
        self.accepts_error: str | None = None

    def accept_info(self) -> dict[str, Any]:
        """For status: accept() refusals (out of file descriptors or memory) since the start,
        the last one's time and what to do; the clients waited in the kernel's queue."""
        return {
            "refused": self.accepts_refused,
            "last_refused": iso(self.accepts_last_refused),
            "error": self.accepts_error,
        }

    def _accept_connection(
        self,
        protocol_factory: Callable[[], asyncio.BaseProtocol],
        sock: Any,
        sslcontext: Any = None,
        server: Any = None,
        backlog: int = 100,
        *rest: Any,
    ) -> None:
        if not _ASYNCIO_PARTS:  # a Python whose asyncio is built otherwise: its own accept
            args = (protocol_factory, sock, sslcontext, server, backlog, *rest)
            return super()._accept_connection(*args)  # type: ignore[misc]
        for _ in range(backlog):
            try:
                conn, addr = sock.accept()
                conn.setblocking(False)
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:  # that client gave up: the next one
                continue
            except OSError as exc:
                if exc.errno not in OUT_OF:
                    raise  # the loop logs it and goes on, as asyncio's does
                said = oserrors.what_to_do(exc.errno) or str(exc.strerror)
                self.accepts.refused(said)
                self.accepts_refused += 1
                self.accepts_last_refused, self.accepts_error = time.time(), said
                log.debug("accept() refused; tried again in a second", error=exc.strerror)
                self._remove_reader(sock.fileno())  # type: ignore[attr-defined]
                args = (protocol_factory, sock, sslcontext, server, backlog, *rest)
                self.call_later(ACCEPT_RETRY_S, self._accept_again, *args)
                return
            self.accepts.worked()
            accept = self._accept_connection2(  # type: ignore[attr-defined]
                protocol_factory, conn, {"peername": addr}, sslcontext, server, *rest
            )
            self.create_task(accept)

    def _accept_again(self, protocol_factory: Any, sock: Any, *args: Any) -> None:
        server = args[1] if len(args) > 1 else None
        if sock.fileno() == -1 or (server is not None and not server.is_serving()):
            return  # closed meanwhile (a stop, a socket file made again)
        self._start_serving(protocol_factory, sock, *args)  # type: ignore[attr-defined]
