"""python -m bench entities [--json] [--reps N] [--dev] [--no-index] [--bare] [--rules]
                           [--misses SET] [--only SET,...]
                           [--tagger PATH [--tagger-add TYPES] [--tagger-floor M]]

Entity extraction (memoryd/text/entities.py): precision, recall and F1 per type on the labelled
sets in bench/data/entities (gold.txt, written for memoryd; wnut17-test.jsonl, WNUT-17's test
set; crossner-ai-test.jsonl, CrossNER's AI test set), then its speed beside the chunker and
beside keyword-mode indexing over the same notes (every corpus in bench/data). `--rules` turns
the learned typer off (the rules alone: the baseline of issue 20.1's typer, same run).
`--bare` also times indexing without extraction and entity rows, for what extraction adds to
it (see `speed`). `--reps 0` scores quality only; `--only` scores the sets named; `--tagger`
puts the span tagger of bench/span_tagger.py (measured for issue 20.1, not shipped) in place
of the rules' names, or
with `--tagger-add` lets it add those types only where the rules found no name. See
BENCHMARKS.md, "Entities: extraction" and "Issue 20.1: span detection". spaCy's recogniser
beside the rules (measured, not shipped) is scored by bench/entities_spacy.py.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.text import entity_names, entity_typer
from memoryd.text.entities import (
    Mention,
    canonical_key,
    display_name,
    extract,
    extract_document,
    extract_note,
)
from memoryd.text.markdown import chunk_markdown, parse_front_matter

DATA = Path(__file__).parent / "data"
GOLD = DATA / "entities" / "gold.txt"
WNUT = DATA / "entities" / "wnut17-test.jsonl"
CROSSNER = DATA / "entities" / "crossner-ai-test.jsonl"
WIKIGOLD = DATA / "entities" / "wikigold-test.jsonl"
WIKIGOLD_DEV = DATA / "entities" / "wikigold-dev.jsonl"
SOFLOW = DATA / "entities" / "stackoverflow-test.jsonl"
SOFLOW_DEV = DATA / "entities" / "stackoverflow-dev.jsonl"
TYPES = ("person", "system", "place", "identifier", "tag", "other")
Triple = tuple[str, int, str, str]  # item, line, key, type


@dataclass(frozen=True)
class Item:
    kind: str  # "note" | "memory"
    name: str
    text: str
    gold: frozenset[tuple[int, str, str]]  # line, key, type


def load_gold(path: Path = GOLD) -> list[Item]:
    """The items of gold.txt: `=== note PATH` / `=== memory ID`, text, `%= type:Name, ...`."""
    items: list[Item] = []
    head: tuple[str, str] | None = None
    lines: list[str] = []
    gold: set[tuple[int, str, str]] = set()

    def close() -> None:
        if head is not None:
            while lines and not lines[-1].strip():
                lines.pop()
            items.append(Item(head[0], head[1], "\n".join(lines) + "\n", frozenset(gold)))

    for raw in path.read_text(encoding="utf-8").split("\n"):
        if raw.startswith("%%") and head is None:
            continue
        if raw.startswith("=== "):
            close()
            kind, _, name = raw[4:].partition(" ")
            head, lines, gold = (kind, name.strip()), [], set()
            continue
        if head is None:
            continue
        if raw.startswith("%= "):
            for label in raw[3:].split(","):
                kind, _, name = label.strip().partition(":")
                if kind not in TYPES or not name:
                    raise ValueError(f"{head[1]}: bad label {label!r}")
                key = canonical_key(name) if kind != "tag" else name.strip().lower()
                gold.add((len(lines), key, kind))
            continue
        lines.append(raw)
    close()
    return items


def predict(item: Item) -> list[Mention]:
    return extract_note(item.text, item.name) if item.kind == "note" else extract(item.text)


def scores(pred: set[Triple], gold: set[Triple]) -> dict[str, dict[str, float]]:
    """Per type, and over all types (typed), and detection ignoring type ("any")."""
    out: dict[str, dict[str, float]] = {}
    for t in (*TYPES, "all"):
        p = {x for x in pred if t == "all" or x[3] == t}
        g = {x for x in gold if t == "all" or x[3] == t}
        out[t] = _prf(len(p & g), len(p), len(g))
    p_any = {x[:3] for x in pred}
    g_any = {x[:3] for x in gold}
    out["any"] = _prf(len(p_any & g_any), len(p_any), len(g_any))
    return out


def _prf(tp: int, np_: int, ng: int) -> dict[str, float]:
    p = tp / np_ if np_ else 0.0
    r = tp / ng if ng else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": p, "recall": r, "f1": f, "predicted": np_, "gold": ng}


def evaluate_gold(items: list[Item]) -> dict[str, Any]:
    pred: set[Triple] = set()
    gold: set[Triple] = set()
    for it in items:
        pred |= {(it.name, m.line, m.key, m.type) for m in predict(it)}
        gold |= {(it.name, line, key, t) for line, key, t in it.gold}
    return {"items": len(items), "scores": scores(pred, gold), "misses": _diff(pred, gold)}


def _diff(pred: set[Triple], gold: set[Triple]) -> dict[str, list[str]]:
    fp = sorted(f"{i}:{ln} {k} ({t})" for i, ln, k, t in pred - gold)
    fn = sorted(f"{i}:{ln} {k} ({t})" for i, ln, k, t in gold - pred)
    return {"false_positives": fp, "false_negatives": fn}


def evaluate_wnut(path: Path = WNUT) -> dict[str, Any]:
    """A public set, one row a sentence or a document: an entity counts when its key and type
    are found on its line (a row's entities are [type, surface] on line 1, or [type, surface,
    line]). The key is the surface's (the sets label what a line writes, not the entity it
    resolves to: "Baker" stays "baker" where memoryd names it Caroline Baker). A row's
    "ignore" surfaces (concepts, code) are neither gold nor wrong when predicted. "person,
    names" leaves @mentions out of the predictions (memoryd types every @handle a person;
    WNUT-17 labels a few handles and leaves most unlabelled)."""
    pred: set[Triple] = set()
    by_name: set[Triple] = set()
    gold: set[Triple] = set()
    n = 0
    for raw in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(raw)
        n += 1
        sid = str(row["id"])
        gold |= {
            (sid, e[2] if len(e) > 2 else 1, canonical_key(e[1]), e[0]) for e in row["entities"]
        }
        ignore = {canonical_key(s) for s in row.get("ignore", ())}
        for m in extract(row["text"]):
            key = canonical_key(display_name(m.surface)) if m.surface else m.key
            if m.type in ("person", "system", "place", "other") and key not in ignore:
                pred.add((sid, m.line, key, m.type))
                if m.source != "mention":
                    by_name.add((sid, m.line, key, m.type))
    out = scores(pred, gold)
    out["person, names"] = scores(by_name, gold)["person"]
    return {"items": n, "scores": out, "misses": _diff(pred, gold)}


# --- speed -------------------------------------------------------------------------------------


def corpus_notes() -> list[tuple[str, str]]:
    """(path, text) of every note in bench/data's retrieval sets."""
    notes = [
        (str(p.relative_to(DATA)), p.read_text(encoding="utf-8"))
        for p in sorted(DATA.glob("*/corpus/**/*.md"))
    ]
    qa = DATA / "notes-qa" / "corpus.jsonl"
    for raw in qa.read_text(encoding="utf-8").splitlines():
        d = json.loads(raw)
        notes.append((f"notes-qa/{d['_id']}.md", f"# {d.get('title', '')}\n\n{d['text']}\n"))
    return notes


