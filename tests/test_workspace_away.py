"""The workspace folder itself gone (a drive not mounted, the vault moved away or deleted) and
back: the index is kept, nothing is written in its place, and its return is noticed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for, with_notes

from memoryd.core.errors import Unavailable
from memoryd.ctl.output import status_summary
from memoryd.search.searcher import SearchRequest

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def paths(app: Any, query: str) -> list[str]:
    req = SearchRequest(query=query, mode="keyword", limit=100, record_access=False)
    return sorted(h["path"] for h in app.searcher.search(req)["hits"] if h.get("path"))


def started(make_app: Any, notes: dict[str, str]) -> Any:
    app = with_notes(make_app(model=None), notes)
    app.start(jobs=False)
    wait_for(app.ready.is_set)
    wait_for(lambda: paths(app, "lighthouse") == sorted(notes))
    return app


NOTES = {"a.md": "# A\n\nThe lighthouse log\n", "sub/b.md": "# B\n\nA lighthouse keeper\n"}


@pytest.mark.parametrize("how", ["moved away", "deleted", "a dangling symlink"])
def test_gone_keeps_the_index_writes_nothing_in_its_place_and_back_catches_up(
    make_app: Any, tmp_path: Path, how: str
) -> None:
    app = started(make_app, NOTES)
    ws = Path(app.cfg.workspace)
    away = tmp_path / "away"
    os.rename(ws, away)
    if how == "deleted":
        kept = tmp_path / "kept"
        os.rename(away, kept)  # what the user gets back later is another folder
        away = kept
    elif how == "a dangling symlink":
        os.symlink(tmp_path / "unmounted", ws)
    # every way the index is brought up to date applies nothing while it is gone
    report = app.reconcile()
    assert report.deleted == 0 and "workspace folder is missing" in report.errors[0]
    assert app.indexer.sync_paths([ws / "a.md", ws / "sub"]).deleted == 0
    assert paths(app, "lighthouse") == sorted(NOTES)
    assert app.workspace_guard.check() == "away"
    assert "workspace folder is missing" in app.status()["watcher"]["error"]
    assert "needs attention: workspace folder missing" in status_summary(app.status())
    # nothing is made in its place: a memory is kept, its daily-log line is not written there
    rec = app.memories.add("a lighthouse memory while the vault is away")
    assert app.memories.get(rec.id)["id"] == rec.id
    gone = app.memories.add("a memory forgotten before the vault is back")
    app.memories.delete(gone.id)
    changed = app.memories.add("a memory first written one way")
    app.memories.update(changed.id, {"content": "a memory then written another way"})
    for door in (
        lambda: app.notes.write("c.md", "# C\n"),
        lambda: app.notes.read("a.md"),
        lambda: app.notes.move("a.md", "z.md"),
        lambda: app.notes.trash("a.md"),  # it would only have left the index
    ):
        with pytest.raises(Unavailable, match="workspace folder is missing"):
            door()
    assert not os.path.isdir(ws)
    # back (a drive mounted again): watched again, and what changed meanwhile is caught up
    if os.path.islink(ws):
        os.unlink(ws)
    (away / "sub" / "b.md").unlink()
    (away / "c.md").write_text("# C\n\nA lighthouse in the fog\n")
    os.rename(away, ws)
    assert app.workspace_guard.check() == "back"
    assert app.status()["watcher"]["error"] is None
    # the memory's daily-log line is written now, and not indexed again as a note's text
    logs = "".join(p.read_text() for p in (ws / app.cfg.dailylog.folder).glob("*.md"))
    assert "while the vault is away" in logs and "then written another way" in logs
    assert "forgotten" not in logs and "first written" not in logs  # as stored now
    wait_for(lambda: paths(app, "lighthouse") == ["a.md", "c.md"])
    (ws / "d.md").write_text("# D\n\nThe lighthouse again\n")  # the new folder is watched
    wait_for(lambda: paths(app, "lighthouse") == ["a.md", "c.md", "d.md"])


def test_another_folder_at_its_path_is_watched(make_app: Any, tmp_path: Path) -> None:
    """A folder swapped for another between two looks (a restore, a remount) is watched anew."""
    app = started(make_app, NOTES)
    ws = Path(app.cfg.workspace)
    os.rename(ws, tmp_path / "old")
    (ws / "sub").mkdir(parents=True)
    (ws / "a.md").write_text("# A\n\nThe lighthouse log\n")
    assert app.workspace_guard.check() == "back"
    wait_for(lambda: paths(app, "lighthouse") == ["a.md"])
    (ws / "sub" / "e.md").write_text("# E\n\nA lighthouse in the new folder\n")
    wait_for(lambda: paths(app, "lighthouse") == ["a.md", "sub/e.md"])
    assert app.workspace_guard.check() is None


def test_a_start_with_notes_indexed_does_not_make_it_again(make_app: Any, tmp_path: Path) -> None:
    app = started(make_app, NOTES)
    ws = Path(app.cfg.workspace)
    app.close()
    os.rename(ws, tmp_path / "away")
    again = make_app(model=None)
    again.start(jobs=False)
    wait_for(again.ready.is_set)
    assert not os.path.exists(ws)
    assert paths(again, "lighthouse") == sorted(NOTES)
    assert "workspace folder is missing" in again.status()["watcher"]["error"]
    os.rename(tmp_path / "away", ws)
    wait_for(lambda: again.workspace_guard.check() is None)  # back: watched from then on
    (ws / "f.md").write_text("# F\n\nThe last lighthouse\n")
    wait_for(lambda: paths(again, "lighthouse") == ["a.md", "f.md", "sub/b.md"])


def test_a_watcher_that_stopped_is_started_again(make_app: Any) -> None:
    """A watcher whose threads died (an inotify error, a bug) left changes to the hourly
    reconcile, and status said "watcher stopped" for good: the guard's look starts it again."""
    app = started(make_app, NOTES)
    ws = Path(app.cfg.workspace)
    assert app.workspace_guard.check() is None
    assert app.watcher is not None
    app.watcher.stop(flush=False)  # its threads end, as a crash would end them
    assert app.status()["watcher"]["alive"] is False
    assert app.workspace_guard.check() == "restarted"
    assert app.status()["watcher"]["alive"] is True
    (ws / "e.md").write_text("# E\n\nThe lighthouse, watched again\n")
    wait_for(lambda: paths(app, "lighthouse") == ["a.md", "e.md", "sub/b.md"])
    app.watcher.stop(flush=False)
    assert app.workspace_guard.check() is None  # not again within the minute


