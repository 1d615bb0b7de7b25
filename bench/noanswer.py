"""Evidence for "does anything answer this query?", dumped per query from every labelled set.

    python -m bench.noanswer dump [--out bench/results/noanswer.json]
    python -m bench.noanswer fit [--out bench/results/noanswer.json] [--max-drop 0.01]
    python -m bench.noanswer curve

`dump` runs every query of every set in bench/data through Searcher.search (mode auto, limit
10, explain) on the cached index of `python -m bench quality`, and keeps per hit what the rule
of issue 11.3 may look at (similarity, keyword coverage, BM25, partial or not), with the
line-level metrics the hits earn. `fit` searches rules over those features, leave-one-set-out:
thresholds chosen on three sets (the largest no-answer share whose Recall@10 cost stays <= 0.01
on each of them), reported on the fourth.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parent
SETS = ("chat-logs", "tech-notes", "cjk", "notes-qa")


def units_df(con: Any, text: str) -> dict[str, Any]:
    """The query's topical units and how many texts hold each (n: all texts)."""
    from memoryd.search.ftsquery import quote_term
    from memoryd.search.ranking import query_units
    from memoryd.store import searchsql

    units = query_units(text)
    return {
        "n": searchsql.entry_count(con),
        "df": {u: searchsql.match_count(con, quote_term(u), 10_000) for u in units},
    }


def dump(out: Path) -> None:
    from bench import quality as Q
    from memoryd.core import logsetup

    logsetup.configure("warning")
    report: dict[str, Any] = {}
    with Q.shared_model("mdq-model-") as holder:
        for name in SETS:
            ds = Q.load_set(ROOT / "data" / name)
            with Q.opened(ds, ROOT / "results" / "cache", holder) as app:
                report[name] = _dump_set(app, ds)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report))
    print(f"written to {out}")


def _dump_set(app: Any, ds: Any) -> dict[str, Any]:
    """Every query's answer with what explains each hit."""
    from memoryd.search.searcher import SearchRequest

    rows = {}
    for qid, q in ds.queries.items():
        res = app.searcher.search(
            SearchRequest(query=q.text, mode="auto", limit=10, explain=True, use_decay=False)
        )
        hits = res["hits"]
        rows[qid] = {
            "units": app.store.read(lambda con, t=q.text: units_df(con, t)),
            "text": q.text,
            "type": q.type,
            "no_answer": q.no_answer,
            "mode": res["mode"],
            "hits": [
                {
                    "path": h.get("path"),
                    "content": h.get("content"),
                    "title": h.get("title"),
                    "heading_path": h.get("heading_path"),
                    "start_line": h.get("start_line"),
                    "end_line": h.get("end_line"),
                    "sections": [
                        {"start_line": s["start_line"], "end_line": s["end_line"]}
                        for s in h.get("sections") or ()
                    ],
                    **{
                        k: h["explain"].get(k)
                        for k in (
                            "similarity",
                            "bm25",
                            "partial",
                            "keyword_rank",
                            "vector_rank",
                            "coverage",
                            "note_coverage",
                            "keyword_part",
                            "vector_part",
                            "final",
                            "relevance",
                        )
                    },
                }
                for h in hits
            ],
        }
    return rows


# --- fitting rules on the dump ---------------------------------------------------------------

Hit = dict[str, Any]
Rule = tuple[str, tuple[float, ...]]


def keeps(rule: Rule, h: Hit) -> bool:
    """Whether a rule keeps a hit. Families:
    or:      coverage >= c or similarity >= a;
    sum:     coverage + w * similarity >= t;
    product: (coverage + e) * similarity >= t (the brief's "coverage x similarity");
    rel:     relevance (the fused score before the nudges) >= t.
    A "q-" kind is a query-level gate: all of the query's hits if one passes, else none."""
    cov, sim = h.get("coverage") or 0.0, h.get("similarity") or 0.0
    kind, p = rule
    kind = kind.removeprefix("q-")
    if kind == "none":
        return True
    if kind == "or":
        return cov >= p[0] or sim >= p[1]
    if kind == "sum":
        return cov + p[0] * sim >= p[1]
    if kind == "product":
        return (cov + p[0]) * sim >= p[1]
    if kind == "rel":
        return (h.get("relevance") or 0.0) >= p[0]
    raise ValueError(kind)


def rules() -> list[Rule]:
    out: list[Rule] = [("none", ())]
    cs = [round(0.05 * i, 2) for i in range(0, 21)]
    sims = [round(0.2 + 0.02 * i, 2) for i in range(0, 26)]
    out += [("or", (c, a)) for c in cs for a in sims]
    for w in (0.5, 1.0, 1.5, 2.0, 3.0):
        out += [("sum", (w, round(0.02 * i, 2))) for i in range(0, 60)]
    for e in (0.1, 0.25, 0.5, 1.0):
        out += [("product", (e, round(0.01 * i, 2))) for i in range(0, 50)]
    out += [("rel", (round(0.005 * i, 3),)) for i in range(0, 60)]
    return out + [("q-" + k, p) for k, p in out if k != "none"]


