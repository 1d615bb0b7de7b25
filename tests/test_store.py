"""The store: schema, durability settings, triggers, concurrency. The tests of the store
interface run on SQLite and PostgreSQL; those of the SQLite file, WAL and FTS5 on SQLite only."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import DEADLINE_S

from memoryd.store import SqliteStore, Store, entries, vectors
from memoryd.store.entries import DocumentInfo, Filters, NewChunk, NewMemory
from memoryd.store.migrations import MIGRATIONS, schema_version
from memoryd.text.markdown import sha256_text

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def mem(text: str, **kw: object) -> NewMemory:
    return NewMemory(content=text, content_hash=sha256_text(text), type="fact", **kw)  # type: ignore[arg-type]


def fts_ids(store: Store, match: str) -> list[int]:
    return store.read(
        lambda con: [
            r[0]
            for r in con.execute(
                "SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? ORDER BY rowid", (match,)
            )
        ]
    )


@pytest.fixture
def store(tmp_path: Path, backend: str):
    if backend == "postgres":
        import pgserver

        from memoryd.store.pg import PgSettings, PgStore

        dsn = pgserver.fresh_dsn("store", migrated=True)
        s = PgStore(PgSettings(dsn, "ws-test", "test"))
        yield s
        s.close()
        pgserver.release(dsn)
        return
    s = SqliteStore(tmp_path / "data" / "memoryd.db")
    yield s
    s.close()


@pytest.mark.sqlite_only("the SQLite file's mode, WAL and user_version")
def test_new_database_is_private_wal_and_migrated(store: Store) -> None:
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    con = store.reader()
    assert con.execute("PRAGMA journal_mode").fetchall()[0][0] == "wal"
    assert schema_version(con) == len(MIGRATIONS)
    assert store.vec_enabled


@pytest.mark.sqlite_only("SQLite's page cache")
def test_readers_keep_a_small_page_cache_and_the_writer_the_default(tmp_path: Path) -> None:
    # each reading thread opens a reader: 512 KB each, not SQLite's 2 MB (issue 23.2)
    s = SqliteStore(tmp_path / "m.db")
    try:
        assert s.reader().execute("PRAGMA cache_size").fetchall()[0][0] == -512
        with s.write() as con:
            assert con.execute("PRAGMA cache_size").fetchall()[0][0] == -2000
    finally:
        s.close()


@pytest.mark.sqlite_only("reopens the SQLite file")
def test_reopening_keeps_data_and_does_not_migrate_again(tmp_path: Path) -> None:
    s = SqliteStore(tmp_path / "m.db")
    s.run_write(lambda con: entries.insert_memory(con, mem("kept across restarts"), 1.0))
    s.close()
    s2 = SqliteStore(tmp_path / "m.db")
    try:
        assert s2.read(entries.counts)["memories"] == 1
    finally:
        s2.close()


def test_identical_memory_returns_existing_id(store: Store) -> None:
    a, dup_a = store.run_write(lambda con: entries.insert_memory(con, mem("same text"), 1.0))
    b, dup_b = store.run_write(lambda con: entries.insert_memory(con, mem("same text"), 2.0))
    c, _ = store.run_write(
        lambda con: entries.insert_memory(con, mem("same text", namespace="other"), 2.0)
    )
    assert (a, dup_a, dup_b) == (b, False, True)
    assert c != a  # namespaces do not mix


@pytest.mark.sqlite_only(
    "reads entries_fts, SQLite's FTS5 table (PostgreSQL's tsvector: test_search)"
)
def test_fts_follows_inserts_updates_deletes_and_document_cascade(store: Store) -> None:
    mid, _ = store.run_write(lambda con: entries.insert_memory(con, mem("zebra crossing"), 1.0))
    assert fts_ids(store, "zebra") == [mid]
    store.run_write(
        lambda con: entries.update_memory(
            con,
            mid,
            {"content": "giraffe crossing", "content_hash": sha256_text("giraffe crossing")},
            2.0,
        )
    )
    assert fts_ids(store, "zebra") == [] and fts_ids(store, "giraffe") == [mid]

    doc = DocumentInfo("notes/a.md", "h1", 10, 1.0)
    chunk = NewChunk(0, "okapi habitat", sha256_text("okapi habitat"), ("Animals",), 1, 3)
    store.run_write(
        lambda con: entries.replace_document(
            con, doc, [chunk], type_="note", tags=["zoo"], importance=5, expires_at=None, now=1.0
        )
    )
    assert len(fts_ids(store, "okapi")) == 1
    assert len(fts_ids(store, "animals")) == 1  # heading path is indexed
    store.run_write(lambda con: entries.delete_document(con, "notes/a.md"))
    assert fts_ids(store, "okapi") == []  # cascade fired the delete trigger
    store.run_write(lambda con: entries.delete_memory(con, mid))
    assert fts_ids(store, "giraffe") == []
    integrity = store.run_write(
        lambda con: con.execute(
            "INSERT INTO entries_fts(entries_fts, rank) VALUES ('integrity-check', 1)"
        ).fetchall()
    )
    assert integrity == []


def test_chunks_cannot_be_deleted_or_updated_as_memories(store: Store) -> None:
    from memoryd.core.errors import InvalidInput

    doc = DocumentInfo("a.md", "h", 1, 1.0)
    store.run_write(
        lambda con: entries.replace_document(
            con,
            doc,
            [NewChunk(0, "x", sha256_text("x"), (), 1, 1)],
            type_="note",
            tags=[],
            importance=5,
            expires_at=None,
            now=1.0,
        )
    )
    chunk_id = store.read(
        lambda con: con.execute("SELECT id FROM entries WHERE kind = 'chunk'").fetchall()[0][0]
    )
    with pytest.raises(InvalidInput, match="edit the file"):
        store.run_write(lambda con: entries.delete_memory(con, chunk_id))


def test_filters_sql(store: Store) -> None:
    now = 1000.0
    store.run_write(
        lambda con: entries.insert_memory(con, mem("alpha", tags=("a", "b"), importance=8), now)
    )
    store.run_write(
        lambda con: entries.insert_memory(
            con, mem("beta", tags=("a",), importance=3, expires_at=now - 1), now
        )
    )

    def ids(f: Filters) -> list[str]:
        items, _ = store.read(lambda con: entries.list_entries(con, f, now=now, limit=10, offset=0))
        return sorted(i["content"] for i in items)

    assert ids(Filters()) == ["alpha"]  # expired hidden
    assert ids(Filters(include_expired=True)) == ["alpha", "beta"]
    assert ids(Filters(tags=("a", "b"), include_expired=True)) == ["alpha"]  # all tags
    assert ids(Filters(min_importance=5, include_expired=True)) == ["alpha"]
    assert ids(Filters(kind="chunk")) == []


def test_write_rolls_back_on_error(store: Store) -> None:
    with pytest.raises(RuntimeError), store.write() as con:
        entries.insert_memory(con, mem("never stored"), 1.0)
        raise RuntimeError("boom")
    assert store.read(entries.counts)["memories"] == 0


@pytest.mark.sqlite_only(
    "holds a raw SQLite reader connection open (PostgreSQL's MVCC readers never block writers)"
)
def test_readers_do_not_block_the_writer(store: Store) -> None:
    con = store.reader()
    con.execute("BEGIN")
    con.execute("SELECT count(*) FROM entries").fetchall()  # holds a read snapshot
    done = threading.Event()

    def writer() -> None:
        store.run_write(lambda c: entries.insert_memory(c, mem("written while reading"), 1.0))
        done.set()

    t = threading.Thread(target=writer)
    t.start()
    assert done.wait(DEADLINE_S), "writer blocked by an open reader"
    t.join()
    assert con.execute("SELECT count(*) FROM entries").fetchall()[0][0] == 0  # snapshot
    con.execute("COMMIT")
    assert store.read(entries.counts)["memories"] == 1


def test_vectors_keyed_by_hash_and_model(store: Store, backend: str) -> None:
    model_id = store.run_write(lambda con: vectors.ensure_model(con, "m/3", "m", 3, 1.0))
    store.run_write(lambda con: entries.insert_memory(con, mem("one"), 1.0))
    pend = store.read(lambda con: vectors.pending(con, model_id, 10))
    assert [t for _, t in pend] == ["one"]
    v = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    assert store.run_write(lambda con: vectors.store(con, model_id, [(pend[0][0], v)], 1.0)) == 1
    assert store.run_write(lambda con: vectors.store(con, model_id, [(pend[0][0], v)], 1.0)) == 0
    assert store.read(lambda con: vectors.pending(con, model_id, 10)) == []
    near = store.read(lambda con: vectors.knn(con, model_id, v, 5))
    assert near[0][0] == pend[0][0] and near[0][1] == pytest.approx(0.0, abs=1e-6)
    # a second model with another dimension gets its own table; the first goes once complete
    other = store.run_write(lambda con: vectors.ensure_model(con, "n/4", "n", 4, 2.0))
    assert store.read(vectors.active_model) is None  # not complete yet: keyword mode
    store.run_write(lambda con: vectors.mark_complete(con, other))
    assert store.read(vectors.active_model) == (other, "n/4", 4)
    catalog = (
        "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'vec_%'"
        if backend == "postgres"
        else "SELECT name FROM sqlite_master WHERE name LIKE 'vec_%' AND type = 'table'"
    )
    tables = store.read(lambda con: [r[0] for r in con.execute(catalog)])
    assert f"vec_{model_id}" not in tables


def test_vector_gc_waits_for_the_grace_period(store: Store) -> None:
    model_id = store.run_write(lambda con: vectors.ensure_model(con, "m/3", "m", 3, 1.0))
    v = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    store.run_write(lambda con: vectors.store(con, model_id, [("orphan-hash", v)], 1.0))
    assert store.run_write(lambda con: vectors.gc(con, model_id, 100.0, 50.0)) == 0  # marked
    assert store.run_write(lambda con: vectors.gc(con, model_id, 120.0, 50.0)) == 0  # too soon
    assert store.run_write(lambda con: vectors.gc(con, model_id, 200.0, 50.0)) == 1


@pytest.mark.sqlite_only("copies the SQLite file (PgStore.backup_to refuses)")
def test_backup_is_a_consistent_private_copy(store: Store, tmp_path: Path) -> None:
    store.run_write(lambda con: entries.insert_memory(con, mem("backed up"), 1.0))
    target = tmp_path / "snap" / "copy.db"
    store.backup_to(target)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    copy = SqliteStore(target)
    try:
        rows = copy.read(lambda con: con.execute("SELECT content, tags FROM memories").fetchall())
        assert rows == [("backed up", json.dumps([]))]
    finally:
        copy.close()


@pytest.mark.sqlite_only("SQLite's quick_check and WAL checkpoint")
def test_quick_check_and_checkpoint(store: Store) -> None:
    assert store.quick_check() == []
    busy, _, _ = store.checkpoint("RESTART")
    assert busy == 0
