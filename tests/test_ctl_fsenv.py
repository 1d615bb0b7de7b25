"""memoryd.ctl.fsenv answers as os and os.path do (memoryctl's start-up does without os)."""

from __future__ import annotations

import os
import posixpath
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.ctl import fsenv

PATHS = st.lists(
    st.sampled_from(["", "/", "//", "///", ".", "..", "a", "b.sock", "~x"]), max_size=6
)


@given(PATHS)
def test_paths_as_os_path(parts: list[str]) -> None:
    path = "/".join(parts)
    assert fsenv.dirname(path) == posixpath.dirname(path)
    assert fsenv.normpath(path) == posixpath.normpath(path)
    assert fsenv.abspath(path) == posixpath.abspath(path)
    if parts:
        assert fsenv.join(*parts) == posixpath.join(*parts)


def test_files_as_os(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    for name in ("f", "missing", ""):
        path = str(tmp_path / name)
        assert fsenv.exists(path) == os.path.exists(path)
        assert fsenv.is_dir(path) == os.path.isdir(path)
    assert fsenv.writable_dir(str(tmp_path)) and not fsenv.writable_dir(str(tmp_path / "f"))
    assert fsenv.getuid() == os.getuid()
    assert fsenv.expanduser("~/x") == os.path.expanduser("~/x")
    assert fsenv.expanduser("/x/~") == "/x/~"


def test_the_environment_is_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_FSENV_TEST", "changed in this process")
    assert fsenv.environ()["MEMORYD_FSENV_TEST"] == "changed in this process"  # os's, once imported
    code = (
        "import sys; from memoryd.ctl import fsenv; env = fsenv.environ(); "
        "print('os' in sys.modules, env['MEMORYD_FSENV_TEST'] == 'caf\\xe9 \\udcff')"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True, timeout=60, cwd=Path(fsenv.__file__).parents[2],
        env={**os.environ, "MEMORYD_FSENV_TEST": os.fsdecode(b"caf\xc3\xa9 \xff")},
    )  # fmt: skip
    assert done.stdout == b"False True\n", done.stderr
