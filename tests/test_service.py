"""Service files and `memoryd service`: no service manager runs in CI, so test what we write and
run the commands against fake `systemctl`/`launchctl` scripts that record their arguments."""

from __future__ import annotations

import argparse
import os
import plistlib
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from memoryd.core.errors import ConfigError
from memoryd.serve import service

PYTHON = os.path.abspath(sys.executable)

FAKE_SYSTEMCTL = """#!/bin/sh
echo "systemctl $*" >> "$FAKE_CALLS"
if [ -e "$FAKE_FAIL" ]; then echo "Failed to connect to bus: No medium found" >&2; exit 1; fi
case "$2" in status) echo "memoryd.service - memoryd"; exit 3;; esac
exit 0
"""

# launchd in miniature: bootstrap loads the agent, bootout unloads it, print says which.
FAKE_LAUNCHCTL = """#!/bin/sh
echo "launchctl $*" >> "$FAKE_CALLS"
case "$1" in
  print) [ -e "$FAKE_LOADED" ] && { echo "state = running"; exit 0; }
         echo "Could not find service" >&2; exit 113;;
  bootstrap) touch "$FAKE_LOADED";;
  bootout) rm -f "$FAKE_LOADED";;
esac
exit 0
"""


class Fake:
    def __init__(self, tmp_path: Path) -> None:
        self.home = tmp_path / "home"
        self.bin = tmp_path / "bin"
        self.calls_file = tmp_path / "calls.txt"
        self.fail_file = tmp_path / "fail"
        self.loaded_file = tmp_path / "loaded"
        self.unit_dir = self.home / ".config" / "systemd" / "user"
        self.plist = self.home / "Library" / "LaunchAgents" / f"{service.LABEL}.plist"
        self.target = f"gui/{os.getuid()}/{service.LABEL}"
        self.runtime = tmp_path / "runtime"

    def calls(self) -> list[str]:
        if not self.calls_file.exists():
            return []
        lines = self.calls_file.read_text().splitlines()
        self.calls_file.unlink()
        return lines


@pytest.fixture
def fake(tmp_path: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Fake:
    """HOME in tmp, fake systemctl/launchctl first on PATH."""
    f = Fake(tmp_path)
    f.home.mkdir()
    f.bin.mkdir()
    for name, script in (("systemctl", FAKE_SYSTEMCTL), ("launchctl", FAKE_LAUNCHCTL)):
        (f.bin / name).write_text(script)
        (f.bin / name).chmod(0o755)
    monkeypatch.setenv("HOME", str(f.home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(f.home / ".config"))
    monkeypatch.setenv("PATH", f"{f.bin}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CALLS", str(f.calls_file))
    monkeypatch.setenv("FAKE_FAIL", str(f.fail_file))
    monkeypatch.setenv("FAKE_LOADED", str(f.loaded_file))
    monkeypatch.setattr(service, "BOOTOUT_WAIT", 2.0)
    # a user manager's private socket, as systemd makes it (the fake systemctl needs none)
    f.runtime = short_dir  # short: a config checked at install puts its socket there
    (f.runtime / "systemd").mkdir(parents=True)
    (f.runtime / "systemd" / "private").touch()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(f.runtime))
    return f


@pytest.fixture(params=["systemd", "launchd"])
def kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(service, "platform_kind", lambda: request.param)
    return str(request.param)


@pytest.fixture
def systemd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service, "platform_kind", lambda: "systemd")


@pytest.fixture
def launchd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service, "platform_kind", lambda: "launchd")


def memoryd_service(*argv: str) -> int:
    """`memoryd service ARGV` through the same parser cli.py builds."""
    parser = argparse.ArgumentParser(prog="memoryd")
    service.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["service", *argv])
    return int(args.func(args))


def tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mode for p in sorted(root.rglob("*"))}


# --- rendering ---------------------------------------------------------------------------------


def test_repository_copies_match_the_templates() -> None:
    for rel, content in service.reference_files().items():
        assert (ROOT / rel).read_text() == content, f"{rel} drifted: regenerate it from service.py"


