"""`memoryd mcp`'s flags, apart from the bridge (agents/mcp.py): `memoryd run` builds every
subcommand's arguments, and importing the bridge (its tool catalog, memoryctl's client) for
them cost each daemon's start ~40 ms of CPU."""

from __future__ import annotations

import argparse
from typing import Any

from memoryd.ctl.loud import seconds

PREFIX_ENV = "MEMORYD_MCP_PREFIX"


DESCRIPTION = (
    "Run an MCP server on stdin/stdout for an AI agent (Claude Code, Cursor, Codex, Claude "
    "Desktop). It forwards each tool call to the running daemon; see docs/agents.md. Exit "
    "status: 0 the agent closed the session, 2 a bad flag or value, or the MCP SDK is not "
    "installed (pip install 'memoryd[mcp]')."
)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """`memoryd mcp` (cli.py, which sets the command it runs)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "mcp",
        help="serve MCP over stdio for AI agents (bridges to the running daemon)",
        description=DESCRIPTION,
    )
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The bridge's flags, the same under `memoryd mcp` and `python -m memoryd.agents.mcp`."""
    p.add_argument(
        "--socket",
        metavar="PATH",
        help="the daemon's socket (default: $MEMORYD_SOCKET, else the config's `socket`)",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="configuration file to take the socket path from (default: $MEMORYD_CONFIG, "
        "else $XDG_CONFIG_HOME/memoryd/config.toml)",
    )
    p.add_argument(
        "--namespace",
        default=None,
        metavar="NS",
        help="this agent's default memory namespace (default: $MEMORYD_NAMESPACE, else the "
        "daemon's `memories.default_namespace`)",
    )
    p.add_argument(
        "--timeout",
        type=seconds,
        default=60.0,
        metavar="S",
        help="seconds to wait for the daemon's answer to a tool call (default 60)",
    )
    p.add_argument(
        "--prefix",
        default=None,
        metavar="TEXT",
        help=f"put this before every tool name, e.g. memoryd_ (memoryd_search); default: "
        f"${PREFIX_ENV}, else none",
    )
