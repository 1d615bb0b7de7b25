"""`memoryd mcp`: a stdio MCP server that bridges agents to the running daemon.

A thin edge (STYLE 1, 11, 12): the tools are a table; each tool turns its arguments into one or
two JSON-RPC calls over the daemon's Unix socket (memoryctl's client, so the socket is found the
same way) and its answer into compact text plus the structured result. No store of its own:
every agent's `memoryd mcp` talks to the one daemon and its one index. When the daemon is not
running, each tool answers with an error that says how to start it; with the systemd socket
unit installed, the first connection starts it (socket activation).

Needs the `mcp` extra (`pip install 'memoryd[mcp]'`): the official MCP Python SDK, major 2.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

from memoryd import __version__
from memoryd.agents import catalog, wire
from memoryd.agents.mcpflags import DESCRIPTION, PREFIX_ENV, add_arguments
from memoryd.agents.tools import Bridge
from memoryd.ctl import client, socket_path

_PREFIX = re.compile(r"^[A-Za-z0-9_-]{0,32}$")
_ID = re.compile(r'"id"\s*:\s*(-?\d{1,18}(?![\d.eE])|"(?:[^"\\]|\\.){0,200}")')

# --- the MCP server ----------------------------------------------------------------------------


def build_server(bridge: Bridge, prefix: str = "") -> Any:
    """The MCP server; `prefix` goes before every tool name (memoryd_search), so generic names
    do not meet other servers' tools."""
    import anyio.to_thread
    import mcp.types as types
    from mcp.server.lowlevel import Server

    tools = listed_tools(prefix)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def on_call(ctx: Any, params: Any) -> Any:
        from mcp.shared.exceptions import MCPError

        name = params.name
        if prefix and not name.startswith(prefix):  # unprefixed names are not this server's
            unknown = f"unknown tool {name!r}: this server's tools are named {prefix}NAME"
            raise MCPError(code=types.INVALID_PARAMS, message=unknown)
        name = name[len(prefix) :]
        if name not in catalog.BY_NAME:  # a protocol error, as MCP has it (not a tool's)
            raise MCPError(code=types.INVALID_PARAMS, message=prefixed("", name, prefix))
        text, structured, is_error = await anyio.to_thread.run_sync(
            catalog.call_safely, bridge, name, params.arguments
        )
        if prefix:  # the tools named as the agent calls them (in an error: in every word)
            text = catalog.named(prefixed(text, name, prefix), prefix, everywhere=is_error)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=structured,
            is_error=is_error,
        )

    server = Server(
        "memoryd",
        version=__version__,
        instructions=catalog.named(INSTRUCTIONS, prefix),
        on_list_tools=list_tools,
        on_call_tool=on_call,
    )
    server.middleware.append(wire.plain_errors)
    return server


INSTRUCTIONS = (
    "memoryd is the user's local memory: notes in a markdown workspace plus memories agents "
    "add. Call session_context at the start of a task, search before asking the user something "
    "they may have said before, remember durable facts and decisions, and use read_note, then "
    "edit_note (or write_note) with expected_sha256, to change notes."
)


def listed_tools(prefix: str = "") -> list[Any]:
    """The tools as tools/list gives them: each name after `prefix`, and every tool their
    descriptions name said as the agent calls it."""
    import mcp.types as types

    return [
        types.Tool(
            name=prefix + t.name,
            description=catalog.named(t.description, prefix),
            input_schema=catalog.named_in(t.schema, prefix),
            annotations=types.ToolAnnotations(
                read_only_hint=t.read_only,
                destructive_hint=t.name in catalog.DESTRUCTIVE,
                idempotent_hint=None if t.read_only else t.name in catalog.IDEMPOTENT,
                open_world_hint=False,
            ),
        )
        for t in catalog.ALL_TOOLS
    ]


def prefixed(text: str, name: str, prefix: str) -> str:
    """A tool's answer as the agent called it: its own name with the prefix at the head of an
    error (`memoryd_search: limit: ...`), and the names it may call instead prefixed too."""
    if name not in catalog.BY_NAME:
        names = ", ".join(prefix + t.name for t in catalog.ALL_TOOLS)
        return f"unknown tool {prefix + name!r} (tools: {names})"
    return prefix + text if text.startswith(name + ": ") else text


async def serve(bridge: Bridge, prefix: str = "") -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(bridge, prefix)
    stdin: Any = wire.StdinLines()  # strict UTF-8 (memoryd.agents.wire)
    async with stdio_server(stdin=stdin) as (read, write):
        answering = AnswerUnparsed(read, write)
        await server.run(answering, answering.write, server.create_initialization_options())


