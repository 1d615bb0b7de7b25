"""The OS's limits on file watching (stop 42, branch res18): a user at
`fs.inotify.max_user_watches` (IDEs and sync tools hold the rest) or with no inotify instance
left (`fs.inotify.max_user_instances`). watchdog skipped a folder it could not watch without a
word, and the daemon refused to watch at all when the vault had more folders than the limit:
changes waited for the hourly reconcile. Now the folders the kernel refuses are polled, their
changes indexed, and status says so on every door with the sysctl to raise.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import q, wait_for

from memoryd.ctl.output import attention
from memoryd.index import watchpoll

pytestmark = [
    pytest.mark.backends,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify"),
]


def refuse_watches(monkeypatch: pytest.MonkeyPatch, code: int, word: str) -> None:
    """inotify_add_watch fails with `code` for every folder whose path holds `word`."""
    from watchdog.observers import inotify_c

    real = inotify_c.InotifyFD.add_callback

    def add_callback(self: Any, path: bytes, *a: Any, **kw: Any) -> Any:
        if word in os.fsdecode(path):
            raise OSError(code, "inotify watch limit reached")
        return real(self, path, *a, **kw)

    monkeypatch.setattr(inotify_c.InotifyFD, "add_callback", add_callback)


def found(app: Any, word: str) -> list[str]:
    return [str(h.get("path")) for h in q(app, word, mode="keyword")["hits"]]


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EMFILE])
def test_a_vault_past_the_watch_limit_is_polled_and_said(
    make_app: Any, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    monkeypatch.setattr(watchpoll, "POLL_EVERY_S", 0.2)
    refuse_watches(monkeypatch, code, "archive")
    app = make_app(model=None)
    ws = Path(app.cfg.workspace)
    for rel in ("projects/a.md", "archive/2024/b.md", "archive/2025/c.md"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(f"# {rel}\n\nfirst words\n")
    app.start(jobs=False)
    wait_for(app.ready.is_set)
    watcher = app.status()["watcher"]
    assert watcher["alive"] is True
    polled = watcher["polled"]
    assert polled["folders"] == 3  # archive, archive/2024, archive/2025
    limit = "max_user_instances" if code == errno.EMFILE else "max_user_watches"
    assert polled["limit"] == f"fs.inotify.{limit}"
    said = [w for w in attention(app.status()) if "polled" in w]
    assert said == [
        f"3 folder(s) polled every 0.2 s, not watched (fs.inotify.{limit} reached): "
        f"{polled['raise']}"
    ]
    # changes in the folders nobody watches are indexed all the same, long before the reconcile
    (ws / "archive/2024/b.md").write_text("# b\n\nquokka lives here now\n")
    (ws / "archive/2025/new.md").write_text("# new\n\nwombat arrived\n")
    (ws / "archive/2026").mkdir()
    (ws / "archive/2026/d.md").write_text("# d\n\nnumbat appeared\n")
    wait_for(lambda: found(app, "quokka") == ["archive/2024/b.md"])
    wait_for(lambda: found(app, "wombat") == ["archive/2025/new.md"])
    wait_for(lambda: found(app, "numbat") == ["archive/2026/d.md"])
    (ws / "archive/2025/new.md").unlink()
    wait_for(lambda: found(app, "wombat") == [])
    assert app.status()["watcher"]["polled"]["folders"] == 4


SITECUSTOMIZE = """
import errno, os
_limit = int(os.environ.get("FAKE_MAX_WATCHES", "0") or 0)
if _limit:
    from watchdog.observers import inotify_c
    _real = inotify_c.InotifyFD.add_callback
    _count = [0]
    def add_callback(self, path, *a, **kw):
        if _count[0] >= _limit:
            raise OSError(errno.ENOSPC, "inotify watch limit reached")
        _count[0] += 1
        return _real(self, path, *a, **kw)
    inotify_c.InotifyFD.add_callback = add_callback
"""


def test_memoryd_run_past_the_watch_limit_says_so_and_sees_every_change(
    daemon_factory: Any, config_dict: dict[str, Any], tmp_path: Path
) -> None:
    """The real daemon with room for 2 watches (the root and one folder): the other folders are
    polled; `memoryctl status` says so in its first line; a note written in a polled folder is
    found within seconds, not at the hourly reconcile; the log says it once."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {
        "FAKE_MAX_WATCHES": "2",
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }
    ws = Path(config_dict["workspace"])
    for rel in ("a/one.md", "b/two.md", "b/deep/three.md", "c/four.md"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(f"# {rel}\n\nfirst words\n")
    d = daemon_factory(extra_env=env)
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"])
    polled = d.call("status")["watcher"]["polled"]
    assert polled is not None and polled["folders"] == 3, polled  # 5 folders, 2 watched
    first = d.ctl("status").stdout.splitlines()[0]
    assert "3 folder(s) polled every 5 s, not watched (fs.inotify.max_user_watches reached)" in (
        first
    ), first
    for rel in ("a/one.md", "b/two.md", "b/deep/three.md", "c/four.md"):
        (d.workspace / rel).write_text(f"# {rel}\n\nthe word pangolin\n")
    wait_for(lambda: len(d.call("search", {"query": "pangolin"})["hits"]) == 4, timeout=30)
    said = [line for line in d.log().splitlines() if "inotify limit reached" in line]
    assert len(said) == 1, said
