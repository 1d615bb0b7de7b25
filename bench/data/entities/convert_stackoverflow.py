"""Convert StackOverflowNER (Tabassum et al., ACL 2020; CoNLL: token, tag, token, markdown tag a
line) into stackoverflow-dev.jsonl / stackoverflow-test.jsonl: one Stack Overflow question or
answer a line, its sentences one a line of "text" (as a note would hold them), {"id", "text",
"entities": [[type, surface, line], ...], "ignore": [surface, ...]}, line counted from 1.

Types: Application, Library, Language, Operating_System, Website, Organization and Device (the
named software, services, companies and devices a post names) -> system; User_Name -> person.
The other types label code and values (Library_Class, Variable_Name, File_Name, Version,
User_Interface_Element, ...): they go to "ignore", neither gold nor wrong when predicted. Code
and output blocks (already replaced by a placeholder in the set) are left out with the sentence
that holds them, and so are the Question_ID / Question_URL headers. Every `EVERY`th post is
kept (the file stays small); the set's own dev and test files are the splits. `--every 1` keeps
every post (the train split, what bench/train_typer.py learns from).

The tokens are joined as prose (convert_wikigold.prose). SONER is a checkout of
github.com/jeniyat/StackOverflowNER:

    cd bench/data/entities && git -C SONER show \
        d1f408d:resources/annotated_ner_data/StackOverflow/test.txt \
        | python convert_stackoverflow.py > stackoverflow-test.jsonl   # and dev.txt > -dev
    git -C SONER show d1f408d:resources/annotated_ner_data/StackOverflow/train.txt \
        | python convert_stackoverflow.py --every 1 | gzip -n > train/stackoverflow-train.jsonl.gz
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from convert_wikigold import prose, spans

SYSTEM_TYPES = ("Application", "Library", "Language", "Operating_System", "Website")
SYSTEM_TYPES += ("Organization", "Device")
TYPES = {**dict.fromkeys(SYSTEM_TYPES, "system"), "User_Name": "person"}
EVERY = 3
HEADERS = ("Question_ID", "Question_URL", "Answer_to_Question_ID", "Answer_URL")


def posts(lines: Iterable[str]) -> list[list[list[tuple[str, str]]]]:
    """Posts (a header line opens one), each a list of sentences of (token, tag)."""
    out: list[list[list[tuple[str, str]]]] = [[[]]]
    for line in lines:
        cols = line.rstrip("\n").split("\t")
        if len(cols) < 2 or not cols[0].strip():
            if out[-1][-1]:
                out[-1].append([])
            continue
        if cols[0] in ("Question_ID", "Answer_to_Question_ID") and out[-1] != [[]]:
            out.append([[]])
        out[-1][-1].append((cols[0], cols[1]))
    return [[s for s in p if s] for p in out if any(p)]


def main() -> None:
    every = int(sys.argv[2]) if sys.argv[1:2] == ["--every"] else EVERY
    for i, post in enumerate(posts(sys.stdin)):
        if i % every:
            continue
        text_lines: list[str] = []
        entities: list[list[str | int]] = []
        ignore: set[str] = set()
        for sent in post:
            tokens = [t for t, _ in sent]
            tags = [tag for _, tag in sent]
            if tokens[0] in HEADERS or any("Code_Block" in t or "Output_Block" in t for t in tags):
                continue
            text_lines.append(prose(tokens))
            n = len(text_lines)
            for kind, a, b in spans(sent):
                surface = prose(tokens[a:b])
                if kind in TYPES:
                    entities.append([TYPES[kind], surface, n])
                else:
                    ignore.add(surface)
        if text_lines:
            row = {
                "id": f"so-{i}",
                "text": "\n".join(text_lines) + "\n",
                "entities": entities,
                "ignore": sorted(ignore),
            }
            print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
