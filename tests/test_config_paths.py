"""Every path setting reads the same way: `~` and `$VARS` expanded, relative to the config
file's folder, a variable that is not set an error naming the key. Before, only workspace,
data_dir and socket did: `[logging] file = "~/memoryd.log"` made a folder named `~` in the
daemon's working directory, and `workspace = "$NOTES/x"` with NOTES unset (a service does not
see the shell's variables) indexed a folder literally named `$NOTES`."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import wait_for

from memoryd.core.config import SECTIONS, TOP_LEVEL, Config, load_config
from memoryd.core.errors import ConfigError

PATH_KEYS = [*TOP_LEVEL] + [
    f"{name}.{f.name}"
    for name, klass in SECTIONS.items()
    for f in dataclasses.fields(klass)
    if f.metadata["spec"][0] == "path"
]


def test_the_path_keys_are_the_ones_that_name_files() -> None:
    """A key whose name says it is a file or folder is a path key (a new one is not left
    behind reading `~` literally)."""
    looks_like_path = {
        f"{name}.{f.name}"
        for name, klass in SECTIONS.items()
        for f in dataclasses.fields(klass)
        if f.name == "file"
        or f.name.endswith(("_path", "_dir"))
        or (f.name.endswith("_file") and not f.name.startswith("max_"))
    }
    assert looks_like_path <= set(PATH_KEYS)
    assert {"logging.file", "embedding.model_path", "store.password_file"} <= set(PATH_KEYS)


def _config(tmp: Path, key: str, value: str) -> Path:
    section, _, name = key.rpartition(".")
    cfg = tmp / "conf" / "c.toml"
    cfg.parent.mkdir(exist_ok=True)
    top = {"workspace": str(tmp / "ws"), "data_dir": str(tmp / "data"), "socket": "/tmp/x.sock"}
    if not section:
        top[name] = value
    lines = [f"{k} = {v!r}".replace("'", '"') for k, v in top.items()]
    if section:
        lines += [f"[{section}]", f'{name} = "{value}"']
    cfg.write_text("\n".join(lines) + "\n")
    return cfg


def _value(cfg: Config, key: str) -> str:
    section, _, name = key.rpartition(".")
    return str(getattr(getattr(cfg, section), name) if section else getattr(cfg, name))


@pytest.mark.parametrize("key", PATH_KEYS)
def test_every_path_key_expands_home_vars_and_is_relative_to_the_file(
    key: str, tmp_path: Path
) -> None:
    env = {"HOME": str(tmp_path / "home"), "NOTES": str(tmp_path / "n")}
    home = str(tmp_path / "home")
    cases = {
        "~/a/b": f"{home}/a/b",
        "$NOTES/b": f"{tmp_path}/n/b",
        "${NOTES}/b": f"{tmp_path}/n/b",
        "rel/b": f"{tmp_path}/conf/rel/b",
        "cost$$/b": f"{tmp_path}/conf/cost$/b",
    }
    old_home = os.environ.get("HOME")
    os.environ["HOME"] = home  # expanduser reads the process's HOME
    try:
        for written, meant in cases.items():
            cfg = load_config(_config(tmp_path, key, written), env=env)
            assert _value(cfg, key) == meant, (key, written)
    finally:
        if old_home is not None:
            os.environ["HOME"] = old_home


@pytest.mark.parametrize("key", PATH_KEYS)
def test_a_variable_that_is_not_set_names_the_key(key: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(_config(tmp_path, key, "$NOT_SET_HERE/x"), env={})
    assert f"{key}: $NOT_SET_HERE is not set" in exc.value.message


def test_a_relative_config_path_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--config cfg/c.toml`: the file, and the paths relative to it, are absolute, so the
    log names them fully and a reload reads the same file whatever the working directory."""
    cfg_file = _config(tmp_path, "logging.file", "d.log")
    monkeypatch.chdir(tmp_path)
    cfg = load_config(Path("conf/c.toml"), env={})
    assert cfg.source == cfg_file and cfg.source.is_absolute()
    assert cfg.logging.file == str(tmp_path / "conf" / "d.log")