def speed(reps: int = 5, index: bool = True, bare: bool = False) -> dict[str, Any]:
    """Best of `reps` passes each, in CPU time of this process (the machine is shared: wall
    time swings with the neighbours' load; these are pure functions, so on an idle machine CPU
    time is their wall time): the chunker alone, and extraction, over the same notes.
    Keyword indexing is wall time (its fsyncs are part of its cost), best of two.

    `added_over_index_cpu` divides extraction's CPU by indexing's, and indexing runs the same
    extraction and writes the entity rows: a share of indexing, not what extraction adds to
    indexing without it. With `bare`, indexing is also timed without extraction and entity rows
    (and with extraction but no rows), alternated with the full runs, best of two each:
    `added_over_index_bare_cpu` is extraction's CPU over that bare indexing's, and
    `full_over_bare_cpu` - 1 what extraction and its rows add to it."""
    notes = corpus_notes()
    chunks = sum(
        len(chunk_markdown(b, first_line=f))
        for b, f in (parse_front_matter(t)[1:] for _, t in notes)
    )
    mentions = sum(len(extract_note(t, p)) for p, t in notes)

    def best(fn: Any) -> float:
        times = []
        for _ in range(reps):
            t = time.process_time()
            fn()
            times.append(time.process_time() - t)
        return min(times)

    def cold() -> None:  # every pass starts with empty caches, as a first indexing does
        canonical_key.cache_clear()
        display_name.cache_clear()
        entity_names.clear_caches()

    def chunker() -> None:
        for _path, text in notes:
            _fm, body, first = parse_front_matter(text)
            chunk_markdown(body, first_line=first)

    def extraction() -> None:
        cold()
        for path, text in notes:
            extract_note(text, path)

    parsed = [(path, text, *parse_front_matter(text)) for path, text in notes]

    def added() -> None:  # what indexing would add: front matter is parsed already
        cold()
        for path, text, fm, body, first in parsed:
            extract_document(fm, body, first, text, path)

    chunk_s = best(chunker)
    extract_s = best(extraction)
    added_s = best(added)
    out: dict[str, Any] = {
        "notes": len(notes),
        "chunks": chunks,
        "mentions": mentions,
        "chunker_chunks_per_s": chunks / chunk_s,
        "extract_chunks_per_s": chunks / extract_s,
        "extract_over_chunker": extract_s / chunk_s,
        "added_chunks_per_s": chunks / added_s,
        "added_over_chunker": added_s / chunk_s,
    }
    if index:
        variants = ("full", "none", "extract", "drain") if bare else ("full",)
        timed: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
        for _ in range(2):
            for v in variants:
                timed[v].append(keyword_index_seconds(notes, v))
        runs = timed["full"]
        index_s = min(r[0] for r in runs)
        index_cpu = min(r[1] for r in runs)
        if bare:
            none_cpu = min(r[1] for r in timed["none"])
            extract_cpu = min(r[1] for r in timed["extract"])
            out["index_bare_cpu_chunks_per_s"] = chunks / none_cpu
            out["added_over_index_bare_cpu"] = added_s / none_cpu
            out["extract_over_bare_cpu"] = extract_cpu / none_cpu
            out["full_over_bare_cpu"] = index_cpu / none_cpu
            # the whole cost: indexing and the entity stage's drain of its queue
            out["drained_over_bare_cpu"] = min(r[1] for r in timed["drain"]) / none_cpu
        out["index_chunks_per_s"] = chunks / index_s
        out["extract_over_index"] = extract_s / index_s
        out["added_over_index"] = added_s / index_s
        out["index_cpu_chunks_per_s"] = chunks / index_cpu
        out["added_over_index_cpu"] = added_s / index_cpu
    return out


