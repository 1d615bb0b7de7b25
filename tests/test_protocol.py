"""The socket and the protocol (issue 10): hostile requests, idle connections, the socket folder."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from conftest import rpc, wait_for

from memoryd.core.errors import AlreadyRunning
from memoryd.serve import protocol
from memoryd.serve.server import bind_socket, prepare_socket_path

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

ROOT = os.geteuid() == 0
NOBODY = 65534


def exchange(sock_path: Path, lines: list[bytes], timeout: float = 10) -> list[Any]:
    """Send lines on one connection; one parsed answer per line."""
    out = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(sock_path))
        f = s.makefile("rwb")
        for line in lines:
            f.write(line + b"\n")
            f.flush()
            out.append(json.loads(f.readline()))
    return out


def req(method: str, params: Any = None, req_id: Any = 1) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": req_id, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode()


# --- pure decoding -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"[" * 100_000 + b"]" * 100_000, -32600),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"add","params":' + b'{"a":' * 40 + b"1" + b"}" * 41,
            -32600,
        ),
        (b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":"p\\udfffing"}', -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":"search","params":{"q\\udc00":1}}', -32602),
        (b'{"jsonrpc":"2.0","id":1,"method":"add","params":{"content":"a\\ud83d"}}', -32602),
        (b'{"jsonrpc":"2.0","id":1,"method":"get","params":{"id":9223372036854775808}}', -32602),
        (b'{"jsonrpc":"2.0","id":1,"method":"get","params":{"id":-9223372036854775809}}', -32602),
        (b'{"jsonrpc":"2.0","id":1,"method":"get","params":{"id":' + b"9" * 5000 + b"}}", -32700),
        (b'{"jsonrpc":"2.0","id":1,"method":"add","params":{"ttl":1e999}}', -32700),
        (b'{"jsonrpc":"2.0","id":1,"method":"add","params":{"ttl":NaN}}', -32700),
        (b"\xff\xfe{}", -32700),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping",', -32700),
    ],
)
def test_decode_refuses_with_the_right_code(line: bytes, code: int) -> None:
    with pytest.raises(protocol.ProtocolError) as info:
        protocol.decode(line)
    assert info.value.code == code
    json.dumps(info.value.response(), ensure_ascii=False).encode()  # answerable as UTF-8


def test_decode_accepts_ordinary_requests_and_escaped_text() -> None:
    msg = protocol.decode(
        b'{"jsonrpc":"2.0","id":1,"method":"add","params":{"content":"\\ud83d\\ude00 \\\\ud800",'
        b'"importance":9223372036854775807,"tags":[["a"]]}}'
    )
    assert msg["params"]["content"] == "😀 \\ud800"


def test_encode_never_fails_on_a_lone_surrogate() -> None:
    line = protocol.encode({"jsonrpc": "2.0", "id": 1, "result": {"content": "a\ud800"}})
    assert json.loads(line)["result"]["content"] == "a\ud800"


# --- against a real daemon ---------------------------------------------------------------------


def test_hostile_requests_all_get_an_answer_and_the_daemon_stays_up(daemon_factory: Any) -> None:
    d = daemon_factory()
    lines = [
        b"[" * 5000 + b"]" * 5000,
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
        b'{"jsonrpc":"2.0","id":1,"method":"search","params":{"q\\udc00":1}}',
        b'{"jsonrpc":"2.0","id":1,"method":"add","params":{"content":"x\\udc00"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"delete","params":{"id":18446744073709551616}}',
        b'{"jsonrpc":"2.0","id":1,"method":"list","params":{"limit":9223372036854775808}}',
        b'{"jsonrpc":"2.0","id":1,"method":"add","params":{"content":"a","ttl":1e400}}',
    ]
    answers = exchange(d.socket, [*lines, req("ping")])
    codes = [a["error"]["code"] for a in answers[:-1]]
    assert codes == [-32600, -32600, -32602, -32602, -32602, -32602, -32700]
    assert answers[-1]["result"]["pong"] is True
    assert d.proc.poll() is None


def test_a_batch_over_the_limit_gets_one_error_never_a_silent_cut(daemon_factory: Any) -> None:
    d = daemon_factory()
    big = b"[" + b",".join(req("ping", req_id=i) for i in range(150)) + b"]"
    ok = b"[" + b",".join(req("ping", req_id=i) for i in range(100)) + b"]"
    too_big, fine = exchange(d.socket, [big, ok])
    assert isinstance(too_big, dict)
    assert too_big["error"]["code"] == -32600
    assert "150" in too_big["error"]["message"] and "100" in too_big["error"]["message"]
    assert sorted(a["id"] for a in fine) == list(range(100))


def test_idle_connections_cannot_lock_others_out(daemon_factory: Any) -> None:
    d = daemon_factory(server={"max_connections": 64, "first_request_timeout_s": 60})
    idle = []
    try:
        for _ in range(200):  # three times the limit, all silent
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(d.socket))
            idle.append(s)
        # it used to wait for a free slot until an idle connection's first-request timeout
        # (60 s here): the ping's deadline is half that (measured about 0.1 s)
        done = subprocess.run(
            [sys.executable, "-m", "memoryd.ctl", "--socket", str(d.socket), "ping"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        # the oldest idle ones were closed with a reason
        idle[0].settimeout(5)
        notice = idle[0].makefile("rb").readline()
        assert json.loads(notice)["error"]["code"] == -32003
    finally:
        for s in idle:
            s.close()


def test_a_silent_connection_is_closed_after_the_first_request_timeout(
    daemon_factory: Any,
) -> None:
    d = daemon_factory(server={"first_request_timeout_s": 0.3, "idle_timeout_s": 300})
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.connect(str(d.socket))
        silent.settimeout(10)  # closed after 0.3 s, long before the idle timeout (300 s)
        assert silent.recv(10) == b""
    # one that has sent a request keeps the long idle timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as chatty:
        chatty.connect(str(d.socket))
        chatty.settimeout(10)
        f = chatty.makefile("rwb")
        f.write(req("ping") + b"\n")
        f.flush()
        assert json.loads(f.readline())["result"]["pong"]
        time.sleep(0.8)  # waits on purpose: longer than first_request_timeout_s
        f.write(req("ping") + b"\n")
        f.flush()
        assert json.loads(f.readline())["result"]["pong"]


def test_an_unexpected_exception_is_answered_logged_and_survived(
    make_app: Any, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.serve import methods as api
    from memoryd.serve.server import Server

    def boom(app: Any, params: dict[str, Any]) -> Any:
        raise RuntimeError("kaboom")

    monkeypatch.setitem(api.METHODS, "boom", api.Method(boom, frozenset()))
    app = make_app()
    path = short_dir / "t.sock"

    async def main() -> list[Any]:
        server = Server(app, app.cfg.server, path)
        await server.start()
        try:
            reader, writer = await asyncio.open_unix_connection(str(path))
            answers = []
            for line in (req("boom"), req("ping")):
                writer.write(line + b"\n")
                await writer.drain()
                answers.append(json.loads(await reader.readline()))
            writer.close()
            return answers
        finally:
            await server.close()

    boom_answer, ping = asyncio.run(main())
    assert boom_answer["error"]["code"] == -32603
    assert "kaboom" in boom_answer["error"]["message"]
    assert ping["result"]["pong"] is True


@contextlib.asynccontextmanager
async def slow_reader(app: Any, path: Path) -> AsyncIterator[tuple[Any, socket.socket]]:
    """A Server on `path` and a connected client with a tiny receive buffer, which reads only
    when the test reads (so an answer it has not read stays in the server's write buffer)."""
    from memoryd.serve.server import Server

    server = Server(app, app.cfg.server, path)
    await server.start()
    client = socket.socket(socket.AF_UNIX)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.setblocking(False)
    try:
        await asyncio.get_running_loop().sock_connect(client, str(path))
        yield server, client
    finally:
        client.close()


async def until_buffered(server: Any) -> None:
    """Until one of the server's connections holds unsent bytes."""
    deadline = time.monotonic() + 30
    while not any(t.get_write_buffer_size() for t in list(server._streams.open)):
        assert time.monotonic() < deadline, "the server never buffered an answer"
        await asyncio.sleep(0.01)


@pytest.mark.sqlite_only("the socket's shutdown never reaches the store")
def test_shutdown_closes_a_connection_that_stopped_reading(make_app: Any, short_dir: Path) -> None:
    """A client that sends requests and never reads the answers leaves them half-sent in the
    server's buffer. Shutdown still closes that connection, promptly: before, the handler's
    close waited for bytes the client would never take, and so did the daemon's stop."""
    app = make_app(model=None)

    async def main() -> float:
        loop = asyncio.get_running_loop()
        async with slow_reader(app, short_dir / "t.sock") as (server, client):
            asks = (req("ping") + b"\n") * 50_000
            with contextlib.suppress(TimeoutError):  # until the server stops reading
                await asyncio.wait_for(loop.sock_sendall(client, asks), 3)
            await until_buffered(server)
            started = time.monotonic()
            await asyncio.wait_for(server.close(), 30)
            assert not server._streams.open
            return time.monotonic() - started

    took = asyncio.run(main())
    assert took < app.cfg.server.shutdown_timeout_s + 5


@pytest.mark.sqlite_only("the socket's shutdown never reaches the store")
def test_shutdown_lets_an_answer_being_read_finish(make_app: Any, short_dir: Path) -> None:
    """The other side of closing what a client does not read: an answer a client IS reading
    when the daemon stops still arrives whole."""
    app = make_app(model=None)
    text = "# big\n\n" + "a line of the note that is long enough to count\n" * 20_000
    (app.cfg.workspace / "big.md").write_text(text)

    async def main() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        async with slow_reader(app, short_dir / "t.sock") as (server, client):
            await loop.sock_sendall(client, req("note.read", {"path": "big.md"}) + b"\n")
            await until_buffered(server)
            closing = asyncio.create_task(server.close())
            data = b""
            while not data.endswith(b"\n"):
                chunk = await asyncio.wait_for(loop.sock_recv(client, 1 << 16), 10)
                assert chunk, f"the answer was cut at {len(data)} bytes"
                data += chunk
            await asyncio.wait_for(closing, 30)
            return dict(json.loads(data))

    answer = asyncio.run(main())
    assert answer["result"]["content"] == text


# --- the socket folder -------------------------------------------------------------------------


def test_a_missing_socket_folder_is_created_private(short_dir: Path) -> None:
    path = short_dir / "new" / "s.sock"
    sock = bind_socket(path)
    sock.close()
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_folder_others_can_write_is_refused_and_never_chmodded(short_dir: Path) -> None:
    shared = short_dir / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # like /tmp
    with pytest.raises(AlreadyRunning, match="written by others"):
        prepare_socket_path(shared / "s.sock")
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o1777
    os.chmod(shared, 0o775)
    with pytest.raises(AlreadyRunning, match="written by others"):
        prepare_socket_path(shared / "s.sock")
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o775


def test_a_symlinked_socket_folder_is_refused(short_dir: Path) -> None:
    real = short_dir / "real"
    real.mkdir(mode=0o700)
    (short_dir / "link").symlink_to(real)
    with pytest.raises(AlreadyRunning, match=f"is a symlink \\(to {real}\\).* in the folder"):
        prepare_socket_path(short_dir / "link" / "s.sock")
    (short_dir / "file").write_text("")
    with pytest.raises(AlreadyRunning, match="is not a folder"):
        prepare_socket_path(short_dir / "file" / "s.sock")


@pytest.mark.skipif(not ROOT, reason="needs root to make a folder another uid owns")
def test_a_folder_another_user_made_first_is_refused(short_dir: Path) -> None:
    taken = short_dir / f"memoryd-{os.getuid()}"
    taken.mkdir(mode=0o700)
    os.chown(taken, NOBODY, NOBODY)
    with pytest.raises(AlreadyRunning, match=f"belongs to uid {NOBODY}"):
        prepare_socket_path(taken / "memoryd.sock")
    assert os.stat(taken).st_uid == NOBODY


@pytest.mark.skipif(not ROOT, reason="needs root to make a folder another uid owns")
def test_daemon_leaves_a_hijacked_default_folder_alone_and_starts_elsewhere(
    tmp_path: Path, short_dir: Path
) -> None:
    """XDG_RUNTIME_DIR unset: the default folder is <tmp>/memoryd-<uid>, made by someone else.
    The daemon never uses (or chmods) it, and still starts: in <data home>/memoryd/run/, where
    memoryctl looks too (tests/test_runtime_dir.py)."""
    taken = short_dir / f"memoryd-{os.getuid()}"
    taken.mkdir(mode=0o777)
    os.chmod(taken, 0o777)
    os.chown(taken, NOBODY, NOBODY)
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "MEMORYD_SOCKET")}
    env.update(TMPDIR=str(short_dir), MEMORYD_WORKSPACE=str(tmp_path / "ws"))
    env.update(MEMORYD_DATA_DIR=str(tmp_path / "data"), MEMORYD_EMBEDDING_ENABLED="false")
    env.update(XDG_DATA_HOME=str(short_dir / "d"))
    fallback = short_dir / "d" / "memoryd" / "run" / "memoryd.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "run"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )

    def answers() -> bool:
        try:
            return rpc(fallback, "ping", timeout=2)["result"]["pong"] is True
        except OSError:  # not there yet, or bound and not yet listening
            return False

    try:
        wait_for(lambda: proc.poll() is not None or answers(), timeout=60)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert f"belongs to uid {NOBODY}" in err and "Traceback" not in err
    assert stat.S_IMODE(os.stat(taken).st_mode) == 0o777
    assert not (taken / "memoryd.sock").exists()


