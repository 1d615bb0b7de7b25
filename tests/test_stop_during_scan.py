"""A daemon stopped (SIGTERM) during its first scan of a large workspace stops at once, on both
backends: the reconcile ends after the file in hand. Before, the stop waited for the whole scan
up to App.close's 30 s join, then closed the store under it ("indexing failed" with a traceback
for the files in flight); the next start indexes the rest."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import held_scan, wait_for

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

NOTES = 200


def test_a_stop_during_the_first_scan_ends_it_and_the_next_start_finishes_it(
    daemon_factory: Any, config_dict: dict[str, Any], tmp_path: Path
) -> None:
    ws = Path(config_dict["workspace"])
    for i in range(NOTES):
        folder = ws / f"f{i % 20:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{i:04d}.md").write_text(f"# Note {i}\n\nLine about topic {i}.\n")
    # the first scan lasts until the stop (held_scan; 1,500 notes took up to 35 s to index)
    env, _hold = held_scan(tmp_path)
    first = daemon_factory(dailylog={"enabled": False}, extra_env=env)
    started = time.monotonic()
    assert first.stop(signal.SIGTERM, timeout=60) == 0
    took = time.monotonic() - started
    log = first.log()
    assert "indexing stopped: memoryd is stopping" in log, log[-3000:]
    assert "indexing failed" not in log and "Traceback" not in log
    assert took < 25, took  # App.close waited 30 s for the scan before

    second = daemon_factory(dailylog={"enabled": False})

    def indexed() -> bool:
        return second.call("stats")["documents"] == NOTES

    wait_for(indexed, timeout=240, interval=0.5)
    second.stop()


def test_a_stop_during_the_start_up_skips_the_caches_it_would_warm(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start-up's last steps warm caches for the searches to come (vectors, the keyword
    pool's bounds, the collector's freeze: ~60 ms of CPU at an idle daemon's start, 0.3 s of
    wall at load 15); a stop that came during its reconcile does not wait for them (App.close
    joins the start-up thread)."""
    from memoryd.core import collector
    from memoryd.serve.app import App
    from memoryd.store import ftsprune

    warmed: list[str] = []
    monkeypatch.setattr(collector, "settle", lambda: warmed.append("settle"))
    monkeypatch.setattr(ftsprune, "learn", lambda con: warmed.append("learn"))
    reconcile = App.reconcile

    def stopped_during(self: Any, *args: Any, **kwargs: Any) -> Any:
        self.stop_work()  # as Server.close does when a stop outlasts its timeout
        return reconcile(self, *args, **kwargs)

    monkeypatch.setattr(App, "reconcile", stopped_during)
    app = make_app(model=None)
    app.start(jobs=False)
    assert app.ready.wait(30)
    assert warmed == []
    make_app.close(app)
    monkeypatch.setattr(App, "reconcile", reconcile)
    other = make_app(model=None)
    other.start(jobs=False)  # (the spies see a start that is not stopped)
    assert other.ready.wait(30)
    wait_for(lambda: warmed == ["learn", "settle"], timeout=30)
