"""Issue 20: co-mentions bounded per entry (store/entitypairs.py, PAIRED) on both backends: a list
pairs none of its names, an entry over the bound pairs its leading names only, the counts stay
what `recount` makes of the same mentions through edits, moves and deletes, and the migration
(SQLite m012, PostgreSQL v11) prunes what an older store wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import entities_caught_up, older_store, write_synced
from test_entity_store import consistent, entity, rows

from memoryd.store import entities as store_entities
from memoryd.store import entitypairs

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

BOUND = entitypairs.PAIRED * (entitypairs.PAIRED - 1) // 2


def hosts(n: int, prefix: str = "db") -> list[str]:
    return [f"{prefix}-{i:03d}.corp.example.net" for i in range(n)]


def relations(app: Any) -> dict[tuple[Any, Any], int]:
    return {
        (a, b): n
        for a, b, n in rows(
            app,
            "SELECT x.key, y.key, r.count FROM relations r JOIN entities x ON x.id = r.a"
            " JOIN entities y ON y.id = r.b",
        )
    }


def recounted(app: Any) -> None:
    """The store holds what `recount` makes of its mentions: the flags, the entities' counts
    and the relations, unchanged by counting them all again."""
    snapshot = "SELECT entity_id, entry_id, line, surface, paired FROM mentions ORDER BY 1, 2, 3, 4"
    before = (rows(app, snapshot), sorted(rows(app, "SELECT id, mentions FROM entities")))
    pairs = relations(app)
    with app.store.write() as con:
        store_entities.recount(con)
    assert (rows(app, snapshot), sorted(rows(app, "SELECT id, mentions FROM entities"))) == before
    assert relations(app) == pairs
    consistent(app)


@pytest.fixture
def app(make_app: Any) -> Any:
    a = make_app(model=None)
    Path(a.cfg.workspace).mkdir(parents=True, exist_ok=True)
    return a


def test_a_list_of_400_hosts_pairs_none_and_editing_it_away_leaves_none(app: Any) -> None:
    listed = hosts(400)
    app.memories.add(content="Fleet: " + ", ".join(listed) + ".")
    assert entity(app, listed[0]) is not None
    assert relations(app) == {}  # each written once: a list, not a relationship
    # a section of a note: a paragraph (one line the chunker splits) and a bulleted list
    write_synced(
        app,
        "inventory.md",
        "# Inventory\n\nMaya Chen and Oskar Berg own the fleet.\n\n## Hosts\n\n"
        + ", ".join(hosts(400, "web"))
        + ".\n\n## Caches\n\n"
        + "\n".join(f"- {h}" for h in hosts(400, "cache"))
        + "\n",
    )
    pairs = relations(app)
    chunks = rows(app, "SELECT count(*) FROM entries WHERE kind = 'chunk'")[0][0]
    assert pairs[("maya chen", "oskar berg")] == 1
    # only a chunk of at most PAIRED names pairs them (a list's tail: consistent() checks that)
    assert len(pairs) <= BOUND * chunks
    consistent(app)
    write_synced(app, "inventory.md", "# Inventory\n\nMaya Chen and Oskar Berg own the fleet.\n")
    assert relations(app) == {("maya chen", "oskar berg"): 1}
    assert entity(app, "web-000.corp.example.net") is None
    recounted(app)


def test_an_entry_over_the_bound_pairs_its_leading_names_only(app: Any) -> None:
    # 30 hosts once each; Maya Chen and Oskar written twice (two forms: two rows each)
    text = "Maya Chen and Oskar patched " + ", ".join(hosts(30)) + "; Maya Chen's and Oskar's."
    found = app.memories.add(content=text).id
    assert relations(app) == {("maya chen", "oskar"): 1}
    flags = rows(
        app,
        "SELECT e.key, max(m.paired) FROM mentions m JOIN entities e ON e.id = m.entity_id"
        " GROUP BY e.key",
    )
    assert {k for k, p in flags if p} == {"maya chen", "oskar"} and len(flags) == 32
    # 20 names: at the bound, every pair
    app.memories.update(found, {"content": "Maya Chen patched " + ", ".join(hosts(19))})
    assert len(relations(app)) == BOUND
    # 21: over it, each once: none
    app.memories.update(found, {"content": "Maya Chen patched " + ", ".join(hosts(20))})
    assert relations(app) == {}
    recounted(app)


def test_counts_stay_what_recount_makes_of_them_through_edits_moves_and_deletes(
    app: Any,
) -> None:
    crew = ["Maya Chen", "Oskar Berg", "Lena Fischer", "Priya Raman"]
    ids = []
    for i in range(6):
        names = ", ".join(crew[: i % 4 + 1])
        listed = ", ".join(hosts(10 + 5 * i, f"n{i}"))
        ids.append(app.memories.add(content=f"{names} met about {listed} and {crew[0]}'s plan").id)
    for i in range(3):
        write_synced(
            app,
            f"notes/n{i}.md",
            f"# Note {i}\n\n{crew[i]} and {crew[i + 1]} met.\n\n"
            + ", ".join(hosts(15 * (i + 1), f"x{i}"))
            + f"\n\n{crew[i]} again; {crew[i + 1]}'s too.\n",
        )
    recounted(app)
    app.memories.update(ids[0], {"content": "Maya Chen alone, with " + ", ".join(hosts(25, "n5"))})
    app.memories.delete(ids[1])
    app.memories.update(ids[5], {"content": "Lena Fischer and Priya Raman, no hosts"})
    write_synced(app, "notes/n0.md", "# Note 0\n\nOskar Berg and Lena Fischer.\n")
    (Path(app.cfg.workspace) / "notes/n1.md").rename(Path(app.cfg.workspace) / "n1-moved.md")
    (Path(app.cfg.workspace) / "notes/n2.md").unlink()
    app.indexer.reconcile()
    entities_caught_up(app)
    recounted(app)
    assert relations(app)  # some left, each exact


def _unbounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows as the schema before m012 / v11 wrote them: every pair of an entry (and no flag:
    conftest.migrations_before)."""
    monkeypatch.setattr(entitypairs, "leading", set)


