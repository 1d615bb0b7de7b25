"""memoryctl against a stub JSON-RPC server on a real Unix socket: arguments -> params, output,
exit status. The real daemon is exercised through memoryctl in test_daemon.py and friends."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, wait_for

from memoryd import ctl
from memoryd.ctl import main


class Stub:
    """A tiny JSON-RPC server: answers each request from `results` and records it.

    A result may be a value, a callable (params -> value), an RpcError, or the strings
    "hang" (no answer) or "close" (hang up without answering)."""

    def __init__(self, path: Path, results: dict[str, Any]) -> None:
        self.path = path
        self.requests: list[dict[str, Any]] = []
        self.results = results
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(8)
        self.sock.settimeout(0.05)
        self.stopping = threading.Event()
        self.conn_threads: list[threading.Thread] = []
        self.thread = threading.Thread(target=self.serve, name="ctl-stub")
        self.thread.start()

    @property
    def params(self) -> dict[str, Any]:
        return self.requests[-1]["params"]

    def serve(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            t = threading.Thread(target=self.answer_one, args=(conn,), name="ctl-stub-conn")
            t.start()
            self.conn_threads.append(t)

    def answer_one(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            self.answer(conn)

    def answer(self, conn: socket.socket) -> None:
        with conn.makefile("rwb") as f:
            req = json.loads(f.readline())
            self.requests.append(req)
            res = self.results.get(req["method"], {})
            if res == "close":
                return
            if res == "hang":  # until the client gives up and hangs up
                conn.recv(1)
                return
            if callable(res):
                res = res(req["params"])
            if isinstance(res, RpcError):
                body = {"jsonrpc": "2.0", "id": req["id"], "error": res.error}
            else:
                body = {"jsonrpc": "2.0", "id": req["id"], "result": res}
            f.write(json.dumps(body).encode() + b"\n")
            f.flush()

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(10)
        for t in self.conn_threads:
            t.join(10)
        self.sock.close()


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.error = {"code": code, "message": message}


CHUNK_HIT = {
    "id": 3,
    "kind": "chunk",
    "score": 0.5,
    "snippet": "the auth\n  note",
    "highlights": [[4, 8]],
    "content": "the auth note",
    "type": "note",
    "tags": [],
    "importance": 5,
    "created_at": "2026-11-22T16:40:00Z",
    "source": "workspace",
    "path": "proj/a.md",
    "heading_path": ["API", "Auth"],
    "start_line": 1,
    "end_line": 4,
}
MEMORY_HIT = {
    "id": 7,
    "kind": "memory",
    "score": 0.25,
    "snippet": "tokens rotate weekly",
    "highlights": [[14, 20]],
    "content": "tokens rotate weekly",
    "type": "decision",
    "tags": ["ops", "auth"],
    "importance": 8,
    "created_at": "2026-11-22T16:40:00Z",
    "source": None,
}
RECORD = {
    "id": 7,
    "kind": "memory",
    "content": "tokens rotate weekly",
    "type": "decision",
    "tags": ["ops", "auth"],
    "importance": 8,
    "confidence": 1.0,
    "source": None,
    "context": None,
    "namespace": "default",
    "created_at": "2026-11-22T16:40:00Z",
    "updated_at": "2026-11-22T16:40:00Z",
    "expires_at": None,
    "access_count": 0,
    "last_accessed_at": None,
}
NO_DRIFT = {
    "files_missing_from_index": [],
    "stale": [],
    "missing_on_disk": [],
    "orphan_chunks": 0,
    "total": 0,
}
STATUS = {
    "version": "0.1.0",
    "pid": 4242,
    "uptime_s": 12.5,
    "workspace": "/home/u/memoryd",
    "data_dir": "/home/u/.local/share/memoryd",
    "socket": "/run/user/1000/memoryd/memoryd.sock",
    "db_path": "/home/u/.local/share/memoryd/memoryd.db",
    "db_bytes": 4096,
    "counts": {"memories": 2, "documents": 1, "chunks": 3},
    "vectors": {"done": 5, "pending": 0},
    "model": {"state": "ready", "reason": None, "model": "minilm", "dim": 384},
    "watcher": {"alive": True},
    "index": {"last_reconcile": None, "files_indexed": 1, "files_unchanged": 0},
    "jobs": [
        {
            "name": "expiry",
            "interval_s": 3600.0,
            "last_run_at": None,
            "last_result": None,
            "last_error": None,
            "last_duration_ms": None,
            "next_run_at": "2026-11-22T17:40:00Z",
            "running": False,
        }
    ],
}


DRIFT = {**NO_DRIFT, "stale": ["a.md"], "missing_on_disk": ["b.md"], "total": 2}


def _status(params: dict[str, Any]) -> dict[str, Any]:
    return {**STATUS, "drift": NO_DRIFT} if params.get("check") else STATUS


def _delete(params: dict[str, Any]) -> dict[str, Any] | RpcError:
    if params.get("id") == 99:
        return RpcError(-32004, "no memory with id 99")
    if "id" in params:
        return {"deleted": True, "id": params["id"], "ids": [params["id"]]}
    return {"deleted": 2, "ids": [4, 5], "dry_run": bool(params.get("dry_run"))}


RESULTS: dict[str, Any] = {
    "ping": {"pong": True, "version": "0.1.0"},
    "add": lambda p: {
        "id": 7,
        "duplicate": p["content"] == "again",
        "stored": True,
        "memory": RECORD,
        "warnings": [],
    },
    "get": lambda p: RpcError(-32004, f"no entry with id {p['id']}") if p["id"] == 99 else RECORD,
    "list": {"items": [RECORD], "total": 30},
    "update": RECORD,
    "delete": _delete,
    "search": {"mode": "hybrid", "query": "auth", "hits": [CHUNK_HIT, MEMORY_HIT], "took_ms": 1.5},
    "stats": {
        "memories": 2,
        "documents": 1,
        "chunks": 3,
        "vectors": 5,
        "pending_vectors": 0,
        "db_bytes": 4096,
        "by_type": {"decision": 1, "fact": 1},
    },
    "status": _status,
    "reindex": {
        "indexed": 2,
        "unchanged": 5,
        "deleted": 0,
        "moved": 1,
        "skipped": 0,
        "took_ms": 8.25,
        "errors": [],
    },
    "jobs": {"jobs": STATUS["jobs"]},
    "jobs.run": lambda p: {
        "name": p["name"],
        "result": {"expired": 1},
        "duration_ms": 2.0,
        "error": "ValueError: boom" if p["name"] == "broken" else None,
    },
    "prune": {"pruned": 0, "dry_run": True, "items": []},
    "session_start": {"memories": [], "tokens_used": 0, "total": 0, "has_more": False},
    "match_triggers": {"memories": []},
    "validate": {
        "id": 7,
        "useful_count": 1,
        "validation_count": 1,
        "confidence": 1.0,
        "promotion_candidate": False,
    },
    "promotion_candidates": {"candidates": []},
    "promote": {**RECORD, "tier": "critical"},
    "history": {"id": 7, "history": []},
    "checkpoint.create": {"name": "one", "path": "/x/one.db", "bytes": 10},
    "checkpoint.list": {"checkpoints": []},
    "checkpoint.restore": {"restored": "one", "reconcile": {}},
    "export": {"items": [{"content": "a"}, {"content": "b"}], "count": 2},
    "import": lambda p: {"imported": len(p["items"]), "skipped_duplicates": 0, "vectors": 0},
    # methods that land from other branches (contracts in the brief)
    "used": {"id": 7, "access_count": 3},
    "recent_activity": {
        "items": [
            {
                "kind": "memory",
                "id": 7,
                "change": "added",
                "summary": "tokens rotate weekly",
                "at": "2026-11-22T16:40:00Z",
            },
            {"kind": "note", "path": "proj/a.md", "title": "API", "mtime": "2026-11-22T16:00:00Z"},
        ]
    },
    "note.read": {
        "path": "a.md",
        "content": "# A\n\ntext",
        "sha256": "ab" * 32,
        "size": 9,
        "mtime": "2026-11-22T16:40:00Z",
    },
    "note.write": lambda p: {"path": p["path"], "sha256": "cd" * 32, "created": True},
    "note.append": lambda p: {"path": p["path"], "sha256": "ef" * 32},
    "note.list": {
        "items": [
            {
                "path": "a.md",
                "size": 9,
                "mtime": "2026-11-22T16:40:00Z",
                "title": "A",
                "tags": ["x"],
            }
        ],
        "total": 3,
    },
    "note.move": lambda p: {"path": p["path"], "new_path": p["new_path"], "sha256": "ab" * 32},
    "links": {
        "path": "a.md",
        "links": [
            {"target": "b", "path": "b.md", "heading": "Setup", "alias": None, "line": 3},
            {"target": "nowhere", "path": None, "heading": None, "alias": "x", "line": 5},
        ],
    },
    "backlinks": {
        "path": "b.md",
        "backlinks": [
            {"path": "a.md", "line": 3, "heading": "Setup", "alias": None},
        ],
    },
}
FROM_OTHER_BRANCHES: set[str] = set()  # every method the table calls is on main now


def table_methods() -> set[str]:
    from memoryd.ctl.table import COMMANDS

    rows = [*COMMANDS, *(a for c in COMMANDS for a in c.actions)]
    called = {r.method for r in rows if r.method}
    source = "".join(p.read_text() for p in (ROOT / "memoryd" / "ctl").glob("*.py"))
    return called | set(re.findall(r'c\.call\(\s*"([\w.]+)"', source))


@pytest.fixture
def stub(short_dir: Path) -> Iterator[Stub]:
    s = Stub(short_dir / "stub.sock", dict(RESULTS))
    yield s
    s.close()


@pytest.fixture
def ctl_run(
    stub: Stub, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., tuple[int, str, str]]:
    """memoryctl in-process against the stub: (exit status, stdout, stderr)."""
    monkeypatch.setenv("MEMORYD_SOCKET", str(stub.path))

    def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse
            code = exc.code  # type: ignore[assignment]
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


# --- arguments -> params -------------------------------------------------------------------------

PARAMS = [
    (["ping"], "ping", {}),
    (["add", "hello"], "add", {"content": "hello"}),
    (
        [
            "add",
            "hello",
            "--type",
            "decision",
            "--tags",
            "a, b,,c",
            "--importance",
            "7",
            "--confidence",
            "0.5",
            "--source",
            "me",
            "--context",
            "standup",
            "--ttl",
            "7d",
            "--namespace",
            "proj",
            "--tier",
            "critical",
            "--triggers",
            "deploy,ship it",
            "--allow-secrets",
            "--skip-near-duplicates",
        ],
        "add",
        {
            "content": "hello",
            "type": "decision",
            "tags": ["a", "b", "c"],
            "importance": 7,
            "confidence": 0.5,
            "source": "me",
            "context": "standup",
            "ttl": "7d",
            "namespace": "proj",
            "tier": "critical",
            "triggers": ["deploy", "ship it"],
            "allow_secrets": True,
            "skip_near_duplicates": True,
        },
    ),
    (["add", "x", "--expires", "2027-01-01"], "add", {"content": "x", "expires_at": "2027-01-01"}),
    (["add", "x", "--expires", "1800000000"], "add", {"content": "x", "expires_at": 1800000000.0}),
    (["search", "auth"], "search", {"query": "auth"}),
    (
        [
            "search",
            "auth token",
            "-n",
            "3",
            "--mode",
            "keyword",
            "--kind",
            "chunk",
            "--type",
            "note",
            "--tags",
            "ops",
            "--source",
            "workspace",
            "--path",
            "proj",
            "--since",
            "2026-01-01",
            "--until",
            "2026-12-31",
            "--min-importance",
            "3",
            "--include-expired",
            "--namespace",
            "*",
            "--explain",
        ],
        "search",
        {
            "query": "auth token",
            "limit": 3,
            "mode": "keyword",
            "kind": "chunk",
            "type": "note",
            "tags": ["ops"],
            "source": "workspace",
            "path": "proj",
            "since": "2026-01-01",
            "until": "2026-12-31",
            "min_importance": 3,
            "include_expired": True,
            "namespace": "*",
            "explain": True,
        },
    ),
    (
        ["search", "--concepts", "deploy,vpn", "--max-tokens", "300", "--no-decay"],
        "search",
        {"concepts": ["deploy", "vpn"], "max_tokens": 300, "use_decay": False},
    ),
    (["get", "7"], "get", {"id": 7}),
    (["list"], "list", {"limit": 20, "offset": 0}),
    (
        ["list", "--kind", "all", "--type", "decision", "-n", "5", "--offset", "10"],
        "list",
        {"kind": "all", "type": "decision", "limit": 5, "offset": 10},
    ),
    (["update", "7", "--content", "new"], "update", {"id": 7, "content": "new"}),
    (
        ["update", "7", "--importance", "9", "--tags", "x", "--ttl", "1h"],
        "update",
        {"id": 7, "importance": 9, "tags": ["x"], "ttl": "1h"},
    ),
    (["update", "7", "--no-expiry"], "update", {"id": 7, "expires_at": None}),
    (["delete", "7"], "delete", {"id": 7}),
    (["rm", "7"], "delete", {"id": 7}),
    (["delete", "--tag", "scratch", "--dry-run"], "delete", {"tag": "scratch", "dry_run": True}),
    (["delete", "--path", "old/notes"], "delete", {"path": "old/notes"}),
    (["stats"], "stats", {}),
    (["status"], "status", {}),
    (["status", "--check"], "status", {"check": True}),
    (["reindex"], "reindex", {}),
    (["reindex", "notes/a.md", "--full"], "reindex", {"path": "notes/a.md", "full": True}),
    (["jobs"], "jobs", {}),
    (["jobs", "list"], "jobs", {}),
    (["jobs", "run", "expiry"], "jobs.run", {"name": "expiry"}),
    (["prune", "--dry-run"], "prune", {"dry_run": True}),
    (["session", "--max-tokens", "200"], "session_start", {"max_tokens": 200}),
    (["triggers", "time to deploy"], "match_triggers", {"prompt": "time to deploy"}),
    (["validate", "7", "--not-useful"], "validate", {"id": 7, "useful": False}),
    (["candidates"], "promotion_candidates", {}),
    (["promote", "7"], "promote", {"id": 7, "tier": "critical"}),
    (["history", "7"], "history", {"id": 7}),
    (["checkpoint"], "checkpoint.list", {"kind": "checkpoint"}),
    (["checkpoint", "list", "--snapshot"], "checkpoint.list", {"kind": "snapshot"}),
    (["checkpoint", "create", "one"], "checkpoint.create", {"name": "one"}),
    (
        ["checkpoint", "restore", "one"],
        "checkpoint.restore",
        {"name": "one", "kind": "checkpoint"},
    ),
    (
        ["checkpoint", "restore", "--snapshot", "s1"],
        "checkpoint.restore",
        {"name": "s1", "kind": "snapshot"},
    ),
    (["checkpoint", "delete", "one"], "checkpoint.delete", {"name": "one", "kind": "checkpoint"}),
    (
        ["checkpoint", "delete", "--snapshot", "s1"],
        "checkpoint.delete",
        {"name": "s1", "kind": "snapshot"},
    ),
    (["export", "--namespace", "proj"], "export", {"namespace": "proj"}),
    (["search", "auth", "--chunks"], "search", {"query": "auth", "group": "none"}),
    (["search", "auth", "--all-workspaces"], "search", {"query": "auth", "workspace": "all"}),
    (["used", "7"], "used", {"id": 7}),
    (["recent"], "recent_activity", {}),
    (
        ["recent", "-n", "5", "--since", "2026-11-01", "--namespace", "a"],
        "recent_activity",
        {"limit": 5, "since": "2026-11-01", "namespace": "a"},
    ),
    (["note", "read", "a.md"], "note.read", {"path": "a.md"}),
    (["note", "write", "a.md", "hello"], "note.write", {"path": "a.md", "content": "hello"}),
    (
        ["note", "append", "a.md", "more", "--if-sha256", "ab12"],
        "note.append",
        {"path": "a.md", "content": "more", "expected_sha256": "ab12"},
    ),
    (["note", "list"], "note.list", {}),
    (
        ["note", "list", "proj", "-n", "5", "--offset", "10"],
        "note.list",
        {"path": "proj", "limit": 5, "offset": 10},
    ),
    (
        ["note", "move", "a.md", "b/a.md", "--if-sha256", "ab"],
        "note.move",
        {"path": "a.md", "new_path": "b/a.md", "expected_sha256": "ab"},
    ),
    (["links", "a.md"], "links", {"path": "a.md"}),
    (["backlinks", "b.md"], "backlinks", {"path": "b.md"}),
]


@pytest.mark.parametrize(("argv", "method", "params"), PARAMS, ids=lambda v: str(v)[:40])
def test_arguments_become_params(
    ctl_run: Callable[..., tuple[int, str, str]],
    stub: Stub,
    argv: list[str],
    method: str,
    params: dict[str, Any],
) -> None:
    code, _, err = ctl_run(*argv)
    # the stub's answers to these list nothing: memoryctl exits 1 then, as grep does
    empty = ("match_triggers", "promotion_candidates", "history", "checkpoint.list")
    assert code == (1 if method in empty else 0), err
    req = stub.requests[-1]
    assert req["jsonrpc"] == "2.0" and req["id"] == 1
    assert (req["method"], req["params"]) == (method, params)


def test_global_options_before_or_after_the_command(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub, short_dir: Path
) -> None:
    other = short_dir / "nothing-here.sock"
    # --socket given after the command wins over MEMORYD_SOCKET (which points at the stub)
    code, _, err = ctl_run("ping", "--socket", str(other))
    assert code == 3 and str(other) in err
    code, out, _ = ctl_run("--socket", str(stub.path), "get", "7", "--json", "--timeout", "5")
    assert code == 0 and json.loads(out) == RECORD
    code, out, _ = ctl_run("--json", "jobs", "run", "expiry")
    assert code == 0 and json.loads(out)["name"] == "expiry"


def test_add_reads_stdin_with_dash(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub
) -> None:
    code, out, _ = ctl_run("add", "-", "--tags", "t", stdin="from stdin\nsecond line\n")
    assert code == 0 and out == "added 7\n"
    assert stub.params == {"content": "from stdin\nsecond line\n", "tags": ["t"]}


def test_add_from_stdin_in_a_subprocess_with_the_env_socket(stub: Stub) -> None:
    env = {"MEMORYD_SOCKET": str(stub.path), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    out = subprocess.run(
        [sys.executable, "-m", "memoryd.ctl", "add", "-"],
        input="piped text\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert (out.returncode, out.stdout, out.stderr) == (0, "added 7\n", "")
    assert stub.params == {"content": "piped text\n"}


def test_import_sends_the_lines_in_batches(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub, tmp_path: Path
) -> None:
    items = [{"content": f"memory {i}", "pad": "x" * 1000} for i in range(600)]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items) + "\n")
    code, out, _ = ctl_run("import", str(path))
    assert code == 0 and out.startswith("imported 600, skipped 0")
    calls = [r["params"] for r in stub.requests if r["method"] == "import"]
    checks = [c for c in calls if c["dry_run"]]
    batches = [c["items"] for c in calls if not c["dry_run"]]
    assert len(batches) > 1 and [i for b in batches for i in b] == items
    assert calls == checks + [{**c, "dry_run": False} for c in checks]  # every check first
    firsts = [c["first_line"] for c in checks]
    assert firsts[:2] == [1, 1 + len(batches[0])]
    code, _, err = ctl_run("import", "-", stdin='{"content": "a"}\n{"content": "b",\n')
    # named as the daemon names a bad item's line (`FILE: line N: ...`), the column in it
    assert code == 2 and err == (
        "memoryctl: -: line 2: not JSON (Expecting property name enclosed in double quotes"
        " at column 17); nothing was imported\n"
    )
    code, _, err = ctl_run("import", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "cannot read" in err and "No such file" in err


# Every command that reads a file or stdin a person may have saved in an editor that writes a
# byte order mark (Notepad, Excel's "UTF-8" formats): the mark is no text. It started the memory
# (`add -` stored "\ufeffhello", a different text from "hello") or made an import file's first
# line "not JSON".
BOM_READERS = [
    (["add", "-"], "add", "content"),
    (["update", "7", "--content", "-"], "update", "content"),
    (["note", "write", "a.md", "--file", "{file}"], "note.write", "content"),
    (["note", "append", "a.md"], "note.append", "content"),
    (["import", "{file}"], "import", "items"),
    (["import", "-"], "import", "items"),
]


@pytest.mark.parametrize(("args", "method", "param"), BOM_READERS)
def test_a_byte_order_mark_is_not_text(
    ctl_run: Callable[..., tuple[int, str, str]],
    stub: Stub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    method: str,
    param: str,
) -> None:
    text = '{"content": "hello"}\n' if method == "import" else "hello\n"
    data = b"\xef\xbb\xbf" + text.encode()
    path = tmp_path / "in.txt"
    path.write_bytes(data)
    args = [str(path) if a == "{file}" else a for a in args]
    # stdin as a terminal's pipe gives it: bytes under a text stream
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    code, _, err = ctl_run(*args)
    assert code == 0, err
    sent = [r["params"] for r in stub.requests if r["method"] == method][-1][param]
    if method == "import":
        assert sent == [{"content": "hello"}]
    else:
        assert sent.strip() == "hello"


def test_export_writes_json_lines(
    ctl_run: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    code, out, _ = ctl_run("export")
    assert code == 0 and out == '{"content": "a"}\n{"content": "b"}\n'
    target = tmp_path / "out.jsonl"
    code, out, err = ctl_run("export", "-o", str(target))
    assert code == 0 and out == "" and "exported 2 memories" in err
    assert target.read_text() == '{"content": "a"}\n{"content": "b"}\n'
    code, out, err = ctl_run("--json", "export", "-o", str(target))
    assert code == 0 and err == "" and json.loads(out) == {"count": 2, "path": str(target)}


# --- output --------------------------------------------------------------------------------------


def test_json_prints_the_raw_result(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub
) -> None:
    for argv, method in (
        (["search", "auth"], "search"),
        (["stats"], "stats"),
        (["jobs"], "jobs"),
        (["list"], "list"),
        (["reindex"], "reindex"),
        (["ping"], "ping"),
    ):
        code, out, _ = ctl_run("--json", *argv)
        assert code == 0 and json.loads(out) == RESULTS[method]
    stub.results["status"] = {**STATUS, "drift": DRIFT}
    code, out, _ = ctl_run("--json", "status", "--check")
    assert code == 1 and json.loads(out)["drift"] == DRIFT
    code, out, _ = ctl_run("--json", "rm", "4", "5")
    assert [r["id"] for r in json.loads(out)] == [4, 5]


def test_add_readable(ctl_run: Callable[..., tuple[int, str, str]], stub: Stub) -> None:
    assert ctl_run("add", "hello")[1] == "added 7\n"
    assert ctl_run("add", "again")[1] == "already stored as 7\n"
    stub.results["add"] = {"id": 3, "duplicate": False, "stored": False, "warnings": ["near"]}
    assert ctl_run("add", "x", "--skip-near-duplicates")[1:] == (
        "not stored: near duplicate of 3\n",
        "warning: near\n",
    )


def test_search_readable(ctl_run: Callable[..., tuple[int, str, str]], stub: Stub) -> None:
    code, out, _ = ctl_run("search", "auth")
    assert code == 0
    assert out.splitlines() == [
        "mode hybrid, 2 hit(s), 1.5 ms",
        " 1. 0.500  #3  chunk  proj/a.md:1-4  API > Auth",
        "    the auth note",
        " 2. 0.250  #7  memory  [decision]  #ops #auth",
        "    tokens rotate weekly",
    ]
    stub.results["search"] = {"mode": "keyword", "query": "zzz", "hits": [], "took_ms": 0.3}
    assert ctl_run("search", "zzz")[1] == "mode keyword, 0 hit(s), 0.3 ms\nno results\n"


def test_search_explain_and_pinned_hits(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub
) -> None:
    pinned = {**MEMORY_HIT, "score": None, "pinned": True}
    explained = {**CHUNK_HIT, "explain": {"keyword_rank": 1, "vector_rank": None, "final": 0.5}}
    stub.results["search"] = {"mode": "hybrid", "hits": [pinned, explained], "took_ms": 2}
    out = ctl_run("search", "auth", "--explain", "--constitutional")[1]
    assert " 1. pinned  #7" in out and "    explain: keyword_rank=1, final=0.5" in out


def test_snippet_bold_only_on_a_terminal_without_no_color(
    ctl_run: Callable[..., tuple[int, str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert "the \033[1mauth\033[0m note" in ctl_run("search", "auth")[1]
    monkeypatch.setenv("NO_COLOR", "1")
    assert "the auth note" in ctl_run("search", "auth")[1]
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False, raising=False)
    monkeypatch.delenv("NO_COLOR")
    assert "the auth note" in ctl_run("search", "auth")[1]


def test_get_and_list_readable(ctl_run: Callable[..., tuple[int, str, str]]) -> None:
    out = ctl_run("get", "7")[1]
    assert re.search(r"^id: +7$", out, re.M) and re.search(r"^tags: +ops, auth$", out, re.M)
    assert out.endswith("\n\ntokens rotate weekly\n") and "expires_at" not in out
    code, out, err = ctl_run("list", "-n", "1")
    # one row a memory, tab-separated; the page count on stderr (stdout holds only rows)
    assert code == 0 and out.splitlines() == [
        "7\t2026-11-22T16:40:00Z\tmemory [decision] #ops #auth\ttokens rotate weekly",
    ]
    assert err == "(1 shown of 30; next page: --offset 1)\n"


def test_status_readable_and_drift_exits_1(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub
) -> None:
    code, out, _ = ctl_run("status")
    assert code == 0
    summary, blank, *lines = out.splitlines()  # one line first, then the details
    assert summary == (
        "memoryd 0.1.0: ok; 1 notes, 3 chunks, 2 memories; model ready; "
        "vectors 5 done, 0 pending; up 12s"
    )
    assert blank == ""
    assert "version:               0.1.0" in lines
    assert "counts.memories:       2" in lines and "watcher.alive:         yes" in lines
    assert "index.last_reconcile:  -" in lines
    colons = {line.index(":") for line in lines[: lines.index("")]}
    values = {len(line) - len(line[line.index(":") + 1 :].lstrip()) for line in lines[:5]}
    assert len(colons) > 1 and len(values) == 1  # values aligned in one column
    assert "  expiry" in out and "drift" not in out
    # skipped files are named with their reason, and the summary says so first
    skipped = [{"path": "x.md", "reason": "not a regular file"}]
    stub.results["status"] = {**STATUS, "index": {**STATUS["index"], "skipped": skipped}}
    out = ctl_run("status")[1]
    assert out.startswith("memoryd 0.1.0: needs attention: 1 file(s) skipped; ")
    assert "skipped files (1):\n  x.md: not a regular file\n" in out
    stub.results["status"] = _status
    code, out, _ = ctl_run("status", "--check")
    assert code == 0 and "no drift" in out
    stub.results["status"] = {**STATUS, "drift": DRIFT}
    code, out, _ = ctl_run("status", "--check")
    assert code == 1
    assert "  stale: a.md" in out and "  missing_on_disk: b.md" in out and "drift: 2" in out


def test_other_readable_output(ctl_run: Callable[..., tuple[int, str, str]]) -> None:
    assert ctl_run("ping")[1].startswith("memoryd 0.1.0 is answering on /")
    out = ctl_run("stats")[1]
    assert re.search(r"^by_type\.decision: +1$", out, re.M)
    assert ctl_run("reindex")[1] == (
        "indexed 2, unchanged 5, deleted 0, moved 1, skipped 0 in 8.25 ms\n"
    )
    out = ctl_run("jobs")[1]
    assert out.splitlines()[1].split() == ["expiry", "3600s", "-", "-", "2026-11-22T17:40:00Z"]
    assert ctl_run("rm", "4", "5")[1] == "deleted 4\ndeleted 5\n"
    assert ctl_run("delete", "--tag", "x", "--dry-run")[1] == "would delete 2: 4, 5\n"
    code, out, _ = ctl_run("jobs", "run", "expiry")
    assert code == 0 and out.splitlines()[0] == "job expiry done in 2.0 ms"


def test_a_deletion_of_many_lists_the_first_twenty(
    stub: Stub, ctl_run: Callable[..., tuple[int, str, str]]
) -> None:
    """`delete --tag` of 1,476 memories printed every id on one line (~10 KB); the terminal gets
    the first 20 and a count, --json every one."""
    stub.results["delete"] = {"deleted": 45, "ids": list(range(1, 46))}
    out = ctl_run("delete", "--tag", "x", "--dry-run")[1]
    first = ", ".join(map(str, range(1, 21)))
    assert out == f"would delete 45: {first} and 25 more (--json lists them all)\n"
    assert json.loads(ctl_run("delete", "--tag", "x", "--dry-run", "--json")[1])["ids"] == list(
        range(1, 46)
    )
    stub.results["delete"] = {
        "deleted": 21,
        "ids": list(range(1, 22)),
    }  # one more is shown, not counted
    assert (
        ctl_run("delete", "--tag", "x")[1] == f"deleted 21: {', '.join(map(str, range(1, 22)))}\n"
    )


# --- exit status ---------------------------------------------------------------------------------


def test_daemon_errors_exit_1(ctl_run: Callable[..., tuple[int, str, str]]) -> None:
    assert ctl_run("get", "99") == (1, "", "memoryctl: no entry with id 99\n")
    # the other ids are still deleted; the status reports the failure
    code, out, err = ctl_run("rm", "4", "99", "5")
    assert (code, out, err) == (1, "deleted 4\ndeleted 5\n", "memoryctl: no memory with id 99\n")
    code, out, _ = ctl_run("jobs", "run", "broken")
    assert code == 1 and "failed" in out and "boom" in out


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["add"],
        ["frobnicate"],
        ["get", "seven"],
        ["search", "x", "--mode", "psychic"],
        ["update", "7", "--ttl", "1d", "--no-expiry"],
        ["add", "x", "--ttl", "1d", "--expires", "2030-01-01"],
        ["jobs", "run"],
        ["checkpoint", "create"],
        ["ping", "--timeout", "0"],
        ["search"],
        ["delete"],
        ["delete", "7", "--tag", "x"],
        ["delete", "--tag", "x", "--namespace", "y"],
    ],
)
def test_usage_errors_exit_2(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub, argv: list[str]
) -> None:
    code, _, err = ctl_run(*argv)
    assert code == 2 and err
    assert stub.requests == []  # nothing was sent


def test_missing_socket_exits_3(
    short_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = short_dir / "nope.sock"
    assert main(["--socket", str(path), "ping"]) == 3
    err = capsys.readouterr().err
    assert err == (
        f"memoryctl: memoryd is not running (no socket at {path}). Start it with 'memoryd run' "
        "or 'memoryd service install'. If it listens elsewhere, pass --socket PATH or set "
        "MEMORYD_SOCKET.\n"
    )
    monkeypatch.setenv("MEMORYD_SOCKET", str(short_dir / "no-dir" / "x.sock"))
    assert main(["status"]) == 3
    assert "no socket at" in capsys.readouterr().err


def test_stale_socket_and_non_socket_exit_3(
    short_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = short_dir / "stale.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(stale))
    s.close()  # a socket file nobody listens on, as a crashed daemon leaves behind
    assert main(["--socket", str(stale), "ping"]) == 3
    err = capsys.readouterr().err
    assert "not running (stale socket at" in err and "memoryd run" in err
    assert len(err.splitlines()) == 1
    plain = short_dir / "plain"
    plain.write_text("")
    assert main(["--socket", str(plain), "ping"]) == 3
    said = capsys.readouterr().err  # (the hint names memoryd: no "it" without a noun before)
    assert "is not a socket. If memoryd listens elsewhere, pass --socket PATH" in said


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_permission_denied_exits_3(short_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = short_dir / "locked.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.listen(1)
    try:
        os.chmod(path, 0)
        assert main(["--socket", str(path), "ping"]) == 3
        assert "permission denied" in capsys.readouterr().err
    finally:
        s.close()


def test_no_answer_exits_3(ctl_run: Callable[..., tuple[int, str, str]], stub: Stub) -> None:
    stub.results["ping"] = "hang"
    code, _, err = ctl_run("ping", "--timeout", "0.2")
    assert code == 3 and err == (
        "memoryctl: memoryd did not answer ping within 0.2s (raise it with --timeout)\n"
    )
    stub.results["stats"] = "close"
    code, _, err = ctl_run("stats")
    assert code == 3 and "closed the connection without answering stats" in err


def test_unreadable_answer_exits_1(short_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = short_dir / "junk.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)

    def junk() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(1000)
            conn.sendall(b"<html>\n")

    t = threading.Thread(target=junk)
    t.start()
    try:
        assert main(["--socket", str(path), "ping"]) == 1
    finally:
        t.join(5)
        server.close()
    assert capsys.readouterr().err == "memoryctl: memoryd sent an unreadable answer to ping\n"


def test_default_timeouts(monkeypatch: pytest.MonkeyPatch, short_dir: Path) -> None:
    seen: dict[str, float] = {}

    class Recorder(ctl.Client):
        def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
            seen[method] = self.timeout
            raise ctl.Unreachable("stop here")

    monkeypatch.setattr(ctl, "Client", Recorder)
    sock = ["--socket", str(short_dir / "x.sock")]
    for argv in (["ping"], ["jobs"], ["status"], ["reindex"], ["jobs", "run", "a"]):
        main([*sock, *argv])
    assert seen == {"ping": 30, "jobs": 30, "status": 30, "reindex": 600, "jobs.run": 600}
    main([*sock, "status", "--check"])
    main([*sock, "reindex", "--timeout", "5"])
    assert seen["status"] == 600 and seen["reindex"] == 5


# --- socket path, version, imports, docs ---------------------------------------------------------


@pytest.mark.parametrize("tmpdir", ["given", "missing", "a file", "relative", "unset"])
def test_the_temp_folder_is_tempfiles_without_importing_it(tmpdir: str, tmp_path: Path) -> None:
    """memoryctl finds the default socket's temp folder as tempfile.gettempdir() does, without
    importing tempfile (random, shutil, ...: twice the rest of its start-up)."""
    (tmp_path / "given").mkdir()
    (tmp_path / "a file").write_text("")
    env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "TEMP", "TMP")}
    if tmpdir != "unset":
        env["TMPDIR"] = "given" if tmpdir == "relative" else str(tmp_path / tmpdir)
    env["TEMP"] = str(tmp_path / "given") if tmpdir == "missing" else "/nowhere"
    codes = (
        "import tempfile; print(tempfile.gettempdir())",
        "import sys; from memoryd.ctl.client import temp_dir; print(temp_dir()); "
        "print('tempfile' in sys.modules)",
    )
    answers = [
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env=env,
        )
        for code in codes
    ]
    assert answers[0].returncode == answers[1].returncode == 0, answers[1].stderr
    assert answers[1].stdout == answers[0].stdout + "False\n"


def test_socket_path_follows_the_daemons_rule(tmp_path: Path) -> None:
    from memoryd.core.config import default_socket_path

    for env in ({"XDG_RUNTIME_DIR": str(tmp_path)}, {}):
        assert ctl.socket_path(None, env) == str(default_socket_path(env))
    env = {"XDG_RUNTIME_DIR": "/run/user/1", "MEMORYD_SOCKET": "/tmp/m.sock"}
    assert ctl.socket_path(None, env) == "/tmp/m.sock"
    assert ctl.socket_path("/tmp/given.sock", env) == "/tmp/given.sock"


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import memoryd

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"memoryctl {memoryd.__version__}\n"


def test_help_lists_every_command_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in _commands():
        assert re.search(rf"^  {command}\b.* \w", out, re.M), command
    assert "examples:" in out and "exit status:" in out and "MEMORYD_SOCKET" in out
    # grouped by what they work on, every command in a group of its own kind
    for title in ("search", "memories", "notes", "entities", "admin"):
        assert f"\n{title} commands:\n" in out, title
    assert "other commands:" not in out


def _commands() -> list[str]:
    sub = next(a for a in ctl.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return list(dict.fromkeys(p.prog.split()[-1] for p in sub.choices.values()))


def test_every_command_and_method_is_documented() -> None:
    from memoryd.serve import methods as api

    usage = (ROOT / "docs" / "memoryctl.md").read_text()
    for command in _commands():
        assert f"`{command}" in usage, f"memoryctl {command} is not in docs/memoryctl.md"
    protocol = (ROOT / "docs" / "protocol.md").read_text()
    called = table_methods()
    assert called <= set(api.METHODS) | FROM_OTHER_BRANCHES, called - set(api.METHODS)
    for method in api.METHODS:
        assert f"### `{method}`" in protocol, f"{method} is not in docs/protocol.md"
    documented = set(re.findall(r"^### `([\w.]+)`", protocol, flags=re.M))
    assert documented <= set(api.METHODS), (
        f"in docs/protocol.md only: {documented - set(api.METHODS)}"
    )
    for code in (-32700, -32600, -32601, -32602, -32603, -32003, -32004, -32005, -32006):
        assert f"`{code}`" in protocol


def _imported_outside_stdlib(modules: set[str]) -> list[str]:
    return sorted(
        m
        for m in modules
        if m.split(".")[0] not in sys.stdlib_module_names
        and m != "memoryd"
        and not m.startswith("memoryd.ctl")
    )


def test_imports_only_the_standard_library() -> None:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memoryd.ctl", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in out.stderr.splitlines()
        if line.startswith("import time:") and "imported package" not in line
    }
    assert "argparse" in imported  # --help is argparse's job
    # site hooks (editable installs, .pth files) run before memoryctl does: not its imports
    before = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "pass"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stderr
    at_startup = {ln.rsplit("|", 1)[1].strip() for ln in before.splitlines() if "|" in ln}
    assert _imported_outside_stdlib(imported - at_startup) == []


def test_a_full_call_imports_only_the_standard_library(short_dir: Path) -> None:
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "from memoryd import ctl\n"
        f"assert ctl.main(['--socket', {str(short_dir / 'none.sock')!r}, 'status']) == 3\n"
        "print('\\n'.join(sorted(set(sys.modules) - before)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0, out.stderr
    new = set(out.stdout.split())
    assert "memoryd.ctl" in new and _imported_outside_stdlib(new) == []
    assert "typing" not in new  # not needed at run time: it would only slow the start


# --- new commands: readable output ---------------------------------------------------------------


def test_notes_links_recent_used_readable(ctl_run: Callable[..., tuple[int, str, str]]) -> None:
    assert ctl_run("note", "read", "a.md")[1] == "# A\n\ntext\n"
    assert ctl_run("note", "write", "a.md", "x")[1] == f"created a.md (sha256 {'cd' * 6})\n"
    assert ctl_run("note", "append", "a.md", "x")[1] == f"appended to a.md (sha256 {'ef' * 6})\n"
    _, out, err = ctl_run("note", "list")
    assert out.splitlines()[0] == "a.md\t9\t2026-11-22T16:40:00Z\tA\t#x"
    assert "(1 shown of 3; next page: --offset 1)" in err
    assert ctl_run("note", "move", "a.md", "b.md")[1] == "moved a.md -> b.md\n"
    assert ctl_run("links", "a.md")[1] == (
        "l.3  [[b#Setup]] -> b.md#Setup\nl.5  [[nowhere|x]] -> (unresolved)\n"
    )
    assert ctl_run("backlinks", "b.md")[1] == "a.md:3  -> #Setup\n"
    assert ctl_run("used", "7")[1] == "recorded a use of #7 (3 in all)\n"
    out = ctl_run("recent")[1].splitlines()
    assert out[0] == "2026-11-22T16:40:00Z\tmemory\t#7 added\ttokens rotate weekly"
    assert "note\tproj/a.md\tAPI" in out[1]


def test_note_write_reads_stdin_or_a_file(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub, tmp_path: Path
) -> None:
    assert ctl_run("note", "write", "a.md", stdin="from stdin\n")[0] == 0
    assert stub.params == {"path": "a.md", "content": "from stdin\n"}
    src = tmp_path / "src.md"
    src.write_text("from a file\n")
    assert ctl_run("note", "append", "a.md", "--file", str(src))[0] == 0
    assert stub.params == {"path": "a.md", "content": "from a file\n"}
    code, _, err = ctl_run("note", "write", "a.md", "x", "--file", str(src))
    assert code == 2 and "not both" in err
    code, _, err = ctl_run("note")
    assert code == 2 and "ACTION" in err


def test_search_sections_and_the_pending_vectors_note(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub
) -> None:
    hit = {
        **CHUNK_HIT,
        "sections": [
            {"heading_path": ["API", "Tokens"], "start_line": 20, "end_line": 30, "score": 0.2}
        ],
    }
    stub.results["search"] = {
        "mode": "keyword",
        "hits": [hit],
        "took_ms": 1.0,
        "pending_vectors": 1200,
    }
    code, out, err = ctl_run("search", "auth")
    assert code == 0 and "    also: API > Tokens  l.20-30" in out
    assert err == (
        "note: keyword results only for now: 1200 text(s) are still being embedded "
        "(`memoryctl status --watch` shows the progress)\n"
    )
    stub.results["search"] = {"mode": "hybrid", "hits": [hit], "took_ms": 1.0, "pending_vectors": 5}
    # vectors answered for the rest: says which part was keywords only (as the MCP tool does)
    assert ctl_run("search", "auth")[2] == (
        "note: 5 text(s) not embedded yet: found by keywords only for now "
        "(`memoryctl status --watch` shows the progress)\n"
    )
    stub.results["search"] = {"mode": "hybrid", "hits": [hit], "took_ms": 1.0}
    assert ctl_run("search", "auth")[2] == ""  # every text has its vector: nothing to say


# --- progress ------------------------------------------------------------------------------------


def _busy_status(steps: list[dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def status(params: dict[str, Any]) -> dict[str, Any]:
        return {**STATUS, **(steps.pop(0) if len(steps) > 1 else steps[0])}

    return status


def test_status_watch_plain_lines_until_idle(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub
) -> None:
    vec = {
        "done": 100,
        "pending": 300,
        "embedding": 8,
        "rate_per_s": 40.0,
        "eta_s": 125,
        "current": "notes/x.md",
        "last_error": None,
    }
    stub.results["status"] = _busy_status(
        [
            {
                "index": {"progress": {"done": 5, "total": 20, "rate_per_s": 92.4, "eta_s": 74}},
                "vectors": vec,
            },
            {
                "index": {"progress": None},
                "vectors": {**vec, "done": 400, "pending": 0, "embedding": 8, "eta_s": 1},
            },
            {
                "index": {"progress": None},
                "vectors": {**vec, "done": 408, "pending": 0, "embedding": 0, "eta_s": 0},
            },
        ]
    )
    code, out, _ = ctl_run("status", "--watch", "--interval", "0.01")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == (
        "index [######------------------]  25.0% 5/20 files  92.4/s  eta 1m14s  "
        "vectors [#####-------------------]  24.5% 100/408  40.0/s  eta 2m05s  notes/x.md"
    )
    assert lines[1].startswith("vectors [#######################-]  98.0% 400/408")
    assert lines[-1] == "idle: vectors 408 done"
    assert "\r" not in out  # not a terminal: plain lines
    # during the first scan, the vectors' time left counts the texts found so far: a floor
    stub.results["status"] = _busy_status(
        [
            {
                "index": {"initial_reconcile_done": False, "progress": {"done": 5, "total": 20}},
                "vectors": vec,
            },
            {"index": {"progress": None}, "vectors": {**vec, "pending": 0, "embedding": 0}},
        ]
    )
    code, out, _ = ctl_run("status", "--watch", "--interval", "0.01")
    assert "40.0/s  eta >2m05s  notes/x.md" in out.splitlines()[0]


@pytest.mark.parametrize(
    ("progress", "said"),
    [
        (
            {"done": 5125, "total": 15173, "eta_s": 121},
            "first scan running (5125/15173 files, eta 2m01s)",
        ),
        ({"done": 0, "total": 0}, "first scan running; "),  # still listing the files
        (None, "first scan running; "),
    ],
)
def test_the_status_line_says_how_far_the_first_scan_is(
    progress: dict[str, Any] | None, said: str
) -> None:
    """`memoryctl status`'s first line during a large first index: how far, and how long still
    (stop 37's walk: "first scan running" alone, three minutes long on 15K notes)."""
    from memoryd.ctl.output import status_summary

    status = {
        **STATUS,
        "index": {"initial_reconcile_done": False, "progress": progress},
        "uptime_s": 56,
    }
    assert said in status_summary(status) + "; "


@pytest.mark.parametrize("columns", [80, 200])
def test_status_watch_on_a_terminal_shows_both_phases_whole(
    ctl_run: Callable[..., tuple[int, str, str]],
    stub: Stub,
    monkeypatch: pytest.MonkeyPatch,
    columns: int,
) -> None:
    """On an 80-column terminal (the default size) the line of a first index is compact (no
    bars, no note name) so the vectors' part shows whole; before, the line was cut at 79
    characters inside the vectors' bar, their counts and ETA never seen."""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setattr("memoryd.ctl.output.fsenv.terminal_columns", lambda fd=1: columns)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.delenv("COLUMNS", raising=False)
    vec = {"done": 33100, "pending": 13962, "embedding": 8, "rate_per_s": 26.7, "eta_s": 5240}
    prog = {"done": 13262, "total": 15175, "rate_per_s": 209.9, "eta_s": 57}
    busy = {"index": {"initial_reconcile_done": False, "progress": prog}, "vectors": vec}
    idle = {"index": {"progress": None}, "vectors": {**vec, "pending": 0, "embedding": 0}}
    stub.results["status"] = _busy_status([busy, idle])
    code, out, _ = ctl_run("status", "--watch", "--interval", "0.01")
    drawn = out.split("\r\033[K")[1]  # the first line drawn
    assert code == 0 and len(drawn) < columns
    assert drawn.endswith("vectors 70.3% 33100/47070  26.7/s  eta >1h27m") == (columns == 80)
    assert ("[####" in drawn) == (columns == 200), drawn


def test_progress_redraws_one_line_on_a_terminal() -> None:
    from memoryd.ctl.output import Progress

    buf = io.StringIO()
    p = Progress(buf, tty=True)
    p.update("a 1/2")
    p.update("a 2/2")
    p.finish("done")
    assert buf.getvalue() == "\r\033[Ka 1/2\r\033[Ka 2/2\r\033[Kdone\n"


def test_reindex_draws_progress_from_status_while_it_runs(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub
) -> None:
    release = threading.Event()
    polled = threading.Event()

    def status(params: dict[str, Any]) -> dict[str, Any]:
        polled.set()
        return {**STATUS, "index": {"progress": {"done": 3, "total": 4, "eta_s": 2}}}

    def reindex(params: dict[str, Any]) -> dict[str, Any]:
        release.wait(10)
        return RESULTS["reindex"]

    stub.results.update(status=status, reindex=reindex)
    threading.Thread(target=lambda: (polled.wait(10), release.set()), daemon=True).start()
    code, out, err = ctl_run("reindex")
    assert code == 0 and out.startswith("indexed 2, unchanged 5")
    assert "reindex [##################------]  75.0% 3/4 files  eta 2s" in err
    assert "status" in [r["method"] for r in stub.requests]
    code, out, err = ctl_run("reindex", "--no-progress")
    assert code == 0 and err == ""


# --- files and trust -----------------------------------------------------------------------------


def test_exports_are_written_owner_only(
    ctl_run: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    old = os.umask(0o022)
    try:
        fresh, existing = tmp_path / "new.jsonl", tmp_path / "old.jsonl"
        existing.write_text("stale")
        os.chmod(existing, 0o644)
        for target in (fresh, existing):
            assert ctl_run("export", "-o", str(target))[0] == 0
            assert os.stat(target).st_mode & 0o777 == 0o600
            assert target.read_text() == '{"content": "a"}\n{"content": "b"}\n'
    finally:
        os.umask(old)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.jsonl", "old.jsonl"]  # no temp


def test_an_export_that_cannot_be_written_keeps_the_old_file(
    ctl_run: Callable[..., tuple[int, str, str]], tmp_path: Path, monkeypatch: Any
) -> None:
    """The export goes to a temporary file renamed over the target: a failure half-way (disk
    full) leaves the previous export whole and no temporary file behind."""

    target = tmp_path / "memories.jsonl"
    target.write_text("previous export\n")

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)  # (ctl/outfile.py's os)
    code, _, err = ctl_run("export", "-o", str(target))
    assert code == 1 and "No space left" in err  # a refused write is 1, as for stdout
    code, out, _ = ctl_run("--json", "export", "-o", str(target))
    assert code == 1 and json.loads(out)["error"]["kind"] == "output"
    assert target.read_text() == "previous export\n"
    assert [p.name for p in tmp_path.iterdir()] == ["memories.jsonl"]


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_during_an_export_leaves_no_temporary(tmp_path: Path, name: str) -> None:
    """SIGTERM or SIGHUP (not only Ctrl-C) while the temporary is open: it is removed, the
    previous file is kept, and the process ends by the signal (130 for Ctrl-C)."""
    target = tmp_path / "memories.jsonl"
    target.write_text("previous export\n")
    script = (
        "import os, signal, sys\n"
        "from memoryd.ctl import outfile\n"
        f"os.fsync = lambda fd: os.kill(os.getpid(), signal.{name})\n"
        "try:\n"
        f"    outfile.write_private({str(target)!r}, 'new\\n' * 1000)\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(130)\n"
    )

    def as_from_a_terminal() -> None:  # a runner started by nohup or `&` ignores them
        for sig in (signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)

    res = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        timeout=60,
        preexec_fn=as_from_a_terminal,
    )
    want = 130 if name == "SIGINT" else -getattr(signal, name)
    assert res.returncode == want, res.stderr
    assert target.read_text() == "previous export\n"
    assert [p.name for p in tmp_path.iterdir()] == ["memories.jsonl"]


