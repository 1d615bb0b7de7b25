"""memoryctl as a good citizen of the shell (issue 21): exit codes as grep and rg, --json errors
on stdout, -l/--paths, tab-separated lists, one time grammar for --since/--until on both sides,
UTF-8 requests up to notes.max_bytes, error messages that never repeat a rejected value, ids
in every answer whose id could be read, and --max-tokens output that adds up."""

from __future__ import annotations

import json
import os
import re
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import rpc, wait_for

from memoryd.core.errors import InvalidInput, describe
from memoryd.core.timeutil import parse_bound
from memoryd.ctl.handlers import when
from memoryd.serve.protocol import MAX_DEPTH, ProtocolError, decode
from memoryd.text.markdown import estimate_tokens

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

KEY = "AKIAIOSFODNN7EXAMPLE"  # what an AWS access key id looks like
LONG = "x" * 5000


# --- the time grammar, both sides ------------------------------------------------------------


def test_one_time_grammar_on_the_daemon() -> None:
    now = datetime(2024, 3, 10, 12, 0, tzinfo=UTC).timestamp()
    assert parse_bound("7d", what="since", now=now) == now - 7 * 86400
    assert parse_bound("24h", what="since", now=now) == now - 86400
    assert parse_bound("90m", what="until", until=True, now=now) == now - 5400
    day = datetime(2024, 3, 5, tzinfo=UTC).timestamp()
    assert parse_bound("2024-03-05", what="since") == day
    # a bare date as `until` (exclusive) is the end of that day: March 5th is included
    assert parse_bound("2024-03-05", what="until", until=True) == day + 86400
    assert parse_bound("2024-03-05T10:00:00Z", what="until", until=True) == day + 36000
    assert parse_bound(1700000000, what="since") == 1700000000.0
    assert parse_bound("1700000000", what="since") == 1700000000.0
    for bad in ("yesterday", "7x", KEY, "2024-13-45"):
        with pytest.raises(InvalidInput) as exc:
            parse_bound(bad, what="since")
        # the value named as describe() names it (walkw16: as memoryctl's check does), never a
        # credential
        assert KEY not in exc.value.message and "7d" in exc.value.message
    with pytest.raises(InvalidInput, match="got 'yesterday'"):
        parse_bound("yesterday", what="since")


def test_the_client_checks_the_same_grammar() -> None:
    for good in ("7d", "24h", "90m", "2w", "30s", "2024-03-05", "2024-03-05T10:00:00Z", "17e8"):
        assert when(good) == good
    for bad in ("yesterday", "7x", "", "d", "2024-13-45"):
        with pytest.raises(ValueError):
            when(bad)


# --- small pieces ------------------------------------------------------------------------------


def test_describe_never_repeats_a_credential_or_a_document() -> None:
    assert describe("notes/Plan.md") == "'notes/Plan.md'"
    assert describe("Nowhere At All") == "'Nowhere At All'"
    assert KEY not in describe(KEY) and describe(KEY) == "a text of 20 characters"
    assert describe(LONG) == "a text of 5000 characters"
    assert describe("ghp_" + "a1" * 18).startswith("a text of")
    assert describe(None) == "null" and describe([1, 2]) == "a list of 2 items"
    assert describe("🙂") == "a text of 1 character"  # not "1 characters"
    # a name as written, looked up: stop 37's walk had "a text of 19 characters" for these
    assert describe("[[Jean-Luc Picard]]") == "'[[Jean-Luc Picard]]'"
    assert describe("Melanie’s") == "'Melanie’s'" and describe("Caroline?") == "'Caroline?'"
    assert describe(10**40) == "a number of 41 digits"
    # paths as people write them (walku16: "~/x.md" was "a text of 6 characters")
    for path in ("~/x.md", "notes/50% done.md", "$HOME/n.md", "a=b;c.md", "{x}*.md"):
        assert describe(path) == repr(path)
    assert describe("$" + "Ab1" * 8).startswith("a text of")  # key-like still hidden


@pytest.mark.parametrize(
    ("path", "why"),
    [("~/x.md", "is absolute"), ("a/../../50% done.md", "leaves the workspace"), ("./~", None)],
)
def test_a_refused_note_path_is_quoted(path: str, why: str | None) -> None:
    """Every refusal of a note path names it as given (the doors: note.*, MCP, the web page)."""
    from memoryd.core.errors import InvalidInput
    from memoryd.notes.fsops import normalize

    if why is None:
        assert normalize(path) == "~"  # a file named "~" is a note's name like any other
        return
    with pytest.raises(InvalidInput, match=f"^path: {re.escape(repr(path))} {why}"):
        normalize(path)


