"""MCP round trip vs the raw socket, and what each MCP tool's answer costs in tokens.

    .venv/bin/python -m bench.mcp_latency [--chunks 3000] [--queries 200]

Starts a keyword-mode daemon on a generated workspace, then `memoryd mcp` spoken to with the
SDK's stdio client. The same queries go, interleaved, over the raw socket (one connection per
request, as memoryctl does) and through MCP `search` (tool call -> bridge -> socket -> back).
Token sizes are memoryd's estimate (markdown.estimate_tokens) of the text an agent reads.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.corpus import _vocabulary, write_workspace
from bench.run import Daemon
from memoryd.text.markdown import estimate_tokens


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def measure(d: Daemon, queries: list[str]) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memoryd", "mcp", "--socket", str(d.sock)]
    )
    raw: list[float] = []
    via_mcp: list[float] = []
    sizes: dict[str, tuple[int, int]] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        listed = await s.list_tools()
        import json

        sizes[f"(tools/list: all {len(listed.tools)} tool definitions)"] = (
            estimate_tokens(json.dumps([t.model_dump(exclude_none=True) for t in listed.tools])),
            0,
        )
        for q in queries[:5]:  # warm both paths
            d.call("search", {"query": q})
            await s.call_tool("search", {"query": q})
        for q in queries:
            t0 = time.perf_counter()
            d.call("search", {"query": q, "limit": 10})
            raw.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            r = await s.call_tool("search", {"query": q, "limit": 10})
            via_mcp.append((time.perf_counter() - t0) * 1000)
            assert not r.is_error, text_of(r)

        async def size(name: str, label: str, args: dict[str, Any]) -> Any:
            r = await s.call_tool(name, args)
            assert not r.is_error, (name, text_of(r))
            sizes[label] = (
                estimate_tokens(text_of(r)),
                estimate_tokens(json.dumps(r.structured_content)),
            )
            return r

        for i in range(3):
            await size(
                "remember",
                "remember",
                {
                    "content": f"Decision {i}: the staging deploy runs from the release branch "
                    "after the smoke tests pass",
                    "tags": ["deploy"],
                    "tier": "constitutional" if i == 0 else "normal",
                    "triggers": ["deploy staging"] if i == 0 else [],
                },
            )
        await size("search", "search, 10 hits", {"query": queries[0], "limit": 10})
        await size("search", "search, limit 5", {"query": queries[1], "limit": 5})
        await size(
            "search",
            "search, max_tokens 300",
            {"query": queries[2], "limit": 10, "max_tokens": 300},
        )
        r = await size(
            "search", "search, memories only", {"query": "staging deploy", "kind": "memory"}
        )
        mid = r.structured_content["hits"][0]["id"]
        await size("get", "get (one memory)", {"id": mid})
        await size("update", "update", {"id": mid, "importance": 8})
        await size("feedback", "feedback", {"id": mid, "verdict": "useful"})
        await size("match_triggers", "match_triggers", {"prompt": "how do we deploy staging"})
        await size("session_context", "session_context (default 800)", {})
        await size("recent_activity", "recent_activity (limit 20)", {"limit": 20})
        await size("list_notes", "list_notes (limit 50)", {"limit": 50})
        first = r = await s.call_tool("list_notes", {"limit": 1})
        path = first.structured_content["items"][0]["path"]
        await size("read_note", "read_note (a generated note)", {"path": path})
        w = await size(
            "write_note", "write_note", {"path": "bench/new.md", "content": "# New\nbench note\n"}
        )
        await size(
            "append_to_note",
            "append_to_note",
            {
                "path": "bench/new.md",
                "content": "more",
                "expected_sha256": w.structured_content["sha256"],
            },
        )
        await size("move_note", "move_note", {"path": "bench/new.md", "new_path": "bench/moved.md"})
        await size("forget", "forget", {"id": mid})
    return {"raw": raw, "mcp": via_mcp, "sizes": sizes}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.mcp_latency")
    p.add_argument("--chunks", type=int, default=3000)
    p.add_argument("--queries", type=int, default=200)
    a = p.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="mcpbench-"))
    try:
        ws = root / "ws"
        made = write_workspace(ws, a.chunks)
        d = Daemon(root / "d", ws, model=False)
        try:
            Daemon.wait(
                lambda: (d.call("status") or {}).get("index", {}).get("initial_reconcile_done"), 600
            )
            vocab = _vocabulary()
            rng = random.Random(5)
            queries = [" ".join(rng.sample(vocab[50:2000], 2)) for _ in range(a.queries)]
            out = anyio.run(measure, d, queries)
        finally:
            d.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    raw, via = out["raw"], out["mcp"]
    print(f"workspace: {made['files']} files, {made['chunks']} chunks; {len(raw)} queries, keyword")
    print("| path | p50 ms | p95 ms | mean ms |")
    print("|---|---|---|---|")
    for label, v in (("raw socket `search`", raw), ("MCP `search` tool (stdio)", via)):
        print(f"| {label} | {pct(v, 0.5):.2f} | {pct(v, 0.95):.2f} | {statistics.mean(v):.2f} |")
    print(f"MCP overhead p50: {pct(via, 0.5) - pct(raw, 0.5):.2f} ms")
    print("\n| tool call | text tokens | structured tokens |")
    print("|---|---|---|")
    for label, (t, j) in out["sizes"].items():
        print(f"| {label} | {t} | {j} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
