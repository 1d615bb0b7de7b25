"""Symbols as words (stop 42, branch sym18): an emoji, an arrow, a currency sign, a check mark
is found by keyword search as `rg -i -F -w` finds it, each one a token of its own.

What a symbol is: a character outside ASCII whose Unicode category is a symbol's (So: emoji,
✓ ★ ™ © ° box drawing and dingbats; Sm: → ± ∑ ≤ ×; Sc: € £ ¥ ₹; Sk: ¨ ´ ˜ and the emoji skin
tones), not one of the scripts written without spaces (CJK radicals, Khmer symbols: their
runs are read as CJK is). What a person means by typing one is that character, wherever it
stands: "🚀" finds "🚀 launch" and "🚀launch" (the word beside it is a word of its own:
`launch` finds both), "€" finds "€5" and "5 €", "°C" finds "20 °C" (the phrase ° c).

One token a grapheme, as a reader sees it (text/clip.py): an emoji with its modifiers,
variation selectors and ZWJ parts (👍🏽, ❤️, 👨‍👩‍👧), a flag's two regional indicators (🇩🇪) or its
tags (🏴󠁧󠁢󠁳󠁣󠁴󠁿), a keycap (1️⃣), a symbol with a combining mark (↛). "🚀🎉" is two tokens, "★★★"
three. Folded as remove_diacritics folds é to e: variation selectors (❤️ and ❤ are one symbol)
and skin tones (👍🏽 is found by 👍 and finds 👍; rg finds 👍 inside 👍🏽 too); a ZWJ sequence is
whole (👨‍👩‍👧 is a family, not 👨).

ASCII symbols (`$ + < = > ^ | ~` and the backtick) stay separators, as they were: they join
or mark words (`C++`, `$HOME`, `x^2`, `a=b`: search/symbols.py reads them), and punctuation
(P*: `§ • … — « »`) stays a separator too.

SQLite: the `cjk` tokenizer (store/tokenizer.py) emits `key(grapheme)` over the grapheme's
bytes. PostgreSQL's parser reads no symbol as a word, so the index writes each grapheme as an
ASCII word of its own, `word(key)` ("symb0x1f680"), in place (memoryd_symbols, store/pg/
sqlfuncs.py), and the query side (store/pg/fts.py) does the same to its terms.
"""

from __future__ import annotations

import re
import unicodedata

from memoryd.text import ucd
from memoryd.text.scripts import RUN_CLASS

_RUN = re.compile(f"[{RUN_CLASS}]")
_RI = "\\U0001f1e6-\\U0001f1ff"  # regional indicators: a flag is two
TONES = "\\U0001f3fb-\\U0001f3ff"  # (escapes: Python's and PostgreSQL's regexes read them)
VS = "\\ufe00-\\ufe0f\\U000e0100-\\U000e01ef"
_TAGS = "\\U000e0020-\\U000e007f"


