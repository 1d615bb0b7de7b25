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


def test_a_first_name_written_before_the_full_name_was_indexed_is_the_person(app: Any) -> None:
    """The answer does not depend on the order notes are indexed in: "Caroline" in a daily note
    and a memory read before her own note is Caroline Baker once that note is indexed, as it
    is when her note comes first."""
    write_synced(app, "daily/2026-03-01.md", "# Standup\n\nLunch with Caroline about quotas.\n")
    m = app.memories.add(content="Caroline prefers Signal.")
    assert "caroline" in keys_in(app, "daily/2026-03-01.md")
    write_synced(
        app, "people/caroline-baker.md", "# Caroline Baker\n\nCaroline's team owns billing.\n"
    )
    assert "caroline baker" in keys_in(app, "daily/2026-03-01.md")
    assert rows(app, "SELECT key FROM entities WHERE key = 'caroline'") == []
    assert ("caroline baker",) in rows(
        app,
        "SELECT n.key FROM mentions x JOIN entities n ON n.id = x.entity_id WHERE x.entry_id = ?",
        (m.id,),
    )
    write_synced(app, "daily/2026-03-02.md", "# Standup\n\nCaroline again.\n")
    assert "caroline baker" in keys_in(app, "daily/2026-03-02.md")
    assert "caroline" not in keys_in(app, "daily/2026-03-02.md")
    counts = dict(rows(app, "SELECT entity_id, count(*) FROM mentions GROUP BY entity_id"))
    assert dict(rows(app, "SELECT id, mentions FROM entities")) == counts


@pytest.mark.parametrize("full_first", [False, True])
def test_a_first_name_read_as_a_system_is_the_person_too(app: Any, full_first: bool) -> None:
    """ "José's plan" reads like a system's plan to the extractor; José is a first name and José
    García the only person of that name, so it is him, whichever note was indexed first."""
    person = ("people/jose.md", "# José García\n\nJosé García runs the platform team.\n")
    if full_first:
        write_synced(app, *person)
    write_synced(app, "daily/d.md", "# Standup\n\nMet with Ana. José's plan: staging first.\n")
    if not full_first:
        write_synced(app, *person)
    assert "jose garcia" in keys_in(app, "daily/d.md")
    assert rows(app, "SELECT key FROM entities WHERE key = 'jose'") == []
    assert rows(app, "SELECT type FROM entities WHERE key = 'jose garcia'") == [("person",)]


@pytest.mark.parametrize("link_first", [False, True])
def test_a_first_name_is_the_untyped_full_name_a_link_gives(app: Any, link_first: bool) -> None:
    """`[[Caroline Baker]]` (a note with no heading, so no sentence types her) and "Met Caroline
    today" in a daily note are one person, whichever was indexed first; "George Street" (a
    street) does not take "George"."""
    link = ("notes.md", "# Notes\n\n- [[Caroline Baker]] owns the invoice job\n")
    daily = ("daily/d.md", "# Standup\n\nMet Caroline today.\n")
    for path, text in (link, daily) if link_first else (daily, link):
        write_synced(app, path, text)
    assert "caroline baker" in keys_in(app, "daily/d.md")
    assert rows(app, "SELECT type FROM entities WHERE key = 'caroline baker'") == [("person",)]
    assert rows(app, "SELECT key FROM entities WHERE key = 'caroline'") == []
    write_synced(app, "walk.md", "# Walk\n\nWe walked down [[George Street]].\n")
    write_synced(app, "call.md", "# Call\n\nGeorge said hi.\n")
    assert "george" in keys_in(app, "call.md")


def test_a_first_name_that_is_a_place_is_not_adopted(app: Any) -> None:
    write_synced(app, "trips/a.md", "# Trip\n\nWe moved to Paris in May. Paris was warm.\n")
    write_synced(app, "people/p.md", "# Paris Hilton\n\nParis Hilton said hello.\n")
    assert "paris" in keys_in(app, "trips/a.md")


