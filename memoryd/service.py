"""`memoryd service install | uninstall | status`: run memoryd as a user service.

Linux: a systemd user unit (Type=notify, watchdog, restart on failure), optionally with a socket
unit for activation. macOS: a launchd agent. The files are rendered from the templates below with
this installation's absolute paths; the copies in the repository's systemd/ and launchd/ folders
are rendered from the same templates (a test keeps them equal).
"""

from __future__ import annotations

import argparse
import os
import plistlib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

LABEL = "io.memoryd.daemon"

SERVICE_TEMPLATE = """\
# memoryd as a systemd user service. Installed by `memoryd service install`.
# Logs: journalctl --user -u memoryd    Reload settings: systemctl --user reload memoryd
[Unit]
Description=memoryd: local memory daemon for markdown notes and agent memories
StartLimitIntervalSec=300
StartLimitBurst=5

[Service]
Type=notify
NotifyAccess=main
ExecStart={exec_start}
ExecReload=/bin/kill -HUP $MAINPID
Restart=on-failure
RestartSec=2
WatchdogSec=30s
TimeoutStopSec=30s
UMask=0077
Environment=PYTHONUNBUFFERED=1
StandardError=journal
NoNewPrivileges=yes
ProtectSystem=full
PrivateTmp=no

[Install]
WantedBy=default.target
"""

SOCKET_TEMPLATE = """\
# Socket activation for memoryd: the first memoryctl query starts the daemon.
[Unit]
Description=memoryd socket

[Socket]
ListenStream=%t/memoryd/memoryd.sock
SocketMode=0600
DirectoryMode=0700

[Install]
WantedBy=sockets.target
"""


@dataclass(frozen=True)
class Plan:
    files: dict[Path, str]
    commands: list[list[str]]
    notes: list[str]


def exec_args(python: str, config: Path | None) -> list[str]:
    args = [python, "-m", "memoryd", "run"]
    if config is not None:
        args += ["--config", str(config)]
    return args


def render_unit(python: str, config: Path | None) -> str:
    return SERVICE_TEMPLATE.format(exec_start=" ".join(exec_args(python, config)))


def render_plist(python: str, config: Path | None, home: Path) -> str:
    logs = home / "Library" / "Logs" / "memoryd"
    data = {
        "Label": LABEL,
        "ProgramArguments": exec_args(python, config),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ProcessType": "Adaptive",
        "Umask": 63,
        "StandardOutPath": str(logs / "memoryd.out.log"),
        "StandardErrorPath": str(logs / "memoryd.err.log"),
        "EnvironmentVariables": {
            "PATH": "/usr/local/bin:/opt/homebrew/bin:/usr/bin:/bin",
            "PYTHONUNBUFFERED": "1",
        },
    }
    return plistlib.dumps(data).decode()


def platform_kind() -> str:
    if sys.platform == "darwin":
        return "launchd"
    if sys.platform.startswith("linux") and shutil.which("systemctl"):
        return "systemd"
    return "unsupported"


def plan(action: str, *, kind: str, config: Path | None, socket_activation: bool) -> Plan:
    home = Path.home()
    python = sys.executable
    if kind == "systemd":
        base = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "systemd" / "user"
        unit = base / "memoryd.service"
        sock = base / "memoryd.socket"
        target = "memoryd.socket" if socket_activation else "memoryd.service"
        if action == "install":
            files = {unit: render_unit(python, config)}
            if socket_activation:
                files[sock] = SOCKET_TEMPLATE
            return Plan(
                files,
                [
                    ["systemctl", "--user", "daemon-reload"],
                    ["systemctl", "--user", "enable", "--now", target],
                ],
                ["To keep memoryd running after you log out: loginctl enable-linger $USER"],
            )
        if action == "uninstall":
            return Plan(
                {},
                [
                    [
                        "systemctl",
                        "--user",
                        "disable",
                        "--now",
                        "memoryd.socket",
                        "memoryd.service",
                    ],
                    ["rm", "-f", str(unit), str(sock)],
                    ["systemctl", "--user", "daemon-reload"],
                ],
                [],
            )
        return Plan({}, [["systemctl", "--user", "status", "--no-pager", "memoryd.service"]], [])
    if kind == "launchd":
        uid = os.getuid()
        plist = home / "Library" / "LaunchAgents" / f"{LABEL}.plist"
        if action == "install":
            (home / "Library" / "Logs" / "memoryd").mkdir(parents=True, exist_ok=True)
            return Plan(
                {plist: render_plist(python, config, home)},
                [
                    ["launchctl", "bootout", f"gui/{uid}/{LABEL}"],
                    ["launchctl", "bootstrap", f"gui/{uid}", str(plist)],
                    ["launchctl", "kickstart", "-k", f"gui/{uid}/{LABEL}"],
                ],
                [f"Logs: {home}/Library/Logs/memoryd/"],
            )
        if action == "uninstall":
            return Plan(
                {}, [["launchctl", "bootout", f"gui/{uid}/{LABEL}"], ["rm", "-f", str(plist)]], []
            )
        return Plan({}, [["launchctl", "print", f"gui/{uid}/{LABEL}"]], [])
    raise ValueError(kind)


