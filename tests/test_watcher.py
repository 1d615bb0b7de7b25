"""The watcher with the real watchdog observer and real files."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from conftest import wait_for

from memoryd.watcher import Watcher


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
    before = set(threading.enumerate())
    w.stop()
    assert tmp_path / "late.md" in sink.all()
    assert not any(
        t.name == "memoryd-watch-dispatch" for t in threading.enumerate() if t.is_alive()
    ), before