def test_rpc_helper_still_answers(daemon_factory: Any) -> None:
    d = daemon_factory()
    assert rpc(d.socket, "ping")["result"]["pong"] is True


# --- start-up and files ------------------------------------------------------------------------


def _can_mount_read_only() -> bool:
    try:
        return subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode == 0
    except OSError:
        return False


@pytest.mark.skipif(not _can_mount_read_only(), reason="needs unshare -rm (user namespaces)")
@pytest.mark.parametrize("key", ["data_dir", "workspace", "logging.file", "socket"])
def test_a_read_only_path_is_one_clear_line_naming_its_setting(
    key: str, tmp_path: Path, short_dir: Path
) -> None:
    """Every path setting on a read-only file system: one line naming the setting to point
    elsewhere (a workspace or log file there was told to move data_dir)."""
    ro = short_dir / "ro"
    ro.mkdir()
    paths = {
        "workspace": tmp_path / "ws",
        "data_dir": tmp_path / "data",
        "socket": short_dir / "s.sock",
        "logging.file": tmp_path / "d.log",
    }
    paths[key] = ro / ("d.log" if key == "logging.file" else "s.sock" if key == "socket" else "x")
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        f'workspace = "{paths["workspace"]}"\ndata_dir = "{paths["data_dir"]}"\n'
        f'socket = "{paths["socket"]}"\n[embedding]\nenabled = false\n'
        f'[logging]\nfile = "{paths["logging.file"]}"\n'
    )
    script = (
        f"mount -t tmpfs -o ro,mode=700 tmpfs {ro} && "
        f"exec {sys.executable} -m memoryd run --config {cfg}"
    )
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    said = (
        f"cannot start: {key}: {paths[key]}: Read-only file system; remount it read-write, or "
        f"point {key} elsewhere"
    )
    # one line: plain beside a log file, else (off a terminal) one of the JSON lines
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"memoryd: {said}" or json.loads(last)["error"] == said, done.stderr


