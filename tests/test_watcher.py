"""The watcher with the real watchdog observer and real files."""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

from memoryd.index.watcher import Watcher


class Sink:
    def __init__(self) -> None:
        self.batches: list[list[Path]] = []
        self.lock = threading.Lock()

    def __call__(self, paths: list[Path]) -> None:
        with self.lock:
            self.batches.append(paths)

    def all(self) -> list[Path]:
        with self.lock:
            return [p for b in self.batches for p in b]


def start(root: Path, sink: Sink, **kw: object) -> Watcher:
    w = Watcher(root, sink, debounce=0.2, accept=lambda p: ".hidden" not in p.parts, **kw)
    w.start()
    return w


def test_burst_gives_one_delivery_and_moves_come_together(tmp_path: Path) -> None:
    sink = Sink()
    w = start(tmp_path, sink)
    try:
        f = tmp_path / "a.md"
        for i in range(20):
            f.write_text(f"version {i}")
        wait_for(lambda: f in sink.all())
        time.sleep(0.5)  # bounded check that no second delivery follows the burst
        assert sink.all().count(f) == 1
        f.rename(tmp_path / "b.md")
        wait_for(lambda: any(tmp_path / "b.md" in b for b in sink.batches))
        batch = next(b for b in sink.batches if tmp_path / "b.md" in b)
        assert f in batch  # old and new path in one batch
        (tmp_path / ".hidden").mkdir()
        (tmp_path / ".hidden" / "x.md").write_text("secret")
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "c.md").write_text("c")
        wait_for(lambda: tmp_path / "sub" / "c.md" in sink.all())
        assert tmp_path / ".hidden" / "x.md" not in sink.all()
        (tmp_path / "b.md").unlink()
        wait_for(lambda: sink.all().count(tmp_path / "b.md") >= 2)
        assert w.alive
    finally:
        w.stop()
    assert not w.alive


def test_callback_errors_do_not_stop_the_watcher(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    calls: list[list[Path]] = []

    def flaky(paths: list[Path]) -> None:
        calls.append(paths)
        if len(calls) == 1:
            raise RuntimeError("first delivery fails")

    w = Watcher(tmp_path, flaky, debounce=0.1, on_error=errors.append)
    w.start()
    try:
        (tmp_path / "one.md").write_text("1")
        wait_for(lambda: errors)
        (tmp_path / "two.md").write_text("2")
        wait_for(lambda: any(tmp_path / "two.md" in c for c in calls))
    finally:
        w.stop()


def test_stop_flushes_pending_paths(tmp_path: Path) -> None:
    sink = Sink()
    w = Watcher(tmp_path, sink, debounce=30)  # would not fire on its own for 30 s
    w.start()
    (tmp_path / "late.md").write_text("x")
    wait_for(lambda: w.stats["events_seen"] > 0)
    w.stop()
    assert tmp_path / "late.md" in sink.all()
    assert w._dispatcher is not None and not w._dispatcher.is_alive()


class TimedSink(Sink):
    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    def __call__(self, paths: list[Path]) -> None:
        with self.lock:
            self.batches.append(paths)
            self.times.append(time.monotonic())


def test_a_file_written_without_pause_is_delivered_within_the_maximum_wait(
    tmp_path: Path,
) -> None:
    sink = TimedSink()
    # a debounce longer than the gap between writes: without a maximum wait, nothing would be
    # delivered until the writes stop
    w = Watcher(tmp_path, sink, debounce=0.5, max_wait=0.6)
    w.start()
    f = tmp_path / "log.md"
    try:
        started = time.monotonic()
        with f.open("a") as out:
            while time.monotonic() - started < 2.5:
                out.write("another line\n")
                out.flush()
                time.sleep(0.1)
        writing_stopped = time.monotonic()
        wait_for(lambda: sink.all().count(f) >= 1)
        with sink.lock:
            during = [t for t in sink.times if t < writing_stopped]
        # without the maximum wait, the debounce (longer than the gap between writes) would
        # deliver nothing until the writes stop; with it, one at least every 0.6 s of 2.5 s
        assert len(during) >= 2, "no delivery while the file was being written"
    finally:
        w.stop()


def test_reads_in_the_workspace_reach_no_handler(tmp_path: Path) -> None:
    notes = [tmp_path / f"n{i}.md" for i in range(20)]
    for n in notes:
        n.write_text("some text")
    sink = Sink()
    w = start(tmp_path, sink)
    try:
        for _ in range(5):  # what `rg` over the workspace does: open, read, close
            for n in notes:
                n.read_bytes()
        sentinel = tmp_path / "sentinel.md"
        sentinel.write_text("x")
        wait_for(lambda: sentinel in sink.all())
        # the sentinel's create/modify/close-write; 100 opens and 100 closes never came
        assert w.stats["events_seen"] <= 5, w.stats
        assert all(n not in sink.all() for n in notes)
    finally:
        w.stop()


def test_queue_overflow_is_reported(tmp_path: Path) -> None:
    overflows: list[bool] = []
    w = Watcher(tmp_path, Sink(), debounce=0.1, on_overflow=lambda: overflows.append(True))
    w.start()
    try:
        emitter = next(iter(w._observer.emitters))
        emitter._inotify.on_queue_overflow()  # what the inotify reader calls on IN_Q_OVERFLOW
        assert overflows == [True]
        assert w.stats["overflows"] == 1
        assert w.alive
        # the watches were rebuilt: events still arrive
        sink_file = tmp_path / "after.md"
        sink_file.write_text("x")
        wait_for(lambda: w.stats["events_seen"] > 0)
    finally:
        w.stop()


def test_folder_events(tmp_path: Path) -> None:
    sink = Sink()
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "a.md").write_text("a")
    w = start(tmp_path, sink)
    try:
        # a folder moved: both ends in one batch
        (tmp_path / "old").rename(tmp_path / "new")
        wait_for(lambda: any(tmp_path / "new" in b for b in sink.batches))
        batch = next(b for b in sink.batches if tmp_path / "new" in b)
        assert tmp_path / "old" in batch
        # a folder with nothing to index in it is not delivered
        (tmp_path / "empty").mkdir()
        (tmp_path / "later").mkdir()
        (tmp_path / "later" / "b.md").write_text("b")
        wait_for(lambda: tmp_path / "later" / "b.md" in sink.all())
        time.sleep(0.3)  # bounded: the empty folder's debounce has passed
        assert tmp_path / "empty" not in sink.all()
        # a deleted folder is delivered as its path
        (tmp_path / "new" / "a.md").unlink()
        (tmp_path / "new").rmdir()
        wait_for(lambda: sink.all().count(tmp_path / "new") >= 2)
    finally:
        w.stop()


