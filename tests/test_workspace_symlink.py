"""A workspace given as a symlink to its folder (`workspace = "~/notes"` where ~/notes leads to a
synced folder, a dotfiles layout, a second disk) is watched like any folder. Before, watchdog
watched the symlink itself (inotify's IN_DONT_FOLLOW): no note written, moved or deleted after
the start was seen until the hourly reconcile or a restart, and `status --check` showed drift."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

from memoryd.index.watcher import Watcher

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


@pytest.mark.sqlite_only("the watcher alone, no store")
def test_a_watcher_on_a_symlinked_root_sees_its_files(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    seen: list[Path] = []
    lock = threading.Lock()

    def sink(paths: list[Path]) -> None:
        with lock:
            seen.extend(paths)

    w = Watcher(link, sink, debounce=0.1)
    w.start()
    try:
        (link / "a.md").write_text("through the link")
        (real / "b.md").write_text("through the real folder")
        wait_for(lambda: {p.name for p in seen} >= {"a.md", "b.md"}, timeout=30)
    finally:
        w.stop()


@pytest.mark.parametrize("spelling", ["absolute", "relative/"])
def test_a_symlinked_workspace_follows_every_change(
    spelling: str, daemon_factory: Any, tmp_path: Path
) -> None:
    real = tmp_path / "synced" / "notes"
    real.mkdir(parents=True)
    link = tmp_path / "notes-link"
    link.symlink_to(real if spelling == "absolute" else Path("synced/notes"))
    # relative to the configuration file's folder (tmp_path), with a trailing slash
    d = daemon_factory(workspace=str(link) if spelling == "absolute" else "notes-link/")

    def notes() -> set[str]:
        out = d.ctl("--json", "note", "list")
        return {n["path"] for n in json.loads(out.stdout)["items"]} if out.stdout else set()

    (link / "a.md").write_text("# A\n\nwritten through the link\n")
    (real / "sub").mkdir()
    (real / "sub" / "b.md").write_text("# B\n\nwritten in the real folder\n")
    wait_for(lambda: notes() >= {"a.md", "sub/b.md"}, timeout=30)
    (real / "sub" / "b.md").rename(real / "c.md")
    (link / "a.md").unlink()
    wait_for(lambda: notes() == {"c.md"} | {n for n in notes() if n.startswith("daily/")})
    found = d.ctl("search", "written in the real folder")
    assert "c.md" in found.stdout, found.stdout + found.stderr
    check = d.ctl("status", "--check")
    assert check.returncode == 0, check.stdout + check.stderr
