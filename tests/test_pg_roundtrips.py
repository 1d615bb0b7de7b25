"""The PostgreSQL store's round trips: the pool lends a connection without a check of its own
(store/pg/__init__.py, `_first`), so a connection the server dropped while it was idle in the
pool must still never fail a request: its first statement fails, and runs again on another."""

from __future__ import annotations

from typing import Any

import psycopg
from conftest import DEADLINE_S

from memoryd.store import entries


def test_connections_the_server_dropped_are_replaced(pg_dsn: str) -> None:
    from memoryd.store.pg import PgSettings, PgStore

    store = PgStore(PgSettings(pg_dsn, "ws", "test:ws", pool_min=3, pool_max=3))
    try:
        store.pool.wait(timeout=DEADLINE_S)
        mem = entries.NewMemory("kept across dropped connections", "h-kept", "fact")
        store.run_write(lambda con: entries.insert_memory(con, mem, 1.0))
        for i in range(2):
            with psycopg.connect(pg_dsn, autocommit=True) as admin:
                dropped = admin.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    " AND state = 'idle' AND query NOT ILIKE 'LISTEN%'"
                ).fetchall()[0][0]
            assert dropped >= 1
            assert store.read(lambda con: entries.counts(con))["memories"] == 1 + i
            assert store.ping()["ok"] is True
            with store.exclusive("job") as got:
                assert got
            more = entries.NewMemory(f"written after {dropped} were dropped", f"h{i}", "fact")
            store.run_write(lambda con, m=more: entries.insert_memory(con, m, 2.0))
            assert store.down_since is None
        assert store.read(lambda con: entries.counts(con))["memories"] == 3
    finally:
        store.close()


def test_a_read_in_every_workspace_sees_them(pg_dsn: str) -> None:
    """scope="all" rides on the read's first statement."""
    from memoryd.store.pg import PgSettings, PgStore

    a = PgStore(PgSettings(pg_dsn, "ws-a", "test:a"))
    b = PgStore(PgSettings(pg_dsn, "ws-b", "test:b"))
    try:
        for store, path in ((a, "a.md"), (b, "b.md")):
            doc = entries.DocumentInfo(path, "x", 1, 1.0)
            chunk = entries.NewChunk(0, path, path, (), 1, 1)
            store.run_write(
                lambda con, d=doc, c=chunk: entries.replace_document(
                    con, d, [c], type_="note", tags=[], importance=5, expires_at=None, now=1.0
                )
            )

        def scope(con: Any) -> tuple[str, int]:
            row = con.execute(
                "SELECT coalesce(current_setting('memoryd.scope', true), ''), count(*) FROM entries"
            ).fetchall()[0]
            return str(row[0]), int(row[1])

        assert a.read(scope, scope="all") == ("all", 2)
        assert a.read(scope) == ("", 1)
        with a.write(scope="all") as con:
            assert scope(con) == ("all", 2)
    finally:
        a.close()
        b.close()


def test_warm_prewarms_the_vectors_where_pg_prewarm_is_installed(pg_dsn: str) -> None:
    import numpy as np

    from memoryd.store import vectors
    from memoryd.store.pg import PgSettings, PgStore
    from memoryd.store.pg import vectors as pgvec

    store = PgStore(PgSettings(pg_dsn, "ws", "test:ws", vector_cache=False))
    try:
        index = store.vector_index()
        assert isinstance(index, pgvec.PgVectorIndex)
        store.read(index.warm)  # no model yet: nothing to do
        model = store.run_write(lambda con: vectors.ensure_model(con, "k", "m", 4, 1.0))
        vec = np.ones(4, dtype=np.float32)
        store.run_write(lambda con: vectors.store(con, model, [("h", vec)], 1.0))
        store.run_write(lambda con: vectors.mark_complete(con, model))
        assert store.read(pgvec.prewarm) == []  # the extension is not installed
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute("CREATE EXTENSION pg_prewarm")
        table = vectors.table_name(model)
        assert store.read(pgvec.prewarm) == [f"{table}_hnsw", table]
        store.read(index.warm)
    finally:
        store.close()


def test_knn_and_its_entries_in_one_statement(make_app: Any, pg_dsn: str) -> None:
    """PgVectorIndex.knn_entries: what knn and then entries_with_hashes answer, under filters
    on the entries and on their documents."""
    import time

    import numpy as np
    from conftest import settle

    from memoryd.store import searchsql, vectors
    from memoryd.store.entries import Filters, filter_sql
    from memoryd.store.pg.vectors import PgVectorIndex

    app = make_app(store={"backend": "postgres", "dsn": pg_dsn})
    for rel, text in {
        "ops/deploy.md": "# Deploy\n\nWe deploy the api with blue green releases.\n",
        "proj/alpha/auth.md": "# Auth\n\nSessions expire after twelve hours.\n",
        "proj/beta/cache.md": "# Cache\n\nRedis keeps hot sessions.\n",
        "proj/beta/copy.md": "# Cache\n\nRedis keeps hot sessions.\n",  # the same text twice
    }.items():
        path = app.cfg.workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    app.indexer.reconcile()
    app.memories.add("Sessions are stored in redis", tags=["cache"], namespace="team")
    settle(app)
    index = PgVectorIndex()  # the server's HNSW index (store.vector_cache = false)
    model_id, _, dim = app.store.read(vectors.active_model)
    query = np.random.default_rng(3).normal(size=dim).astype(np.float32)
    now = time.time()
    for filters in (
        Filters(),
        Filters(path_prefix="proj/beta"),
        Filters(namespace="team", kind="memory"),
        Filters(tags=("cache",)),
        Filters(path_prefix="nowhere"),
    ):
        flt = filter_sql(filters, now, wide=True)
        for k in (1, 3, 200):

            def apart(con: Any, k: int = k, flt: Any = flt) -> Any:
                near = index.knn(con, model_id, dim, query, k)
                found = searchsql.entries_with_hashes(con, [h for h, _ in near], *flt)
                return near, sorted(found)

            def together(con: Any, k: int = k, flt: Any = flt) -> Any:
                near, found = index.knn_entries(con, model_id, query, k, flt)
                return near, sorted(found)

            assert app.store.read(together) == app.store.read(apart), (filters, k)
