"""`memoryd config show` prints TOML that tomllib reads back into the same Config, whatever the
values hold: newlines, quotes, backslashes, control characters, non-ASCII text, lists."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st
from pathspec import GitIgnoreSpec

from memoryd.core.config import Config, load_config, to_toml

ODD = "quote \" apostrophe ' backslash \\ tab \t ünïcødé 🧠 bell \x07"


def odd_config(tmp: Path) -> dict[str, Any]:
    return {
        "workspace": str(tmp / 'ws "q" \\ ü'),
        "data_dir": str(tmp / "da\\ta 'x'"),
        "socket": '/tmp/m "q" \\ ü.sock',
        "indexer": {
            "include": ["**/*.md", "notes/[abc]*.md", 'we"ird\\dir/*.md', "ünï/**"],
            "exclude": ["drafts/", "!drafts/keep.md", "*.tmp.md"],
            "skip_hidden": False,
            "debounce_ms": 250,
        },
        "search": {"keyword_weight": 0.1 + 0.2, "recency_half_life_days": 1e-3, "fusion": "RRF"},
        "embedding": {"model_path": "C:\\models\\mini", "model": ODD},
        "logging": {"file": str(tmp / 'log "q".log')},
        "dailylog": {
            "header": '# Memories {date}\n\nwritten "by" memoryd \\ ✓\n',
            "line_format": '- {time} [{type}] {content}{tags} — "q" \\\\ {{literal}}',
            "folder": "jour nal/ü",
        },
        "jobs": {"expiry_interval": "90s", "snapshot_interval": "1d", "snapshot_keep": 3},
        "lifecycle": {"temporary_ttl": "2h", "boost_deprecated": -0.25},
        "store": {"dsn": "host=/tmp dbname='a b'", "workspace_id": "team\x01ü"},
        "secrets": {"mode": "warn"},
    }


def test_config_show_round_trips_every_odd_value(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(tomli_w.dumps(odd_config(tmp_path)), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    cfg = load_config(path, env=env)
    assert cfg.dailylog.header.count("\n") == 3 and cfg.indexer.exclude[1] == "!drafts/keep.md"
    out = subprocess.run(
        [sys.executable, "-m", "memoryd", "config", "show", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    shown = tomllib.loads(out.stdout)
    assert shown["dailylog"]["header"] == cfg.dailylog.header
    assert Config.from_dict(shown, env=env) == cfg


# Every string-valued key that takes free text, with the characters TOML must escape.
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
FORMAT = TEXT.map(lambda s: s.replace("{", "{{").replace("}", "}}") + "{date}")


def _is_pattern(g: str) -> bool:
    """A gitignore pattern the config accepts (one that can match a file)."""
    try:
        return bool(g.strip()) and GitIgnoreSpec.from_lines([g]).patterns[0].include is not None
    except ValueError:
        return False


PATTERN = TEXT.filter(_is_pattern)


@settings(max_examples=60, deadline=None)
@given(
    model=TEXT,
    model_path=TEXT.map(lambda s: s.replace("$", "$$")),  # a literal $ in a path is $$
    header=FORMAT,
    line=FORMAT,
    include=st.lists(PATTERN, min_size=1, max_size=4),
)
def test_to_toml_round_trips_any_text(
    model: str, model_path: str, header: str, line: str, include: list[str]
) -> None:
    cfg = Config.from_dict(
        {
            "workspace": "/w$$x",
            "data_dir": "/d",
            "socket": "/s/m.sock",
            "embedding": {"model": model, "model_path": model_path},
            "dailylog": {"header": header, "line_format": line},
            "indexer": {"include": include},
        },
        env={},
    )
    assert Config.from_dict(tomllib.loads(to_toml(cfg)), env={}) == cfg
