"""Issue 21, Agent hosts: edit_note (sha-checked), delete_note, links/backlinks, read_note
paging, structured copies no larger than the text, a tool-name prefix, fewer search parameters,
an answer to a line the bridge cannot parse, and the host configs in docs/agents.md."""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
from conftest import DEADLINE_S
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from test_mcp import ROOT, text, with_session

from memoryd.agents import catalog, notetools
from memoryd.agents.tools import Bridge, ToolFailure

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

NOTE = "# Plan\n\nintro\n\n## Setup\n\nold setup\n\n## Usage\n\nuse it\nuse it\n"


def fits(result: Any) -> None:
    if result.structured_content is not None:
        limit = max(len(text(result)), catalog.SMALL)
        assert catalog.size(result.structured_content) <= limit, text(result)


def test_note_tools_over_the_sdk_with_a_prefix(daemon_factory: Any, tmp_path: Path) -> None:
    d = daemon_factory()
    env = {**os.environ, "MEMORYD_SOCKET": str(d.socket), "MEMORYD_MCP_PREFIX": "memoryd_"}
    ws = Path(d.cfg["workspace"])

    async def body(s: ClientSession) -> None:
        async def call(name: str, args: dict[str, Any]) -> Any:
            result = await s.call_tool("memoryd_" + name, args)
            fits(result)
            return result

        names = {t.name for t in (await s.list_tools()).tools}
        assert {"memoryd_search", "memoryd_edit_note", "memoryd_delete_note"} <= names
        assert all(n.startswith("memoryd_") for n in names)
        # an unknown tool is a protocol error (JSON-RPC -32602), as MCP has it, naming the tool
        # as it was called and the tools it may call instead
        with pytest.raises(MCPError) as bare:
            await s.call_tool("search", {"query": "x"})
        assert bare.value.error.code == -32602 and "memoryd_NAME" in bare.value.error.message
        with pytest.raises(MCPError) as wrong:
            await s.call_tool("memoryd_nope", {})
        said = wrong.value.error.message
        assert "'memoryd_nope'" in said and "memoryd_search, memoryd_remember" in said
        bad = await call("search", {"query": "x", "limit": 0})
        assert text(bad).startswith("memoryd_search: limit: expected an integer from 1 to 100")

        wrote = await call("write_note", {"path": "p/plan.md", "content": NOTE})
        assert not wrote.is_error, text(wrote)
        sha = wrote.structured_content["sha256"]
        r = await call(
            "edit_note",
            {"path": "p/plan.md", "action": "replace_section", "heading": "Setup",
             "content": "new setup\nsecond line", "expected_sha256": sha},
        )  # fmt: skip
        assert not r.is_error, text(r)
        assert (ws / "p/plan.md").read_text() == NOTE.replace("old setup", "new setup\nsecond line")
        r = await call(
            "edit_note",
            {"path": "p/plan.md", "action": "replace", "find": "use it", "replace": "x"},
        )
        assert r.is_error and "occurs 2 time(s), not the 1 expected" in text(r)
        r = await call(
            "edit_note",
            {"path": "p/plan.md", "action": "replace", "find": "use it", "replace": "run it",
             "count": 2},
        )  # fmt: skip
        assert not r.is_error and "run it\nrun it\n" in (ws / "p/plan.md").read_text()
        r = await call(
            "edit_note",
            {"path": "p/plan.md", "action": "insert_before", "heading": "## Usage",
             "content": "- [ ] todo"},
        )  # fmt: skip
        assert "second line\n\n- [ ] todo\n\n## Usage" in (ws / "p/plan.md").read_text()
        r = await call(
            "edit_note",
            {"path": "p/plan.md", "action": "insert_after", "heading": "Plan > Usage",
             "content": "first!"},
        )  # fmt: skip
        assert "## Usage\nfirst!\n" in (ws / "p/plan.md").read_text()
        r = await call(
            "edit_note",
            {"path": "p/plan.md", "action": "replace_section", "heading": "Nope", "content": "x"},
        )
        assert r.is_error and "no heading 'Nope'" in text(r) and "Plan > Usage" in text(r)
        r = await call(
            "edit_note",
            {"path": "p/plan.md", "action": "replace", "find": "x", "replace": "y",
             "expected_sha256": sha},
        )  # fmt: skip
        assert r.is_error and r.structured_content["error"]["code"] == -32009
        found = await call("search", {"query": "todo", "filters": {"mode": "keyword"}})
        assert [h.get("path") for h in found.structured_content["hits"]] == ["p/plan.md"]

        # paging: lines, then bytes cut at character boundaries
        (ws / "long.md").write_text("".join(f"line {i} é\n" for i in range(100)))
        page = await call("read_note", {"path": "long.md", "offset": 10, "limit": 5})
        assert "lines 10-14 of 100 (from 0); more from offset 15, with expected_sha256" in text(
            page
        )
        assert "to be told if it changes)\n\nline 10 é\n" in text(page)
        assert "line 14 é\n" in text(page) and "line 15" not in text(page)
        assert page.structured_content["total"] == 100
        assert page.structured_content["next_offset"] == 15
        # "line 0 é\n": 'é' is bytes 7-8; a page never splits it
        args = {"path": "long.md", "offset": 8, "limit": 3, "unit": "bytes"}
        page = await call("read_note", args)
        assert page.structured_content["offset"] == 9  # moved past the half character
        assert page.structured_content["next_offset"] == 12 and text(page).endswith("\n\n\nli")
        page = await call("read_note", {**args, "offset": 7, "limit": 1})
        assert page.structured_content["next_offset"] == 9 and text(page).endswith("\n\né")
        last = await call("read_note", {"path": "long.md", "offset": 95, "limit": 50})
        assert "next_offset" not in last.structured_content and "; end)" in text(last)
        whole = await call("read_note", {"path": "long.md"})
        assert "line 99 é" in text(whole) and whole.structured_content["sha256"]

        # links and backlinks; delete_note to the trash
        await call("write_note", {"path": "a.md", "content": "see [[plan]] and [[Nowhere]]\n"})
        links = await call("links", {"path": "a.md"})
        found_links = links.structured_content["links"]
        assert [(x["target"], x.get("path")) for x in found_links] == [
            ("plan", "p/plan.md"),
            ("Nowhere", None),  # unresolved: null fields are left out of the copy
        ]
        assert "(unresolved)" in text(links)
        back = await call("backlinks", {"path": "plan"})
        assert "a.md:1" in text(back)
        gone = await call("delete_note", {"path": "a.md"})
        assert not gone.is_error and not (ws / "a.md").exists()
        assert "trash" in text(gone)
        again = await call("delete_note", {"path": "a.md"})
        assert again.is_error

        # every other tool's structured copy fits its text too
        await call("remember", {"content": "the build uses make " * 20, "tags": ["x"]})
        for name, args in [
            ("search", {"query": "build make"}),
            ("list_notes", {}),
            ("recent_activity", {}),
            ("session_context", {}),
        ]:
            result = await call(name, args)
            assert not result.is_error, text(result)

    with_session(tmp_path, [], body, env=env)


