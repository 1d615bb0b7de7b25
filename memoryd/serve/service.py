"""`memoryd service install | uninstall | status`: run memoryd as a user service.

Linux: a systemd user unit (Type=notify, watchdog, restart on failure), optionally with a socket
unit for activation. macOS: a launchd agent. The files are rendered from the templates below with
this installation's absolute paths. The reference copies in the repository's systemd/ and launchd/
folders are rendered from the same templates with placeholder paths (`reference_files()`; a test
keeps them equal).

Each action is built as a `Plan` (files to write or remove, commands to run) before anything
happens, so `--dry-run` prints exactly what a real run would do.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.core.errors import EXIT_CONFIG, EXIT_STOPPED, ConfigError
from memoryd.core.fsutil import PRIVATE_DIR, SHARED_DIR, atomic_write, make_dirs
from memoryd.core.runtime import home as home_folder
from memoryd.core.runtime import xdg

LABEL = "io.memoryd.daemon"
SERVICE_UNIT = "memoryd.service"
SOCKET_UNIT = "memoryd.socket"
COMMAND_TIMEOUT = 120.0  # `systemctl start` waits for READY=1 (TimeoutStartSec= is 90 s)
BOOTOUT_WAIT = 10.0
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
MACOS_PATH = "/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin"
FILE_MODE = 0o644
THROTTLE_S = 30  # launchd: the least time between two starts (its default is 10)

SERVICE_TEMPLATE = """\
# memoryd as a systemd user service; written by `memoryd service install`.
# Logs: journalctl --user -u memoryd    Reload settings: systemctl --user reload memoryd
# Local changes belong in a drop-in (systemctl --user edit memoryd): install rewrites this file.
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
# {config_status}: what a restart cannot fix, a configuration error or a store a newer memoryd
# upgraded (the reason is in the journal)
RestartPreventExitStatus={config_status}
WatchdogSec=30s
TimeoutStopSec=30s
UMask=0077
Environment={path}
Environment=PYTHONUNBUFFERED=1 PYTHONSAFEPATH=1
StandardError=journal
SyslogIdentifier=memoryd
# Hardening that needs no user namespace (see docs/service.md before adding ProtectSystem= etc.)
NoNewPrivileges=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes

[Install]
WantedBy=default.target
"""

SOCKET_TEMPLATE = """\
# Socket activation for memoryd: the first query starts the daemon, which serves on this socket.
[Unit]
Description=memoryd socket

[Socket]
ListenStream=%t/memoryd/memoryd.sock
SocketMode=0600
DirectoryMode=0700

[Install]
WantedBy=sockets.target
"""

# --- rendering (pure) ----------------------------------------------------------------------------


def exec_args(python: str, config: Path | None) -> list[str]:
    args = [python, "-m", "memoryd", "run"]
    if config is not None:
        args += ["--config", str(config)]
    return args


def search_path(python: str, system: str) -> str:
    """PATH for the service: the installation's bin folder first (console scripts live there)."""
    return f"{Path(python).parent}:{system}"


def _systemd_quote(word: str) -> str:
    """One word for a unit file: `%` is a specifier; quote words with blanks or quotes."""
    word = word.replace("%", "%%")
    if word and not any(c in word for c in " \t\"'\\;"):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_exec_word(word: str) -> str:
    return _systemd_quote(word.replace("$", "$$"))  # Exec lines expand $VAR; Environment= does not


def render_unit(python: str, config: Path | None) -> str:
    return _unit(
        " ".join(systemd_exec_word(w) for w in exec_args(python, config)),
        _systemd_quote("PATH=" + search_path(python, SYSTEM_PATH)),
    )


def _unit(exec_start: str, path: str) -> str:
    return SERVICE_TEMPLATE.format(exec_start=exec_start, path=path, config_status=EXIT_CONFIG)


def render_socket() -> str:
    return SOCKET_TEMPLATE


