"""python -m bench.entities_spacy [--model NAME] [--combine MODE;...] [--only SET,...]
                                 [--misses MODE:SET] [--overlap] [--json]
python -m bench.entities_spacy --cost MODE [--reps N] [--embed-every K]
python -m bench.entities_spacy --rss MODE

spaCy's English NER on the entity sets of bench/entities.py (issue 20.1: measured as an optional
extractor, not shipped), alone and combined with memoryd's rule extractor, scored as
bench/entities.py scores the rules (per set and type, precision / recall). spaCy is no
dependency of memoryd: run this with spaCy and a model on PYTHONPATH (`--model`, the model's
package name; default en_core_web_sm). Deterministic.

spaCy's labels map onto memoryd's types as the bench maps the sets' labels (bench/spacy_ner.py).
Modes (`--combine`, separated by ";"): `rules`; `spacy` (spaCy alone: its spans keyed by their
surface; on the own set a first name or surname alone names the one full name spaCy found with
it, as the rules resolve it); bench/spacy_ner.py's MODES (spaCy's names merged into the rules'
mentions afterwards); `v[person=1,system=1|person=3|-1]` (bench/spacy_ner.Voter: spaCy votes
inside the extraction: the votes a rule name spaCy labels gets | the names spaCy alone finds
added, with their vote | a person vote for a rule name spaCy does not call a person).
`--overlap` (with `rules` and `spacy` among the modes) counts, per set, the person and system
names both readers find on the same line with the same key, and those only one finds. `--cost`
times extraction with one mode against keyword- and embedding-mode indexing; `--rss` reads the
process's RSS before and after loading the model and after each of three extractions with it.
See BENCHMARKS.md, "Issue 20.1: spaCy's small English pipeline beside the rules (branch ner8)".
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench import spacy_ner as entity_spacy
from bench.entities import GOLD, PUBLIC, TYPES, Item, Triple, _diff, load_gold, scores
from memoryd.text.entities import Mention, canonical_key, display_name, extract, extract_note
from memoryd.text.markdown import fenced, parse_front_matter

Ents = list[tuple[int, str, str]]  # line, surface, memoryd type


def _body_lines(item_text: str, note: bool) -> list[tuple[int, str]]:
    """(line number, text) of the lines spaCy reads: a note's body outside fenced code."""
    if note:
        _fm, body, first = parse_front_matter(item_text)
    else:
        body, first = item_text, 1
    lines = body.split("\n")
    return [(first + i, ln) for i, (ln, code) in enumerate(fenced(lines)) if not code]


def _skey(m: Mention) -> str:
    return canonical_key(display_name(m.surface)) if m.surface else m.key


def spacy_alone(ents: Ents, resolve: bool) -> list[tuple[int, str, str]]:
    """(line, key, type) of spaCy's names; `resolve`: a one-word person that is the first or
    last word of exactly one person's full name in the same text is that name."""
    out = [(ln, canonical_key(display_name(s)), t) for ln, s, t in ents]
    out = [x for x in out if x[1]]
    if not resolve:
        return out
    full: dict[str, set[str]] = {}
    for _ln, k, t in out:
        ws = k.split(" ")
        if t == "person" and 2 <= len(ws) <= 3:
            for w in {ws[0], ws[-1]}:
                full.setdefault(w, set()).add(k)
    return [
        (ln, next(iter(full[k])) if t == "person" and len(full.get(k, ())) == 1 else k, t)
        for ln, k, t in out
    ]