def test_edit_refuses_a_change_made_between_read_and_write(daemon_factory: Any) -> None:
    d = daemon_factory()
    ws = Path(d.cfg["workspace"])
    d.call("note.write", {"path": "n.md", "content": NOTE})

    class Racing(Bridge):
        def call(self, method: str, params: dict[str, Any]) -> Any:
            res = super().call(method, params)
            if method == "note.read":  # someone saves in their editor right now
                (ws / "n.md").write_text(NOTE + "theirs\n")
            return res

    b = Racing(str(d.socket), None)
    with pytest.raises(ToolFailure) as caught:
        notetools.run_edit_note(
            b, {"path": "n.md", "action": "replace", "find": "intro", "replace": "mine"}
        )
    assert caught.value.data["code"] == -32009
    assert (ws / "n.md").read_text() == NOTE + "theirs\n"  # theirs kept, nothing lost


def test_paging_and_fit_are_exact() -> None:
    text_ = "a\nbé\nc"
    assert notetools.page(text_, 1, 1, "lines")["content"] == "bé\n"
    assert notetools.page(text_, 3, 1, "bytes") == {
        "unit": "bytes",
        "offset": 3,
        "total": 7,
        "next_offset": 5,
        "content": "é",
    }
    assert notetools.page(text_, 4, 1, "bytes")["offset"] == 5  # inside 'é': moves on
    big = {"path": "x.md", "content": "z" * 500, "hits": [{"id": i} for i in range(50)]}
    small = catalog.fit(big, "x.md " + "z" * 300)
    assert catalog.size(small) <= len("x.md " + "z" * 300) and small["truncated"] is True
    assert small["path"] == "x.md"  # what an agent acts on is kept longest
    assert catalog.fit({"a": None, "b": [], "c": 1}, "0123456789") == {"b": [], "c": 1}