def test_the_daemon_logs_to_a_home_relative_file(tmp_path: Path, short_dir: Path) -> None:
    """End to end: `file = "~/memoryd.log"` is the file in HOME, not `./~/memoryd.log`."""
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        f'workspace = "{tmp_path / "ws"}"\ndata_dir = "{tmp_path / "data"}"\n'
        f'socket = "{short_dir / "p.sock"}"\n[embedding]\nenabled = false\n'
        '[logging]\nfile = "~/memoryd.log"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")} | {
        "HOME": str(home)
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "run", "--config", str(cfg)],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: '"ready"' in _text(home / "memoryd.log"), timeout=60)
    finally:
        proc.terminate()
        proc.wait(60)
    assert not (cwd / "~").exists()


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


@pytest.mark.parametrize("spelling", ["$CONFS/c.toml", "${CONFS}/c.toml", "~/conf/c.toml"])
@pytest.mark.parametrize("door", ["--config", "MEMORYD_CONFIG"])
def test_the_config_file_path_reads_as_every_path_setting(
    door: str, spelling: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The configuration file's own path expands `~` and `$VARS` as the paths in it do (an MCP
    client's `env`, a unit's Environment= line: no shell expands MEMORYD_CONFIG there); before,
    `$CONFS/c.toml` was looked for as a file under a folder named `$CONFS`."""
    cfg_file = _config(tmp_path, "logging.file", "d.log")
    monkeypatch.setenv("HOME", str(tmp_path))
    env = {"CONFS": str(tmp_path / "conf"), "HOME": str(tmp_path)}
    if door == "MEMORYD_CONFIG":
        cfg = load_config(None, env={**env, "MEMORYD_CONFIG": spelling})
    else:
        cfg = load_config(Path(spelling), env=env)
    assert cfg.source == cfg_file
    with pytest.raises(ConfigError, match=rf"^{door}: \$NOT_SET_HERE is not set"):
        if door == "MEMORYD_CONFIG":
            load_config(None, env={"MEMORYD_CONFIG": "$NOT_SET_HERE/c.toml"})
        else:
            load_config(Path("$NOT_SET_HERE/c.toml"), env={})


@pytest.mark.parametrize("given", ["XDG_RUNTIME_DIR", "MEMORYD_SOCKET", "file"])
def test_a_socket_path_too_long_says_where_it_came_from(given: str, tmp_path: Path) -> None:
    """A default socket path made too long by XDG_RUNTIME_DIR says it is the default (the user
    set no `socket`), and every case names the setting that fixes it."""
    long = "/tmp/" + "x" * 120
    env = {"HOME": str(tmp_path)}
    path = None
    if given == "XDG_RUNTIME_DIR":
        env["XDG_RUNTIME_DIR"] = long
    elif given == "MEMORYD_SOCKET":
        env["MEMORYD_SOCKET"] = long + "/s.sock"
    else:
        path = tmp_path / "c.toml"
        path.write_text(f'socket = "{long}/s.sock"\n')
    with pytest.raises(ConfigError) as exc:
        load_config(path, env=env)
    assert "is longer than 100 bytes" in exc.value.message
    assert "set `socket` to a shorter one" in exc.value.message
    assert ("(the default" in exc.value.message) == (given == "XDG_RUNTIME_DIR")


WORKSPACE_KEYS = [
    f"{name}.{f.name}"
    for name, klass in SECTIONS.items()
    for f in dataclasses.fields(klass)
    if f.metadata["spec"][0] in ("relpath", "logname")
]


@pytest.mark.parametrize("value", ["~/journal", "~", "~/journal/%Y-%m-%d.md"])
@pytest.mark.parametrize("key", WORKSPACE_KEYS)
def test_a_path_inside_the_workspace_refuses_the_home_folder(
    key: str, value: str, tmp_path: Path
) -> None:
    """The settings that name a place inside the workspace (dailylog.folder, .filename) refuse
    `~/...` as they refuse an absolute path: every other path setting reads `~` as the home
    folder, and these made a folder literally named `~` in the workspace."""
    assert set(WORKSPACE_KEYS) == {"dailylog.folder", "dailylog.filename"}
    section, _, name = key.partition(".")
    with pytest.raises(ConfigError, match=f"{key}: expected"):
        Config.from_dict({"workspace": str(tmp_path / "ws"), section: {name: value}}, env={})
    fine = "~draft" if name == "folder" else "~%Y-%m-%d.md"  # a name that starts with ~
    Config.from_dict({"workspace": str(tmp_path / "ws"), section: {name: fine}}, env={})
