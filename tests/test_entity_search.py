"""Issue 20, points 3 and 4 on both backends: the `entities` search filter (inside the pools: a
narrow filter at limit 100 fills up), `kind: "entity"`, the entity page, the listing and the
graph walk, through the method table."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from conftest import entities_caught_up, with_notes

from memoryd.core.errors import InvalidInput, NotFound
from memoryd.serve import methods as api

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def indexed(make_app: Any, notes: dict[str, str]) -> Any:
    """An App (no model) whose workspace holds `notes` (path -> text), reconciled."""
    return with_notes(make_app(model=None), notes)


def shares(app: Any, query: str) -> dict[int, float]:
    """The entity signal's share of every entry for `query` (search/entityboost.py)."""
    from memoryd.search import entityboost
    from memoryd.search.ranking import Candidate

    def read(con: Any) -> dict[int, float]:
        ids = [int(r[0]) for r in con.execute("SELECT id FROM entries").fetchall()]
        return entityboost.shares(con, query, [Candidate(id=i) for i in ids])

    return dict(app.store.read(read))


@pytest.fixture
def app(make_app: Any) -> Any:
    a = make_app(model=None)
    ws = Path(a.cfg.workspace)
    (ws / "log").mkdir(parents=True)
    for i in range(300):
        who = " Oskar Lindqvist reviewed it." if i % 10 == 3 else ""
        (ws / "log" / f"deploy-{i:03}.md").write_text(
            f"# Deploy {i}\n\nDeploy number {i} of the payments service went out.{who}\n"
        )
    (ws / "people.md").write_text(
        "---\naliases: [Caro]\n---\n# Caroline Baker\n\n"
        "Caroline Baker runs the payments service with Oskar Lindqvist in Lisbon.\n\n"
        "## 2025\n\nCaroline's team moved billing-svc to Kubernetes.\n"
    )
    (ws / "trip.md").write_text(
        "# Trip\n\nOskar Lindqvist met [[people|Caro]] in Lisbon. Melanie joined them.\n"
    )
    assert a.indexer.reconcile().errors == []
    entities_caught_up(a)
    a.memories.add(content="Oskar Lindqvist prefers deploys on Tuesday")
    return a


def test_entity_filter_fills_a_narrow_set_at_limit_100(app: Any) -> None:
    wide = call(app, "search", query="deploy payments", limit=100, mode="keyword")["hits"]
    assert len(wide) == 100
    narrow = call(
        app,
        "search",
        query="deploy payments",
        limit=100,
        mode="keyword",
        entities=["Oskar Lindqvist"],
    )["hits"]
    paths = {h.get("path") for h in narrow}
    expected = {f"log/deploy-{i:03}.md" for i in range(300) if i % 10 == 3}
    assert expected <= paths  # all 30 notes, the people note and the memory
    assert paths - expected <= {"people.md", None}
    # every name must be mentioned (in one chunk); an alias means its entity
    both = call(app, "search", query="Lisbon", entities=["Oskar Lindqvist", "Caro"])
    assert {h["path"] for h in both["hits"]} == {"people.md", "trip.md"}
    # [[people|Caro]] links the note titled Caroline Baker: she is who trip.md names
    with_melanie = call(app, "search", query="Lisbon", entities=["Melanie", "Caroline Baker"])
    assert {h["path"] for h in with_melanie["hits"]} == {"trip.md"}
    assert call(app, "search", query="Lisbon", entities=["Melanie", "Kubernetes"])["hits"] == []
    unknown = call(app, "search", query="payments", entities=["Nobody Known", "Melanie"])
    assert not unknown["hits"]
    assert unknown["unknown_entities"] == ["Nobody Known"]  # why: no such entity
    assert "unknown_entities" not in with_melanie
    listed = call(app, "list", kind="all", entities=["Lisbon"], limit=50)
    assert {i.get("path") for i in listed["items"]} == {"people.md", "trip.md"}


