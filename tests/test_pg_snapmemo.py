"""PostgreSQL's data version (store/connmemo.py, store/pg/conn.py): a read-only transaction's
snapshot, read with its BEGIN. Values kept under it hold exactly while nothing is committed:
another daemon's write, this store's own write, a write that is still open when the value is
read and commits later; a write's connection keeps nothing. The vector counts and the active
model, which search asks for, are kept under it and stay exact."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from conftest import pg_stores

from memoryd.store import entries, vectors
from memoryd.store.connmemo import PerVersion, data_version


@pytest.fixture
def stores(pg_dsn: str) -> Iterator[tuple[Any, ...]]:
    with pg_stores(pg_dsn, "ws-a", "ws-b") as two:
        yield two


def _note(store: Any, path: str, texts: list[str]) -> None:
    doc = entries.DocumentInfo(path, "x" + path, 1, 1.0)
    chunks = [entries.NewChunk(i, t, t, (), 1, 1) for i, t in enumerate(texts)]
    store.run_write(
        lambda con: entries.replace_document(
            con, doc, chunks, type_="note", tags=[], importance=5, expires_at=None, now=1.0
        )
    )


# PostgreSQL's snapshot is the whole server's: any transaction that takes an id (another
# database's write, autovacuum's analyze) moves it. A check that needs two reads under one
# snapshot is tried again until nothing committed between them; it still fails if that never
# happens (a version that changed with no commit, say).
TRIES = 50


def _under_one_snapshot(pair: Any) -> Any:
    """pair() -> (same_snapshot, result), until same_snapshot; its result."""
    for _ in range(TRIES):
        same, result = pair()
        if same:
            return result
    raise AssertionError(f"no two reads under one snapshot in {TRIES} tries")


def test_the_version_holds_while_nothing_is_committed(stores: tuple[Any, Any]) -> None:
    a, b = stores

    def read_twice() -> tuple[bool, str]:
        first, again = a.read(data_version), a.read(data_version, scope="all")
        return first == again, first  # the scope is its own memo, same data

    first = _under_one_snapshot(read_twice)
    assert isinstance(first, str)
    _note(b, "other.md", ["another daemon's note"])  # another daemon commits
    second = a.read(data_version)
    assert second != first
    _note(a, "own.md", ["this daemon's own note"])
    assert a.read(data_version) != second
    with a.write() as con:  # a write remembers nothing
        assert data_version(con) is None


def test_a_value_is_filed_under_the_snapshot_it_was_read_in(stores: tuple[Any, Any]) -> None:
    """A write that commits while a read is open: what the read counted is filed under the
    read's snapshot, which the next read no longer has."""
    a, b = stores
    memo: PerVersion[int] = PerVersion(4)

    def count(con: Any) -> int:
        n = int(con.execute("SELECT count(*) FROM entries").fetchall()[0][0])
        late = entries.NewMemory("late", "h-late", "fact")  # a memory: every workspace sees it
        b.run_write(lambda wcon: entries.insert_memory(wcon, late, 1.0))
        memo.put(con, data_version(con), "n", n)
        return n

    assert a.read(count) == 0
    found = a.read(lambda con: memo.get(con, data_version(con), "n"))
    assert found == (False, None)
    assert a.read(lambda con: con.execute("SELECT count(*) FROM entries").fetchall()[0][0]) == 1


def test_an_open_write_commits_later(stores: tuple[Any, Any]) -> None:
    """A write still open when the value is read (its rows not in the snapshot) changes the
    version when it commits."""
    a, b = stores
    memo: PerVersion[int] = PerVersion(4)
    with b.write() as con:
        con.execute(
            "INSERT INTO entries(kind, content, content_hash, type, created_at, updated_at)"
            " VALUES ('memory', 'open', 'h-open', 'fact', 1, 1)"
        )

        def remember(rcon: Any) -> None:
            n = int(rcon.execute("SELECT count(*) FROM entries").fetchall()[0][0])
            memo.put(rcon, data_version(rcon), "n", n)

        def remembered() -> tuple[bool, Any]:
            filed = a.read(lambda rcon: (remember(rcon), data_version(rcon))[1])
            return a.read(lambda rcon: (data_version(rcon) == filed, memo.get(rcon, filed, "n")))

        assert _under_one_snapshot(remembered) == (True, 0)
    assert a.read(lambda rcon: memo.get(rcon, data_version(rcon), "n")) == (False, None)


