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
import os
import sys
from typing import Any

from memoryd import __version__
from memoryd.agents.tools import TOOLS, Bridge, call_tool
from memoryd.ctl import client, socket_path

# --- the MCP server ----------------------------------------------------------------------------


def build_server(bridge: Bridge) -> Any:
    import anyio.to_thread
    import mcp.types as types
    from mcp.server.lowlevel import Server

    tools = [
        types.Tool(
            name=t.name,
            description=t.description,
            input_schema=t.schema,
            annotations=types.ToolAnnotations(
                read_only_hint=t.read_only,
                destructive_hint=t.name in ("forget", "write_note", "move_note"),
                open_world_hint=False,
            ),
        )
        for t in TOOLS
    ]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def on_call(ctx: Any, params: Any) -> Any:
        text, structured, is_error = await anyio.to_thread.run_sync(
            call_tool, bridge, params.name, params.arguments
        )
        if structured is not None and not isinstance(structured, dict):
            structured = {"result": structured}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=structured,
            is_error=is_error,
        )

    return Server(
        "memoryd",
        version=__version__,
        instructions="memoryd is the user's local memory: notes in a markdown workspace plus "
        "memories agents add. Call session_context at the start of a task, search before "
        "asking the user something they may have said before, remember durable facts and "
        "decisions, and use read_note/write_note with expected_sha256 to edit notes.",
        on_list_tools=list_tools,
        on_call_tool=on_call,
    )


async def serve(bridge: Bridge) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(bridge)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


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
        print(f"memoryd mcp: {exc}; using the default socket {first}", file=sys.stderr)
    return [first, *(p for p in client.login_socket_paths() if p != first)]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve MCP over stdio for AI agents (bridges to the running daemon)",
        description="Run an MCP server on stdin/stdout for an AI agent (Claude Code, Cursor, "
        "Codex, Claude Desktop). It forwards each tool call to the running daemon; see "
        "docs/agents.md.",
    )
    p.add_argument("--socket", help="daemon socket (default: $MEMORYD_SOCKET or the config's)")
    p.add_argument("--config", help="configuration file to take the socket path from")
    p.add_argument(
        "--namespace",
        default=None,
        help="this agent's default memory namespace (default: $MEMORYD_NAMESPACE, else the "
        "daemon's)",
    )
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the daemon")
    p.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    try:
        import anyio
        import mcp  # noqa: F401
    except ImportError:
        print("memoryd mcp needs the MCP SDK: pip install 'memoryd[mcp]'", file=sys.stderr)
        return 2
    namespace = args.namespace or os.environ.get("MEMORYD_NAMESPACE") or None
    sockets = socket_candidates(args.socket, args.config)
    bridge = Bridge(sockets, namespace, timeout=args.timeout)
    anyio.run(serve, bridge)
    return 0
