"""Issue 19.2 on PostgreSQL: each note's whole-note row (store/pg/notes.py, schema v4) follows
the note through every write path (index, edit, move, delete, expiry), its statistics stay
exact, an older database gets the rows when it migrates, and a SQLite store copied over
(`memoryd store migrate --to postgres`) brings them. The ranking that reads them is tested on
both backends in test_note_text.py."""

from __future__ import annotations

import time
from typing import Any

import pytest
from conftest import migrations_before, settle

from memoryd.store import notetext


def pg_app(make_app: Any, pg_dsn: str, **kw: Any) -> Any:
    return make_app(store={"backend": "postgres", "dsn": pg_dsn}, dailylog={"enabled": False}, **kw)


def rows(app: Any) -> dict[str, tuple[str, int]]:
    """Each note's row, by path: (its tsvector as text, its length)."""
    return dict(
        app.store.read(
            lambda con: [
                (str(p), (str(v), int(n)))
                for p, v, n in con.execute(
                    "SELECT d.path, n.fts::text, n.length FROM notes_fts n"
                    " JOIN documents d ON d.id = n.document_id"
                )
            ]
        )
    )


def stats_exact(app: Any) -> None:
    """notes_stats (the triggers' counts) equals the rows' count and length total."""

    def read(con: Any) -> tuple[Any, Any]:
        kept = con.execute("SELECT workspace, notes, tokens FROM notes_stats WHERE notes > 0")
        counted = con.execute(
            "SELECT workspace, count(*), sum(length) FROM notes_fts GROUP BY workspace"
        )
        return sorted(map(tuple, kept)), sorted(map(tuple, counted))

    kept, counted = app.store.read(read)
    assert kept == counted


def matching(app: Any, match: str) -> set[str]:
    def read(con: Any) -> set[str]:
        ids = {int(i): str(p) for i, p in con.execute("SELECT id, path FROM documents")}
        return {ids[i] for i in notetext.note_bm25(con, match, sorted(ids))[0]}

    return set(app.store.read(read))


def test_the_row_follows_index_edit_move_delete_and_expiry(make_app: Any, pg_dsn: str) -> None:
    app = pg_app(make_app, pg_dsn, model=None)
    ws = app.cfg.workspace
    (ws / "trip.md").write_text("# Trip\n\n## Day 1\n\nLisbon trams.\n\n## Day 2\n\nLisbon fado.\n")
    (ws / "pets.md").write_text("---\ntags: [animals]\n---\n# At home\n\nBiscuit the beagle.\n")
    app.indexer.reconcile()
    assert set(rows(app)) == {"trip.md", "pets.md"}
    assert matching(app, '"trams" AND "fado"') == {"trip.md"}  # its sections together
    assert matching(app, '"day"') == {"trip.md"}  # heading paths
    assert matching(app, '"animals"') == {"pets.md"}  # tags
    assert matching(app, '"pets"') == set()  # the file name is not the note's text (as FTS5's)
    stats_exact(app)

    (ws / "trip.md").write_text("# Trip\n\nPorto this time.\n")  # edit
    app.indexer.reconcile()
    assert matching(app, '"lisbon"') == set() and matching(app, '"porto"') == {"trip.md"}
    stats_exact(app)

    before = rows(app)["trip.md"]
    (ws / "trip.md").rename(ws / "journey.md")  # move: the same row under the new path
    app.indexer.reconcile()
    assert rows(app).get("journey.md") == before and "trip.md" not in rows(app)
    assert matching(app, '"porto"') == {"journey.md"}
    stats_exact(app)

    (ws / "journey.md").unlink()  # delete
    app.indexer.reconcile()
    assert set(rows(app)) == {"pets.md"} and matching(app, '"porto"') == set()
    stats_exact(app)

    (ws / "old.md").write_text("---\nexpires: 2001-01-01\n---\n# Old\n\nOld harbour notes.\n")
    app.indexer.reconcile()
    assert "old.md" in rows(app)
    app.store.run_write(
        lambda con: con.execute("DELETE FROM entries WHERE expires_at <= ?", [time.time()])
    )  # what the expiry job runs (entries.delete_expired)
    assert "old.md" not in rows(app) and matching(app, '"harbour"') == set()
    stats_exact(app)


def test_the_row_is_the_chunks_words(make_app: Any, pg_dsn: str) -> None:
    """Content and headings of every chunk, the tags once, nothing of the title; the length
    counts its positions."""
    app = pg_app(make_app, pg_dsn, model=None)
    (app.cfg.workspace / "n.md").write_text(
        "---\ntags: [garden]\n---\n# Plants\n\n## Roses\n\nRoses need sun.\n\n"
        "## Ferns\n\nFerns like shade.\n"
    )
    app.indexer.reconcile()
    vector, length = rows(app)["n.md"]
    weights = app.store.read(
        lambda con: {
            str(w): (list(p), list(x))
            for w, p, x in con.execute("SELECT * FROM unnest(?::tsvector)", [vector])
        }
    )
    assert "n" not in weights  # the file name (the chunks' weight B) is left out
    assert set(weights["rose"][1]) == {"A", "C"} and set(weights["garden"][1]) == {"D"}
    assert len(weights["garden"][0]) == 1  # the tags once, not once per chunk
    assert length == sum(len(p) for p, _ in weights.values())