def test_kind_entity_ranks_by_match_then_mentions(app: Any) -> None:
    hits = call(app, "search", query="Oskar", kind="entity")["hits"]
    assert hits[0]["name"] == "Oskar Lindqvist" and hits[0]["kind"] == "entity"
    assert hits[0]["mentions"] >= 33
    exact = call(app, "search", query="lisbon", kind="entity")["hits"]
    assert exact[0]["name"] == "Lisbon" and exact[0]["score"] == 1.0
    typed = call(app, "search", query="Oskar", kind="entity", type="place")["hits"]
    assert typed == [] or all(h["type"] == "place" for h in typed)


def test_entity_page_listing_and_related(app: Any) -> None:
    page = call(app, "entity", name="Caro")
    assert page["name"] == "Caroline Baker"
    assert page["first_seen"] and page["last_seen"]
    assert {s["kind"] for s in page["sources"]} == {"note"}
    top = page["sources"][0]
    assert top["path"] == "people.md" and top["mentions"] >= 2
    assert "Caroline" in top["text"] or "Caro" in top["text"]
    names = {r["name"] for r in page["relations"]}
    assert "Oskar Lindqvist" in names and "Lisbon" in names
    rel = next(r for r in page["relations"] if r["name"] == "Oskar Lindqvist")
    assert rel["together"] >= 1 and rel["first"] and rel["last"]

    oskar = call(app, "entity", name="oskar lindqvist", max_tokens=300)
    assert oskar["has_more"] and oskar["total_sources"] >= 33
    assert oskar["tokens_used"] <= 300
    kinds = {
        s["kind"] for s in call(app, "entity", name="Oskar Lindqvist", max_tokens=20000)["sources"]
    }
    assert kinds == {"note", "memory"}

    listing = call(app, "entities", top=3)["entities"]
    assert listing[0]["name"] == "Oskar Lindqvist"
    assert len(listing) == 3
    places = call(app, "entities", type="place")["entities"]
    assert places and all(e["type"] == "place" for e in places)
    assert call(app, "entities", since="2999-01-01")["entities"] == []

    one = call(app, "related", name="Melanie")
    assert {n["name"] for n in one["nodes"] if n["depth"] == 1} >= {"Oskar Lindqvist", "Lisbon"}
    two = call(app, "related", name="Melanie", depth=2, top=50)
    deep = {n["name"] for n in two["nodes"] if n["depth"] == 2}
    assert "Kubernetes" in deep  # through Caroline Baker
    assert all(e["together"] >= 1 for e in two["edges"])

    with pytest.raises(NotFound):
        call(app, "entity", name="Nobody Known")
    with pytest.raises(InvalidInput):
        call(app, "related", name="Melanie", depth=9)
    with pytest.raises(InvalidInput):
        call(app, "entities", type="planet")