def test_cjk_token_estimate_counts_each_character() -> None:
    chinese = "我们选择了数据库来存储笔记和记忆" * 20  # 320 characters, ~1 token each or more
    japanese = "ノートはマークダウンで書かれています。" * 20
    assert estimate_tokens(chinese) >= 320
    assert estimate_tokens(japanese) >= len(japanese)
    assert estimate_tokens("the quick brown fox jumps") == 7  # English is unchanged
    assert estimate_tokens("deploy 手順 v2") >= 4


def test_rejected_requests_keep_their_id() -> None:
    deep = {"a": 1}
    for _ in range(MAX_DEPTH + 5):
        deep = {"a": deep}
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 7, "method": "get", "params": {"id": 2**70}}),
        '{"jsonrpc": "2.0", "id": 7, "method": "add", "params": {"content": "\\ud800"}}',
        json.dumps({"jsonrpc": "2.0", "id": 7, "method": "add", "params": deep}),
        '{"jsonrpc": "2.0", "id": 7, "method": "add", "params": ' + "[" * 100_000 + "]" * 100_000,
        '{"jsonrpc": "2.0", "id": "q-1", "method": "add", "params": {"content": "oops}',
    ]
    for n, line in enumerate(lines):
        with pytest.raises(ProtocolError) as exc:
            decode(line.encode())
        assert exc.value.req_id == (7 if n < 4 else "q-1"), line[:80]
    with pytest.raises(ProtocolError) as exc:  # an id that is itself invalid stays null
        decode(b'{"jsonrpc": "2.0", "id": "\\udc00", "method": "ping"}')
    assert exc.value.req_id is None


# --- memoryctl against a real daemon -----------------------------------------------------------


def test_exit_codes_json_errors_paths_and_tabs(daemon_factory: Any) -> None:
    d = daemon_factory()
    ws = d.workspace
    (ws / "projects").mkdir(parents=True, exist_ok=True)
    (ws / "projects" / "Api plan.md").write_text("# Api plan\n\nThe lighthouse keeper's api.\n")
    (ws / "other.md").write_text("# Other\n\nA lighthouse and a windmill.\n")
    wait_for(lambda: d.ctl("search", "windmill").returncode == 0, timeout=30)

    found = d.ctl("search", "lighthouse")
    assert found.returncode == 0, found.stderr
    none = d.ctl("search", "zeppelin")  # nothing found: exit 1, as grep and rg
    assert none.returncode == 1 and none.stderr == ""
    assert json.loads(d.ctl("--json", "search", "zeppelin").stdout)["hits"] == []
    assert d.ctl("--json", "search", "zeppelin").returncode == 1

    paths = d.ctl("search", "lighthouse", "-l")  # only the paths, one per line, like rg -l
    assert paths.returncode == 0 and sorted(paths.stdout.splitlines()) == [
        "other.md",
        "projects/Api plan.md",
    ]
    assert d.ctl("search", "zeppelin", "--paths").stdout == ""
    assert d.ctl("search", "zeppelin", "--paths").returncode == 1
    listed = d.ctl("note", "list", "-l")
    assert sorted(listed.stdout.splitlines()) == ["other.md", "projects/Api plan.md"]
    assert d.ctl("backlinks", "other.md", "-l").returncode == 1

    rows = d.ctl("note", "list", "projects").stdout.splitlines()  # tabs: paths hold spaces
    assert len(rows) == 1 and rows[0].split("\t")[0] == "projects/Api plan.md"
    assert len(rows[0].split("\t")) == 5

    # --json: errors are JSON objects on stdout, with the exit status
    err = d.ctl("--json", "get", "999999")
    assert err.returncode == 1 and err.stderr == ""
    error = json.loads(err.stdout)["error"]
    assert error["kind"] == "daemon" and error["code"] == -32004 and error["message"]
    bad = d.ctl("--json", "search", "x", "--since", "yesterday")
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"]["kind"] == "usage"
    assert "7d" in json.loads(bad.stdout)["error"]["message"]
    plain = d.ctl("search", "x", "--since", "yesterday")  # a usage error: exit 2, on stderr
    assert plain.returncode == 2 and plain.stdout == "" and "--since" in plain.stderr
    gone = d.ctl("--json", "--socket", str(d.socket) + ".none", "ping")
    assert gone.returncode == 3 and json.loads(gone.stdout)["error"]["kind"] == "unreachable"
    both = d.ctl("--json", "search", "x", "-l")
    assert both.returncode == 2 and "--paths" in json.loads(both.stdout)["error"]["message"]


