"""Issue 19.2: a hybrid answer weighs a note found by keywords by BM25 over the whole note
(store/notetext.py, ranking.whole_note), keywords alone partly (ranking.keyword_note); the
note's FTS5 row follows the note."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import migrations_before, q, settle

from memoryd.search.ftsquery import parse_query
from memoryd.search.ranking import WHOLE_NOTE_SHARE, Candidate, keyword_note, whole_note
from memoryd.store import notetext

pytestmark = pytest.mark.backends  # each test that builds an App runs on SQLite and PostgreSQL


def _whole(app: Any, match: str) -> tuple[dict[str, float], float | None]:
    """Each matching note's whole-note BM25, by path, and the best."""

    def read(con: Any) -> tuple[dict[str, float], float | None]:
        ids = {int(i): p for i, p in con.execute("SELECT id, path FROM documents")}
        scores, best = notetext.note_bm25(con, match, sorted(ids))
        return {ids[i]: s for i, s in scores.items()}, best

    return app.store.read(read)


def test_the_whole_note_row_follows_the_note(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    ws = app.cfg.workspace
    (ws / "trip.md").write_text("# Trip\n\n## Day 1\n\nLisbon trams.\n\n## Day 2\n\nLisbon fado.\n")
    (ws / "pets.md").write_text("# Pets\n\nBiscuit the beagle.\n")
    app.indexer.reconcile()
    scores, best = _whole(app, '"lisbon"')
    assert set(scores) == {"trip.md"} and best == scores["trip.md"] < 0
    assert set(_whole(app, '"trams" AND "fado"')[0]) == {"trip.md"}  # sections together
    (ws / "trip.md").write_text("# Trip\n\nPorto this time.\n")
    app.indexer.reconcile()
    assert _whole(app, '"lisbon"') == ({}, None)
    assert set(_whole(app, '"porto"')[0]) == {"trip.md"}
    (ws / "trip.md").unlink()
    app.indexer.reconcile()
    assert _whole(app, '"porto"') == ({}, None)
    assert set(_whole(app, '"beagle"')[0]) == {"pets.md"}


def test_the_norm_is_the_best_of_the_pool_or_of_every_note(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    (app.cfg.workspace / "a.md").write_text("# A\n\nLisbon, Lisbon, Lisbon.\n")
    (app.cfg.workspace / "b.md").write_text("# B\n\nA long day in Lisbon with the trams.\n")
    app.indexer.reconcile()
    everything, best = _whole(app, '"lisbon"')
    assert best == everything["a.md"] < everything["b.md"]

    def only_b(everywhere: bool) -> tuple[dict[int, float], float | None]:
        def read(con: Any) -> tuple[dict[int, float], float | None]:
            (b,) = con.execute("SELECT id FROM documents WHERE path = 'b.md'").fetchone()
            return notetext.note_bm25(con, '"lisbon"', [b], everywhere=everywhere)

        return app.store.read(read)

    assert list(only_b(False)[0].values()) == [everything["b.md"]]
    assert only_b(False)[1] == everything["b.md"]  # the pool's notes: the best of them
    assert only_b(True)[1] == everything["a.md"]  # a filtered search: the best of all


@pytest.mark.sqlite_only("SQLite's migration m008; PostgreSQL's v4: test_pg_note_text.py")
def test_m008_fills_the_rows_of_an_existing_store(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.store import migrations

    migrations_before(monkeypatch, migrations, migrations.m008_note_text)
    monkeypatch.setattr(notetext, "refresh", lambda con, path: None)  # no table before m008
    app = make_app(model=None, dailylog={"enabled": False})
    (app.cfg.workspace / "trip.md").write_text("# Trip\n\n## Day 1\n\nLisbon trams.\n")
    app.indexer.reconcile()
    app.close()
    monkeypatch.undo()
    app = make_app(model=None, dailylog={"enabled": False})
    assert set(_whole(app, '"lisbon" AND "trams"')[0]) == {"trip.md"}


def _expired_and_kept(app: Any) -> None:
    ws = app.cfg.workspace
    (ws / "old.md").write_text("---\nexpires: 2001-01-01\n---\n# Old\n\nOld harbour notes.\n")
    (ws / "keep.md").write_text("# Keep\n\nA harbour walk at dawn.\n")
    app.indexer.reconcile()
    assert set(_whole(app, '"harbour"')[0]) == {"old.md", "keep.md"}


def test_an_expired_note_loses_its_row(make_app: Any) -> None:
    # the expiry job deletes the chunks and keeps the document: the row must go with them
    app = make_app(model=None, dailylog={"enabled": False})
    _expired_and_kept(app)
    assert app.memories.expire() >= 1
    scores, best = _whole(app, '"harbour"')
    assert set(scores) == {"keep.md"} and best == scores["keep.md"]


@pytest.mark.sqlite_only("SQLite's migration m009; PostgreSQL's trigger: test_pg_note_text.py")
def test_m009_drops_the_rows_of_notes_that_expired_before(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.store import migrations

    migrations_before(monkeypatch, migrations, migrations.m009_note_text_expiry)
    app = make_app(model=None, dailylog={"enabled": False})
    _expired_and_kept(app)
    app.memories.expire()
    assert set(_whole(app, '"harbour"')[0]) == {"old.md", "keep.md"}  # m008 alone kept it
    app.close()
    monkeypatch.undo()
    app = make_app(model=None, dailylog={"enabled": False})
    assert set(_whole(app, '"harbour"')[0]) == {"keep.md"}


def test_whole_note_measures_a_keyword_note_by_the_best_note() -> None:
    note = Candidate(id=7, document_id=3, keyword_rank=2, bm25=-9.0)
    assert whole_note(note, ({3: -4.0}, -6.0)) == -6.0
    assert note.bm25 == -4.0 and note.components["chunk_bm25"] == -9.0
    # a memory, a note only the vectors found, a note with no row: as before
    for c in (
        Candidate(id=1, keyword_rank=1, bm25=-2.0),
        Candidate(id=2, document_id=3, vector_rank=1, similarity=0.5),
        Candidate(id=3, document_id=4, keyword_rank=1, bm25=-2.0),
    ):
        before = (c.bm25, dict(c.components))
        assert whole_note(c, ({3: -4.0}, -6.0)) is None
        assert (c.bm25, c.components) == before
    assert whole_note(Candidate(id=4, document_id=3, keyword_rank=1), ({}, None)) is None


def test_a_hybrid_answer_explains_the_whole_note_bm25(make_app: Any) -> None:
    app = make_app(dailylog={"enabled": False})
    ws = app.cfg.workspace
    (ws / "deploy.md").write_text(
        "# Deploy\n\n## Steps\n\nThe deploy rollback plan.\n\n## Notes\n\nRollback twice.\n"
    )
    (ws / "other.md").write_text("# Other\n\nThe garden plan.\n")
    app.indexer.reconcile()
    settle(app)
    hybrid = q(app, "deploy rollback", mode="hybrid", explain=True)
    top = hybrid["hits"][0]
    assert top["path"] == "deploy.md" and hybrid["mode"] == "hybrid"
    parsed = parse_query("deploy rollback")
    match = parsed.match_any or parsed.match
    assert top["explain"]["bm25"] == _whole(app, match)[0]["deploy.md"]
    assert "chunk_bm25" in top["explain"]
    # keywords alone: partly the whole note (`keyword_note`)
    alone = q(app, "deploy rollback", mode="keyword", explain=True)["hits"]
    assert alone[0]["path"] == "deploy.md" and "chunk_bm25" in alone[0]["explain"]
    # raw chunks: each chunk by its own BM25, as before
    res = q(app, "deploy rollback", mode="hybrid", group="none", explain=True)
    assert all("chunk_bm25" not in h["explain"] for h in res["hits"])


def test_keywords_alone_weigh_a_note_partly_by_the_whole_note() -> None:
    note = Candidate(id=7, document_id=3, keyword_rank=2, bm25=-9.0)
    keyword_note(note, ({3: -4.0}, -8.0), -10.0)  # its chunk 0.9 of the best, the note 0.5
    share = WHOLE_NOTE_SHARE
    assert note.bm25 == pytest.approx(-10.0 * ((1 - share) * 0.9 + share * 0.5))
    assert note.components["chunk_bm25"] == -9.0
    # a memory, a note with no row, no whole-note norm: its chunk's, as before
    for c, whole in (
        (Candidate(id=1, keyword_rank=1, bm25=-2.0), ({3: -4.0}, -8.0)),
        (Candidate(id=3, document_id=4, keyword_rank=1, bm25=-2.0), ({3: -4.0}, -8.0)),
        (Candidate(id=4, document_id=3, keyword_rank=1, bm25=-2.0), ({}, None)),
    ):
        keyword_note(c, whole, -10.0)
        assert c.bm25 == -2.0 and "chunk_bm25" not in c.components


def test_the_best_of_every_note_is_remembered_until_a_write(make_app: Any) -> None:
    """A filtered search's whole-note norm (the best of every note) is remembered per
    connection while nothing is written: the same answer, and a write that changes it is seen."""
    app = make_app(model=None, dailylog={"enabled": False})
    ws = app.cfg.workspace
    (ws / "a.md").write_text("# A\n\nA long day in Lisbon with the trams.\n")
    app.indexer.reconcile()

    def best() -> float | None:
        return app.store.read(lambda con: notetext.best_note(con, '"lisbon"'))

    first = best()
    assert first is not None and best() == first
    (ws / "b.md").write_text("# B\n\nLisbon, Lisbon, Lisbon.\n")
    app.indexer.reconcile()
    second = best()
    assert second is not None and second < first and best() == second
    (ws / "b.md").unlink()
    app.indexer.reconcile()
    assert best() == _whole(app, '"lisbon"')[1]


FILLER = {
    f"filler{i}.md": f"# Filler {i}\n\nGroceries, {word} and the weekly plan for the garden.\n"
    for i, word in enumerate(("fado records", "a castle puzzle", "bread", "cheese", "coffee"))
}


def test_a_note_about_every_word_outranks_a_section_repeating_one(make_app: Any) -> None:
    """Over the whole note (both backends): a note whose sections hold the question's words
    between them scores above a note whose one short section repeats one of them, which scores
    above it by its best chunk; in a hybrid answer the whole note's BM25 is its keyword part."""
    app = make_app(dailylog={"enabled": False})
    ws = app.cfg.workspace
    for name, text in FILLER.items():
        (ws / name).write_text(text)
    (ws / "spread.md").write_text(
        "# Lisbon\n\n## Trams\n\nOld trams.\n\n## Music\n\nFado at night.\n\n"
        "## Castle\n\nThe castle walls.\n"
    )
    (ws / "repeat.md").write_text("# Rides\n\nTrams, trams, trams.\n")
    app.indexer.reconcile()
    settle(app)
    scores, best = _whole(app, '"trams" OR "fado" OR "castle"')
    assert best == scores["spread.md"] < scores["repeat.md"] < 0

    def explained(mode: str) -> dict[str, dict[str, Any]]:
        res = q(app, "trams fado castle", mode=mode, explain=True)
        assert res["mode"] == mode
        return {h["path"]: h["explain"] for h in res["hits"]}

    chunks = explained("keyword")  # keywords alone: mostly by the best chunk
    assert chunks["repeat.md"]["chunk_bm25"] < chunks["spread.md"]["chunk_bm25"]
    best = min(e["chunk_bm25"] for e in chunks.values())  # the pool's best chunk is a hit's
    parsed = parse_query("trams fado castle")
    every, note_best = _whole(app, parsed.match_any or parsed.match)
    for path, e in chunks.items():  # a fifth by the whole note
        blend = (1 - WHOLE_NOTE_SHARE) * min(1.0, e["chunk_bm25"] / best)
        blend += WHOLE_NOTE_SHARE * min(1.0, every[path] / (note_best or 1.0))
        assert e["bm25"] == pytest.approx(best * blend)
    whole = explained("hybrid")
    assert whole["spread.md"]["bm25"] == scores["spread.md"]
    assert whole["repeat.md"]["bm25"] == scores["repeat.md"]
    assert whole["spread.md"]["keyword_part"] > whole["repeat.md"]["keyword_part"]


@pytest.mark.sqlite_only("SQLite's JSON arrays; PostgreSQL: store/pg/notes.py")
def test_the_scores_read_as_json_are_the_scores_read_row_by_row(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23.3: note_bm25 reads its rows as two JSON arrays (one row for the search thread
    to take the GIL back for); this SQLite writes every digit, so the floats are the same."""
    app = make_app(model=None, dailylog={"enabled": False})
    words = ["lisbon", "trams", "fado", "porto", "tiles", "river"]
    for i in range(40):
        text = " ".join(words[(i * k) % len(words)] for k in range(1, 2 + i % 9))
        (app.cfg.workspace / f"n{i:02}.md").write_text(f"# Note {i}\n\n{text}.\n\n## More\n\n{i}\n")
    app.indexer.reconcile()
    assert app.store.read(notetext.exact_json_floats)
    as_json = {m: _whole(app, m) for m in ('"lisbon"', '"trams" OR "porto"', '"fado" AND "river"')}
    monkeypatch.setattr(notetext, "_EXACT", [False])  # row by row, as before
    assert {m: _whole(app, m) for m in as_json} == as_json
    assert all(scores for scores, _ in as_json.values())
