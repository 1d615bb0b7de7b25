"""python -m bench.secretscan --against OTHER/memoryd/text/secretguard.py [--rounds 3] [--vault DIR]

The secret guard's `scan` (memoryd/text/secretguard.py: search runs it over the hits it flags,
the log over every line, a memory's entity extraction over its text) timed over the notes of
bench/data (and a vault's, e.g. the Obsidian help vault), beside another checkout's module
loaded in the same process: alternated, the order swapped each round, the load beside each
round. Also says whether both find the same spans in every note. Walk of stop 37 (branch
walkl12); BENCHMARKS.md, "Stop 37: the secret guard after the walk".
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path
from types import ModuleType

from memoryd.text import secretguard

ROOT = Path(__file__).resolve().parent / "data"


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def spans(module: ModuleType, text: str) -> list[tuple[str, int, int]]:
    return [(f.kind, f.start, f.end) for f in module.scan(text)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.secretscan")
    ap.add_argument("--against", type=Path, required=True, help="another secretguard.py")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--vault", type=Path, action="append", default=[], help="more notes")
    args = ap.parse_args(argv)
    other = load(args.against, "secretguard_other")
    paths = [*ROOT.glob("**/*.md"), *(p for v in args.vault for p in v.glob("**/*.md"))]
    texts = [p.read_text(errors="replace") for p in paths]
    same = sum(spans(other, t) == spans(secretguard, t) for t in texts)
    print(f"{len(texts)} notes, {sum(map(len, texts)) / 1e6:.1f} MB; same spans in {same}")
    for r in range(args.rounds):
        order = [("other", other), ("this", secretguard)]
        if r % 2:
            order.reverse()
        took = {}
        for name, module in order:
            start = time.perf_counter()
            for t in texts:
                module.scan(t)
            took[name] = time.perf_counter() - start
        load_avg = os.getloadavg()[0]
        print(
            f"round {r + 1}: other {took['other']:.3f} s, this {took['this']:.3f} s, "
            f"this / other {took['this'] / took['other']:.2f}, load {load_avg:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
