"""Issue 13.1/13.5: `memoryd mcp` end to end, spoken to with the MCP SDK's own stdio client."""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parent.parent
EXPECTED_TOOLS = {
    "search",
    "remember",
    "get",
    "update",
    "forget",
    "session_context",
    "match_triggers",
    "feedback",
    "read_note",
    "write_note",
    "append_to_note",
    "list_notes",
    "move_note",
    "recent_activity",
}


def with_session(
    tmp_path: Path,
    args: list[str],
    body: Callable[[ClientSession], Awaitable[Any]],
    env: dict[str, str] | None = None,
) -> Any:
    """Start `memoryd mcp ARGS` and run body(session) against it."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memoryd", "mcp", *args], cwd=str(ROOT), env=env
    )

    async def main() -> Any:
        with open(tmp_path / "mcp-stderr.log", "a") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await body(session)

    return anyio.run(main)


def text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def test_mcp_end_to_end(daemon_factory: Any, tmp_path: Path) -> None:
    d = daemon_factory()

    async def body(s: ClientSession) -> None:
        listed = await s.list_tools()
        assert {t.name for t in listed.tools} == EXPECTED_TOOLS
        for t in listed.tools:
            assert t.description and len(t.description) > 40, t.name
            assert t.input_schema["type"] == "object"
        search_tool = next(t for t in listed.tools if t.name == "search")
        assert {"query", "tags", "since", "max_tokens", "group", "namespace"} <= set(
            search_tool.input_schema["properties"]
        )

        added = await s.call_tool(
            "remember", {"content": "The staging database runs on port 6543", "tags": ["infra"]}
        )
        assert not added.is_error, text(added)
        memory_id = added.structured_content["id"]
        assert f"[{memory_id}]" in text(added)

        found = await s.call_tool("search", {"query": "staging database port"})
        assert not found.is_error, text(found)
        assert [h["id"] for h in found.structured_content["hits"]][:1] == [memory_id]
        assert "6543" in text(found)

        # the agent's namespace (--namespace) was applied to the memory
        got = await s.call_tool("get", {"id": memory_id})
        assert got.structured_content["namespace"] == "agent-one"

        started = time.monotonic()
        wrote = await s.call_tool(
            "write_note",
            {
                "path": "projects/mcp.md",
                "content": "---\ntags: [demo]\n---\n# MCP\nquetzal feathers\n",
            },
        )
        assert not wrote.is_error, text(wrote)
        note_hits = await s.call_tool("search", {"query": "quetzal", "kind": "chunk"})
        assert time.monotonic() - started < 1.0 + 0.5  # within ~1 s, protocol included
        assert [h.get("path") for h in note_hits.structured_content["hits"]] == ["projects/mcp.md"]

        read = await s.call_tool("read_note", {"path": "projects/mcp.md"})
        assert read.structured_content["sha256"] == wrote.structured_content["sha256"]
        assert read.structured_content["content"].startswith("---\ntags: [demo]")

        ok = await s.call_tool(
            "append_to_note",
            {
                "path": "projects/mcp.md",
                "content": "more",
                "expected_sha256": read.structured_content["sha256"],
            },
        )
        assert not ok.is_error, text(ok)
        stale = await s.call_tool(
            "write_note",
            {
                "path": "projects/mcp.md",
                "content": "clobber",
                "expected_sha256": read.structured_content["sha256"],
            },
        )
        assert stale.is_error
        assert "conflict" in text(stale) and "read_note" in text(stale)
        assert stale.structured_content["error"]["code"] == -32009
        assert "clobber" not in (d.workspace / "projects" / "mcp.md").read_text()

        escape = await s.call_tool("write_note", {"path": "../escape.md", "content": "x"})
        assert escape.is_error and "leaves the workspace" in text(escape)
        assert not (d.workspace.parent / "escape.md").exists()

        bad_args = await s.call_tool("search", {"limit": 5})
        assert bad_args.is_error and "query" in text(bad_args)

        listed_notes = await s.call_tool("list_notes", {})
        assert "projects/mcp.md" in text(listed_notes)
        recent = await s.call_tool("recent_activity", {"limit": 5})
        assert not recent.is_error and recent.structured_content["items"]
        ctx = await s.call_tool("session_context", {"max_tokens": 300})
        assert not ctx.is_error and ctx.structured_content["tokens_used"] <= 300

        forgot = await s.call_tool("forget", {"id": memory_id})
        assert not forgot.is_error, text(forgot)
        gone = await s.call_tool("get", {"id": memory_id})
        assert gone.is_error and "not found" in text(gone)

    with_session(tmp_path, ["--socket", str(d.socket), "--namespace", "agent-one"], body)


def test_mcp_without_a_daemon_says_how_to_start_it(tmp_path: Path, short_dir: Path) -> None:
    async def body(s: ClientSession) -> list[Any]:
        assert len((await s.list_tools()).tools) == len(EXPECTED_TOOLS)  # tools are listed
        return [
            await s.call_tool("search", {"query": "anything"}),
            await s.call_tool("read_note", {"path": "a.md"}),
        ]

    for result in with_session(tmp_path, ["--socket", str(short_dir / "none.sock")], body):
        assert result.is_error
        assert "not running" in text(result) and "memoryd run" in text(result)
        assert "memoryd service install" in text(result)


def test_namespace_from_the_environment(daemon_factory: Any, tmp_path: Path) -> None:
    d = daemon_factory()

    async def body(s: ClientSession) -> Any:
        return await s.call_tool("remember", {"content": "remembered with the env namespace"})

    added = with_session(
        tmp_path, ["--socket", str(d.socket)], body, env={"MEMORYD_NAMESPACE": "from-env"}
    )
    assert not added.is_error, text(added)
    assert d.call("get", {"id": added.structured_content["id"]})["namespace"] == "from-env"
