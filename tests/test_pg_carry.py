"""Issue 23.4: a hybrid search's vector pool, read on its own connection, takes the search
read's snapshot (PgStore.read `export` / `snapshot`), and its k-NN statement reads what the
search asks of its entries next (lengths, signal columns, which hold each query word:
store/pg/held.py `carry`); the search's read keeps that only when both saw the same snapshot,
and then makes no read-ahead statement of its own. The answers are those of the search that
reads them itself."""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import SEARCH_QUERIES, pg_search_app

QUERIES = SEARCH_QUERIES
READ_AHEAD = "SELECT e.id, length(e.content)"  # held.read_ahead's statement


@pytest.fixture
def app(make_app: Any, pg_dsn: str) -> Any:
    return pg_search_app(make_app, pg_dsn)


def _count(con: Any) -> int:
    return int(con.execute("SELECT count(*) FROM entries").fetchone()[0])


def test_a_read_takes_another_reads_snapshot(app: Any) -> None:
    store = app.store
    names: list[str] = []

    def first(con: Any) -> tuple[str, int, tuple[str, int]]:
        assert con.exported
        names.append(con.exported)
        before = _count(con)
        app.memories.add("A memory written while the search reads", namespace="team")
        beside = store.read(lambda other: (other.version, _count(other)), snapshot=con.exported)
        return con.version, before, beside

    version, before, (their_version, their_count) = store.read(first, export=True)
    assert their_version == version and their_count == before  # the write is not in it
    now = store.read(_count)
    assert now == before + 1
    # the exporting read has ended (its ROLLBACK is sent on the ender thread: waited for
    # here): its name is no snapshot now, and a read takes its own
    if store._ender is not None:
        store._ender.submit(lambda: None).result(timeout=30)
    assert store.read(_count, snapshot=names[0]) == now
    assert store.read(_count, snapshot="not a snapshot's name") == now


def test_carried_rows_of_another_snapshot_are_not_kept(app: Any) -> None:
    from memoryd.search.ftsquery import quote_term
    from memoryd.store import searchrows
    from memoryd.store.pg import held

    words = [quote_term(w) for w in ("deploy", "canary")]

    def vector_side(con: Any) -> Any:
        searchrows.note_ahead(con, words)
        ids = [int(r[0]) for r in con.execute("SELECT id FROM entries")]
        held.carry(con, held.carry_sql(con)[3], _carry_rows(con, ids))  # type: ignore[index]
        return searchrows.carried(con)

    def search_side(con: Any, found: Any) -> tuple[bool, Any]:
        seen: dict[int, Any] = {}
        return searchrows.adopt_carried(con, found, seen), seen

    def same(con: Any) -> tuple[bool, Any]:
        found = app.store.read(vector_side, snapshot=con.exported)
        return search_side(con, found)

    kept, seen = app.store.read(same, export=True)
    assert kept and seen

    def other(con: Any) -> tuple[bool, Any]:
        app.memories.add("Another memory, written between the two reads", namespace="team")
        found = app.store.read(vector_side)  # a snapshot of its own: the write is in it
        return search_side(con, found)

    kept, seen = app.store.read(other)
    assert not kept and not seen


def _carry_rows(con: Any, ids: list[int]) -> list[tuple[Any, ...]]:
    """(id, length, *signal columns, *tests) as knn_entries reads them (held.carry_sql)."""
    from memoryd.store.pg import held

    sql = held.carry_sql(con)
    assert sql is not None
    cols, source, params, _ = sql
    rows = con.execute(
        f"SELECT e.id{cols} FROM {source}entries e WHERE e.id = ANY(?)", [*params, ids]
    ).fetchall()
    return [tuple(r) for r in rows]


def test_a_hybrid_search_reads_nothing_ahead_and_answers_the_same(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.search.searcher import SearchRequest
    from memoryd.store import searchrows
    from memoryd.store.pg.conn import PgConnection

    statements: list[str] = []
    real = PgConnection.execute

    def spy(self: PgConnection, sql: str, params: Any = None) -> Any:
        statements.append(re.sub(r"\s+", " ", sql))
        return real(self, sql, params)

    def answers() -> list[dict[str, Any]]:
        out = []
        for query in QUERIES:
            for mode in ("hybrid", "auto", "vector"):
                for group in ("note", "none"):
                    req = SearchRequest(query=query, mode=mode, group=group, explain=True)
                    found = app.searcher.search(req)
                    found.pop("took_ms")
                    out.append(found)
        return out

    app.searcher.clock = lambda: 2e9  # the memories' decay: answers a minute apart compare equal
    answers()  # the figures searches remember
    monkeypatch.setattr(PgConnection, "execute", spy)
    carried = answers()
    assert not [s for s in statements if s.startswith(READ_AHEAD)]
    knn = [s for s in statements if s.startswith("WITH n AS MATERIALIZED")]
    assert knn and all("length(e.content)" in s for s in knn)  # the k-NN's statement
    statements.clear()
    # without the k-NN carrying them: the search reads them ahead itself, the same answers
    monkeypatch.setattr(searchrows, "note_ahead", lambda con, matches: None)
    assert answers() == carried
    assert [s for s in statements if s.startswith(READ_AHEAD)]


def test_a_snapshot_whose_read_is_ending_is_not_an_error(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the end of the exporting transaction and the removal of its snapshot's file,
    PostgreSQL answers an import with "the source process ... is not running anymore"
    (ObjectNotInPrerequisiteState): a snapshot no longer there, like an unknown name, so the
    read takes its own (it was a StoreError, once in ~5 runs of the test above)."""
    import psycopg

    store = app.store
    real = store._read
    refused: list[str] = []

    def ending(fn: Any, scope: Any, export: bool, snapshot: Any, began: list[bool]) -> Any:
        if snapshot is not None:
            refused.append(snapshot)
            raise psycopg.errors.ObjectNotInPrerequisiteState("could not import the snapshot")
        return real(fn, scope, export, snapshot, began)

    monkeypatch.setattr(store, "_read", ending)
    assert store.read(_count, snapshot="00000003-00000010-1") == store.read(_count)
    assert refused == ["00000003-00000010-1"]
