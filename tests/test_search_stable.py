"""Issue 19: the same question gets the same answer (whatever the limit, whatever the time), and
a grouped answer lists only sections that would have been hits themselves."""

from __future__ import annotations

import time
from typing import Any

from conftest import q, settle


def _vault(app: Any, notes: int = 40) -> None:
    ws = app.cfg.workspace
    for i in range(notes):
        words = " ".join(f"w{(i * 7 + j) % 23}" for j in range(6))
        (ws / f"n{i:02d}.md").write_text(
            f"# Note {i}\n\nThe deploy checklist {words} and the rollback plan {i % 5}.\n"
        )
    app.indexer.reconcile()


def _order(res: dict[str, Any]) -> list[tuple[str, float]]:
    return [(h["path"], h["score"]) for h in res["hits"]]


def test_the_first_ten_at_limit_ten_are_the_first_ten_at_limit_hundred(make_app: Any) -> None:
    app = make_app(dailylog={"enabled": False})
    _vault(app)
    settle(app)
    # the pools do not shrink with the limit: a smaller pool would drop what a wider one fuses in
    assert app.searcher.pool_size(10) == app.searcher.pool_size(100)
    for query in ("deploy rollback w3 w11", "checklist plan", "w5 w17 w22"):
        for mode in ("auto", "keyword", "hybrid"):
            for group in ("note", "none"):
                ten = q(app, query, mode=mode, group=group, limit=10)
                hundred = q(app, query, mode=mode, group=group, limit=100)
                assert _order(ten) == _order(hundred)[:10], (query, mode, group)


def test_the_order_does_not_depend_on_the_wall_clock(make_app: Any) -> None:
    app = make_app(dailylog={"enabled": False})
    _vault(app)
    settle(app)
    first = {qq: _order(q(app, qq, limit=20)) for qq in ("deploy rollback", "w3 checklist")}
    later = time.time() + 7 * 3600  # seven hours on: recency must not move a score
    app.searcher.clock = lambda: later
    again = {qq: _order(q(app, qq, limit=20)) for qq in first}
    assert again == first


def test_a_grouped_note_lists_only_sections_that_would_be_hits(make_app: Any) -> None:
    app = make_app(dailylog={"enabled": False})
    parts = [
        f"## Part {i}\n\nThe apple harvest note number {i} for the orchard."
        if i % 2
        else f"## Part {i}\n\nTractor engine oil schedule, entry {i}."
        for i in range(20)
    ]
    (app.cfg.workspace / "orchard.md").write_text("# Orchard\n\n" + "\n\n".join(parts) + "\n")
    app.indexer.reconcile()
    settle(app)
    lines = (app.cfg.workspace / "orchard.md").read_text().splitlines()
    for limit in (3, 10):
        hit = q(app, "apple harvest", limit=limit)["hits"][0]
        listed = hit.get("sections") or []
        assert listed, "the note lists its other matching sections"
        for sec in listed:
            text = " ".join(lines[sec["start_line"] - 1 : sec["end_line"]])
            assert "apple" in text, (limit, sec)


def test_a_section_below_the_floor_is_not_listed() -> None:
    """Issue 19.5, the rule itself: a section that no keyword backs and whose similarity is
    under the model's `alone` floor is not listed; the note's best section always is."""
    from memoryd.search.ranking import Candidate, Scale, listed_sections

    best = Candidate(id=1, keyword_rank=1, fused=0.9)
    keyed = Candidate(id=2, keyword_rank=3, fused=0.2)
    near = Candidate(id=3, vector_rank=1, similarity=0.25, fused=0.1)
    faint = Candidate(id=4, vector_rank=2, similarity=0.15, fused=0.01)  # floor 0.10, alone 0.20
    note = Candidate(id=1, document_id=7, fused=0.9, sections=[best, keyed, near, faint])
    listed_sections([note], Scale(0.10, 0.90, 0.20))
    assert [c.id for c in note.sections] == [1, 2, 3]


def test_the_hits_sections_listed_alone_are_those_listed_with_every_note() -> None:
    """The searcher lists the sections of the hits shown only (issue 23.3): for every mix of
    keyed and unkeyed notes, with and without the `unkeyed` floor (`corrected`) and CJK, the
    same sections as when every ranked note's are listed."""
    import itertools
    import random

    from memoryd.search.ranking import Candidate, Scale, listed_sections

    rnd = random.Random(7)
    scale = Scale(0.10, 0.90, 0.20, 0.5, 0.3)

    def notes(seed: int) -> list[Candidate]:
        rnd.seed(seed)
        out = []
        for n in range(8):
            secs = []
            for k in range(rnd.randint(1, 4)):
                keyed = rnd.random() < 0.3
                secs.append(
                    Candidate(
                        id=n * 10 + k,
                        keyword_rank=n + 1 if keyed else None,
                        coverage=rnd.choice([None, 0.0, 0.5]) if keyed else rnd.choice([None, 0.0]),
                        similarity=rnd.choice([None, 0.15, 0.25, 0.35, 0.6]),
                    )
                )
            out.append(Candidate(id=n * 10, document_id=n, sections=secs))
        return out

    for seed, cjk, corrected in itertools.product(range(200), (False, True), (False, True)):
        whole, alone = notes(seed), notes(seed)
        listed_sections(whole, scale, cjk, corrected)
        listed_sections(alone[:3], scale, cjk, corrected, alone)
        assert [[s.id for s in n.sections] for n in whole[:3]] == [
            [s.id for s in n.sections] for n in alone[:3]
        ], (seed, cjk, corrected)


