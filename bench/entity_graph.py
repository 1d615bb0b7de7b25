"""python -m bench.entity_graph [--chunks N] [--rounds R] [--json]

Issue 20, point 6 (the store's part): what entities cost at index time and at query time, with
every ratio against a baseline measured in the same run.

- Indexing: the same workspace (bench/corpus.py's notes, each section naming a few of 2,000
  people, 300 systems and 60 places, Zipf-distributed as names are in real notes) is indexed
  cold in keyword mode three ways, each in a fresh data dir, `rounds` times, interleaved:
  `none` (no extraction, no entity rows), `extract` (extraction, rows not stored) and `full`
  (extraction and the entity rows). full/extract is the cost of the storage writes (this
  branch); extract/none is the extraction's (bench/entities.py measures that in detail).
- The entity page (`entity NAME`): p50/p95 over names drawn across the frequency range (the 10
  most mentioned and 40 at random), target p95 <= 50 ms at 100K chunks.
- The entity filter: the same searches (keyword and hybrid, synthetic vectors) with and without
  `entities: [NAME]`, target: at most 20% more; wall time and the process's CPU time (every
  search thread), the latter less swayed by a shared machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import corpus, run

FIRST = [
    "Caroline",
    "Melanie",
    "Oskar",
    "Lena",
    "Jonas",
    "Priya",
    "Tomas",
    "Aiko",
    "Mateo",
    "Sofia",
    "Amara",
    "Lukas",
    "Ines",
    "Rafael",
    "Hana",
    "Elif",
    "Marta",
    "Kofi",
    "Nadia",
    "Pavel",
    "Yusuf",
    "Greta",
    "Emil",
    "Chloe",
    "Dmitri",
    "Ana",
    "Leon",
    "Mira",
    "Omar",
    "Sven",
    "Tara",
    "Felix",
    "Noor",
    "Ivan",
    "Lucia",
    "Kenji",
    "Zara",
    "Hugo",
    "Ada",
    "Milan",
]
LAST = [
    "Baker",
    "Lindqvist",
    "Fischer",
    "Okafor",
    "Tanaka",
    "Novak",
    "Silva",
    "Moreau",
    "Kowalski",
    "Haddad",
    "Jensen",
    "Rossi",
    "Petrov",
    "Nakamura",
    "Schmidt",
    "Costa",
    "Larsen",
    "Dubois",
    "Ahmed",
    "Weber",
    "Horvat",
    "Murphy",
    "Keller",
    "Varga",
    "Lopez",
    "Ortiz",
    "Berg",
    "Sato",
    "Meyer",
    "Bianchi",
    "Hansen",
    "Popescu",
    "Kaya",
    "Walsh",
    "Nieminen",
    "Romero",
    "Vogel",
    "Engel",
    "Brandt",
    "Laine",
    "Quinn",
    "Reyes",
    "Stone",
    "Ward",
    "Young",
]
PLACES = [
    "Lisbon",
    "Berlin",
    "Oslo",
    "Nairobi",
    "Osaka",
    "Lima",
    "Porto",
    "Krakow",
    "Tallinn",
    "Austin",
    "Denver",
    "Dublin",
    "Zurich",
    "Vienna",
    "Seoul",
    "Hanoi",
    "Quito",
    "Accra",
    "Perth",
    "Malmo",
]


def names(seed: int = 5) -> tuple[list[str], list[str], list[str]]:
    rng = random.Random(seed)
    people = sorted({f"{rng.choice(FIRST)} {rng.choice(LAST)}" for _ in range(4000)})[:2000]
    systems = [f"{w}-svc" for w in corpus.WORDS] + [
        f"{w.capitalize()}{v.capitalize()}" for w in corpus.WORDS[:30] for v in corpus.WORDS[30:39]
    ]
    places = PLACES + [f"New {p}" for p in PLACES] + [f"{p} Street" for p in LAST[:20]]
    return people, systems[:300], places


_RANK_WEIGHTS: dict[int, list[float]] = {}


def _zipf(rng: random.Random, items: list[str]) -> str:
    """An item by Zipf's law over its rank (weight 1/(rank + 2)): the most mentioned person is
    in about 7% of the sections that name one, as in a team's notes."""
    w = _RANK_WEIGHTS.get(len(items))
    if w is None:
        w = _RANK_WEIGHTS[len(items)] = [1 / (r + 2) for r in range(len(items))]
    return rng.choices(items, weights=w)[0]


