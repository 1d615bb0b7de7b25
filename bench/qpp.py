"""Query-performance prediction for "nothing relevant, nothing returned" (issue 19.6): scores
`python -m bench.crossset` did not try, each cut chosen leave-one-set-out.

    python -m bench.qpp [--queries N] [--cache DIR] [--out FILE]

For each set T (its cached index from `python -m bench quality`): T's own answerable queries
(all of them, with their Recall@10 in mode auto, limit 10) and N questions of every other set
(cross-set: nothing relevant by construction) are asked of T's notes. Per question:

- the vector profile over every stored chunk: the top similarity, the similarity at ranks 10,
  20 and 50 (gap = top minus it: a flat profile means nothing stands out), NQC (std of the top
  10 or 20 similarities over the mean similarity of all chunks), the top's z-score against the
  question's own similarities;
- the top similarity calibrated per index: its z-score against the top similarities of 150
  pseudo-queries (the first sentence of stored chunks, embedded as queries, against the chunks
  of the other notes);
- the IDF-weighted share of the question's words that no text holds (`answerability`);
- from the answer itself: the top score, the best coverage and similarity of a hit;
- combinations, and a logistic regression on all of them (trained on the other five sets).

A cut empties a question's answer when its score is below it. Leave one set out: for each
held-out set H, the cut is the largest that costs each other set at most 0.01 Recall@10 (an
emptied answer loses its recall); H's Recall@10 drop and cross-set empty share at that cut are
reported, beside the Recall@10 it costs each set to empty 90% of its cross-set questions.
Target: >= 90% empty, drop <= 0.01, on every set.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).parent
MAX_DROP = 0.01
PSEUDO = 150
_SENT = re.compile(r"(?<=[.!?。！？])\s+|\n+")
Row = dict[str, float]


def _pseudo_tops(ent: list[Any], doc_of: np.ndarray, mat: np.ndarray, embed: Any) -> list[float]:
    """Top similarity of chunks' first sentences (as queries) to the other notes' chunks."""
    rng = np.random.default_rng(0)
    tops = []
    for i in rng.choice(len(ent), size=min(PSEUDO, len(ent)), replace=False):
        _, doc, content = ent[int(i)]
        lines = [ln for ln in content.split("\n") if ln.strip() and not ln.startswith(("#", "---"))]
        parts = [p for p in _SENT.split(" ".join(lines)) if len(p.strip()) >= 15]
        if parts:
            sims = mat @ np.asarray(embed(parts[0][:300]), dtype=np.float32)
            sims[doc_of == (doc if doc is not None else -2)] = -1.0
            tops.append(float(sims.max()))
    return tops


def collect(cache: Path, queries: int) -> dict[str, Any]:
    from bench import quality as Q
    from memoryd.search.answerability import absent_units
    from memoryd.store import vectors as V

    full = {n: Q.load_set(ROOT / "data" / n) for n in Q.SETS}
    sub = {n: Q.subset(ds, queries) for n, ds in full.items()}
    out: dict[str, Any] = {}
    with Q.shared_model("mdqpp-") as holder:
        for t, ds in full.items():
            with Q.opened(ds, cache, holder) as app:

                def read(con: Any) -> tuple[np.ndarray, list[str], list[Any]]:
                    active = V.active_model(con)
                    assert active is not None, "the set's index has no vectors"
                    model_id, _, dim = active
                    rows = V.rows_after(con, model_id, 0)
                    mat = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32)
                    ent = con.execute(
                        "SELECT content_hash, document_id, content FROM entries"
                        " WHERE kind = 'chunk' ORDER BY id"
                    ).fetchall()
                    return mat.reshape(-1, dim), [r[1] for r in rows], ent

                mat, hashes, ent = app.store.read(read)
                where = {h: i for i, h in enumerate(hashes)}
                doc_of = np.full(len(hashes), -1)
                for h, doc, _ in ent:
                    if h in where and doc is not None:
                        doc_of[where[h]] = doc
                pseudo = _pseudo_tops(ent, doc_of, mat, holder.embed_query)

                def feats(
                    text: str,
                    qid: str | None = None,
                    app: Any = app,
                    mat: np.ndarray = mat,
                    ds: Any = ds,
                ) -> Row:
                    sims = np.sort(mat @ np.asarray(holder.embed_query(text), np.float32))[::-1]

                    def at(k: int) -> float:
                        return float(sims[min(k, len(sims) - 1)])

                    req = dataclasses.replace(Q.search_request(text, "auto", None), explain=True)
                    hits = app.searcher.search(req)["hits"]
                    ex = [h.get("explain") or {} for h in hits]
                    _, share = app.store.read(
                        lambda con: absent_units(con, text, app.searcher.evidence)
                    )
                    f = {
                        "top1": at(0),
                        "s10": at(9),
                        "s20": at(19),
                        "s50": at(49),
                        "mean": float(sims.mean()),
                        "std": float(sims.std()),
                        "nqc10": float(sims[:10].std() / abs(sims.mean())),
                        "nqc20": float(sims[:20].std() / abs(sims.mean())),
                        "absent_share": share,
                        "score": max((h.get("score") or 0.0 for h in hits), default=0.0),
                        "coverage": max((float(e.get("coverage") or 0) for e in ex), default=0.0),
                        "similarity": max(
                            (float(e.get("similarity") or 0) for e in ex), default=0.0
                        ),
                        "nhits": float(len(hits)),
                    }
                    if qid is not None:
                        f["recall"] = (Q.score_query(ds, qid, hits) or {}).get("recall@10", 0.0)
                    return f

                own = [feats(q.text, qid) for qid, q in ds.queries.items() if not q.no_answer]
                cross = [
                    feats(q.text) for s, o in sub.items() if s != t for q in o.queries.values()
                ]
                out[t] = {"pseudo": pseudo, "own": own, "cross": cross}
                print(f"{t}: {len(own)} own, {len(cross)} cross-set questions", flush=True)
    return out


def scores(f: Row, mu: float, sd: float) -> Row:
    """Every candidate query-level score (higher: more likely answerable here)."""
    z = (f["top1"] - mu) / sd
    return {
        "top score": f["score"],
        "top similarity": f["top1"],
        "gap to rank 10": f["top1"] - f["s10"],
        "gap to rank 20": f["top1"] - f["s20"],
        "gap to rank 50": f["top1"] - f["s50"],
        "NQC top 10": f["nqc10"],
        "NQC top 20": f["nqc20"],
        "z vs own sims": (f["top1"] - f["mean"]) / f["std"],
        "z vs index (pseudo-queries)": z,
        "share of words present": 1 - f["absent_share"],
        "0.5 x coverage + similarity": 0.5 * f["coverage"] + f["similarity"],
        "z vs index + 2 x coverage": z + 2 * f["coverage"],
        "present share x z vs index": (1 - f["absent_share"]) * z,
    }


Data = dict[str, tuple[list[tuple[Row, float, float]], list[tuple[Row, float]]]]


def rows(raw: dict[str, Any]) -> Data:
    out: Data = {}
    for t, d in raw.items():
        mu, sd = float(np.mean(d["pseudo"])), float(np.std(d["pseudo"]))
        own = [(scores(f, mu, sd), f["recall"], f["nhits"]) for f in d["own"]]
        cross = [(scores(f, mu, sd), f["nhits"]) for f in d["cross"]]
        out[t] = (own, cross)
    return out


def drop(data: Data, t: str, fn: Callable[[Row], float], c: float) -> float:
    own = data[t][0]
    return sum(r for f, r, n in own if n and fn(f) < c) / len(own)


def empty(data: Data, t: str, fn: Callable[[Row], float], c: float) -> float:
    cross = data[t][1]
    return sum(1 for f, n in cross if n == 0 or fn(f) < c) / len(cross)


def loso(data: Data, fn: Callable[[Row], float], held: str) -> tuple[float, float, float]:
    """(cut, held-out drop, held-out empty share): the largest cut costing each other set at
    most MAX_DROP Recall@10."""
    others = [t for t in data if t != held]
    cuts = sorted({fn(f) for t in others for f, _, _ in data[t][0]})
    best = -1e9
    for c in cuts:
        if any(drop(data, t, fn, c) > MAX_DROP for t in others):
            break
        best = c
    return best, drop(data, held, fn, best), empty(data, held, fn, best)


def cost90(data: Data, fn: Callable[[Row], float], t: str) -> float:
    cuts = sorted({fn(f) for f, _ in data[t][1]})
    c = next((c for c in cuts if empty(data, t, fn, c) >= 0.9), None)
    return drop(data, t, fn, c) if c is not None else float("nan")


def logistic(data: Data, held: str) -> Callable[[Row], float]:
    """A logistic regression on every score, trained on the other sets (own = 1, cross = 0)."""
    names = list(next(iter(data.values()))[0][0][0])
    x, y = [], []
    for t, (own, cross) in data.items():
        if t != held:
            x += [[f[k] for k in names] for f, _, _ in own] + [
                [f[k] for k in names] for f, _ in cross
            ]
            y += [1.0] * len(own) + [0.0] * len(cross)
    xa, ya = np.array(x), np.array(y)
    mu, sd = xa.mean(0), xa.std(0) + 1e-9
    z = (xa - mu) / sd
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(3000):
        g = 1 / (1 + np.exp(-(z @ w + b))) - ya
        w -= 0.1 * (z.T @ g / len(ya) + 0.01 * w)
        b -= 0.1 * float(g.mean())
    return lambda f: float(((np.array([f[k] for k in names]) - mu) / sd) @ w + b)


def auc(data: Data, fn: Callable[[Row], float], t: str) -> float:
    """How often an own question outscores a cross-set one (ties count half)."""
    a = np.array([fn(f) for f, _, _ in data[t][0]])
    b = np.array([fn(f) for f, _ in data[t][1]])
    return float((a[:, None] > b[None, :]).mean() + 0.5 * (a[:, None] == b[None, :]).mean())


def report(data: Data) -> tuple[str, dict[str, Any]]:
    sets = list(data)
    names = list(data[sets[0]][0][0][0])
    lines = ["no cut: " + ", ".join(f"{t} {empty(data, t, lambda f: 0, -1e9):.0%}" for t in sets)]
    lines.append("score | " + " | ".join(sets) + " | cost of 90% empty | AUC, per set")
    out: dict[str, Any] = {}
    for name in [*names, "logistic regression (all scores)"]:
        cells, costs, aucs = [], [], []
        for h in sets:
            fn = logistic(data, h) if name.startswith("logistic") else (lambda f, n=name: f[n])
            cut, d, e = loso(data, fn, h)
            cells.append(f"{e:.0%} / {d:.3f}")
            costs.append(cost90(data, fn, h))
            aucs.append(auc(data, fn, h))
            out.setdefault(name, {})[h] = {"cut": cut, "drop": d, "empty": e, "cost90": costs[-1]}
        lines.append(
            f"{name} | "
            + " | ".join(cells)
            + " | "
            + ", ".join(f"{c:.3f}" for c in costs)
            + " | "
            + ", ".join(f"{a:.2f}" for a in aucs)
        )
    return "\n".join(lines), out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.qpp", description=__doc__)
    p.add_argument("--queries", type=int, default=60, help="cross-set questions per other set")
    p.add_argument("--cache", type=Path, default=ROOT / "results" / "cache")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "qpp.json")
    p.add_argument("--raw", type=Path, help="reuse the features of an earlier --out")
    args = p.parse_args(argv)
    from memoryd.core import logsetup

    logsetup.configure("warning")
    raw = json.loads(args.raw.read_text())["raw"] if args.raw else collect(args.cache, args.queries)
    text, table = report(rows(raw))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"raw": raw, "loso": table}))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