def test_log_file_is_created_private(tmp_path: Path) -> None:
    from memoryd.core import logsetup

    old = os.umask(0o022)
    older = tmp_path / "older.log"  # left world-readable by an older version
    older.write_text("x\n")
    os.chmod(older, 0o644)
    try:
        logsetup.configure("info", "json", older)
        logsetup.configure("info", "json", tmp_path / "logs" / "memoryd.log")
        logsetup.get_logger("t").info("hello")
    finally:
        os.umask(old)
        stream = logsetup._state.pop("file_stream", None)
        logsetup.configure("info", "json")
        if stream is not None:
            stream.close()
    log = tmp_path / "logs" / "memoryd.log"
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(older).st_mode) == 0o600
    assert "hello" in log.read_text()


def test_a_value_of_the_wrong_type_reaching_sql_is_invalid_params(daemon_factory: Any) -> None:
    """Found by the fuzzer: a list or an object where a name is expected got -32603."""
    d = daemon_factory()
    answers = exchange(
        d.socket,
        [
            req("stats", {"namespace": ["a"]}),
            req("session_start", {"namespace": {"a": 1}}),
            req("ping"),
        ],
    )
    assert [a.get("error", {}).get("code") for a in answers[:2]] == [-32602, -32602]
    assert answers[2]["result"]["pong"] is True