def write_workspace(root: Path, target_chunks: int, seed: int = 42) -> dict[str, int]:
    """corpus.write_workspace's notes with names in their sections."""
    from memoryd.text.markdown import parse_document

    people, systems, places = names()
    rng = random.Random(seed)
    for pool in (people, systems, places):
        rng.shuffle(pool)
    root.mkdir(parents=True, exist_ok=True)
    chunks = files = 0
    while chunks < target_chunks:
        sections = min(12, max(1, int(rng.expovariate(1 / 3))))
        text = corpus.note(rng, files, sections)
        out = []
        for line in text.split("\n"):
            out.append(line)
            if line.startswith("## ") or (line.startswith("# ") and rng.random() < 0.5):
                who = _zipf(rng, people)
                what = _zipf(rng, systems)
                where = _zipf(rng, places)
                pick = rng.random()
                if pick < 0.4:
                    out.append(f"\n{who} said the {what} rollout is blocked in {where}.")
                elif pick < 0.7:
                    other = _zipf(rng, people)
                    out.append(f"\nMet {who} and {other} about `{what}`.")
                elif pick < 0.9:
                    out.append(f"\n{who}'s notes on {what}.")
        text = "\n".join(out)
        folder = root / rng.choice(corpus.TOPICS).lower() / f"{files // 500:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{files:06d}.md").write_text(text)
        chunks += len(parse_document(text)[1])
        files += 1
    return {"files": files, "chunks": chunks}


def _index(workspace: Path, data: Path, variant: str) -> tuple[float, Any]:
    """Cold keyword-mode indexing of `workspace` into `data`: seconds, and the App (open)."""
    wall, _, app = index_variant(workspace, data, variant)
    return wall, app


def index_variant(workspace: Path, data: Path, variant: str) -> tuple[float, float, Any]:
    """Cold keyword-mode indexing of `workspace` into `data` as `variant` has it (`none`: no
    extraction, no entity rows; `extract`: extraction, rows not stored; `full`): wall seconds,
    CPU seconds (every thread of this process) and the App (open)."""
    from memoryd.index import indexer
    from memoryd.index.embed import ModelHolder
    from memoryd.serve.app import App
    from memoryd.store import entities as store_entities
    from memoryd.store import entitystage

    saved = (indexer.entities_later, store_entities.index_document)
    if variant == "none":  # no queue row: neither extraction nor rows (store/entitystage.py)
        indexer.entities_later = lambda *a, **k: None  # type: ignore[assignment]
    if variant in ("none", "extract"):
        store_entities.index_document = lambda *a, **k: 0  # type: ignore[assignment]
    try:
        cfg = run.make_config(data.parent, workspace=str(workspace), data_dir=str(data))
        app = App(cfg, model=ModelHolder(None, description="keyword only"))
        cpu, wall = time.process_time(), time.perf_counter()
        app.indexer.reconcile()
        entitystage.store_caught_up(app.store)  # the notes' entities read, as they were
        return time.perf_counter() - wall, time.process_time() - cpu, app
    finally:
        indexer.entities_later, store_entities.index_document = saved


def direct(root: Path, target_chunks: int, seed: int = 42) -> tuple[dict[str, int], Any]:
    """A store of `target_chunks` chunks written straight through the store's functions (no
    files, no extraction: the names put in each chunk are its mentions, through
    store/entities.remember, the indexer's own write path), for the query figures at a size
    whose indexing does not fit a session on a shared machine."""
    from memoryd.index.embed import ModelHolder
    from memoryd.serve.app import App
    from memoryd.store import entities as store_entities
    from memoryd.store import entries
    from memoryd.store.entries import DocumentInfo, NewChunk
    from memoryd.text.entities import Mention, canonical_key
    from memoryd.text.markdown import sha256_text

    people, systems, places = names()
    rng = random.Random(seed)
    for pool in (people, systems, places):
        rng.shuffle(pool)
    cfg = run.make_config(root, workspace=str(root / "ws"), data_dir=str(root / "data-direct"))
    done = root / "data-direct" / "built.json"
    if done.exists():  # --store: built by an earlier run (its schema migrates on open)
        return json.loads(done.read_text()), App(cfg, model=ModelHolder(None, description="-"))
    app = App(cfg, model=ModelHolder(None, description="keyword only"))
    chunks = files = 0
    while chunks < target_chunks:

        def write(con: Any, files: int = files) -> int:
            made = []
            for _ in range(50):  # 50 notes a transaction
                n = min(12, max(1, int(rng.expovariate(1 / 3))))
                body, mentions = [], []
                for s in range(n):
                    who, other = _zipf(rng, people), _zipf(rng, people)
                    what, where = _zipf(rng, systems), _zipf(rng, places)
                    text = (
                        f"## Section {s}\n\n{who} said the {what} rollout is blocked in {where}."
                        f" {corpus.sentence(rng)} Met {other}.\n"
                    )
                    line = 1 + 4 * s
                    body.append(
                        NewChunk(s, text, sha256_text(text), (f"Section {s}",), line, line + 3)
                    )
                    for name, kind in (
                        (who, "person"),
                        (other, "person"),
                        (what, "system"),
                        (where, "place"),
                    ):
                        key = canonical_key(name)
                        mentions.append(Mention(key, name, kind, line + 2, name, "name"))
                path = f"notes/{(files + len(made)) // 500:03d}/note-{files + len(made):06d}.md"
                doc = DocumentInfo(path, sha256_text(path), 100, time.time())
                entries.replace_document(
                    con,
                    doc,
                    body,
                    type_="note",
                    tags=(),
                    importance=5,
                    expires_at=None,
                    now=time.time() - rng.random() * 86400 * 365,
                )
                store_entities.index_document(con, path, mentions)
                made.append(n)
            return sum(made)

        chunks += app.store.run_write(write)
        files += 50
    done.write_text(json.dumps({"files": files, "chunks": chunks}))
    return {"files": files, "chunks": chunks}, app


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def indexing(
    root: Path,
    workspace: Path,
    rounds: int,
    variants: tuple[str, ...] = ("none", "extract", "full"),
) -> dict[str, Any]:
    times: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(rounds):
        for variant in times:
            data = root / f"data-{variant}-{r}"
            secs, app = _index(workspace, data, variant)
            app.close()
            shutil.rmtree(data, ignore_errors=True)
            times[variant].append(secs)
            print(f"  indexing round {r + 1}, {variant}: {secs:.2f} s", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in times.items()}
    out: dict[str, Any] = {"seconds": times, "median": med}
    for a, b in (("extract", "none"), ("full", "none"), ("full", "extract")):
        if a in med and b in med:
            out[f"{a}_over_{b}"] = med[a] / med[b]
    return out


