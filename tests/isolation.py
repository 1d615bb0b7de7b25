"""The suite never touches the developer's own memoryd (issue 18).

`isolate()` runs in every test process (the xdist controller and each worker, from
conftest.pytest_configure, before any test module is imported): HOME, the XDG folders, TMPDIR
(and TMP, TEMP, which tempfile falls back to) point at new, *created* folders of its own, so
nothing falls back to a default path. A guard then watches the paths that were the defaults
before: the daemon's default sockets (`$XDG_RUNTIME_DIR/memoryd/memoryd.sock`,
`<temp dir>/memoryd-<uid>/memoryd.sock`, `/run/user/<uid>/memoryd/memoryd.sock`) and the
default data, config and workspace folders. In this process a connect() or bind() to one of
those sockets, or an open() or mkdir() below one of those folders, is refused (an audit hook
raises) and fails the test; for the processes the tests start (which inherit the isolated
environment), a default folder or socket that appears during a test fails that test.
A daemon the developer runs may write to its own data meanwhile, so the guard does not compare
the contents of folders that already existed.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Not MEMORYD_*: conftest.isolated_env clears those before every test.
ORIGINAL_ENV = "MDTEST_ORIGINAL_ENV"
FOLDERS = {
    "HOME": "home",
    "XDG_CONFIG_HOME": "config",
    "XDG_DATA_HOME": "data",
    "XDG_STATE_HOME": "state",
    "XDG_CACHE_HOME": "cache",
    "XDG_RUNTIME_DIR": "run",
    "TMPDIR": "tmp",
}
_WATCHED_EVENTS = frozenset({"socket.connect", "socket.bind", "open", "os.mkdir"})


@dataclass
class Guard:
    root: Path
    sockets: frozenset[str]
    folders: tuple[str, ...]
    existed: dict[str, bool]
    touched: list[str] = field(default_factory=list)

    def real_paths(self) -> list[str]:
        return sorted(self.sockets | set(self.folders))

    def appeared(self) -> list[str]:
        """Default paths that did not exist when the session began and do now."""
        return [p for p in self.real_paths() if not self.existed[p] and os.path.lexists(p)]

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in _WATCHED_EVENTS:
            return
        if event.startswith("socket."):
            sock, address = args[0], args[1]
            if getattr(sock, "family", None) != socket.AF_UNIX:
                return
            if not isinstance(address, str | bytes) or not address:
                return
            path = os.path.abspath(os.fsdecode(address))
            if path in self.sockets:
                self._refuse(f"{event} {path}")
            return
        target = args[0]
        if not isinstance(target, str | bytes | os.PathLike):
            return  # a file descriptor
        path = os.path.abspath(os.fsdecode(target))
        for folder in self.folders:
            if path == folder or path.startswith(folder + os.sep):
                self._refuse(f"{event} {path}")

    def _refuse(self, what: str) -> None:
        self.touched.append(what)
        raise PermissionError(f"the tests must never touch the real memoryd: {what}")


def _original_env() -> dict[str, str]:
    """The environment before any isolation: from the xdist controller in a worker (which
    inherits the controller's isolated one), else this process's own."""
    inherited = os.environ.get(ORIGINAL_ENV)
    if inherited:
        return dict(json.loads(inherited))
    env = {k: os.environ[k] for k in FOLDERS if k in os.environ}
    env["__tempdir__"] = tempfile.gettempdir()  # what TMPDIR/TMP/TEMP or /tmp resolved to
    os.environ[ORIGINAL_ENV] = json.dumps(env)
    return env


def _defaults(env: dict[str, str]) -> tuple[set[str], set[str]]:
    """The default sockets and folders of memoryd (memoryd.core.config, memoryd.ctl.client)
    under the original environment."""
    home = env.get("HOME") or os.path.expanduser("~")
    uid = os.getuid()
    sockets = {
        os.path.join(env["__tempdir__"], f"memoryd-{uid}", "memoryd.sock"),
        os.path.join("/tmp", f"memoryd-{uid}", "memoryd.sock"),  # the fallback of tempfile
        os.path.join("/run/user", str(uid), "memoryd", "memoryd.sock"),  # the login session's
    }
    if env.get("XDG_RUNTIME_DIR"):
        sockets.add(os.path.join(env["XDG_RUNTIME_DIR"], "memoryd", "memoryd.sock"))
    folders = {
        os.path.join(env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"), "memoryd"),
        os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "memoryd"),
        os.path.join(home, "memoryd"),  # the default workspace
    }
    return {os.path.abspath(s) for s in sockets}, {os.path.abspath(f) for f in folders}


def isolate() -> Guard:
    env = _original_env()
    sockets, folders = _defaults(env)
    root = Path(tempfile.mkdtemp(prefix="mdt-", dir=env["__tempdir__"]))  # short: AF_UNIX paths
    for var, name in FOLDERS.items():
        path = root / name
        path.mkdir(mode=0o700)
        os.environ[var] = str(path)
    os.environ["TMP"] = os.environ["TEMP"] = os.environ["TMPDIR"]
    tempfile.tempdir = None  # tempfile caches the folder it found first
    assert tempfile.gettempdir() == os.environ["TMPDIR"]
    # a default socket's folder must not appear either (the daemon makes it before binding)
    watched_folders = folders | {os.path.dirname(s) for s in sockets}
    guard = Guard(
        root=root,
        sockets=frozenset(sockets),
        folders=tuple(sorted(watched_folders)),
        existed={},
    )
    guard.existed = {p: os.path.lexists(p) for p in guard.real_paths()}
    sys.addaudithook(guard.audit)
    return guard


def remove(guard: Guard) -> None:
    shutil.rmtree(guard.root, ignore_errors=True)
