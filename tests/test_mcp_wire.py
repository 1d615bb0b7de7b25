"""MCP as a protocol (stop 40, walk t): what `memoryd mcp` does with each kind of line on its
stdin, spoken to on a raw pipe (the bridge a subprocess of the test), and with a real SDK
client: lifecycle, framing, cancellation, tool annotations, calls in flight at once.

Each kind of line gets a JSON-RPC answer carrying its id when it has one (a line that is not
UTF-8, a batch, params the method does not take, a request before initialize), or silence as
the spec says (a notification, a response to nothing, a request whose id is not a string or an
integer, which is logged on stderr); the bridge never stops answering what follows."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import DEADLINE_S, wait_for
from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from memoryd.agents import catalog
from memoryd.agents.tools import Bridge

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL where a daemon is involved

ROOT = Path(__file__).resolve().parent.parent
INIT = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "wire", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


class Pipe:
    """`memoryd mcp` on a raw pipe: send bytes, read the answers (with a deadline)."""

    def __init__(self, socket: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", "mcp", "--socket", socket],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(ROOT),
            env=env,
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        os.set_blocking(self.proc.stderr.fileno(), False)
        self.pending, self.said = b"", ""

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def answer(self, timeout: float = DEADLINE_S) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return None
            self.pending += chunk
        first, self.pending = self.pending.split(b"\n", 1)
        return json.loads(first)

    def answers_until(self, rid: Any) -> list[dict[str, Any]]:
        """Every answer up to and including the one to `rid` (which must come)."""
        got: list[dict[str, Any]] = []
        while not got or got[-1].get("id") != rid:
            answer = self.answer()
            assert answer is not None, f"no answer to {rid!r} after {got}; {self.stderr()}"
            got.append(answer)
        return got

    def answers_for(self, *ids: Any) -> dict[Any, dict[str, Any]]:
        """The answers to `ids`, in whatever order they come (calls run side by side); an
        answer to any other id fails."""
        got: dict[Any, dict[str, Any]] = {}
        while set(got) != set(ids):
            answer = self.answer()
            assert answer is not None, f"no answer to all of {ids}: {sorted(got)}"
            assert answer.get("id") in ids and answer["id"] not in got, answer
            got[answer["id"]] = answer
        return got

    def stderr(self) -> str:
        """What the bridge said on stderr (all of it once it is closed)."""
        return self.said if self.proc.stderr is None or self.proc.stderr.closed else ""

    def initialize(self) -> None:
        self.send(line(INIT))
        assert self.answers_until("init")[-1]["result"]["protocolVersion"] == "2025-06-18"
        self.send(line(INITIALIZED))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(DEADLINE_S)
        assert self.proc.stderr is not None
        if not self.proc.stderr.closed:
            os.set_blocking(self.proc.stderr.fileno(), True)
            self.said = self.proc.stderr.read().decode(errors="replace")
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()


@pytest.fixture
def pipe(tmp_path: Path) -> Any:
    """A bridge with no daemon behind it: what it answers itself (framing, lifecycle)."""
    p = Pipe(str(tmp_path / "none.sock"))
    yield p
    p.close()


def call(rid: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


PING = {"jsonrpc": "2.0", "id": "after", "method": "ping"}

# each kind of line the bridge answers itself with a JSON-RPC error: (bytes, id, code, words)
ANSWERED = {
    "latin-1 in a value": (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"remember",'
        b'"arguments":{"content":"caf\xe9 au lait"}}}\n',
        7,
        -32700,
        "not valid UTF-8",
    ),
    "a stray byte before the message": (
        b'\xff{"jsonrpc":"2.0","id":"s","method":"ping"}\n',
        "s",
        -32700,
        "not valid UTF-8",
    ),
    "JSON cut short": (
        b'{"jsonrpc":"2.0","id":8,"method":"ping"\n',
        8,
        -32700,
        "not valid JSON (EOF while parsing an object at the end of the line)",
    ),
    "nested past the parser's depth": (
        b'{"jsonrpc":"2.0","id":15,"method":"ping","params":{"x":'
        + b"[" * 300
        + b"]" * 300
        + b"}}\n",
        15,
        -32700,
        "not valid JSON (recursion limit exceeded at column",
    ),
    "params a list": (
        b'{"jsonrpc":"2.0","id":9,"method":"tools/list","params":[1]}\n',
        9,
        -32600,
        "JSON-RPC 2.0",
    ),
    "tools/call without a name": (
        line({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"arguments": {}}}),
        10,
        -32602,
        "invalid params for tools/call: name: Field required",
    ),
    "arguments not an object": (
        line(call(11, "search", "deploy")),  # type: ignore[arg-type]
        11,
        -32602,
        "invalid params for tools/call: arguments: ",
    ),
    "a progressToken of neither type": (
        line(
            {
                **call(14, "search", {"query": "x"}),
                "params": {
                    "name": "search",
                    "arguments": {"query": "x"},
                    "_meta": {"progressToken": {"x": 1}},
                },
            }
        ),
        14,
        -32602,
        "invalid params for tools/call: _meta.progressToken: expected a string or an integer",
    ),
    "an unknown tool": (
        line(call(13, "nosuch", {})),
        13,
        -32602,
        "unknown tool 'nosuch' (tools: search, remember, get,",
    ),
    "an unknown method": (
        line({"jsonrpc": "2.0", "id": 12, "method": "memory/search"}),
        12,
        -32601,
        "Method not found",
    ),
}


@pytest.mark.sqlite_only("the bridge's own framing; no store involved")
@pytest.mark.parametrize("kind", sorted(ANSWERED))
def test_each_kind_of_bad_line_is_answered_with_its_id_and_words(pipe: Pipe, kind: str) -> None:
    data, rid, code, words = ANSWERED[kind]
    pipe.initialize()
    pipe.send(data + line(PING))
    got = pipe.answers_until("after")
    assert [a["id"] for a in got] == [rid, "after"], got
    assert got[0]["error"]["code"] == code and words in got[0]["error"]["message"], got[0]


@pytest.mark.sqlite_only("the bridge's own framing; no store involved")
def test_a_batch_tells_each_request_in_it_to_come_alone(pipe: Pipe) -> None:
    pipe.initialize()
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/progress"},
        {"jsonrpc": "2.0", "id": "two", "method": "tools/list"},
    ]
    pipe.send(json.dumps(batch).encode() + b"\n" + line(PING))
    got = pipe.answers_until("after")
    assert [a["id"] for a in got] == [1, "two", "after"], got
    for answer in got[:2]:
        assert answer["error"]["code"] == -32600
        assert "one message a line" in answer["error"]["message"]


ODD_IDS = ["null", "1.5", "2.0", "1e3", "true", '{"a":1}', "[1]"]


@pytest.mark.sqlite_only("the bridge's own framing; no store involved")
def test_a_request_whose_id_is_not_a_string_or_integer_is_logged_not_answered(
    pipe: Pipe,
) -> None:
    """No id to answer with: not answered, said on stderr (the SDK took it for a notification
    and dropped it without a word); the requests after it are answered."""
    pipe.initialize()
    for odd in ODD_IDS:
        pipe.send(b'{"jsonrpc":"2.0","id":' + odd.encode() + b',"method":"tools/list"}\n')
    pipe.send(line(PING))
    assert [a["id"] for a in pipe.answers_until("after")] == ["after"]
    pipe.close()
    said = pipe.stderr()
    for odd in ODD_IDS:
        shown = json.dumps(json.loads(odd))
        assert f"its id is {shown} (MCP ids are strings or integers)" in said, said


@pytest.mark.sqlite_only("the bridge's own framing; no store involved")
def test_quiet_lines_and_every_kind_of_id_and_line_end(pipe: Pipe) -> None:
    """A notification nobody knows, an answer to a request never sent, blank lines: silence
    (and nothing on stderr for a blank line); ids of every valid type, CRLF ends and a byte
    order mark answered; a 5 MB line read whole."""
    pipe.initialize()
    pipe.send(b"\n  \n\r\n")
    pipe.send(line({"jsonrpc": "2.0", "method": "notifications/unheard_of", "params": {}}))
    pipe.send(line({"jsonrpc": "2.0", "id": 4242, "result": {}}))
    pipe.send(line({"jsonrpc": "2.0", "id": 4243, "error": {"code": 1, "message": "x"}}))
    ids: list[Any] = ["a string", 0, -3, 2**70, ""]
    for rid in ids:
        pipe.send(line({"jsonrpc": "2.0", "id": rid, "method": "ping"}).replace(b"\n", b"\r\n"))
    ids.append("bom")  # a byte order mark before a message (Windows tools write one)
    pipe.send(b"\xef\xbb\xbf" + line({"jsonrpc": "2.0", "id": "bom", "method": "ping"}))
    big = call("big", "search", {"query": "word " * (1 << 20)})
    pipe.send(line(big))
    pipe.send(line(PING))
    got = pipe.answers_for(*ids, "big", "after")
    assert all(got[rid].get("result") == {} for rid in [*ids, "after"]), got
    assert got["big"]["result"]["isError"] is True  # no daemon: answered, not lost
    pipe.close()
    assert "memoryd mcp:" not in pipe.stderr()  # the blank lines are no error


@pytest.mark.sqlite_only("the bridge's own lifecycle; no store involved")
@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "1999-01-01", "2099-12-31", "x"])
def test_initialize_answers_a_version_it_speaks(pipe: Pipe, version: str) -> None:
    """A request before initialize is told to initialize (ping is answered); an older version
    we speak is answered with itself, any other with the newest we speak."""
    from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS

    pipe.send(line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    pipe.send(line({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
    early = pipe.answers_until(2)
    assert "the session is not initialized: send initialize" in early[0]["error"]["message"]
    assert early[1]["result"] == {}
    init = {**INIT, "params": {**INIT["params"], "protocolVersion": version}}
    pipe.send(line(init))
    spoken = pipe.answers_until("init")[-1]["result"]["protocolVersion"]
    newest = HANDSHAKE_PROTOCOL_VERSIONS[-1]
    assert spoken == (version if version in HANDSHAKE_PROTOCOL_VERSIONS else newest)
    pipe.send(line(INITIALIZED) + line({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
    assert len(pipe.answers_until(3)[-1]["result"]["tools"]) == len(catalog.ALL_TOOLS)


# --- with a daemon ------------------------------------------------------------------------------


def test_a_cancelled_call_gets_no_answer_and_is_done_whole_or_not_at_all(
    daemon_factory: Any,
) -> None:
    """notifications/cancelled for a call the daemon is slow to answer (stopped here): the
    bridge answers ping meanwhile, never answers the cancelled id, and the memory it was
    storing is there once or not at all; a progressToken is taken and ignored (no tool runs
    long enough to report progress)."""
    d = daemon_factory()
    p = Pipe(str(d.socket), env=d.env)
    try:
        p.initialize()
        assert d.proc is not None
        d.proc.send_signal(signal.SIGSTOP)
        try:
            stored = call(5, "remember", {"content": "The cancelled heron waits"})
            stored["params"]["_meta"] = {"progressToken": "t5"}
            p.send(line(stored))
            p.send(line({"jsonrpc": "2.0", "id": 6, "method": "ping"}))
            assert p.answers_until(6) == [{"jsonrpc": "2.0", "id": 6, "result": {}}]
            cancel = {"requestId": 5, "reason": "the user pressed escape"}
            p.send(line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}))
            p.send(line({"jsonrpc": "2.0", "id": 8, "method": "ping"}))  # the cancel was read
            assert p.answers_until(8) == [{"jsonrpc": "2.0", "id": 8, "result": {}}]
        finally:
            d.proc.send_signal(signal.SIGCONT)
        p.send(line(call(7, "search", {"query": "cancelled heron", "kind": "memory"})))
        got = p.answers_until(7)
        assert [a["id"] for a in got] == [7], got  # no answer to 5, no progress notification

        def found() -> list[Any]:
            return d.call("search", {"query": "cancelled heron", "kind": "memory"})["hits"]

        # it had reached the daemon (stopped, not gone): stored whole, once; and its answer,
        # which came back after that, was dropped
        wait_for(lambda: len(found()) == 1, timeout=DEADLINE_S)
        assert p.answer(timeout=2.0) is None
    finally:
        p.close()


def test_ten_calls_in_flight_on_one_session_each_get_their_own_answer(
    daemon_factory: Any, tmp_path: Path
) -> None:
    d = daemon_factory()
    words = ["heron", "otter", "lynx", "marten", "stoat", "badger", "vole", "shrew", "mole", "hare"]
    for w in words:
        d.call("add", {"content": f"The {w} was seen by the river", "tags": [w]})
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryd", "mcp", "--socket", str(d.socket)],
        cwd=str(ROOT),
        env=d.env,
    )
    answers: dict[str, str] = {}

    async def one(s: ClientSession, word: str) -> None:
        result = await s.call_tool("search", {"query": word, "tags": [word], "limit": 1})
        answers[word] = result.content[0].text  # type: ignore[union-attr]

    async def main() -> None:
        with open(tmp_path / "mcp-stderr.log", "a") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as s,
            ):
                await s.initialize()
                async with anyio.create_task_group() as tg:
                    for w in words:
                        tg.start_soon(one, s, w)

    anyio.run(main)
    assert sorted(answers) == sorted(words)
    for w, text in answers.items():
        assert f"The {w} was seen" in text and sum(x in text for x in words) == 1, (w, text)


def test_a_daemon_restarted_under_a_session_is_an_error_then_works_again(
    daemon_factory: Any, tmp_path: Path
) -> None:
    """The agent's session outlives its daemon: while it is down each call is a tool error
    that says so, and the first call once it is back works, with the memory stored before."""
    first = daemon_factory()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryd", "mcp", "--socket", str(first.socket)],
        cwd=str(ROOT),
        env=first.env,
    )
    seen: list[tuple[bool, str]] = []

    async def search(s: ClientSession) -> None:
        result = await s.call_tool("search", {"query": "kingfisher", "kind": "memory"})
        seen.append((bool(result.is_error), result.content[0].text))  # type: ignore[union-attr]

    async def main() -> None:
        with open(tmp_path / "mcp-stderr.log", "a") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as s,
            ):
                await s.initialize()
                stored = await s.call_tool("remember", {"content": "The kingfisher nests"})
                assert not stored.is_error
                await anyio.to_thread.run_sync(first.stop)
                await search(s)
                await anyio.to_thread.run_sync(daemon_factory)  # same socket, same store
                await search(s)

    anyio.run(main)
    (down, said_down), (up, said_up) = seen
    assert down and "memoryd is not running" in said_down, said_down
    assert not up and "The kingfisher nests" in said_up, said_up


# --- the tools' annotations ---------------------------------------------------------------------


@pytest.mark.sqlite_only("the tool table; no store involved")
def test_annotations_say_what_each_tool_does(tmp_path: Path) -> None:
    """Every input schema is one a host can check arguments with; readOnlyHint for the tools
    that change nothing; of the others, destructiveHint for those that overwrite or remove
    (update too: it replaces a memory's fields), idempotentHint for those a repeat leaves as
    they were."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryd", "mcp", "--socket", str(tmp_path / "none.sock")],
        cwd=str(ROOT),
    )

    async def main() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            return (await s.list_tools()).tools

    listed = anyio.run(main)
    for tool in listed:  # as a host reads them: valid Draft 2020-12 schemas of an object
        Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema["type"] == "object", tool.name
        assert tool.output_schema is None  # (none declared: docs/agents.md says why)
    hints = {t.name: t.annotations for t in listed}
    writes = {"remember", "update", "forget", "feedback", "write_note", "append_to_note"}
    writes |= {"move_note", "edit_note", "delete_note"}
    assert {n for n, a in hints.items() if not a.read_only_hint} == writes
    destructive = {"update", "forget", "write_note", "move_note", "edit_note", "delete_note"}
    assert {n for n, a in hints.items() if a.destructive_hint} == destructive
    assert {n for n, a in hints.items() if a.idempotent_hint} == {
        "forget",
        "write_note",
        "move_note",
        "delete_note",
    }
    assert all(a.idempotent_hint is None for n, a in hints.items() if n not in writes)


