"""Issue 20.2: an entity's type is a function of its current mentions (store/entitytypes.py),
whatever order they came in and whichever left: the type a rebuild reads. Both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import entities_caught_up, older_store, write_synced
from test_entity_claims import memory_keys
from test_entity_known import keys_in
from test_entity_store import consistent, rows

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

TYPED = "Lena Fischer met Ravi at the office."  # a person, by its sentence
LINKED = "See [[Lena Fischer]] on the plan."  # untyped: a wikilink says nothing of what


def type_of(app: Any, key: str) -> str | None:
    found = rows(app, "SELECT type FROM entities WHERE key = ?", (key,))
    return str(found[0][0]) if found else None


def expected_types(app: Any) -> dict[int, str]:
    """The rule of store/entitytypes.py written again: among the typed mentions, the type
    declared most, then written most, then not person, then the first by name; 'other' when
    none is typed."""
    votes: dict[int, list[tuple[int, int, str]]] = {}
    for entity_id, kind, declared, n in rows(
        app,
        "SELECT entity_id, type, sum(declared), count(*) FROM mentions"
        " WHERE type != 'other' GROUP BY entity_id, type",
    ):
        vote = (-int(declared), -int(n), kind == "person", str(kind))
        votes.setdefault(int(entity_id), []).append(vote)
    return {
        int(entity_id): min(votes[int(entity_id)])[3] if int(entity_id) in votes else "other"
        for (entity_id,) in rows(app, "SELECT id FROM entities")
    }


def typed_consistent(app: Any) -> None:
    consistent(app)
    counted = "SELECT entity_id, type, declared, n FROM entity_types ORDER BY 1, 2"
    assert rows(app, counted) == rows(
        app,
        "SELECT entity_id, type, sum(declared), count(*) FROM mentions WHERE type != 'other'"
        " GROUP BY entity_id, type ORDER BY 1, 2",
    )
    assert dict((int(i), str(t)) for i, t in rows(app, "SELECT id, type FROM entities")) == (
        expected_types(app)
    )


def test_the_type_goes_with_the_mentions_that_gave_it(make_app: Any) -> None:
    app = make_app(model=None)
    typed = app.memories.add(content=TYPED)
    app.memories.add(content=LINKED)
    assert type_of(app, "lena fischer") == "person"
    app.memories.update(typed.id, {"content": "Ravi is at the office."})
    assert type_of(app, "lena fischer") == "other"  # was kept a person
    typed_consistent(app)
    again = app.memories.add(content=TYPED)
    assert type_of(app, "lena fischer") == "person"
    app.memories.delete(again.id)
    assert type_of(app, "lena fischer") == "other"
    typed_consistent(app)


@pytest.mark.parametrize("order", ["system-first", "person-first"])
def test_the_type_is_the_one_written_most_whatever_came_first(make_app: Any, order: str) -> None:
    app = make_app(model=None)
    system = ["We deployed Mercury to prod.", "The Mercury service is down."]
    person = ["Mercury said hello to Ravi."]
    added = {
        text: app.memories.add(content=text).id
        for text in (system + person if order == "system-first" else person + system)
    }
    assert type_of(app, "mercury") == "system"
    typed_consistent(app)
    for text in system:
        app.memories.delete(added[text])
    assert type_of(app, "mercury") == "person"  # was kept a system
    typed_consistent(app)


def test_a_note_gone_takes_its_type_with_it(make_app: Any) -> None:
    app = make_app(model=None)
    Path(app.cfg.workspace).mkdir(parents=True, exist_ok=True)
    write_synced(app, "daily.md", f"# Daily\n\n{LINKED}\n")
    write_synced(app, "met.md", f"# Met\n\n{TYPED}\n")
    assert type_of(app, "lena fischer") == "person"
    (Path(app.cfg.workspace) / "met.md").unlink()
    app.indexer.reconcile()
    entities_caught_up(app)
    assert type_of(app, "lena fischer") == "other"
    typed_consistent(app)


def test_the_upgrade_reads_the_notes_again_once_and_types_them_as_a_new_index(
    make_app: Any, backend: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """A store written before m018 / v16: the step types each note's mentions as their entity
    was (a memory typed "Lena Fischer" a person, so the daily note's untyped link became a
    person's too); the first reconcile reads every note again, once (nothing embedded), so the
    mentions are typed as a new index types them, and the type goes with the memory that gave
    it (before: the upgraded store kept her a person after the memory went, until the note
    changed or `reindex --full`)."""
    store = older_store(monkeypatch, request, backend, "m018_mention_types", "_v16_mention_types")
    old = make_app(model=None, **store)
    Path(old.cfg.workspace).mkdir(parents=True, exist_ok=True)
    typed = old.memories.add(content=TYPED)
    write_synced(old, "daily.md", f"# Daily\n\n{LINKED}\n")
    assert type_of(old, "lena fischer") == "person"
    old.close()
    monkeypatch.undo()
    new = make_app(model=None, **store)
    report = new.indexer.reconcile()  # the first reconcile reads every note again (the daily
    assert report.indexed >= 1 and report.unchanged == 0  # log's file too, when it is on)
    entities_caught_up(new)
    mentioned = "SELECT surface, line, type FROM mentions ORDER BY 1, 2, 3"
    upgraded = rows(new, mentioned)
    assert ("Lena Fischer", 3, "other") in upgraded  # the link says nothing of what she is
    new.notes.forget_hashes()  # what `reindex --full` reads
    new.indexer.reconcile()
    entities_caught_up(new)
    assert rows(new, mentioned) == upgraded
    typed_consistent(new)
    new.memories.delete(typed.id)
    assert type_of(new, "lena fischer") == "other"  # was kept a person
    typed_consistent(new)
    new.close()
    again = make_app(model=None, **store)  # and the next start reads nothing
    report = again.indexer.reconcile()
    entities_caught_up(again)
    assert report.indexed == 0 and report.unchanged >= 1


@pytest.mark.parametrize("order", ["daily-between", "people-first"])
def test_a_first_name_two_people_claim_is_no_ones_whichever_came_first(
    make_app: Any, order: str
) -> None:
    """Lena Fischer's note, then a daily note's "Lena" (hers: she alone claims it), then Lena
    Okafor's note: "Lena" goes back to no one, as when both notes came before the daily one
    (docs/protocol.md; it stayed Lena Fischer's)."""
    app = make_app(model=None)
    Path(app.cfg.workspace).mkdir(parents=True, exist_ok=True)
    first = ("a.md", "# Lena Fischer\n\nRuns billing.\n")
    second = ("b.md", "# Lena Okafor\n\nRuns support.\n")
    daily = ("daily.md", "# Daily\n\nLena: the invoices are out.\n")
    memory = "Lena prefers Signal."
    steps = [first, daily, second] if order == "daily-between" else [first, second, daily]
    for path, text in steps:
        if path == second[0] and order == "daily-between":
            added = app.memories.add(content=memory)
            assert "lena fischer" in memory_keys(app, added.id)
        write_synced(app, path, text)
    if order == "people-first":
        added = app.memories.add(content=memory)
    assert "lena" in keys_in(app, daily[0])
    assert "lena" in memory_keys(app, added.id)
    typed_consistent(app)
    (Path(app.cfg.workspace) / second[0]).unlink()  # one claims it again: hers
    app.indexer.reconcile()
    entities_caught_up(app)
    assert "lena fischer" in keys_in(app, daily[0])
    assert "lena fischer" in memory_keys(app, added.id)
    typed_consistent(app)


@pytest.mark.parametrize("order", [(0, 1, 2), (1, 2, 0), (2, 1, 0), (1, 0, 2)])
def test_a_first_name_one_claimant_writes_in_her_note_is_no_ones_when_two_claim(
    make_app: Any, order: tuple[int, ...]
) -> None:
    """Lena Okafor's note writes "Lena" beside her full name (hers there); a form of one entity
    she claims, it took every "Lena" of other notes even while Lena Fischer claimed it too,
    when her note came first."""
    app = make_app(model=None)
    Path(app.cfg.workspace).mkdir(parents=True, exist_ok=True)
    notes = [
        ("a.md", "# Lena Fischer\n\nRuns billing.\n"),
        ("b.md", "# Lena Okafor\n\nLena Okafor runs support. Lena is away.\n"),
        ("daily.md", "# Daily\n\nLena: the invoices are out.\n"),
    ]
    for at in order:
        write_synced(app, *notes[at])
    assert "lena" in keys_in(app, "daily.md")
    assert "lena okafor" in keys_in(app, "b.md")
    typed_consistent(app)
