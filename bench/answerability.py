"""Answerability checks that read the query and the hits, measured on every labelled set.

    python -m bench.answerability [--k 3] [--out bench/results/answerability.json]

Every query of every set in bench/data goes through Searcher.search (mode auto, limit 10) on
the cached index of `python -m bench quality`, with memoryd/search/answerability.py's check switched
off: those hits are the baseline. Each check below is then a query-level gate (all the hits or
none) scored like `bench quality` (line-level Recall@10 of the answerable queries; the share of
no-answer queries left with no hit):

- names: memoryd/search/answerability.py as shipped (a code name or a capitalised name no text
  holds), and the variants it was chosen over: plus short all-caps acronyms (SLA, PR), or any
  word of 4+ letters that is neither indexed, nor common English, nor a typo of an index word.
- typed: a question asking for an amount, a count, a clock time or a date ("how much did...",
  "what time...", "when...") needs that kind of value on one of the N lines of the top k hits
  most similar to the question (the lines embedded by the model: ~45 lines a query).
- line similarity: the best similarity between the question and one line of the top k hits.

Leave one set out: for each set, the variant (or N, or threshold) with the largest mean
no-answer share whose Recall@10 cost is <= 0.01 on each of the other three sets (ties: the
most aggressive, i.e. the one emptying most queries over those sets), scored on the held-out set.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).parent
SETS = ("chat-logs", "tech-notes", "cjk", "notes-qa")
MAX_DROP = 0.01

# the kind of value a question asks for, and how it is written on a line
TYPED: list[tuple[str, re.Pattern[str], re.Pattern[str]]] = [
    (
        "time",
        re.compile(r"^\s*(what|which) time\b|\bat what time\b", re.I),
        re.compile(
            r"\b\d{1,2}[:.]\d{2}\b|\b\d{1,2}\s*(am|pm)\b|"
            r"\b(noon|midnight|o'clock|morning|evening|afternoon|night)\b",
            re.I,
        ),
    ),
    (
        "money",
        re.compile(
            r"\bhow much\b.*\b(cost|pay|paid|charge|price|spend|spent|rent|fee|salary|worth|"
            r"earn|owe|deposit)|\b(what|which) (price|salary|fee)",
            re.I,
        ),
        re.compile(
            r"[£$€¥]\s?\d|\d\s?(k|p|quid|pounds|euros|dollars|grand)\b|"
            r"\b(free|quid|pounds|euros|dollars|grand|hundred|thousand)\b",
            re.I,
        ),
    ),
    (
        "count",
        re.compile(r"\bhow many\b", re.I),
        re.compile(
            r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|dozen|"
            r"twenty|thirty|forty|fifty|hundred|a few|several|both|single|pair|couple)\b",
            re.I,
        ),
    ),
    (
        "date",
        re.compile(r"^\s*when\b|\b(what|which) (date|day|year|month)\b|\bon which day\b", re.I),
        re.compile(
            r"\d|\b(mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(jan|feb|mar|apr|may|jun|jul|"
            r"aug|sep|sept|oct|nov|dec)[a-z]*\b|\b(today|tomorrow|yesterday|tonight|week|"
            r"weekend|month|year|spring|summer|autumn|winter|christmas|easter|next|last|ago|"
            r"soon)\b",
            re.I,
        ),
    ),
]
_ACRONYM = re.compile(r"\b[A-Z]{2,3}\b")
_ALPHA = re.compile(r"[a-z]{4,}")


def lines_of(hits: list[dict[str, Any]], k: int) -> list[str]:
    out: dict[str, None] = {}
    for h in hits[:k]:
        for line in (h.get("content") or "").splitlines():
            if line.strip():
                out[line.strip()] = None
    return list(out)


def _flags(con: Any, text: str, s: Any, common: Any) -> dict[str, bool]:
    """Which name variants would call the question unanswerable on this index."""
    from memoryd.search import answerability
    from memoryd.search.ftsquery import quote_term
    from memoryd.search.ranking import query_units

    base = answerability.missing_name(con, text, s.evidence, s.fuzzy) is not None
    acr = any(s.evidence.doc_freq(con, quote_term(a.lower())) == 0 for a in _ACRONYM.findall(text))
    anyword = any(
        _ALPHA.fullmatch(u)
        and u not in common
        and s.evidence.doc_freq(con, quote_term(u)) == 0
        and s.fuzzy.rewrite(con, [u]) is None
        for u in query_units(text)
    )
    return {"names": base, "names+acronyms": base or acr, "any unknown word": base or anyword}


def _baseline(app: Any, ds: Any) -> dict[str, Any]:
    """Every query's hits with the shipped no-answer check switched off."""
    from memoryd.search import searcher as S
    from memoryd.search.searcher import SearchRequest

    shipped = S.only_absent_names
    S.only_absent_names = lambda *a, **kw: None  # the baseline: this check off
    try:
        return {
            qid: {
                "text": q.text,
                "no_answer": q.no_answer,
                "hits": app.searcher.search(
                    SearchRequest(query=q.text, mode="auto", limit=10, use_decay=False)
                )["hits"],
            }
            for qid, q in ds.queries.items()
        }
    finally:
        S.only_absent_names = shipped