def test_the_guard_stopped_while_it_starts_never_raises(tmp_path: Path) -> None:
    """stop() joined a thread start() had made and not yet started (RuntimeError: the daemon
    stopped at once after it answered exited 1); a start() after stop() started a thread."""
    import threading

    from memoryd.serve.workspaceguard import WorkspaceGuard

    errors: list[BaseException] = []
    for _ in range(300):
        guard = WorkspaceGuard(tmp_path, watched=lambda: None, rewatch=lambda: None)
        starting = threading.Thread(target=guard.start)
        starting.start()
        try:
            guard.stop()
        except RuntimeError as exc:
            errors.append(exc)
        starting.join()
        assert guard._thread is None or not guard._thread.is_alive() or guard._stop.is_set()
    assert errors == []
    late = WorkspaceGuard(tmp_path, watched=lambda: None, rewatch=lambda: None)
    late.stop()
    late.start()
    assert late._thread is None


def test_a_workspace_setting_changed_to_a_new_folder_makes_it(
    make_app: Any, tmp_path: Path
) -> None:
    """`workspace` pointed at a folder not made yet, with notes indexed from the old one: the
    new folder is made (not taken for a drive not mounted, which left the user's first
    `printf > ~/memoryd/x.md` failing and the old notes in every search), the old notes
    leave the index, and a note written there is found."""
    app = started(make_app, NOTES)
    app.close()
    new = tmp_path / "vault"
    again = make_app(model=None, workspace=str(new))
    again.start(jobs=False)
    wait_for(again.ready.is_set)
    assert new.is_dir()
    assert again.status()["watcher"]["error"] is None
    wait_for(lambda: paths(again, "lighthouse") == [])
    (new / "c.md").write_text("# C\n\nA lighthouse far away\n")
    wait_for(lambda: paths(again, "lighthouse") == ["c.md"])
    again.close()
    new.rename(tmp_path / "unplugged")  # this folder away: the drive rule again
    third = make_app(model=None, workspace=str(new))
    third.start(jobs=False)
    wait_for(third.ready.is_set)
    assert not new.exists()
    assert paths(third, "lighthouse") == ["c.md"]