def test_an_older_database_gets_the_rows_when_it_migrates(
    make_app: Any, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.store.pg import notes, schema

    migrations_before(monkeypatch, schema, schema._v4_note_text)
    monkeypatch.setattr(notes, "refresh", lambda con, path: None)  # no table before v4
    app = pg_app(make_app, pg_dsn, model=None)
    (app.cfg.workspace / "trip.md").write_text("# Trip\n\n## Day 1\n\nLisbon trams.\n")
    (app.cfg.workspace / "pets.md").write_text("# Pets\n\nBiscuit the beagle.\n")
    app.indexer.reconcile()
    app.close()
    monkeypatch.undo()
    app = pg_app(make_app, pg_dsn, model=None)
    assert matching(app, '"lisbon" AND "trams"') == {"trip.md"}
    migrated = rows(app)
    stats_exact(app)
    for path in migrated:  # the migration wrote what the indexer writes
        app.store.run_write(lambda con, p=path: notetext.refresh(con, p))
    assert rows(app) == migrated
    stats_exact(app)


def test_a_copied_sqlite_store_brings_the_rows(make_app: Any, pg_dsn: str) -> None:
    from memoryd.store import pgmigrate

    lite = make_app(dailylog={"enabled": False})
    ws = lite.cfg.workspace
    (ws / "trip.md").write_text("# Trip\n\n## Day 1\n\nLisbon trams.\n\n## Day 2\n\nLisbon fado.\n")
    (ws / "pets.md").write_text("# Pets\n\nBiscuit the beagle.\n")
    lite.indexer.reconcile()
    settle(lite)
    cfg = lite.cfg
    make_app.close(lite)
    pgmigrate.migrate(cfg, dsn=pg_dsn, say=lambda s: None)
    app = make_app(
        store={"backend": "postgres", "dsn": pg_dsn},
        dailylog={"enabled": False},
        workspace=str(cfg.workspace),
        data_dir=str(cfg.data_dir),
    )
    copied = rows(app)
    assert set(copied) == {"trip.md", "pets.md"}
    assert matching(app, '"trams" AND "fado"') == {"trip.md"}
    stats_exact(app)
    for path in copied:  # the same rows as the indexer writes
        app.store.run_write(lambda con, p=path: notetext.refresh(con, p))
    assert rows(app) == copied


def test_a_term_s_note_frequency_is_counted_or_estimated(make_app: Any, pg_dsn: str) -> None:
    """memoryd_note_df: exact in a small workspace; in one of more than 1,000 notes, a term in
    more than 1% of them takes the planner's estimate (its statistics keep common lexemes), a
    rarer one is counted."""
    app = pg_app(make_app, pg_dsn, model=None)

    def fill(con: Any) -> None:
        con.execute(
            "INSERT INTO documents(path, sha256, size, mtime, indexed_at, meta)"
            " SELECT 'n' || i || '.md', '', 0, 0, 0, '{}' FROM generate_series(1, 1500) i"
        )
        con.execute(
            "INSERT INTO notes_fts(document_id, workspace, fts, length)"
            " SELECT d.id, d.workspace, to_tsvector('english', CASE WHEN d.id % 3 = 0"
            " THEN 'common words, rare walrus' ELSE 'common words' END"
            " || CASE WHEN d.id % 300 = 0 THEN ' narwhal' ELSE '' END), 3 FROM documents d"
        )

    def df(con: Any, word: str, n: int) -> int:
        row = con.execute(
            "SELECT memoryd_note_df(phraseto_tsquery('english', ?), ?::bigint)", [word, n]
        ).fetchone()
        return int(row[0])

    app.store.run_write(fill)
    exact = {"common": 1500, "walrus": 500, "narwhal": 5, "absent": 0}
    for n in (1000, 1500):  # counted up to 1,000 (the table is not analysed yet)
        got = app.store.read(lambda con, n=n: {w: df(con, w, n) for w in exact})
        assert got == {w: min(c, 1000) for w, c in exact.items()}, n
    app.store.run_write(lambda con: con.execute("ANALYZE notes_fts"))
    got = app.store.read(lambda con: {w: df(con, w, 1500) for w in exact})
    assert got["narwhal"] == 5 and got["absent"] == 0  # rare: counted
    assert got["common"] == 1500 and abs(got["walrus"] - 500) <= 25  # estimated