def evaluate(ds: Any, rows: dict[str, Any], rule: Rule) -> dict[str, float]:
    """Recall@10 / nDCG@10 of the answerable queries and the no-answer share with 0 hits when
    the rule drops hits (no refill from below rank 10: a conservative estimate of Recall)."""
    from bench import quality as Q

    rec, ndcg, empty, na, ans = 0.0, 0.0, 0, 0, 0
    for qid, r in rows.items():
        hits = [h for h in r["hits"] if keeps(rule, h)]
        if rule[0].startswith("q-"):  # a query-level gate: all hits, or none
            hits = r["hits"] if hits else []
        if r["no_answer"]:
            na += 1
            empty += not hits
            continue
        m = Q.score_query(ds, qid, hits)
        if m is None:
            continue
        ans += 1
        rec += m["recall@10"]
        ndcg += m["ndcg@10"]
    return {
        "recall@10": rec / max(1, ans),
        "ndcg@10": ndcg / max(1, ans),
        "empty": empty / na if na else float("nan"),
    }


def fit(path: Path, max_drop: float = 0.01) -> dict[str, Any]:
    """Leave-one-set-out: for each held-out set, the rule with the largest mean no-answer share
    on the other sets whose Recall@10 drop is <= max_drop on each of them; and the same choice
    made on all four sets."""
    from bench import quality as Q

    dumped = json.loads(path.read_text())
    sets = {name: Q.load_set(ROOT / "data" / name) for name in dumped}
    table: dict[Rule, dict[str, dict[str, float]]] = {}
    for rule in rules():
        table[rule] = {name: evaluate(sets[name], dumped[name], rule) for name in dumped}
    base = table[("none", ())]

    def choose(train: list[str]) -> Rule:
        best, best_key = ("none", ()), (-1.0, 0.0)
        for rule, res in table.items():
            if any(base[n]["recall@10"] - res[n]["recall@10"] > max_drop for n in train):
                continue
            shares = [res[n]["empty"] for n in train if res[n]["empty"] == res[n]["empty"]]
            key = (sum(shares) / max(1, len(shares)), sum(res[n]["recall@10"] for n in train))
            if key > best_key:
                best, best_key = rule, key
        return best

    out: dict[str, Any] = {"base": base, "held_out": {}}
    for held in dumped:
        rule = choose([n for n in dumped if n != held])
        out["held_out"][held] = {"rule": rule, "train": table[rule], "test": table[rule][held]}
    rule = choose(list(dumped))
    out["all"] = {"rule": rule, "res": table[rule]}
    for kind in ("or", "sum", "product", "rel", "q-or", "q-sum", "q-product", "q-rel"):
        fam = {r: v for r, v in table.items() if r[0] in (kind, "none")}
        saved = dict(table)
        table.clear()
        table.update(fam)
        r = choose(list(dumped))
        out[f"best {kind}"] = {"rule": r, "res": saved[r]}
        table.clear()
        table.update(saved)
    return out


def curve(path: Path) -> None:
    """The price of a query-level floor on the best hit's relevance, per set: Recall@10 lost
    against the share of no-answer queries emptied."""
    from bench import quality as Q

    dumped = json.loads(path.read_text())
    sets = {name: Q.load_set(ROOT / "data" / name) for name in dumped}
    base = {n: evaluate(sets[n], dumped[n], ("none", ())) for n in dumped}
    print("floor  " + "  ".join(f"{n} dR@10 / empty" for n in dumped))
    for i in range(0, 31, 2):
        t = round(0.1 + 0.005 * i, 3)
        res = {n: evaluate(sets[n], dumped[n], ("q-rel", (t,))) for n in dumped}
        print(
            f"{t:.3f}  "
            + "  ".join(
                f"{base[n]['recall@10'] - r['recall@10']:.3f} / {r['empty']:.2f}"
                for n, r in res.items()
            )
        )


def print_fit(res: dict[str, Any]) -> None:
    base = res["base"]
    print("base:", {n: (round(v["recall@10"], 3), round(v["empty"], 2)) for n, v in base.items()})
    for held, r in res["held_out"].items():
        t = r["test"]
        print(
            f"held out {held:<10} rule {r['rule']}: R@10 {base[held]['recall@10']:.3f} -> "
            f"{t['recall@10']:.3f}  nDCG {base[held]['ndcg@10']:.3f} -> {t['ndcg@10']:.3f}  "
            f"empty {base[held]['empty']:.2f} -> {t['empty']:.2f}"
        )
    for key in [k for k in res if k.startswith("best") or k == "all"]:
        r = res[key]
        print(
            f"{key:<12} rule {r['rule']}: "
            + "  ".join(
                f"{n} R {v['recall@10']:.3f} e {v['empty']:.2f}" for n, v in r["res"].items()
            )
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.noanswer", description=__doc__)
    p.add_argument("what", choices=("dump", "fit", "curve"))
    p.add_argument("--out", type=Path, default=ROOT / "results" / "noanswer.json")
    p.add_argument("--max-drop", type=float, default=0.01)
    args = p.parse_args(argv)
    if args.what == "dump":
        dump(args.out)
    elif args.what == "curve":
        curve(args.out)
    else:
        print_fit(fit(args.out, args.max_drop))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
