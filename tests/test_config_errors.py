"""A configuration error names the key and where it was written: `FILE:LINE: key: ...` for the
config file (the form editors jump to), `MEMORYD_SEARCH_RRF_K: key: ...` for the environment;
at start (`memoryd run`, `memoryd config check`) and at reload. Parametrised over every key of
config.example.toml, so a key added there is covered."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, wait_for

from memoryd.core.config import SECTIONS, load_config
from memoryd.core.configsource import key_lines
from memoryd.core.errors import ConfigError

EXAMPLE = re.sub(r"^# (\w+ = .*)$", r"\1", (ROOT / "config.example.toml").read_text(), flags=re.M)
# a value of the wrong type or out of range, per validator kind
BAD = {
    "int": '"ten"',
    "float": '"x"',
    "bool": '"yes"',
    "str": "5",
    "name": '""',
    "choice": '"nope"',
    "globs": '"*.md"',
    "duration": '"soon"',
    "dsn": "5",
    "relpath": '"/abs"',
    "logname": '"x.txt"',
    "format": '"{nope}"',
    "path": "5",
}
KEYS = ["workspace", "data_dir", "socket"] + [
    f"{name}.{f.name}" for name, klass in SECTIONS.items() for f in dataclasses.fields(klass)
]


def _spec(key: str) -> str:
    section, _, name = key.rpartition(".")
    if not section:
        return "path"
    return next(
        f.metadata["spec"][0] for f in dataclasses.fields(SECTIONS[section]) if f.name == name
    )


def _with(key: str, value: str) -> tuple[str, int]:
    """The example file, uncommented, with `key` set to `value`; and that key's line."""
    section, _, name = key.rpartition(".")
    lines, table = EXAMPLE.splitlines(), ""
    for i, line in enumerate(lines):
        if line.startswith("["):
            table = line.strip("[]")
        elif table == section and line.startswith(f"{name} = "):
            lines[i] = f"{name} = {value}"
            return "\n".join(lines) + "\n", i + 1
    raise AssertionError(f"{key} is not in config.example.toml")


def _env() -> dict[str, str]:
    return {"HOME": "/nonexistent-home", "XDG_RUNTIME_DIR": "/run/user/1"}