def render_plist(python: str, config: Path | None, home: Path) -> str:
    logs = home / "Library" / "Logs" / "memoryd"
    data = {
        "Label": LABEL,
        # launchd restarts every exit status but 0 (KeepAlive has no per-status exception, as
        # systemd's RestartPreventExitStatus): a configuration error exits 0 here, so the agent
        # stops with one log line instead of failing again every ThrottleInterval for ever
        "ProgramArguments": [
            *exec_args(python, config),
            "--config-error-status",
            str(EXIT_STOPPED),
        ],
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        # a start that fails (another daemon, a folder it cannot use) is tried again after
        # 30 s, not 10: one log line a half minute; a daemon that ran longer restarts at once
        "ThrottleInterval": THROTTLE_S,
        "ProcessType": "Adaptive",
        "Umask": 0o077,
        "ExitTimeOut": 30,
        "StandardOutPath": str(logs / "memoryd.out.log"),
        "StandardErrorPath": str(logs / "memoryd.err.log"),
        "EnvironmentVariables": {
            "PATH": search_path(python, MACOS_PATH),
            "PYTHONUNBUFFERED": "1",
            "PYTHONSAFEPATH": "1",
        },
    }
    import plistlib  # (its XML parser: not imported by every `memoryd run`, which builds this
    # command's arguments)

    return plistlib.dumps(data).decode()


def reference_files() -> dict[str, str]:
    """The repository copies in systemd/ and launchd/, with paths a reader can substitute."""
    venv = "%h/.local/share/memoryd/venv/bin"
    mac_home = Path("/Users/YOU")
    return {
        "systemd/memoryd.service": _unit(
            f"{venv}/python -m memoryd run", f"PATH={venv}:{SYSTEM_PATH}"
        ),
        "systemd/memoryd.socket": render_socket(),
        f"launchd/{LABEL}.plist": render_plist(
            str(mac_home / ".local/share/memoryd/venv/bin/python"), None, mac_home
        ),
    }


# --- plans -------------------------------------------------------------------------------------


# What a user service's environment holds whoever starts it (systemd's user manager, launchd),
# besides the unit's own lines and what `systemctl --user import-environment` added.
SERVICE_ENV = ("HOME", "USER", "LOGNAME", "SHELL", "XDG_RUNTIME_DIR", "TMPDIR", "LANG")


def service_env_warnings(config: Path | None) -> list[str]:
    """What the service would read differently from this shell, which has variables it does
    not see: a `$VAR` in a path that is unset there (a configuration error at every start), or
    another configuration file, workspace, data_dir or socket (XDG_CONFIG_HOME,
    XDG_DATA_HOME, MEMORYD_* set in the shell: `memoryctl` here would look elsewhere)."""
    from memoryd.core.config import TOP_LEVEL, load_config

    shell = dict(os.environ)
    plain = {k: os.environ[k] for k in SERVICE_ENV if k in os.environ}
    try:
        here = load_config(config, shell)
    except ConfigError:
        return []  # this shell's own reading fails: said by the check before, or by `run`
    try:
        there = load_config(config, plain)
    except ConfigError as exc:
        return [
            "under the service manager, whose environment holds "
            f"{', '.join(sorted(plain))} and the unit's lines only, the configuration reads: "
            f"{exc.message}"
        ]
    out = []
    if here.source != there.source:
        out.append(
            f"the service reads {there.source or 'no configuration file (defaults)'}, this "
            f"shell {here.source or 'none'}: pass --config FILE"
        )
    for key in TOP_LEVEL:
        mine, theirs = getattr(here, key), getattr(there, key)
        if mine != theirs:
            out.append(
                f"{key} is {theirs} under the service but {mine} in this shell (set by a "
                "variable the service does not see): write it in the configuration file"
            )
    return out


def _say(text: str, *, err: bool = False) -> None:
    print(text, file=sys.stderr if err else sys.stdout, flush=True)


def _run(argv: Sequence[str]) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            list(argv), capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        _say(f"memoryd: `{shlex.join(argv)}` timed out after {COMMAND_TIMEOUT:.0f}s", err=True)
    except OSError as exc:
        _say(f"memoryd: cannot run `{shlex.join(argv)}`: {exc}", err=True)
    return None