@pytest.mark.sqlite_only("the bridge's own error path; no store involved")
def test_a_failure_nobody_foresaw_is_a_tool_error_not_a_protocol_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    class Broken(Bridge):
        def call(self, method: str, params: dict[str, Any], keep_null: Any = ()) -> Any:
            raise TypeError("slice indices must be integers")  # as read_note's page did

    text, structured, failed = catalog.call_safely(Broken("/nowhere", None), "get", {"id": 3})
    assert failed and text.startswith("get: memoryd mcp could not complete this call (")
    assert "the MCP server's log (stderr) has the details" in text
    assert structured["error"]["code"] == "internal"
    assert "Traceback" in capsys.readouterr().err


@pytest.mark.sqlite_only("argument parsing; no store involved")
@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "abc"])
@pytest.mark.parametrize("door", ["memoryd mcp", "memoryctl"])
def test_a_timeout_no_call_could_keep_is_refused_at_start_by_both_doors(
    door: str, value: str, tmp_path: Path
) -> None:
    """`--timeout 0` made every tool call answer that the daemon had closed the connection,
    and -5, nan, inf a Python error each call; memoryctl refused them (exit 2) already."""
    argv = ["-m", "memoryd", "mcp"] if door == "memoryd mcp" else ["-m", "memoryd.ctl", "status"]
    sock = str(tmp_path / "none.sock")
    done = subprocess.run(
        [sys.executable, *argv, "--socket", sock, f"--timeout={value}"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        cwd=str(ROOT),
    )
    assert done.returncode == 2, done
    assert f"--timeout: expected a positive number of seconds, got '{value}'" in done.stderr


@pytest.mark.sqlite_only("argument checking; no store involved")
@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("a b", "expected a short name (letters, digits"),
        ("n" * 300, "at most 64 characters), got 300"),
        ("*", "'*' (every namespace) can be searched but not remembered into"),
    ],
)
@pytest.mark.parametrize("where", ["--namespace", "MEMORYD_NAMESPACE"])
def test_a_namespace_the_daemon_would_refuse_stops_the_bridge_at_start(
    where: str, value: str, said: str, tmp_path: Path
) -> None:
    """It was taken, and then every remember (and search, for most) of the session failed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    argv = [sys.executable, "-m", "memoryd", "mcp", "--socket", str(tmp_path / "none.sock")]
    if where == "--namespace":
        argv += ["--namespace", value]
    else:
        env["MEMORYD_NAMESPACE"] = value
    done = subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=DEADLINE_S,
        cwd=str(ROOT),
    )
    assert done.returncode == 2 and f"memoryd mcp: {where}: " in done.stderr, done
    assert said in done.stderr


@pytest.mark.sqlite_only("the bridge's own stderr; no store involved")
@pytest.mark.parametrize("stderr", ["closed (2>&-)", "a pipe its reader closed"])
def test_the_session_goes_on_whatever_became_of_stderr(stderr: str, tmp_path: Path) -> None:
    """Each line the bridge logs (a configuration it cannot read, a line it cannot parse, an
    id it cannot answer, a batch) went to stdout, the protocol's channel, when stderr was
    closed, and ended the session when stderr's reader had gone (EPIPE)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env["MEMORYD_CONFIG"] = str(tmp_path / "missing.toml")  # logged at start
    argv = [sys.executable, "-m", "memoryd", "mcp", "--namespace", "agent"]
    if stderr.startswith("closed"):
        argv = ["sh", "-c", 'exec "$@" 2>&-', "sh", *argv]
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=str(ROOT),
        env=env,
    )
    assert proc.stderr is not None
    proc.stderr.close()
    lines = [
        line(INIT),
        line(INITIALIZED),
        b"garbage\n",
        b'{"jsonrpc":"2.0","id":null,"method":"ping"}\n',
        b'[{"jsonrpc":"2.0","id":"in-batch","method":"ping"}]\n',
        b'{"jsonrpc":"2.0","id":"latin","method":"ping","params":{"x":"\xe9"}}\n',
        line(call("tool", "search", {"query": "x"})),  # no daemon: a tool error
        line(PING),
    ]
    out, _ = proc.communicate(b"".join(lines), timeout=DEADLINE_S * 2)
    answers = [json.loads(x) for x in out.splitlines()]  # every line on stdout is JSON-RPC
    assert sorted(str(a["id"]) for a in answers) == sorted(
        ["init", "in-batch", "latin", "tool", "after"]
    ), out
    assert proc.returncode == 0


