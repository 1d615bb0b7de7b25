"""The commands as scripts and people run them: stdout full, closed or a pipe nobody reads,
Ctrl-C, a locale that is not UTF-8, terminals that cannot show escapes. memoryctl (bin/memoryctl,
as installed) and the `memoryd` command's own subcommands, as subprocesses against a real daemon.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import module_daemon, wait_for

ROOT = Path(__file__).resolve().parent.parent
MEMORYCTL = str(ROOT / "bin" / "memoryctl")
NOTE = "# Café résumé\n\nMünchen meeting with Zoë about the naïve déploiement, 日本語.\n"

# every command that prints, memoryctl's and memoryd's (config, service: no daemon needed)
CTL_COMMANDS = [
    ["status"],
    ["--json", "status"],
    ["search", "café"],
    ["--json", "search", "München"],
    ["list"],
    ["stats"],
    ["recent"],
    ["jobs"],
    ["ping"],
    ["export"],
    ["note", "read", "café.md"],
    ["note", "list"],
    ["entities"],
    ["--version"],
]
MEMORYD_COMMANDS = [
    ["config", "show"],
    ["config", "show", "--json"],
    ["config", "path"],
    ["config", "check", "--json"],
    ["--version"],
]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with module_daemon(tmp_path_factory, "streams", {"café.md": NOTE}) as d:
        d.call("add", {"content": "Zoë prefers the café near München", "tags": ["x"]})
        yield d


def command(daemon: Any, which: str, args: list[str]) -> list[str]:
    if which == "memoryctl":
        return [sys.executable, MEMORYCTL, "--socket", str(daemon.socket), *args]
    return [
        sys.executable,
        "-m",
        "memoryd",
        *args,
        *(
            ["--config", str(daemon.config_path)]
            if args[0] == "config" and args[1] != "path"
            else []
        ),
    ]


def env_of(daemon: Any, **extra: str) -> dict[str, str]:
    env = {**daemon.env, "PYTHONPATH": str(ROOT), **extra}
    return {k: v for k, v in env.items() if v is not None}


def run(cmd: list[str], env: dict[str, str], **kw: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(cmd, capture_output="stdout" not in kw, env=env, timeout=60, **kw)


ALL = [("memoryctl", c) for c in CTL_COMMANDS] + [("memoryd", c) for c in MEMORYD_COMMANDS]
IDS = [f"{w} {' '.join(c)}" for w, c in ALL]


@pytest.mark.parametrize(("which", "args"), ALL, ids=IDS)
def test_a_full_or_closed_stdout_is_one_line_and_exit_1(
    daemon: Any, which: str, args: list[str]
) -> None:
    """`>/dev/full` was a traceback (OSError: No space left on device); `>&-` exited 0 with the
    output lost (print to a None stdout says nothing), or an AttributeError traceback."""
    cmd = command(daemon, which, args)
    with open("/dev/full", "wb") as full:
        res = subprocess.run(
            cmd, stdout=full, stderr=subprocess.PIPE, env=env_of(daemon), timeout=60
        )
    assert res.returncode == 1, res.stderr
    assert res.stderr.decode() == f"{which}: cannot write the output: No space left on device\n"
    closed = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", *cmd],
        stderr=subprocess.PIPE,
        env=env_of(daemon),
        timeout=60,
    )
    assert closed.returncode == 1, closed.stderr
    assert (
        closed.stderr.decode() == f"{which}: cannot write the output: standard output is closed\n"
    )


@pytest.mark.parametrize(("which", "args"), ALL, ids=IDS)
def test_a_reader_that_went_away_ends_it_quietly(daemon: Any, which: str, args: list[str]) -> None:
    """`| head -1`, `| false`: the pipe's reader is gone before the first write; exit 0 (as rg),
    nothing on stderr (`memoryd config show | false` said "cannot start: a file: Broken pipe")."""
    r, w = os.pipe()
    os.close(r)
    try:
        res = subprocess.run(
            command(daemon, which, args),
            stdout=w,
            stderr=subprocess.PIPE,
            env=env_of(daemon),
            timeout=60,
        )
    finally:
        os.close(w)
    assert (res.returncode, res.stderr.decode()) == (0, "")


class Mute:
    """A socket that accepts and never answers: a daemon too busy to answer."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(path))
        self.sock.listen(16)
        self.path = path

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def mute() -> Iterator[Mute]:
    folder = tempfile.mkdtemp(prefix="mdmute-", dir="/tmp")
    m = Mute(Path(folder) / "s.sock")
    yield m
    m.close()
    os.unlink(m.path)
    os.rmdir(folder)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["search", "café"], ""),
        (["status", "--watch"], ""),
        (["--json", "search", "x"], ""),
        (["reindex"], "; memoryd goes on with the reindex (`memoryctl status --watch` follows it)"),
        (
            ["reindex", "--json"],
            "; memoryd goes on with the reindex (`memoryctl status --watch` follows it)",
        ),
        (["import", "IN"], "; nothing was imported"),
        (
            ["jobs", "run", "snapshot"],
            "; memoryd goes on with the job (`memoryctl jobs` shows how snapshot ended)",
        ),
        (["export", "-o", "OUT"], ""),
    ],
)
def test_ctrl_c_is_one_line_exit_130_nothing_written(
    mute: Mute, tmp_path: Path, args: list[str], said: str
) -> None:
    """Ctrl-C while the daemon has not answered: a blank line was all it said; now what
    became of the request, exit 130 (128 + SIGINT), nothing on stdout, no file."""
    (tmp_path / "in.jsonl").write_text('{"content": "one"}\n')
    args = [
        str(tmp_path / "in.jsonl")
        if a == "IN"
        else str(tmp_path / "out.jsonl")
        if a == "OUT"
        else a
        for a in args
    ]
    proc = subprocess.Popen(
        [sys.executable, MEMORYCTL, "--socket", str(mute.path), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    accepted = []

    def connected() -> bool:  # the request is on its way: the client waits for the answer
        mute.sock.settimeout(0.05)
        with contextlib.suppress(TimeoutError):
            accepted.append(mute.sock.accept()[0])
        return bool(accepted)

    wait_for(connected, timeout=30)
    time.sleep(0.2)  # into its recv (a signal before the wait is the same KeyboardInterrupt)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    for c in accepted:
        c.close()
    assert proc.returncode == 130, err
    assert out == b""
    assert err.decode() == f"\nmemoryctl: interrupted{said}\n"
    assert not (tmp_path / "out.jsonl").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.jsonl"]  # no temporary file left


@pytest.mark.parametrize(
    "env",
    [
        {"LC_ALL": "C", "PYTHONUTF8": "0"},
        {"PYTHONIOENCODING": "ascii"},
        {"PYTHONIOENCODING": "latin-1"},
        {"LC_ALL": "POSIX"},
    ],
    ids=["C-no-utf8-mode", "ascii", "latin-1", "POSIX"],
)
def test_json_and_export_are_json_in_any_locale(daemon: Any, env: dict[str, str]) -> None:
    """In a locale whose codec cannot write é, --json printed `"caf\\xe9"` (the codec's
    backslash escape): not JSON, and an export so written imported the text mangled."""
    e = env_of(daemon, **{"LANG": "", "LC_ALL": "", **env})
    for args in (["--json", "search", "café"], ["--json", "note", "read", "café.md"]):
        res = run(command(daemon, "memoryctl", args), e)
        assert res.returncode == 0, res.stderr
        assert "Zoë" in json.dumps(json.loads(res.stdout), ensure_ascii=False)
    res = run(command(daemon, "memoryctl", ["export"]), e)
    assert res.returncode == 0, res.stderr
    contents = [json.loads(line)["content"] for line in res.stdout.decode().splitlines()]
    assert "Zoë prefers the café near München" in contents
    text = run(command(daemon, "memoryctl", ["search", "café"]), e)
    assert text.returncode == 0 and b"Traceback" not in text.stderr, text.stderr


def on_a_terminal(cmd: list[str], env: dict[str, str], cols: int = 80) -> tuple[int, bytes]:
    """Run cmd with stdout and stderr on a pseudo-terminal of `cols` columns: (status, bytes)."""
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=30), out


@pytest.mark.parametrize(
    ("extra", "bold"),
    [
        ({"TERM": "xterm"}, True),
        ({"TERM": "dumb"}, False),
        ({"TERM": "xterm", "NO_COLOR": "1"}, False),
    ],
    ids=["xterm", "dumb", "no-color"],
)
def test_escapes_only_where_the_terminal_shows_them(
    daemon: Any, extra: dict[str, str], bold: bool
) -> None:
    """TERM=dumb (Emacs' shell) showed `\\033[1m` and the watch's `\\r\\033[K` as they are."""
    env = env_of(daemon, **extra)
    code, out = on_a_terminal(command(daemon, "memoryctl", ["search", "café"]), env)
    assert code == 0 and (b"\033[1m" in out) == bold, out
    code, out = on_a_terminal(command(daemon, "memoryctl", ["status", "--watch"]), env)
    assert code == 0 and b"idle" in out, out
    if extra["TERM"] == "dumb":
        assert b"\033" not in out, out


def test_force_color_bolds_into_a_pipe(daemon: Any) -> None:
    """FORCE_COLOR (`memoryctl search x | less -R`): bold though stdout is a pipe."""
    plain = run(command(daemon, "memoryctl", ["search", "café"]), env_of(daemon))
    forced = run(command(daemon, "memoryctl", ["search", "café"]), env_of(daemon, FORCE_COLOR="1"))
    assert b"\033" not in plain.stdout and b"\033[1m" in forced.stdout


def test_columns_narrows_the_watch_line(daemon: Any) -> None:
    """COLUMNS=40 on a wide terminal: the redrawn line fits 40 columns, as `ls` and Python's
    shutil read it (the watch read only the terminal's own width)."""
    env = env_of(daemon, TERM="xterm", COLUMNS="40")
    code, out = on_a_terminal(
        [
            sys.executable,
            "-c",
            "import sys, memoryd.ctl.output as o; p = o.Progress(sys.stdout);"
            " p.update('x' * 100); p.finish()",
        ],
        env,
        cols=200,
    )
    assert code == 0
    drawn = out.split(b"\r\033[K")[1]
    assert len(drawn) == 39, out


@pytest.mark.parametrize(
    "args", [["add", "-"], ["import", "-"], ["search", "-"], ["triggers", "-"]]
)
def test_a_closed_stdin_is_a_usage_error(daemon: Any, args: list[str]) -> None:
    """`memoryctl add - <&-` was an AttributeError traceback (sys.stdin is None)."""
    cmd = command(daemon, "memoryctl", args)
    res = subprocess.run(
        ["sh", "-c", 'exec "$@" <&-', "sh", *cmd],
        capture_output=True,
        env=env_of(daemon),
        timeout=60,
    )
    assert res.returncode == 2
    said = "memoryctl: cannot read stdin: it is closed (<&-); pipe the text in instead\n"
    assert res.stderr.decode() == said


def test_stdin_at_a_terminal_says_it_waits_for_the_text(daemon: Any) -> None:
    """`memoryctl add -` typed at a terminal sat silent, as if hung; now one line says it reads
    the text and how to end it, and what is typed is stored."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        command(daemon, "memoryctl", ["add", "-", "--tags", "typed"]),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env_of(daemon),
    )
    os.close(slave)
    out = b""

    def read() -> bytes:
        nonlocal out
        if select.select([master], [], [], 0.1)[0]:
            with contextlib.suppress(OSError):
                out += os.read(master, 4096)
        return out

    wait_for(lambda: b"Ctrl-D" in read(), timeout=30)
    os.write(master, "typed at the terminal, café\n".encode() + b"\x04")
    assert proc.wait(timeout=30) == 0
    with contextlib.suppress(OSError):
        while select.select([master], [], [], 0.2)[0] and (chunk := os.read(master, 4096)):
            out += chunk
    os.close(master)
    assert b"memoryctl: reading stdin: type the text, then Ctrl-D" in out
    assert re.search(rb"added \d+", out), out
    found = daemon.call("list", {"tags": ["typed"]})["items"]
    assert [m["content"] for m in found] == ["typed at the terminal, café"]


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2024-11-05",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def test_mcp_with_a_closed_stdout_says_so(daemon: Any) -> None:
    """`memoryd mcp >&-` was an AttributeError traceback from the SDK."""
    pytest.importorskip("mcp")
    cmd = [sys.executable, "-m", "memoryd", "mcp", "--socket", str(daemon.socket)]
    res = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", *cmd],
        input=b"",
        capture_output=True,
        env=env_of(daemon),
        timeout=60,
    )
    assert res.returncode == 2
    said = "memoryd mcp: stdin and stdout carry the MCP messages; one is closed\n"
    assert res.stderr.decode() == said


def test_mcp_whose_client_stops_reading_ends_quietly(daemon: Any) -> None:
    """The agent quits (its end of stdout closed) while memoryd mcp answers: was an
    ExceptionGroup traceback (BrokenPipeError in the SDK's writer task) in the agent's log."""
    pytest.importorskip("mcp")
    r, w = os.pipe()
    os.close(r)
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "mcp", "--socket", str(daemon.socket)],
        stdin=subprocess.PIPE,
        stdout=w,
        stderr=subprocess.PIPE,
        env=env_of(daemon),
    )
    os.close(w)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    proc.stdin.flush()
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err.decode()) == (0, "")


LOCALES = [
    {"LC_ALL": "C", "PYTHONUTF8": "0"},
    {"PYTHONIOENCODING": "ascii"},
    {"PYTHONIOENCODING": "latin-1"},
    {"LC_ALL": "C.UTF-8"},
]


@pytest.mark.parametrize("env", LOCALES, ids=["C-no-utf8-mode", "ascii", "latin-1", "C.UTF-8"])
def test_memoryd_config_in_any_locale(tmp_path: Path, env: dict[str, str]) -> None:
    """A workspace named `notes-é` under a locale that cannot write é: `memoryd config
    show|path|check` were UnicodeEncodeError tracebacks; `show` is TOML that reads back the
    same paths (\\u00e9 where the locale cannot write é: TOML is UTF-8)."""
    import tomllib

    cfg = tmp_path / "cfgé.toml"
    cfg.write_text(f'workspace = "{tmp_path}/notes-é"\ndata_dir = "{tmp_path}/data-é"\n')
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "LC_", "PYTHONIO"))
    }
    e = {**base, "LANG": "", "PYTHONPATH": str(ROOT), **env}
    for args in (["show"], ["show", "--json"], ["path"], ["check"], ["check", "--json"]):
        res = subprocess.run(
            [sys.executable, "-m", "memoryd", "config", *args, "--config", str(cfg)],
            capture_output=True,
            env=e,
            timeout=60,
        )
        assert res.returncode == 0 and b"Traceback" not in res.stderr, (args, res.stderr)
        if args == ["show"]:
            assert tomllib.loads(res.stdout.decode())["workspace"] == f"{tmp_path}/notes-é"
        if args == ["show", "--json"]:
            assert json.loads(res.stdout)["workspace"] == f"{tmp_path}/notes-é"


def test_memoryd_mcp_ctrl_c_says_interrupted(daemon: Any) -> None:
    """Ctrl-C on `memoryd mcp` run by hand: exit 130 said nothing."""
    pytest.importorskip("mcp")
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "mcp", "--socket", str(daemon.socket)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_of(daemon),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    proc.stdin.flush()
    assert b'"result"' in proc.stdout.readline()  # serving: the SDK's loop is running
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err.decode()) == (130, "\nmemoryd: interrupted\n")


def test_ctrl_c_in_an_import_says_how_many_were_stored(mute: Mute, tmp_path: Path) -> None:
    """Ctrl-C after some batches were stored: the import's all-or-nothing cannot hold, so the
    line says how many were imported and that the same import again adds the rest."""
    from memoryd.ctl.admin import IMPORT_BATCH_BYTES

    line = json.dumps({"content": "x" * 2000}) + "\n"
    n = 2 * IMPORT_BATCH_BYTES // len(line) + 10  # three batches
    (tmp_path / "in.jsonl").write_text(line * n)
    real: list[int] = []
    held: list[socket.socket] = []

    def serve() -> None:
        mute.sock.settimeout(30)
        while True:
            try:
                conn = mute.sock.accept()[0]
            except OSError:
                return
            req = json.loads(conn.makefile("rb").readline())
            params = req["params"]
            if not params["dry_run"] and real:  # the second real batch: never answered
                held.append(conn)
                continue
            if not params["dry_run"]:
                real.append(len(params["items"]))
            answer = {
                "imported": 0 if params["dry_run"] else len(params["items"]),
                "skipped_duplicates": 0,
                "vectors": 0,
            }
            conn.sendall(
                json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": answer}).encode() + b"\n"
            )
            conn.close()

    import threading

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    proc = subprocess.Popen(
        [
            sys.executable,
            MEMORYCTL,
            "--socket",
            str(mute.path),
            "import",
            str(tmp_path / "in.jsonl"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    wait_for(lambda: held, timeout=30)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    for c in held:
        c.close()
    assert proc.returncode == 130 and out == b""
    assert err.decode() == (
        f"\nmemoryctl: interrupted; {real[0]} memories from earlier batches were imported, the "
        f"batch being sent may be too, the rest not; `memoryctl import {tmp_path / 'in.jsonl'}` "
        "again imports the rest (it skips memories already stored)\n"
    )


@pytest.mark.parametrize("closed", ["2>&-", ">&- 2>&-"])
def test_the_daemon_runs_with_its_output_closed(tmp_path: Path, closed: str) -> None:
    """`memoryd run 2>&-` (a launcher that closes what it does not pass on) died at its first
    log line, exit 1, without a word anywhere: the log's stream was None."""
    from conftest import rpc, to_toml

    short = tempfile.mkdtemp(prefix="mdcl-", dir="/tmp")
    cfg = {
        "workspace": str(tmp_path / "ws"),
        "data_dir": str(tmp_path / "data"),
        "socket": f"{short}/s.sock",
        "embedding": {"enabled": False},
    }
    (tmp_path / "config.toml").write_text(to_toml(cfg))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    proc = subprocess.Popen(
        [
            "sh",
            "-c",
            f'exec "$@" {closed}',
            "sh",
            sys.executable,
            "-m",
            "memoryd",
            "run",
            "--config",
            str(tmp_path / "config.toml"),
        ],
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    try:

        def answers() -> bool:
            assert proc.poll() is None, f"the daemon exited with {proc.returncode}"
            try:
                return rpc(cfg["socket"], "ping", timeout=2)["result"]["pong"] is True
            except OSError:
                return False

        wait_for(answers, timeout=30)
        added = rpc(cfg["socket"], "add", {"content": "logged to nowhere"})["result"]
        assert added["id"] >= 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(short, ignore_errors=True)


@pytest.mark.parametrize("how", ["stdin", "file"])
@pytest.mark.parametrize("verb", ["write", "append"])
def test_empty_text_piped_in_leaves_the_note_as_it_was(
    daemon: Any, tmp_path: Path, how: str, verb: str
) -> None:
    """`memoryctl note write a.md - </dev/null` emptied the note, exit 0: a pipeline whose first
    command failed wiped it. Empty text from stdin or --file is refused; `""` is taken as
    meant."""
    daemon.call("note.write", {"path": "keep.md", "content": "# Keep\n\nEvery word.\n"})
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    args = ["note", verb, "keep.md", *(["-"] if how == "stdin" else ["--file", str(empty)])]
    res = run(command(daemon, "memoryctl", args), env_of(daemon), stdin=subprocess.DEVNULL)
    assert res.returncode == 2, res
    source = "stdin" if how == "stdin" else str(empty)
    assert f"memoryctl: {source} was empty: nothing written" in res.stderr.decode()
    assert daemon.call("note.read", {"path": "keep.md"})["content"] == "# Keep\n\nEvery word.\n"
    meant = run(command(daemon, "memoryctl", ["note", "write", "keep.md", ""]), env_of(daemon))
    assert meant.returncode == 0, meant
    assert daemon.call("note.read", {"path": "keep.md"})["content"] == ""
