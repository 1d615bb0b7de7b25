"""store/wordrows.py: which of a search's candidates hold a word, from the word's matches read
once and remembered, is what FTS5's own probe of `entries_fts` says, for words, prefixes,
phrases and CJK bigrams; the memo holds exactly while the connection's data version does, and
stays within its size."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from memoryd.search.pools import WordsAhead
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


def test_matches_read_on_another_connection_are_kept_only_for_the_same_index(
    make_app: Any,
) -> None:
    """Issue 23.3: the vector pool's thread reads the query's new words on its own connection
    (`wordrows.read_ahead`); the search's connection keeps them (`adopt`) only when its keyword
    index is the one they were read from (the same generation), and then answers from them."""
    app = make_app(model=None, dailylog={"enabled": False})
    ids = _notes(app)
    words = ['"deploy"', '"w3"', '"absent"']

    def elsewhere() -> wordrows.Ahead:  # another thread: another read connection
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(app.store.read, lambda c: wordrows.read_ahead(c, words)).result()

    ahead = elsewhere()

    def adopted(con: Any, ahead: wordrows.Ahead) -> tuple[list[str], int, list[str]]:
        before = wordrows.unknown(con, words)
        return before, wordrows.adopt(con, ahead), wordrows.unknown(con, words)

    assert app.store.read(lambda con: adopted(con, ahead)) == (words, 3, [])
    for m in words:
        found = app.store.read(
            lambda con, m=m: (wordrows.holding(con, m, ids), wordrows.count(con, m))
        )
        probe = app.store.read(lambda con, m=m: _probe(con, m, ids))
        assert found == (probe, len(probe)), m

    stale = elsewhere()  # read before a write that adds a text holding "deploy"
    with app.store.write() as con:
        new, _ = insert_memory(
            con, NewMemory(content="We deploy on Fridays.", content_hash="m2", type="fact"), 1.0
        )
    assert app.store.read(lambda con: adopted(con, stale)) == (words, 0, words)  # not kept
    everything = [*ids, int(new)]
    found = app.store.read(lambda con: wordrows.holding(con, '"deploy"', everything))
    assert int(new) in found and found == app.store.read(
        lambda con: _probe(con, '"deploy"', everything)
    )


def test_each_new_word_is_read_once_by_the_thread_that_comes_to_it_first(make_app: Any) -> None:
    """pools.WordsAhead: the vector pool's thread reads the words the search has not taken, the
    search reads the rest, and the search's connection then holds every word's matches."""
    app = make_app(model=None, dailylog={"enabled": False})
    ids = _notes(app)
    words = ['"deploy"', '"w3"', '"rollback"']
    ahead = WordsAhead(list(words))
    assert ahead.mine() == words  # the search came first: every word is its own
    ahead.words_ahead(None)  # type: ignore[arg-type]  # nothing left: no read
    assert WordsAhead([]).mine() is None  # nothing was new

    ahead = WordsAhead(list(words))
    with ThreadPoolExecutor(1) as pool:  # the vector pool's thread came first
        pool.submit(app.store.read, ahead.words_ahead).result()
    assert ahead.mine() == []

    def adopted(con: Any) -> list[str]:
        ahead.adopt(con)
        return wordrows.unknown(con, words)

    assert app.store.read(adopted) == []
    for m in words:
        found = app.store.read(lambda con, m=m: wordrows.holding(con, m, ids))
        assert found == app.store.read(lambda con, m=m: _probe(con, m, ids)), m