def written_workspace(notes: list[tuple[str, str]], root: Path) -> Any:
    """A config under `root` whose workspace holds these (path, text) notes."""
    from bench.run import make_config

    cfg = make_config(root)
    for path, text in notes:
        f = Path(cfg.workspace) / path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text, encoding="utf-8")
    return cfg


def keyword_index_seconds(
    notes: list[tuple[str, str]], variant: str = "full"
) -> tuple[float, float]:
    """Cold keyword-mode indexing (reconcile) of the same notes: (wall, CPU) seconds. `variant`:
    `full` (the notes queued for the entity stage, store/entitystage.py; not drained), `drain`
    (the same, then the queue drained: extraction and its rows, the whole cost), `extract` (the
    queue drained without rows) or `none` (no queue, neither extraction nor rows)."""
    from memoryd.index import indexer
    from memoryd.index.embed import ModelHolder
    from memoryd.serve.app import App
    from memoryd.store import entities as store_entities
    from memoryd.store import entitystage

    root = Path(tempfile.mkdtemp(prefix="memoryd-bench-ent-"))
    try:
        cfg = written_workspace(notes, root)
        app = App(cfg, model=ModelHolder(None, description="keyword only"))
        saved = (indexer.entities_later, store_entities.index_document)
        if variant == "none":
            indexer.entities_later = lambda *a, **k: None  # type: ignore[assignment]
        if variant == "extract":
            store_entities.index_document = lambda *a, **k: 0  # type: ignore[assignment]
        try:
            t, c = time.perf_counter(), time.process_time()
            app.indexer.reconcile()
            if variant in ("drain", "extract"):
                entitystage.store_caught_up(app.store)
            return time.perf_counter() - t, time.process_time() - c
        finally:
            indexer.entities_later, store_entities.index_document = saved
            app.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --- report ------------------------------------------------------------------------------------

