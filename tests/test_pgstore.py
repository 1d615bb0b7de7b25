"""The PostgreSQL store itself: schema, workspace keying, dedup by unique index, advisory locks."""

from __future__ import annotations

from typing import Any

import pytest

from memoryd.store.entries import NewMemory, insert_memory


def _store(dsn: str, workspace: str) -> Any:
    from memoryd.store.pg import PgSettings, PgStore

    return PgStore(PgSettings(dsn, workspace, f"test:{workspace}"))


def test_two_workspaces_share_memories_not_documents(pg_dsn: str) -> None:
    from memoryd.store import entries

    a, b = _store(pg_dsn, "ws-a"), _store(pg_dsn, "ws-b")
    try:
        doc = entries.DocumentInfo("notes/todo.md", "x", 1, 1.0)
        for store, text in ((a, "alpha"), (b, "beta")):
            chunk = entries.NewChunk(0, text, text, (), 1, 1)
            store.run_write(
                lambda con, c=chunk: entries.replace_document(
                    con, doc, [c], type_="note", tags=[], importance=5, expires_at=None, now=1.0
                )
            )
        mem = NewMemory("shared fact", "h1", "fact")
        a.run_write(lambda con: insert_memory(con, mem, 1.0))
        ida, dup_a = a.run_write(lambda con: insert_memory(con, mem, 1.0))
        idb, dup_b = b.run_write(lambda con: insert_memory(con, mem, 1.0))
        assert (ida, dup_a) == (idb, dup_b) and dup_b
        for store, text in ((a, "alpha"), (b, "beta")):
            chunks = store.read(lambda con: entries.document_chunks(con, "notes/todo.md"))
            assert [c["content"] for c in chunks] == [text]
            counts = store.read(entries.counts)
            assert counts == {"memories": 1, "documents": 1, "chunks": 1}
        everything = a.read(lambda con: entries.counts(con), scope="all")
        assert everything["documents"] == 2 and everything["chunks"] == 2
    finally:
        a.close()
        b.close()


def test_duplicate_memories_are_refused_by_the_database(pg_dsn: str) -> None:
    import psycopg

    a = _store(pg_dsn, "ws-a")
    try:
        a.run_write(lambda con: insert_memory(con, NewMemory("x", "hx", "fact"), 1.0))
        with pytest.raises(psycopg.errors.UniqueViolation):
            a.run_write(
                lambda con: con.execute(
                    "INSERT INTO entries(kind, content, content_hash, type, created_at,"
                    " updated_at) VALUES ('memory', 'x', 'hx', 'fact', 1, 1)"
                )
            )
    finally:
        a.close()


def test_only_one_daemon_holds_a_job_lock(pg_dsn: str) -> None:
    a, b = _store(pg_dsn, "ws-a"), _store(pg_dsn, "ws-b")
    try:
        with a.exclusive("expiry") as got_a, b.exclusive("expiry") as got_b:
            assert got_a and not got_b
        with b.exclusive("expiry") as again:
            assert again
    finally:
        a.close()
        b.close()


def test_workspace_id_is_made_once_and_kept(tmp_path: Any) -> None:
    from memoryd.core.config import Config
    from memoryd.store.backend import workspace_id

    cfg = Config.from_dict(
        {"workspace": str(tmp_path / "ws"), "data_dir": str(tmp_path / "d"), "socket": "/tmp/x"}
    )
    first = workspace_id(cfg)
    assert first == workspace_id(cfg)
    assert (tmp_path / "d" / "workspace-id").stat().st_mode & 0o777 == 0o600
    pinned = Config.from_dict(
        {
            "workspace": str(tmp_path / "ws"),
            "data_dir": str(tmp_path / "d"),
            "socket": "/tmp/x",
            "store": {"workspace_id": "laptop-1"},
        }
    )
    assert workspace_id(pinned) == "laptop-1"


def test_a_password_in_the_dsn_is_refused() -> None:
    from memoryd.core.config import Config
    from memoryd.core.errors import ConfigError

    for dsn in ("postgresql://u:secret@h/db", "host=h password=secret dbname=x"):
        with pytest.raises(ConfigError, match="password"):
            Config.from_dict({"store": {"backend": "postgres", "dsn": dsn}})
    Config.from_dict({"store": {"backend": "postgres", "dsn": "postgresql://u@h/db"}})


def test_a_connection_lost_at_commit_says_the_change_may_not_be_stored(pg_dsn: str) -> None:
    """The server may or may not have committed when the connection breaks at COMMIT: the
    error says so (and that a retry is safe), instead of claiming nothing was written."""
    import psycopg

    from memoryd.core.errors import StoreUnavailable

    store = _store(pg_dsn, "ws-a")
    try:
        lost = pytest.raises(StoreUnavailable, match="may or may not be stored")
        with lost, store.write() as con:
            insert_memory(con, NewMemory("lost at commit", "hl", "fact"), 1.0)
            pid = con.execute("SELECT pg_backend_pid()").fetchone()[0]
            with psycopg.connect(pg_dsn, autocommit=True) as other:
                other.execute("SELECT pg_terminate_backend(%s)", [pid])
        found = store.read(lambda con: con.execute("SELECT count(*) FROM entries").fetchone())
        assert found == (0,)  # the server rolled the transaction back with the session
    finally:
        store.close()
