"""store/wordrows.py: which of a search's candidates hold a word, from the word's matches read
once and remembered, is what FTS5's own probe of `entries_fts` says, for words, prefixes,
phrases and CJK bigrams; the memo holds exactly while the connection's data version does, and
stays within its size."""

from __future__ import annotations

import json
from typing import Any

from memoryd.store import searchsql, wordrows
from memoryd.store.entries import NewMemory, insert_memory


def _probe(con: Any, match: str, ids: list[int]) -> set[int]:
    """FTS5's answer, asked of entries_fts directly (what `matching` ran before the memo)."""
    return {
        int(r[0])
        for r in con.execute(
            "SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?"
            " AND (rowid + 0) IN (SELECT value FROM json_each(?))",
            [match, json.dumps(ids)],
        )
    }


def _notes(app: Any) -> list[int]:
    ws = app.cfg.workspace
    for i in range(30):
        words = " ".join(f"w{(i * 7 + j) % 23}" for j in range(12))
        extra = "deploy deployed deploying" if i % 3 == 0 else "rollback"
        (ws / f"n{i:02d}.md").write_text(f"# Note {i}\n\n{words}. {extra}. 数据库的迁移 {i}.\n")
    app.indexer.reconcile()
    return app.store.read(
        lambda con: [int(r[0]) for r in con.execute("SELECT id FROM entries ORDER BY id")]
    )


def test_holding_is_the_probe_of_entries_fts(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    ids = _notes(app)
    assert len(ids) >= 30
    asked = [*ids[::2], max(ids) + 100, 0]  # an id past every row, one before them
    for match in ('"deploy"', '"w3"', '"w1"*', '"rollback"', '"数据"', '"absent"', '"w4" "w5"'):
        for _ in range(2):  # read, then remembered
            found = app.store.read(lambda con, m=match: wordrows.holding(con, m, asked))
            probe = app.store.read(lambda con, m=match: _probe(con, m, asked))
            assert found == probe, match
        # the document frequency, counted from the remembered rows, is FTS5's count up to a cap
        for cap in (3, 10_000):
            counted = app.store.read(lambda con, m=match, c=cap: searchsql.match_count(con, m, c))
            every = app.store.read(lambda con, m=match: len(_probe(con, m, ids)))
            kept = app.store.read(lambda con, m=match: wordrows.count(con, m))
            assert kept == every and counted == min(every, cap), match
    got = app.store.read(lambda con: searchsql.matching(con, '"deploy"', ids))
    assert got and got == app.store.read(lambda con: _probe(con, '"deploy"', ids))


def test_a_commit_forgets_the_remembered_rows(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    ids = _notes(app)
    before = app.store.read(lambda con: wordrows.holding(con, '"remembered"', ids))
    assert before == set()
    with app.store.write() as con:
        new, _ = insert_memory(
            con,
            NewMemory(content="Remembered words.", content_hash="m1", type="fact"),
            1.0,
        )
    everything = [*ids, int(new)]
    after = app.store.read(lambda con: wordrows.holding(con, '"remembered"', everything))
    assert after == {int(new)}


def test_the_memo_keeps_within_its_size(make_app: Any, monkeypatch: Any) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    ids = _notes(app)
    monkeypatch.setattr(wordrows, "MAX_BYTES", 8)  # a bitmap of these ~30 rows: 1-8 bytes

    def ask(con: Any) -> tuple[int, int]:
        for w in range(23):
            assert wordrows.holding(con, f'"w{w}"', ids) == _probe(con, f'"w{w}"', ids)
        _, arrays, total = wordrows._memo[con]
        return len(arrays), total[0]

    kept, total = app.store.read(ask)
    assert 1 <= kept < 23 and total <= 8  # the most recently asked, within the bytes


def test_matches_read_ahead_are_those_asked_after(make_app: Any) -> None:
    """The searcher reads a query's words ahead, while the vector pool's thread works
    (`KeywordEvidence.prefetch`): `matching` then answers from what was read."""
    app = make_app(model=None, dailylog={"enabled": False})
    ids = _notes(app)

    def ahead(con: Any) -> tuple[bool, set[int]]:
        searchsql.remember_matches(con, '"deploy"')
        kept = '"deploy"' in wordrows._memo[con][1]
        return kept, searchsql.matching(con, '"deploy"', ids)

    kept, found = app.store.read(ahead)
    assert kept and found == app.store.read(lambda con: _probe(con, '"deploy"', ids))