def execute(p: Plan, *, dry_run: bool, action: str) -> int:
    for path, content in p.files.items():
        if dry_run:
            print(f"# would write {path}:\n{content}")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
            os.chmod(path, 0o644)
            print(f"wrote {path}")
    for cmd in p.commands:
        line = " ".join(cmd)
        if dry_run:
            print(f"would run: {line}")
            continue
        if cmd[0] == "rm":
            for name in cmd[2:]:
                Path(name).unlink(missing_ok=True)
            print(f"ran: {line}")
            continue
        print(f"running: {line}")
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            print(f"memoryd: {line} failed: {exc}", file=sys.stderr)
            return 1
        if res.stdout.strip():
            print(res.stdout.rstrip())
        tolerated = cmd[:2] == ["launchctl", "bootout"] or "disable" in cmd
        if res.returncode != 0 and not tolerated:
            print(res.stderr.rstrip(), file=sys.stderr)
            if action == "status":
                return res.returncode
            print(f"memoryd: {line} exited with {res.returncode}", file=sys.stderr)
            return 1
    for note in p.notes:
        print(note)
    return 0


def handler(args: argparse.Namespace) -> int:
    kind = platform_kind()
    if kind == "unsupported":
        print(
            "memoryd: no service manager found (systemd user services on Linux, launchd on "
            "macOS); run `memoryd run` under your own supervisor instead",
            file=sys.stderr,
        )
        return 1
    config = args.config.resolve() if getattr(args, "config", None) else None
    if config is not None and not config.is_file():
        print(f"memoryd: no configuration file at {config}", file=sys.stderr)
        return 2
    p = plan(args.action, kind=kind, config=config, socket_activation=args.socket_activation)
    return execute(p, dry_run=args.dry_run, action=args.action)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    sp = subparsers.add_parser(
        "service",
        help="install, uninstall or inspect memoryd as a user service (systemd/launchd)",
        description="Run memoryd at login as a systemd user service (Linux) or a launchd agent "
        "(macOS). Each command that is run is printed; --dry-run prints the files and commands "
        "without touching anything.",
    )
    sp.add_argument("action", choices=["install", "uninstall", "status"])
    sp.add_argument("--dry-run", action="store_true", help="print, change nothing")
    sp.add_argument("--config", type=Path, help="configuration file for the service to use")
    sp.add_argument(
        "--socket-activation",
        action="store_true",
        help="(systemd) also install memoryd.socket: the first query starts the daemon",
    )
    sp.set_defaults(func=handler)


def reference_files() -> dict[str, str]:
    """The repository copies in systemd/ and launchd/, with readable placeholders."""
    python = "%h/.local/share/memoryd/venv/bin/python"
    return {
        "systemd/memoryd.service": render_unit(python, None),
        "systemd/memoryd.socket": SOCKET_TEMPLATE,
        f"launchd/{LABEL}.plist": render_plist(
            "/Users/YOU/.local/share/memoryd/venv/bin/python", None, Path("/Users/YOU")
        ),
    }
