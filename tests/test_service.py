"""Service files and `memoryd service`: no service manager runs in CI, so test what we write."""

from __future__ import annotations

import os
import plistlib
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from memoryd import service


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", "service", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.fixture
def fake_home(tmp_path: Path) -> dict[str, str]:
    """HOME in tmp, and fake systemctl/launchctl first on PATH that record their argv."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "calls.txt"
    for tool in ("systemctl", "launchctl", "loginctl"):
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{record}"\n')
        script.chmod(0o755)
    env = dict(os.environ)
    env.update(
        HOME=str(tmp_path / "home"),
        PATH=f"{bin_dir}:{env['PATH']}",
        XDG_CONFIG_HOME=str(tmp_path / "home" / ".config"),
    )
    (tmp_path / "home").mkdir()
    return env


def test_repository_copies_match_the_templates() -> None:
    for rel, content in service.reference_files().items():
        assert (ROOT / rel).read_text() == content, f"{rel} drifted: regenerate it"


def test_unit_has_what_the_daemon_relies_on() -> None:
    unit = service.render_unit("/opt/py/bin/python", Path("/etc/m.toml"))
    for line in (
        "Type=notify",
        "NotifyAccess=main",
        "WatchdogSec=30s",
        "Restart=on-failure",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "UMask=0077",
        "ExecStart=/opt/py/bin/python -m memoryd run --config /etc/m.toml",
    ):
        assert line in unit.splitlines()
    assert "ProtectHome=yes" not in unit  # would hide the workspace


def test_plist_parses_with_the_expected_keys(tmp_path: Path) -> None:
    data = plistlib.loads(service.render_plist("/opt/py/bin/python", None, tmp_path).encode())
    assert data["ProgramArguments"] == ["/opt/py/bin/python", "-m", "memoryd", "run"]
    assert data["RunAtLoad"] is True and data["KeepAlive"] == {"SuccessfulExit": False}
    assert data["Umask"] == 0o077
    assert all(Path(data[k]).is_absolute() for k in ("StandardOutPath", "StandardErrorPath"))


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze not installed")
def test_systemd_analyze_verifies_the_units(tmp_path: Path) -> None:
    unit = tmp_path / "memoryd.service"
    unit.write_text(service.render_unit(sys.executable, None))
    (tmp_path / "memoryd.socket").write_text(service.SOCKET_TEMPLATE)
    res = subprocess.run(
        ["systemd-analyze", "verify", str(unit), str(tmp_path / "memoryd.socket")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    problems = [ln for ln in res.stderr.splitlines() if "memoryd" in ln and "Failed" in ln]
    assert not problems, res.stderr


@pytest.mark.skipif(service.platform_kind() != "systemd", reason="needs a Linux with systemctl")
def test_dry_run_prints_and_touches_nothing(fake_home: dict[str, str], tmp_path: Path) -> None:
    out = run_cli("install", "--dry-run", env=fake_home)
    assert out.returncode == 0, out.stderr
    assert "Type=notify" in out.stdout and sys.executable in out.stdout
    assert "would run: systemctl --user enable --now memoryd.service" in out.stdout
    assert not (Path(fake_home["XDG_CONFIG_HOME"]) / "systemd").exists()
    assert not (tmp_path / "calls.txt").exists()


@pytest.mark.skipif(service.platform_kind() != "systemd", reason="needs a Linux with systemctl")
def test_install_and_uninstall_with_a_fake_systemctl(
    fake_home: dict[str, str], tmp_path: Path
) -> None:
    out = run_cli("install", "--socket-activation", env=fake_home)
    assert out.returncode == 0, out.stderr
    unit = Path(fake_home["XDG_CONFIG_HOME"]) / "systemd" / "user" / "memoryd.service"
    assert unit.exists() and stat.S_IMODE(unit.stat().st_mode) == 0o644
    assert (unit.parent / "memoryd.socket").exists()
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    assert calls == [
        "systemctl --user daemon-reload",
        "systemctl --user enable --now memoryd.socket",
    ]
    assert "enable-linger" in out.stdout
    out = run_cli("uninstall", env=fake_home)
    assert out.returncode == 0, out.stderr
    assert not unit.exists()
