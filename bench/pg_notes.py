"""Whole-note BM25 on SQLite and on PostgreSQL, the same notes and questions: how alike they rank.

    python -m bench.pg_notes [--set NAME ...] [--dsn DSN] [--chunk-formula]

Each labelled set's notes are indexed (keywords only) into a SQLite store and a new PostgreSQL
database (`--dsn`, or an embedded server started for the run, bench/pgserver.py). For each
question, the any-word match that a hybrid search weighs whole notes by is scored over every
note on both backends (`notetext.note_bm25`), and the two orders compared over the notes both
score: how often the best note is the same, and the rank correlation (Spearman). With
`--chunk-formula`, PostgreSQL's side is the chunks' ranking applied to whole notes (IDF times
`ts_rank_cd` with normalisation 1 | 32, store/pg/fts.py) instead of BM25, for comparison
(BENCHMARKS.md, "PostgreSQL: a note ranked as a whole").
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench import run
from bench.quality import SETS, load_set

DATA = Path(__file__).parent / "data"


def _ranks(values: list[float]) -> np.ndarray:
    return np.argsort(np.argsort(np.array(values))).astype(float)


def spearman(a: list[float], b: list[float]) -> float:
    if len(a) < 3:
        return 1.0
    ra, rb = _ranks(a), _ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return 1.0
    return float(np.corrcoef(ra, rb)[0, 1])


def chunk_formula(con: Any, match: str) -> dict[int, float]:
    """The chunks' ranking (fts.weighted_rank's formula) over every whole note that matches."""
    from memoryd.store.pg import fts, notes

    leaves = fts.terms(match)
    if not leaves:
        return {}
    n, _ = notes.stats(con)
    q, qparams = fts.tsquery(match)
    parts, params = [], []
    for sql, ps in leaves:
        (df,) = con.execute(f"SELECT count(*) FROM notes_fts n WHERE n.fts @@ {sql}", ps).fetchone()
        parts.append(f"?::float8 * ts_rank_cd('{fts.WEIGHTS}'::real[], n.fts, {sql}, 33)")
        params += [fts.idf(max(n, int(df)), int(df)), *ps]
    return {
        int(i): float(s)
        for i, s in con.execute(
            f"SELECT n.document_id, -({' + '.join(parts)}) FROM notes_fts n WHERE n.fts @@ ({q})",
            [*params, *qparams],
        )
    }


def compare(name: str, dsn: str, chunks: bool) -> dict[str, Any]:
    from memoryd.index.embed import ModelHolder
    from memoryd.search.ftsquery import parse_query
    from memoryd.serve.app import App
    from memoryd.store import notetext

    ds = load_set(DATA / name)
    root = Path(tempfile.mkdtemp(prefix="mdpgn-", dir="/tmp"))
    ws = root / "ws"
    for rel, text in ds.notes.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text, encoding="utf-8")
    apps: dict[str, Any] = {}
    try:
        for backend, store in (("sqlite", {}), ("postgres", {"backend": "postgres", "dsn": dsn})):
            extra: dict[str, Any] = {"store": store} if store else {}
            cfg = run.make_config(root, data_dir=str(root / f"data-{backend}"), **extra)
            apps[backend] = app = App(cfg, model=ModelHolder(None, description="keywords only"))
            app.indexer.reconcile()
        same, rhos = 0, []
        for query in ds.queries.values():
            parsed = parse_query(query.text)
            match = parsed.match_any or parsed.match
            if not match:
                continue
            scored = {}
            for backend, app in apps.items():

                def read(con: Any, backend: str = backend, match: str = match) -> dict[str, float]:
                    paths = {
                        int(i): str(p) for i, p in con.execute("SELECT id, path FROM documents")
                    }
                    if backend == "postgres" and chunks:
                        s = chunk_formula(con, match)
                    else:
                        s = notetext.note_bm25(con, match, sorted(paths))[0]
                    return {paths[i]: v for i, v in s.items()}

                scored[backend] = app.store.read(read)
            a, b = scored["sqlite"], scored["postgres"]
            common = sorted(set(a) & set(b))
            if len(common) < 2:
                continue
            same += min(a, key=a.__getitem__) == min(b, key=b.__getitem__)
            rhos.append(spearman([a[k] for k in common], [b[k] for k in common]))
        return {
            "questions": len(rhos),
            "same_best": same / len(rhos) if rhos else 0.0,
            "spearman_median": statistics.median(rhos) if rhos else 0.0,
            "spearman_mean": statistics.mean(rhos) if rhos else 0.0,
        }
    finally:
        for app in apps.values():
            app.close()
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.pg_notes", description=__doc__)
    p.add_argument("--set", action="append", help="a set of bench/data (default: all)")
    p.add_argument("--dsn", help="PostgreSQL server (default: an embedded one for the run)")
    p.add_argument("--chunk-formula", action="store_true", help="PostgreSQL: the chunks' rank")
    args = p.parse_args(argv)
    from bench.pgserver import Server
    from memoryd.core import logsetup

    logsetup.configure("warning")
    server = Server(args.dsn)
    try:
        print("set         questions  same best note  Spearman median / mean")
        for name in args.set or SETS:
            r = compare(name, server.fresh(name), args.chunk_formula)
            print(
                f"{name:<11} {r['questions']:>9}  {r['same_best']:>14.2f}"
                f"  {r['spearman_median']:.3f} / {r['spearman_mean']:.3f}",
                flush=True,
            )
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
