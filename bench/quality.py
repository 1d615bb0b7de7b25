"""Retrieval quality on a BEIR-format dataset: nDCG@10, Recall@10, MRR@10 per search mode.

Each document becomes a markdown note in a fresh workspace ("# title" + text); the daemon's
indexer chunks and embeds it; every query goes through the search API in each mode.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "notes-qa"


def load(folder: Path) -> tuple[dict[str, dict], dict[str, str], dict[str, dict[str, int]]]:
    def lines(name: str) -> list[dict[str, Any]]:
        text = (folder / name).read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    corpus = {d["_id"]: d for d in lines("corpus.jsonl")}
    queries = {q["_id"]: q["text"] for q in lines("queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    lines = (folder / "qrels" / "test.tsv").read_text().splitlines()
    for line in lines[1:]:
        qid, did, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(qid, {})[did] = int(score)
    return corpus, queries, qrels


def metrics(ranked: list[str], rel: dict[str, int], k: int = 10) -> tuple[float, float, float]:
    dcg = sum((2 ** rel.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    recall = len(set(ranked[:k]) & set(rel)) / len(rel)
    mrr = next((1 / (i + 1) for i, d in enumerate(ranked[:k]) if d in rel), 0.0)
    return (dcg / idcg if idcg else 0.0), recall, mrr


def evaluate(app: Any, folder: Path = DATA) -> dict[str, dict[str, float]]:
    """Index the dataset into app's (empty) workspace and score every mode."""
    from memoryd.search import SearchRequest

    corpus, queries, qrels = load(folder)
    ws = app.cfg.workspace
    for did, doc in corpus.items():
        (ws / f"{did}.md").write_text(f"# {doc.get('title') or did}\n\n{doc['text']}\n")
    app.indexer.reconcile()
    if app.model.state in ("idle", "loading", "ready"):
        app.model.start()
        app.model.wait_ready(120)
        app.embedder.run()
    modes = ["keyword", "vector", "hybrid"] if app.model.state == "ready" else ["keyword"]
    out: dict[str, dict[str, float]] = {}
    for mode in modes:
        totals = [0.0, 0.0, 0.0]
        for qid, rel in qrels.items():
            res = app.searcher.search(
                SearchRequest(
                    query=queries[qid], mode=mode, limit=10, record_access=False, use_decay=False
                )
            )
            ranked = []
            for h in res["hits"]:
                did = Path(h.get("path") or "").stem
                if did and did not in ranked:
                    ranked.append(did)
            for i, v in enumerate(metrics(ranked, rel)):
                totals[i] += v
        n = len(qrels)
        out[mode] = {"ndcg@10": totals[0] / n, "recall@10": totals[1] / n, "mrr@10": totals[2] / n}
    return out