def test_a_wide_entity_filter_passes_the_same_entries(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name mentioned more than NARROW_MENTIONS times is checked entry by entry (the vector
    pool's nearest texts) instead of as a set: the same entries pass, the same hits come."""
    from memoryd.store import entityfilter, entityread
    from memoryd.store.entries import Filters, filter_sql

    def passing(names: tuple[str, ...], wide: bool) -> list[int]:
        def read(con: Any) -> list[int]:
            groups, n = entityread.resolve_filter(con, names)
            f = Filters(entities=names, entity_ids=groups, entity_mentions=n)
            where, params = filter_sql(f, 0.0, wide=wide)
            return sorted(
                int(r[0])
                for r in con.execute(
                    "SELECT e.id FROM entries e LEFT JOIN documents d ON d.id = e.document_id"
                    f" WHERE {where}",
                    params,
                ).fetchall()
            )

        return app.store.read(read)

    narrow = call(app, "search", query="deploy payments", limit=100, entities=["Oskar Lindqvist"])
    monkeypatch.setattr(entityfilter, "NARROW_MENTIONS", 1)
    for names in (("Oskar Lindqvist",), ("Oskar Lindqvist", "Caro"), ("Nobody Known",)):
        assert passing(names, wide=True) == passing(names, wide=False)
    assert len(passing(("Oskar Lindqvist",), wide=True)) >= 32
    wide = call(app, "search", query="deploy payments", limit=100, entities=["Oskar Lindqvist"])
    assert [h["id"] for h in wide["hits"]] == [h["id"] for h in narrow["hits"]]


def test_the_page_of_a_common_name_reads_its_newest_mentions(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.search import entities as entity_search

    full = call(app, "entity", name="Oskar Lindqvist", max_tokens=100_000)
    monkeypatch.setattr(entity_search, "WINDOW", 5)
    cut = call(app, "entity", name="Oskar Lindqvist", max_tokens=100_000)
    assert full["total_sources"] >= 33 and not full["has_more"]
    assert cut["total_sources"] <= 5 and cut["has_more"]
    assert cut["mentions"] == full["mentions"]  # the stored count
    # first and last seen and the relations still cover every mention
    assert (cut["first_seen"], cut["last_seen"]) == (full["first_seen"], full["last_seen"])
    assert cut["relations"] == full["relations"]


@pytest.mark.parametrize("weight", [0.0, 2.0])
def test_a_query_naming_an_entity_lifts_the_passages_that_mention_it(
    make_app: Any, weight: float
) -> None:
    """Issue 20.3: with `search.entity_weight` high enough, a hybrid answer to a query that
    names Maya ranks the note that mentions her (as Maya's) above one that only shares more of
    the other words; off (0), the other words decide."""
    a = make_app(search={"entity_weight": weight})
    ws = Path(a.cfg.workspace)
    (ws / "maya.md").write_text("# Saturday\n\nMaya's party is at the Crown on Saturday.\n")
    (ws / "venue.md").write_text(
        "# Venues\n\nThe party venue list: the party venue by the river, the Crown party venue.\n"
    )
    assert a.indexer.reconcile().errors == []
    entities_caught_up(a)
    a.model.start()
    a.model.wait_ready(30)
    a.embedder.run()
    res = call(
        a, "search", query="where is the party venue Maya chose", mode="hybrid", explain=True
    )
    paths = [h["path"] for h in res["hits"]]
    assert res["mode"] == "hybrid" and set(paths) == {"maya.md", "venue.md"}
    assert paths[0] == ("maya.md" if weight else "venue.md")
    if weight:
        assert res["hits"][0]["explain"].get("entity") == pytest.approx(1.0)


def test_a_name_the_extractor_finds_in_only_some_of_its_texts_lifts_nothing(
    make_app: Any,
) -> None:
    """The entity signal counts only names the extractor finds in most texts that hold them:
    "Go" opens a sentence in one note (a common word there, not a mention) and is named in two
    others, so lifting those two would sink the first, which is as much about Go."""
    a = make_app(model=None)
    ws = Path(a.cfg.workspace)
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "origins.md").write_text("# Origins\n\nGo is mostly in the C family.\n")
    (ws / "tool.md").write_text("# Tool\n\nWe wrote the tool in Go last year.\n")
    (ws / "chain.md").write_text("# Chain\n\nThe Go toolchain builds it; Maya set it up.\n")
    (ws / "maya.md").write_text("# Maya\n\nMaya reviews the builds.\n")
    assert a.indexer.reconcile().errors == []
    entities_caught_up(a)

    assert shares(a, "What are Go's ancestors?") == {}
    assert len(shares(a, "what does Maya review?")) == 2


def test_a_name_is_judged_by_the_form_the_query_writes_it_in(make_app: Any) -> None:
    """ "Maya" asked of Maya Okafor counts the texts that hold "maya" (three write the 3D tool
    in lowercase, which is no mention), not the one text that holds "Maya Okafor": lifting her
    two mentions would sink the rest. Her full name asked is found where it is written."""
    a = make_app(model=None)
    ws = Path(a.cfg.workspace)
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "people.md").write_text("# Maya Okafor\n\nMaya Okafor runs the render farm.\n")
    (ws / "review.md").write_text("# Review\n\nMaya reviews the renders.\n")
    for i in range(3):
        (ws / f"tool{i}.md").write_text(f"# Tool {i}\n\nscene {i} was modelled in maya.\n")
    assert a.indexer.reconcile().errors == []
    entities_caught_up(a)

    assert shares(a, "what does Maya render?") == {}
    assert len(shares(a, "what does Maya Okafor render?")) == 2


@pytest.mark.sqlite_only("an SQL function on an SQLite connection; PostgreSQL ranks its own way")
def test_a_wide_filter_checked_by_its_set_in_memory_passes_what_the_sql_set_does(
    app: Any,
) -> None:
    """store/entityrowids.py: the keyword prefilter's set held in memory (an SQL function per
    connection) passes the FTS5 rows the SQL set does, for one name, two, another name on the
    same connection, after a write, and while a statement of the connection runs (the SQL
    then)."""
    from memoryd.store import entityfilter, entityread
    from memoryd.store.entityrowids import rowid_check

    def rows(con: Any, names: tuple[str, ...], check: bool) -> list[int]:
        groups, _ = entityread.resolve_filter(con, names)
        cond, params = rowid_check(groups, con) if check else entityfilter.rowid_sql(groups)
        return [
            int(r[0])
            for r in con.execute(
                f"SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? AND {cond}"
                " ORDER BY rowid",
                ["deploy OR lisbon OR tuesday OR billing", *params],
            ).fetchall()
        ]

    sets = (("Oskar Lindqvist",), ("Caro",), ("Oskar Lindqvist", "Caro"), ("Nobody Known",))

    def same(con: Any) -> None:
        for names in (*sets, *sets):
            assert rows(con, names, True) == rows(con, names, False), names
        assert len(rows(con, sets[0], True)) >= 31
        running = con.execute("SELECT id FROM entries")  # a statement left running
        running.fetchone()
        groups, _ = entityread.resolve_filter(con, sets[1])
        assert rowid_check(groups, con) == entityfilter.rowid_sql(groups)  # SQLite: BUSY
        assert rows(con, sets[1], True) == rows(con, sets[1], False)
        running.close()
        assert rowid_check(groups, con)[0].startswith("memoryd_mentioning(")
        assert rows(con, sets[0], True) == rows(con, sets[0], False)

    app.store.read(same)
    app.memories.add(content="Oskar Lindqvist moved the Tuesday deploy")
    app.store.read(same)


def test_a_source_line_is_the_line_its_text_is_from(make_app: Any) -> None:
    """A page's source gives the line its text stands on: a name in a front-matter list and in
    the text further down shows the text's line; a memory named by its tag alone shows the
    memory's own first line, not the bare tag."""
    sync = (
        "---\npeople: [Oskar Lindqvist]\n---\n# Sync\n\nIntro.\n\nLater Oskar Lindqvist called.\n"
    )
    a = indexed(make_app, {"sync.md": sync})
    a.memories.add(content="Deploys go out on Fridays.\nNever on Mondays.", tags=["payments"])
    (src,) = call(a, "entity", name="Oskar Lindqvist")["sources"]
    assert (src["line"], src["text"]) == (8, "Later Oskar Lindqvist called.")
    (mem,) = call(a, "entity", name="#payments")["sources"]
    assert (mem["line"], mem["text"]) == (1, "Deploys go out on Fridays.")


def test_a_source_line_in_a_note_with_aliases_is_the_files_line(make_app: Any) -> None:
    """A note's first chunk carries its front-matter aliases above its text (so the note is found
    by them): the lines of the file still count from the file, and a line of text is shown
    before the note's heading or its aliases."""
    a = indexed(
        make_app,
        {
            "ana.md": "---\naliases: [Nina]\ntags: [person]\n---\n# Ana Lima\n\n"
            "Ana Lima runs the platform team.\nNina said the webhook retries must be idempotent.\n",
            "billing.md": "---\ntitle: Billing\naliases: [billing-svc]\n---\n# Billing\n\n"
            "Intro.\n\nLater Ana Lima fixed the webhook.\n",
        },
    )
    by_path = {s["path"]: s for s in call(a, "entity", name="Ana Lima")["sources"]}
    assert (by_path["ana.md"]["line"], by_path["ana.md"]["text"]) == (
        7,
        "Ana Lima runs the platform team.",
    )
    assert (by_path["billing.md"]["line"], by_path["billing.md"]["text"]) == (
        9,
        "Later Ana Lima fixed the webhook.",
    )


def test_a_name_said_alone_means_its_one_entity_at_every_door(make_app: Any) -> None:
    """A person's first name no note writes alone, a tag without its "#": the page, the graph
    and the search filter resolve it to the one entity it can mean, as the indexer resolves
    "Caroline" written alone; a name that could mean several, or none, names the nearest."""
    standup = (
        "# Standup\n\nMet José García about the refund flow. #payments\n\n"
        "## Later\n\nAna Lima and Ana Souza reviewed the refund flow.\n"
    )
    a = indexed(make_app, {"standup.md": standup})
    for name in ("JOSÉ", "jose", "José's"):
        assert call(a, "entity", name=name)["name"] == "José García"
        assert call(a, "related", name=name)["nodes"][0]["name"] == "José García"
        hits = call(a, "search", query="refund", mode="keyword", entities=[name])["hits"]
        assert [h["path"] for h in hits] == ["standup.md"]
    assert call(a, "entity", name="payments")["name"] == "#payments"
    with pytest.raises(NotFound) as two:  # two Anas: neither is guessed
        call(a, "entity", name="Ana")
    assert {s["name"] for s in two.value.data["suggestions"]} == {"Ana Lima", "Ana Souza"}
    assert "did you mean" in two.value.message
    hits = call(a, "search", query="refund", mode="keyword", entities=["Ana"])
    assert hits["hits"] == [] and hits["unknown_entities"] == ["Ana"]
    with pytest.raises(NotFound) as part:  # a part of a name is suggested, never taken
        call(a, "entity", name="Garc")
    assert [s["name"] for s in part.value.data["suggestions"]] == ["José García"]
    with pytest.raises(NotFound) as none:
        call(a, "entity", name="Nobody Known")
    assert none.value.data == {"suggestions": []}


def test_a_note_written_decomposed_has_its_people_whole_on_their_page(make_app: Any) -> None:
    import unicodedata

    text = "# Trip\n\nWe met Zoë Dünner and José García in Zürich.\n"
    a = indexed(make_app, {"trip.md": unicodedata.normalize("NFD", text)})
    page = call(a, "entity", name="Zoë Dünner")
    assert page["name"] == "Zoë Dünner" and page["type"] == "person"
    (source,) = page["sources"]
    assert source["line"] == 3
    assert unicodedata.normalize("NFC", source["text"]) == text.split("\n")[2]
    assert call(a, "entity", name="jose garcia")["name"] == "José García"


def test_tags_written_decomposed_are_the_tags_typed_composed(make_app: Any) -> None:
    """A tag is one tag however its accents are encoded: a note's inline and front-matter tags
    and a memory's tags written NFD are found by a filter typed NFC, and the reverse."""
    import unicodedata

    nfd = functools.partial(unicodedata.normalize, "NFD")
    a = indexed(make_app, {"cafe.md": nfd("---\ntags: [Zürich]\n---\n# Café\n\nThe #café list.\n")})
    a.memories.add(content="a fondue evening", tags=[nfd("Zürich"), nfd("café")])
    for tag in ("café", "zürich", nfd("café")):
        hits = call(a, "search", query="list fondue", mode="keyword", tags=[tag])["hits"]
        assert len(hits) == 2, (tag, hits)
    assert unicodedata.is_normalized("NFC", "".join(hits[0]["tags"]))