@pytest.mark.sqlite_only("the socket file never reaches the store")
def test_a_socket_file_removed_under_the_daemon_is_made_again(
    make_app: Any, short_dir: Path
) -> None:
    """A temp-folder cleaner (macOS clears its temp folders of files untouched for days) took
    the socket file, folder and all: the daemon ran on, unreachable. It now listens again at
    the same path; a file someone else put there is left alone."""
    from memoryd.serve.server import Server

    app = make_app()
    folder = short_dir / "rt"
    path = folder / "m.sock"

    async def ping() -> bool:
        reader, writer = await asyncio.open_unix_connection(str(path))
        writer.write(req("ping") + b"\n")
        await writer.drain()
        answer = json.loads(await reader.readline())
        writer.close()
        return bool(answer["result"]["pong"])

    async def main() -> None:
        server = Server(app, app.cfg.server, path)
        await server.start()
        try:
            assert await ping()
            assert not await server.relisten_if_removed()  # still there: nothing to do
            path.unlink()
            folder.rmdir()
            assert await server.relisten_if_removed()
            assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
            assert await ping()
            path.unlink()
            path.write_text("someone else's\n")
            assert not await server.relisten_if_removed()
            assert path.read_text() == "someone else's\n"
        finally:
            await server.close()

    asyncio.run(main())


