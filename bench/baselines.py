"""The three plain baselines `python -m bench quality` prints beside every mode (issue 19.2).

- bm25: SQLite FTS5 over whole notes (the index's own `cjk` tokenizer), the query an OR of its
  words, each quoted (a CJK word is then a phrase of its bigrams), ranked by bm25();
- cosine: the same model's cosine between the query and each whole note (one vector a note,
  the model truncating long notes as it does), brute force;
- rrf: reciprocal rank fusion (k = 60) of those two rankings.

Each returns, per query, the top K notes as hits that cover the whole note (path, line 1 to the
last line), so they are scored by the same line-level rule as the modes: a baseline hit is
relevant when its note holds an evidence line. Whole-note vectors are cached beside the index
cache (per set contents and model), so a second run embeds nothing but the queries.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

K = 10
RRF_K = 60
NAMES = ("bm25", "cosine", "rrf")
_WORD = re.compile(r"\w+", re.UNICODE)


def _hits(ds: Any, ranked: list[str]) -> list[dict[str, Any]]:
    return [
        {"path": p, "start_line": 1, "end_line": max(1, len(ds.notes[p].splitlines()))}
        for p in ranked[:K]
    ]


def bm25_rankings(ds: Any) -> dict[str, list[str]]:
    """Per query, the notes ranked by FTS5 bm25 over whole notes, OR of the query's words."""
    import apsw

    from memoryd.store import tokenizer

    con = apsw.Connection(":memory:")
    tokenizer.register(con)
    option = tokenizer.OPTION
    con.execute(f"CREATE VIRTUAL TABLE notes USING fts5(path UNINDEXED, body, {option})")
    with con:
        for path, text in ds.notes.items():
            con.execute("INSERT INTO notes(path, body) VALUES (?, ?)", (path, text))
    out: dict[str, list[str]] = {}
    for qid, q in ds.queries.items():
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(q.text)))
        if not words:
            out[qid] = []
            continue
        expr = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = con.execute(
            "SELECT path FROM notes WHERE notes MATCH ? ORDER BY bm25(notes), path LIMIT ?",
            (expr, K),
        ).fetchall()
        out[qid] = [r[0] for r in rows]
    con.close()
    return out


def note_vectors(ds: Any, holder: Any, cache: Path | None, model: str) -> tuple[list[str], Any]:
    """One vector per whole note (cached under `cache` per set contents and model)."""
    paths = sorted(ds.notes)
    key = hashlib.sha256(f"{ds.fingerprint()}|{model}|whole-notes".encode()).hexdigest()[:16]
    file = cache / "baselines" / f"{ds.name}-{key}.npy" if cache is not None else None
    if file is not None and file.exists():
        return paths, np.load(file)
    vecs = np.asarray(holder.embed_background([ds.notes[p] for p in paths]), dtype=np.float32)
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
        np.save(file, vecs)
    return paths, vecs


def cosine_rankings(ds: Any, holder: Any, cache: Path | None, model: str) -> dict[str, list[str]]:
    paths, vecs = note_vectors(ds, holder, cache, model)
    out: dict[str, list[str]] = {}
    for qid, q in ds.queries.items():
        sims = vecs @ np.asarray(holder.embed_query(q.text), dtype=np.float32)
        order = sorted(range(len(paths)), key=lambda i: (-float(sims[i]), paths[i]))
        out[qid] = [paths[i] for i in order[:K]]
    return out


def rrf(a: list[str], b: list[str], k: int = RRF_K) -> list[str]:
    """Reciprocal rank fusion of two rankings (ties by path)."""
    score: dict[str, float] = {}
    for ranking in (a, b):
        for rank, p in enumerate(ranking, 1):
            score[p] = score.get(p, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda p: (-score[p], p))


def run(
    ds: Any,
    holder: Any,
    cache: Path | None,
    model: str,
    summarise: Callable[[Any, dict[str, list[dict[str, Any]]]], dict[str, Any]],
    vectors: bool = True,
) -> dict[str, dict[str, Any]]:
    """The baselines' summaries (as bench.quality.summarise makes them), per baseline name."""
    keyword = bm25_rankings(ds)
    out = {"bm25": summarise(ds, {q: _hits(ds, r) for q, r in keyword.items()})}
    if vectors:
        vector = cosine_rankings(ds, holder, cache, model)
        out["cosine"] = summarise(ds, {q: _hits(ds, r) for q, r in vector.items()})
        fused = {q: rrf(keyword[q], vector[q]) for q in keyword}
        out["rrf"] = summarise(ds, {q: _hits(ds, r) for q, r in fused.items()})
    return out


def table(report: dict[str, Any]) -> str:
    """nDCG@10 and Recall@10 of each mode beside the best baseline it must not fall below:
    keyword against bm25, vector against cosine, hybrid and auto against the best of rrf,
    bm25 and cosine (issue 19.2); '!' marks a mode below its baseline."""
    against = {"keyword": ("bm25",), "vector": ("cosine",)}
    lines = [
        f"{'set':<11} {'mode':<8} {'nDCG@10':>7} {'base':>6}  {'R@10':>6} {'base':>6}  baseline"
    ]
    for name, res in report["sets"].items():
        base = res.get("baselines") or {}
        for b, s in base.items():
            lines.append(
                f"{name:<11} {'=' + b:<8} {s['ndcg@10']:>7.3f} {'':>6}  {s['recall@10']:>6.3f}"
            )
        for mode, s in res["modes"].items():
            names = [n for n in against.get(mode, NAMES) if n in base]
            if not names:
                continue
            bn = max(base[n]["ndcg@10"] for n in names)
            br = max(base[n]["recall@10"] for n in names)
            mark = "!" if s["ndcg@10"] < bn or s["recall@10"] < br else ""
            lines.append(
                f"{name:<11} {mode:<8} {s['ndcg@10']:>7.3f} {bn:>6.3f}  {s['recall@10']:>6.3f}"
                f" {br:>6.3f}  {'/'.join(names)} {mark}"
            )
    return "Modes beside the plain baselines (limit 10):\n" + "\n".join(lines)
