"""Entities in German notes and memories on both backends: German capitalises every noun, so a
lone capitalised word on a German line is a name only with a sign (text/entity_names.py), and
a store written before that rule is read again on upgrade (SQLite m020, PostgreSQL v18)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import entities_caught_up, older_store, write_synced
from test_entity_claims import memory_keys
from test_entity_known import keys_in
from test_entity_store import consistent

from memoryd.text import entity_german

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

NOTE = (
    "wartung.md",
    "# Wartung\n\nGestern hat Anna mit dem Team über die Datenbank gesprochen. Der Server in "
    "Berlin startet nach dem Update nicht mehr, weil die Konfiguration fehlt.\n",
)
MEMORY = "Klaus sagt, die Migration zu PostgreSQL ist am Montag und die Dokumentation fehlt noch."
NOUNS = {"team", "datenbank", "server", "konfiguration", "update", "migration", "dokumentation"}


def test_an_older_store_loses_the_nouns_it_made_entities_of(
    make_app: Any, backend: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """A store written before the rule (here: the rule switched off, as the code before it
    read German lines) holds an entity for each noun; once migrated, the memory is read again
    at once and the note at the next reconcile: the nouns go, the names stay, counts exact."""
    store = older_store(monkeypatch, request, backend, "m020_german_nouns", "_v18_german_nouns")
    monkeypatch.setattr(entity_german, "german", lambda line: False)
    old = make_app(model=None, **store)
    Path(old.cfg.workspace).mkdir(parents=True, exist_ok=True)
    write_synced(old, *NOTE)
    memory = old.memories.add(content=MEMORY)
    assert {"datenbank", "server"} <= keys_in(old, NOTE[0])  # the old reading
    assert {"migration", "dokumentation"} <= memory_keys(old, memory.id)
    old.close()
    monkeypatch.undo()
    new = make_app(model=None, **store)
    kept = memory_keys(new, memory.id)
    assert not kept & NOUNS and {"klaus", "postgresql"} <= kept, kept
    new.indexer.reconcile()
    entities_caught_up(new)
    keys = keys_in(new, NOTE[0])
    assert not keys & NOUNS and {"anna", "berlin"} <= keys, keys
    consistent(new)