def test_counts_and_the_active_model_stay_exact(stores: tuple[Any, Any]) -> None:
    a, b = stores
    _note(a, "a.md", ["alpha one", "alpha two"])
    _note(b, "b.md", ["beta one"])  # another workspace's note: not a's to count
    model = a.run_write(lambda con: vectors.ensure_model(con, "k", "m", 4, 1.0))
    assert a.read(vectors.active_model) is None  # not complete yet
    assert a.read(lambda con: vectors.counts(con, model)) == {
        "done": 0,
        "pending": 2,
        "stored": 0,
    }
    statements: list[str] = []

    def counted(con: Any) -> dict[str, int]:
        real = con.execute

        def spy(sql: str, params: Any = None) -> Any:
            statements.append(sql)
            return real(sql, params)

        con.execute = spy
        return vectors.counts(con, model)

    def counted_again() -> tuple[bool, dict[str, int]]:
        filed = a.read(lambda con: (vectors.counts(con, model), data_version(con))[1])
        statements.clear()
        return a.read(lambda con: (data_version(con) == filed, counted(con)))

    assert _under_one_snapshot(counted_again)["pending"] == 2
    assert statements == []  # nothing committed since: from memory
    vec = np.ones(4, dtype=np.float32)
    hashes = [h for (h,) in a.read(lambda con: con.execute("SELECT content_hash FROM entries"))]
    a.run_write(lambda con: vectors.store(con, model, [(hashes[0], vec)], 2.0))
    assert a.read(lambda con: vectors.counts(con, model)) == {
        "done": 1,
        "pending": 1,
        "stored": 1,
    }
    b.run_write(lambda con: vectors.store(con, model, [(hashes[1], vec)], 2.0))  # another daemon
    assert a.read(lambda con: vectors.counts(con, model))["pending"] == 0
    a.run_write(lambda con: vectors.mark_complete(con, model))
    assert a.read(vectors.active_model) == (model, "k", 4)
    assert b.read(vectors.active_model) == (model, "k", 4)
    b.run_write(lambda con: con.execute("UPDATE models SET complete = 0"))
    assert a.read(vectors.active_model) is None


def test_the_evidence_words_in_one_statement(stores: tuple[Any, Any]) -> None:
    """searchsql.matching after remember_matches: every noted word answered by the first
    statement, each word's rows as asked alone; asked again, or for fewer ids, the read
    knows the answer (PgConnection.held: one snapshot)."""
    from memoryd.store import searchsql
    from memoryd.store.pg import held

    a, _ = stores
    texts = ["apple pie", "apple tart", "pear tart", "plum jam", "the and of"]
    _note(a, "fruit.md", texts)
    ids = [int(i) for (i,) in a.read(lambda con: con.execute("SELECT id FROM entries"))]
    words = ['"apple"', '"tart"', '"plum"', '"the"', '"kiwi"']
    alone = {w: a.read(lambda con, w=w: held.matching(con, w, ids)) for w in words}
    assert alone['"apple"'] and alone['"tart"'] and not alone['"kiwi"'] and not alone['"the"']
    statements: list[str] = []

    def together(con: Any) -> dict[str, set[int]]:
        real = con.execute

        def spy(sql: str, params: Any = None) -> Any:
            statements.append(sql)
            return real(sql, params)

        con.execute = spy
        for w in words:
            searchsql.remember_matches(con, w)
        out = {w: searchsql.matching(con, w, ids) for w in words}
        out['"apple" again'] = searchsql.matching(con, '"apple"', ids)  # asked twice: known
        out["fewer ids"] = searchsql.matching(con, '"tart"', ids[:2])
        return out

    got = a.read(together)
    assert {w: got[w] for w in words} == alone
    assert got['"apple" again'] == alone['"apple"']
    assert got["fewer ids"] == alone['"tart"'] & set(ids[:2])
    assert len(statements) == 1


def test_n_of_the_idf_comes_with_the_begin(stores: tuple[Any, Any], pg_dsn: str) -> None:
    """N of the keyword IDF (store/pg/fts.py): read with a read's BEGIN where it is the
    planner's estimate (10,000 entries or more), the same as N_SQL; counted below."""
    import psycopg

    from memoryd.store.pg import fts

    a, _ = stores
    _note(a, "n.md", ["one", "two", "three"])

    def n(con: Any) -> tuple[int | None, int, int]:
        preset = con.n
        exact = int(con.execute(f"SELECT {fts.N_SQL}").fetchall()[0][0])
        return preset, fts.entry_count(con), exact

    assert a.read(n) == (None, 3, 3)  # a small store: counted, when asked
    with psycopg.connect(pg_dsn, autocommit=True) as admin:  # the planner's estimate, as large
        admin.execute("UPDATE pg_class SET reltuples = 12345 WHERE oid = 'all_entries'::regclass")
    assert a.read(n) == (12345, 12345, 12345)
    assert a.read(n, scope="all") == (12345, 12345, 12345)