@dataclass(frozen=True)
class WriteFile:
    path: Path
    content: str

    def show(self) -> str:
        return f"would write {self.path} (mode {FILE_MODE:04o}):\n{self.content}"

    def apply(self) -> int:
        make_dirs(self.path.parent, SHARED_DIR)
        atomic_write(self.path, self.content.encode(), FILE_MODE)
        _say(f"wrote {self.path}")
        return 0


@dataclass(frozen=True)
class MakeDir:
    path: Path

    def show(self) -> str:
        return f"would create {self.path}/"

    def apply(self) -> int:
        make_dirs(self.path, PRIVATE_DIR)
        return 0


@dataclass(frozen=True)
class RemoveFile:
    path: Path

    def show(self) -> str:
        return f"would remove {self.path}"

    def apply(self) -> int:
        self.path.unlink(missing_ok=True)
        _say(f"removed {self.path}")
        return 0


@dataclass(frozen=True)
class Run:
    argv: tuple[str, ...]
    report: bool = False  # status: show the output, the command's exit status is ours
    keep_going: bool = False  # a failure is reported, and the plan goes on (uninstall)

    def show(self) -> str:
        return f"would run: {shlex.join(self.argv)}"

    def apply(self) -> int:
        _say(f"$ {shlex.join(self.argv)}")
        res = _run(self.argv)
        if res is None:
            return 1
        if res.stdout.strip():
            _say(res.stdout.rstrip())
        if res.stderr.strip():
            _say(res.stderr.rstrip(), err=True)
        if self.report:
            return res.returncode
        if res.returncode != 0:
            _say(f"memoryd: `{shlex.join(self.argv)}` exited with {res.returncode}", err=True)
            if self.keep_going:
                _say("memoryd: carrying on (the files are removed all the same)", err=True)
            if "Failed to connect to bus" in res.stderr:
                _say(
                    "memoryd: no systemd user manager reachable; run this from your own login "
                    "session (not `sudo` or `su`), or set XDG_RUNTIME_DIR=/run/user/$(id -u)",
                    err=True,
                )
            return 1
        return 0


@dataclass(frozen=True)
class BootOut:
    """`launchctl bootout` when the agent is loaded, then wait until launchd has let it go
    (bootstrapping again too early fails with "Bootstrap failed: 5: Input/output error")."""

    target: str

    def show(self) -> str:
        return f"would run (if loaded): launchctl bootout {self.target}"

    def _loaded(self) -> bool:
        res = _run(("launchctl", "print", self.target))
        return res is not None and res.returncode == 0

    def apply(self) -> int:
        if not self._loaded():
            return 0
        if Run(("launchctl", "bootout", self.target)).apply() != 0:
            return 1
        deadline = time.monotonic() + BOOTOUT_WAIT
        while self._loaded():
            if time.monotonic() > deadline:
                _say(f"memoryd: {self.target} is still loaded after bootout", err=True)
                return 1
            time.sleep(0.2)
        return 0


Step = WriteFile | MakeDir | RemoveFile | Run | BootOut


@dataclass(frozen=True)
class Plan:
    steps: list[Step]
    notes: list[str] = field(default_factory=list)