def pages(app: Any, rounds: int) -> dict[str, Any]:
    from memoryd.search import entities as entity_search

    top = [e["name"] for e in entity_search.listing(app.store, top=1000)["entities"]]
    rng = random.Random(3)
    sample = top[:10] + rng.sample(top[10:], min(40, len(top) - 10))
    times: list[float] = []
    sizes: list[int] = []
    for _ in range(rounds):
        for name in sample:
            t = time.perf_counter()
            page = entity_search.page(app.store, name)
            times.append((time.perf_counter() - t) * 1000)
            sizes.append(page["total_sources"])
    counts = app.store.read(
        lambda con: [
            int(con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0])
            for t in ("entities", "mentions", "relations")
        ]
    )
    return {
        "names": len(sample),
        "calls": len(times),
        "p50_ms": _pct(times, 50),
        "p95_ms": _pct(times, 95),
        "max_ms": max(times),
        "sources_max": max(sizes),
        "entities": counts[0],
        "mentions": counts[1],
        "relations": counts[2],
        "most_mentioned": top[:5],
    }


def filter_cost(
    app: Any, rounds: int, queries: int = 40, filter_first: bool = False
) -> dict[str, Any]:
    """The same searches without and with the filter, interleaved per query. `filter_first`:
    the filtered ones before the unfiltered one (a query not searched without the filter just
    before: its BM25 norm is ranked, not remembered)."""
    from memoryd.search import entities as entity_search
    from memoryd.search.searcher import SearchRequest
    from memoryd.store.entries import Filters

    vecs = run.seed_vectors(app)
    app.searcher.vector_cache.invalidate()
    rng = np.random.default_rng(1)
    words = [" ".join(rng.choice(corpus.WORDS, 2)) for _ in range(queries)]
    qvecs = vecs[rng.integers(0, len(vecs), queries)]
    listed = entity_search.listing(app.store, top=200)["entities"]
    # a popular name (a wide filter) and one of middling frequency (a narrow one)
    wide, narrow = listed[0]["name"], listed[len(listed) // 2]["name"]
    out: dict[str, Any] = {"wide": listed[0], "narrow": listed[len(listed) // 2]}
    for mode in ("keyword", "hybrid"):
        t: dict[str, list[float]] = {"none": [], "wide": [], "narrow": []}
        cpu: dict[str, list[float]] = {"none": [], "wide": [], "narrow": []}
        for _ in range(rounds):
            for w, q in zip(words, qvecs, strict=True):
                app.searcher.model = run.StubModel(q)
                labels = (("none", ()), ("wide", (wide,)), ("narrow", (narrow,)))
                for label, ents in labels[1:] + labels[:1] if filter_first else labels:
                    req = SearchRequest(
                        query=w, mode=mode, limit=10, filters=Filters(entities=ents)
                    )
                    s, c = time.perf_counter(), time.process_time()
                    app.searcher.search(req)
                    t[label].append((time.perf_counter() - s) * 1000)
                    cpu[label].append((time.process_time() - c) * 1000)
        base50, base95 = _pct(t["none"], 50), _pct(t["none"], 95)
        # CPU of the process (every search thread): what the search costs, less swayed by
        # the neighbours' load than its wall time on a shared machine
        cpu50, cpu95 = _pct(cpu["none"], 50), _pct(cpu["none"], 95)
        out[mode] = {
            label: {
                "p50_ms": _pct(v, 50),
                "p95_ms": _pct(v, 95),
                "p50_ratio": _pct(v, 50) / base50,
                "p95_ratio": _pct(v, 95) / base95,
                "cpu_p50_ms": _pct(cpu[label], 50),
                "cpu_p50_ratio": _pct(cpu[label], 50) / cpu50,
                "cpu_p95_ratio": _pct(cpu[label], 95) / cpu95,
            }
            for label, v in t.items()
        }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.entity_graph", description=__doc__)
    p.add_argument("--chunks", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", action="store_true")
    p.add_argument("--skip-indexing", action="store_true", help="only the query figures")
    p.add_argument("--only-indexing", action="store_true", help="only the indexing figures")
    p.add_argument("--variants", default="none,extract,full", help="indexing variants")
    p.add_argument(
        "--direct",
        action="store_true",
        help="only the query figures, on a store written directly (no files, no extraction)",
    )
    p.add_argument(
        "--store",
        type=Path,
        help="with --direct: build the store in this directory and keep it, or reuse it",
    )
    p.add_argument(
        "--filter-first",
        action="store_true",
        help="run each query's filtered searches before its unfiltered one",
    )
    a = p.parse_args(argv)
    root = a.store if a.direct and a.store else Path(tempfile.mkdtemp(prefix="entity-graph-"))
    if a.direct:
        try:
            t = time.perf_counter()
            shape, app = direct(root, a.chunks)
            out: dict[str, Any] = {"shape": shape, "rounds": a.rounds}
            out["load_before"] = os.getloadavg()
            out["build_seconds"] = time.perf_counter() - t
            try:
                out["page"] = pages(app, a.rounds)
                out["filter"] = filter_cost(app, a.rounds, filter_first=a.filter_first)
            finally:
                app.close()
            out["load_after"] = os.getloadavg()
        finally:
            if not a.store:
                shutil.rmtree(root, ignore_errors=True)
        print(json.dumps(out, indent=2) if a.json else report(out))
        return 0
    try:
        workspace = root / "ws"
        shape = write_workspace(workspace, a.chunks)
        result: dict[str, Any] = {
            "shape": shape,
            "rounds": a.rounds,
            "load_before": os.getloadavg(),
        }
        print(f"workspace: {shape}", file=sys.stderr)
        if not a.skip_indexing:
            result["indexing"] = indexing(root, workspace, a.rounds, tuple(a.variants.split(",")))
        if a.only_indexing:
            result["load_after"] = os.getloadavg()
            print(json.dumps(result, indent=2) if a.json else report(result))
            return 0
        secs, app = _index(workspace, root / "data-query", "full")
        result["index_seconds_for_queries"] = secs
        try:
            result["page"] = pages(app, a.rounds)
            result["filter"] = filter_cost(app, a.rounds, filter_first=a.filter_first)
        finally:
            app.close()
        result["load_after"] = os.getloadavg()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        print(report(result))
    return 0


def report(r: dict[str, Any]) -> str:
    s = r["shape"]
    lines = [
        f"{s['files']} files, {s['chunks']} chunks, {r['rounds']} rounds;"
        f" load {r['load_before'][0]:.2f} before, {r['load_after'][0]:.2f} after"
    ]
    if "indexing" in r:
        ix = r["indexing"]
        for k, v in ix["seconds"].items():
            lines.append(f"indexing {k:8} " + " ".join(f"{x:.2f}" for x in v) + " s")
        lines.append(
            "ratios (medians): "
            + ", ".join(
                f"{k.replace('_over_', '/')} {v:.3f}" for k, v in ix.items() if "_over_" in k
            )
        )
    if "page" not in r:
        return "\n".join(lines)
    pg = r["page"]
    lines.append(
        f"entity page: p50 {pg['p50_ms']:.1f} ms, p95 {pg['p95_ms']:.1f} ms, max {pg['max_ms']:.1f}"
        f" ms over {pg['calls']} calls ({pg['names']} names; largest {pg['sources_max']} sources);"
        f" {pg['entities']} entities, {pg['mentions']} mentions, {pg['relations']} relations"
    )
    f = r["filter"]
    lines.append(f"filter names: wide {f['wide']}, narrow {f['narrow']}")
    for mode in ("keyword", "hybrid"):
        for label, v in f[mode].items():
            lines.append(
                f"{mode:7} {label:6} p50 {v['p50_ms']:.2f} ms ({v['p50_ratio']:.2f}x),"
                f" p95 {v['p95_ms']:.2f} ms ({v['p95_ratio']:.2f}x); CPU p50"
                f" {v['cpu_p50_ms']:.2f} ms ({v['cpu_p50_ratio']:.2f}x,"
                f" p95 {v['cpu_p95_ratio']:.2f}x)"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