def collect(k: int) -> dict[str, Any]:
    """Per set and query: baseline hits, name-variant flags, line similarities (top k hits)."""
    from bench import quality as Q
    from memoryd.core import logsetup
    from memoryd.search.fuzzy import common_words

    logsetup.configure("warning")
    common = common_words()
    out: dict[str, Any] = {}
    with Q.shared_model("mdq-model-") as holder:
        for name in SETS:
            ds = Q.load_set(ROOT / "data" / name)
            with Q.opened(ds, ROOT / "results" / "cache", holder) as app:
                rows = _baseline(app, ds)
                for r in rows.values():
                    r["flags"] = app.store.read(
                        lambda con, t=r["text"]: _flags(con, t, app.searcher, common)
                    )
                texts = sorted({ln for r in rows.values() for ln in lines_of(r["hits"], k)})
                qv = holder.embed_batch([r["text"] for r in rows.values()])
                lv = np.vstack(
                    [holder.embed_batch(texts[i : i + 64]) for i in range(0, len(texts), 64)]
                )
                index = {t: i for i, t in enumerate(texts)}
                for r, v in zip(rows.values(), qv, strict=True):
                    ls = lines_of(r["hits"], k)
                    sims = [float(lv[index[ln]] @ v) for ln in ls]
                    r["lines"] = sorted(zip(sims, ls, strict=True), reverse=True)
            out[name] = {"ds": ds, "rows": rows}
    return out


def typed_flag(r: dict[str, Any], n: int) -> bool:
    """A typed question none of whose n most similar lines holds a value of its type."""
    kind = next((a for _, q, a in TYPED if q.search(r["text"])), None)
    if kind is None or not r["hits"]:
        return False
    return not any(kind.search(ln) for _, ln in r["lines"][:n])


def score(data: dict[str, Any], flag: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Per set: Recall@10 lost, no-answer share with 0 hits, answerable queries emptied."""
    from bench import quality as Q

    res = {}
    for name, d in data.items():
        lost, rec, ans, empty, na, hit_ans = 0.0, 0.0, 0, 0, 0, 0
        for qid, r in d["rows"].items():
            gated = bool(r["hits"]) and flag(r)
            if r["no_answer"]:
                na += 1
                empty += gated or not r["hits"]
                continue
            m = Q.score_query(d["ds"], qid, r["hits"])
            if m is None:
                continue
            ans += 1
            rec += m["recall@10"]
            if gated:
                lost += m["recall@10"]
                hit_ans += 1
        res[name] = {
            "recall@10": rec / max(1, ans),
            "drop": lost / max(1, ans),
            "empty": empty / na if na else None,
            "answerable_emptied": hit_ans,
        }
    return res


def loso(table: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """For each held-out set, the candidate chosen on the other three and its held-out score."""
    out = {}
    for held in SETS:
        train = [n for n in SETS if n != held]
        best, key = None, (-1.0, -1.0)
        for cand, res in table.items():
            if any(res[n]["drop"] > MAX_DROP + 1e-9 for n in train):
                continue
            shares = [res[n]["empty"] for n in train if res[n]["empty"] is not None]
            k = (sum(shares) / max(1, len(shares)), -sum(res[n]["drop"] for n in train))
            if k > key:
                best, key = cand, k
        out[held] = {"chosen": best, **(table[best][held] if best else {})}
    return out


def report(data: dict[str, Any]) -> dict[str, Any]:
    families: dict[str, dict[str, Callable[[dict[str, Any]], bool]]] = {
        "names": {
            v: (lambda r, v=v: r["flags"][v])
            for v in ("names", "names+acronyms", "any unknown word")
        },
        "typed": {f"N={n}": (lambda r, n=n: typed_flag(r, n)) for n in (1, 2, 3, 5, 8, 12)},
        "line similarity": {
            f"< {t:.2f}": (lambda r, t=t: bool(r["lines"]) and r["lines"][0][0] < t)
            for t in np.arange(0.20, 0.52, 0.02)
        },
    }
    out: dict[str, Any] = {}
    for fam, cands in families.items():
        table = {c: score(data, f) for c, f in cands.items()}
        out[fam] = {"in_sample": table, "leave_one_set_out": loso(table)}
        print(f"\n{fam}: per set, Recall@10 lost / no-answer share with 0 hits (in-sample)")
        for c, res in table.items():
            print(
                f"  {c:<18}"
                + "  ".join(
                    f"{n} {v['drop']:.3f} / " + ("-" if v["empty"] is None else f"{v['empty']:.2f}")
                    for n, v in res.items()
                )
            )
        print("  leave one set out (chosen on the other three -> held-out set):")
        for held, v in out[fam]["leave_one_set_out"].items():
            e = v.get("empty")
            print(
                f"    {held:<10} {v['chosen']!s:<18} Recall@10 lost {v.get('drop', 0):.3f}, "
                f"empty {'-' if e is None else f'{e:.2f}'}"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.answerability", description=__doc__)
    p.add_argument("--k", type=int, default=3, help="hits whose lines the checks read")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "answerability.json")
    args = p.parse_args(argv)
    res = report(collect(args.k))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1, default=str))
    print(f"\nwritten to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
