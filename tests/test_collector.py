"""The collector settled after start-up (core/collector.py, issue 23.3)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from memoryd.core import collector


@pytest.fixture
def restored() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_settle_freezes_what_lives_and_raises_the_young_threshold(restored: None) -> None:
    node = _Node()
    ref = weakref.ref(node)
    collector.settle(young=5000)
    assert gc.get_freeze_count() > 0 and gc.get_threshold()[0] == 5000
    del node
    gc.collect()
    assert ref() is not None  # frozen: out of the collector's walks
    collector.release()
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert ref() is None  # released: a cycle made garbage is freed again


def test_cycles_made_after_settle_are_still_collected(restored: None) -> None:
    collector.settle()
    ref = weakref.ref(_Node())
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("ends", ["returns", "raises"])
def test_memoryd_run_freezes_everything_as_it_ends(
    restored: None, monkeypatch: pytest.MonkeyPatch, ends: str
) -> None:
    """`memoryd run`, its daemon stopped: the interpreter's finalization walked every object
    the app's close had given back to the collector (about half of a stop after SIGTERM)."""
    import argparse

    from memoryd import cli
    from memoryd.serve import daemon

    def run(*args: object, **kwargs: object) -> int:
        assert gc.get_freeze_count() == 0  # (not before the daemon is done)
        if ends == "raises":
            raise RuntimeError("boom")
        return 0

    gc.unfreeze()
    monkeypatch.setattr(daemon, "run", run)
    if ends == "raises":
        with pytest.raises(RuntimeError):
            cli.cmd_run(argparse.Namespace(config=None))
    else:
        assert cli.cmd_run(argparse.Namespace(config=None)) == 0
    assert gc.get_freeze_count() > 0