def test_unit_has_what_the_daemon_relies_on() -> None:
    lines = service.render_unit("/opt/py/bin/python", Path("/etc/m.toml")).splitlines()
    for line in (
        "Type=notify",
        "NotifyAccess=main",
        "ExecStart=/opt/py/bin/python -m memoryd run --config /etc/m.toml",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "Restart=on-failure",
        "RestartPreventExitStatus=2",  # memoryd run's status for a configuration error
        "RestartSec=2",
        "WatchdogSec=30s",
        "TimeoutStopSec=30s",
        "UMask=0077",
        "StandardError=journal",
        "Environment=PATH=/opt/py/bin:/usr/local/bin:/usr/bin:/bin",
        "NoNewPrivileges=yes",
        "WantedBy=default.target",
    ):
        assert line in lines
    unit_section = lines[lines.index("[Unit]") : lines.index("[Service]")]
    assert any(ln.startswith("StartLimitIntervalSec=") for ln in unit_section)
    assert any(ln.startswith("StartLimitBurst=") for ln in unit_section)
    # Mount-namespace sandboxing needs a user namespace in user units, which Ubuntu and many
    # containers refuse: the unit would fail to start. ProtectHome=yes would hide the workspace.
    for key in ("ProtectSystem=", "ProtectHome=", "PrivateTmp=", "PrivateUsers="):
        assert not any(ln.startswith(key) for ln in lines), key


def test_unit_quotes_blanks_and_escapes_specifiers() -> None:
    unit = service.render_unit("/opt/my py/bin/python", Path("/cfg/100%$.toml"))
    assert (
        'ExecStart="/opt/my py/bin/python" -m memoryd run --config /cfg/100%%$$.toml'
        in unit.splitlines()
    )
    assert 'Environment="PATH=/opt/my py/bin:/usr/local/bin:/usr/bin:/bin"' in unit.splitlines()


def test_socket_unit() -> None:
    lines = service.render_socket().splitlines()
    for line in (
        "ListenStream=%t/memoryd/memoryd.sock",
        "SocketMode=0600",
        "DirectoryMode=0700",
        "WantedBy=sockets.target",
    ):
        assert line in lines


