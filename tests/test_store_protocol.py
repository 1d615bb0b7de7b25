"""Both stores implement memoryd.store.protocol.Store (mypy checks the methods' signatures where
open_store returns either as a Store; these tests check the objects at run time), and both
schemas have exactly the columns of store/tables.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryd.store import Connection, SqliteStore, Store, entries, one, tables
from memoryd.store.entries import NewMemory
from memoryd.text.markdown import sha256_text

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


@pytest.fixture
def store(tmp_path: Path, backend: str) -> Iterator[Store]:
    if backend == "postgres":
        import pgserver

        from memoryd.store.pg import PgSettings, PgStore

        dsn = pgserver.fresh_dsn("proto", migrated=True)
        pg = PgStore(PgSettings(dsn, "ws-proto", "test"))
        yield pg
        pg.close()
        pgserver.release(dsn)
        return
    lite = SqliteStore(tmp_path / "memoryd.db")
    yield lite
    lite.close()


def test_both_stores_are_a_store_with_their_capabilities(store: Store, backend: str) -> None:
    assert isinstance(store, Store)
    assert store.backend == backend
    assert store.shared is (backend == "postgres")  # several daemons share a server database
    assert store.file_backed is (backend == "sqlite")  # WAL, quick_check, file snapshots
    # SQLite: the searcher keeps the vectors in memory; PostgreSQL: the server's HNSW index
    # answers unless store.vector_cache (test_pg_sharedvec.py)
    assert (store.vector_index() is None) is (backend == "sqlite")
    assert store.info()["backend"] == backend
    store.on_change(lambda payload: None)  # accepted by both; only a shared store calls it
    with store.exclusive("job") as mine:
        assert mine is True  # the only daemon here


def test_connections_speak_the_connection_protocol(store: Store) -> None:
    text = "the protocol is the interface"
    new = NewMemory(content=text, content_hash=sha256_text(text), type="fact")
    with store.write(durable=True) as con:
        assert isinstance(con, Connection)
        assert con.in_transaction
        entry_id, dup = entries.insert_memory(con, new, 1.0)
        assert not dup
        con.execute("UPDATE entries SET importance = ? WHERE id = ?", (7, entry_id))
        assert con.changes() == 1

    def look(con: Connection) -> tuple[Any, ...]:
        assert isinstance(con, Connection)
        rows = con.execute("SELECT id, importance FROM entries ORDER BY id").fetchall()
        assert [tuple(r) for r in con.execute("SELECT id, importance FROM entries")] == [
            tuple(r) for r in rows
        ]
        assert con.execute("SELECT id FROM entries WHERE id = -1").fetchone() is None
        return one(con.execute("SELECT count(*), max(importance) FROM entries"))

    assert tuple(store.read(look)) == (1, 7)
    assert tuple(store.read(look, scope="all")) == (1, 7)  # every workspace: the same memory
    assert store.run_write(lambda con: con.execute("DELETE FROM entries").fetchall()) == []
    with pytest.raises(LookupError):
        store.read(lambda con: one(con.execute("SELECT id FROM entries")))


def _sqlite_columns(store: Store, table: str) -> tuple[str, ...]:
    return store.read(
        lambda con: tuple(str(r[1]) for r in con.execute(f"PRAGMA table_info({table})"))
    )


def _pg_columns(store: Store, table: str) -> tuple[str, ...]:
    return store.read(
        lambda con: tuple(
            str(r[0])
            for r in con.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND table_name = ?"
                " ORDER BY ordinal_position",
                (table,),
            )
        )
    )


def test_both_schemas_have_the_columns_of_the_one_list(store: Store, backend: str) -> None:
    entries_cols = tables.names(tables.ENTRIES)
    document_cols = tables.names(tables.DOCUMENTS)
    link_cols = tables.names(tables.LINKS)
    if backend == "sqlite":
        assert _sqlite_columns(store, "entries") == entries_cols
        assert _sqlite_columns(store, "documents") == document_cols
        assert _sqlite_columns(store, "links") == link_cols
        assert _sqlite_columns(store, "log_marks") == tables.names(tables.LOG_MARKS)
        return
    # (a column added later comes after the table's own: ALTER TABLE ... ADD COLUMN)
    created = tuple(c.name for c in tables.ENTRIES if c.added_by is None)
    later = tuple(c.name for c in tables.ENTRIES if c.added_by is not None)
    assert _pg_columns(store, "all_entries") == (*created, "workspace", "fts", *later)
    assert _pg_columns(store, "entries") == (*entries_cols, "workspace", "fts")
    assert _pg_columns(store, "all_documents") == (
        document_cols[0],
        "workspace",
        *document_cols[1:],
    )
    assert _pg_columns(store, "documents") == (*document_cols, "workspace")
    assert _pg_columns(store, "links") == link_cols
    assert _pg_columns(store, "log_marks") == tables.names(tables.LOG_MARKS)


def test_column_ddl_per_dialect() -> None:
    created = tables.create_columns(tables.ENTRIES, "postgres")
    assert "confidence DOUBLE PRECISION NOT NULL DEFAULT 1.0" in created
    assert "id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY" in created
    lite = tables.create_columns(tables.ENTRIES, "sqlite")
    assert "id INTEGER PRIMARY KEY AUTOINCREMENT" in lite
    later = tables.Column("later", "TEXT", "TEXT", added_by="sqlite m099, postgres v9")
    assert "later" not in tables.create_columns((*tables.ENTRIES, later), "sqlite")
    assert tables.table_name(3) == "vec_3"


def test_export_with_vectors_carries_each_memorys_vector(store: Store) -> None:
    """`export` with vectors asked the wrong module for a memory's vector (an AttributeError
    on every export that asked for vectors); the type checker found it."""
    import numpy as np

    from memoryd.memory import transfer
    from memoryd.store import vectors

    text = "vectors travel with their memory"
    h = sha256_text(text)
    vec = np.linspace(-1.0, 1.0, 8, dtype=np.float32)
    vec /= np.linalg.norm(vec)

    def setup(con: Connection) -> None:
        entries.insert_memory(con, NewMemory(content=text, content_hash=h, type="fact"), 1.0)
        model_id = vectors.ensure_model(con, "test-model", "test", 8, 1.0)
        vectors.store(con, model_id, [(h, vec)], 1.0)
        vectors.mark_complete(con, model_id)

    store.run_write(setup)
    (item,) = store.read(lambda con: list(transfer.export(con, with_vectors=True)))
    assert item["model"] == "test-model"
    assert np.allclose(item["vector"], vec, atol=1e-6)
    (plain,) = store.read(lambda con: list(transfer.export(con)))
    assert "vector" not in plain
