"""`~` in every path memoryd reads has one rule (core/runtime.home, and memoryctl's copy in
ctl/fsenv.py): $HOME when it is an absolute path; else (unset, empty or relative) the password
database's entry for this uid, as Python's expanduser does when HOME is unset; with neither, a
configuration error naming the setting. Before, a uid with no passwd entry (a container) and no
HOME put the workspace and the store in `./~/memoryd` and `./~/.local/share/memoryd` under the
working folder, and `HOME=` (empty) made the data dir `/.local/share/memoryd`."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memoryd.core.config import Config, find_config_file
from memoryd.core.errors import ConfigError
from memoryd.core.runtime import expand_home
from memoryd.ctl import fsenv
from memoryd.serve import service

ROOT = Path(__file__).resolve().parent.parent
BAD_HOMES = [None, "", "rel/home"]  # unset, empty, relative: as unset


def _env(home: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MEMORYD_", "HOME"))}
    return {**env, **({} if home is None else {"HOME": home}), **extra}


def _no_passwd_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(uid: int) -> Any:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", missing)


@pytest.mark.parametrize("home", BAD_HOMES)
def test_no_home_folder_is_a_configuration_error_naming_each_path(
    home: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _no_passwd_entry(monkeypatch)
    with pytest.raises(ConfigError) as exc:
        Config.from_dict({}, env=_env(home))
    said = exc.value.message
    assert "workspace: cannot tell where ~ is" in said and "data_dir: " in said, said
    assert "set HOME to your home folder" in said and "MEMORYD_WORKSPACE" in said, said
    with pytest.raises(ConfigError, match=r"logging\.file: cannot tell where ~ is"):
        Config.from_dict(
            {"workspace": "/w", "data_dir": "/d", "logging": {"file": "~/m.log"}},
            env=_env(home),
        )
    assert list(tmp_path.iterdir()) == []  # nothing made under the working folder


@pytest.mark.parametrize("home", BAD_HOMES)
def test_absolute_paths_need_no_home_folder(
    home: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_passwd_entry(monkeypatch)
    env = _env(home)
    cfg = Config.from_dict(
        {"workspace": str(tmp_path / "w"), "data_dir": str(tmp_path / "d")}, env=env
    )
    assert cfg.workspace == tmp_path / "w"
    assert find_config_file(env=env) is None  # no ~/.config to look in: no file, no error


@pytest.mark.parametrize("home", BAD_HOMES)
def test_a_home_that_is_not_an_absolute_path_reads_as_unset(
    home: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both doors: the daemon's paths and memoryctl's (its socket and config fallbacks)."""
    entry = pwd.getpwuid(os.getuid()).pw_dir.rstrip("/")
    cfg = Config.from_dict({}, env=_env(home))
    assert cfg.workspace == Path(entry or "/") / "memoryd"
    assert str(cfg.data_dir) == f"{entry}/.local/share/memoryd"
    assert expand_home("~/x", "workspace", _env(home)) == f"{entry}/x"
    if home is None:
        monkeypatch.delenv("HOME", raising=False)
    else:
        monkeypatch.setenv("HOME", home)
    assert fsenv.expanduser("~/x") == f"{entry}/x"
    assert fsenv.expanduser("~") == (entry or "/")


@pytest.mark.parametrize(("home", "want"), [("/", "/x"), ("/h/", "/h/x"), ("/h", "/h/x")])
def test_both_doors_expand_an_absolute_home_alike(
    home: str, want: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", home)
    assert expand_home("~/x", "workspace") == want == fsenv.expanduser("~/x")
    assert expand_home("~", "workspace") == (home.rstrip("/") or "/") == fsenv.expanduser("~")
    assert expand_home("a/~", "workspace") == "a/~" == fsenv.expanduser("a/~")


def test_memoryctl_without_a_home_leaves_the_path_as_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HOME", raising=False)
    _no_passwd_entry(monkeypatch)
    assert fsenv.expanduser("~/s.sock") == "~/s.sock"  # not found, said as written


def test_service_install_without_a_home_folder_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Path.home() raised a bare RuntimeError ("Could not determine home directory")."""
    monkeypatch.delenv("HOME", raising=False)
    _no_passwd_entry(monkeypatch)
    with pytest.raises(ConfigError, match="HOME: cannot tell where ~ is: HOME is not set"):
        service.build_plan("systemd", "install")


def test_memoryd_config_show_with_home_empty_reads_the_passwd_entry(tmp_path: Path) -> None:
    """The real command, HOME empty: the passwd entry, not `/memoryd`."""
    env = _env("", PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-m", "memoryd", "config", "show", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    entry = pwd.getpwuid(os.getuid()).pw_dir.rstrip("/")
    assert f'"data_dir": "{entry}/.local/share/memoryd"' in out.stdout, out.stdout


@pytest.mark.parametrize("given", [False, True])
def test_a_start_refused_under_a_home_that_cannot_hold_the_store_says_home(
    tmp_path: Path, given: bool
) -> None:
    """`memoryd run` with HOME pointing at a file (or a folder it may not write: root may, so a
    file stands in) said only `data_dir: HOME/.local: Not a directory`: a path the user never
    wrote. It now says the path is data_dir's default under HOME; a data_dir the user set is
    left at the first part."""
    home = tmp_path / "home-file"
    home.write_text("")
    extra = {"MEMORYD_DATA_DIR": str(home / "d")} if given else {}
    env = _env(str(home), PYTHONPATH=str(ROOT), MEMORYD_SOCKET=str(tmp_path / "s"), **extra)
    env["MEMORYD_WORKSPACE"] = str(tmp_path / "ws")
    out = subprocess.run(
        [sys.executable, "-m", "memoryd", "run"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert out.returncode == 1, out.stderr
    said = out.stderr.strip().splitlines()[-1]
    assert "data_dir: " in said and "Not a directory" in said, said
    note = f"data_dir is its default, under HOME={home}: set HOME to your home folder"
    assert (note in said) is not given, said
