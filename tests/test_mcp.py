"""Issue 13.1/13.5: `memoryd mcp` end to end, spoken to with the MCP SDK's own stdio client."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import DEADLINE_S
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from memoryd.agents import catalog
from memoryd.agents.catalog import BY_NAME
from memoryd.agents.tools import Bridge, call_tool, fmt_hits

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

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
    "edit_note",
    "delete_note",
    "links",
    "backlinks",
    "about",
    "related",
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


def with_two_agents(
    tmp_path: Path,
    socket: Path,
    body: Callable[[ClientSession, ClientSession], Awaitable[Any]],
) -> Any:
    """Start two `memoryd mcp` on one daemon, namespaces alpha and beta; run body(alpha, beta)."""

    def params(ns: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=["-m", "memoryd", "mcp", "--socket", str(socket), "--namespace", ns],
            cwd=str(ROOT),
        )

    async def main() -> Any:
        with open(tmp_path / "mcp-stderr.log", "a") as errlog:
            async with (
                stdio_client(params("alpha"), errlog=errlog) as (ra, wa),
                ClientSession(ra, wa) as a,
                stdio_client(params("beta"), errlog=errlog) as (rb, wb),
                ClientSession(rb, wb) as b,
            ):
                await a.initialize()
                await b.initialize()
                return await body(a, b)

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
        assert {"query", "tags", "since", "max_tokens", "filters", "namespace"} <= set(
            search_tool.input_schema["properties"]
        )
        assert "group" in search_tool.input_schema["properties"]["filters"]["properties"]

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

        wrote = await s.call_tool(
            "write_note",
            {
                "path": "projects/mcp.md",
                "content": "---\ntags: [demo]\n---\n# MCP\nquetzal feathers\n",
            },
        )
        assert not wrote.is_error, text(wrote)
        # found at once, nothing waited for (write_note indexes before it answers); the
        # round-trip latency is `python -m bench.mcp_latency`
        note_hits = await s.call_tool("search", {"query": "quetzal", "kind": "chunk"})
        assert [h.get("path") for h in note_hits.structured_content["hits"]] == ["projects/mcp.md"]

        read = await s.call_tool("read_note", {"path": "projects/mcp.md"})
        assert read.structured_content["sha256"] == wrote.structured_content["sha256"]
        # the note's text is in the answer's text; the structured copy is no larger (issue 21)
        assert "\n\n---\ntags: [demo]" in text(read)

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


def test_mcp_without_a_daemon_says_how_to_start_it_and_recovers(
    daemon_factory: Any, config_dict: dict[str, Any], tmp_path: Path
) -> None:
    async def body(s: ClientSession) -> list[Any]:
        assert len((await s.list_tools()).tools) == len(EXPECTED_TOOLS)  # tools are listed
        before = [
            await s.call_tool("search", {"query": "anything"}),
            await s.call_tool("read_note", {"path": "a.md"}),
        ]
        # the daemon comes up while the agent's session goes on: no restart of the agent needed
        await anyio.to_thread.run_sync(daemon_factory)
        after = await s.call_tool("remember", {"content": "the daemon came up later"})
        return [*before, after]

    *failed, after = with_session(tmp_path, ["--socket", config_dict["socket"]], body)
    for result in failed:
        assert result.is_error
        assert "not running" in text(result) and "memoryd run" in text(result)
        assert "memoryd service install" in text(result)
        assert result.structured_content["error"]["code"] == "unreachable"
    assert not after.is_error, text(after)


def test_two_agents_share_notes_and_keep_their_own_memories(
    daemon_factory: Any, tmp_path: Path
) -> None:
    d = daemon_factory()

    async def body(a: ClientSession, b: ClientSession) -> None:
        await a.call_tool("remember", {"content": "alpha prefers tabs over spaces"})
        await a.call_tool("write_note", {"path": "shared.md", "content": "# Shared\nyak\n"})
        seen = await b.call_tool("search", {"query": "yak"})
        assert [h.get("path") for h in seen.structured_content["hits"]] == ["shared.md"]
        mine = await b.call_tool("search", {"query": "tabs spaces", "kind": "memory"})
        assert mine.structured_content["hits"] == []  # alpha's memory is alpha's
        theirs = await a.call_tool("search", {"query": "tabs spaces", "kind": "memory"})
        assert len(theirs.structured_content["hits"]) == 1

    with_two_agents(tmp_path, d.socket, body)


def test_namespace_from_the_environment(daemon_factory: Any, tmp_path: Path) -> None:
    d = daemon_factory()

    async def body(s: ClientSession) -> Any:
        return await s.call_tool("remember", {"content": "remembered with the env namespace"})

    added = with_session(
        tmp_path, ["--socket", str(d.socket)], body, env={"MEMORYD_NAMESPACE": "from-env"}
    )
    assert not added.is_error, text(added)
    assert d.call("get", {"id": added.structured_content["id"]})["namespace"] == "from-env"


# --- the bridge without a subprocess (formatting, arguments, budgets) ---------------------------


class FakeBridge(Bridge):
    def __init__(self, answers: dict[str, Any], namespace: str | None = None) -> None:
        self.answers, self.namespace, self.calls = answers, namespace, []

    def call(self, method: str, params: dict[str, Any], keep_null: Any = ()) -> Any:
        self.calls.append((method, params))
        return self.answers[method]


def test_arguments_are_checked_against_the_schema() -> None:
    b = FakeBridge({})
    for name, args, needle in [
        ("search", {}, "query: expected a string, got nothing (it is required)"),
        ("search", {"query": "x", "limit": "ten"}, "limit"),
        ("search", {"query": "x", "bogus": 1}, "bogus"),
        ("feedback", {"id": 1, "verdict": "great"}, "verdict"),
        ("nope", {}, "unknown tool"),
    ]:
        out, _, is_error = call_tool(b, name, args)
        assert is_error and needle in out, (name, out)
    assert b.calls == []


def test_session_context_fits_the_budget_and_uses_the_agent_namespace() -> None:
    items = [
        {
            "kind": "memory",
            "id": i,
            "at": "2026-11-23T10:00:00Z",
            "change": "added",
            "summary": "word " * 20,
        }
        for i in range(50)
    ]
    b = FakeBridge(
        {
            "session_start": {
                "memories": [{"id": 1, "tier": "constitutional", "content": "rule one"}],
                "tokens_used": 40,
                "has_more": False,
            },
            "recent_activity": {"items": items},
        },
        namespace="agent",
    )
    out, structured, is_error = call_tool(b, "session_context", {"max_tokens": 200})
    assert not is_error
    assert structured["tokens_used"] <= 200
    assert 0 < len(structured["recent"]) < 50
    assert "rule one" in out and "Recent activity" in out
    assert all(p.get("namespace") == "agent" for _, p in b.calls)


def test_search_text_lists_hits_and_the_rest_of_a_budget() -> None:
    res = {
        "mode": "keyword",
        "hits": [
            {
                "id": 7,
                "kind": "chunk",
                "path": "a.md",
                "start_line": 3,
                "heading_path": ["A", "B"],
                "score": 0.9,
                "snippet": "the **match**",
            },
        ],
        "index": [{"id": 7, "summary": "x"}, {"id": 9, "summary": "a memory over budget"}],
        "total": 2,
    }
    out = fmt_hits(res)
    assert "[7] a.md:3 A > B · 0.90 — the **match**" in out
    assert "[9] a memory over budget" in out


def test_agents_doc_snippets_parse_and_name_every_tool() -> None:
    import json
    import re
    import tomllib

    doc = (ROOT / "docs" / "agents.md").read_text()
    blocks = re.findall(r"```(json|toml)\n(.*?)```", doc, re.S)
    assert len(blocks) >= 4
    for lang, body in blocks:
        data = json.loads(body) if lang == "json" else tomllib.loads(body)
        assert data
    for name in EXPECTED_TOOLS:
        assert f"| `{name}` |" in doc, name
    assert "claude mcp add" in doc and "[mcp_servers.memoryd]" in doc
    assert "agents.md" in (ROOT / "README.md").read_text()


def test_note_records_are_shown_with_their_place() -> None:
    from memoryd.agents.tools import fmt_record

    out = fmt_record(
        {
            "kind": "note",
            "path": "a.md",
            "section": "Tokens",
            "start_line": 8,
            "end_line": 12,
            "content": "## Tokens\nrotate",
        }
    )
    assert out.startswith("a.md § Tokens (lines 8-12)\n\n## Tokens")
    read = fmt_record({"path": "a.md", "content": "x", "sha256": "ab" * 32, "size": 1})
    assert read.startswith(f"a.md (sha256 {'ab' * 32}, 1 bytes)")


def test_socket_comes_from_flag_env_or_config(tmp_path: Path, monkeypatch: Any) -> None:
    from memoryd.agents.mcp import resolve_socket

    cfg = tmp_path / "c.toml"
    cfg.write_text('socket = "/tmp/md-from-config.sock"\n')
    assert resolve_socket("/tmp/flag.sock", str(cfg)) == "/tmp/flag.sock"
    assert resolve_socket(None, str(cfg)) == "/tmp/md-from-config.sock"
    monkeypatch.setenv("MEMORYD_SOCKET", "/tmp/env.sock")
    assert resolve_socket(None, str(cfg)) == "/tmp/env.sock"


def test_the_login_sessions_socket_is_found_without_its_environment(
    daemon_factory: Any, short_dir: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    """MCP clients start `memoryd mcp` with a minimal environment (the SDKs pass on HOME,
    LOGNAME, PATH, SHELL, TERM, USER): no XDG_RUNTIME_DIR, so the default socket it computes is
    in /tmp while the daemon of the login session listens under /run/user/UID."""
    from memoryd.agents import mcp
    from memoryd.ctl import client

    base = short_dir / "ru"
    runtime = base / str(os.getuid())
    runtime.mkdir(parents=True, mode=0o700)
    sock = runtime / "memoryd" / "memoryd.sock"
    monkeypatch.setattr(client, "LOGIN_RUNTIME_BASE", str(base))
    for var in ("XDG_RUNTIME_DIR", "MEMORYD_SOCKET", "MEMORYD_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    # a folder that exists: tempfile ignores a TMPDIR that does not and falls back to /tmp,
    # where the developer's own daemon may listen (it stored "before the daemon", issue 18);
    # a short one: the socket path under it must fit in AF_UNIX's ~104 bytes
    tmp = short_dir / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    # tempfile caches the folder it first found: without this, the default socket would not be
    # under the TMPDIR just set
    monkeypatch.setattr(tempfile, "tempdir", None)

    sockets = mcp.socket_candidates(None, None)
    assert sockets[1:] == [str(sock)] and sockets[0] != str(sock)
    assert sockets[0].startswith(str(tmp) + "/"), sockets  # never the real default
    bridge = Bridge(sockets, None, timeout=10)
    text_, _, failed = call_tool(bridge, "remember", {"content": "before the daemon"})
    assert failed and "not running" in text_ and sockets[0] in text_  # names the usual path

    daemon_factory(socket=str(sock))  # comes up in the login session's runtime folder
    text_, added, failed = call_tool(bridge, "remember", {"content": "found without XDG vars"})
    assert not failed, text_
    assert "found without XDG" in call_tool(bridge, "get", {"id": added["id"]})[0]
    # memoryctl finds it the same way (and says the usual path when nothing is anywhere)
    assert client.resolve_socket(None) == str(sock)
    assert client.resolve_socket(str(tmp_path / "x.sock")) == str(tmp_path / "x.sock")

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))  # the variable is there: it rules
    assert client.login_socket_paths() == []


def test_a_conflict_names_the_current_sha256_in_full() -> None:
    from memoryd.ctl import ClientError

    current = "ab" * 32

    class Conflicting:
        path = "/nowhere"

        def call(self, method: str, params: Any) -> Any:
            raise ClientError(-32009, "n.md changed since you read it", {"current_sha256": current})

    bridge = Bridge("/nowhere", None)
    bridge.client = Conflicting()  # type: ignore[assignment]
    text_, structured, failed = call_tool(
        bridge, "write_note", {"path": "n.md", "content": "x", "expected_sha256": "cd" * 32}
    )
    assert failed and f"Current sha256: {current}." in text_
    assert structured["error"]["data"]["current_sha256"] == current


def test_a_credential_refusal_names_no_parameter_the_tools_lack() -> None:
    """The daemon's hint says allow_secrets and --allow-secrets; over MCP neither exists, so
    the agent is told to leave the credential out (and that a person can keep it)."""
    from memoryd.ctl import ClientError

    message = (
        "looks like a credential (content: aws_access_key_id); not stored. Remove it, or if it "
        "is meant to be kept send it again with allow_secrets: true (memoryctl: ...)"
    )

    class Refusing:
        path = "/nowhere"

        def call(self, method: str, params: Any) -> Any:
            raise ClientError(-32006, message, {"secrets": ["aws_access_key_id"]})

    bridge = Bridge("/nowhere", None)
    bridge.client = Refusing()  # type: ignore[assignment]
    for tool, args in (
        ("remember", {"content": "key"}),
        ("write_note", {"path": "n.md", "content": "key"}),
        ("append_to_note", {"path": "n.md", "content": "key"}),
    ):
        text_, _, failed = call_tool(bridge, tool, args)
        assert failed and "looks like a credential" in text_ and "placeholder" in text_
        assert "allow_secrets:" not in text_, text_
        assert "allow_secrets" not in str(BY_NAME[tool].schema)


def test_schemas_refuse_empty_required_text_and_malformed_sha256() -> None:
    b = FakeBridge({})
    for name, args, needle in [
        ("search", {"query": ""}, "query"),
        ("remember", {"content": ""}, "content"),
        ("match_triggers", {"prompt": ""}, "prompt"),
        ("read_note", {"path": ""}, "path"),
        ("move_note", {"path": "a.md", "new_path": ""}, "new_path"),
        ("write_note", {"path": "a.md", "content": "x", "expected_sha256": "abc"}, "sha256"),
    ]:
        text_, _, failed = call_tool(b, name, args, BY_NAME)  # read_note: agents/notetools.py
        assert failed and needle in text_, (name, text_)
    assert b.calls == []  # refused before the daemon was asked
    b.answers["note.write"] = {"path": "a.md", "sha256": "ab" * 32, "created": True}
    for sha in ("", "AB" * 32, "ab" * 32):  # "" = must not exist yet; either case of hex
        args = {"path": "a.md", "content": "", "expected_sha256": sha}
        assert not call_tool(b, "write_note", args)[2]
    assert len(b.calls) == 3


def test_two_agents_racing_on_one_note_and_the_daily_log(
    daemon_factory: Any, tmp_path: Path
) -> None:
    """Two `memoryd mcp` processes against one daemon: of two guarded writes made at once from
    the same sha256, exactly one wins and the other is told the current sha256; appends to the
    daily log racing the daemon's own daily-log lines (from remember) all survive."""
    d = daemon_factory()

    async def guarded_write(
        s: ClientSession, name: str, args: dict[str, Any], results: dict[str, Any]
    ) -> None:
        results[name] = await s.call_tool("write_note", args)

    async def body(a: ClientSession, b: ClientSession) -> None:
        w = await a.call_tool("write_note", {"path": "race.md", "content": "v0\n"})
        sha = w.structured_content["sha256"]
        for rnd in range(5):
            results: dict[str, Any] = {}
            async with anyio.create_task_group() as tg:
                for name, s in (("alpha", a), ("beta", b)):
                    args = {"path": "race.md", "content": f"{name} {rnd}\n"}
                    tg.start_soon(guarded_write, s, name, {**args, "expected_sha256": sha}, results)
            won = [n for n, r in results.items() if not r.is_error]
            lost = [r for r in results.values() if r.is_error]
            assert len(won) == 1 and len(lost) == 1, {n: text(r) for n, r in results.items()}
            now = (await a.call_tool("read_note", {"path": "race.md"})).structured_content
            assert now["content"] == f"{won[0]} {rnd}\n"
            error = lost[0].structured_content["error"]
            assert error["code"] == -32009
            assert error["data"]["current_sha256"] == now["sha256"]
            assert f"Current sha256: {now['sha256']}." in text(lost[0])
            sha = now["sha256"]

        first = await a.call_tool("remember", {"content": "opens the daily log"})
        assert not first.is_error, text(first)
        deadline = time.monotonic() + DEADLINE_S  # the watcher indexes the new daily log
        while not (
            listed := (await a.call_tool("list_notes", {"path": "daily"}))
        ).structured_content["items"]:
            assert time.monotonic() < deadline, "the daily log was never indexed"
            await anyio.sleep(0.05)
        day = listed.structured_content["items"][0]["path"]

        async def appends() -> None:
            for i in range(10):
                r = await b.call_tool("append_to_note", {"path": day, "content": f"- b{i}"})
                assert not r.is_error, text(r)

        async def remembers() -> None:
            for i in range(10):
                r = await a.call_tool("remember", {"content": f"raced memory zebra{i}x"})
                assert not r.is_error, text(r)

        async with anyio.create_task_group() as tg:
            tg.start_soon(appends)
            tg.start_soon(remembers)
        # the note's text is in the answer's text (the structured copy is no larger: issue 21)
        log = text(await a.call_tool("read_note", {"path": day})).split("\n\n", 1)[1]
        assert [i for i in range(10) if f"- b{i}\n" not in log] == []
        assert [i for i in range(10) if f"zebra{i}x" not in log] == []

    with_two_agents(tmp_path, d.socket, body)