# --- under a prefix, every tool named as the agent calls it -------------------------------------


def bare_mentions(text: str, prefix: str) -> list[str]:
    """Tools named without the prefix: a name with an underscore anywhere outside a path or
    quotes, a plain-word tool in memoryd's phrases for it."""
    import re

    bare = [
        m[1]
        for m in re.finditer(r"(?<![\w/.'\-])([a-z]+_[a-z_]+)(?![\w'/\-]|\.\w)", text)
        if m[1] in catalog.BY_NAME
    ]
    plain = [
        p
        for name, ps in catalog.PLAIN_MENTIONS.items()
        for p in ps
        if text.count(p) > text.count(p.replace(name, prefix + name, 1))
    ]
    return bare + plain


@pytest.mark.sqlite_only("the tool table; no store involved")
def test_under_a_prefix_descriptions_instructions_and_hints_name_the_tools_as_called() -> None:
    """The errors named the prefix at their head, but a conflict's hint still said 'Read the
    note again (read_note)', the tool descriptions 'pass that sha256 to write_note', and the
    server's instructions 'Call session_context': names this server does not answer to."""
    from memoryd.agents import mcp as bridge_mcp
    from memoryd.agents.hints import HINTS

    for tool in bridge_mcp.listed_tools("md_"):
        said = json.dumps([tool.description, tool.input_schema])
        assert not bare_mentions(said, "md_"), (tool.name, bare_mentions(said, "md_"))
    instructions = catalog.named(bridge_mcp.INSTRUCTIONS, "md_")
    assert not bare_mentions(instructions, "md_") and "md_session_context" in instructions
    for hint in HINTS.values():
        assert not bare_mentions(catalog.named(hint, "md_"), "md_"), hint
    # an error keeps a path and a quoted heading as written
    error = "edit_note: no heading 'read_note' in walk/read_note.md (not found, code -32004)"
    said = catalog.named(bridge_mcp.prefixed(error, "edit_note", "md_"), "md_")
    assert said == "md_" + error
    # an answer's body is a note's words: only memoryd's own phrases change in it
    body = "Over the token budget (get ID for details):\n[3] a note about read_note"
    assert catalog.named(body, "md_", everywhere=False) == body.replace("(get", "(md_get")


@pytest.mark.sqlite_only("the bridge's own stdin; no store involved")
def test_a_child_process_cannot_take_a_message_off_the_wire() -> None:
    """The bridge reads stdin through a private copy of fd 0 and points fd 0 at /dev/null
    (as the SDK's reader did before memoryd read stdin itself): a child that reads its stdin
    (here `cat`) sees nothing, and every message stays the bridge's."""
    code = (
        "import anyio, subprocess\n"
        "from memoryd.agents.wire import StdinLines\n"
        "lines = StdinLines()\n"
        "child = subprocess.run(['cat'], capture_output=True, timeout=10)\n"
        "async def main():\n"
        "    return [line async for line in lines]\n"
        "print(repr((child.stdout, anyio.run(main))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=b'{"id": 1}\n{"id": 2}\n',
        capture_output=True,
        timeout=DEADLINE_S,
        cwd=str(ROOT),
    )
    assert done.stdout.decode().strip() == repr((b"", ['{"id": 1}\n', '{"id": 2}\n'])), done
