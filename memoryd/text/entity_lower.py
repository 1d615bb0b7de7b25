"""Entity extraction: well-known systems written in lower case ("mysql", "jquery"; never an
English word), found by one look at a text's words (memoryd/text/entity_names.py calls it
beside the capitalised names). Pure functions of strings."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache, lru_cache

from memoryd.text import entity_cues as cues
from memoryd.text.entity_cues import SYSTEM
from memoryd.text.entity_spans import Raw, add


def lower_systems(lines: Sequence[tuple[int, str]], out: list[Raw], text: str = "") -> None:
    """Well-known systems written in lower case ("mysql", "jquery"; not an English word): one
    look at the whole text's words as bytes, then one pattern for those it holds. `text`: the
    lines joined by "\n", when the caller has it."""
    text = text or "\n".join(line for _, line in lines)
    known = _lower_known()
    found = _lower_forms().intersection(text.split())
    if not found:
        return
    words = tuple(sorted({known[w] for w in found}))
    rx = _lower_words_rx(words)
    # line by line, those that hold one of the words: the pattern looks at most one character
    # around a match, and a line's end reads as the text's "\n" does
    for n, line in lines:
        for w in words:
            if w in line:
                for m in rx.finditer(line):
                    add(out, m.group(), n, "name", SYSTEM, 3.0)
                break


@cache
def _lower_known() -> dict[str, str]:
    """Each lower-case system name as a white-space-separated token of text may hold it ("mysql",
    "mysql,", "(mysql)"...) -> the name."""
    out = {}
    for w in cues.systems()[1]:
        for form in (w, "(" + w, *(w + p for p in _CLOSERS), *("(" + w + p for p in _CLOSERS)):
            out[form] = w
    return out


@cache
def _lower_forms() -> frozenset[str]:
    return frozenset(_lower_known())


_CLOSERS = (",", ".", ";", ":", "!", "?", ")", "),", ").", "'s", "’s", "/", '"', "'", "*")


@lru_cache(maxsize=4096)
def _lower_words_rx(words: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(w) for w in words)
    return re.compile(rf"(?<![\w.@/#-])(?:{alternatives})(?![\w@/-]|\.\w)")