def test_since_and_until_share_one_grammar(daemon_factory: Any) -> None:
    d = daemon_factory()
    assert d.ctl("add", "the harbour master keeps a log").returncode == 0
    today = datetime.now(UTC).date()
    yesterday = (today - timedelta(days=1)).isoformat()
    for argv in (
        ["search", "harbour", "--since", "7d"],
        ["search", "harbour", "--since", "24h", "--until", today.isoformat()],  # all of today
        ["list", "--since", "90m"],
        ["list", "--until", today.isoformat()],
        ["recent", "--since", "2w"],
    ):
        done = d.ctl(*argv)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
    for argv in (["list", "--until", yesterday], ["search", "harbour", "--until", yesterday]):
        done = d.ctl(*argv)
        assert done.returncode == 1, (
            argv,
            done.stdout,
        )  # created today: not before yesterday's end
    resp = rpc(d.socket, "list", {"since": "7d", "until": today.isoformat()})
    assert len(resp["result"]["items"]) == 1


def test_a_note_of_max_bytes_in_cjk_or_emoji_can_be_written(
    daemon_factory: Any, tmp_path: Path
) -> None:
    d = daemon_factory()  # notes.max_bytes and server.max_request_bytes at their defaults: 1 MiB
    limit = 1_048_576
    for name, char in (("cjk.md", "記"), ("emoji.md", "🙂")):
        text = char * (limit // len(char.encode()))
        source = tmp_path / name
        source.write_text(text, encoding="utf-8")
        done = d.ctl("note", "write", name, "--file", str(source))
        assert done.returncode == 0, done.stderr
        assert (d.workspace / name).read_text(encoding="utf-8") == text
    over = tmp_path / "over.md"
    over.write_text("記" * (limit // 3 + 1), encoding="utf-8")
    done = d.ctl("note", "write", "over.md", "--file", str(over))
    assert done.returncode == 1 and "notes.max_bytes" in done.stderr


def test_error_messages_never_repeat_the_rejected_value(daemon_factory: Any) -> None:
    d = daemon_factory()
    calls: list[tuple[str, dict[str, Any]]] = []
    for value in (KEY, LONG, "tok_" + KEY + KEY):
        calls += [
            ("search", {"query": "x", "mode": value}),
            ("search", {"query": "x", "kind": value}),
            ("search", {"query": "x", "group": value}),
            ("search", {"query": "x", "since": value}),
            ("list", {"until": value}),
            ("recent_activity", {"since": value}),
            ("add", {"content": "x", "ttl": value}),
            ("add", {"content": "x", "expires_at": value}),
            ("add", {"content": "x", "explain": value}),
            ("jobs.run", {"name": value}),
            ("checkpoint.restore", {"name": value}),
            ("note.read", {"path": value}),
            ("note.write", {"path": "a.md", "content": "x", "expected_sha256": value}),
            ("backlinks", {"path": value}),
            ("get", {"path": value}),
            (value, {}),
        ]
    calls.append(("add", {"content": "aws " + KEY}))  # refused: names the kind, not the key
    for method, params in calls:
        resp = rpc(d.socket, method, params)
        assert "error" in resp, (method, params)
        message = json.dumps(resp["error"])
        assert KEY not in message and "x" * 100 not in message, (method, message[:300])
    refused = rpc(d.socket, "add", {"content": "aws " + KEY})["error"]["message"]
    assert "memoryctl add - --allow-secrets" in refused and "stdin" in refused


def test_answers_carry_the_id_whenever_it_could_be_read(daemon_factory: Any) -> None:
    d = daemon_factory()
    deep: Any = "x"
    for _ in range(MAX_DEPTH + 3):
        deep = [deep]
    lines = [
        b'{"jsonrpc":"2.0","id":7,"method":"get","params":{"id":99999999999999999999999}}',
        b'{"jsonrpc":"2.0","id":7,"method":"add","params":{"content":"\\ud83d"}}',
        json.dumps({"jsonrpc": "2.0", "id": 7, "method": "add", "params": {"tags": deep}}).encode(),
        b'{"jsonrpc":"2.0","id":7,"method":"add","params":{"content":"unfinished}',
    ]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(d.socket))
        s.settimeout(10)
        f = s.makefile("rwb")
        for line in lines:
            f.write(line + b"\n")
            f.flush()
            resp = json.loads(f.readline())
            assert resp["id"] == 7 and "error" in resp, (line[:60], resp)


def test_max_tokens_output_adds_up(daemon_factory: Any) -> None:
    d = daemon_factory()
    for n in range(12):
        assert d.ctl("add", f"ferry schedule {n} for the island route").returncode == 0
    assert d.ctl("add", "ferry leaves at nine").returncode == 0
    out = d.ctl("search", "ferry", "-n", "20", "--max-tokens", "300", "--mode", "keyword")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "full details for 0" not in out.stdout and "no results" not in out.stdout
    assert lines[0].startswith("mode keyword, 13 hit(s): ") and "tokens" in lines[0]
    assert sum(line.startswith("mode ") for line in lines) == 1  # one header, no contradiction
    ranks = [line for line in lines if line[:3].strip().rstrip(".").isdigit()]
    assert len(ranks) == 13  # every hit: in full or as a one-line summary
    res = json.loads(d.ctl("--json", "search", "ferry", "-n", "20", "--max-tokens", "300").stdout)
    assert res["hits"] and res["total"] == 13, res
    for hit in res["hits"]:  # a "full detail" without hashes and empty values
        assert "content_hash" not in hit and None not in hit.values() and [] not in hit.values()
    small = json.loads(d.ctl("--json", "search", "ferry", "-n", "20", "--max-tokens", "40").stdout)
    assert small["hits"] == [] and small["total"] == 13  # the index alone fills the budget
    shown = d.ctl("search", "ferry", "-n", "20", "--max-tokens", "40").stdout
    assert "0 in full, 13 as summaries" in shown and "no results" not in shown


@pytest.mark.sqlite_only("names files on disk; the backend does not matter")
def test_status_names_every_skipped_file_with_its_reason(daemon_factory: Any) -> None:
    d = daemon_factory(indexer={"debounce_ms": 100, "max_file_bytes": 4096})
    ws = d.workspace
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"])
    os.mkfifo(ws / "x.md")
    (ws / "big.md").write_text("# Big\n\n" + "words " * 2000)
    os.close(os.open(os.fsencode(ws) + b"/caf\xe9.md", os.O_CREAT | os.O_WRONLY, 0o644))
    (ws / "fine.md").write_text("# Fine\n")
    d.call("reindex")
    skipped = {s["path"]: s["reason"] for s in d.call("status")["index"]["skipped"]}
    assert skipped["x.md"] == "not a regular file"
    assert skipped["big.md"].startswith("larger than indexer.max_file_bytes")
    assert "not valid UTF-8" in skipped["caf\\xe9.md"]
    assert len(skipped) == 3
    out = d.ctl("status").stdout
    assert out.splitlines()[0].startswith("memoryd ") and "3 file(s) skipped" in out.splitlines()[0]
    assert "  x.md: not a regular file" in out and "  big.md: larger than" in out
    (ws / "big.md").write_text("# Big\n\nsmall now\n")  # fixed: no longer listed
    (ws / "x.md").unlink()
    wait_for(lambda: len(d.call("status")["index"]["skipped"]) == 1, timeout=30)


def test_iso_remembers_times_it_wrote_and_stays_bounded() -> None:
    """timeutil.iso keeps the text of times met lately (issue 23.3): the same text as
    strftime's, for float and int seconds alike, and never more than _ISO_SEEN_MAX of them."""
    from memoryd.core import timeutil

    def fresh(ts: float) -> str:
        return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    for ts in (0, 0.0, 1.9999999, 1700000000.5, 1700000000, 253402300799.0):
        assert timeutil.iso(ts) == fresh(ts)
        assert timeutil.iso(ts) == fresh(ts)  # remembered
    assert timeutil.iso(None) is None
    for n in range(timeutil._ISO_SEEN_MAX + 10):
        assert timeutil.iso(1e9 + n) == fresh(1e9 + n)
    assert len(timeutil._ISO_SEEN) <= timeutil._ISO_SEEN_MAX