def readable_id(exc: Exception) -> int | str | None:
    """The request id of a line the SDK could not take, when it can be read: from the parsed
    object (valid JSON, not a valid message) or from the raw text (JSON cut short, or bytes
    that are not UTF-8)."""
    for err in _errors(exc):
        value = err.get("input")
        if isinstance(value, dict) and "id" in value:
            rid = value["id"]
            ok = isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))
            return rid if ok and _writable(rid) else None
        if isinstance(value, str) and '"id"' in value:
            m = _ID.search(value)
            if m:
                try:
                    rid = json.loads(m.group(1))
                except ValueError:
                    return None
                return rid if isinstance(rid, int | str) and _writable(rid) else None
    return None


def _errors(exc: Exception) -> list[dict[str, Any]]:
    errors = getattr(exc, "errors", None)
    return list(errors()) if callable(errors) else []


def _why(errors: list[dict[str, Any]]) -> str:
    """Where the JSON parser stopped and why (`EOF while parsing an object at column 46`,
    `recursion limit exceeded ...`), for the client's developer; a message is one line."""
    for e in errors:
        said = (e.get("ctx") or {}).get("error")
        if e.get("type") == "json_invalid" and isinstance(said, str):
            said = _WHERE.sub(lambda m: _where(m[1], m[2]), said)
            return f" ({said})"
    return ""


_WHERE = re.compile(r" at line (\d+) column (\d+)$")


def _where(line: str, column: str) -> str:
    """The parser's place on the one line a message is (line 2 is past its end)."""
    return f" at column {column}" if line == "1" else " at the end of the line"


def _array(error: dict[str, Any]) -> bool:
    return error.get("type") == "model_type" and isinstance(error.get("input"), list)


def _writable(rid: int | str) -> bool:
    """An id that can be written back as UTF-8 (one read from bytes that are not cannot)."""
    return not isinstance(rid, str) or not any("\udc80" <= c <= "\udcff" for c in rid)


class AnswerUnparsed:
    """The SDK's read stream, except that a line it could not parse is answered at once with a
    JSON-RPC error carrying the request's id when the id can be read (parse error -32700 or
    invalid request -32600), instead of leaving the client to wait for its timeout."""

    def __init__(self, inner: Any, write: Any) -> None:
        self.inner = inner
        self.write = Answers(write, self)  # the server writes through it too
        self.open: set[int | str] = set()  # ids of the requests read and not yet answered

    def __getattr__(self, name: str) -> Any:  # last_context and the like
        return getattr(self.inner, name)

    async def receive(self) -> Any:
        import anyio

        while True:
            try:
                item = await self.inner.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                await self._drain()
                raise
            if not isinstance(item, Exception):
                rid = _message_id(item, "JSONRPCRequest")
                if rid is not None:
                    self.open.add(rid)
                self.open.discard(_cancelled(item))  # a cancelled request gets no answer
                return item
            await self._answer(item)

    async def _drain(self) -> None:
        """stdin closed (a script that pipes its requests in and closes): the requests already
        read are answered before the server stops, instead of being cancelled unanswered."""
        import anyio

        with anyio.move_on_after(DRAIN_S):
            while self.open:
                await anyio.sleep(0.01)

    async def _answer(self, exc: Exception) -> None:
        import mcp.types as types
        from mcp.shared.message import SessionMessage

        errors = _errors(exc)
        kinds = {e.get("type") for e in errors}
        batch = next(  # the whole line an array (not a member of the message, as params)
            (e["input"] for e in errors if len(e.get("loc", ())) <= 1 and _array(e)), None
        )
        if batch is not None:  # each request in it is told, rather than left to time out
            code, what, ids = types.INVALID_REQUEST, wire.BATCH, wire.batch_ids(batch)
        else:
            code, what = (
                (types.PARSE_ERROR, "parse error: the line is not valid UTF-8 (MCP messages are)")
                if "string_unicode" in kinds
                else (types.PARSE_ERROR, "parse error: the line is not valid JSON" + _why(errors))
                if "json_invalid" in kinds
                else (types.INVALID_REQUEST, "invalid request: not a valid JSON-RPC 2.0 message")
            )
            rid = readable_id(exc)
            ids = [] if rid is None else [rid]
        wire.say(f"memoryd mcp: {what} (id {', '.join(map(repr, ids)) or None})")
        for rid in ids:
            error = types.JSONRPCError(
                jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=what)
            )
            await self.write.send(SessionMessage(error))

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> AnswerUnparsed:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AnswerUnparsed:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self.inner.__aexit__(*exc)


DRAIN_S = 120.0  # at most this long for the answers still owed when stdin closes


def _message_id(item: Any, *kinds: str) -> int | str | None:
    """The id of a SessionMessage whose JSON-RPC message is one of `kinds`, else None."""
    message = getattr(item, "message", None)
    root = getattr(message, "root", message)  # a RootModel in older SDKs, the message in newer
    if root is None or type(root).__name__ not in kinds:
        return None
    rid = getattr(root, "id", None)
    return rid if isinstance(rid, int | str) else None


