"""Connections (memoryd/serve/streams.py): a server that stops closes every socket it accepted,
including one accepted a moment before it stopped, on TCP (the web page) and Unix sockets."""

from __future__ import annotations

import asyncio
import gc
import inspect
import socket
import warnings
from pathlib import Path
from typing import Any

import pytest

from memoryd.serve.streams import Connections, _accepting


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(1024):
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


async def _listen(conns: Connections, family: str, tmp: Path) -> tuple[Any, Any, socket.socket]:
    loop = asyncio.get_running_loop()
    if family == "tcp":
        server = await loop.create_server(conns.protocol, "127.0.0.1", 0)
        address: Any = server.sockets[0].getsockname()[:2]
        client = socket.socket(socket.AF_INET)
    else:
        address = str(tmp / "s.sock")
        server = await loop.create_unix_server(conns.protocol, address)
        client = socket.socket(socket.AF_UNIX)
    client.setblocking(False)
    return server, address, client


async def _until_accepted_not_started() -> None:
    """Until the loop has accepted a socket and handed it to a task that has not run yet:
    the moment a server may be told to stop with a socket nobody owns yet."""
    for _ in range(100_000):
        if any(
            _accepting(t) and inspect.getcoroutinestate(t.get_coro()) == inspect.CORO_CREATED  # type: ignore[arg-type]
            for t in asyncio.all_tasks()
        ):
            return
        await asyncio.sleep(0)
    raise AssertionError("the server never accepted the connection")


@pytest.mark.parametrize("family", ["tcp", "unix"])
def test_a_socket_accepted_as_the_server_stops_is_closed(family: str, short_dir: Path) -> None:
    """Closing the server between accepting a socket and making its transport used to leave
    that socket open with no owner (the transport's constructor fails once the server is closed,
    and asyncio swallows the error): the client waited forever, and the garbage collector
    warned 'unclosed transport' during some later test (CI's flaky ResourceWarning)."""

    async def main() -> bytes:
        conns = Connections(_echo, 1 << 16)
        server, address, client = await _listen(conns, family, short_dir)
        loop = asyncio.get_running_loop()
        with client:
            client.setblocking(True)
            client.connect(address)  # done in the kernel, without a turn of the loop
            client.setblocking(False)
            await _until_accepted_not_started()
            await conns.stop_accepting(server)
            await conns.shutdown()
            assert not conns.open and not conns.tasks
            return await asyncio.wait_for(loop.sock_recv(client, 10), 10)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        assert asyncio.run(main()) == b""  # the server's side was closed: end of stream
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


@pytest.mark.parametrize("family", ["tcp", "unix"])
def test_after_stop_accepting_no_connection_is_taken(family: str, short_dir: Path) -> None:
    """Connections in flight keep working until shutdown; a new one is refused."""

    async def main() -> None:
        conns = Connections(_echo, 1 << 16)
        server, address, client = await _listen(conns, family, short_dir)
        loop = asyncio.get_running_loop()
        with client:
            await loop.sock_connect(client, address)
            await loop.sock_sendall(client, b"ping")
            assert await asyncio.wait_for(loop.sock_recv(client, 10), 10) == b"ping"
            await conns.stop_accepting(server)
            late = socket.socket(client.family)
            late.setblocking(False)
            with late, pytest.raises(OSError):
                await asyncio.wait_for(loop.sock_connect(late, address), 10)
            await loop.sock_sendall(client, b"pong")  # the open connection still answers
            assert await asyncio.wait_for(loop.sock_recv(client, 10), 10) == b"pong"
            await conns.shutdown()
            assert await asyncio.wait_for(loop.sock_recv(client, 10), 10) == b""

    asyncio.run(main())
