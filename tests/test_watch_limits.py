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
