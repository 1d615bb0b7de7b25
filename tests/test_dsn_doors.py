"""Every door that takes a PostgreSQL connection string reads it the way libpq does: a string
libpq cannot parse is a configuration error (exit 2, no traceback), found by `memoryd config
check` before a start; a password is refused in every spelling libpq accepts; and no message
repeats a password. The doors: store.dsn in the file, MEMORYD_STORE_DSN, `memoryd store migrate
--dsn`, and `memoryd run` itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("psycopg")

SECRET = "hunter2pw"
MALFORMED = [
    "not a dsn at all",
    "postgresql://memoryd@localhost/memoryd?nosuchparam=1",
    "postgresql://memoryd@[::1/memoryd",
    "host=db.internal dbname",
]
WITH_PASSWORD = [
    f"postgresql://memoryd:{SECRET}@localhost/memoryd",
    f"postgresql://memoryd@localhost/memoryd?password={SECRET}",
    f"postgresql://memoryd@localhost/memoryd?%70assword={SECRET}",  # libpq decodes the key
    f"host=localhost dbname=memoryd password={SECRET}",
    f"host=localhost dbname=memoryd password = '{SECRET}'",
    f"postgresql://memoryd:{SECRET}@[::1/memoryd",  # malformed too: libpq's message quotes it
    f"host=localhost password={SECRET} dbname",
]
DOORS = ["file", "env", "migrate --dsn"]


def _run_cli(door: str, dsn: str, tmp_path: Path) -> tuple[int, str]:
    cfg = tmp_path / "config.toml"
    lines = [
        f'workspace = "{tmp_path / "ws"}"',
        f'data_dir = "{tmp_path / "data"}"',
        f'socket = "{tmp_path / "s.sock"}"',
        "[store]",
        'backend = "postgres"',
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    if door == "file":
        lines.append(f"dsn = {_toml_str(dsn)}")
        args = ["config", "check", "--config", str(cfg)]
    elif door == "env":
        env["MEMORYD_STORE_DSN"] = dsn
        args = ["config", "check", "--config", str(cfg)]
    else:
        lines.append('dsn = "postgresql://memoryd@localhost/memoryd"')
        args = ["store", "migrate", "--to", "postgres", "--dsn", dsn, "--config", str(cfg)]
    cfg.write_text("\n".join(lines) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "memoryd", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return proc.returncode, proc.stdout + proc.stderr


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("dsn", MALFORMED)
def test_a_string_libpq_cannot_read_is_a_configuration_error(
    door: str, dsn: str, tmp_path: Path
) -> None:
    code, out = _run_cli(door, dsn, tmp_path)
    assert code == 2, out
    assert "Traceback" not in out
    assert "is not a PostgreSQL connection string" in out
    assert "postgresql://memoryd@db.internal" in out  # says what one looks like


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("dsn", WITH_PASSWORD)
def test_a_password_is_refused_in_every_spelling_and_never_repeated(
    door: str, dsn: str, tmp_path: Path
) -> None:
    code, out = _run_cli(door, dsn, tmp_path)
    assert code == 2, out
    assert "Traceback" not in out
    assert "password" in out and "PGPASSWORD" in out
    assert SECRET not in out


def test_the_daemon_refuses_a_malformed_dsn_before_starting(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text(
        f'workspace = "{tmp_path / "ws"}"\ndata_dir = "{tmp_path / "data"}"\n'
        f'socket = "{tmp_path / "s.sock"}"\n[store]\nbackend = "postgres"\n'
        f'dsn = "host=localhost password={SECRET} port"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    proc = subprocess.run(
        [sys.executable, "-m", "memoryd", "run", "--config", str(cfg)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out and SECRET not in out
    assert not (tmp_path / "s.sock").exists()


def test_a_well_formed_dsn_passes() -> None:
    from memoryd.core.dsn import check_dsn

    for ok in [
        "",
        "postgresql://memoryd@db.internal:5432/memoryd?sslmode=verify-full",
        "postgresql://memoryd@localhost/memoryd?host=/run/postgresql&port=5433",
        "host=db.internal dbname=memoryd user=memoryd",
    ]:
        check_dsn(ok, "store.dsn")