def run_set(name: str, modes: list[str], nlp: Any, path: Path | None) -> dict[str, dict[str, Any]]:
    """Every mode's scores on one set."""
    pred: dict[str, set[Triple]] = {m: set() for m in modes}
    gold: set[Triple] = set()
    rows: list[tuple[str, str, bool, set[str], Callable[[], list[Mention]]]] = []
    if path is None:
        for it in load_gold(GOLD):
            gold |= {(it.name, ln, k, t) for ln, k, t in it.gold}
            rows.append((it.name, it.text, it.kind == "note", set(), _rules_of(it)))
    else:
        for raw in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(raw)
            sid = str(row["id"])
            gold |= {
                (sid, e[2] if len(e) > 2 else 1, canonical_key(e[1]), e[0]) for e in row["entities"]
            }
            ignore = {canonical_key(s) for s in row.get("ignore", ())}
            text = row["text"]
            rows.append((sid, text, False, ignore, lambda text=text: extract(text)))
    lines = [_body_lines(text, note) for _sid, text, note, _ig, _r in rows]
    docs = entity_spacy.ents_of_lines(nlp, lines)
    own = path is None
    for (sid, _text, _note, ignore, rules), ents in zip(rows, docs, strict=True):
        mentions = rules() if any(not m.startswith("v[") for m in modes) else []
        for mode in modes:
            if mode.startswith("v["):
                with entity_spacy.voting(_voter(nlp, mode)):
                    ms = rules()
                got = [
                    (m.line, m.key if own else _skey(m), m.type)
                    for m in ms
                    if own or m.type in ("person", "system", "place", "other")
                ]
            elif mode == "spacy":
                got = spacy_alone(ents, resolve=own)
            else:
                ms = mentions if mode == "rules" else entity_spacy.combine(mentions, ents, mode)
                got = [
                    (m.line, m.key if own else _skey(m), m.type)
                    for m in ms
                    if own or m.type in ("person", "system", "place", "other")
                ]
            pred[mode] |= {(sid, ln, k, t) for ln, k, t in got if k not in ignore}
    out: dict[str, dict[str, Any]] = {}
    for mode in modes:
        res = {"items": len(rows), "scores": scores(pred[mode], gold)}
        res["misses"] = _diff(pred[mode], gold)
        out[mode] = res
    if "rules" in pred and "spacy" in pred:
        out["rules"]["overlap"] = {
            t: overlap(pred["rules"], pred["spacy"], gold, t) for t in ("person", "system")
        }
    return out


def overlap(rules: set[Triple], spacy: set[Triple], gold: set[Triple], kind: str) -> str:
    """Where the two readers' names of one type (item, line, key) agree and differ: how many
    each part holds, how many of them are right, and the share of the gold names in the union."""
    r = {x[:3] for x in rules if x[3] == kind}
    s = {x[:3] for x in spacy if x[3] == kind}
    g = {x[:3] for x in gold if x[3] == kind}

    def part(name: str, xs: set[tuple[str, int, str]]) -> str:
        right = len(xs & g)
        return f"{name} {len(xs)} ({right} right, P {right / len(xs) if xs else 0:.3f})"

    both = r & s
    return (
        f"gold {len(g)}: {part('rules', r)}; {part('spaCy', s)}; {part('both', both)}, "
        f"R {len(both & g) / len(g) if g else 0:.3f}; {part('rules only', r - s)}; "
        f"{part('spaCy only', s - r)}; either R {len((r | s) & g) / len(g) if g else 0:.3f}"
    )


class _Memo:
    """The model's answers remembered per line: every mode reads the same lines."""

    def __init__(self, nlp: Any) -> None:
        self.nlp = nlp
        self.seen: dict[str, Any] = {}

    def pipe(self, texts: Any, batch_size: int = 256) -> Any:
        texts = list(texts)
        todo = [t for t in dict.fromkeys(texts) if t not in self.seen]
        for t, doc in zip(todo, self.nlp.pipe(todo, batch_size=batch_size), strict=True):
            self.seen[t] = SimpleNamespace(
                ents=[SimpleNamespace(text=e.text, label_=e.label_) for e in doc.ents]
            )
        return (self.seen[t] for t in texts)


def _weights(spec: str) -> dict[str, float]:
    out = {}
    for part in spec.split(","):
        if part:
            t, _, w = part.partition("=")
            out[t] = float(w)
    return out


def _voter(nlp: Any, mode: str) -> entity_spacy.Voter:
    """`v[person=2,system=1|person=3|-1]`: votes for a matched name | mentions added |
    a person vote for a rule name spaCy does not call a person."""
    match, _, add = mode[2:-1].partition("|")
    add, _, unconfirmed = add.partition("|")
    return entity_spacy.Voter(nlp, _weights(match), _weights(add), float(unconfirmed or 0))