def test_search_takes_few_parameters() -> None:
    schema = catalog.BY_NAME["search"].schema
    assert len(schema["properties"]) <= 10
    assert {"query", "limit", "kind", "tags", "path", "since", "until", "filters"} <= set(
        schema["properties"]
    )
    assert {"mode", "group", "tier", "workspace"} <= set(
        schema["properties"]["filters"]["properties"]
    )


def mcp_process(socket: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "memoryd", "mcp", "--socket", socket],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=str(ROOT),
    )


def read_line(proc: subprocess.Popen[bytes], timeout: float) -> dict[str, Any] | None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
        if ready:
            line = proc.stdout.readline()
            return json.loads(line) if line else None
    return None


@pytest.mark.sqlite_only("the bridge's own parsing; no store involved")
def test_a_line_the_bridge_cannot_parse_is_answered_with_its_id(tmp_path: Path) -> None:
    proc = mcp_process(str(tmp_path / "none.sock"))
    assert proc.stdin is not None
    try:
        for line, rid, code in [
            (b'{"jsonrpc":"2.0","id":41,"method":"tools/list"\n', 41, -32700),  # cut short
            (b'{"jsonrpc":"2.0","id":"q7","method":5}\n', "q7", -32600),  # not a request
            (b'{"jsonrpc":"2.0","id":42,"method":"x","params":[1]}\n', 42, -32600),
        ]:
            proc.stdin.write(line)
            proc.stdin.flush()
            answer = read_line(proc, DEADLINE_S)
            assert answer is not None, line
            assert answer["id"] == rid and answer["error"]["code"] == code, answer
        # an unreadable id gets no answer, and the server still serves what follows
        proc.stdin.write(b"garbage\n")
        proc.stdin.write(
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
            b'"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
        )
        proc.stdin.flush()
        answer = read_line(proc, DEADLINE_S)
        assert answer is not None and answer["id"] == 1 and "result" in answer
    finally:
        proc.kill()
        proc.wait(10)
        proc.stdin.close()
        assert proc.stdout is not None
        proc.stdout.close()


# --- the host configs in docs/agents.md ---------------------------------------------------------


def claude_add_ok(argv: list[str]) -> str | None:
    """Claude Code's `claude mcp add [options] <name> <commandOrUrl> [args...]`, as its parser
    takes it: the name is the first word after `add` that is not an option or an option's value,
    options with a value (-e/--env, -s/--scope, -t/--transport, -H/--header) come after `add`
    and before `--`, and -e takes KEY=value. Returns what is wrong, or None."""
    if argv[:3] != ["claude", "mcp", "add"]:
        return "not a claude mcp add line"
    valued = {"-e", "--env", "-s", "--scope", "-t", "--transport", "-H", "--header"}
    rest = argv[3:]
    if "--" not in rest:
        return "no -- before the server's command"
    head, command = rest[: rest.index("--")], rest[rest.index("--") + 1 :]
    if not command:
        return "no command after --"
    words: list[str] = []
    i = 0
    while i < len(head):
        if head[i] in valued:
            if i + 1 >= len(head):
                return f"{head[i]} without a value"
            if head[i] in ("-e", "--env") and "=" not in head[i + 1]:
                return f"-e wants KEY=value, got {head[i + 1]!r}"
            i += 2
            continue
        if head[i].startswith("-"):
            return f"unknown option {head[i]}"
        words.append(head[i])
        i += 1
    if len(words) != 1:
        return f"expected the server's name before --, got {words}"
    # -e is variadic in Claude Code: a name right after -e KEY=value is read as another env
    # entry; the working order is the name first, then -e
    for j, word in enumerate(head):
        if word in ("-e", "--env") and words[0] in head[j + 2 :]:
            return "the name must come before -e (claude reads it as another KEY=value)"
    return None


