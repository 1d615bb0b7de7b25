"""python -m bench.train_typer [--epochs N] [--out PATH] [--min-count N] [--repeat SET=N,...]

Trains the entity typer (memoryd/text/entity_typer.py) and writes its weights to
memoryd/data/entity-typer.tsv.gz. Deterministic: the same data and arguments give the same file.

Training data: the train splits in bench/data/entities/train (bench/data/README.md gives their
sources, commits and licences; the converters' docstrings the commands): WikiGold's train
articles, StackOverflowNER's train file, CrossNER's train and dev files of its five domains. The
sets `python -m bench entities` reports (own set, WNUT-17, CrossNER AI test, WikiGold dev and
test, StackOverflowNER dev and test) are never read here.

Each text is run through the extractor with the rules alone; every capitalised name it proposes
becomes one example: its features (entity_typer.features) and its label, the type the set gives
its surface on its line, or `none` when the set labels nothing there (a surface the set marks
`ignore`, code or a concept, is left out). An averaged perceptron learns the five classes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memoryd.text import entity_names, entity_typer
from memoryd.text.entities import canonical_key, extract
from memoryd.text.entity_typer import CLASSES, NONE

TRAIN = Path(__file__).parent / "data" / "entities" / "train"
OUT = Path(entity_typer.__file__).parent.parent / "data" / entity_typer.WEIGHTS
Example = tuple[list[str], int]  # features, class index
# Each set's weight, as copies of its examples: CrossNER gives 17K of them, WikiGold 1K and
# StackOverflowNER 2K, and the latter two are closer to notes and docs.
REPEAT = {"wikigold": 4, "stackoverflow": 2}


class Recorder:
    """A decider that keeps the rule votes and records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[list[str], str, int]] = []

    def decide(self, feats: list[str], key: str, line: int) -> None:
        self.asked.append((feats, key, line))


def rows(paths: list[Path]) -> Iterator[dict[str, Any]]:
    for path in paths:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for raw in f:
                yield json.loads(raw)


def label(key: str, gold: Sequence[tuple[str, str]], ignore: set[str]) -> str:
    """The type of a proposed name: the type of the labelled name on its line it is, or that
    holds it or that it holds, word for word (a span that is one word too long or short is still
    of its type: "the Nobel Prize" of "Nobel Prize in Physics"); "" to leave it out (marked
    `ignore`); `none` when it overlaps nothing labelled."""
    if key in ignore:
        return ""
    padded = f" {key} "
    best, size = NONE, 0
    for g, kind in gold:
        if g == key:
            return kind
        if (f" {g} " in padded or padded in f" {g} ") and len(g) > size:
            best, size = kind, len(g)
    if best == NONE and any(f" {g} " in padded or padded in f" {g} " for g in ignore):
        return ""
    return best


def examples(paths: list[Path], repeats: dict[str, int] | None = None) -> list[Example]:
    """One example per proposed name of every text of `paths`, repeated as `repeats` (by the
    file name's first word; REPEAT by default) says."""
    repeats = REPEAT if repeats is None else repeats
    rec = Recorder()
    out: list[Example] = []
    entity_typer.set_decider(rec)
    entity_names.ASK_EVERY = True
    try:
        for path in paths:
            repeat = repeats.get(path.name.split("-")[0], 1)
            for row in rows([path]):
                gold: dict[int, list[tuple[str, str]]] = {}
                for e in row["entities"]:
                    gold.setdefault(e[2] if len(e) > 2 else 1, []).append(
                        (canonical_key(e[1]), e[0])
                    )
                ignore = {canonical_key(s) for s in row.get("ignore", ())}
                rec.asked.clear()
                extract(row["text"])
                for feats, key, line in rec.asked:
                    kind = label(key, gold.get(line, ()), ignore)
                    if kind:
                        out.extend([(feats, CLASSES.index(kind))] * repeat)
    finally:
        entity_typer.reset_decider()
        entity_names.ASK_EVERY = False
    return out


