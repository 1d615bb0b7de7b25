"""Configuration: defaults, the example file, env overrides, validation messages, reload diff."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT

from memoryd.core.config import (
    RELOADABLE,
    SECTIONS,
    Config,
    diff,
    find_config_file,
    load_config,
    needs_restart,
    to_toml,
)
from memoryd.core.errors import ConfigError
from memoryd.serve.daemon import apply_reloadable


def uncommented_example() -> dict:
    text = (ROOT / "config.example.toml").read_text()
    text = re.sub(r"^# (\w+ = .*)$", r"\1", text, flags=re.M)
    return tomllib.loads(text)


def test_example_documents_every_key_with_its_default() -> None:
    data = uncommented_example()
    defaults = Config.from_dict({})
    for name, klass in SECTIONS.items():
        documented = data.get(name, {})
        names = {f.name for f in dataclasses.fields(klass)}
        assert set(documented) == names, f"[{name}] keys differ from the code"
        assert Config.from_dict({name: documented}).__getattribute__(name) == getattr(
            defaults, name
        ), f"[{name}] defaults in config.example.toml differ from the code"
    assert {"workspace", "data_dir", "socket"} <= set(data)


def test_configuration_doc_names_every_section_and_the_reloadable_keys() -> None:
    """docs/configuration.md lists every section, and its Reload paragraph names exactly what
    SIGHUP applies (a key, or a whole section whose keys all reload)."""
    text = (ROOT / "docs" / "configuration.md").read_text()
    for name in SECTIONS:
        assert f"`[{name}]`" in text, f"[{name}] is not in docs/configuration.md"
    reload_text = text.split("## Reload", 1)[1].split("\n## ", 1)[0]
    whole = set(re.findall(r"`\[(\w+)\]`", reload_text))
    keys = set(re.findall(r"`(\w+\.\w+)`", reload_text))
    for name in whole:
        assert {f"{name}.{f.name}" for f in dataclasses.fields(SECTIONS[name])} <= RELOADABLE
    assert keys <= RELOADABLE, f"documented as reloadable but not: {keys - RELOADABLE}"
    undocumented = {k for k in RELOADABLE if k not in keys and k.partition(".")[0] not in whole}
    assert not undocumented, f"reloadable but not in docs/configuration.md: {undocumented}"


def test_defaults_work_without_any_file(tmp_path: Path) -> None:
    cfg = load_config(
        None,
        env={
            "XDG_CONFIG_HOME": str(tmp_path),
            "XDG_DATA_HOME": "/x/data",
            "XDG_RUNTIME_DIR": "/run/user/5",
            "HOME": "/x/home",  # (the HOME of the environment given, as every variable)
        },
    )
    assert cfg.source is None
    assert cfg.data_dir == Path("/x/data/memoryd")
    assert cfg.socket == Path("/run/user/5/memoryd/memoryd.sock")
    assert cfg.workspace == Path("/x/home/memoryd")
    no_runtime = load_config(None, env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert f"memoryd-{__import__('os').getuid()}" in str(no_runtime.socket)


def test_lookup_order(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    (xdg / "memoryd").mkdir(parents=True)
    (xdg / "memoryd" / "config.toml").write_text('workspace = "xdg-ws"\n')
    env_file = tmp_path / "env.toml"
    env_file.write_text('workspace = "env-ws"\n')
    explicit = tmp_path / "explicit.toml"
    explicit.write_text('workspace = "explicit-ws"\n')
    env = {"XDG_CONFIG_HOME": str(xdg), "MEMORYD_CONFIG": str(env_file)}
    assert load_config(explicit, env=env).workspace == tmp_path / "explicit-ws"
    assert load_config(None, env=env).workspace == tmp_path / "env-ws"
    del env["MEMORYD_CONFIG"]
    assert load_config(None, env=env).workspace == xdg / "memoryd" / "xdg-ws"
    with pytest.raises(ConfigError, match="no configuration file"):
        find_config_file(tmp_path / "missing.toml", env=env)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"serach": {}}, "unknown key 'serach' (did you mean 'search'?)"),
        ({"search": {"rrf": 1}}, "unknown key 'search.rrf' (did you mean 'rrf_k'?)"),
        ({"indexer": {"debounce_ms": "abc"}}, "indexer.debounce_ms: expected an integer from 0"),
        ({"indexer": {"debounce_ms": True}}, "indexer.debounce_ms: expected an integer"),
        ({"indexer": {"debounce_ms": 60001}}, "indexer.debounce_ms"),
        ({"search": {"fusion": "max"}}, "search.fusion: expected one of rrf, weighted"),
        ({"search": {"default_limit": 50, "max_limit": 20}}, "search.default_limit"),
        ({"indexer": {"chunk_max_tokens": 64, "chunk_overlap_tokens": 64}}, "chunk_overlap"),
        ({"indexer": {"include": "*.md"}}, "indexer.include: expected a list"),
        ({"jobs": {"expiry_interval": "soon"}}, "jobs.expiry_interval: expected a duration"),
        ({"jobs": {"expiry_interval": -5}}, "jobs.expiry_interval: must be positive"),
        ({"dailylog": {"line_format": "{content} {mood}"}}, "unknown placeholder {mood}"),
        ({"dailylog": {"folder": "../outside"}}, "dailylog.folder"),
        ({"logging": {"level": "loud"}}, "logging.level"),
        ({"socket": "/tmp/" + "x" * 120}, "longer than 100 bytes"),
        ({"workspace": 5}, "workspace: expected a path"),
        ({"search": 3}, "search: expected a table"),
    ],
)
def test_validation_names_the_key(data: dict, message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        Config.from_dict(data)
    assert message in exc.value.message
    assert "\n" not in exc.value.message


def test_every_bad_key_and_value_is_named_at_once() -> None:
    """A configuration with several mistakes names each of them in one line, so a person fixes
    them in one go instead of one per start."""
    data = {
        "bogus": 1,
        "workspace": 5,
        "search": {"entity_weight": "x", "serach_limit": 3},
        "indexer": {"chunk_max_tokens": 0},
        "jobs": 7,
    }
    with pytest.raises(ConfigError) as exc:
        Config.from_dict(data)
    for part in (
        "unknown key 'bogus'",
        "workspace: expected a path",
        "search.entity_weight: expected a number",
        "unknown key 'search.serach_limit'",
        "indexer.chunk_max_tokens: expected an integer",
        "jobs: expected a table",
    ):
        assert part in exc.value.message
    assert "\n" not in exc.value.message


def test_toml_syntax_error_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[search\nrrf_k = 1\n")
    with pytest.raises(ConfigError, match=r"bad\.toml:1:8: invalid TOML: .* \(\[search\)$"):
        load_config(bad, env={})
    bad.write_text('workspace = "w"\n[logging]\nlevel = debug\n')  # a bare word: quotes
    with pytest.raises(ConfigError, match=r'bad\.toml:3:9: invalid TOML: .*level = "debug"'):
        load_config(bad, env={})
    bad.write_text("[store]\ndsn = postgresql://u:hunter2@db/m\n")  # no quotes, a password
    with pytest.raises(ConfigError) as exc:
        load_config(bad, env={})
    assert "(dsn = ...)" in exc.value.message and "hunter2" not in exc.value.message


def test_environment_overrides(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text('[logging]\nlevel = "error"\n')
    env = {
        "MEMORYD_LOGGING_LEVEL": "debug",
        "MEMORYD_EMBEDDING_ENABLED": "false",
        "MEMORYD_INDEXER_INCLUDE": "**/*.md, **/*.txt",
        "MEMORYD_SEARCH_RRF_K": "10",
        "MEMORYD_WORKSPACE": str(tmp_path / "w"),
        "MEMORYD_CONFIG": str(f),
    }
    cfg = load_config(None, env=env)
    assert cfg.logging.level == "debug"  # env wins over the file
    assert cfg.embedding.enabled is False
    assert cfg.indexer.include == ["**/*.md", "**/*.txt"]
    assert cfg.search.rrf_k == 10 and cfg.workspace == tmp_path / "w"
    with pytest.raises(ConfigError, match="MEMORYD_SEARCH_RRFK"):
        load_config(None, env={"MEMORYD_SEARCH_RRFK": "1"})
    with pytest.raises(ConfigError, match=r"search\.rrf_k"):
        load_config(None, env={"MEMORYD_SEARCH_RRF_K": "many"})


def test_diff_and_reloadable_split() -> None:
    old = Config.from_dict({"workspace": "/a"})
    new = Config.from_dict(
        {
            "workspace": "/b",
            "logging": {"level": "debug"},
            "search": {"rrf_k": 5},
            "embedding": {"batch_size": 16},
        }
    )
    keys = {k for k, _, _ in diff(old, new)}
    assert keys == {"workspace", "logging.level", "search.rrf_k", "embedding.batch_size"}
    assert sorted(needs_restart(diff(old, new))) == ["embedding.batch_size", "workspace"]
    applied_cfg, applied, restart = apply_reloadable(old, new)
    assert sorted(applied) == ["logging.level", "search.rrf_k"]
    assert applied_cfg.logging.level == "debug" and applied_cfg.search.rrf_k == 5
    assert applied_cfg.workspace == Path("/a") and applied_cfg.embedding.batch_size == 8
    assert sorted(restart) == ["embedding.batch_size", "workspace"]


def test_show_round_trips_through_toml() -> None:
    cfg = Config.from_dict(
        {
            "workspace": "/w",
            "data_dir": "/d",
            "socket": "/s/m.sock",
            "search": {"fusion": "weighted"},
        }
    )
    again = Config.from_dict(tomllib.loads(to_toml(cfg)))
    assert again == cfg


def test_memoryd_config_commands(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text("[search]\nrrf_k = 7\n")
    out = subprocess.run(
        [sys.executable, "-m", "memoryd", "config", "show", "--config", str(f)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "rrf_k = 7" in out.stdout
    out = subprocess.run(
        [sys.executable, "-m", "memoryd", "config", "check", "--config", str(f)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "ok" in out.stdout
    out = subprocess.run(
        [sys.executable, "-m", "memoryd", "--help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and "service" in out.stdout and "memoryctl" in out.stdout


@pytest.mark.parametrize("pattern", ["#notes", "[", "!", "\\"])
def test_a_pattern_that_cannot_match_stops_startup(pattern: str) -> None:
    with pytest.raises(ConfigError, match=r"indexer\.exclude: .* is not a gitignore pattern"):
        Config.from_dict({"indexer": {"exclude": ["drafts/", pattern]}})
    ok = Config.from_dict({"indexer": {"exclude": ["[!a-c]*.md", "!keep.md", "\\#x.md"]}})
    assert ok.indexer.exclude == ["[!a-c]*.md", "!keep.md", "\\#x.md"]


def _default(section: str, key: str) -> object:
    return getattr(getattr(Config.from_dict({}), section), key)


def test_defaults_quoted_in_the_docs_are_the_code_s() -> None:
    """README's configuration table (`[section]` | `key = value`, ...) and the key | default
    tables of docs/configuration.md quote defaults: each must be the code's (README said
    keyword_weight = 0.7 while the code and config.example.toml said 0.6)."""
    quoted: list[tuple[str, str, str, str]] = []  # (where, section, key, TOML value)
    for line in (ROOT / "README.md").read_text().splitlines():
        row = re.match(r"\| `\[(\w+)\]` \| (.*?) \|", line)
        if row:
            for key, value in re.findall(r"`(\w+) = ([^`]+)`", row.group(2)):
                quoted.append(("README.md", row.group(1), key, value))
    doc = (ROOT / "docs" / "configuration.md").read_text()
    for part in re.split(r"\n## ", doc)[1:]:
        title = re.match(r"`\[(\w+)\]`", part)
        if not title:
            continue
        for key, value in re.findall(r"^\| `(\w+)` \| `([^`]+)` \|", part, flags=re.M):
            quoted.append(("docs/configuration.md", title.group(1), key, value))
    assert len(quoted) >= 15, quoted
    wrong = []
    for where, section, key, value in quoted:
        if value.endswith("..."):
            continue
        assert key in {f.name for f in dataclasses.fields(SECTIONS[section])}, (where, key)
        said = tomllib.loads(f"v = {value}")["v"]
        if said != _default(section, key):
            wrong.append(
                f"{where}: {section}.{key} = {value}, the code's is {_default(section, key)!r}"
            )
    assert not wrong, wrong


def test_an_environment_variable_nothing_reads_is_named() -> None:
    """MEMORYD_LOG_LEVEL=debug (for MEMORYD_LOGGING_LEVEL) was ignored without a word, while a
    misspelt key of a known section stops startup: `config check` and the daemon's log name it,
    with the variable meant. Every override the docs name is read; the clients' are left be."""
    from memoryd.core.config import OTHER_ENV, env_names, unread_env

    env = {
        "MEMORYD_LOG_LEVEL": "debug",
        "MEMORYD_SERACH_FUZZY": "off",
        "MEMORYD_NAMESPACE": "agent",
        "MEMORYD_MCP_PREFIX": "m_",
        "MEMORYD_CONFIG": "/nowhere",
        **{name: "1" for name in env_names()},
    }
    assert unread_env(env) == [
        ("MEMORYD_LOG_LEVEL", "MEMORYD_LOGGING_LEVEL"),
        ("MEMORYD_SERACH_FUZZY", "MEMORYD_SEARCH_FUZZY"),
    ]
    docs = (ROOT / "README.md").read_text() + (ROOT / "docs" / "configuration.md").read_text()
    named = {
        name
        for name in re.findall(r"MEMORYD_[A-Z_]+[A-Z]", docs)
        if name not in OTHER_ENV and not name.startswith("MEMORYD_TEST_")
    } - {"MEMORYD_LOG_LEVEL"}  # the docs' example of a misspelt section
    assert named - set(env_names()) == set()
    out = subprocess.run(
        [sys.executable, "-m", "memoryd", "config", "check"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MEMORYD_LOG_LEVEL": "debug"},
    )
    assert out.returncode == 0
    assert (
        "MEMORYD_LOG_LEVEL is not a setting memoryd reads (did you mean MEMORYD_LOGGING_LEVEL?)"
        in out.stderr
    )
