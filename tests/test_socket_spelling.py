"""Every door that takes a socket path (memoryctl's --socket and MEMORYD_SOCKET, `memoryd mcp`'s
--socket and MEMORYD_SOCKET) reads it as the daemon reads its own `socket` and MEMORYD_SOCKET:
`~`, `$VAR` and `${VAR}` expanded, `$$` a `$`, a trailing slash dropped. Before, memoryctl and
the MCP bridge expanded `~` only: with `MEMORYD_SOCKET='$HOME/m.sock'` (an MCP client's `env`,
a unit's Environment= line: no shell expands them) the daemon listened on /home/me/m.sock and
both clients looked for a file named `$HOME/m.sock` ("memoryd is not running"); a trailing
slash the daemon ignored made them fail the same way."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import to_toml, wait_for

from memoryd.agents import mcp
from memoryd.core.config import load_config
from memoryd.ctl import client

SPELLINGS = [
    "~/s d/m.sock",
    "$HOME/s d/m.sock",
    "${HOME}/s d/m.sock",
    "$HOME/s d/m.sock/",
    "~/s d/m.sock//",
    "${ROOT}/é $$/m.sock",
    "$ROOT/$HOME_ish/m.sock",  # a longer name is its own variable
]


def _env(short_dir: Path, spelling: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_"))}
    env.update(
        HOME=str(short_dir / "home"),
        ROOT=str(short_dir),
        HOME_ish="h",
        XDG_CONFIG_HOME=str(short_dir / "no-config"),
    )
    if spelling is not None:
        env["MEMORYD_SOCKET"] = spelling
    return env


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_every_door_reads_a_socket_spelling_as_the_daemon_does(
    spelling: str, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _env(short_dir, spelling)
    monkeypatch.setenv("HOME", env["HOME"])  # `~` is read from the process's own HOME
    daemons = str(load_config(None, env).socket)
    assert "$" not in daemons.replace(" $/", "") and daemons.startswith(str(short_dir))
    assert client.socket_path(None, env) == daemons  # MEMORYD_SOCKET
    assert client.socket_path(spelling, _env(short_dir)) == daemons  # --socket
    monkeypatch.setattr(os, "environ", env)
    assert mcp.resolve_socket(None, None) == daemons
    assert mcp.resolve_socket(spelling, None) == daemons


def test_a_variable_that_is_not_set_is_left_as_written(short_dir: Path) -> None:
    """The daemon refuses it (a configuration error naming the key); the clients' message
    names the path as written."""
    for spelling in ("$NOT_SET_HERE/m.sock", "/tmp/$/m.sock", "/tmp/${HOME/m.sock"):
        assert client.socket_path(spelling, _env(short_dir)) == spelling


def test_memoryctl_finds_a_daemon_by_the_same_unexpanded_variable(short_dir: Path) -> None:
    """End to end: one environment, MEMORYD_SOCKET='$HOME/...', for the daemon and memoryctl."""
    env = _env(short_dir, "$HOME/s d/m.sock/")
    config = short_dir / "c.toml"
    config.write_text(
        to_toml(
            {
                "workspace": str(short_dir / "ws"),
                "data_dir": str(short_dir / "data"),
                "embedding": {"enabled": False},
            }
        )
    )
    sock = short_dir / "home" / "s d" / "m.sock"
    with open(short_dir / "d.log", "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", "run", "--config", str(config)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for(lambda: sock.is_socket() or proc.poll() is not None, timeout=60)
            assert proc.poll() is None, (short_dir / "d.log").read_text()
            ping = subprocess.run(
                [sys.executable, "-m", "memoryd.ctl", "ping"],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert ping.returncode == 0, ping.stderr
            assert str(sock) in ping.stdout
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)


@pytest.mark.parametrize("config", ["MEMORYD_CONFIG", "XDG_CONFIG_HOME", "none"])
@pytest.mark.parametrize("spelling", ["run/m.sock", "./run/m.sock/", "$SUB/m.sock"])
def test_a_relative_memoryd_socket_is_where_the_daemon_reads_it(
    config: str,
    spelling: str,
    short_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Relative to the configuration file's folder (docs/configuration.md: paths in the file or
    the environment), as the daemon reads the same variable; the working directory without a
    file. memoryctl read it relative to the working directory whatever the file."""
    env = _env(short_dir, spelling)
    env["SUB"] = "sub dir"
    conf = short_dir / "conf dir" / "memoryd" / "config.toml"
    conf.parent.mkdir(parents=True)
    conf.write_text(f'workspace = "{short_dir / "ws"}"\n')
    if config == "MEMORYD_CONFIG":
        env["MEMORYD_CONFIG"] = "$ROOT/conf dir/memoryd/config.toml"
    elif config == "XDG_CONFIG_HOME":
        env["XDG_CONFIG_HOME"] = str(short_dir / "conf dir")
    monkeypatch.chdir(short_dir / "conf dir")  # another folder than the file's
    daemons = str(load_config(None, env).socket)
    assert client.socket_path(None, env) == daemons
    monkeypatch.setattr(os, "environ", env)
    assert mcp.resolve_socket(None, None) == daemons
