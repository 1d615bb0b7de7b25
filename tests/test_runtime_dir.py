"""The daemon's surroundings (issue 21): with XDG_RUNTIME_DIR unset, a default socket folder
another user made first does not keep the daemon from starting (it listens in a fallback folder
memoryctl finds by the same rule); under umask 000 nothing the daemon creates is writable by
others."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import DaemonProcess, to_toml, wait_for

from memoryd.core import runtime

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def _own_daemon(tmp_path: Path, env: dict[str, str], **cfg: Any) -> DaemonProcess:
    data = {
        "workspace": str(tmp_path / "ws"),
        "data_dir": str(tmp_path / "data"),
        "indexer": {"debounce_ms": 100},
        "embedding": {"enabled": False},
        "logging": {"level": "debug", "format": "json"},
        **cfg,
    }
    path = tmp_path / "config.toml"
    path.write_text(to_toml(data))
    socket_path = Path(cfg.get("socket") or runtime.default_socket_path(env))
    with_socket = {**data, "socket": str(socket_path)}
    return DaemonProcess(path, with_socket, env)


@pytest.mark.sqlite_only("the socket folder does not depend on the store")
def test_a_default_socket_folder_taken_by_another_user_does_not_stop_the_daemon(
    tmp_path: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(short_dir))  # as TMPDIR does for the daemon
    taken = short_dir / f"memoryd-{os.getuid()}"
    taken.mkdir()
    os.chmod(taken, 0o777)  # others can write to it (and as root: it is another user's)
    if os.getuid() == 0:
        os.chown(taken, 65534, 65534)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "XDG_RUNTIME"))}
    env.update(TMPDIR=str(short_dir), XDG_DATA_HOME=str(short_dir / "d"))
    expected = short_dir / "d" / "memoryd" / "run" / "memoryd.sock"
    assert runtime.default_socket_path(env) != taken / "memoryd.sock"
    d = _own_daemon(tmp_path, env)
    assert d.socket == expected
    d.start()
    try:
        assert stat.S_IMODE(os.stat(expected.parent).st_mode) == 0o700
        assert not (taken / "memoryd.sock").exists() and stat.S_IMODE(taken.stat().st_mode) == 0o777
        assert "the default socket folder is not ours" in d.log()
        # memoryctl, with the same environment and no --socket, finds it by the same rule
        ping = subprocess.run(
            [sys.executable, "-m", "memoryd.ctl", "ping"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert ping.returncode == 0, ping.stderr
        assert str(expected) in ping.stdout
    finally:
        d.stop(signal.SIGTERM)


def test_under_umask_000_nothing_the_daemon_makes_is_writable_by_others(
    daemon_factory: Any, tmp_path: Path
) -> None:
    log_file = tmp_path / "logs" / "deep" / "memoryd.log"
    old = os.umask(0)  # the daemon inherits it
    try:
        d = daemon_factory(logging={"file": str(log_file)}, data_dir=str(tmp_path / "a" / "data"))
    finally:
        os.umask(old)
    assert d.ctl("add", "the umask test memory").returncode == 0
    assert d.ctl("note", "write", "new/folder/n.md", "# N\n").returncode == 0
    wait_for(lambda: list((d.workspace / "daily").glob("*.md")), timeout=30)
    roots = [d.workspace, Path(d.cfg["data_dir"]), tmp_path / "logs", d.socket.parent]
    wait_for(log_file.exists, timeout=30)
    loose = []
    for root in roots:
        for path in [root, *root.rglob("*")]:
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            if mode & 0o002 and not path.is_symlink():
                loose.append(f"{path} {mode:04o}")
    assert loose == []
    assert stat.S_IMODE((tmp_path / "logs").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700  # a data_dir parent we made
