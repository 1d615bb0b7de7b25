"""Text cut to a width without cutting a character as a reader sees it (a grapheme): a letter
and its combining marks (Thai ข้, Hindi कि, a decomposed é), a virama and the letter it stacks
(क्ष), an emoji and its modifiers, variation selectors and ZWJ parts (👍🏽, 👨‍👩‍👧), a flag's two
regional indicators (🇯🇵). memoryctl keeps a copy (memoryd/ctl/output.py `clip`: it imports
nothing of memoryd); tests/test_scripts.py holds both to the same cases."""

from __future__ import annotations

import unicodedata


def _inside(text: str, i: int) -> bool:
    """Whether a cut before text[i] falls inside a grapheme."""
    ch, prev = text[i], text[i - 1]
    o = ord(ch)
    if ch == "\u200d" or prev == "\u200d" or unicodedata.category(ch) in ("Mn", "Mc", "Me"):
        return True
    if 0xFE00 <= o <= 0xFE0F or 0x1F3FB <= o <= 0x1F3FF or 0xE0020 <= o <= 0xE007F:
        return True  # variation selectors, skin tones, a tag flag's tags
    if unicodedata.combining(prev) == 9 and unicodedata.category(ch) == "Lo":
        return True  # a virama stacks the next letter (क्ष)
    if 0x1F1E6 <= o <= 0x1F1FF:  # a regional indicator: flags pair them from the run's start
        run = 0
        while i - run - 1 >= 0 and 0x1F1E6 <= ord(text[i - run - 1]) <= 0x1F1FF:
            run += 1
        return run % 2 == 1
    return False


def clip(text: str, width: int) -> str:
    """text when it has at most `width` characters, else its start and "…" in `width`
    characters or fewer, cut between graphemes."""
    if width <= 0 or len(text) <= width:
        return text
    cut = width - 1
    while 0 < cut < len(text) and _inside(text, cut):
        cut -= 1
    return text[:cut] + "…"  # ("…" alone: no grapheme fits)
