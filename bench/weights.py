"""Fusion weights chosen leave-one-set-out (issue 19.1), on the cached indexes of `bench quality`.

    python -m bench.weights [--set NAME ...] [--cache DIR] [--out FILE] [--entity | --whole]

Every set's queries run in mode auto (limit 10, group note) under each candidate of COMBOS
(search.coverage_power, keyword_weight, vector_weight). For each held-out set, the
combination with the best mean nDCG@10 over the other sets is chosen (ties: the shipped
defaults), and the held-out set's figures under it are reported beside its own best.
`--entity` sweeps search.entity_weight (ENTITY_WEIGHTS, issue 20.3) at the shipped fusion
instead, each held-out set getting the best mean nDCG@10 of the others among the weights under
which none of them falls below weight 0 on nDCG@10 or Recall@10. `--whole` sweeps, in mode
keyword, the share of a note's BM25 that is its whole note's (ranking.WHOLE_NOTE_SHARE,
WHOLE_SHARES; issue 19.2), each held-out set getting the best mean nDCG@10 of the others among
the shares under which none of them falls below share 0 on nDCG@10 or Recall@10 (a change that
helps one set and hurts another is not taken).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parent
DEFAULT = (3.0, 0.6, 0.4)
COMBOS = [
    DEFAULT,
    (0.0, 0.6, 0.4),
    (2.0, 0.6, 0.4),
    (4.0, 0.6, 0.4),
    (3.0, 0.7, 0.3),
    (3.0, 0.5, 0.5),
]


# off first: a tie keeps the signal off, and no other set may fall below its figures without it
ENTITY_WEIGHTS = (0.0, 0.1, 0.2, 0.4, 0.6, 0.8)
WHOLE_SHARES = [0.2, 0.0, 0.1, 0.15, 0.25, 0.3, 0.5, 1.0]  # the shipped default first


def key(c: tuple[float, ...]) -> str:
    return "/".join(str(x) for x in c)


def sweep(
    names: list[str], cache: Path, entity: bool = False, whole: bool = False
) -> dict[str, dict[str, list[float]]]:
    """Per set and combination: [nDCG@10, Recall@10] of mode auto (`whole`: of mode keyword,
    per whole-note share)."""
    from bench import quality as Q
    from memoryd.search import ranking

    out: dict[str, dict[str, list[float]]] = {}
    shipped = ranking.WHOLE_NOTE_SHARE
    with Q.shared_model("mdw-model-") as holder:
        for name in names:
            ds = Q.load_set(ROOT / "data" / name)
            with Q.opened(ds, cache, holder) as app:
                base = app.searcher.settings
                if whole:
                    for share in WHOLE_SHARES:
                        ranking.WHOLE_NOTE_SHARE = share  # read by keyword_note at each call
                        try:
                            res = {
                                qid: list(
                                    app.searcher.search(Q.search_request(q.text, "keyword", None))[
                                        "hits"
                                    ]
                                )
                                for qid, q in ds.queries.items()
                            }
                        finally:
                            ranking.WHOLE_NOTE_SHARE = shipped
                        s = Q.summarise(ds, res)
                        out.setdefault(name, {})[str(share)] = [
                            round(s["ndcg@10"], 4),
                            round(s["recall@10"], 4),
                        ]
                    continue
                grid: list[tuple[float, ...]] = (
                    [(*DEFAULT, w) for w in ENTITY_WEIGHTS] if entity else list(COMBOS)
                )
                for combo in grid:
                    cp, kw, vw = combo[:3]
                    app.searcher.settings = dataclasses.replace(
                        base, coverage_power=cp, keyword_weight=kw, vector_weight=vw
                    )
                    if entity:
                        app.searcher.settings = dataclasses.replace(
                            app.searcher.settings, entity_weight=combo[3]
                        )
                    req = Q.search_request
                    res = {
                        qid: list(app.searcher.search(req(q.text, "auto", None))["hits"])
                        for qid, q in ds.queries.items()
                    }
                    s = Q.summarise(ds, res)
                    out.setdefault(name, {})[key(combo)] = [
                        round(s["ndcg@10"], 4),
                        round(s["recall@10"], 4),
                    ]
    return out


def loso(
    table: dict[str, dict[str, list[float]]], floor: str | None = None
) -> dict[str, dict[str, Any]]:
    """Per held-out set: the combination chosen on the others and its held-out figures (ties:
    the first combination, the shipped one). With `floor` (a combination), only those under
    which none of the others falls below its figures under `floor` may be chosen."""
    out = {}
    combos = list(next(iter(table.values())))
    for h in table:
        others = [s for s in table if s != h]

        def mean(c: str, sets: list[str] = others) -> float:
            return sum(table[s][c][0] for s in sets) / len(sets)

        def kept(c: str, sets: list[str] = others) -> bool:
            return floor is None or all(
                table[s][c][i] >= table[s][floor][i] for s in sets for i in (0, 1)
            )

        allowed = [c for c in combos if kept(c)]
        chosen = max(allowed, key=lambda c: (round(mean(c), 6), c == combos[0]))
        own = max(combos, key=lambda c: table[h][c][0])
        out[h] = {"chosen": chosen, "held_out": table[h][chosen], "own_best": [own, table[h][own]]}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.weights", description=__doc__)
    p.add_argument("--set", action="append", help="repeatable; default: every set")
    p.add_argument("--cache", type=Path, default=ROOT / "results" / "cache")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "weights.json")
    p.add_argument("--entity", action="store_true", help="sweep search.entity_weight instead")
    p.add_argument(
        "--whole", action="store_true", help="sweep keyword mode's whole-note share instead"
    )
    args = p.parse_args(argv)
    from bench import quality as Q
    from memoryd.core import logsetup

    logsetup.configure("warning")
    table = sweep(args.set or list(Q.SETS), args.cache, args.entity, args.whole)
    floor = "0.0" if args.whole else key((*DEFAULT, 0.0)) if args.entity else None
    held = loso(table, floor)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"table": table, "loso": held}, indent=2))
    for name, r in held.items():
        n, rc = r["held_out"]
        print(f"{name:<11} chosen {r['chosen']:<18} held-out nDCG@10 {n:.4f} R@10 {rc:.4f}")
    for name, row in table.items():
        print(f"{name:<11} " + "  ".join(f"{c} {v[0]:.4f}/{v[1]:.4f}" for c, v in row.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