def test_a_first_name_in_a_list_field_is_the_person_too(app: Any) -> None:
    """`participants: [Maya]` names the one Maya Okafor as the text's "Maya:" does, whether her
    full name was indexed before this note or after it (two chats write it in full: a claim)."""
    write_synced(app, "chats/a.md", "---\nparticipants: [Maya, Tom]\n---\n# Chat\n\nMaya: hi\n")
    write_synced(app, "chats/b.md", "# Chat\n\nRavi: Maya Okafor? She asked about rescues.\n")
    write_synced(app, "chats/c.md", "---\nparticipants: [Maya, Ada]\n---\n# Chat\n\nMaya: hey\n")
    assert "maya" in keys_in(app, "chats/c.md")  # one chat wrote her full name: no claim yet
    write_synced(app, "chats/d.md", "# Chat\n\nLena: Maya Okafor again, about the flat.\n")
    for path in ("chats/a.md", "chats/c.md"):
        assert "maya okafor" in keys_in(app, path)
        assert "maya" not in keys_in(app, path)
    assert rows(app, "SELECT key FROM entities WHERE key = 'maya'") == []


QUOTE = (
    "about.md",
    "# About\n\nAs John Locke puts it, ideas come from experience. John wrote it in 1690.\n",
)
CHATS = [
    (f"chats/{i}.md", f"# Session {i}\n\nJohn: I went hiking today.\nJohn's dog came along.\n")
    for i in range(3)
]


@pytest.mark.parametrize("quote_first", [True, False])
def test_one_quoted_full_name_does_not_take_a_first_name_other_notes_write(
    app: Any, quote_first: bool
) -> None:
    """One note quoting "John Locke" (and calling him John there) does not make the John of
    other notes the philosopher, whichever was indexed first; within the quoting note he is."""
    for path, text in [QUOTE, *CHATS] if quote_first else [*CHATS, QUOTE]:
        write_synced(app, path, text)
    for path, _ in CHATS:
        assert "john" in keys_in(app, path)
        assert "john locke" not in keys_in(app, path)
    assert "john locke" in keys_in(app, "about.md")
    assert rows(app, "SELECT type FROM entities WHERE key = 'john'") == [("person",)]
    m = app.memories.add(content="John prefers the morning trail.")
    assert rows(
        app,
        "SELECT n.key FROM mentions x JOIN entities n ON n.id = x.entity_id WHERE x.entry_id = ?",
        (m.id,),
    ) == [("john",)]


@pytest.mark.parametrize("how", ["title", "link", "people", "second note"])
def test_a_declared_or_twice_written_full_name_claims_the_first_name(app: Any, how: str) -> None:
    """The first name alone is the full name once a note declares it (its title, a wikilink, a
    `people:` field) or a second note writes it in full; the first names written before are
    adopted, and those written after resolve to it."""
    chats = [(path, text.replace("John", "Lena")) for path, text in CHATS]
    write_synced(app, "about.md", "# About\n\nAs Lena Fischer puts it, plans are useless.\n")
    write_synced(app, *chats[0])
    assert "lena" in keys_in(app, chats[0][0])
    claim = {
        "title": ("people/lf.md", "# Lena Fischer\n\nLena Fischer runs billing.\n"),
        "link": ("reading.md", "# Reading\n\n- [[Lena Fischer]] on plans\n"),
        "people": ("sync.md", "---\npeople: [Lena Fischer]\n---\n# Sync\n\nHi.\n"),
        "second note": ("essay.md", "# Essay\n\nLena Fischer argued for small teams.\n"),
    }[how]
    write_synced(app, *claim)
    write_synced(app, *chats[1])
    for path, _ in chats[:2]:
        assert "lena fischer" in keys_in(app, path)
        assert "lena" not in keys_in(app, path)
    assert rows(app, "SELECT key FROM entities WHERE key = 'lena'") == []
    counts = dict(rows(app, "SELECT entity_id, count(*) FROM mentions GROUP BY entity_id"))
    assert dict(rows(app, "SELECT id, mentions FROM entities")) == counts


