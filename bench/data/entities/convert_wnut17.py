"""Convert WNUT-17's test set (CoNLL, one token and its BIO tag a line) into wnut17-test.jsonl:
one sentence a line, {"id", "text", "entities": [[type, surface], ...]}, WNUT's types mapped onto
memoryd's (person, system, place, other). The text is the tokens joined with single spaces, then
lightly detokenized the way the posts were written: "@ user" -> "@user", "# tag" -> "#tag",
"don ' t" -> "don't", "Sam 's" -> "Sam's", no space before , . ! ? : ; ) or after (.

    git show e52a2d2a71ac1a051ca2d532eef28653c5c02603:emerging.test.annotated \
        | python bench/data/entities/convert_wnut17.py > bench/data/entities/wnut17-test.jsonl
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable

TYPES = {
    "person": "person",
    "corporation": "system",
    "product": "system",
    "location": "place",
    "group": "other",
    "creative-work": "other",
}


def detokenize(text: str) -> str:
    text = re.sub(r"(^|\s)([@#]) (?=\w)", r"\1\2", text)
    text = re.sub(r"(\w) ' (?=(?:t|s|m|re|ve|ll|d)\b)", r"\1'", text)
    text = re.sub(r"(\w) (?='s\b|n't\b)", r"\1", text)
    text = re.sub(r" (?=[,.!?:;)](?:\s|$))", "", text)
    return re.sub(r"\( ", "(", text)


def sentences(lines: Iterable[str]) -> list[list[tuple[str, str]]]:
    """CoNLL lines (token, tab, BIO tag; a blank line ends a sentence) as [(token, tag)] lists."""
    out: list[list[tuple[str, str]]] = [[]]
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if out[-1]:
                out.append([])
            continue
        token, _, tag = line.partition("\t")
        out[-1].append((token, tag.strip() or "O"))
    return [s for s in out if s]


def spans(sent: list[tuple[str, str]], types: dict[str, str]) -> list[list[str]]:
    """[[type, surface]] of a sentence's B-/I- runs, each type mapped through `types`."""
    found: list[list[str]] = []
    for token, tag in sent:
        if tag.startswith("B-"):
            found.append([types[tag[2:]], token])
        elif tag.startswith("I-") and found:
            found[-1][1] += " " + token
    return found


def main() -> None:
    for i, sent in enumerate(sentences(sys.stdin)):
        text = detokenize(" ".join(token for token, _ in sent))
        row = {"id": i, "text": text, "entities": spans(sent, TYPES)}
        print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