def _rules_of(it: Item) -> Callable[[], list[Mention]]:
    return lambda: extract_note(it.text, it.name) if it.kind == "note" else extract(it.text)


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cost(model: str, mode: str, reps: int, embed_every: int) -> dict[str, Any]:
    """CPU seconds (best of `reps`, caches emptied) of extraction over bench/data's notes, the
    rules alone and with spaCy voting (`mode`, a `v[...]` mode), spaCy's own pass over the same
    lines, cold keyword-mode indexing (best of 2) and cold embedding-mode indexing of every
    `embed_every`-th note (once); RSS after each step."""
    import time

    from bench.entities import corpus_notes, keyword_index_seconds
    from memoryd.core import logsetup
    from memoryd.text import entity_names
    from memoryd.text.entities import extract_document
    from memoryd.text.markdown import chunk_markdown

    logsetup.configure("warning")
    notes = corpus_notes()
    parsed = [(path, text, *parse_front_matter(text)) for path, text in notes]
    chunks = sum(len(chunk_markdown(b, first_line=f)) for _p, _t, _fm, b, f in parsed)
    out: dict[str, Any] = {"notes": len(notes), "chunks": chunks, "rss_start_mb": _rss_mb()}

    def best(fn: Callable[[], None], n: int = reps) -> float:
        times = []
        for _ in range(n):
            canonical_key.cache_clear()
            display_name.cache_clear()
            entity_names.clear_caches()
            t = time.process_time()
            fn()
            times.append(time.process_time() - t)
        return min(times)

    def added() -> None:
        for path, text, fm, body, first in parsed:
            extract_document(fm, body, first, text, path)

    out["rules_s"] = best(added)
    out["rss_rules_mb"] = _rss_mb()
    nlp = entity_spacy.load(model)
    out["rss_model_loaded_mb"] = _rss_mb()
    lines = [_body_lines(text, True) for _p, text in notes]
    flat = [t for doc in lines for _n, t in doc if t.strip() and not t.islower()]
    out["spacy_lines"] = len(flat)
    out["spacy_words"] = sum(len(t.split()) for t in flat)
    out["spacy_alone_s"] = best(lambda: list(nlp.pipe(flat, batch_size=256)))
    with entity_spacy.voting(_voter(nlp, mode)):
        out["rules_spacy_s"] = best(added)
    out["rss_after_spacy_mb"] = _rss_mb()
    runs = [keyword_index_seconds(notes) for _ in range(2)]
    out["keyword_index_cpu_s"] = min(r[1] for r in runs)
    out["keyword_index_wall_s"] = min(r[0] for r in runs)
    if embed_every:
        sub = notes[::embed_every]
        sub_parsed = [(p_, t_, *parse_front_matter(t_)) for p_, t_ in sub]
        out["embed_notes"] = len(sub)
        out["embed_chunks"] = sum(
            len(chunk_markdown(b, first_line=f)) for _p, _t, _fm, b, f in sub_parsed
        )
        out["embed_index_cpu_s"], out["embed_index_wall_s"] = _embed_index(sub)
        with entity_spacy.voting(_voter(nlp, mode)):
            t = time.process_time()
            for path, text, fm, body, first in sub_parsed:
                extract_document(fm, body, first, text, path)
            out["embed_sub_rules_spacy_s"] = time.process_time() - t
        t = time.process_time()
        for path, text, fm, body, first in sub_parsed:
            extract_document(fm, body, first, text, path)
        out["embed_sub_rules_s"] = time.process_time() - t
    return out


