"""Issue 23.4: schema v7 keeps the tsvectors search reads row by row in their rows (STORAGE
MAIN on `all_entries.fts` and `notes_fts.fts`), and writes again the values an older database
had moved to the TOAST table: the same tsvectors, the same pools and whole-note scores."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import pytest

from memoryd.store.pg import PgSettings, PgStore, notes, pool, schema
from memoryd.store.protocol import Connection

VOCABULARY = [f"w{i}x{j}" for i in range(40) for j in range(40)]
WORDS = ["deploy", "cluster", "invoice"]


def _write(store: PgStore, seed: int) -> None:
    """Notes of long chunks (hundreds of distinct words: tsvectors of several KB, which the
    default storage moves out of the row) and short ones, each holding some query words."""
    rng = random.Random(seed)

    def write(con: Connection) -> None:
        for d in range(6):
            doc = con.execute(
                "INSERT INTO documents(path, sha256, size, mtime, indexed_at)"
                " VALUES (?, '', 0, 0, 0) RETURNING id",
                [f"n{seed}-{d}.md"],
            ).fetchall()[0][0]
            for i in range(4):
                n = rng.choice((5, 30, 400))
                text = " ".join([*rng.sample(WORDS, rng.randint(1, 3)), *rng.sample(VOCABULARY, n)])
                con.execute(
                    "INSERT INTO entries(kind, content, content_hash, type, tags, created_at,"
                    " updated_at, document_id, seq)"
                    " VALUES ('chunk', ?, ?, 'note', '[]', 0, 0, ?, ?)",
                    [text, hashlib.sha256(f"{seed}:{d}:{i}".encode()).hexdigest(), doc, i],
                )
        notes.fill(con)

    store.run_write(write)


def _state(store: PgStore) -> dict[str, Any]:
    def read(con: Connection) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for table, key in (("all_entries", "id"), ("notes_fts", "document_id")):
            out[table] = con.execute(
                f"SELECT {key}, fts::text, pg_column_toast_chunk_id(fts) IS NOT NULL,"
                f" pg_column_size(fts) FROM {table} ORDER BY {key}"
            ).fetchall()
            out[f"{table} storage"] = con.execute(
                "SELECT attstorage FROM pg_attribute WHERE attrelid = ?::regclass"
                " AND attname = 'fts'",
                [table],
            ).fetchall()[0][0]
        match = '"deploy" OR "cluster" OR "invoice"'
        out["pool"] = pool.keyword_pool(con, match, "TRUE", [], 20)
        docs = [int(r[0]) for r in out["notes_fts"]]
        out["notes"] = notes.note_bm25(con, match, docs)
        return out

    return store.read(read)


def test_an_older_database_keeps_its_tsvectors_in_the_rows_after_v7(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import migrations_before

    migrations_before(monkeypatch, schema, schema._v7_inline_fts)  # and today's writes in v6's
    s = PgStore(PgSettings(pg_dsn, "ws", "test:ws"))
    try:
        _write(s, 1)
        before = _state(s)
    finally:
        s.close()
    assert any(out for _, _, out, _ in before["all_entries"])  # the old storage moved some
    assert any(out for _, _, out, _ in before["notes_fts"])
    monkeypatch.undo()
    s = PgStore(PgSettings(pg_dsn, "ws", "test:ws"))
    try:
        after = _state(s)
        _write(s, 2)  # written at v7
        later = _state(s)
    finally:
        s.close()
    for table in ("all_entries", "notes_fts"):
        assert after[f"{table} storage"] == "m"
        # the same tsvectors, each in its row unless too large for a page
        assert [r[:2] for r in after[table]] == [r[:2] for r in before[table]]
        assert not [r for r in after[table] if r[2] and r[3] < 7000]
        assert not [r for r in later[table] if r[2] and r[3] < 7000]
    assert after["pool"] == before["pool"] and after["pool"]
    assert after["notes"] == before["notes"] and after["notes"][0]