def test_a_log_file_rotated_away_is_opened_again_at_its_name(tmp_path: Path) -> None:
    """logrotate (or newsyslog, or a person) moved the log file: the lines went on into the
    rotated file for good, a SIGHUP included (the same name was kept open). The daemon looks
    every 30 s (and configure() at SIGHUP) and opens the name again."""
    from memoryd.core import logsetup

    log_file = tmp_path / "logs" / "memoryd.log"
    try:
        logsetup.configure("info", "json", log_file)
        logsetup.get_logger("t").info("before")
        assert not logsetup.reopen_if_moved()
        log_file.rename(tmp_path / "logs" / "memoryd.log.1")
        assert logsetup.reopen_if_moved()
        logsetup.get_logger("t").info("after")
        lines = [json.loads(ln)["event"] for ln in log_file.read_text().splitlines()]
        assert lines[-1] == "after" and "before" not in lines
        assert stat.S_IMODE(os.stat(log_file).st_mode) == 0o600
        log_file.unlink()  # deleted: made again too, at SIGHUP
        logsetup.configure("info", "json", log_file)
        logsetup.get_logger("t").info("again")
        assert json.loads(log_file.read_text().splitlines()[-1])["event"] == "again"
    finally:
        stream = logsetup._state.pop("file_stream", None)
        logsetup.reset()
        if stream is not None:
            stream.close()
