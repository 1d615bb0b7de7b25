"""text/ucd.py: the categories' runs the import-time classes are built from (symbols and
combining marks) are the ones a code point by code point reading of unicodedata gives, and the
classes built from them are the ones the index has read words with."""

from __future__ import annotations

import unicodedata

import pytest

from memoryd.store import tokenizer
from memoryd.text import symbolchars, ucd


def one_by_one(major: str, first: int, stop: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for cp in range(first, stop):
        if unicodedata.category(chr(cp)).startswith(major):
            if out and out[-1][1] == cp - 1:
                out[-1] = (out[-1][0], cp)
            else:
                out.append((cp, cp))
    return out


@pytest.mark.parametrize(
    ("major", "first", "stop"),
    [
        ("M", 0x80, 0x20000),
        ("S", 0x80, 0x20000),
        ("M", 0x300, 0x1F000),
        ("L", 0, 0x100),
        ("M", 0x301, 0x302),  # inside a run: cut at the bounds asked
        ("M", 0xE0100, 0xE01F0),
        ("C", 0xE0000, 0xE1000),
    ],
)
def test_runs_are_the_code_points_of_the_category(major: str, first: int, stop: int) -> None:
    assert ucd.runs(major, first, stop) == one_by_one(major, first, stop)


def test_a_span_across_the_planes_read_apart_is_refused() -> None:
    with pytest.raises(ValueError, match="span"):
        ucd.runs("M", 0x300, 0xE0200)


def test_the_word_class_is_the_one_the_index_was_read_with() -> None:
    """tokenizer.MARKS as main built it code point by code point, up to U+10FFFF (a sentinel
    that closed the last run at U+10FFFE): the query side splits words with it on both
    backends, so a new way of building it must give the same class."""
    ranges: list[str] = []
    start: int | None = None
    for cp in (*range(0x300, 0x1F000), *range(0xE0100, 0xE01F0), 0x10FFFF):
        mark = cp != 0x10FFFF and unicodedata.category(chr(cp)).startswith("M")
        if mark and start is None:
            start = cp
        elif not mark and start is not None:
            ranges.append(chr(start) if start == cp - 1 else f"{chr(start)}-{chr(cp - 1)}")
            start = None
    assert "".join(ranges) == tokenizer.MARKS


def test_the_symbol_class_is_every_symbol_outside_the_unspaced_scripts() -> None:
    sym = [
        cp
        for cp in range(0x80, 0x20000)
        if unicodedata.category(chr(cp)).startswith("S")
        and not symbolchars._RUN.match(chr(cp))
        and cp not in (0xFFFC, 0xFFFD)
        and not 0x1F1E6 <= cp <= 0x1F1FF
    ]
    assert symbolchars._ranges(sym) == symbolchars._SYM_RANGES
    assert one_by_one("M", 0x80, 0x20000) == symbolchars._MARK_RANGES