def test_the_migration_prunes_the_pairs_an_older_store_wrote(
    make_app: Any, backend: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    store = older_store(monkeypatch, request, backend, "m012_paired", "_v11_paired")
    _unbounded(monkeypatch)
    old = make_app(model=None, **store)
    old.memories.add(content="Maya Chen and Oskar Berg")
    old.memories.add(content="Fleet of Maya Chen: " + ", ".join(hosts(120)))
    assert len(relations(old)) == 1 + 121 * 120 // 2  # every pair of the list
    old.close()
    monkeypatch.undo()
    new = make_app(model=None, **store)
    assert relations(new) == {("maya chen", "oskar berg"): 1}
    assert entity(new, "maya chen")[3] == 2
    consistent(new)
    new.memories.add(content="Maya Chen, Oskar Berg and Lena Fischer")
    recounted(new)


def test_a_line_cut_into_chunks_gives_each_chunk_the_names_it_holds(app: Any) -> None:
    # one paragraph written as one line, far longer than a chunk: the chunker cuts it between
    # words; each piece mentions the hosts it holds, not all 400 of the line
    listed = hosts(400, "web")
    write_synced(app, "fleet.md", "# Fleet\n\nMaya Chen: " + ", ".join(listed) + ".\n")
    held = rows(
        app,
        "SELECT e.id, e.content, en.key, m.surface FROM mentions m"
        " JOIN entries e ON e.id = m.entry_id JOIN entities en ON en.id = m.entity_id",
    )
    chunks = {r[0] for r in held}
    assert len(chunks) > 5  # the line is cut
    assert all(surface in content for _, content, _, surface in held)
    assert {key for _, _, key, _ in held} == {"maya chen", *listed}  # each name somewhere
    assert len(held) < 2 * 401  # each about once (a chunk's overlap repeats a few)
    consistent(app)


def test_related_pages_past_its_most_entities(app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """main stopped the walk at RELATED_MAX_NODES (`truncated`: a smaller top or depth was the
    only way to the rest); now a full page has a next_cursor, and the pages together are the
    whole walk: every entity once, every edge once, none left out."""
    from memoryd.search import entities as entity_search

    for i in range(4):  # a hub with 4 neighbours in a ring, each with 3 of its own
        app.memories.add(content=f"#hub with #n{i}")
        app.memories.add(content=f"#n{i} with " + " ".join(f"#n{i}x{k}" for k in range(3)))
        app.memories.add(content=f"#n{i}x1 and #n{i}x2 again")
        app.memories.add(content=f"#n{i} next to #n{(i + 1) % 4}")  # edges a full page cuts
    whole = entity_search.related(app.store, "#hub", depth=2, top=10)
    assert len(whole["nodes"]) == 17 and "has_more" not in whole

    def edges(page: dict[str, Any]) -> list[frozenset[str]]:
        return [frozenset((e["from"], e["to"])) for e in page["edges"]]

    monkeypatch.setattr(entity_search, "RELATED_MAX_NODES", 5)
    nodes: list[str] = []
    found: list[frozenset[str]] = []
    page = entity_search.related(app.store, "#hub", depth=2, top=10)
    while True:
        assert "truncated" not in page and len(page["nodes"]) <= 5
        kept = {n["name"] for n in page["nodes"]}
        assert all(e["from"] in kept or e["to"] in kept for e in page["edges"])
        nodes += [n["name"] for n in page["nodes"]]
        found += edges(page)
        if not page.get("next_cursor"):
            break
        assert page["has_more"] is True
        page = entity_search.related(app.store, "#hub", depth=2, top=10, cursor=page["next_cursor"])
    assert len(nodes) == len(set(nodes)) and set(nodes) == {n["name"] for n in whole["nodes"]}
    assert len(found) == len(set(found)) and set(found) == set(edges(whole))


def _lists(app: Any) -> None:
    """Memories and a note with lists over the bound, and entries under it."""
    app.memories.add(content="Maya Chen and Oskar Berg run " + ", ".join(hosts(30)))
    app.memories.add(content="Maya Chen, Maya Chen's pager and Oskar's: " + ", ".join(hosts(25)))
    app.memories.add(content="Maya Chen and Lena Fischer")
    write_synced(
        app,
        "fleet.md",
        "# Fleet\n\nMaya Chen and Oskar Berg.\n\n" + ", ".join(hosts(300, "web")) + ".\n",
    )


def test_export_import_and_a_full_reindex_pair_by_the_same_rule(make_app: Any) -> None:
    from memoryd.serve import methods as api

    def call(app: Any, method: str, **params: Any) -> Any:
        return api.lookup(method, params).fn(app, params)

    first = make_app(model=None)
    Path(first.cfg.workspace).mkdir(parents=True, exist_ok=True)
    _lists(first)
    items = call(first, "export")["items"]
    call(first, "reindex", full=True)  # memories' mentions read again at once, notes at reconcile
    recounted(first)
    second = make_app(model=None)
    call(second, "import", items=items)
    assert ("maya chen", "oskar berg") in relations(second)
    recounted(second)


@pytest.mark.sqlite_only("checkpoints copy the SQLite file")
def test_an_older_checkpoint_restored_is_migrated_and_pruned(
    make_app: Any, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    from memoryd.serve import methods as api

    store = older_store(monkeypatch, request, "sqlite", "m012_paired", "_v11_paired")
    _unbounded(monkeypatch)
    old = make_app(model=None, **store)
    Path(old.cfg.workspace).mkdir(parents=True, exist_ok=True)
    _lists(old)
    assert len(relations(old)) > 1000
    params = {"name": "before"}
    api.lookup("checkpoint.create", params).fn(old, params)  # in the schema before m012
    old.close()
    monkeypatch.undo()
    app = make_app(model=None, **store)  # the live store migrated: pruned
    pruned = relations(app)
    assert len(pruned) < 1000
    app.memories.add(content="Priya Raman and Oskar Berg")
    restored = api.lookup("checkpoint.restore", params).fn(app, params)
    assert restored["migrated"] is True
    assert relations(app) == pruned
    recounted(app)


@pytest.mark.sqlite_only("copies a SQLite store to PostgreSQL")
def test_the_copy_to_postgres_pairs_by_the_same_rule(make_app: Any, pg_dsn: str) -> None:
    from memoryd.store import pgmigrate

    lite = make_app(model=None)
    Path(lite.cfg.workspace).mkdir(parents=True, exist_ok=True)
    _lists(lite)
    before = relations(lite)
    cfg = lite.cfg
    lite.close()
    pgmigrate.migrate(cfg, dsn=pg_dsn)
    pg = make_app(model=None, store={"backend": "postgres", "dsn": pg_dsn})
    assert relations(pg) == before
    recounted(pg)