def test_a_declared_full_name_claims_beside_one_only_quoted(app: Any) -> None:
    """Of two people named John, the one a note declares claims "John" alone; the one a single
    note quotes claims nothing."""
    write_synced(app, *QUOTE)
    write_synced(app, "people/js.md", "---\ntitle: John Smith\ntype: person\n---\nOur CTO.\n")
    write_synced(app, *CHATS[0])
    assert "john smith" in keys_in(app, CHATS[0][0])
    assert "john locke" in keys_in(app, "about.md")


def test_a_wikilink_by_file_name_in_a_list_field_is_the_titled_person(app: Any) -> None:
    write_synced(app, "people/caroline-baker.md", "---\naliases: [Caz]\n---\n# Caroline Baker\n")
    write_synced(app, "sync.md", '---\npeople: ["[[caroline-baker]]", Caz]\n---\n# Sync\n\nHi.\n')
    assert "caroline baker" in keys_in(app, "sync.md")
    assert not {"caroline-baker", "caz"} & keys_in(app, "sync.md")


@pytest.mark.parametrize("note_first", [True, False], ids=["note-first", "note-after"])
def test_an_identifier_is_its_notes_entity_whichever_was_indexed_first(
    app: Any, note_first: bool
) -> None:
    """`billing-svc`, written as code in a memory and as a link by file name in another note,
    is the entity of the note `billing-svc.md` (titled "Billing service") whether that note was
    indexed before them or after: the identifier was resolved only when it came first (adopt),
    so a memory added on the machine where the notes were indexed, and the same memory imported
    on a second machine before its notes, gave two different entity pages."""

    def note() -> None:
        write_synced(
            app,
            "projects/billing-svc.md",
            "---\naliases: [Billing Service]\n---\n# Billing service\n\nIt bills.\n",
        )

    if note_first:
        note()
    m = app.memories.add(content="Caroline moved billing-svc to PostgreSQL 17.")
    write_synced(app, "daily/2026-03-04.md", "# Standup\n\nDeployed [[billing-svc]] twice.\n")
    if not note_first:
        note()
    memory_keys = {
        str(r[0])
        for r in rows(
            app,
            "SELECT n.key FROM mentions x JOIN entities n ON n.id = x.entity_id"
            " WHERE x.entry_id = ?",
            (m.id,),
        )
    }
    assert "billing service" in memory_keys and "billing-svc" not in memory_keys
    assert "billing service" in keys_in(app, "daily/2026-03-04.md")
    assert rows(app, "SELECT key FROM entities WHERE key = 'billing-svc'") == []
    assert rows(app, "SELECT name FROM entities WHERE key = 'billing service'") == [
        ("Billing service",)
    ]
    counts = dict(rows(app, "SELECT entity_id, count(*) FROM mentions GROUP BY entity_id"))
    assert dict(rows(app, "SELECT id, mentions FROM entities")) == counts


@pytest.mark.parametrize("note_first", [True, False], ids=["note-first", "note-after"])
def test_a_quoted_term_is_the_entity_a_note_names_by_it_whichever_came_first(
    app: Any, note_first: bool
) -> None:
    """The same class as the identifier: 「東京プロジェクト」, quoted in a memory, is the project
    whose note gives it as an alias, indexed before the memory or after it."""

    def note() -> None:
        write_synced(
            app,
            "projects/tokyo.md",
            "---\ntitle: Tokyo project\ntype: project\naliases: [東京プロジェクト]\n---\n"
            "# Tokyo project\n\nIt ships.\n",
        )

    if note_first:
        note()
    m = app.memories.add(content="田中さんは「東京プロジェクト」を担当しています。")
    if not note_first:
        note()
    keys = rows(
        app,
        "SELECT n.key FROM mentions x JOIN entities n ON n.id = x.entity_id WHERE x.entry_id = ?",
        (m.id,),
    )
    assert ("tokyo project",) in keys and ("東京プロジェクト",) not in keys