def refuse_watches(
    monkeypatch: pytest.MonkeyPatch, code: int, refused: Callable[[str], bool]
) -> None:
    """inotify_add_watch fails with `code` (a limit) for the folders `refused` names."""
    from watchdog.observers import inotify_c

    real = inotify_c.InotifyFD.add_callback

    def add_callback(self: Any, path: bytes, *a: Any, **kw: Any) -> Any:
        if refused(os.fsdecode(path)):
            raise OSError(code, "inotify watch limit reached")
        return real(self, path, *a, **kw)

    monkeypatch.setattr(inotify_c.InotifyFD, "add_callback", add_callback)


def tree(root: Path) -> list[Path]:
    folders = [root / "a", root / "a" / "deep", root / "b", root / "b" / "deep" / "er"]
    for f in folders:
        f.mkdir(parents=True)
        (f / "old.md").write_text("old")
    return folders


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EMFILE])
def test_folders_past_the_watch_limit_are_polled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    """A user at fs.inotify.max_user_watches (other programs hold the rest): the folders the
    kernel refuses are polled, their changes delivered, and stats say how many and what to raise;
    once watches are free again they are watched."""
    folders = tree(tmp_path)
    refusing = [True]
    refuse_watches(monkeypatch, code, lambda p: refusing[0] and "deep" in p)
    sink = Sink()
    w = Watcher(tmp_path, sink, debounce=0.1, accept=lambda p: p.suffix == ".md")
    w.poller.every = 0.2
    w.start()
    try:
        polled = w.stats["polled"]
        assert polled["folders"] == 3  # a/deep, b/deep, b/deep/er
        assert polled["limit"] == (
            "fs.inotify.max_user_instances"
            if code == errno.EMFILE
            else "fs.inotify.max_user_watches"
        )
        assert polled["raise"].startswith("sudo sysctl fs.inotify.max_user_")
        assert w.alive
        for f in folders:  # watched or not, each change arrives
            (f / "new.md").write_text("new")
            (f / "old.md").write_text("changed, longer")
        (folders[3] / "skip.tmp").write_text("not accepted")
        expected = {f / n for f in folders for n in ("new.md", "old.md")}
        wait_for(lambda: expected <= set(sink.all()), timeout=10)
        assert folders[3] / "skip.tmp" not in sink.all()
        (folders[1] / "old.md").unlink()  # vanished
        (folders[1] / "sub").mkdir()  # a folder appeared in a polled folder: polled too
        (folders[1] / "sub" / "s.md").write_text("s")
        wait_for(lambda: sink.all().count(folders[1] / "old.md") >= 2, timeout=10)
        wait_for(lambda: folders[1] / "sub" / "s.md" in sink.all(), timeout=10)
        assert w.stats["polled"]["folders"] == 4
        (folders[1] / "sub" / "t.md").write_text("t")
        wait_for(lambda: folders[1] / "sub" / "t.md" in sink.all(), timeout=10)
        refusing[0] = False  # the watches are free again: watched from the next round on
        wait_for(lambda: w.stats["polled"] is None, timeout=10)
        w.poller.every = 3600.0  # no more polling: what follows is seen by inotify
        (folders[3] / "later.md").write_text("later")
        wait_for(lambda: folders[3] / "later.md" in sink.all(), timeout=10)
        assert w.alive
    finally:
        w.stop()


def test_no_inotify_instance_at_all_polls_every_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """inotify_init fails (fs.inotify.max_user_instances): the watcher still starts, polling."""
    from watchdog.observers import inotify_c

    folders = tree(tmp_path)

    def no_instance(cls: Any) -> int:
        raise OSError(errno.EMFILE, "inotify instance limit reached")

    monkeypatch.setattr(inotify_c.InotifyFD, "_create_inotify_fd", classmethod(no_instance))
    monkeypatch.setattr(inotify_c.InotifyFD, "_instance", None)
    sink = Sink()
    w = Watcher(tmp_path, sink, debounce=0.1, accept=lambda p: p.suffix == ".md")
    w.poller.every = 0.2
    w.start()
    try:
        assert w.alive
        polled = w.stats["polled"]
        assert polled["folders"] == 6 and polled["limit"] == "fs.inotify.max_user_instances"
        (tmp_path / "top.md").write_text("top")
        (folders[3] / "new.md").write_text("new")
        wait_for(lambda: {tmp_path / "top.md", folders[3] / "new.md"} <= set(sink.all()))
    finally:
        w.stop()
    assert not w.alive
