"""Agents: `memoryd mcp`, the stdio MCP server, and its tools as a table (schema, daemon
call, compact text). It reaches the daemon only through the socket, with memoryctl's client.

May import: memoryd.core, memoryd.text, memoryd.ctl.
"""
