"""Every reader of an XDG variable ignores a relative value, as the XDG Base Directory
specification says ("If an implementation encounters a relative path in any of these variables
it should consider the path invalid and ignore it"). Before, `XDG_DATA_HOME=data` put the store
in `data/memoryd` under whatever folder the daemon was started from (`memoryd config show`
printed `data_dir = "data/memoryd"`), `XDG_RUNTIME_DIR=run` the socket likewise, and
`XDG_CONFIG_HOME=cfg` read (or `memoryd service install` wrote units into) a folder relative to
the working directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.core import runtime
from memoryd.core.config import find_config_file
from memoryd.ctl import client
from memoryd.serve import service

# each reader, and what it answers with the variable unset
XDG_VARS = ["XDG_DATA_HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME"]


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MEMORYD_"))}
    return {**env, "HOME": str(home), **extra}


@pytest.mark.parametrize("value", ["rel", "./rel", "rel/", "~/x"])
@pytest.mark.parametrize("name", XDG_VARS)
def test_a_relative_xdg_value_reads_as_unset(
    name: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    # a config file where the relative value would lead, from the working directory
    (tmp_path / "rel" / "memoryd").mkdir(parents=True)
    (tmp_path / "rel" / "memoryd" / "config.toml").write_text('workspace = "/nowhere"\n')
    unset = _env(tmp_path / "home")
    given = {**unset, name: value}
    assert runtime.xdg(name, given) is None
    assert runtime.default_data_dir(given) == runtime.default_data_dir(unset)
    assert runtime.default_data_dir(given).is_absolute()
    assert runtime.default_socket_path(given) == runtime.default_socket_path(unset)
    assert find_config_file(None, given) == find_config_file(None, unset)
    # memoryctl's stdlib copy of the rule answers the same
    assert client.socket_path(None, given) == client.socket_path(None, unset)
    assert client.socket_path(None, given) == str(runtime.default_socket_path(given))
    assert client.login_socket_paths(given) == client.login_socket_paths(unset)
    # `memoryd service`: where the units go, whether a user manager is reachable
    monkeypatch.setattr(os, "environ", given)
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: tmp_path / "home"))
    plan = service.build_plan("systemd", "install")
    units = {str(s.path) for s in plan.steps if hasattr(s, "path")}
    assert units and all(u.startswith(str(tmp_path / "home")) for u in units), units
    assert service.user_manager_problem(given) == service.user_manager_problem(unset)


@pytest.mark.parametrize("name", XDG_VARS)
def test_an_absolute_xdg_value_is_used(name: str, tmp_path: Path) -> None:
    given = {**_env(tmp_path / "home"), name: str(tmp_path / "x")}
    assert runtime.xdg(name, given) == str(tmp_path / "x")
    if name == "XDG_DATA_HOME":
        assert runtime.default_data_dir(given) == tmp_path / "x" / "memoryd"
    if name == "XDG_RUNTIME_DIR":
        assert runtime.default_socket_path(given) == tmp_path / "x" / "memoryd" / "memoryd.sock"
        assert client.socket_path(None, given) == str(tmp_path / "x/memoryd/memoryd.sock")


def test_config_show_with_relative_xdg_values_prints_absolute_paths(tmp_path: Path) -> None:
    """The command a user runs to see where things go: no relative data_dir or socket."""
    env = _env(
        tmp_path / "home",
        XDG_DATA_HOME="data",
        XDG_RUNTIME_DIR="run",
        XDG_CONFIG_HOME="cfg",
    )
    (tmp_path / "cfg" / "memoryd").mkdir(parents=True)
    (tmp_path / "cfg" / "memoryd" / "config.toml").write_text('workspace = "/nowhere"\n')
    out = subprocess.run(
        [sys.executable, "-m", "memoryd", "config", "show", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert shown["data_dir"] == str(tmp_path / "home" / ".local/share/memoryd")
    assert Path(shown["socket"]).is_absolute()
    assert shown["workspace"] != "/nowhere"  # cfg/memoryd/config.toml was not read
