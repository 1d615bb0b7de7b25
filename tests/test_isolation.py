"""The suite's own guard (tests/isolation.py, issue 18): every test process and every Python
process a test starts has folders of its own, and cannot reach the developer's memoryd."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import isolation
import pytest

from memoryd.core import config
from memoryd.ctl import client


@pytest.fixture
def guard(request: pytest.FixtureRequest) -> Iterator[isolation.Guard]:
    """The session's guard; what this test makes it refuse is taken back off its report, so
    that conftest's check does not fail the test for it."""
    from conftest import _GUARD

    g = request.config.stash[_GUARD]
    before = g.report.read_bytes() if g.report.exists() else b""
    yield g
    g.report.write_bytes(before)


def test_the_environment_points_at_created_folders_of_this_process(
    guard: isolation.Guard, tmp_path_factory: pytest.TempPathFactory
) -> None:
    basetemp = tmp_path_factory.getbasetemp()

    def isolated(path: Path) -> bool:
        # this process's folders, or pytest's of this run (conftest.isolated_env's XDG homes)
        return guard.root in path.parents or basetemp in path.parents

    for var in ("XDG_RUNTIME_DIR", "TMPDIR", "HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        path = Path(os.environ[var])
        assert path.is_dir() and guard.root in path.parents, (var, path)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME"):  # conftest.isolated_env's, this test's
        path = Path(os.environ[var])
        assert path.is_dir() and isolated(path), (var, path)
    assert tempfile.gettempdir() == os.environ["TMPDIR"]
    # memoryd's defaults fall inside them, never on the real ones
    for default in (
        config.default_socket_path(),
        config.default_data_dir(),
        Path(client.socket_path()),
        Path(client.resolve_socket()),
    ):
        assert isolated(default) and str(default) not in guard.sockets, default
        assert not any(str(default).startswith(f + os.sep) for f in guard.folders), default


def test_the_real_default_socket_is_refused_here(guard: isolation.Guard) -> None:
    real = sorted(guard.sockets)[0]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s, pytest.raises(PermissionError):
        s.connect(real)
    with pytest.raises(PermissionError):
        os.makedirs(os.path.join(guard.folders[0], "x"))
    assert [line for line in guard.refused() if real in line]


def test_the_real_default_socket_is_refused_in_a_process_a_test_starts(
    guard: isolation.Guard,
) -> None:
    real = sorted(guard.sockets)[0]
    code = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n"
        f"    s.connect({real!r})\n"
        "except PermissionError:\n"
        "    sys.exit(7)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert done.returncode == 7, done.stderr
    assert any(real in line and f"pid {os.getpid()}" not in line for line in guard.refused())
