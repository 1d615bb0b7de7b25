"""Schema m010 (SQLite) / v8 (PostgreSQL): an upgraded store reads every note again at its next
reconcile, so it holds what a new store would (Latin-1 notes decoded, lenient front matter, NFD
names whole...), and nothing is embedded twice."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import older_store, settle, with_notes

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

NOTES = {
    "a.md": "# Alpha\n\nThe harbour log.\n",
    "b.md": "---\ntags: [ops]\n---\n# Beta\n\nThe harbour crane.\n",
}


def test_an_upgraded_store_reads_its_notes_again_and_embeds_nothing_twice(
    make_app: Any, backend: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    store = older_store(
        monkeypatch, request, backend, "m010_read_notes_again", "_v8_read_notes_again"
    )
    old = with_notes(make_app(**store), NOTES)
    settle(old)
    embedded = len(old.model.fake.seen)
    assert old.indexer.reconcile().unchanged == len(NOTES)
    old.close()
    monkeypatch.undo()
    new = make_app(**store)  # the same store, migrated
    report = new.indexer.reconcile()
    assert report.indexed == len(NOTES) and report.unchanged == 0  # read again
    assert new.indexer.reconcile().unchanged == len(NOTES)  # once
    settle(new)
    assert new.model.fake.seen == []  # nothing embedded again
    assert new.embedder.counts()["pending"] == 0
    assert embedded > 0