def _cancelled(item: Any) -> Any:
    """The id a `notifications/cancelled` names, else None."""
    message = getattr(item, "message", None)
    root = getattr(message, "root", message)
    if getattr(root, "method", None) != "notifications/cancelled":
        return None
    params = getattr(root, "params", None) or {}
    return params.get("requestId") if isinstance(params, dict) else None


class Answers:
    """The SDK's write stream, noting which requests have been answered (AnswerUnparsed._drain
    waits for the rest when stdin closes)."""

    def __init__(self, inner: Any, reader: AnswerUnparsed) -> None:
        self.inner, self.reader = inner, reader

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def send(self, item: Any) -> None:
        await self.inner.send(item)
        rid = _message_id(item, "JSONRPCResponse", "JSONRPCError")
        if rid is not None:
            self.reader.open.discard(rid)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> Answers:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self.inner.__aexit__(*exc)


def resolve_socket(explicit: str | None, config: str | None) -> str:
    """--socket, else $MEMORYD_SOCKET, else the configuration's socket (memoryctl's rule plus
    the config file, so a socket moved in config.toml is found)."""
    return socket_candidates(explicit, config)[0]


def socket_candidates(explicit: str | None, config: str | None) -> list[str]:
    """The socket to use first, then where else a daemon started in the login session may
    listen (see login_socket_paths); the bridge takes the first that exists."""
    if explicit or os.environ.get("MEMORYD_SOCKET"):
        return [socket_path(explicit)]
    from pathlib import Path

    from memoryd.core.config import load_config
    from memoryd.core.errors import MemorydError

    try:
        first = str(load_config(Path(config) if config else None).socket)
    except (MemorydError, OSError) as exc:
        first = socket_path(None)
        wire.say(f"memoryd mcp: {exc}; using the default socket {first}")
    return [first, *(p for p in client.login_socket_paths() if p != first)]


def main(argv: list[str] | None = None) -> int:
    """`python -m memoryd.agents.mcp`: the bridge `memoryd mcp` runs, with its flags, --help
    and --version (it did nothing and exited 0: no `__main__` here)."""
    from memoryd.ctl.loud import LoudParser

    parser = LoudParser(prog="python -m memoryd.agents.mcp", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"memoryd {__version__}")
    add_arguments(parser)
    parser.set_defaults(func=cmd_mcp)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


def cmd_mcp(args: argparse.Namespace) -> int:
    try:
        import anyio
        import mcp  # noqa: F401
    except ImportError:
        wire.say("memoryd mcp needs the MCP SDK: pip install 'memoryd[mcp]'")
        return 2
    namespace = args.namespace or os.environ.get("MEMORYD_NAMESPACE") or None
    if namespace is not None:  # refused now, not by every call of the session
        where = "--namespace" if args.namespace else "MEMORYD_NAMESPACE"
        problem = namespace_problem(namespace)
        if problem:
            wire.say(f"memoryd mcp: {where}: {problem}")
            return 2
    prefix = args.prefix if args.prefix is not None else os.environ.get(PREFIX_ENV, "")
    if not _PREFIX.match(prefix):
        wire.say(
            f"memoryd mcp: the tool name prefix may hold up to 32 letters, digits, '_' and '-' "
            f"(got {len(prefix)} characters with others)"
        )
        return 2
    if sys.stdin is None or sys.stdout is None:  # `<&-`, `>&-`: no channel to speak on
        wire.say("memoryd mcp: stdin and stdout carry the MCP messages; one is closed")
        return 2
    sockets = socket_candidates(args.socket, args.config)
    bridge = Bridge(sockets, namespace, timeout=args.timeout)
    try:
        anyio.run(serve, bridge, prefix)
    except BaseException as exc:
        if not client_gone(exc):
            raise
    return 0  # the client closed its end (the agent quit): the session is over, not an error


def namespace_problem(namespace: str) -> str | None:
    """What is wrong with an agent's default namespace, in the daemon's words, else None."""
    from memoryd.core.errors import MemorydError
    from memoryd.core.names import check_name

    if namespace.strip() == "*":
        return (
            "'*' (every namespace) can be searched but not remembered into: give one "
            "namespace (search takes namespace '*' call by call)"
        )
    try:
        check_name(namespace[:65], "namespace")  # (cut: over 64 is said by the name's rule)
    except MemorydError as exc:
        said = str(exc).removeprefix("namespace: ")
        return said + (f", got {len(namespace)}" if len(namespace) > 64 else "")
    return None


def client_gone(exc: BaseException) -> bool:
    """A broken pipe on stdout (the client stopped reading), alone or in the task group's
    ExceptionGroup, as the SDK's writer task raises it: was a traceback in the agent's log."""
    if isinstance(exc, BaseExceptionGroup):
        return all(client_gone(e) for e in exc.exceptions)
    return isinstance(exc, BrokenPipeError | ConnectionResetError)


if __name__ == "__main__":
    raise SystemExit(main())