def rss(model: str, mode: str, passes: int = 3) -> dict[str, Any]:
    """RSS (MB) of this process: at start, after the rules' extraction of bench/data's notes,
    after loading the model, after each of `passes` extractions with spaCy voting (`mode`)."""
    from bench.entities import corpus_notes
    from memoryd.text.entities import extract_document

    notes = corpus_notes()
    parsed = [(path, text, *parse_front_matter(text)) for path, text in notes]
    out: dict[str, Any] = {"start": _rss_mb()}
    for path, text, fm, body, first in parsed:
        extract_document(fm, body, first, text, path)
    out["rules"] = _rss_mb()
    nlp = entity_spacy.load(model)
    out["model_loaded"] = _rss_mb()
    with entity_spacy.voting(_voter(nlp, mode)):
        for i in range(passes):
            for path, text, fm, body, first in parsed:
                extract_document(fm, body, first, text, path)
            out[f"spacy_pass_{i + 1}"] = _rss_mb()
    out["strings"] = len(nlp.vocab.strings)
    return out


def _embed_index(notes: list[tuple[str, str]]) -> tuple[float, float]:
    """(CPU, wall) seconds of a cold reconcile with the offline model, embeddings included."""
    import shutil
    import tempfile
    import time

    from bench.entities import written_workspace
    from memoryd.serve.app import App, default_model_holder

    root = Path(tempfile.mkdtemp(prefix="memoryd-bench-spacy-"))
    try:
        cfg = written_workspace(notes, root)
        app = App(cfg, model=default_model_holder(cfg))
        try:
            app.model.start()
            assert app.model.wait_ready(120), app.model.reason
            app.model.embed_batch(["warm up"])
            t, c = time.perf_counter(), time.process_time()
            app.indexer.reconcile()
            app.embedder.run()
            return time.process_time() - c, time.perf_counter() - t
        finally:
            app.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.entities_spacy", description=__doc__)
    p.add_argument("--model", default="en_core_web_sm")
    p.add_argument("--combine", default="rules;spacy;" + ";".join(entity_spacy.MODES))
    p.add_argument("--only", help="sets to score (gold, wikigold_dev, ...; default all)")
    p.add_argument("--rows", default="person,system", help="types to print")
    p.add_argument("--misses", help="MODE:SET: list that mode's misses on that set")
    p.add_argument(
        "--overlap", action="store_true", help="with rules and spacy: where the two agree"
    )
    p.add_argument("--json", action="store_true")
    p.add_argument("--cost", metavar="MODE", help="time extraction with this v[...] mode")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--embed-every", type=int, default=4, help="0: no embedding-mode indexing")
    p.add_argument("--rss", metavar="MODE", help="read RSS around extraction with this mode")
    args = p.parse_args(argv)
    if args.rss:
        print(json.dumps(rss(args.model, args.rss), indent=1))
        return 0
    if args.cost:
        res = cost(args.model, args.cost, args.reps, args.embed_every)
        print(json.dumps(res, indent=1))
        return 0
    nlp = _Memo(entity_spacy.load(args.model))
    modes = args.combine.split(";")
    sets = ["gold", *PUBLIC]
    if args.only:
        sets = [s for s in sets if s in args.only.split(",")]
    result: dict[str, dict[str, Any]] = {}
    for s in sets:
        result[s] = run_set(s, modes, nlp, None if s == "gold" else PUBLIC[s][1])
    if args.json:
        print(
            json.dumps(
                {s: {m: r["scores"] for m, r in res.items()} for s, res in result.items()},
                indent=1,
            )
        )
        return 0
    rows = [r for r in args.rows.split(",") if r in (*TYPES, "all", "any")]
    width = max(len(m) for m in modes) + 2
    for s, res in result.items():
        print(f"\n{s}")
        print(f"  {'mode':<{width}}" + "".join(f"{r + ' P / R':>18}" for r in rows))
        for mode, r in res.items():
            cells = "".join(
                f"{r['scores'][t]['precision']:>10.3f} /{r['scores'][t]['recall']:>6.3f}"
                for t in rows
            )
            print(f"  {mode:<{width}}{cells}")
        if args.overlap and "overlap" in res.get("rules", {}):
            for t, line in res["rules"]["overlap"].items():
                print(f"  {t}: {line}")
    if args.misses:
        mode, _, s = args.misses.partition(":")
        for kind, lines in result[s][mode]["misses"].items():
            print(f"\n{kind}:")
            for ln in lines:
                print(f"  {ln}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