def test_a_keyword_pool_ranked_in_two_halves_is_the_pool_ranked_whole(
    make_app: Any, monkeypatch: Any
) -> None:
    """A large index's keyword pool is ranked in two halves of the rowid range at once
    (issue 23.3): the same rows in the same order, ties in bm25 included (this vault has many)."""
    from concurrent.futures import ThreadPoolExecutor

    from memoryd.search.ftsquery import parse_query
    from memoryd.store import searchsql
    from memoryd.store.entries import Filters, filter_sql

    app = make_app(dailylog={"enabled": False})
    _vault(app)
    settle(app)
    where, params = filter_sql(Filters(), time.time())
    with ThreadPoolExecutor(1) as pool:

        def pools(query: str, split: bool, size: int) -> list[tuple[int, float, int | None]]:
            parsed = parse_query(query)
            match = parsed.match_any or parsed.match
            assert match is not None
            beside = (lambda fn: pool.submit(app.store.read, fn)) if split else None
            return app.store.read(
                lambda con: searchsql.keyword_pool(con, match, where, params, size, beside=beside)
            )

        monkeypatch.setattr(searchsql, "SPLIT_MIN", 0)
        monkeypatch.setattr(searchsql, "idle_core", lambda: True)
        for query in ("deploy rollback w3 w11", "checklist plan", "w5 w17 w22", "note"):
            for size in (3, 10, 50):
                whole = pools(query, False, size)
                assert whole and pools(query, True, size) == whole, (query, size)


def test_the_remembered_entry_count_follows_every_write(tmp_path: Any) -> None:
    """searchsql.entry_count (the n of IDF) is remembered per read connection while its data
    version holds: a commit by the writer, and a change on the connection itself, count again."""
    from memoryd.store import searchsql
    from memoryd.store.sqlite import SqliteStore

    store = SqliteStore(tmp_path / "m.db")
    try:

        def add(con: Any, n: int) -> None:
            for i in range(n):
                con.execute(
                    "INSERT INTO entries(kind, content, content_hash, type, created_at,"
                    " updated_at) VALUES ('memory', ?, ?, 'fact', 0, 0)",
                    [f"text {i} {n}", f"h{i}-{n}"],
                )

        assert store.read(searchsql.entry_count) == 0
        with store.write() as con:
            add(con, 3)
        assert store.read(searchsql.entry_count) == 3
        assert store.read(searchsql.entry_count) == 3
        with store.write() as con:
            assert searchsql.entry_count(con) == 3
            add(con, 2)  # the writer's own change: its data version does not move
            assert searchsql.entry_count(con) == 5
        assert store.read(searchsql.entry_count) == 5
    finally:
        store.close()


def test_snippets_made_from_the_rows_are_those_of_each_row_looked_up(make_app: Any) -> None:
    """Snippets come from the hits' own rows in a private FTS5 table (store/rowsnippets.py; each
    row looked up would parse the expression again and expand a prefix again, a read of its
    matches costs the whole doclist, issue 23.3): the same snippets as row by row."""
    from memoryd.store import searchsql

    app = make_app(dailylog={"enabled": False})
    _vault(app)
    settle(app)

    def both(con: Any, match: str) -> tuple[dict[int, str], dict[int, str]]:
        ids = [int(r[0]) for r in con.execute("SELECT id FROM entries ORDER BY id DESC LIMIT 25")]
        one = dict(
            con.execute(
                "SELECT rowid, snippet(entries_fts, 0, '<', '>', '…', 24) FROM entries_fts"
                f" WHERE entries_fts MATCH ? AND rowid IN ({','.join('?' * len(ids))})",
                [match, *ids],
            )
        )
        return one, searchsql.snippets(con, match, ids, "<", ">")

    plain = ('"deploy" OR "rollback"', '"w3"', '"checklist" "plan"')
    for match in ('("deplo" OR "deploi"*)', '"w1"* OR "rollback"', '"checkl"*', *plain):
        row_by_row, once = app.store.read(lambda con, m=match: both(con, m))
        assert row_by_row and once == row_by_row, match