def shuffled_passes(n: int, times: int, seed: int) -> Iterator[int]:
    """The indexes of n examples for `times` passes, each pass in a new seeded shuffle (the
    same order every run, so retraining gives the same weights)."""
    order = list(range(n))
    rng = random.Random(seed)
    for _ in range(times):
        rng.shuffle(order)
        yield from order


class Averaged:
    """An averaged perceptron's weights, `k` a feature: each weight's sum over the steps so far
    is kept lazily (the step it last changed is stamped), so averaging costs one pass at the end.
    bench.train_spans learns with it too."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.w: dict[str, list[float]] = {}
        self.total: dict[str, list[float]] = {}  # the sum of each weight over the steps so far
        self.stamp: dict[str, list[int]] = {}  # the step each weight last changed

    def update(self, feats: Sequence[str], y: int, guess: int, step: int) -> None:
        """Step `step` guessed `guess` where `y` was right: move every feature's weights."""
        k = self.k
        for f in feats:
            wf = self.w.setdefault(f, [0.0] * k)
            tf = self.total.setdefault(f, [0.0] * k)
            st = self.stamp.setdefault(f, [0] * k)
            for c, delta in ((y, 1.0), (guess, -1.0)):
                tf[c] += (step - st[c]) * wf[c]
                st[c] = step
                wf[c] += delta

    def averaged(self, step: int, least: float) -> dict[str, list[float]]:
        """The weights averaged over `step` steps, without the features whose largest is under
        `least`."""
        avg: dict[str, list[float]] = {}
        k = self.k
        for f, wf in self.w.items():
            tf, st = self.total[f], self.stamp[f]
            a = [(tf[c] + (step - st[c]) * wf[c]) / step for c in range(k)]
            if max(abs(x) for x in a) >= least:
                avg[f] = a
        return avg


def train(
    data: list[Example], epochs: int, min_count: int, seed: int = 0
) -> dict[str, list[float]]:
    """An averaged perceptron (weights averaged over every step) over features seen at least
    `min_count` times."""
    counts = Counter(f for feats, _ in data for f in set(feats))
    data = [([f for f in feats if counts[f] >= min_count], y) for feats, y in data]
    k = len(CLASSES)
    model = Averaged(k)
    w = model.w
    step = 0
    for i in shuffled_passes(len(data), epochs, seed):
        feats, y = data[i]
        step += 1
        s = [0.0] * k
        for f in feats:
            wf = w.get(f)
            if wf is not None:
                for c in range(k):
                    s[c] += wf[c]
        guess = max(range(k), key=lambda c: (s[c], -c))
        if guess == y:
            continue
        model.update(feats, y, guess, step)
    return model.averaged(step, 0.005)


def accuracy(typer: entity_typer.Typer, data: list[Example]) -> dict[str, float]:
    right = Counter()
    seen = Counter()
    for feats, y in data:
        seen[CLASSES[y]] += 1
        if typer.decide(feats)[0] == CLASSES[y]:
            right[CLASSES[y]] += 1
    out = {c: right[c] / seen[c] for c in seen}
    out["all"] = sum(right.values()) / max(1, len(data))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.train_typer", description=__doc__)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--min-count", type=int, default=2)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument(
        "--repeat",
        default=",".join(f"{k}={v}" for k, v in REPEAT.items()),
        help="each set's copies, e.g. wikigold=4,stackoverflow=2",
    )
    args = p.parse_args(argv)
    paths = sorted(TRAIN.glob("*.jsonl.gz"))
    repeats = {k: int(v) for k, _, v in (x.partition("=") for x in args.repeat.split(",") if x)}
    data = examples(paths, repeats)
    print(
        f"{len(data)} examples from {len(paths)} files:", dict(Counter(CLASSES[y] for _, y in data))
    )
    weights = train(data, args.epochs, args.min_count)
    blob = entity_typer.dumps(weights)
    typer = entity_typer.loads(blob)
    print(f"{len(weights)} features, {len(blob)} bytes; training accuracy", accuracy(typer, data))
    args.out.write_bytes(blob)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