def test_listings_show_times_to_the_minute() -> None:
    from memoryd.agents.tools import fmt_items

    out = fmt_items(
        {
            "items": [
                {"kind": "memory", "id": 7, "at": "2026-11-23T19:36:09Z", "summary": "s"},
                {"kind": "note", "path": "a.md", "mtime": "2026-11-23T08:05:59Z", "title": "A"},
            ],
            "total": 2,
        }
    )
    assert out.splitlines() == [
        "2 note(s), times in UTC:",
        "2026-11-23 19:36 memory [7] : s",
        "2026-11-23 08:05 a.md — A",
    ]


def test_requests_piped_in_are_all_answered_when_stdin_closes(daemon_factory: Any) -> None:
    """A script that writes its requests and closes stdin gets every answer: the requests in
    flight are not cancelled by the end of input (a cancelled one is not waited for)."""
    import json
    import subprocess

    d = daemon_factory()
    d.call("add", {"content": "The lighthouse keeper logs the fog"})
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "script", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *(
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "lighthouse fog"}},
            }
            for i in range(2, 6)
        ),
        {"jsonrpc": "2.0", "id": 6, "method": "tools/list"},
    ]
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "mcp", "--socket", str(d.socket)],
        input="".join(json.dumps(m) + "\n" for m in lines),
        capture_output=True,
        text=True,
        timeout=DEADLINE_S * 4,
        cwd=str(ROOT),
        env=d.env,
    )
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [1, 2, 3, 4, 5, 6], done.stderr
    assert all("lighthouse" in answers[i]["result"]["content"][0]["text"] for i in range(2, 6))


