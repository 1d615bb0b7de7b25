"""Nothing relevant, nothing returned (issue 19.6): every set's questions against every other
set's notes, and the score cut that would empty them, chosen leave-one-set-out.

    python -m bench.crossset [--set NAME ...] [--queries N] [--cache DIR] [--out FILE]

For each set T (its cached index from `python -m bench quality`), T's own answerable queries
are run (mode auto, limit 10) and every hit's score and lines are kept; the questions of every
other set S are run against T's notes, where nothing is relevant by construction, and their
hits' scores kept. A cut c drops every hit scoring below c. For each c the report gives, per set
T, the Recall@10 of T's own answerable queries after the cut (line-level, as `bench quality`)
and the share of cross-set questions against T left with no hit.

Leave one set out: for each held-out set H, c is the largest cut whose Recall@10 drop is at
most 0.01 on each of the other sets; the report gives H's drop and H's cross-set empty share at
that c. Target (issue 19.6): >= 90% empty, drop <= 0.01, on every set.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parent
CUTS = [round(0.01 * i, 2) for i in range(0, 61)]
MAX_DROP = 0.01


def _recall(ds: Any, qid: str, hits: list[dict[str, Any]], cut: float) -> float:
    from bench import quality as Q

    kept = [h for h in hits if (h.get("score") or 0.0) >= cut]
    return (Q.score_query(ds, qid, kept) or {}).get("recall@10", 0.0)


def collect(names: list[str], cache: Path, queries: int | None) -> dict[str, Any]:
    """Per target set: own answerable queries' hits, and cross-set questions' hit scores."""
    from bench import quality as Q

    sets = {n: Q.load_set(ROOT / "data" / n) for n in names}
    if queries:
        sets = {n: Q.subset(ds, queries) for n, ds in sets.items()}
    out: dict[str, Any] = {}
    with Q.shared_model("mdx-model-") as holder:
        for t, ds in sets.items():
            with Q.opened(ds, cache, holder) as app:

                def search(text: str, app: Any = app) -> list[dict[str, Any]]:
                    req = dataclasses.replace(Q.search_request(text, "auto", None), explain=True)
                    return list(app.searcher.search(req)["hits"])

                own = {qid: search(q.text) for qid, q in ds.queries.items() if not q.no_answer}
                cross_hits = [
                    search(q.text)
                    for s, other in sets.items()
                    if s != t
                    for q in other.queries.values()
                ]
                cross = [[h.get("score") or 0.0 for h in hits] for hits in cross_hits]
            out[t] = {
                "own": own,
                "cross": cross,
                "own_features": {
                    qid: {**features(hits), "recall@10": _recall(ds, qid, hits, 0.0)}
                    for qid, hits in own.items()
                },
                "cross_features": [features(hits) for hits in cross_hits],
            }
            print(f"{t}: {len(own)} own, {len(cross)} cross-set questions", flush=True)
    return {"sets": sets, "runs": out}


def features(hits: list[dict[str, Any]]) -> dict[str, float]:
    """What a query-level "nothing here" score could read from an answer: its top score, the
    keyword coverage and similarity of its top hit, the best coverage and similarity of any."""
    ex = [h.get("explain") or {} for h in hits]
    return {
        "score": max((h.get("score") or 0.0 for h in hits), default=0.0),
        "top_coverage": float(ex[0].get("coverage") or 0.0) if ex else 0.0,
        "top_similarity": float(ex[0].get("similarity") or 0.0) if ex else 0.0,
        "coverage": max((float(e.get("coverage") or 0.0) for e in ex), default=0.0),
        "similarity": max((float(e.get("similarity") or 0.0) for e in ex), default=0.0),
    }


def curves(sets: dict[str, Any], runs: dict[str, Any]) -> dict[str, dict[float, dict[str, float]]]:
    """Per set and cut: Recall@10 of its own queries and the cross-set empty share."""
    table: dict[str, dict[float, dict[str, float]]] = {}
    for t, r in runs.items():
        ds = sets[t]
        table[t] = {}
        for c in CUTS:
            rec = [_recall(ds, qid, hits, c) for qid, hits in r["own"].items()]
            empty = [not any(s >= c for s in scores) for scores in r["cross"]]
            table[t][c] = {
                "recall@10": sum(rec) / len(rec) if rec else 0.0,
                "cross_empty": sum(empty) / len(empty) if empty else 0.0,
            }
    return table


def loso(table: dict[str, dict[float, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Per held-out set: the cut chosen on the others, and the held-out drop and empty share."""
    out = {}
    for h in table:
        ok = [
            c
            for c in CUTS
            if all(
                table[t][0.0]["recall@10"] - table[t][c]["recall@10"] <= MAX_DROP
                for t in table
                if t != h
            )
        ]
        c = max(ok) if ok else 0.0
        out[h] = {
            "cut": c,
            "drop": round(table[h][0.0]["recall@10"] - table[h][c]["recall@10"], 4),
            "cross_empty": round(table[h][c]["cross_empty"], 4),
            "cross_empty_no_cut": round(table[h][0.0]["cross_empty"], 4),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.crossset", description=__doc__)
    p.add_argument("--set", action="append", help="repeatable; default: every set")
    p.add_argument("--queries", type=int, help="a deterministic subset of N queries per set")
    p.add_argument("--cache", type=Path, default=ROOT / "results" / "cache")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "crossset.json")
    args = p.parse_args(argv)
    from bench import quality as Q
    from memoryd.core import logsetup

    logsetup.configure("warning")
    got = collect(args.set or list(Q.SETS), args.cache, args.queries)
    table = curves(got["sets"], got["runs"])
    held = loso(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    features = {
        t: {"own": r["own_features"], "cross": r["cross_features"]} for t, r in got["runs"].items()
    }
    args.out.write_text(json.dumps({"curves": table, "loso": held, "features": features}, indent=2))
    print(f"{'set':<11} {'cut':>5} {'R@10 drop':>9} {'cross empty':>11} {'(no cut)':>8}")
    for name, r in held.items():
        print(
            f"{name:<11} {r['cut']:>5.2f} {r['drop']:>9.4f} {r['cross_empty']:>11.3f}"
            f" {r['cross_empty_no_cut']:>8.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