def _ranges(cps: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for cp in cps:
        if out and out[-1][1] == cp - 1:
            out[-1] = (out[-1][0], cp)
        else:
            out.append((cp, cp))
    return out


_RI0, _RI1 = 0x1F1E6, 0x1F1FF
# what no one types: the replacement characters a decoder or an editor writes (U+FFFC, U+FFFD)
_NOT = (0xFFFC, 0xFFFD)


def _classes() -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(every symbol character outside ASCII and the unspaced scripts, every combining mark)."""
    sym: list[int] = []
    for a, b in ucd.runs("S", 0x80, 0x20000):  # (none above: CJK, tags, private use)
        for cp in range(a, b + 1):
            if not _RUN.match(chr(cp)) and cp not in _NOT and not _RI0 <= cp <= _RI1:
                sym.append(cp)
    return _ranges(sym), ucd.runs("M", 0x80, 0x20000)


_SYM_RANGES, _MARK_RANGES = _classes()


def _esc(cp: int) -> str:
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def _bracket(ranges: list[tuple[int, int]]) -> str:
    """A regex bracket body of these ranges, in \\u escapes (Python's and PostgreSQL's)."""
    return "".join(_esc(a) if a == b else f"{_esc(a)}-{_esc(b)}" for a, b in ranges)


SYMBOL_CLASS = _bracket(_SYM_RANGES)
# what extends a symbol's grapheme: variation selectors, skin tones, tags, combining marks
_EXT = f"[{VS}{TONES}{_TAGS}{_bracket(_MARK_RANGES)}]*"
_ONE = f"[{SYMBOL_CLASS}]{_EXT}"
# a grapheme of symbols (as Python's re and PostgreSQL's regexes read it): a flag, a keycap, a
# symbol with its extensions and ZWJ parts, a lone regional indicator (the first alternative
# that matches is taken in Python; the longest in PostgreSQL: the same here)
GRAPHEME = f"[{_RI}]{{2}}|[0-9#*]\\ufe0f?\\u20e3|{_ONE}(?:\\u200d{_ONE})*|[{_RI}]"
_GRAPHEMES = re.compile(GRAPHEME)
ANY = f"[{SYMBOL_CLASS}{_RI}\\u20e3]"  # a character that begins or ends one
_ANY = re.compile(ANY)
_KEYS = frozenset("0123456789#*")
_CANDIDATES = re.compile(r"[^\x00-\x7f\w]")  # (no symbol is ASCII or a word's character)
_FOLD = re.compile(f"[{VS}]")
_FOLD_TONES = re.compile(f"[{TONES}]")
PREFIX = "symb0x"  # a symbol's word on PostgreSQL: PREFIX and its code points in hex
EXACT = "symb1x"  # (in a headline: the grapheme as written, when the index folds it)


# the characters _ANY matches, as a set: a text's distinct characters are checked against it
# (a regex of this class over a long non-ASCII text cost 0.6 µs a character)
_ANY_CHARS = frozenset(
    chr(cp) for a, b in [*_SYM_RANGES, (_RI0, _RI1), (0x20E3, 0x20E3)] for cp in range(a, b + 1)
)


def has_symbol(text: str) -> bool:
    """Whether text holds a symbol (a cheap check before graphemes())."""
    return not text.isascii() and not _ANY_CHARS.isdisjoint(text)


def graphemes(text: str) -> list[re.Match[str]]:
    """The symbols' graphemes of text, in order. (Matched only where a symbol stands, found
    through _ANY_CHARS: a search with the regex alone tests its class, hundreds of ranges, at
    every character.)"""
    if not has_symbol(text):
        return []
    out: list[re.Match[str]] = []
    end = 0
    for found in _CANDIDATES.finditer(text):
        i = found.start()
        ch = text[i]
        if i < end or ch not in _ANY_CHARS:
            continue
        start = i
        if ch == "\u20e3":  # a keycap begins before its mark: 1, then a selector
            start = i - 2 if i >= 2 and text[i - 1] == "\ufe0f" else i - 1
            start = start if start >= end and text[start : start + 1] in _KEYS else i
        m = _GRAPHEMES.match(text, start)
        if m is not None:
            out.append(m)
            end = m.end()
    return out


def is_symbol(word: str) -> bool:
    """Whether word is one symbol's grapheme (a query's term, a vocabulary's token)."""
    return bool(word) and _GRAPHEMES.fullmatch(word) is not None


def key(grapheme: str) -> str:
    """What the index holds for a grapheme: composed (NFC), without variation selectors, and
    without skin tones unless it is one."""
    out = _FOLD.sub("", unicodedata.normalize("NFC", grapheme)) or grapheme
    folded = _FOLD_TONES.sub("", out)
    return folded or out


def word(grapheme: str) -> str:
    """A grapheme's word on PostgreSQL (ASCII, a number-word to its parser): symb0x1f680."""
    return PREFIX + "x".join(f"{ord(c):x}" for c in key(grapheme))


def spelled(text: str) -> str:
    """text with each symbol's grapheme as its PostgreSQL word, spaced from its neighbours."""
    found = graphemes(text)
    if not found:
        return text
    out: list[str] = []
    pos = 0
    for m in found:
        out += [text[pos : m.start()], " ", word(m.group()), " "]
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


_WORD = re.compile("symb[01]x" + r"([0-9a-f]+(?:x[0-9a-f]+)*)")


def unspelled(text: str, written: dict[str, str] | None = None) -> str:
    """text with each PostgreSQL symbol word as its grapheme again (a headline's words); a
    folded one as `written` writes it (key -> the grapheme as the text writes it)."""
    if "symb" not in text:
        return text

    def grapheme(m: re.Match[str]) -> str:
        g = "".join(chr(int(h, 16)) for h in m.group(1).split("x"))
        return (written or {}).get(g, g) if m.group().startswith(PREFIX) else g

    return _WORD.sub(grapheme, text)
