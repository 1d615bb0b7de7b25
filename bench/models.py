"""Embedding models side by side (issue 19.9): backlog chunks/s, query latency, RSS; and the
similarity scale of a new model, calibrated.

    python -m bench.models [--models default,multilingual-e5-small] [--chunks N] [--rounds R]
    python -m bench.models calibrate --model multilingual-e5-small [--cache DIR]

The texts are the chunks of every labelled set in bench/data (as the indexer cuts them), a
deterministic sample of N spread over the sets, and their queries. Each round runs each model in
a fresh process, in turn (the machine may be shared: alternating spreads the load over both),
through the holder the daemon uses (`default_model_holder`): the backlog through
`embed_background` in batches of `embedding.batch_size`, as the embed worker does; then every
query once through `embed_query` (no cache hit). RSS is the process's after the model loads and
its peak (VmHWM) at the end; CPU is the process's user + system seconds over the backlog (on a
shared machine the honest cost: the backlog runs at a low priority, so its wall time is mostly
other people's work). Ratios are against the first model, per round.

`calibrate` chooses a model's `Scale` (memoryd/search/ranking.py) the way MiniLM's was chosen
(`python -m bench.ranking --floors`), leave-one-set-out: each set's index through `bench
quality`'s cache, each query's two pools taken once (`bench.ranking.take_pools`), then the
floor (with alone = floor) is the highest that keeps every other set's note Recall@10 of the
vector pool within 0.01 of the lowest floor; alone the highest that keeps the fused ranking's
Recall@10 within 0.01; top the one with the best mean nDCG@10 of the fused ranking and of the
vector pool fused alone (as vector mode ranks it: strength saturates at top, so a top below the
similarities of relevant texts ties them). Prints the
choice made on all sets and, per set, the choice made without it and that set's figure.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
SETS = ("chat-logs", "tech-notes", "cjk", "notes-qa", "go-faq", "irc-chat")


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def sample(chunks: int, queries: int, seed: int = 19) -> tuple[list[str], list[str]]:
    """(chunk texts, query texts): the same share of each set, deterministic."""
    from bench.quality import load_set
    from memoryd.text.markdown import parse_document

    rng = random.Random(seed)
    texts: list[str] = []
    asked: list[str] = []
    for name in SETS:
        ds = load_set(DATA / name)
        mine = list(
            dict.fromkeys(c.content for n in ds.notes.values() for c in parse_document(n)[1])
        )
        texts += rng.sample(mine, min(len(mine), chunks // len(SETS)))
        qs = sorted(q.text for q in ds.queries.values())
        asked += rng.sample(qs, min(len(qs), queries // len(SETS)))
    return texts, asked


def child(model: str, texts: list[str], queries: list[str]) -> dict[str, Any]:
    """One model in this process: load, the backlog, the queries, RSS."""
    from bench import run
    from memoryd.serve.app import default_model_holder

    root = Path(tempfile.mkdtemp(prefix="mdm-"))
    run.EMBEDDING_MODEL = None if model == "default" else model
    cfg = run.make_config(root)
    holder = default_model_holder(cfg)
    t = time.perf_counter()
    holder.start()
    if not holder.wait_ready(300) or holder.identity is None:
        raise SystemExit(f"{model}: {holder.reason}")
    load_s = time.perf_counter() - t
    rss_loaded = _status_kb("VmRSS")
    holder.embed_background(texts[:8])  # warm-up
    batch = cfg.embedding.batch_size
    t, cpu = time.perf_counter(), _cpu_s()
    for i in range(0, len(texts), batch):
        holder.embed_background(texts[i : i + batch])
    backlog_s, backlog_cpu = time.perf_counter() - t, _cpu_s() - cpu
    lat = []
    for q in queries:
        t = time.perf_counter()
        holder.embed_query(q)
        lat.append((time.perf_counter() - t) * 1000)
    holder.close()
    return {
        "model": holder.identity.name,
        "load_s": round(load_s, 2),
        "chunks": len(texts),
        "chunks_per_s": round(len(texts) / backlog_s, 1),
        "cpu_ms_per_chunk": round(backlog_cpu * 1000 / len(texts), 1),
        "background_threads": holder.background_threads,
        "query_ms_p50": round(statistics.median(lat), 1),
        "query_ms_p95": round(sorted(lat)[int(0.95 * (len(lat) - 1))], 1),
        "rss_loaded_mb": round(rss_loaded / 1024),
        "rss_peak_mb": round(_status_kb("VmHWM") / 1024),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["calibrate"]:
        c = argparse.ArgumentParser(prog="python -m bench.models calibrate")
        c.add_argument("--model", default="multilingual-e5-small")
        c.add_argument("--sets", default=",".join(SETS))
        c.add_argument("--cache", type=Path, default=Path(__file__).parent / "results" / "cache")
        c.add_argument("--json", type=Path)
        a = c.parse_args(argv[1:])
        from memoryd.core import logsetup

        logsetup.configure("warning")
        report = calibrate(a.model, a.sets.split(","), a.cache)
        if a.json:
            a.json.write_text(json.dumps(report, indent=2))
        return 0
    p = argparse.ArgumentParser(prog="python -m bench.models", description=__doc__)
    p.add_argument("--models", default="default,multilingual-e5-small")
    p.add_argument("--chunks", type=int, default=600)
    p.add_argument("--queries", type=int, default=120)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", type=Path, help="write every round here")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    from memoryd.core import logsetup

    logsetup.configure("warning")
    texts, queries = sample(args.chunks, args.queries)
    if args.child:
        print(json.dumps(child(args.child, texts, queries)))
        return 0
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    rounds: list[dict[str, Any]] = []
    for r in range(args.rounds):
        row: dict[str, Any] = {"load": os.getloadavg()[0]}
        for m in models:
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "bench.models",
                    "--child",
                    m,
                    "--chunks",
                    str(args.chunks),
                    "--queries",
                    str(args.queries),
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            row[m] = json.loads(out.strip().splitlines()[-1])
        rounds.append(row)
        base = row[models[0]]
        for m in models:
            x = row[m]
            print(
                f"round {r + 1} (load {row['load']:.1f}) {m:<24} {x['chunks_per_s']:7.1f} chunks/s "
                f"(x{x['chunks_per_s'] / base['chunks_per_s']:.2f}), CPU "
                f"{x['cpu_ms_per_chunk']:.1f} ms a chunk "
                f"(x{x['cpu_ms_per_chunk'] / base['cpu_ms_per_chunk']:.2f})  query p50 "
                f"{x['query_ms_p50']:6.1f} ms p95 {x['query_ms_p95']:6.1f} ms  RSS loaded "
                f"{x['rss_loaded_mb']} MB peak {x['rss_peak_mb']} MB (x"
                f"{x['rss_peak_mb'] / base['rss_peak_mb']:.2f})  load {x['load_s']} s",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps({"rounds": rounds, "texts": len(texts)}, indent=2))
    return 0


FLOORS = [round(0.70 + 0.02 * i, 2) for i in range(10)]  # 0.70 .. 0.88
TOPS = [round(0.82 + 0.02 * i, 2) for i in range(10)]  # 0.82 .. 1.00


def _pools(model: str, names: list[str], cache: Path) -> dict[str, tuple[Any, dict, Any]]:
    """{set: (labelled set, {query id: pools}, search settings)} over the cached indexes."""
    from bench import quality as Q
    from bench import ranking as R
    from bench import run

    run.EMBEDDING_MODEL = model
    out = {}
    with Q.shared_model("mdm-cal-") as holder:
        for name in names:
            ds, ls = Q.load_set(DATA / name), R.load_set(DATA / name)
            # the pools depend on the index (cache key) and the search code: kept beside the index
            key = f"{name}-{model}-{Q.code_fingerprint()}-{_search_fingerprint()}"
            saved = cache / "pools" / f"{key}.pickle"
            if saved.exists():
                out[name] = (ls, *pickle.loads(saved.read_bytes()))
                continue
            with Q.opened(ds, cache, holder) as app:
                pools = {qid: R.take_pools(app, text) for qid, text in ls.queries.items()}
                out[name] = (ls, pools, app.cfg.search)
            saved.parent.mkdir(parents=True, exist_ok=True)
            saved.write_bytes(pickle.dumps((pools, out[name][2])))
    return out


def _search_fingerprint() -> str:
    import hashlib

    import memoryd

    h = hashlib.sha256()
    for p in sorted((Path(memoryd.__file__).parent / "search").glob("*.py")):
        if p.name != "ranking.py":  # the scales live there; the pools' own scale is replaced
            h.update(p.read_bytes())
    return h.hexdigest()[:12]


def _figures(data: tuple[Any, dict, Any], method: str, scale: tuple[float, ...]) -> dict:
    from dataclasses import replace

    from bench import ranking as R
    from memoryd.search.ranking import Scale

    ls, pools, st = data
    sc = Scale(*scale)
    if method == "vector-rsf":  # the vector pool alone, fused as search's vector mode fuses it
        return R.score(
            ls, pools, lambda pl: R.rank_notes(replace(pl, scale=sc, keyword=[]), "note-rsf", st)
        )
    return R.score(ls, pools, lambda pl: R.rank_notes(replace(pl, scale=sc), method, st))


def choose(sets: dict[str, Any], tol: float = 0.01) -> tuple[float, float, float]:
    """(floor, top, alone) chosen on `sets` (see the module docstring)."""
    top0 = 0.92
    base = {n: _figures(d, "vector-floor", (FLOORS[0], top0, FLOORS[0])) for n, d in sets.items()}
    floor = FLOORS[0]
    for f in FLOORS:
        if all(
            _figures(d, "vector-floor", (f, top0, f))["recall@10"] >= base[n]["recall@10"] - tol
            for n, d in sets.items()
        ):
            floor = f
    tops = [t for t in TOPS if t > floor]
    top = max(
        tops,
        key=lambda t: sum(
            _figures(d, m, (floor, t, floor))["ndcg@10"]
            for d in sets.values()
            for m in ("note-rsf", "vector-rsf")
        ),
    )
    fused = {n: _figures(d, "note-rsf", (floor, top, floor)) for n, d in sets.items()}
    alone = floor
    for a in [x for x in FLOORS if x >= floor]:
        if all(
            _figures(d, "note-rsf", (floor, top, a))["recall@10"] >= fused[n]["recall@10"] - tol
            for n, d in sets.items()
        ):
            alone = a
    return floor, top, alone


def calibrate(model: str, names: list[str], cache: Path) -> dict[str, Any]:
    sets = _pools(model, names, cache)
    report: dict[str, Any] = {"model": model, "all": choose(sets), "held_out": {}}
    print(f"{model}: chosen on every set (floor, top, alone) = {report['all']}")
    for name in names:
        rest = {n: d for n, d in sets.items() if n != name}
        scale = choose(rest)
        mine = _figures(sets[name], "note-rsf", scale)
        chosen_all = _figures(sets[name], "note-rsf", report["all"])
        report["held_out"][name] = {"scale": scale, "held_out": mine, "all_sets": chosen_all}
        print(
            f"  {name:<11} without it: {scale}  fused nDCG@10 {mine['ndcg@10']:.3f} "
            f"R@10 {mine['recall@10']:.3f} empty {mine['empty']:.2f}  (with the all-set choice "
            f"{chosen_all['ndcg@10']:.3f} / {chosen_all['recall@10']:.3f} / "
            f"{chosen_all['empty']:.2f})",
            flush=True,
        )
    return report


if __name__ == "__main__":
    raise SystemExit(main())