def systemd_plan(
    action: str, *, python: str, config: Path | None, socket_activation: bool, unit_dir: Path
) -> Plan:
    service, sock = unit_dir / SERVICE_UNIT, unit_dir / SOCKET_UNIT
    ctl = ("systemctl", "--user")
    if action == "install":
        steps: list[Step] = [WriteFile(service, render_unit(python, config))]
        if socket_activation:
            steps.append(WriteFile(sock, render_socket()))
        elif sock.exists():  # installed with --socket-activation before: take the socket out
            steps += [Run((*ctl, "disable", "--now", SOCKET_UNIT)), RemoveFile(sock)]
        steps.append(Run((*ctl, "daemon-reload")))
        # An update: restart a running daemon so it runs the new unit. With activation, after
        # the socket is listening (the restarted daemon adopts it); otherwise before `--now`
        # (which would start a stopped daemon only to restart it).
        restart = [Run((*ctl, "try-restart", SERVICE_UNIT))] if service.exists() else []
        if socket_activation:
            steps += [Run((*ctl, "enable", "--now", SOCKET_UNIT)), *restart]
        else:
            steps += [*restart, Run((*ctl, "enable", "--now", SERVICE_UNIT))]
        return Plan(
            steps,
            [
                "memoryd runs while you are logged in; to keep it running after you log out "
                "(and start it at boot): loginctl enable-linger $USER",
                "logs: journalctl --user -u memoryd -f    status: memoryd service status",
            ],
        )
    if action == "uninstall":
        present = [p for p in (sock, service) if p.exists()]
        if not present:
            return Plan([], [f"memoryd is not installed as a user service (no {service})"])
        # the files go even when systemctl fails (no user manager: nothing runs them anyway)
        return Plan(
            [
                Run((*ctl, "disable", "--now", *(p.name for p in present)), keep_going=True),
                *(RemoveFile(p) for p in present),
                Run((*ctl, "daemon-reload"), keep_going=True),
            ]
        )
    units = [SERVICE_UNIT, *([SOCKET_UNIT] if sock.exists() else [])]
    return Plan([Run((*ctl, "status", "--no-pager", *units), report=True)])


def launchd_plan(action: str, *, python: str, config: Path | None, home: Path, uid: int) -> Plan:
    plist = home / "Library" / "LaunchAgents" / f"{LABEL}.plist"
    logs = home / "Library" / "Logs" / "memoryd"
    domain = f"gui/{uid}"
    target = f"{domain}/{LABEL}"
    if action == "install":
        return Plan(
            [
                MakeDir(logs),  # launchd does not create the folders of StandardOutPath
                WriteFile(plist, render_plist(python, config, home)),
                BootOut(target),
                Run(("launchctl", "bootstrap", domain, str(plist))),
                Run(("launchctl", "kickstart", target)),
            ],
            [f"logs: {logs}/    status: memoryd service status"],
        )
    if action == "uninstall":
        return Plan([BootOut(target), RemoveFile(plist)])
    return Plan([Run(("launchctl", "print", target), report=True)])


def platform_kind() -> str | None:
    """'systemd', 'launchd', or None when neither service manager is available."""
    if sys.platform == "darwin":
        return "launchd"
    if sys.platform.startswith("linux") and shutil.which("systemctl"):
        return "systemd"
    return None


def build_plan(
    kind: str, action: str, *, config: Path | None = None, socket_activation: bool = False
) -> Plan:
    """The plan for this installation: this Python, this user's home and config folders."""
    python = os.path.abspath(sys.executable)  # not resolved: a venv's python is a symlink
    home = Path(home_folder("HOME"))  # (Path.home() raised a bare RuntimeError without one)
    if kind == "systemd":
        config_home = Path(xdg("XDG_CONFIG_HOME") or home / ".config")
        return systemd_plan(
            action,
            python=python,
            config=config,
            socket_activation=socket_activation,
            unit_dir=config_home / "systemd" / "user",
        )
    return launchd_plan(action, python=python, config=config, home=home, uid=os.getuid())


def execute(plan: Plan, *, dry_run: bool) -> int:
    failed = 0
    for step in plan.steps:
        if dry_run:
            _say(step.show())
            continue
        status = step.apply()
        if status != 0:
            if not (isinstance(step, Run) and step.keep_going):
                return status
            failed = status
    for note in plan.notes:
        _say(note)
    return failed


def user_manager_problem(env: dict[str, str] | None = None) -> str | None:
    """Why `systemctl --user` cannot reach a user manager here, or None: it talks to
    $XDG_RUNTIME_DIR/systemd/private (or the session bus beside it)."""
    env = dict(os.environ) if env is None else env
    runtime = xdg("XDG_RUNTIME_DIR", env) or f"/run/user/{os.getuid()}"
    if not os.path.isdir(runtime):
        return (
            f"no systemd user manager for this session (XDG_RUNTIME_DIR is unset and {runtime} "
            "does not exist): run this from your own login session (not `sudo` or `su`), or "
            "run `memoryd run` under another supervisor"
        )
    if not any(os.path.exists(os.path.join(runtime, n)) for n in ("systemd/private", "bus")):
        return (
            f"no systemd user manager is running ({runtime}/systemd/private is missing): "
            "run this from your own login session, or enable one with `loginctl enable-linger "
            "$USER`"
        )
    return None


