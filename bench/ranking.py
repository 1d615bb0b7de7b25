"""Fusion methods and the similarity floor, compared on every labelled set in bench/data.

    python -m bench.ranking [--sets a,b] [--root /tmp/memoryd-ranking] [--floors]

Each set is indexed once with the offline model into ROOT/<set> (kept, so a second run embeds
nothing). For every query the keyword and vector pools are taken once, as the daemon takes them,
and each fusion method ranks the same pools, so methods differ only in how they fuse. Methods:

- keyword / vector: one pool alone, grouped per note (each note at its best chunk's rank);
- chunk-rrf: RRF per chunk, partial keyword matches weighted 0.25, no floor (main before this
  change; the per-chunk hits are then reduced to notes for scoring);
- note-rrf: RRF per note, no floor;
- note-rrf-floor: the same, vector neighbours below the model's floor left out;
- note-strength: per-note RRF where the vector part is scaled by the similarity's strength
  (score-aware: a flat or low vector pool counts for little), with the floor (the default);
- note-rsf: relative score fusion per note (bm25 / best bm25, similarity strength), with floor.

Metrics per set and method: nDCG@10, Recall@10, MRR@10 over answerable queries (relevance at
note level), and "empty": the share of no-answer queries that return no hit at all.
`--floors` sweeps the floor instead and prints, per floor, Recall@10 and the no-answer share.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.quality import metrics  # nDCG/Recall/MRR@10, one definition for both benches

DATA = Path(__file__).parent / "data"


@dataclass
class LabelledSet:
    name: str
    notes: dict[str, str]  # corpus id (a path) -> markdown
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]  # answerable queries only
    no_answer: list[str]


def load_set(folder: Path) -> LabelledSet:
    """A BEIR folder: corpus.jsonl (notes written as <id>.md) or corpus/ (notes as they are)."""

    def jsonl(path: Path) -> list[dict[str, Any]]:
        return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]

    notes: dict[str, str] = {}
    if (folder / "corpus").is_dir():
        for p in sorted((folder / "corpus").rglob("*.md")):
            notes[p.relative_to(folder / "corpus").as_posix()] = p.read_text(encoding="utf-8")
    else:
        for d in jsonl(folder / "corpus.jsonl"):
            notes[f"{d['_id']}.md"] = f"# {d.get('title') or d['_id']}\n\n{d['text']}\n"
    raw = jsonl(folder / "queries.jsonl")
    queries = {q["_id"]: q["text"] for q in raw}
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, did, score = line.split("\t")[:3]
        did = did if did.endswith(".md") else f"{did}.md"
        if int(score) > 0:
            qrels.setdefault(qid, {})[did] = int(score)
    no_answer = [q["_id"] for q in raw if q.get("no_answer") or q["_id"] not in qrels]
    return LabelledSet(folder.name, notes, queries, qrels, no_answer)


def open_app(root: Path, ls: LabelledSet) -> Any:
    """An App over ROOT/<set> with the offline model, indexed and embedded (reused if there)."""
    from bench.run import make_config
    from memoryd.serve.app import App, default_model_holder

    cfg = make_config(root / ls.name)
    ws = cfg.workspace
    marker = root / ls.name / "built.json"
    if marker.exists() and json.loads(marker.read_text()) != sorted(ls.notes):
        shutil.rmtree(root / ls.name)
        cfg = make_config(root / ls.name)
        ws = cfg.workspace
    for rel, text in ls.notes.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        if not (ws / rel).exists() or (ws / rel).read_text(encoding="utf-8") != text:
            (ws / rel).write_text(text, encoding="utf-8")
    app = App(cfg, model=default_model_holder(cfg))
    app.indexer.reconcile()
    app.model.start()
    if not app.model.wait_ready(120):
        raise SystemExit(f"the offline model is needed: {app.model.reason}")
    app.embedder.run()
    marker.write_text(json.dumps(sorted(ls.notes)))
    return app


@dataclass
class Pools:
    keyword: list[Any]
    vector: list[Any]  # every neighbour, no floor applied
    scale: tuple[float, float]
    paths: dict[int, str]


def take_pools(app: Any, query: str, size: int = 200) -> Pools:
    """The two candidate pools exactly as Searcher builds them (before any floor)."""
    from memoryd.search.ftsquery import parse_query
    from memoryd.search.searcher import DEFAULT_SCALE
    from memoryd.store import entries
    from memoryd.store.entries import Filters

    s = app.searcher
    now = s.clock()
    qvec = app.model.embed_query(query)
    filters = Filters(namespace="default")
    where, params = entries.filter_sql(filters, now)

    def run(con: Any) -> Pools:
        parsed = parse_query(query)
        kw = s.keyword_candidates(con, parsed, where, params, size)
        vec, scale = s._vector_pool(con, qvec, filters, now, size)
        ids = [c.id for c in kw] + [c.id for c in vec]
        recs = entries.get_many(con, ids)
        paths = {i: r.get("path") or f"memory:{i}" for i, r in recs.items()}
        return Pools(kw, vec, scale or DEFAULT_SCALE, paths)

    return app.store.read(run)


def _copy(cands: list[Any]) -> list[Any]:
    return [replace(c, components={}, sections=[]) for c in cands]


def rank_notes(
    pools: Pools,
    method: str,
    settings: Any,
    floor: float | None = None,
    limit: int = 10,
    alone: float | None = None,
) -> list[str]:
    """Note paths, best first, as `method` ranks the pools."""
    from memoryd.search import ranking
    from memoryd.search import searcher as S

    scale = pools.scale if floor is None else (floor, pools.scale[1], pools.scale[2])
    if alone is not None:
        scale = (scale[0], scale[1], alone)
    kw, vec = _copy(pools.keyword), _copy(pools.vector)
    pool = S.MIN_POOL if method != "chunk-rrf" else limit * 4
    kw, vec = kw[:pool], vec[:pool]
    if method in ("note-rrf-floor", "note-strength", "note-rsf", "vector-floor"):
        vec = [c for c in vec if (c.similarity or 0) >= scale[0]]
    if method == "keyword":
        vec = []
    if method in ("vector", "vector-floor"):
        kw = []
    if method == "chunk-rrf":
        fused = ranking.rrf(
            [[(c.id, 0.25 if c.partial else 1.0) for c in kw], [c.id for c in vec]], 60, [1, 1]
        )
        order = sorted(fused, key=lambda i: (-fused[i], i))
        return _dedupe([pools.paths.get(i, "") for i in order])[:limit]
    st = replace_settings(settings, method)
    if method in ("note-rrf", "vector", "keyword"):
        scale = (-1.0, -1.0 + 1e-9, -1.0)  # strength 1 for every neighbour: plain RRF
    searcher = S.Searcher.__new__(S.Searcher)
    searcher.settings = st
    notes = searcher._fuse(kw, vec, scale, "note")
    if method in ("note-rsf", "note-strength", "note-rrf-floor", "vector-floor"):
        notes = S.admitted(notes, scale)
    notes.sort(key=lambda c: (-c.fused, c.id))
    return _dedupe([pools.paths.get(n.id, "") for n in notes])[:limit]


def _dedupe(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if p and p not in out:
            out.append(p)
    return out


def replace_settings(settings: Any, method: str) -> Any:
    from types import SimpleNamespace

    d = {k: getattr(settings, k) for k in dir(settings) if not k.startswith("_")}
    d["fusion"] = "weighted" if method == "note-rsf" else "rrf"
    return SimpleNamespace(**d)


METHODS = [
    "keyword",
    "vector",
    "chunk-rrf",
    "note-rrf",
    "note-rrf-floor",
    "note-strength",
    "note-rsf",
]


def score(ls: LabelledSet, pools: dict[str, Any], ranker: Callable[[Any], list[str]]) -> dict:
    tot = [0.0, 0.0, 0.0]
    for qid, rel in ls.qrels.items():
        for i, v in enumerate(metrics(ranker(pools[qid]), rel)):
            tot[i] += v
    n = max(1, len(ls.qrels))
    empty = sum(1 for qid in ls.no_answer if not ranker(pools[qid]))
    return {
        "ndcg@10": tot[0] / n,
        "recall@10": tot[1] / n,
        "mrr@10": tot[2] / n,
        "empty": empty / max(1, len(ls.no_answer)),
    }


FLOORS = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4]
ALONE = [0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5]


def through_search(app: Any, ls: LabelledSet) -> dict[str, dict[str, float]]:
    """Every mode through Searcher.search, as a client gets it (works on older memoryd too)."""
    from memoryd.search.searcher import SearchRequest

    out: dict[str, dict[str, float]] = {}
    for mode in ("keyword", "vector", "hybrid", "auto"):
        answers: dict[str, list[str]] = {}
        for qid, text in ls.queries.items():
            res = app.searcher.search(
                SearchRequest(query=text, mode=mode, limit=10, record_access=False, use_decay=False)
            )
            answers[qid] = _dedupe([h.get("path") or f"memory:{h['id']}" for h in res["hits"]])
        out[f"search {mode}"] = score(ls, answers, lambda ranked: ranked)  # type: ignore[arg-type]
    return out


def compare(
    ls: LabelledSet, pools: dict[str, Pools], st: Any, floors: bool
) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    if floors:
        for floor in FLOORS:  # with no alone floor beyond the floor itself
            for m in ("note-rsf", "vector-floor"):
                out[f"{m} floor {floor:.2f}"] = score(
                    ls, pools, lambda pl, m=m, f=floor: rank_notes(pl, m, st, f, alone=f)
                )
        for alone in ALONE:  # the calibrated floor, and a floor for hits no keyword backs
            out[f"note-rsf alone {alone:.2f}"] = score(
                ls, pools, lambda pl, a=alone: rank_notes(pl, "note-rsf", st, alone=a)
            )
        return out
    for m in METHODS:
        out[m] = score(ls, pools, lambda pl, m=m: rank_notes(pl, m, st))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.ranking", description=__doc__)
    p.add_argument("--sets", default="")
    p.add_argument("--root", type=Path, default=Path("/tmp/memoryd-ranking"))
    p.add_argument("--floors", action="store_true")
    p.add_argument("--json", type=Path)
    p.add_argument("--search-only", action="store_true", help="only the modes through search")
    p.add_argument("--data", type=Path, default=DATA, help="folder of sets (default bench/data)")
    args = p.parse_args(argv)
    from memoryd.core import logsetup

    logsetup.configure("warning")
    names = (
        args.sets.split(",")
        if args.sets
        else sorted(d.name for d in args.data.iterdir() if (d / "queries.jsonl").exists())
    )
    results: dict[str, Any] = {}
    for name in names:
        ls = load_set(args.data / name)
        t = time.perf_counter()
        app = open_app(args.root, ls)
        try:
            st = app.cfg.search
            print(
                f"\n{name}: {len(ls.notes)} notes, {len(ls.qrels)} answerable queries, "
                f"{len(ls.no_answer)} no-answer ({time.perf_counter() - t:.0f} s)"
            )
            rows = through_search(app, ls)
            if not args.search_only:
                pools = {qid: take_pools(app, text) for qid, text in ls.queries.items()}
                rows.update(compare(ls, pools, st, args.floors))
            for key, r in rows.items():
                results.setdefault(name, {})[key] = r
                print(
                    f"  {key:<22} nDCG@10 {r['ndcg@10']:.3f}  R@10 {r['recall@10']:.3f}  "
                    f"MRR@10 {r['mrr@10']:.3f}  empty {r['empty']:.2f}"
                )
        finally:
            app.close()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
