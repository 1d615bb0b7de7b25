"""Issue 20, points 2 and 3: entities in the store on both backends, kept exact through edits,
moves, deletes and expiry; the `entities` search filter inside the pools; `kind: "entity"`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from conftest import entities_caught_up, migrations_before, write_synced

from memoryd.search import entities as entity_search
from memoryd.store import entities as store_entities
from memoryd.store import entitypairs, entityread

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def rows(app: Any, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    return app.store.read(lambda con: [tuple(r) for r in con.execute(sql, params).fetchall()])


def entity(app: Any, key: str) -> tuple[Any, ...] | None:
    found = rows(app, "SELECT key, name, type, mentions FROM entities WHERE key = ?", (key,))
    return found[0] if found else None


def consistent(app: Any) -> None:
    """The derived counts equal what the mentions say (the triggers' work)."""
    counts = dict(rows(app, "SELECT entity_id, count(*) FROM mentions GROUP BY entity_id"))
    stored = dict(rows(app, "SELECT id, mentions FROM entities"))
    assert stored == counts
    assert dict(((a, b), n) for a, b, n in rows(app, "SELECT a, b, count FROM relations")) == (
        expected_pairs(app)
    )
    # each mention carries its entry's date (m007; the entity page reads them off the index)
    assert not rows(
        app,
        "SELECT m.entry_id FROM mentions m JOIN entries e ON e.id = m.entry_id"
        " WHERE m.created_at != e.created_at",
    )


def expected_pairs(app: Any) -> dict[tuple[int, int], int]:
    """The relations the mentions call for, by the rule of store/entities.py written again
    here: an entry pairs all its entities when they are at most PAIRED, else those that fewer
    than PAIRED + 1 of its entities (itself included) match or beat in rows; and every row says
    whether its entity is paired in its entry."""
    per: dict[int, dict[int, tuple[int, int, int]]] = {}
    for entry_id, entity_id, n, lo, hi in rows(
        app,
        "SELECT entry_id, entity_id, count(*), min(paired), max(paired) FROM mentions"
        " GROUP BY entry_id, entity_id",
    ):
        per.setdefault(int(entry_id), {})[int(entity_id)] = (int(n), int(lo), int(hi))
    pairs: dict[tuple[int, int], int] = {}
    for entry_id, counts in per.items():
        paired = sorted(
            e
            for e, (n, _, _) in counts.items()
            if sum(1 for m, _, _ in counts.values() if m >= n) <= entitypairs.PAIRED
        )
        flags = {e: (lo, hi) for e, (_, lo, hi) in counts.items()}
        assert flags == {e: (int(e in paired),) * 2 for e in counts}, entry_id
        for i, a in enumerate(paired):
            for b in paired[i + 1 :]:
                pairs[a, b] = pairs.get((a, b), 0) + 1
    return pairs


@pytest.fixture
def app(make_app: Any) -> Any:
    a = make_app(model=None)
    Path(a.cfg.workspace).mkdir(parents=True, exist_ok=True)
    return a


def test_wikilink_alias_and_possessive_are_one_entity(app: Any) -> None:
    write_synced(
        app,
        "people/Caroline Baker.md",
        "# Caroline Baker\n\nCaroline Baker leads the billing team.\n",
    )
    write_synced(
        app,
        "meeting.md",
        "# Weekly\n\nWe met [[Caroline Baker|Caro]] about billing-svc.\n\n"
        "## Later\n\nCaroline Baker's plan for billing-svc was approved.\n",
    )
    e = entity(app, "caroline baker")
    assert e is not None and e[1] == "Caroline Baker"
    assert entity(app, "caro") is None  # the alias is a surface form, not an entity
    ids = app.store.read(lambda con: entityread.resolve_filter(con, ["Caro"]))
    assert ids == app.store.read(lambda con: entityread.resolve_filter(con, ["caroline baker's"]))
    assert len(ids[0]) == 1 and len(ids[0][0]) == 1
    consistent(app)


def test_edit_removing_the_last_mention_removes_the_entity(app: Any) -> None:
    write_synced(app, "a.md", "# Notes\n\nKubernetes runs billing-svc. Melanie said so.\n")
    assert entity(app, "kubernetes") is not None
    write_synced(app, "a.md", "# Notes\n\nNothing here any more. Melanie said so.\n")
    assert entity(app, "kubernetes") is None
    assert entity(app, "melanie") is not None
    consistent(app)


def test_delete_move_and_expiry_keep_mentions_exact(app: Any) -> None:
    write_synced(app, "a.md", "# One\n\nMelanie met Caroline in Lisbon.\n")
    write_synced(app, "b.md", "# Two\n\nMelanie wrote to Caroline.\n")
    m = app.memories.add(content="Melanie prefers tea", type="preference")
    assert entity(app, "melanie")[3] == 3
    consistent(app)
    # a move keeps the chunks, so the mentions stay
    (Path(app.cfg.workspace) / "b.md").rename(Path(app.cfg.workspace) / "c.md")
    app.indexer.reconcile()
    entities_caught_up(app)
    assert entity(app, "melanie")[3] == 3
    assert rows(
        app,
        "SELECT d.path FROM mentions m JOIN entries e ON e.id = m.entry_id"
        " JOIN documents d ON d.id = e.document_id JOIN entities n ON n.id = m.entity_id"
        " WHERE n.key = 'caroline' ORDER BY d.path",
    ) == [("a.md",), ("c.md",)]
    # a deleted note takes its mentions
    (Path(app.cfg.workspace) / "a.md").unlink()
    app.indexer.reconcile()
    entities_caught_up(app)
    assert entity(app, "lisbon") is None
    assert entity(app, "melanie")[3] == 2
    consistent(app)
    # an edited memory, then an expired one
    app.memories.update(m.id, {"content": "Melanie prefers coffee with Oskar"})
    assert entity(app, "oskar") is not None
    now = app.memories.clock()
    app.memories.update(m.id, {"expires_at": now + 60})  # (a time past is refused)
    app.memories.clock = lambda: now + 3600  # an hour later
    app.memories.prune()
    assert entity(app, "oskar") is None
    assert entity(app, "melanie")[3] == 1
    consistent(app)
    app.memories.delete(app.memories.add(content="Oskar again").id)
    assert entity(app, "oskar") is None
    consistent(app)


def test_a_daily_notes_mentions_are_dated_by_its_file_name(app: Any) -> None:
    """A daily note (`2026-03-03.md`, no front-matter date) was written that day: its mentions,
    and so the entity's first and last seen, carry that date, not the file's mtime."""
    write_synced(app, "journal/2026-03-03.md", "# 2026-03-03\n\nMelanie called about Lisbon.\n")
    write_synced(app, "journal/2026-03-09.md", "# 2026-03-09\n\nMelanie again.\n")
    page = entity_search.page(app.store, "Melanie")
    assert (page["first_seen"], page["last_seen"]) == (
        "2026-03-03T00:00:00Z",
        "2026-03-09T00:00:00Z",
    )


def test_a_moved_note_is_named_by_its_new_file_name(app: Any) -> None:
    """A note's file name is a form of its title: after a move `[[new-name]]` names the person
    and the old file name is no longer one of her forms, as if the note had been indexed there
    (its chunks and vectors are kept)."""
    write_synced(app, "people/caroline-baker.md", "# Caroline Baker\n\nCaroline runs billing.\n")
    before = rows(app, "SELECT id FROM entries WHERE kind = 'chunk'")
    (Path(app.cfg.workspace) / "people" / "caroline-baker.md").rename(
        Path(app.cfg.workspace) / "people" / "cbaker.md"
    )
    assert app.indexer.reconcile().moved == 1
    entities_caught_up(app)
    assert rows(app, "SELECT id FROM entries WHERE kind = 'chunk'") == before
    forms = {str(r[0]) for r in rows(app, "SELECT surface FROM mentions")}
    assert "cbaker" in forms and "caroline-baker" not in forms
    write_synced(app, "daily.md", "# Standup\n\nLunch with [[cbaker]].\n")
    assert entity(app, "cbaker") is None
    assert entity(app, "caroline baker")[3] == 4
    consistent(app)


@pytest.mark.sqlite_only("migration m006 of the SQLite schema (PostgreSQL: v2, the same step)")
def test_m006_gives_an_old_store_its_entities(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.store import migrations

    migrations_before(monkeypatch, migrations, migrations.m006_entities)
    monkeypatch.setattr(store_entities, "index_memory", lambda *a: None)  # no tables yet
    monkeypatch.setattr(store_entities, "index_document", lambda *a: 0)
    app = make_app(model=None)
    Path(app.cfg.workspace).mkdir(parents=True, exist_ok=True)
    (Path(app.cfg.workspace) / "a.md").write_text("# Trip\n\nMelanie flew to Lisbon.\n")
    app.indexer.reconcile()
    entities_caught_up(app)
    app.memories.add(content="Oskar runs billing-svc")
    app.close()
    monkeypatch.undo()
    app = make_app(model=None)
    assert entity(app, "oskar") is not None  # memories: read by the migration
    assert entity(app, "lisbon") is None
    assert app.indexer.reconcile().indexed >= 1  # notes (and the daily log): at reconcile
    entities_caught_up(app)
    assert entity(app, "lisbon") is not None
    consistent(app)


def test_mention_dates_follow_front_matter_and_edits(app: Any) -> None:
    write_synced(app, "a.md", "---\ncreated: 2021-03-04\n---\n# One\n\nMelanie met Oskar.\n")
    dated = rows(app, "SELECT DISTINCT m.created_at FROM mentions m")
    assert len(dated) == 1 and time.gmtime(dated[0][0])[:3] == (2021, 3, 4)
    consistent(app)
    # a date changed in place (not through the indexer) is followed by the trigger
    app.store.run_write(lambda con: con.execute("UPDATE entries SET created_at = 1000.0"))
    assert rows(app, "SELECT DISTINCT created_at FROM mentions") == [(1000.0,)]
    write_synced(app, "a.md", "---\ncreated: 2022-05-06\n---\n# One\n\nMelanie met Oskar.\n")
    consistent(app)
    page = entity_search.page(app.store, "Melanie")
    assert page["first_seen"].startswith("2022-05-06") and page["last_seen"].startswith("2022")
    assert page["relations"][0]["first"].startswith("2022-05-06")