EMPTY_ANSWERS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "search": ({"search": {"query": "x", "hits": []}}, {"query": "x"}),
    "list_notes": ({"note.list": {"items": [], "total": 0}}, {}),
    "recent_activity": ({"recent_activity": {"items": []}}, {}),
    "match_triggers": ({"match_triggers": {"memories": []}}, {"prompt": "x"}),
    "links": ({"links": {"path": "a.md", "links": []}}, {"path": "a.md"}),
    "backlinks": ({"backlinks": {"path": "a.md", "backlinks": []}}, {"path": "a.md"}),
}


@pytest.mark.sqlite_only("formatting only")
@pytest.mark.parametrize("tool", sorted(EMPTY_ANSWERS))
def test_an_empty_listing_reads_as_a_sentence(tool: str) -> None:
    """Nothing found is said (as memoryctl says it), not a heading over nothing: 'a.md links
    to 0:' and '0 note(s), times in UTC:' read as if the list had been lost."""
    answers, args = EMPTY_ANSWERS[tool]
    said, _, failed = catalog.call(FakeBridge(answers), tool, args)
    assert not failed and said.strip() and not said.rstrip().endswith(":"), said
    assert not any(ch.isdigit() for ch in said.split("\n")[0].replace("a.md", "")), said


def test_every_error_the_daemon_answers_has_a_name_over_mcp() -> None:
    """-32013 (disk full) and -32014 (store unavailable: a server away, another program's lock
    on the SQLite file) reached agents as a bare "error"."""
    from memoryd.agents.hints import ERROR_NAMES
    from memoryd.core import errors

    never_answered = {errors.MemorydError.code, errors.ConfigError.code, errors.AlreadyRunning.code}
    codes = {
        cls.code
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, errors.MemorydError)
    }
    assert sorted(codes - never_answered - set(ERROR_NAMES)) == []