_WG = "PER=person, ORG=system, LOC=place, MISC=other"
_SO = "application, library, language, OS, website, organisation, device=system; user=person"
PUBLIC: dict[str, tuple[str, Path]] = {
    "wnut17": (
        "WNUT-17 test (person, corporation+product=system, location=place, group+creative=other)",
        WNUT,
    ),
    "crossner_ai": (
        "CrossNER AI test (person+researcher, organisation+university+product+programlang="
        "system, country+location=place, conference+misc=other; concepts ignored)",
        CROSSNER,
    ),
    "wikigold": (f"WikiGold test, odd articles ({_WG})", WIKIGOLD),
    "wikigold_dev": (f"WikiGold dev, every fourth article ({_WG})", WIKIGOLD_DEV),
    "stackoverflow": (f"StackOverflowNER test, a third of the posts ({_SO})", SOFLOW),
    "stackoverflow_dev": (f"StackOverflowNER dev, a third of the posts ({_SO})", SOFLOW_DEV),
}


def print_scores(title: str, res: dict[str, Any], rows: tuple[str, ...]) -> None:
    print(f"\n{title} ({res['items']} items)")
    print(f"  {'type':<15}{'P':>7}{'R':>7}{'F1':>7}{'pred':>7}{'gold':>7}")
    for t in rows:
        s = res["scores"][t]
        print(
            f"  {t:<15}{s['precision']:>7.3f}{s['recall']:>7.3f}{s['f1']:>7.3f}"
            f"{s['predicted']:>7}{s['gold']:>7}"
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench entities", description=__doc__)
    p.add_argument("--json", action="store_true")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument(
        "--misses",
        nargs="?",
        const="gold",
        choices=("gold", *PUBLIC),
        help="list a set's false positives and negatives (default: gold)",
    )
    p.add_argument("--dev", action="store_true", help="also score the dev splits (for tuning)")
    p.add_argument("--no-index", action="store_true", help="skip the keyword indexing timing")
    p.add_argument(
        "--bare",
        action="store_true",
        help="also time indexing without extraction and entity rows (what extraction adds)",
    )
    p.add_argument(
        "--rules",
        action="store_true",
        help="the rules alone, without the learned typer (memoryd/text/entity_typer.py)",
    )
    p.add_argument(
        "--tagger",
        type=Path,
        help="span tagger weights (bench/span_tagger.py, not shipped) in place of the rules' names",
    )
    p.add_argument(
        "--tagger-add",
        default="",
        help="with --tagger: the types it only adds where the rules found no name (e.g. system)",
    )
    p.add_argument("--tagger-floor", type=float, default=0.0, help="an added span's least margin")
    p.add_argument("--only", help="score only these sets (comma-separated: gold, wikigold_dev...)")
    args = p.parse_args(argv)
    if args.rules:
        entity_typer.set_decider(None)
    if args.tagger:
        from bench import span_tagger

        span_tagger.ADD = frozenset(t for t in args.tagger_add.split(",") if t)
        span_tagger.FLOOR = args.tagger_floor
        span_tagger.install(span_tagger.loads(args.tagger.read_bytes()))
    from memoryd.core import logsetup

    logsetup.configure("warning")
    only = set(args.only.split(",")) if args.only else None
    if args.misses and only is not None:
        only.add(args.misses)  # the set whose misses are listed is always scored
    elif args.misses and args.misses.endswith("_dev"):
        args.dev = True
    result: dict[str, Any] = {}
    if only is None or "gold" in only:
        result["gold"] = evaluate_gold(load_gold())
    for name, (_title, path) in PUBLIC.items():
        if (only is None and (args.dev or not name.endswith("_dev"))) or (only and name in only):
            result[name] = evaluate_wnut(path)
    if args.reps:
        result["speed"] = speed(args.reps, index=not args.no_index, bare=args.bare)
    if args.json:
        for res in result.values():
            res.pop("misses", None)
        print(json.dumps(result, indent=2))
        return 0
    if "gold" in result:
        print_scores(
            "memoryd gold set (bench/data/entities/gold.txt)",
            result["gold"],
            (*TYPES, "all", "any"),
        )
    for name, (title, _path) in PUBLIC.items():
        if name in result:
            rows = ("person", "person, names") if name == "wnut17" else ("person",)
            print_scores(title, result[name], (*rows, "system", "place", "other", "all", "any"))
    if args.misses:
        for kind, lines in result[args.misses]["misses"].items():
            print(f"\n{kind}:")
            for ln in lines:
                print(f"  {ln}")
    if "speed" not in result:
        return 0
    s = result["speed"]
    print(
        f"\nspeed over {s['notes']} notes ({s['chunks']} chunks, {s['mentions']} mentions):\n"
        f"  chunker (front matter + chunk_markdown) {s['chunker_chunks_per_s']:>10.0f} chunks/s\n"
        f"  extraction (extract_note)               {s['extract_chunks_per_s']:>10.0f} chunks/s\n"
        f"  extraction time / chunker time          {s['extract_over_chunker']:>10.2f}\n"
        f"  extraction, front matter parsed already {s['added_chunks_per_s']:>10.0f} chunks/s\n"
        f"  that time / chunker time                {s['added_over_chunker']:>10.2f}"
    )
    if "index_chunks_per_s" in s:
        print(
            f"  keyword-mode indexing (cold reconcile)  {s['index_chunks_per_s']:>10.0f} chunks/s\n"
            f"  extraction time / indexing time         {s['extract_over_index']:>10.2f}\n"
            f"  added extraction time / indexing time   {s['added_over_index']:>10.2f}"
            "  (target <= 0.15)\n"
            f"  keyword-mode indexing, CPU time   {s['index_cpu_chunks_per_s']:>16.0f} chunks/s\n"
            f"  added extraction CPU / indexing CPU     {s['added_over_index_cpu']:>10.2f}"
            "  (target <= 0.15)"
        )
    if "index_bare_cpu_chunks_per_s" in s:
        print(
            f"  bare indexing (no extraction), CPU {s['index_bare_cpu_chunks_per_s']:>6.0f}/s\n"
            f"  added extraction CPU / that CPU         {s['added_over_index_bare_cpu']:>10.2f}\n"
            f"  indexing CPU, extraction only / bare    {s['extract_over_bare_cpu']:>10.2f}\n"
            f"  indexing CPU, full / bare               {s['full_over_bare_cpu']:>10.2f}\n"
            f"  with the entity stage drained / bare    {s['drained_over_bare_cpu']:>10.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
