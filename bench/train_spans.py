"""python -m bench.train_spans [--epochs N] [--min-count N] [--out PATH] [--eval]

Trains the span tagger (bench/span_tagger.py: measured, not shipped) and writes its weights to
/tmp/entity-tagger.tsv.gz (or --out). Deterministic: the same data and arguments give the same
file. `python -m bench entities --tagger PATH` scores it.

Training data: the train splits in bench/data/entities/train, as bench.train_typer reads them
(bench/data/README.md gives their sources, commits and licences). The sets `python -m bench
entities` reports are never read here. Each labelled surface is found on its line (every
occurrence, word-bounded); its words are tagged B-/I- with its type, the rest O; words inside
an `ignore` surface (code, concepts) give no update. Only the lines the tagger would read are
trained on (with a capital letter, outside code), as it would read them (explicit entities
blanked), with the rules' names it would be shown (Recorder).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench import span_tagger as entity_tagger
from bench.span_tagger import TAGS, Span, _context, tag_scores, tokens
from bench.train_typer import TRAIN, Averaged, rows, shuffled_passes

OUT = Path("/tmp/entity-tagger.tsv.gz")  # not shipped: see bench/span_tagger.py
REPEAT = {"wikigold": 4, "stackoverflow": 1, "crossner": 1}
Line = tuple[list[str], list[int], list[str] | None]  # words, tag (-1: no update), rule tags
RULES = True  # the rules' names are a feature


class Recorder(entity_tagger.Tagger):
    """A tagger that tags nothing and records the rules' names it is shown, line by line: the
    features the shipped tagger sees, from the same code path (entity_tagger.respan)."""

    def __init__(self) -> None:
        super().__init__({})
        self.uses_rules = True
        self.seen: dict[int, tuple[str, list[tuple[int, int, str]]]] = {}

    def spans(
        self, line: str, names: Sequence[tuple[int, int, str]] = (), n: int = 0
    ) -> list[Span]:
        self.seen[n] = (line, list(names))
        return []


def rule_names(text: str) -> dict[int, tuple[str, list[tuple[int, int, str]]]]:
    """The lines the tagger reads (explicit entities blanked) and the rules' names on each,
    (start, end, type), as it is shown them."""
    from memoryd.text.entities import extract

    rec = Recorder()
    entity_tagger.install(rec)
    try:
        extract(text)
    finally:
        entity_tagger.install(None)
    return rec.seen


def _find(line: str, surface: str) -> list[tuple[int, int]]:
    if not surface.strip():
        return []
    rx = re.compile(r"(?<![\w])" + re.escape(surface) + r"(?![\w])")
    return [(m.start(), m.end()) for m in rx.finditer(line)]


def lines_of(path: Path) -> list[Line]:
    out: list[Line] = []
    for row in rows([path]):
        text_lines = row["text"].split("\n")
        gold: dict[int, list[tuple[str, str]]] = {}
        for e in row["entities"]:
            gold.setdefault(e[2] if len(e) > 2 else 1, []).append((e[0], e[1]))
        ignore = row.get("ignore", ())
        seen = rule_names(row["text"])
        for n, _line in enumerate(text_lines, 1):
            if n not in seen:  # a line the tagger does not read (no capital letter, code)
                continue
            line, names = seen[n]
            toks = tokens(line)
            if not toks:
                continue
            tags = [0] * len(toks)
            for s in ignore:
                for a, b in _find(line, s):
                    for i, (ts, te, _) in enumerate(toks):
                        if ts >= a and te <= b:
                            tags[i] = -1
            # longer surfaces first, so a name inside a longer one is the longer one's
            for kind, s in sorted(gold.get(n, ()), key=lambda g: -len(g[1])):
                if kind not in entity_tagger.TYPES:
                    continue
                for a, b in _find(line, s):
                    inside = [i for i, (ts, te, _) in enumerate(toks) if ts >= a and te <= b]
                    if not inside or any(tags[i] > 0 for i in inside):
                        continue
                    tags[inside[0]] = TAGS.index(f"B-{kind}")
                    for i in inside[1:]:
                        tags[i] = TAGS.index(f"I-{kind}")
            rules = entity_tagger.rule_tags(toks, names) if RULES else None
            out.append(([t[2] for t in toks], tags, rules))
    return out


def train(data: list[Line], epochs: int, min_count: int, seed: int = 0) -> dict[str, list[float]]:
    """An averaged perceptron, greedy left to right, the tag before as predicted."""
    k = len(TAGS)
    ctx = [[_context(words, i) for i in range(len(words))] for words, _, _ in data]
    counts: Counter[str] = Counter(f for c in ctx for fs in c for f in fs)
    ctx = [[[f for f in fs if counts[f] >= min_count] for fs in c] for c in ctx]
    model = Averaged(k)
    get = model.w.get
    step = 0
    for li in shuffled_passes(len(data), epochs, seed):
        words, gold, rules = data[li]
        prev = "O"
        for i, fs in enumerate(ctx[li]):
            feats = [*fs, f"pt:{prev}", f"pt|w:{prev}|{words[i].lower()}"]
            if rules is not None:
                feats.extend(entity_tagger._rule_features(rules[i], prev))
            s = tag_scores(get, feats, prev, k)
            guess = max(range(k), key=s.__getitem__)
            y = gold[i]
            step += 1
            if y >= 0 and guess != y:
                model.update(feats, y, guess, step)
            prev = TAGS[guess]
    return model.averaged(step, 0.01)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.train_spans", description=__doc__)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--min-count", type=int, default=2)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--repeat", default=",".join(f"{k}={v}" for k, v in REPEAT.items()))
    p.add_argument("--no-rules", action="store_true", help="without the rules' names as features")
    args = p.parse_args(argv)
    global RULES
    RULES = not args.no_rules
    repeats = {k: int(v) for k, _, v in (x.partition("=") for x in args.repeat.split(",") if x)}
    data: list[Line] = []
    for path in sorted(TRAIN.glob("*.jsonl.gz")):
        lines = lines_of(path)
        data.extend(lines * repeats.get(path.name.split("-")[0], 1))
    print(f"{len(data)} lines, {sum(len(x[0]) for x in data)} words")
    weights = train(data, args.epochs, args.min_count)
    blob = entity_tagger.dumps(weights)
    print(f"{len(weights)} features, {len(blob)} bytes")
    args.out.write_bytes(blob)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
