"""File-event bursts in the App: folder-scoped scans, lost events start a reconcile."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import started_app, wait_for

from memoryd.store import entries


def indexed(app: Any) -> set[str]:
    return set(app.store.read(entries.documents))


def test_a_folder_event_walks_only_that_folder(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(model=None)
    ws = app.cfg.workspace
    for folder in ("big", "other"):
        for i in range(5):
            (ws / folder / f"sub{i}").mkdir(parents=True)
            (ws / folder / f"sub{i}" / "n.md").write_text(f"# {folder} {i}\n\ntext\n")
    app.indexer.reconcile()
    (ws / "new").mkdir()
    (ws / "new" / "a.md").write_text("# A\n\nanteater\n")
    walked: list[str] = []
    real_walk = os.walk

    def recording_walk(top: Any, *args: Any, **kw: Any) -> Any:
        for entry in real_walk(top, *args, **kw):
            walked.append(entry[0])
            yield entry

    monkeypatch.setattr("memoryd.index.indexer.os.walk", recording_walk)
    rep = app.indexer.sync_paths([ws / "new"])
    assert rep.indexed == 1 and "new/a.md" in indexed(app)
    assert walked and all(Path(d).is_relative_to(ws / "new") for d in walked), walked


def test_a_deleted_folder_removes_only_its_notes(make_app: Any) -> None:
    app = make_app(model=None)
    ws = app.cfg.workspace
    (ws / "gone").mkdir()
    (ws / "gone" / "a.md").write_text("a")
    (ws / "gone-not").mkdir()
    (ws / "gone-not" / "b.md").write_text("b")
    app.indexer.reconcile()
    (ws / "gone" / "a.md").unlink()
    (ws / "gone").rmdir()
    rep = app.indexer.sync_paths([ws / "gone"])
    assert rep.deleted == 1 and indexed(app) == {"gone-not/b.md"}


def test_inotify_overflow_starts_a_reconcile_at_once(make_app: Any) -> None:
    app = started_app(make_app)
    app.watcher.on_change = lambda paths: None  # the events below are lost
    (app.cfg.workspace / "lost.md").write_text("# Lost\n\nnarwhal\n")
    wait_for(lambda: app.watcher.stats["events_seen"] > 0)
    emitter = next(iter(app.watcher._observer.emitters))
    emitter._inotify.on_queue_overflow()  # what watchdog's inotify reader calls
    wait_for(lambda: "lost.md" in indexed(app), timeout=10)


def test_a_failed_batch_starts_a_reconcile_at_once(make_app: Any) -> None:
    app = started_app(make_app)

    def failing(paths: list[Path]) -> None:
        raise OSError("disk hiccup")

    app.watcher.on_change = failing
    (app.cfg.workspace / "dropped.md").write_text("# Dropped\n\nokapi\n")
    wait_for(lambda: "dropped.md" in indexed(app), timeout=10)
    assert app.watcher.stats["errors"] >= 1
