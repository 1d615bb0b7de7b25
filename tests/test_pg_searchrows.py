"""Issue 23.4: a PostgreSQL search reads the rows it needs in fewer statements, and they are
the rows the separate statements read. The keyword pool's statement brings its rows' signal
columns (searchsql.Seen) and which of them hold each term (PgConnection.held); `read_ahead` the
vector pool's rows' signal columns, lengths and held words; `hit_rows` the hits' records,
snippets and sections' records (store/searchrows.py). A hybrid search makes one statement for
each of: the keyword pool, the vector pool, the whole notes, what is read ahead, the hits (and
N of the IDF in a small store, entity lookups where the query names one)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import SEARCH_QUERIES, pg_search_app

QUERIES = SEARCH_QUERIES


@pytest.fixture
def app(make_app: Any, pg_dsn: str) -> Any:
    return pg_search_app(make_app, pg_dsn)


def _ids(app: Any) -> list[int]:
    return [int(r[0]) for r in app.store.read(lambda con: con.execute("SELECT id FROM entries"))]


def test_the_pools_rows_are_the_rows(app: Any) -> None:
    """The signal columns and held words the keyword pool's statement brings are what
    signal_rows and a `matching` with nothing known read (a connection outside a read)."""
    from memoryd.search.ftsquery import parse_query, quote_term
    from memoryd.search.ranking import query_units
    from memoryd.store import searchsql
    from memoryd.store.pg import held

    ids = _ids(app)
    for query in QUERIES:
        parsed = parse_query(query)
        match = parsed.match_any or parsed.match

        def read(con: Any, match: str = match, query: str = query) -> Any:
            seen: searchsql.Seen = {}
            found = searchsql.keyword_pool(con, match, "1 = 1", [], 50, seen=seen)
            rows = searchsql.signal_rows(con, [i for i, _, _ in found])
            as_rows = {i: tuple(r[c] for c in searchsql.SIGNAL_COLUMNS) for i, r in rows.items()}
            words = [quote_term(u) for u in query_units(query)]
            known = {w: searchsql.matching(con, w, ids) for w in words}
            con.held = None  # nothing known: each asks the server
            asked = {w: held.matching(con, w, ids) for w in words}
            return found, seen, as_rows, known, asked

        found, seen, as_rows, known, asked = app.store.read(read)
        assert found, query
        assert seen == as_rows, query
        assert known == asked, query


def test_read_ahead_and_hit_rows_are_the_separate_reads(app: Any) -> None:
    from memoryd.search.ftsquery import quote_term
    from memoryd.store import entries, entrytexts, searchrows, searchsql

    ids = _ids(app)
    words = [quote_term(w) for w in ("deploy", "sessions", "数据库")]

    def ahead(con: Any) -> Any:
        for w in words:
            searchsql.remember_matches(con, w)
        seen: searchsql.Seen = {}
        searchrows.read_ahead(con, ids, seen)
        statements: list[str] = []
        real = con.execute

        def spy(sql: str, params: Any = None) -> Any:
            statements.append(sql)
            return real(sql, params)

        con.execute = spy
        got = (
            seen,
            searchsql.text_lengths(con, ids[:3]),
            {w: searchsql.matching(con, w, ids) for w in words},
        )
        return got, statements

    def apart(con: Any) -> Any:
        rows = searchsql.signal_rows(con, ids)
        return (
            {i: tuple(r[c] for c in searchsql.SIGNAL_COLUMNS) for i, r in rows.items()},
            dict(entrytexts.per_id(con, "length(content)", ids[:3])),
            {w: searchsql.matching(con, w, ids) for w in words},
        )

    got, statements = app.store.read(ahead)
    assert got == app.store.read(apart)
    assert statements == []  # all of it known already
    top, more = ids[:3], ids[3:6]
    by_match = {'"deploy" OR "canary"': top[:2], '"数据库"': top[2:]}
    marks = ("\x02", "\x03")

    def together(con: Any) -> Any:
        return searchrows.hit_rows(con, top, by_match, more, marks)

    def separately(con: Any) -> Any:
        snippets: dict[int, str] = {}
        for match, matched in by_match.items():
            snippets.update(searchsql.snippets(con, match, matched, *marks))
        return entries.get_many(con, top), snippets, entries.get_many(con, top + more)

    records, snippets, known = app.store.read(together)
    assert (records, snippets, known) == app.store.read(separately)
    assert any("\x02" in s for s in snippets.values())


def test_a_hybrid_search_in_few_statements(app: Any) -> None:
    from memoryd.search.searcher import SearchRequest
    from memoryd.store.pg.conn import PgConnection

    statements: list[str] = []
    real = PgConnection.execute

    def spy(self: PgConnection, sql: str, params: Any = None) -> Any:
        statements.append(re.sub(r"\s+", " ", sql)[:60])
        return real(self, sql, params)

    for query in ("deploy canary", "sessions redis"):
        app.searcher.search(SearchRequest(query=query, mode="hybrid"))  # remembered figures
        PgConnection.execute = spy  # type: ignore[method-assign]
        try:
            result = app.searcher.search(SearchRequest(query=query, mode="hybrid"))
        finally:
            PgConnection.execute = real  # type: ignore[method-assign]
        assert result["mode"] == "hybrid" and result["hits"]
        # no statement of its own for the signal rows, the lengths, the words' matches, the
        # snippets or the sections' records (an entity lookup, N in a small store may add some)
        for alone in (
            "SELECT id, kind, importance",
            "SELECT id, length(content)",
            "SELECT e.id, e.fts @@",
            "SELECT e.id, e.content, ts_headline",
        ):
            assert not [s for s in statements if s.startswith(alone)], (alone, statements)
        assert sum(s.startswith("SELECT e.id, e.kind, e.namespace") for s in statements) == 1
        statements.clear()


class _Unmarked(set[str]):
    """A set of statements to prepare that takes none (execute_prepared then sends them as
    every other statement is sent)."""

    def add(self, sql: str) -> None:
        return None


def test_the_hits_statement_is_prepared_and_reads_the_same(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23.4 (branch pg19): the hits' statement (`hit_rows`), whose plan is the same
    whatever its ids and words, runs as a server-side prepared statement on the connection
    that sends it, and reads what the unprepared statement reads; the search's other
    statements (a keyword pool's or a whole note's plan follows its words) stay unprepared."""
    from memoryd.search.searcher import SearchRequest
    from memoryd.store import searchrows
    from memoryd.store.pg import conn as pgconn

    ids = _ids(app)
    top, more = ids[:3], ids[3:6]
    by_match = {'"deploy" OR "canary"': top[:2], '"数据库"': top[2:]}
    marks = ("\x02", "\x03")

    def hits_and_prepared(con: Any) -> Any:
        got = [searchrows.hit_rows(con, top, by_match, more, marks) for _ in range(7)]
        assert all(g == got[0] for g in got)
        prepared = [
            str(r[0])
            for r in con.execute("SELECT statement FROM pg_prepared_statements").fetchall()
        ]
        return got[0], prepared

    got, prepared = app.store.read(hits_and_prepared)
    assert [s for s in prepared if "ts_headline" in s and "e.id = ANY" in s], prepared
    assert not [s for s in prepared if "ts_rank_cd" in s or "<=>" in s], prepared

    def unprepared(con: Any) -> Any:
        before = con.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()
        rows = [searchrows.hit_rows(con, top, by_match, more, marks) for _ in range(7)]
        after = con.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()
        assert before == after  # nothing prepared
        return rows[0]

    with monkeypatch.context() as m:  # the same rows, the statement sent unprepared
        m.setattr(pgconn, "_PREPARED", _Unmarked())
        assert app.store.read(unprepared) == got
    pgconn._PREPARED.clear()
    for query in ("deploy canary", "sessions redis", "数据库"):  # and a search's own
        result = app.searcher.search(SearchRequest(query=query, mode="hybrid"))
        assert result["hits"], query
    assert [s for s in pgconn._PREPARED if "ts_headline" in s]