def development_checkout() -> Path | None:
    """The source checkout memoryd is imported from (an editable install or PYTHONPATH), or
    None when it is installed as a package (in site-packages)."""
    import memoryd

    package = Path(memoryd.__file__).resolve().parent
    if "site-packages" in package.parts or "dist-packages" in package.parts:
        return None
    root = package.parent
    return root if (root / "pyproject.toml").exists() else None


# --- command line ------------------------------------------------------------------------------


def handler(args: argparse.Namespace) -> int:
    kind = platform_kind()
    if kind is None:
        _say(
            "memoryd: no supported service manager here (systemd user services on Linux need "
            "`systemctl`; launchd on macOS); run `memoryd run` under your own supervisor",
            err=True,
        )
        return 1
    action = args.service_action
    config = getattr(args, "config", None)
    if config is not None:
        from memoryd.core.config import find_config_file, load_config

        # as `memoryd run --config` reads it: $VARS and ~ expanded, made absolute but not
        # resolved (a symlinked config's relative paths are relative to the link's folder)
        try:
            config = find_config_file(config)
        except ConfigError as exc:
            _say(f"memoryd: {exc.message}", err=True)
            return 2
        assert config is not None

        # A ConfigError now beats a service that fails to start. The service does not see
        # this shell's MEMORYD_* variables, so neither does the check.
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
        load_config(config, env)
    if action == "install":
        for warning in service_env_warnings(config):
            _say(f"memoryd: warning: {warning}", err=True)
    socket_activation = getattr(args, "socket_activation", False)
    if socket_activation and kind != "systemd":
        _say("memoryd: --socket-activation is for systemd; ignored with launchd", err=True)
        socket_activation = False
    plan = build_plan(kind, action, config=config, socket_activation=socket_activation)
    if action == "install":
        checkout = development_checkout()
        if checkout is not None:
            _say(
                f"memoryd: warning: memoryd is imported from a development checkout ({checkout}): "
                f"the service would run that checkout's code with {sys.executable}, and change "
                "whenever it does. For a service, install memoryd on its own "
                "(`pipx install memoryd`) and run `memoryd service install` from there",
                err=True,
            )
        if kind == "systemd":
            problem = user_manager_problem()
            if problem is not None and not args.dry_run:
                _say(f"memoryd: cannot install: {problem}; nothing was written", err=True)
                return 1
            if problem is not None:
                _say(f"memoryd: warning: a real install would fail: {problem}", err=True)
    if args.dry_run:
        _say(f"dry run ({kind}): nothing is written and no command is run")
    return execute(plan, dry_run=args.dry_run)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    sp = subparsers.add_parser(
        "service",
        help="install, uninstall or inspect memoryd as a user service (systemd/launchd)",
        description="Run memoryd at login as a systemd user service (Linux) or a launchd agent "
        "(macOS), with this installation's absolute paths. Every command run is printed; "
        "--dry-run prints the files and commands and changes nothing.",
    )
    actions = sp.add_subparsers(dest="service_action", metavar="ACTION", required=True)
    for name, helptext in (
        ("install", "write the unit (or plist), enable and start it; again to update it"),
        ("uninstall", "stop and disable the service, remove its files"),
        ("status", "the service manager's view; exit status as `systemctl status`"),
    ):
        a = actions.add_parser(name, help=helptext, description=helptext)
        a.add_argument(
            "--dry-run", action="store_true", help="print files and commands, change nothing"
        )
        if name == "install":
            a.add_argument(
                "--config",
                type=Path,
                metavar="FILE",
                help="configuration file the service runs with",
            )
            a.add_argument(
                "--socket-activation",
                action="store_true",
                help="(systemd) also install memoryd.socket: the first query starts the daemon",
            )
        a.set_defaults(func=handler)
