"""memoryctl against a stub JSON-RPC server on a real socket (the daemon is covered end to end
in test_daemon.py)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from memoryd.ctl import main


class Stub:
    """Answers every request with a canned result (or error) and records it."""

    def __init__(self, path: Path, results: dict[str, Any]) -> None:
        self.requests: list[dict[str, Any]] = []
        self.results = results
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(8)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn, conn.makefile("rwb") as f:
                req = json.loads(f.readline())
                self.requests.append(req)
                res = self.results.get(req["method"], {})
                if isinstance(res, Exception):
                    body = {
                        "jsonrpc": "2.0",
                        "id": req["id"],
                        "error": {"code": -32004, "message": str(res)},
                    }
                else:
                    body = {"jsonrpc": "2.0", "id": req["id"], "result": res}
                f.write(json.dumps(body).encode() + b"\n")
                f.flush()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def stub(short_dir: Path):
    hit = {
        "id": 3,
        "kind": "chunk",
        "score": 0.5,
        "snippet": "the **auth** note",
        "content": "the auth note",
        "type": "note",
        "tags": [],
        "path": "a.md",
        "heading_path": ["A"],
        "start_line": 1,
        "end_line": 4,
    }
    s = Stub(
        short_dir / "stub.sock",
        {
            "add": {"id": 7, "duplicate": False, "memory": {}},
            "search": {"mode": "hybrid", "hits": [hit], "took_ms": 1.2, "query": "auth"},
            "get": LookupError("no entry with id 99"),
            "status": {
                "version": "0",
                "drift": {
                    "total": 2,
                    "stale": ["a.md"],
                    "missing_on_disk": ["b.md"],
                    "files_missing_from_index": [],
                    "orphan_chunks": 0,
                },
            },
            "ping": {"pong": True, "version": "0"},
        },
    )
    yield s
    s.close()


def run(stub: Stub, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["--socket", str(stub.sock.getsockname()), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_add_builds_params(stub: Stub, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        stub,
        "add",
        "hello",
        "--tags",
        "a, b",
        "--importance",
        "7",
        "--ttl",
        "7d",
        "--type",
        "decision",
        capsys=capsys,
    )
    assert code == 0 and out.strip() == "added 7"
    assert stub.requests[-1]["params"] == {
        "content": "hello",
        "tags": ["a", "b"],
        "importance": 7,
        "ttl": "7d",
        "type": "decision",
    }


def test_search_readable_and_json(stub: Stub, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        stub, "search", "auth", "-n", "3", "--mode", "keyword", "--path", "proj", capsys=capsys
    )
    assert code == 0 and "mode hybrid" in out and "a.md:1-4" in out and "**auth**" in out
    assert stub.requests[-1]["params"] == {
        "query": "auth",
        "limit": 3,
        "mode": "keyword",
        "path": "proj",
    }
    code, out, _ = run(stub, "--json", "search", "auth", capsys=capsys)
    assert json.loads(out)["hits"][0]["id"] == 3


def test_errors_and_drift_exit_1(stub: Stub, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(stub, "get", "99", capsys=capsys)
    assert code == 1 and err.strip() == "memoryctl: no entry with id 99"
    code, out, _ = run(stub, "status", "--check", capsys=capsys)
    assert code == 1 and "stale: a.md" in out and stub.requests[-1]["params"] == {"check": True}


def test_usage_errors_exit_2(stub: Stub) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["add"])
    assert exc.value.code == 2


def test_unreachable_exits_3(short_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--socket", str(short_dir / "nope.sock"), "ping"]) == 3
    assert "no socket at" in capsys.readouterr().err
    stale = short_dir / "stale.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(stale))
    s.close()  # a socket file nobody listens on
    assert main(["--socket", str(stale), "ping"]) == 3
    assert "stale socket" in capsys.readouterr().err


def test_stdin_and_env_socket(stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"MEMORYD_SOCKET": str(stub.sock.getsockname()), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-m", "memoryd.ctl", "add", "-"],
        input="from stdin\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert stub.requests[-1]["params"]["content"] == "from stdin\n"


def test_imports_only_the_standard_library() -> None:
    code = (
        "import sys; before = set(sys.modules); import memoryd.ctl; "
        "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
        "print(sorted(new - set(sys.stdlib_module_names) - {'memoryd'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
