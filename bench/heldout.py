"""Held-out sets: public labelled data nobody here tuned on, written as a set folder OUTSIDE
the repository (their licences do not let them be committed), for `python -m bench quality
--extra DIR` (BENCHMARKS.md, "Stop 36: a held-out conversation set").

    python -m bench.heldout locomo SRC OUT
    python -m bench.heldout titles VAULT OUT

`locomo`: LoCoMo10 (github.com/snap-research/LoCoMo, `data/locomo10.json`; CC BY-NC 4.0, so
measured, never committed): ten long conversations between two people. Each session becomes
one note, `<sample_id>/session_NN.md`, a heading with the two names and the session's date and
time, then one line per turn, `Speaker: text` (a shared photo's caption in brackets after the
text). Each question of categories 1-4 becomes a query; its evidence turns (`D3:7`) become
evidence lines. Category 5 (adversarial: facts the conversation never states) is left out:
no retrieval score tells them apart (issue 19 accepts that), and they have no evidence.

`titles`: known-item search by title in any vault (e.g. the Obsidian help vault,
github.com/obsidianmd/obsidian-help, `en/`): each file name that no other note shares is a
query, its note the answer (judged per note). Obsidian shows a note's file name as its title,
so its notes seldom write a `# Title` line.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

TURN = re.compile(r"D\d+:\d+")


def locomo(src: Path, out: Path) -> tuple[int, int]:
    """Write the set; returns (notes, queries)."""
    data = json.loads(src.read_text(encoding="utf-8"))
    notes: dict[str, str] = {}
    queries: list[dict[str, Any]] = []
    qrels: list[tuple[str, str, int, list[int]]] = []
    for conv in data:
        talk = conv["conversation"]
        where: dict[str, tuple[str, int]] = {}  # turn id -> (note, line)
        n = 1
        while f"session_{n}" in talk:
            rel = f"{conv['sample_id']}/session_{n:02d}.md"
            head = (
                f"# Chat with {talk['speaker_a']} and {talk['speaker_b']}, "
                f"{talk[f'session_{n}_date_time']}\n\n"
            )
            lines = []
            for i, turn in enumerate(talk[f"session_{n}"]):
                text = turn["text"]
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                lines.append(f"{turn['speaker']}: {' '.join(text.split())}")
                where[turn["dia_id"]] = (rel, head.count("\n") + i + 1)
            notes[rel] = head + "\n".join(lines) + "\n"
            n += 1
        for k, qa in enumerate(conv["qa"]):
            turns = [t for e in qa.get("evidence", []) for t in TURN.findall(e)]
            if qa["category"] == 5 or not turns or any(t not in where for t in turns):
                continue  # adversarial, or evidence that names no turn of the chat
            qid = f"{conv['sample_id']}-{k:03d}"
            queries.append(
                {
                    "_id": qid,
                    "text": qa["question"],
                    "type": f"cat{qa['category']}",
                    "no_answer": False,
                    "facts": [],
                    "answer": [str(qa["answer"])],
                }
            )
            lines_of: dict[str, set[int]] = {}
            for t in turns:
                rel, line = where[t]
                lines_of.setdefault(rel, set()).add(line)
            qrels += [(qid, rel, 2, sorted(ls)) for rel, ls in lines_of.items()]
    _external_sets().write_set(out, notes, queries, qrels)
    return len(notes), len(queries)


def _external_sets() -> Any:
    """bench/data/external_sets.py (a script, not a module of the package): its set writer."""
    path = Path(__file__).parent / "data" / "external_sets.py"
    spec = importlib.util.spec_from_file_location("external_sets", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def titles(src: Path, out: Path) -> tuple[int, int]:
    """Known-item search by title in a vault whose notes are titled by their file names, as
    Obsidian shows them (no `# Title` line): every note under SRC is a note; every file name
    (without `.md`) that no other note shares is a query, its note the one relevant answer."""
    notes = {
        p.relative_to(src).as_posix(): p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(src.rglob("*.md"))
        if not any(part.startswith(".") for part in p.relative_to(src).parts)
    }
    by_stem: dict[str, list[str]] = {}
    for rel in notes:
        by_stem.setdefault(Path(rel).stem.lower(), []).append(rel)
    queries: list[dict[str, Any]] = []
    qrels: list[tuple[str, str, int, list[int]]] = []
    for _stem, rels in sorted(by_stem.items()):
        if len(rels) == 1:
            qid = f"t{len(queries) + 1:04d}"
            queries.append(
                {"_id": qid, "text": Path(rels[0]).stem, "type": "title", "no_answer": False}
            )
            qrels.append((qid, rels[0], 2, []))
    _external_sets().write_set(out, notes, queries, qrels)
    return len(notes), len(queries)


SETS = {"locomo": locomo, "titles": titles}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3 or args[0] not in SETS:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    name, src, out = args[0], Path(args[1]), Path(args[2])
    if name == "locomo" and src.is_dir():
        src = src / "data" / "locomo10.json"
    if Path(__file__).resolve().parent.parent in out.resolve().parents:
        print(f"{out} is inside the repository; held-out sets stay outside it", file=sys.stderr)
        return 2
    notes, queries = SETS[name](src, out)
    print(f"{name}: {notes} notes, {queries} queries in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
