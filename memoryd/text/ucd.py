"""Unicode categories as runs of code points, for the character classes built at import (the
symbols and combining marks of text/symbolchars.py, the marks of store/tokenizer.py's word).

Every process that imports the index (each `memoryd run`, each test worker) built those classes
by asking unicodedata about each of ~130K code points in a Python loop, twice (~40 ms of CPU
each at load 15). Here the categories are read once, in C (`map`), into one string of two
letters a code point, and a category's runs are found in it with a regex."""

from __future__ import annotations

import functools
import re
import unicodedata

# the planes read: the BMP and plane 1 (every mark and symbol but the variation selectors of
# plane 14, read apart)
_TOP = 0x20000
_PLANE14 = range(0xE0000, 0xE1000)


@functools.cache
def _categories(first: int, stop: int) -> str:
    """Two letters a code point (Lu, Mn, So...): the category of each of first..stop-1."""
    return "".join(map(unicodedata.category, map(chr, range(first, stop))))


def runs(major: str, first: int, stop: int) -> list[tuple[int, int]]:
    """The runs (a, b), inclusive, of the code points in first..stop-1 whose category begins
    with `major` (M: combining marks; S: symbols). Within plane 0 and 1, or within plane 14."""
    base, top = (0, _TOP) if stop <= _TOP else (_PLANE14.start, _PLANE14.stop)
    if not (base <= first <= stop <= top):
        raise ValueError(f"code points {first:#x}..{stop:#x} span the planes read apart")
    return [
        (max(a, first), min(b, stop - 1))
        for a, b in _runs(major, base, top)
        if b >= first and a < stop
    ]


@functools.cache
def _runs(major: str, base: int, top: int) -> tuple[tuple[int, int], ...]:
    cats = _categories(base, top)
    # a category is an upper-case letter then a lower-case one: a match starts at an even place
    found = re.finditer(f"(?:{re.escape(major)}[a-z])+", cats)
    return tuple((base + m.start() // 2, base + m.end() // 2 - 1) for m in found)