def test_claude_add_checker_tells_the_working_order_from_the_broken_one() -> None:
    ok = "claude mcp add memoryd -e MEMORYD_NAMESPACE=claude -- memoryd mcp"
    broken = "claude mcp add -e MEMORYD_NAMESPACE=claude memoryd -- memoryd mcp"
    assert claude_add_ok(shlex.split(ok)) is None
    assert claude_add_ok(shlex.split(broken)) is not None


def test_every_host_config_in_the_agents_doc_parses() -> None:
    doc = (ROOT / "docs" / "agents.md").read_text()
    claude = [
        line.split("  #")[0].strip()
        for line in re.findall(r"^\s*`?(claude mcp add[^`\n]*)", doc, re.M)
    ]
    assert len(claude) >= 4 and any("-e MEMORYD_NAMESPACE" in c for c in claude)
    for line in claude:
        assert claude_add_ok(shlex.split(line)) is None, line
    for lang, body in re.findall(r"```(json|toml)\n(.*?)```", doc, re.S):
        data = json.loads(body) if lang == "json" else tomllib.loads(body)
        servers = data.get("mcpServers") or data.get("mcp_servers") or {}
        for server in servers.values():
            assert isinstance(server["command"], str)
            assert all(isinstance(a, str) for a in server.get("args", []))
            assert server.get("args", ["mcp"])[0] == "mcp"
            assert all(isinstance(v, str) for v in server.get("env", {}).values())
    codex = tomllib.loads(re.search(r"```toml\n(.*?)```", doc, re.S).group(1))  # type: ignore[union-attr]
    assert codex["mcp_servers"]["memoryd"]["args"][0] == "mcp"
    for name in catalog.BY_NAME:
        assert f"| `{name}` |" in doc, name
    assert "MEMORYD_MCP_PREFIX" in doc


def test_every_shell_example_in_the_agents_doc_runs(tmp_path: Path) -> None:
    """The `memoryd mcp` command lines of docs/agents.md parse with memoryd's own parser (a
    flag the docs name exists), run with --help so nothing waits on stdin."""
    doc = (ROOT / "docs" / "agents.md").read_text()
    lines = set(re.findall(r"(memoryd mcp(?: --?[\w-]+(?: [\w./-]+)?)*)", doc))
    assert lines
    for line in sorted(lines):
        argv = shlex.split(line)[1:]
        flags = [a for a in argv if a.startswith("--")]
        res = subprocess.run(
            [sys.executable, "-m", "memoryd", *argv[:1], "--help"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=str(ROOT),
        )
        assert res.returncode == 0, res.stderr
        for flag in flags:
            assert flag in res.stdout, (line, flag)


def test_the_session_start_hook_in_the_agents_doc_runs(daemon_factory: Any) -> None:
    """The SessionStart hook's command, as docs/agents.md writes it, against a real daemon."""
    doc = (ROOT / "docs" / "agents.md").read_text()
    hooks = re.findall(r'"command": "(memoryctl [^"]+)"', doc)
    assert hooks
    d = daemon_factory()
    memory = {"content": "always answer in French", "tier": "constitutional"}
    d.call("add", {**memory, "namespace": "claude"})  # the namespace the hook names
    for hook in hooks:
        words = shlex.split(hook.split(" 2>")[0])
        res = d.ctl(*words[1:])
        assert res.returncode == 0, (hook, res.stderr)
        assert "always answer in French" in res.stdout, hook