def test_plist_parses_with_the_expected_keys(tmp_path: Path) -> None:
    text = service.render_plist("/opt/py/bin/python", Path("/etc/m.toml"), tmp_path)
    data = plistlib.loads(text.encode())
    assert data["Label"] == service.LABEL
    assert data["ProgramArguments"] == [
        "/opt/py/bin/python",
        "-m",
        "memoryd",
        "run",
        "--config",
        "/etc/m.toml",
        "--config-error-status",  # launchd restarts every status but 0 (test_daemon_fatal.py)
        "0",
    ]
    assert data["RunAtLoad"] is True
    assert data["KeepAlive"] == {"SuccessfulExit": False}
    assert data["ThrottleInterval"] == 30  # a failed start tried again each half minute
    assert data["ProcessType"] == "Adaptive"
    assert data["Umask"] == 63
    logs = tmp_path / "Library" / "Logs" / "memoryd"
    assert Path(data["StandardOutPath"]).parent == logs
    assert Path(data["StandardErrorPath"]).parent == logs
    assert data["EnvironmentVariables"]["PATH"].startswith("/opt/py/bin:")
    reference_text = service.reference_files()[f"launchd/{service.LABEL}.plist"]
    reference = plistlib.loads(reference_text.encode())
    assert reference.keys() == data.keys()


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze not installed")
def test_systemd_analyze_verifies_the_units(tmp_path: Path) -> None:
    units = tmp_path / "units"
    units.mkdir()
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    # ExecStart must name an executable that exists: this test's Python.
    (units / "memoryd.service").write_text(service.render_unit(PYTHON, tmp_path / "m.toml"))
    (units / "memoryd.socket").write_text(service.render_socket())
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), HOME=str(tmp_path))
    res = subprocess.run(
        [
            "systemd-analyze",
            "--user",
            "verify",
            str(units / "memoryd.service"),
            str(units / "memoryd.socket"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    if res.returncode != 0 and "Failed to initialize manager" in res.stderr:
        pytest.skip(f"systemd-analyze --user cannot run here: {res.stderr.strip()}")
    assert res.returncode == 0, res.stderr
    # Unknown keys and bad values are only warnings: fail on any line about our files.
    assert str(units) not in res.stderr, res.stderr


# --- platform ----------------------------------------------------------------------------------


def test_platform_detection(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert service.platform_kind() == "launchd"
    monkeypatch.setattr(sys, "platform", "freebsd14")
    assert service.platform_kind() is None
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("PATH", str(tmp_path))  # no systemctl
    assert service.platform_kind() is None


def test_unsupported_platform_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(service, "platform_kind", lambda: None)
    assert memoryd_service("install", "--dry-run") == 1
    assert "memoryd run" in capsys.readouterr().err


# --- dry run -----------------------------------------------------------------------------------


def test_dry_run_prints_everything_and_touches_nothing(
    fake: Fake, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tree(tmp_path)
    assert memoryd_service("install", "--dry-run") == 0
    out = capsys.readouterr().out
    assert tree(tmp_path) == before
    assert fake.calls() == []
    assert PYTHON in out
    if kind == "systemd":
        unit = fake.unit_dir / "memoryd.service"
        assert f"would write {unit} (mode 0644):" in out
        assert "Type=notify" in out
        assert "would run: systemctl --user daemon-reload" in out
        assert "would run: systemctl --user enable --now memoryd.service" in out
        assert "loginctl enable-linger" in out
    else:
        assert f"would write {fake.plist} (mode 0644):" in out
        assert "<string>io.memoryd.daemon</string>" in out
        assert f"would run (if loaded): launchctl bootout {fake.target}" in out
        assert f"would run: launchctl bootstrap gui/{os.getuid()} {fake.plist}" in out
    for action in ("uninstall", "status"):
        assert memoryd_service(action, "--dry-run") == 0
    assert tree(tmp_path) == before
    assert fake.calls() == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the CLI picks the platform")
def test_cli_dry_run(fake: Fake, tmp_path: Path) -> None:
    """Through `python -m memoryd`: cli.py wires the subcommand in."""
    before = tree(tmp_path)
    res = subprocess.run(
        [PYTHON, "-m", "memoryd", "service", "install", "--dry-run", "--socket-activation"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr
    assert f"ExecStart={PYTHON} -m memoryd run" in res.stdout
    assert "ListenStream=%t/memoryd/memoryd.sock" in res.stdout
    assert "would run: systemctl --user enable --now memoryd.socket" in res.stdout
    assert tree(tmp_path) == before


# --- systemd -----------------------------------------------------------------------------------


def test_systemd_install_update_uninstall(
    fake: Fake, systemd: None, capsys: pytest.CaptureFixture[str]
) -> None:
    unit = fake.unit_dir / "memoryd.service"
    assert memoryd_service("install") == 0
    assert fake.calls() == [
        "systemctl --user daemon-reload",
        "systemctl --user enable --now memoryd.service",
    ]
    assert unit.read_text() == service.render_unit(PYTHON, None)
    assert stat.S_IMODE(unit.stat().st_mode) == 0o644
    out = capsys.readouterr().out
    assert "$ systemctl --user daemon-reload" in out
    assert "loginctl enable-linger $USER" in out

    # Again: the running daemon is restarted onto the new unit.
    assert memoryd_service("install") == 0
    assert fake.calls() == [
        "systemctl --user daemon-reload",
        "systemctl --user try-restart memoryd.service",
        "systemctl --user enable --now memoryd.service",
    ]

    assert memoryd_service("status") == 3  # systemctl status's own exit status
    assert fake.calls() == ["systemctl --user status --no-pager memoryd.service"]
    assert "memoryd.service - memoryd" in capsys.readouterr().out

    assert memoryd_service("uninstall") == 0
    assert fake.calls() == [
        "systemctl --user disable --now memoryd.service",
        "systemctl --user daemon-reload",
    ]
    assert not unit.exists()

    assert memoryd_service("uninstall") == 0  # nothing installed: nothing to do
    assert fake.calls() == []
    assert "not installed" in capsys.readouterr().out


def test_systemd_socket_activation_and_config(fake: Fake, systemd: None, tmp_path: Path) -> None:
    config = tmp_path / "memoryd.toml"
    config.write_text("")
    rel = os.path.relpath(config)
    assert memoryd_service("install", "--socket-activation", "--config", rel) == 0
    assert fake.calls() == [
        "systemctl --user daemon-reload",
        "systemctl --user enable --now memoryd.socket",
    ]
    unit = (fake.unit_dir / "memoryd.service").read_text()
    assert f"ExecStart={PYTHON} -m memoryd run --config {config}" in unit.splitlines()
    sock = fake.unit_dir / "memoryd.socket"
    assert sock.read_text() == service.render_socket()
    assert stat.S_IMODE(sock.stat().st_mode) == 0o644

    assert memoryd_service("status") == 3
    assert fake.calls() == ["systemctl --user status --no-pager memoryd.service memoryd.socket"]

    # Reinstalled without activation: the socket unit goes away.
    assert memoryd_service("install") == 0
    assert fake.calls() == [
        "systemctl --user disable --now memoryd.socket",
        "systemctl --user daemon-reload",
        "systemctl --user try-restart memoryd.service",
        "systemctl --user enable --now memoryd.service",
    ]
    assert not sock.exists()

    assert memoryd_service("install", "--socket-activation") == 0
    assert fake.calls()[-2:] == [
        "systemctl --user enable --now memoryd.socket",
        "systemctl --user try-restart memoryd.service",
    ]
    assert memoryd_service("uninstall") == 0
    assert fake.calls() == [
        "systemctl --user disable --now memoryd.socket memoryd.service",
        "systemctl --user daemon-reload",
    ]
    assert not sock.exists() and not (fake.unit_dir / "memoryd.service").exists()


def test_systemd_unit_dir_defaults_to_home_config(
    fake: Fake, systemd: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(fake.home / "elsewhere"))
    assert memoryd_service("install") == 0
    assert (fake.home / "elsewhere" / "systemd" / "user" / "memoryd.service").exists()
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert memoryd_service("install") == 0
    assert (fake.unit_dir / "memoryd.service").exists()


def test_a_failing_command_stops_with_its_stderr(
    fake: Fake, systemd: None, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.fail_file.touch()
    assert memoryd_service("install") == 1
    assert fake.calls() == ["systemctl --user daemon-reload"]  # and nothing after it
    err = capsys.readouterr().err
    assert "Failed to connect to bus" in err
    assert "exited with 1" in err and "login session" in err


def test_without_a_user_manager_install_writes_nothing_and_uninstall_still_removes(
    fake: Fake, systemd: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert memoryd_service("install") == 0
    fake.calls()
    (fake.runtime / "systemd" / "private").unlink()  # no user manager: systemctl --user fails
    fake.fail_file.touch()
    unit = fake.unit_dir / "memoryd.service"
    before = unit.read_text()
    unit.write_text(before + "# edited\n")
    capsys.readouterr()
    assert memoryd_service("install") == 1
    err = capsys.readouterr().err
    assert "no systemd user manager is running" in err and "nothing was written" in err
    assert fake.calls() == [] and unit.read_text() == before + "# edited\n"
    # a dry run says so too, and still prints the plan
    assert memoryd_service("install", "--dry-run") == 0
    assert "a real install would fail" in capsys.readouterr().err
    # uninstall: `disable` fails, the unit goes all the same (and the failure is the status)
    assert memoryd_service("uninstall") == 1
    assert fake.calls() == [
        "systemctl --user disable --now memoryd.service",
        "systemctl --user daemon-reload",
    ]
    assert not unit.exists()
    assert "Failed to connect to bus" in capsys.readouterr().err


def test_install_from_a_development_checkout_warns(
    fake: Fake, systemd: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the tests import memoryd from the repository itself: a development checkout
    assert service.development_checkout() == ROOT
    assert memoryd_service("install", "--dry-run") == 0
    err = capsys.readouterr().err
    assert f"development checkout ({ROOT})" in err and "pipx install memoryd" in err
    monkeypatch.setattr(service, "development_checkout", lambda: None)  # a real install
    assert memoryd_service("install", "--dry-run") == 0
    assert "development checkout" not in capsys.readouterr().err


def test_config_must_exist_and_be_valid(fake: Fake, systemd: None, tmp_path: Path) -> None:
    assert memoryd_service("install", "--config", str(tmp_path / "missing.toml")) == 2
    bad = tmp_path / "bad.toml"
    bad.write_text("this is = = not toml")
    with pytest.raises(ConfigError):  # cli.py reports it and exits 2
        memoryd_service("install", "--config", str(bad))
    assert fake.calls() == []
    assert not fake.unit_dir.exists()


@pytest.mark.parametrize("spelling", ["link", "$CONFS/memoryd.toml"])
def test_the_unit_names_the_config_as_memoryd_run_reads_it(
    spelling: str, fake: Fake, systemd: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A symlinked configuration (a dotfiles layout) stays the link: its relative paths are
    relative to the link's folder for `memoryd run --config LINK`, and the service must read
    the same ones (it resolved the link, so the service's workspace was another folder); a
    `$VAR` in --config is expanded as `memoryd run` expands it."""
    real = tmp_path / "dotfiles" / "memoryd.toml"
    real.parent.mkdir()
    real.write_text('workspace = "notes"\n')
    folder = tmp_path / "conf"
    folder.mkdir()
    (folder / "memoryd.toml").symlink_to(real)
    monkeypatch.setenv("CONFS", str(folder))
    given = str(folder / "memoryd.toml") if spelling == "link" else spelling
    assert memoryd_service("install", "--config", given) == 0
    unit = (fake.unit_dir / "memoryd.service").read_text()
    named = folder / "memoryd.toml"
    assert f"ExecStart={PYTHON} -m memoryd run --config {named}" in unit.splitlines()
    from memoryd.core.config import load_config

    assert load_config(named, {}).workspace == folder / "notes"
    assert memoryd_service("install", "--config", "$NOT_SET_HERE/m.toml") == 2


# --- launchd -----------------------------------------------------------------------------------


def test_launchd_install_update_uninstall(
    fake: Fake, launchd: None, capsys: pytest.CaptureFixture[str]
) -> None:
    domain = f"gui/{os.getuid()}"
    assert memoryd_service("install") == 0
    assert fake.calls() == [
        f"launchctl print {fake.target}",  # not loaded: no bootout
        f"launchctl bootstrap {domain} {fake.plist}",
        f"launchctl kickstart {fake.target}",
    ]
    data = plistlib.loads(fake.plist.read_bytes())
    assert data["ProgramArguments"] == [
        PYTHON,
        "-m",
        "memoryd",
        "run",
        "--config-error-status",
        "0",
    ]
    assert stat.S_IMODE(fake.plist.stat().st_mode) == 0o644
    assert Path(data["StandardErrorPath"]).parent.is_dir()  # launchd will not create it
    assert f"$ launchctl bootstrap {domain} {fake.plist}" in capsys.readouterr().out

    assert memoryd_service("install") == 0  # loaded: bootout first, wait until it is gone
    assert fake.calls() == [
        f"launchctl print {fake.target}",
        f"launchctl bootout {fake.target}",
        f"launchctl print {fake.target}",
        f"launchctl bootstrap {domain} {fake.plist}",
        f"launchctl kickstart {fake.target}",
    ]

    assert memoryd_service("status") == 0
    assert fake.calls() == [f"launchctl print {fake.target}"]

    assert memoryd_service("uninstall") == 0
    assert fake.calls() == [
        f"launchctl print {fake.target}",
        f"launchctl bootout {fake.target}",
        f"launchctl print {fake.target}",
    ]
    assert not fake.plist.exists()
    assert memoryd_service("status") == 113


def test_launchd_ignores_socket_activation(
    fake: Fake, launchd: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert memoryd_service("install", "--socket-activation", "--dry-run") == 0
    assert "ignored with launchd" in capsys.readouterr().err


def test_install_warns_of_what_the_service_would_read_otherwise(
    fake: Fake,
    systemd: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The service does not see this shell's variables: a `$NOTES` in a path (set here, unset
    there: a configuration error at every start of the unit), or an XDG_DATA_HOME that moves
    data_dir, is said at install, while a config that reads the same both ways says nothing."""
    cfg = tmp_path / "svc.toml"
    cfg.write_text('workspace = "$NOTES/vault"\n')
    monkeypatch.setenv("NOTES", str(tmp_path / "n"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert memoryd_service("install", "--dry-run", "--config", str(cfg)) == 0
    err = capsys.readouterr().err
    assert "under the service manager" in err and "workspace: $NOTES is not set" in err, err
    cfg.write_text(f'workspace = "{tmp_path}/vault"\n')
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "elsewhere"))
    assert memoryd_service("install", "--dry-run", "--config", str(cfg)) == 0
    err = capsys.readouterr().err
    assert f"data_dir is {fake.home}/.local/share/memoryd under the service" in err, err
    cfg.write_text(f'workspace = "{tmp_path}/vault"\ndata_dir = "{tmp_path}/data"\n')
    assert memoryd_service("install", "--dry-run", "--config", str(cfg)) == 0
    assert "under the service" not in capsys.readouterr().err
