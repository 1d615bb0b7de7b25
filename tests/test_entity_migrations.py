"""Issue 20.6: the migration that dates every mention (SQLite m007, PostgreSQL schema v3) on a
store written by the schema before it, on both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import migrations_before
from test_entity_store import consistent, rows

from memoryd.search import entities as entity_search
from memoryd.store import entities as store_entities


def _undated_store(con: Any, entries: Any, ids: dict[str, int], columns: int = 2) -> int:
    """store/entities._store as the schema before the dates wrote its rows."""
    done = set()
    for entry_id, _, mentions in entries:
        mentions = list(mentions)
        for m in mentions:
            if m.key not in ids:
                ids[m.key] = store_entities._entity(con, m)
            if (ids[m.key], entry_id, m.line, m.surface) in done:
                continue
            done.add((ids[m.key], entry_id, m.line, m.surface))
            con.execute(
                "INSERT INTO mentions(entity_id, entry_id, line, surface, surface_key)"
                " VALUES (?, ?, ?, ?, ?)",
                (ids[m.key], entry_id, m.line, m.surface, m.key),
            )
            con.execute(store_entities._COUNT, (1, ids[m.key]))
        found = sorted({ids[m.key] for m in mentions})
        for i, a in enumerate(found):
            for b in found[i + 1 :]:
                con.execute(store_entities._PAIR, (a, b, 1))
    return len(done)


# by the entity's key: a later migration (m013, v12) reads the memories' mentions again
_MENTIONS = (
    "SELECT n.key, m.entry_id, m.line, m.surface FROM mentions m"
    " JOIN entities n ON n.id = m.entity_id ORDER BY 1, 2, 3, 4"
)


def _old_store(make_app: Any, monkeypatch: pytest.MonkeyPatch, **store: Any) -> list[Any]:
    monkeypatch.setattr(store_entities, "_store", _undated_store)
    app = make_app(model=None, **store)
    Path(app.cfg.workspace).mkdir(parents=True, exist_ok=True)
    (Path(app.cfg.workspace) / "a.md").write_text("# Trip\n\nMelanie flew to Lisbon.\n")
    app.indexer.reconcile()
    app.memories.add(content="Oskar runs billing-svc with Melanie")
    before = rows(app, _MENTIONS)
    assert before
    app.close()
    monkeypatch.undo()
    return before


def _dated(app: Any, before: list[Any]) -> None:
    after = rows(app, _MENTIONS)
    assert after == before
    page = entity_search.page(app.store, "Melanie")
    assert page["first_seen"] and page["relations"] and page["relations"][0]["first"]
    app.memories.add(content="Oskar again, in Lisbon")
    consistent(app)


def test_m007_dates_the_mentions_of_an_existing_sqlite_store(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.store import migrations

    migrations_before(monkeypatch, migrations, migrations.m007_entity_dates)
    before = _old_store(make_app, monkeypatch)
    app = make_app(model=None)
    indexes = {r[0] for r in rows(app, "SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"relations_a_count", "relations_b_count", "mentions_entry"} <= indexes
    _dated(app, before)


def test_v3_dates_the_mentions_of_an_existing_postgres_store(
    make_app: Any, monkeypatch: pytest.MonkeyPatch, pg_dsn: str
) -> None:
    from memoryd.store.pg import schema

    migrations_before(monkeypatch, schema, schema._v3_entity_dates)
    store = {"store": {"backend": "postgres", "dsn": pg_dsn}}
    before = _old_store(make_app, monkeypatch, **store)
    app = make_app(model=None, **store)
    version = str(len(schema.MIGRATIONS))  # v3 and every one after it
    assert rows(app, "SELECT value FROM meta WHERE key = 'schema_version'") == [(version,)]
    indexes = {r[0] for r in rows(app, "SELECT indexname FROM pg_indexes")}
    assert {"relations_a_count", "relations_b_count", "mentions_entity"} <= indexes
    _dated(app, before)
