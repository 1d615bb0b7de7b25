"""End to end: `memoryd run` as a subprocess, a real socket, memoryctl as users run it."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import rpc, wait_for

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def hits(d: Any, query: str, **params: Any) -> list[dict[str, Any]]:
    return d.call("search", {"query": query, **params})["hits"]


def ctl_search_paths(d: Any, query: str) -> list[str]:
    out = d.ctl("--json", "search", query)
    paths = [h.get("path") for h in json.loads(out.stdout)["hits"]]
    assert out.returncode == (0 if paths else 1), out.stderr  # nothing found: 1, as grep
    return paths


def test_note_saved_is_found_and_changes_follow(daemon_factory: Any) -> None:
    """Saved, edited, moved: found through the watcher. The "within 2 s" target is measured by
    `python -m bench` (save to searchable) and `python -m bench bursts`, not on a busy CI."""
    d = daemon_factory()
    ws = d.workspace
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"])
    (ws / "ideas.md").write_text("# Ideas\n\nA lighthouse keeper's notebook\n")
    wait_for(lambda: ctl_search_paths(d, "lighthouse") == ["ideas.md"], timeout=10)
    (ws / "ideas.md").write_text("# Ideas\n\nA windmill keeper's notebook\n")
    wait_for(lambda: ctl_search_paths(d, "windmill") == ["ideas.md"], timeout=5)
    assert ctl_search_paths(d, "lighthouse") == []
    (ws / "archive").mkdir()
    (ws / "ideas.md").rename(ws / "archive" / "ideas.md")
    wait_for(lambda: ctl_search_paths(d, "windmill") == ["archive/ideas.md"], timeout=5)
    (ws / "archive" / "ideas.md").unlink()
    wait_for(lambda: ctl_search_paths(d, "windmill") == [], timeout=5)
    assert d.stop() == 0


def test_edits_while_stopped_are_picked_up_and_unchanged_saves_index_nothing(
    daemon_factory: Any,
) -> None:
    d = daemon_factory()
    ws = d.workspace
    (ws / "keep.md").write_text("# Keep\n\nunchanged walrus\n")
    (ws / "edit.md").write_text("# Edit\n\nold pelican\n")
    (ws / "gone.md").write_text("# Gone\n\nvanishing dodo\n")
    wait_for(lambda: d.call("status")["counts"]["documents"] == 3)
    assert d.stop() == 0
    (ws / "edit.md").write_text("# Edit\n\nnew albatross\n")
    (ws / "gone.md").unlink()
    (ws / "new.md").write_text("# New\n\nfresh narwhal\n")
    d2 = daemon_factory()
    wait_for(lambda: d2.call("status")["index"]["initial_reconcile_done"])
    assert [h["path"] for h in hits(d2, "albatross")] == ["edit.md"]
    assert hits(d2, "pelican") == [] and hits(d2, "dodo") == []
    assert [h["path"] for h in hits(d2, "narwhal")] == ["new.md"]
    st = d2.call("status")["index"]
    assert st["files_indexed"] == 2  # edit.md and new.md; keep.md untouched
    # a save without change: the watcher sees it, the hash says nothing to do
    (ws / "keep.md").write_text((ws / "keep.md").read_text())
    wait_for(lambda: d2.call("status")["index"]["files_unchanged"] > st["files_unchanged"])
    assert d2.call("status")["index"]["files_indexed"] == 2


def test_memories_through_memoryctl(daemon_factory: Any) -> None:
    d = daemon_factory()
    out = d.ctl(
        "add",
        "The deploy key lives in the team vault",
        "--tags",
        "ops,deploy",
        "--type",
        "decision",
        "--importance",
        "8",
    )
    assert out.returncode == 0, out.stderr
    out = d.ctl("--json", "add", "The deploy key lives in the team vault")
    assert json.loads(out.stdout)["duplicate"] is True
    out = d.ctl("search", "vault")
    assert out.returncode == 0 and "deploy key" in out.stdout
    out = d.ctl("add", "")
    assert out.returncode == 2 and "empty" in out.stderr  # refused by the daemon: usage
    out = d.ctl("add", "x", "--importance", "11")
    assert out.returncode == 2 and "importance" in out.stderr
    assert d.ctl("get", "999999").returncode == 1


def test_malformed_requests_never_kill_the_daemon(daemon_factory: Any) -> None:
    # the request limit is max(max_request_bytes, 2 * notes.max_bytes + 16 KiB) = 18,432 here
    d = daemon_factory(server={"max_request_bytes": 4096}, notes={"max_bytes": 1024})
    bad = [
        b"{not json",
        b"[]",
        b"42",
        b'{"jsonrpc":"2.0"}',
        b'{"jsonrpc":"2.0","id":1}',
        b'{"jsonrpc":"2.0","id":1,"method":"nope"}',
        b'{"jsonrpc":"2.0","id":1,"method":"add","params":[1]}',
        b'{"jsonrpc":"2.0","id":1,"method":"add","params":{"content":5}}',
        b'{"jsonrpc":"2.0","id":1,"method":"search","params":{"query":"x","limit":"a"}}',
        b'{"jsonrpc":"2.0","id":{},"method":"ping"}',
        b"\xff\xfe\x00garbage",
        b'{"jsonrpc":"2.0","id":1,"method":"search","params":{"query":"\\"(","bogus":1}}',
    ]
    errors = 0
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(d.socket))
        s.settimeout(10)
        f = s.makefile("rwb")
        for i in range(1000):
            f.write(bad[i % len(bad)] + b"\n")
            f.flush()
            resp = json.loads(f.readline())
            assert "error" in resp and resp["error"]["message"]
            errors += 1
        # the same connection still answers a good request
        f.write(b'{"jsonrpc":"2.0","id":7,"method":"ping"}\n')
        f.flush()
        assert json.loads(f.readline())["result"]["pong"] is True
    assert errors == 1000
    # oversized: an error, then the daemon still serves others
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(d.socket))
        s.settimeout(10)
        s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"add","params":{"content":"' + b"a" * 20000)
        resp = json.loads(s.makefile("rb").readline())
        assert "larger than 18432" in resp["error"]["message"]
        assert resp["error"]["code"] == -32005  # too large, as docs/protocol.md says
        assert resp["id"] == 1  # the id the line starts with, though the line was not read
    # a string id too, and a line that names no id before its end answers id null
    for head, want in ((b'{"id":"big-1","method":"add",', "big-1"), (b'{"method":"add",', None)):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(d.socket))
            s.settimeout(10)
            s.sendall(head + b'"params":{"content":"' + b"a" * 20000 + b'"}}\n')
            resp = json.loads(s.makefile("rb").readline())
            assert resp["error"]["code"] == -32005 and resp["id"] == want
    assert rpc(d.socket, "ping")["result"]["pong"] is True


def test_socket_is_private_and_shutdown_is_clean(daemon_factory: Any, backend: str) -> None:
    d = daemon_factory()
    assert stat.S_IMODE(os.stat(d.socket).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(d.socket.parent).st_mode) == 0o700
    if backend == "sqlite":  # on PostgreSQL there is no database file
        db = Path(d.cfg["data_dir"]) / "memoryd.db"
        assert stat.S_IMODE(os.stat(db).st_mode) == 0o600
    code = d.stop(signal.SIGINT)
    assert code == 0, d.log()[-4000:]
    assert not d.socket.exists()
    assert "stopped" in d.log()


def test_second_daemon_refuses_and_stale_socket_is_replaced(daemon_factory: Any) -> None:
    d = daemon_factory()
    second = subprocess.run(
        [sys.executable, "-m", "memoryd", "run", "--config", str(d.config_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=d.env,
    )
    assert second.returncode == 1
    assert "already" in second.stderr
    d.stop(signal.SIGKILL)  # a crash leaves the socket file behind
    assert d.socket.exists()
    d2 = daemon_factory()
    assert d2.call("ping")["pong"] is True


def test_config_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[search]\nrrf_k = "sixty"\n')
    out = subprocess.run(
        [sys.executable, "-m", "memoryd", "run", "--config", str(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "search.rrf_k" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_memoryctl_unreachable_exits_3(short_dir: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "memoryd.ctl", "--socket", str(short_dir / "none.sock"), "status"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 3
    assert "memoryd run" in out.stderr


def test_notify_ready_status_stopping_in_order(daemon_factory: Any, short_dir: Path) -> None:
    path = short_dir / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(20)  # READY comes, or recv() raises: the deadline
    d = daemon_factory(wait=False, extra_env={"NOTIFY_SOCKET": str(path)})
    messages: list[str] = []
    while not any("READY=1" in m for m in messages):
        messages.append(sock.recv(4096).decode())
    assert rpc(d.socket, "ping")["result"]["pong"] is True  # READY means queries are answered
    d.stop()
    sock.settimeout(5)
    try:
        while not any("STOPPING=1" in m for m in messages):
            messages.append(sock.recv(4096).decode())
    finally:
        sock.close()
    ready = next(i for i, m in enumerate(messages) if "READY=1" in m)
    status = [i for i, m in enumerate(messages) if "STATUS=" in m]
    stopping = next(i for i, m in enumerate(messages) if "STOPPING=1" in m)
    assert status and ready < stopping and max(status) < stopping


def test_sighup_changes_log_level(daemon_factory: Any) -> None:
    d = daemon_factory(logging={"level": "warning", "format": "json"})
    d.call("add", {"content": "before reload"})
    assert '"added"' not in d.log()
    text = d.config_path.read_text().replace('level = "warning"', 'level = "info"')
    d.config_path.write_text(text)
    assert d.proc is not None
    d.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "configuration reloaded" in d.log())
    d.call("add", {"content": "after reload"})
    wait_for(lambda: '"added"' in d.log())


def test_socket_activation_serves_the_inherited_socket(
    daemon_factory: Any, short_dir: Path, tmp_path: Path
) -> None:
    d = daemon_factory(wait=False)  # only to get a config file; stop it and reuse its config
    wait_for(d.answers, timeout=30)
    d.stop()
    path = short_dir / "activated.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    launcher = (
        "import os, sys; os.environ['LISTEN_PID'] = str(os.getpid()); "
        "os.environ['LISTEN_FDS'] = '1'; "
        "os.execv(sys.executable,"
        " [sys.executable, '-m', 'memoryd', 'run', '--config', sys.argv[1]])"
    )
    fd = listener.fileno()
    log = tmp_path / "activated.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", launcher, str(d.config_path)],
            pass_fds=(3,),
            preexec_fn=lambda: os.dup2(fd, 3),
            stdout=out,
            stderr=subprocess.STDOUT,
            env=d.env,
        )
    try:

        def pong() -> bool:
            try:
                return rpc(path, "ping", timeout=2)["result"]["pong"] is True
            except OSError:
                return False

        wait_for(pong, timeout=30)
        assert not d.socket.exists()  # it did not bind its own socket
        # status and the log name the socket it serves on, not the config's unused one
        assert rpc(path, "status")["result"]["socket"] == str(path)
        assert f'"socket": "{path}", "event": "ready"' in log.read_text()
        proc.send_signal(signal.SIGHUP)  # and a reload does not call that a change
        wait_for(lambda: "configuration reloaded" in log.read_text())
        assert "only after a restart" not in log.read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        listener.close()
    assert proc.returncode == 0


@pytest.mark.model
def test_offline_model_answers_by_meaning_end_to_end(daemon_factory: Any) -> None:
    d = daemon_factory(model=True)
    if d.call("status")["model"]["state"] == "none":
        pytest.skip("offline model not installed")
    d.call("add", {"content": "the user prefers dark mode in the editor"})
    d.call("add", {"content": "lunch is at noon on fridays"})
    wait_for(lambda: d.call("status")["vectors"]["pending"] == 0, timeout=60)
    wait_for(
        lambda: d.call("search", {"query": "dark theme preference"})["mode"] != "keyword",
        timeout=30,
    )
    res = d.call("search", {"query": "which colour scheme do they like?"})
    assert res["hits"][0]["content"] == "the user prefers dark mode in the editor"


def test_a_daemon_stopped_as_it_starts_exits_cleanly(daemon_factory: Any) -> None:
    """A stop that came while start-up was still starting its threads: the workspace guard's
    thread was joined before it had started (RuntimeError, exit 1), and start-up could start the
    watcher after close had stopped it. Stopped the moment it answers, a daemon exits 0."""
    for _ in range(3):
        d = daemon_factory()
        code = d.stop(signal.SIGINT)
        assert code == 0, d.log()[-4000:]