def test_a_socket_folder_others_can_write_is_refused(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub, short_dir: Path
) -> None:
    os.chmod(short_dir, 0o777)
    try:
        code, _, err = ctl_run("add", "a secret plan")
    finally:
        os.chmod(short_dir, 0o700)
    assert code == 3 and "refusing the socket folder" in err and "others can write" in err
    assert stub.requests == []  # nothing was sent


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a folder to another uid")
def test_a_socket_folder_of_another_uid_is_refused(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub, short_dir: Path
) -> None:
    os.chown(short_dir, 65534, 65534)
    try:
        code, _, err = ctl_run("add", "a secret plan")
    finally:
        os.chown(short_dir, 0, 0)
    assert code == 3 and "belongs to uid 65534" in err
    assert stub.requests == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to listen as another uid")
def test_a_daemon_running_as_another_uid_is_refused(
    short_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = short_dir / "other.sock"
    # bind as root in our private folder, then become nobody before listen(): SO_PEERCRED then
    # reports nobody, as it would for another user's daemon on a socket we can reach
    code = (
        "import os, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        f"s.bind({str(path)!r})\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "s.listen(1); print('ready', flush=True)\n"
        'c, _ = s.accept(); c.recv(100); c.sendall(b\'{"jsonrpc":"2.0","id":1,"result":{}}\\n\')\n'
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        assert main(["--socket", str(path), "add", "a secret plan"]) == 3
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
    err = capsys.readouterr().err
    assert "runs as uid 65534, not as you (uid 0)" in err


def test_a_hang_up_is_a_clear_message_never_broken_pipe(
    short_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The daemon closes at once (as an evicted or refused connection is): no 'Broken pipe'."""
    path = short_dir / "rude.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)
    answers = [b"", b'{"jsonrpc":"2.0","id":null,"error":{"code":-32003,"message":"too many"}}\n']

    def rude() -> None:
        for answer in answers:
            conn, _ = server.accept()
            conn.sendall(answer)
            conn.close()  # without reading the request

    t = threading.Thread(target=rude)
    t.start()
    try:
        big = "x" * 2_000_000  # more than the socket buffers: the send fails half way
        assert main(["--socket", str(path), "add", big]) == 3
        err = capsys.readouterr().err
        assert "closed the connection without answering add" in err
        assert "Broken pipe" not in err and "Errno" not in err
        assert main(["--socket", str(path), "add", big]) == 1
        assert capsys.readouterr().err == "memoryctl: too many\n"
    finally:
        t.join(5)
        server.close()


def test_a_plain_search_imports_neither_argparse_nor_json_nor_re(stub: Stub) -> None:
    """The fast path: these three cost more than the search itself at 10K chunks."""
    code = (
        "import sys\n"
        "from memoryd import ctl\n"
        f"assert ctl.main(['--socket', {str(stub.path)!r}, 'search', 'auth', '-n', '5']) == 0\n"
        "print(' '.join(m for m in ('argparse', 'json', 're', 'socket') if m in sys.modules),"
        " file=sys.stderr)\n"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-S",
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + code,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == "\n" and "mode hybrid, 2 hit(s)" in out.stdout
    assert stub.params == {"query": "auth", "limit": 5}


@pytest.mark.parametrize(
    "argv",
    [p[0] for p in PARAMS]
    + [
        ["add", "-", "--ttl", "7d", "--tier", "critical"],
        ["update", "7", "--no-expiry", "--json"],
        ["--json", "--timeout", "5", "search", "x", "--include-expired", "--min-importance", "3"],
        ["rm", "1", "2", "3"],
    ],
    ids=lambda v: " ".join(v)[:40],
)
def test_the_fast_parser_agrees_with_argparse(argv: list[str]) -> None:
    from memoryd.ctl.fastparse import fast_parse
    from memoryd.ctl.table import BY_NAME

    slow = vars(ctl.build_parser(ctl.command_name(argv)).parse_args(argv))
    cmd = BY_NAME[ctl.command_name(argv) or ""]
    fast = fast_parse(argv, cmd)
    if cmd.actions:
        assert fast is None  # left to argparse
        return
    assert fast is not None, argv
    assert vars(fast) == {**slow, "command": cmd.name}


def _repeated_options() -> list[list[str]]:
    """A command line per option that may be repeated (action "append"), given twice."""
    from memoryd.ctl.fastparse import _specs
    from memoryd.ctl.table import BY_NAME

    out = []
    for cmd in dict.fromkeys(BY_NAME.values()):
        positionals, options, _ = _specs(cmd)
        if cmd.actions:
            continue
        fill = [("7" if kw.get("type") is int else "x") for _, kw in positionals]
        fill = [w for w, (_, kw) in zip(fill, positionals, strict=True) if kw.get("nargs") != "?"]
        for flag, (_, kw) in options.items():
            if kw.get("action") == "append" and flag.startswith("--"):
                out.append([cmd.name, *fill, flag, "Jordan", flag, "Raj Patel"])
    return out


@pytest.mark.parametrize("argv", _repeated_options(), ids=lambda v: " ".join(v)[:40])
def test_a_repeated_option_keeps_every_value_on_the_fast_path(argv: list[str]) -> None:
    """`search x --entity A --entity B` sent only B from the fast parser (argparse: both), so a
    filter meant for two names found what the last one alone mentions (stop 42, ent18)."""
    from memoryd.ctl.fastparse import fast_parse
    from memoryd.ctl.table import BY_NAME

    slow = vars(ctl.build_parser(ctl.command_name(argv)).parse_args(argv))
    fast = fast_parse(argv, BY_NAME[argv[0]])
    assert fast is not None and vars(fast) == {**slow, "command": argv[0]}
    assert ["Jordan", "Raj Patel"] in slow.values()


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "--help"],
        ["search", "x", "--lim", "3"],
        ["search", "--", "-draft"],
        ["search", "x", "--mode", "nope"],
        ["get", "seven"],
        ["get"],
        ["add", "a", "b"],
        ["update", "7", "--ttl", "1d", "--no-expiry"],
        ["search", "x", "--limit=3"],
        ["list", "--min-importance", "-1"],
    ],
    ids=lambda v: " ".join(v)[:40],
)
def test_the_fast_parser_leaves_the_rest_to_argparse(argv: list[str]) -> None:
    from memoryd.ctl.fastparse import fast_parse
    from memoryd.ctl.table import BY_NAME

    assert fast_parse(argv, BY_NAME[argv[0]]) is None


# --- against a real daemon (only methods that exist on main) -------------------------------------


def test_watch_and_reindex_against_a_real_daemon(daemon_factory: Any) -> None:
    d = daemon_factory()  # keyword only: pending vectors will never be made, so not "busy"
    for i in range(30):
        (d.workspace / f"n{i}.md").write_text(f"# Note {i}\n\nlighthouse {i}\n")
    wait_for(lambda: d.call("status")["counts"]["documents"] == 30, timeout=30)
    done = d.ctl("status", "--watch", "--interval", "0.05")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("idle: vectors 0 done, 30 pending (model none")
    done = d.ctl("reindex", "--full")
    assert done.returncode == 0, done.stderr
    # every file is read again; under load the watcher may still be re-reading a few of them
    # (events of their creation), which the reconcile then finds unchanged
    counts = re.match(r"indexed (\d+), unchanged (\d+),", done.stdout)
    assert counts and int(counts[1]) + int(counts[2]) == 30 and int(counts[1]) > 0, done.stdout
    assert "Traceback" not in done.stderr


def test_the_fast_launcher_runs_without_site(stub: Stub) -> None:
    python = os.path.realpath(sys.executable)
    out = subprocess.run(
        [python, "-S", "-I", str(ROOT / "bin" / "memoryctl"), "--socket", str(stub.path), "ping"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("memoryd 0.1.0 is answering on ")


def test_a_lone_surrogate_in_an_answer_prints_escaped(stub: Stub) -> None:
    stub.results["get"] = {**RECORD, "content": "bad \ud800 text"}
    out = subprocess.run(
        [sys.executable, "-m", "memoryd.ctl", "--socket", str(stub.path), "get", "7"],
        capture_output=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    assert b"bad \\ud800 text" in out.stdout


def test_used_recent_and_notes_against_a_real_daemon(daemon_factory: Any) -> None:
    d = daemon_factory()
    added = d.ctl("--json", "add", "the lighthouse keeper logs the weather")
    mid = json.loads(added.stdout)["id"]
    done = d.ctl("used", str(mid))
    assert (done.returncode, done.stdout) == (0, f"recorded a use of #{mid} (1 in all)\n")
    done = d.ctl("note", "write", "log/today.md", "# Today\n\n- wind from the west\n")
    assert done.returncode == 0 and done.stdout.startswith("created log/today.md (sha256 ")
    sha = json.loads(d.ctl("--json", "note", "read", "log/today.md").stdout)["sha256"]
    done = d.ctl("note", "append", "log/today.md", "- rain\n", "--if-sha256", sha)
    assert done.returncode == 0, done.stderr
    done = d.ctl("note", "append", "log/today.md", "- stale\n", "--if-sha256", sha)
    assert done.returncode == 1 and done.stderr.startswith("memoryctl: ")  # a conflict, said so
    assert d.ctl("note", "read", "log/today.md").stdout.endswith("- rain\n")
    done = d.ctl("note", "move", "log/today.md", "log/2026-11-23.md")
    assert done.stdout == "moved log/today.md -> log/2026-11-23.md\n"
    wait_for(lambda: "log/2026-11-23.md" in d.ctl("note", "list", "log").stdout, timeout=30)
    recent = d.ctl("recent", "-n", "5")
    assert recent.returncode == 0 and f"memory\t#{mid}" in recent.stdout


def test_a_full_listen_backlog_is_retried_not_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EAGAIN from connect (a burst of clients filled the daemon's backlog) is retried until the
    timeout; only when it persists does the client give up, with a message that says why."""
    from memoryd.ctl import client as ctl_client

    path = str(tmp_path / "d.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    real = ctl_client._socket.socket
    refusals = {"left": 3}

    class Busy(real):  # type: ignore[misc, valid-type]
        def connect(self, address: object) -> None:
            if refusals["left"] > 0:
                refusals["left"] -= 1
                raise BlockingIOError(11, "Resource temporarily unavailable")
            super().connect(address)

    monkeypatch.setattr(ctl_client._socket, "socket", Busy)
    sock = ctl_client.Client(path, timeout=5).connect()
    sock.close()
    assert refusals["left"] == 0

    refusals["left"] = 10**6
    with pytest.raises(ctl_client.Unreachable, match="queue of new connections stayed full"):
        ctl_client.Client(path, timeout=0.2).connect()
    server.close()


# Every command and action of the table, as a script would run it with --json (stub results).
JSON_ARGV: dict[str, list[str]] = {
    "add": ["add", "hello"],
    "search": ["search", "auth"],
    "get": ["get", "7"],
    "list": ["list"],
    "update": ["update", "7", "--importance", "8"],
    "delete": ["rm", "4", "5"],
    "stats": ["stats"],
    "status": ["status", "--check"],
    "reindex": ["reindex"],
    "ping": ["ping"],
    "jobs": ["jobs"],
    "jobs list": ["jobs", "list"],
    "jobs run": ["jobs", "run", "expiry"],
    "prune": ["prune", "--dry-run"],
    "session": ["session"],
    "triggers": ["triggers", "deploy"],
    "validate": ["validate", "7"],
    "candidates": ["candidates"],
    "promote": ["promote", "7"],
    "history": ["history", "7"],
    "used": ["used", "7"],
    "recent": ["recent"],
    "checkpoint": ["checkpoint"],
    "checkpoint create": ["checkpoint", "create", "cp"],
    "checkpoint restore": ["checkpoint", "restore", "cp"],
    "checkpoint list": ["checkpoint", "list"],
    "checkpoint delete": ["checkpoint", "delete", "cp"],
    "export": ["export", "-o", "{tmp}/out.jsonl"],
    "import": ["import", "{tmp}/in.jsonl"],
    "note": ["note", "read", "a.md"],
    "note read": ["note", "read", "a.md"],
    "note write": ["note", "write", "a.md", "text"],
    "note append": ["note", "append", "a.md", "text"],
    "note list": ["note", "list"],
    "note move": ["note", "move", "a.md", "b.md"],
    "links": ["links", "a.md"],
    "backlinks": ["backlinks", "b.md"],
    "entity": ["entity", "Caroline"],
    "entities": ["entities"],
    "related": ["related", "Caroline"],
}
NOT_IN_JSON_ARGV = {"open"}  # needs a web page's state file: tests/test_web.py runs it


def test_every_command_with_json_prints_one_json_document_and_nothing_else(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub, tmp_path: Path
) -> None:
    """`memoryctl --json COMMAND | jq` reads JSON from every command: one document on stdout
    (also when the command writes a file), nothing on stderr; the table's commands and
    actions are all here."""
    from memoryd.ctl.table import COMMANDS

    named = {c.name for c in COMMANDS} | {f"{c.name} {a.name}" for c in COMMANDS for a in c.actions}
    assert named - NOT_IN_JSON_ARGV == set(JSON_ARGV)
    (tmp_path / "in.jsonl").write_text('{"content": "a"}\n')
    for name, argv in JSON_ARGV.items():
        args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
        code, out, err = ctl_run("--json", *args)
        assert err == "", (name, err)
        assert isinstance(json.loads(out), dict | list), name
        assert code in (0, 1), (name, code)


def test_the_commands_that_exit_1_on_nothing_found_are_the_ones_the_docs_name() -> None:
    """The listings whose empty answer exits 1 (the table's `found`) are the ones named in
    --help, in docs/memoryctl.md's exit-status table, and no others."""
    from memoryd.ctl.parser import EPILOG
    from memoryd.ctl.table import COMMANDS

    rows = [(c.name, c) for c in COMMANDS]
    rows += [(f"{c.name} {a.name}", a) for c in COMMANDS for a in c.actions]
    listings = {name for name, r in rows if r.found is not None}
    docs = (ROOT / "docs" / "memoryctl.md").read_text()
    row = next(line for line in docs.splitlines() if line.startswith("| 1 | nothing found:"))
    named = set(re.findall(r"`([a-z ]+)`", row.split("answered with no items")[0]))
    assert named == listings
    helped = EPILOG.split("nothing found (")[1].split(")")[0]
    assert {n.strip() for n in " ".join(helped.split()).split(",")} == listings


def test_the_pages_memoryctl_open_takes_are_the_ones_the_docs_name() -> None:
    from memoryd.ctl.webopen import PAGES

    docs = (ROOT / "docs" / "memoryctl.md").read_text()
    row = next(line for line in docs.splitlines() if line.startswith("| `open [PAGE]"))
    named = re.findall(r"`(\w+)`", row.split("PAGE is ")[1].split(", NOTE")[0])
    assert sorted(named) == sorted(PAGES)


LATIN1 = "caf\udce9 na\udcefve"  # what Python makes of b"caf\xe9 na\xefve" (Latin-1) in argv


@pytest.mark.parametrize(
    ("argv", "via", "param"),
    [
        (["add", LATIN1], "argv", "content"),
        (["add", "-"], "stdin", "content"),
        (["triggers", LATIN1], "argv", "prompt"),
        (["triggers", "-"], "stdin", "prompt"),
        (["search", LATIN1], "argv", "query"),
        (["note", "write", "a.md"], "stdin", "content"),
        (["note", "append", "a.md"], "stdin", "content"),
        (["note", "write", "a.md", "--file", "{file}"], "file", "content"),
        (["note", "append", "a.md", "--file", "{file}"], "file", "content"),
        (["note", "write", "a.md", LATIN1], "argv", "content"),
    ],
)
def test_text_that_is_not_utf8_is_read_as_the_daemon_reads_a_note(
    ctl_run: Callable[..., tuple[int, str, str]],
    stub: Stub,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    via: str,
    param: str,
) -> None:
    """Latin-1 text given to memoryctl, as an argument, on stdin (strict UTF-8, as in an
    en_US.UTF-8 locale) or in a --file, is sent as the text it is (`café naïve`): it was a
    traceback (stdin), a 'lone surrogate' refusal (arguments) or 'cannot read' (--file)."""
    data = "café naïve\n".encode("latin-1")
    (tmp_path / "in.txt").write_bytes(data)
    stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdin", stdin)
    code, _, err = ctl_run(*(a.replace("{file}", str(tmp_path / "in.txt")) for a in argv))
    assert code in (0, 1), err
    assert stub.params[param].rstrip("\n") == "café naïve"


def test_a_json_lines_file_that_is_not_utf8_is_a_usage_error(
    ctl_run: Callable[..., tuple[int, str, str]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    (tmp_path / "in.jsonl").write_bytes(b'{"content": "caf\xe9"}\n')
    code, _, err = ctl_run("import", str(tmp_path / "in.jsonl"))
    assert code == 2 and err.endswith("in.jsonl: not UTF-8 (byte 0xe9 at offset 16)\n")
    stdin = io.TextIOWrapper(io.BytesIO(b"\xff\n"), encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdin", stdin)
    code, _, err = ctl_run("import", "-")
    assert code == 2 and err == "memoryctl: cannot read stdin: not UTF-8 (byte 0xff at offset 0)\n"


@pytest.mark.parametrize(
    "data",
    [
        b"plain",
        b"caf\xe9",
        b"\x93quoted\x94 \xc3\xa9t\xc3\xa9",
        b"\x81\x8d\x8f\x90\x9d",
        b"x\xff\xfe\xc3",
    ],
)
def test_memoryctl_reads_bytes_that_are_not_utf8_as_the_daemon_does(data: bytes) -> None:
    """ctl/textin.py is the standard-library copy of text/decoding.py's rule."""
    from memoryd.ctl.textin import decode_utf8, repair
    from memoryd.text.decoding import decode

    assert decode_utf8(data) == decode(data)[0]
    assert repair(data.decode("utf-8", "surrogateescape")) == decode(data)[0]


# every option memoryctl reads as a number or a time: a value that is no finite number (inf,
# nan, 1e400) went out as JSON's non-standard Infinity/NaN, which the daemon cannot parse
# ("parse error", exit 1); it is a usage error naming the option, and nothing is sent
NUMBER_OPTIONS = [
    ["search", "q", "--since"],
    ["search", "q", "--until"],
    ["list", "--since"],
    ["list", "--until"],
    ["recent", "--since"],
    ["entities", "--since"],
    ["add", "text", "--confidence"],
    ["status", "--watch", "--interval"],
]


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e400", "infd"])
@pytest.mark.parametrize("argv", NUMBER_OPTIONS, ids=lambda a: " ".join(a))
def test_a_number_that_is_not_finite_is_a_usage_error_naming_the_option(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub, argv: list[str], value: str
) -> None:
    code, _, err = (
        ctl_run(*argv, value)
        if not value.startswith("-")
        else ctl_run(*argv[:-1], f"{argv[-1]}={value}")
    )
    assert code == 2 and argv[-1] in err, err
    assert stub.requests == []  # nothing was sent


def test_an_expiry_that_is_no_finite_number_is_sent_as_text(
    ctl_run: Callable[..., tuple[int, str, str]], stub: Stub
) -> None:
    """--expires is the daemon's to check (its grammar names expires_at): sent as text, never
    as JSON's Infinity."""
    ctl_run("add", "text", "--expires", "inf")
    assert stub.requests[-1]["params"]["expires_at"] == "inf"