def test_the_uncommented_example_loads(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text(EXAMPLE.replace('"~/memoryd"', f'"{tmp_path}/ws"'))
    load_config(f, env=_env())


@pytest.mark.parametrize("key", KEYS)
def test_a_bad_value_names_the_key_the_file_and_the_line(key: str, tmp_path: Path) -> None:
    text, line = _with(key, BAD[_spec(key)])
    f = tmp_path / "c.toml"
    f.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config(f, env=_env())
    assert f"{f}:{line}: {key}: " in exc.value.message, exc.value.message
    assert "\n" not in exc.value.message


@pytest.mark.parametrize("section", list(SECTIONS))
def test_a_misspelt_key_names_the_file_and_the_line(section: str, tmp_path: Path) -> None:
    lines = EXAMPLE.splitlines()
    at = lines.index(f"[{section}]") + 1
    lines.insert(at, "bogus_key = 1")
    f = tmp_path / "c.toml"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as exc:
        load_config(f, env=_env())
    assert f"{f}:{at + 1}: unknown key '{section}.bogus_key'" in exc.value.message


def test_a_bad_environment_value_names_the_variable(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text("[search]\nrrf_k = 60\n")
    env = _env() | {"MEMORYD_SEARCH_RRF_K": "sixty"}
    with pytest.raises(ConfigError) as exc:
        load_config(f, env=env)
    assert exc.value.message.startswith("MEMORYD_SEARCH_RRF_K: search.rrf_k: expected")
    env = _env() | {"MEMORYD_SEARCH_RRF": "1"}
    with pytest.raises(ConfigError, match="did you mean 'MEMORYD_SEARCH_RRF_K'"):
        load_config(f, env=env)


def test_problems_come_in_the_file_s_order(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text('[search]\nrrf_k = "x"\n[indexer]\ndebounce_ms = "y"\n[serach]\n')
    with pytest.raises(ConfigError) as exc:
        load_config(f, env=_env())
    found = [int(m) for m in re.findall(rf"{re.escape(str(f))}:(\d+): ", exc.value.message)]
    assert found == [2, 4, 5]


def test_lines_are_found_through_toml_s_spellings() -> None:
    text = (
        'workspace = "x"  # a comment\n'
        "[ search ]  # spaced\n"
        '"rrf_k" = 5\n'
        'header = """\n'
        "fusion = 1\n"
        '"""\n'
        "fusion = 2\n"
        "[dailylog]\n"
        "search.fusion = 3\n"
        "inline = { a = 1 }\n"
    )
    lines = key_lines(text)
    assert lines["workspace"] == 1 and lines["search"] == 2 and lines["search.rrf_k"] == 3
    assert lines["search.fusion"] == 7  # not the line inside the multi-line string
    assert lines["dailylog.search.fusion"] == 9 and lines["dailylog.inline"] == 10


def test_a_reload_with_a_bad_value_logs_the_file_and_line(daemon_factory: Any) -> None:
    d = daemon_factory()
    text = d.config_path.read_text()
    d.config_path.write_text(text + '\n[lifecycle]\ndecay_floor = "high"\n')
    line = len(text.splitlines()) + 3
    assert d.proc is not None
    d.proc.send_signal(signal.SIGHUP)

    def failed() -> dict[str, Any] | None:
        for ln in d.log().splitlines():
            if ln.startswith("{") and "reload failed" in ln:
                return dict(json.loads(ln))
        return None

    entry = wait_for(failed, timeout=30)
    assert f"{d.config_path}:{line}: lifecycle.decay_floor: expected" in entry["error"], entry
    assert d.call("ping")["pong"] is True  # the running configuration stays


def _config_cmd(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    return subprocess.run(
        [sys.executable, "-m", "memoryd", "config", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.mark.parametrize("action", ["path", "check", "show"])
def test_every_config_action_s_json_is_json_valid_or_not(action: str, tmp_path: Path) -> None:
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    good.write_text(f'workspace = "{tmp_path}/ws"\n')
    bad.write_text('[search]\nrrf_k = "sixty"\n')
    done = _config_cmd(action, "--json", "--config", str(good))
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown.get("path", shown.get("source", shown.get("workspace"))) is not None
    missing = tmp_path / "missing.toml"
    for path, words in ((bad, f"{bad}:2: search.rrf_k"), (missing, "no configuration file")):
        if action == "path" and path == bad:
            continue  # path does not read the file
        done = _config_cmd(action, "--json", "--config", str(path))
        assert done.returncode == 2
        err = json.loads(done.stdout)
        assert err["ok"] is False and words in err["error"] and err["problems"], err


def test_a_byte_order_mark_and_crlf_are_read_and_latin1_is_named_by_line(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_bytes(b"\xef\xbb\xbf[search]\r\nrrf_k = 5\r\n")
    assert load_config(f, env=_env()).search.rrf_k == 5
    f.write_bytes(b'[search]\nrrf_k = 5\n[embedding]\nmodel = "caf\xe9"\n')
    with pytest.raises(ConfigError, match=rf"{re.escape(str(f))}:4: not UTF-8 \(byte 0xe9\)"):
        load_config(f, env=_env())


def _pw(tmp: Path, mode: int) -> str:
    pw = tmp / "pw"
    pw.write_text("secret\n")
    pw.chmod(mode)
    return str(pw)


STORE_MISTAKES = {
    "postgres without a dsn": lambda tmp: 'backend = "postgres"\n',
    "a password file others can read": lambda tmp: (
        f'backend = "postgres"\ndsn = "host=/nonexistent dbname=x"\n'
        f'password_file = "{_pw(tmp, 0o644)}"\n'
    ),
    "a password file that is not there": lambda tmp: (
        'backend = "postgres"\ndsn = "host=/nonexistent dbname=x"\npassword_file = "none"\n'
    ),
    "a workspace id with a space": lambda tmp: (
        'backend = "postgres"\ndsn = "host=/nonexistent dbname=x"\nworkspace_id = "a b"\n'
    ),
}


@pytest.mark.parametrize("mistake", list(STORE_MISTAKES))
def test_config_check_and_run_agree_on_the_store_settings(
    mistake: str, tmp_path: Path, short_dir: Path
) -> None:
    """What stops `memoryd run` with a configuration error (exit 2) stops `memoryd config
    check` too, with the same line: before, check said "configuration ok" to a postgres
    backend without a dsn and to a password file others can read."""
    f = tmp_path / "c.toml"
    f.write_text(
        f'workspace = "{tmp_path}/ws"\ndata_dir = "{tmp_path}/data"\n'
        f'socket = "{short_dir}/c.sock"\n[embedding]\nenabled = false\n[store]\n'
        + STORE_MISTAKES[mistake](tmp_path)
    )
    check = _config_cmd("check", "--config", str(f))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    run = subprocess.run(
        [sys.executable, "-m", "memoryd", "run", "--config", str(f)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert check.returncode == run.returncode == 2, (check.stderr, run.stderr)
    said = check.stderr.strip().removeprefix("memoryd: ")
    fatal = next(json.loads(ln) for ln in run.stderr.splitlines() if '"fatal"' in ln)
    assert said == fatal["error"] and f"{f}:" in said, (said, fatal)


def test_config_check_names_a_missing_postgres_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memoryd.cli import main

    for name in [m for m in sys.modules if m == "memoryd.store.pg" or m.startswith("psycopg")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # an install without the extra
    f = tmp_path / "c.toml"
    f.write_text('[store]\nbackend = "postgres"\ndsn = "host=/nonexistent dbname=x"\n')
    assert main(["config", "check", "--config", str(f)]) == 2
    assert "pip install 'memoryd[postgres]'" in capsys.readouterr().err


@pytest.mark.parametrize("key", [k for k in KEYS if _spec(k) not in ("path", "dsn")])
def test_a_bad_value_that_looks_like_a_credential_is_not_repeated(key: str, tmp_path: Path) -> None:
    """A token pasted into the wrong setting: the error (which goes to the journal) says what
    was wrong, not the token."""
    token = "sk-live-abcdefghijklmnopqrstuvwxyz123456"
    text, _ = _with(key, f'"{token}"')
    f = tmp_path / "c.toml"
    f.write_text(text)
    try:
        load_config(f, env=_env())
    except ConfigError as exc:
        assert token not in exc.message


def test_an_empty_include_is_a_warning_in_check(tmp_path: Path) -> None:
    """`include = []` is valid, an index of memories only, but most likely a mistake: every
    note left the index without a word. `config check` warns (exit 0), as the daemon's log
    does. (`MEMORYD_INDEXER_INCLUDE=`, a unit's Environment= line with nothing after it, is
    unset, as every empty MEMORYD_* variable is: tests/test_env_empty.py.)"""
    f = tmp_path / "c.toml"
    f.write_text(f'workspace = "{tmp_path}/ws"\n[indexer]\ninclude = []\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "config", "check", "--json", "--config", str(f)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert any("indexer.include is empty" in w for w in json.loads(done.stdout)["warnings"])


def test_a_reload_after_the_file_went_says_so(daemon_factory: Any, tmp_path: Path) -> None:
    d = daemon_factory()
    d.config_path.rename(tmp_path / "moved.toml")
    assert d.proc is not None
    d.proc.send_signal(signal.SIGHUP)

    def failed() -> str | None:
        for ln in d.log().splitlines():
            if ln.startswith("{") and "reload failed" in ln:
                return str(json.loads(ln)["error"])
        return None

    error = wait_for(failed, timeout=30)
    assert error == f"the configuration file {d.config_path} is gone (moved or deleted)"
    assert d.call("ping")["pong"] is True
