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
