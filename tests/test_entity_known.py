"""Issue 20.1 in the store: a name one note defines (a title, front-matter aliases, a person's
full name) is the same entity where another note or a memory writes it another way: a wikilink
by the file name, an alias alone, the first name alone. Both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import write_synced

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def rows(app: Any, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    return app.store.read(lambda con: [tuple(r) for r in con.execute(sql, params).fetchall()])


def keys_in(app: Any, path: str) -> set[str]:
    """The entity keys the chunks of the note at `path` mention."""
    return {
        str(r[0])
        for r in rows(
            app,
            "SELECT DISTINCT n.key FROM mentions m JOIN entities n ON n.id = m.entity_id"
            " JOIN entries e ON e.id = m.entry_id JOIN documents d ON d.id = e.document_id"
            " WHERE d.path = ?",
            (path,),
        )
    }


@pytest.fixture
def app(make_app: Any) -> Any:
    a = make_app(model=None)
    Path(a.cfg.workspace).mkdir(parents=True, exist_ok=True)
    return a


def test_a_wikilink_by_file_name_an_alias_and_a_first_name_are_the_titled_person(app: Any) -> None:
    write_synced(
        app,
        "people/caroline-baker.md",
        "---\ntitle: Caroline Baker\ntype: person\naliases: [Caz]\n---\nShe runs billing.\n",
    )
    write_synced(
        app,
        "daily/2026-03-01.md",
        "# Standup\n\nTalked to [[caroline-baker]] about quotas.\nCaz wants a retry budget.\n"
        "Later Caroline signed it off.\n",
    )
    assert keys_in(app, "daily/2026-03-01.md") >= {"caroline baker"}
    assert not {"caroline-baker", "caz", "caroline"} & keys_in(app, "daily/2026-03-01.md")
    (row,) = rows(app, "SELECT name, type FROM entities WHERE key = 'caroline baker'")
    assert row == ("Caroline Baker", "person")
    m = app.memories.add(content="Caz prefers Signal.")
    assert {
        str(r[0])
        for r in rows(
            app,
            "SELECT n.key FROM mentions m JOIN entities n ON n.id = m.entity_id"
            " WHERE m.entry_id = ?",
            (m.id,),
        )
    } >= {"caroline baker"}


def test_a_first_name_two_people_share_stays_its_own(app: Any) -> None:
    write_synced(app, "people/a.md", "---\npeople: [Caroline Baker, Caroline Reyes]\n---\nHi.\n")
    write_synced(app, "notes/b.md", "# Notes\n\nWe asked Caroline twice.\n")
    assert "caroline" in keys_in(app, "notes/b.md")


def test_a_link_written_before_the_titled_note_is_indexed_names_it_once_the_note_is(
    app: Any,
) -> None:
    write_synced(app, "daily/2026-03-02.md", "# Standup\n\nPaired with [[tom-okafor]] on Kafka.\n")
    assert "tom-okafor" in keys_in(app, "daily/2026-03-02.md")
    m = app.memories.add(content="Tommy prefers pairing in the morning.")
    write_synced(
        app,
        "people/tom-okafor.md",
        "---\ntitle: Tom Okafor\ntype: person\naliases: [Tommy]\n---\nHi.\n",
    )
    assert ("tom okafor",) in rows(
        app,
        "SELECT n.key FROM mentions x JOIN entities n ON n.id = x.entity_id WHERE x.entry_id = ?",
        (m.id,),
    )
    assert "tom okafor" in keys_in(app, "daily/2026-03-02.md")
    assert "tom-okafor" not in keys_in(app, "daily/2026-03-02.md")
    assert rows(app, "SELECT key FROM entities WHERE key IN ('tom-okafor', 'tommy')") == []
    counts = dict(rows(app, "SELECT entity_id, count(*) FROM mentions GROUP BY entity_id"))
    assert dict(rows(app, "SELECT id, mentions FROM entities")) == counts
    pairs = rows(
        app,
        "SELECT x.entity_id, y.entity_id, count(DISTINCT x.entry_id) FROM mentions x"
        " JOIN mentions y ON y.entry_id = x.entry_id AND y.entity_id > x.entity_id"
        " GROUP BY x.entity_id, y.entity_id",
    )
    assert sorted(rows(app, "SELECT a, b, count FROM relations")) == sorted(pairs)
