"""The FTS5 tokenizer `cjk`: the built-in `porter unicode61 remove_diacritics 2` with combining
marks inside words, plus bigrams for the scripts written without spaces between words.

Combining marks (`categories "L* N* Co M*"`, since migration m016): unicode61 reads only letters
and digits as a word's characters by default, so a vowel sign, a virama or a vowel point cut a
word in pieces (Hindi "कार्यक्रम" was indexed as क / र / यक / रम, Thai and Arabic with tashkeel
likewise), and a query of one piece ("कि") found every word that began with its letter. A word
is now whole with its marks, as `rg -w` reads it. Latin marks still fold away (remove_diacritics:
"cafe\u0301" is "cafe").

unicode61 makes a whole run of CJK characters one token ("我们用数据库" is one word), so a word
inside a sentence is never found; so do Thai, Lao, Khmer and Myanmar, written without spaces
too. This tokenizer wraps the built-in one (its name and arguments follow `cjk` in the
`tokenize=` option) and passes every token through unchanged, except those that contain
characters of those scripts (Han, Hiragana, Katakana, Hangul; Thai, Lao, Khmer, Myanmar): there,
each run becomes one position per character, and the other parts of the token are tokenized
again by the wrapped tokenizer (so "用PostgreSQL数据库" gives 用 / postgresql / 数据 据库 库). A
"character" of Thai, Lao, Khmer or Myanmar is a letter with the marks written on it (a grapheme:
กิ, ក្ស), so a bigram or a highlight never cuts one and "กิน" is not found inside "กินี"'s กิ นี.

Positions of a run c0 c1 ... cn-1:
  document   position i holds the unigram ci and, colocated, the bigram ci ci+1 (i < n-1);
  query      position i < n-1 is the bigram ci ci+1, the last position the unigram cn-1.
A query run is thus a phrase of overlapping bigrams that ends with its last character: "数据库"
is `数据 据库 库`, found inside "我们的数据库很慢"; a one-character query ("李") matches the
unigram anywhere; and a query whose run is cut where the document's is not ("用PostgreSQL")
still lines up, because every document position carries its unigram.

Decomposed text (NFD: "и\u0306" for й, "ε\u0301" for έ, and the letters NFC never composes,
"\u0958" for क़ written as one code point): unicode61 folds only Latin marks away, so a token
written decomposed is indexed as its composed twin (NFC, the form every query is given in:
search/request.py), over the same bytes. PostgreSQL composes the whole text (memoryd_nfc).

Symbols (`cjk symbols ...`, since migration m021; text/symbolchars.py decides which and why):
each grapheme of symbols outside ASCII (an emoji with its skin tone, variation selector and ZWJ
parts, a flag, a keycap; `→`, `€`, `✓`, `°`) is a token of its own over its bytes, its key
(variation selectors and skin tones folded away), so "🚀launch" gives 🚀 / launch and "❤️"
gives ❤; what the wrapped tokenizer made of a grapheme's parts (a selector or a skin tone read
as a word) goes. In a document each symbol is colocated with the word before it (the first
word after it at a text's start: _colocated), since FTS5 counts no colocated token in a column's
size: a symbol leaves BM25's length normalisation, and so every ranking, as it was; a query's
phrase asks for tokens of a word with its symbols (_merged), which _colocated writes too. A
snippet's table (`cjk symbolsapart`, store/rowsnippets.py) gives each symbol a place of its
own instead, so that snippet() marks the symbol, not its word. A table made before m021 (no
`symbols`) tokenizes as it did.

Offsets: each position spans exactly its own character, so snippet()/highlight() markers land on
character boundaries and a matched phrase is highlighted from its first to its last character.

Cost: an ASCII text, and one with no CJK character or symbol (checked on the raw bytes, then
on the decoded text), gets the wrapped tokenizer's output as is; only tokens with CJK
characters or symbols are rebuilt in Python.
The tokenizer never raises on text it is given (invalid UTF-8 goes to the wrapped tokenizer).

A connection must register it (store/db.py connect() does, for every connection) before it
touches entries_fts; one that has not gets SQLite's error "no such tokenizer: cjk" and changes
nothing.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Sequence
from typing import Any, cast

import apsw

from memoryd.text import symbolchars, ucd
from memoryd.text.scripts import CJK_CLASS as CJK_CLASS
from memoryd.text.scripts import RUN_CLASS as RUN_CLASS
from memoryd.text.scripts import SEA_CLASS as SEA_CLASS

NAME = "cjk"
BASE = ("porter", "unicode61", "remove_diacritics", "2", "categories", "L* N* Co M*")
# BASE as a tokenize= option's words (an argument with spaces in single quotes, as FTS5 reads it)
BASE_OPTION = " ".join(f"'{a}'" if " " in a else a for a in BASE)
# `cjk`'s own arguments before the base tokenizer's: symbols as tokens (m021)
SYMBOLS = "symbols"
APART = "symbolsapart"  # each symbol a place of its own (snippets: rowsnippets.py)
ARGS = (SYMBOLS, *BASE)
APART_ARGS = (APART, *BASE)
# the tokenizer of entries_fts and notes_fts (migrations m008, m016, m021) and its tokenize=
# option
TOKENIZE = f"{NAME} {SYMBOLS} {BASE_OPTION}"
OPTION = f'tokenize = "{TOKENIZE}"'
# a snippet's table (rowsnippets.py): the same tokens, each symbol at a place of its own, so that
# snippet() marks the symbol itself (it marks no colocated token: it would mark the word before)
APART_OPTION = OPTION.replace(f" {SYMBOLS} ", f" {APART} ")

# the scripts written without spaces between words (one definition: text/scripts.py)
_SEA_BLOCKS = ((0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0xA9E0, 0xAA7F))
# the combining marks of those scripts (vowel signs, tone marks, viramas), and the viramas that
# stack the next letter under their own (Khmer coeng, Myanmar virama): one character with it
SEA_MARKS = "".join(
    chr(c)
    for a, b in _SEA_BLOCKS
    for c in range(a, b + 1)
    if unicodedata.category(chr(c)).startswith("M")
)


def _mark_class() -> str:
    """A regex bracket body of every combining mark (Unicode category M*): a word's characters
    with the letters and digits, as the index reads them (m016) and as `rg -w` does."""
    found = [*ucd.runs("M", 0x300, 0x1F000), *ucd.runs("M", 0xE0100, 0xE01F0)]
    # the last run (the variation selectors of plane 14) reaches U+10FFFE: the class the query
    # side has split words with since m016 (its loop ended that run at a sentinel, U+10FFFF)
    if found and found[-1][1] == 0xE01EF:
        found[-1] = (found[-1][0], 0x10FFFE)
    return "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in found)


MARKS = _mark_class()
# a word as the index reads it: letters, digits and combining marks (store/pg/fts.py and
# search/ftsquery.py split queries with it)
WORD = f"(?:[^\\W_]|[{MARKS}])+"
_STACKERS = "\u17d2\u1039"
UNIT = f"[^{SEA_MARKS}](?:[{SEA_MARKS}]*[{_STACKERS}][^{SEA_MARKS}])*[{SEA_MARKS}]*|[{SEA_MARKS}]+"
_UNITS = re.compile(UNIT)
_CJK = re.compile(f"[{RUN_CLASS}]")
# (not from a mark: one on a letter of another script, "a\u0e47", stays on it, in its word)
_RUNS = re.compile(f"(?![{SEA_MARKS}])[{RUN_CLASS}]+")
_CJK_RUNS = re.compile(f"[{CJK_CLASS}]+")
_SEA = re.compile(f"[{SEA_CLASS}]")
# lead bytes of every UTF-8 sequence that can encode a character above (E0: U+0800-U+0FFF, E1:
# U+1xxx, E2: U+2xxx, E3-ED: U+3000-U+DFFF, EF: U+Fxxx, F0: U+1xxxx-U+3xxxx)
_MAYBE_CJK = re.compile(rb"[\xe0-\xed\xef\xf0]")

Token = tuple[Any, ...]


def has_cjk(text: str) -> bool:
    """Whether text has a character of a script written without spaces (CJK, Thai...)."""
    return _CJK.search(text) is not None


def rebuilt(text: str) -> bool:
    """Whether `cjk` gives text other tokens than the tokenizer it wraps: a run of a script
    written without spaces, a character written decomposed (NFD), or a symbol."""
    return (
        has_cjk(text) or not unicodedata.is_normalized("NFC", text) or symbolchars.has_symbol(text)
    )


def cjk_runs(text: str) -> list[str]:
    """The runs of text in the scripts written without spaces (CJK, Thai...), in order."""
    return _RUNS.findall(text)


def is_sea(run: str) -> bool:
    """Whether a run holds Thai, Lao, Khmer or Myanmar (never split in the any-term query)."""
    return _SEA.search(run) is not None


def units(run: str) -> list[str]:
    """A run's characters as the index counts them: code points, but a Thai, Lao, Khmer or
    Myanmar letter with its marks (and a letter a virama stacks under it) is one."""
    return _UNITS.findall(run) if is_sea(run) else list(run)


def _utf8_len(ch: str) -> int:
    o = ord(ch)
    return 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4


def run_tokens(run: str, start: int, query: bool) -> list[Token]:
    """The positions of one CJK run that begins at byte offset start (see the module doc)."""
    out: list[Token] = []
    chars = units(run)
    last = len(chars) - 1
    for i, ch in enumerate(chars):
        end = start + sum(map(_utf8_len, ch))
        if i == last:
            out.append((start, end, ch))
        elif query:
            out.append((start, end, ch + chars[i + 1]))
        else:
            out.append((start, end, ch, ch + chars[i + 1]))
        start = end
    return out


class CJKTokenizer:
    """One instance per FTS5 table (and per fts5_tokenizer() call): wraps a base tokenizer."""

    def __init__(
        self,
        base: apsw.FTS5Tokenizer,
        runs: re.Pattern[str] = _RUNS,
        symbols: bool = True,
        colocate: bool = True,
    ) -> None:
        self.base = base
        self.runs = runs  # _CJK_RUNS for a table made before m016 (its words cut at marks)
        self.composes = runs is _RUNS  # m016: a token written decomposed is indexed composed
        self.symbols = symbols  # m021: a symbol's grapheme is a token (text/symbolchars.py)
        # m021: a document's symbol shares the place of the word before it (_colocated); not
        # in a snippet's table (APART: rowsnippets.py), where each has its own, to be marked
        self.colocate = colocate

    def _base(self, utf8: bytes, flags: int, locale: str | None) -> list[Token]:
        # Called with offsets and colocated tokens (apsw's defaults), the base tokenizer yields
        # (start, end, token, *colocated) tuples; apsw's stub types the union of every mode.
        return cast("list[Token]", self.base(utf8, flags, locale))

    def __call__(self, utf8: bytes, flags: int, locale: str | None) -> Sequence[Token]:
        tokens = self._base(utf8, flags, locale)
        if utf8.isascii() or not (tokens or self.symbols):
            return tokens
        runs = _MAYBE_CJK.search(utf8) is not None  # else no run: no regex over the text
        if not runs and not self.composes and not self.symbols:
            return tokens
        try:
            text = utf8.decode("utf-8")
        except UnicodeDecodeError:
            return tokens
        if runs:
            tokens = self._runs(utf8, text, tokens, flags, locale)
        if self.composes and not unicodedata.is_normalized("NFC", text):
            tokens = self._compose(utf8, tokens, flags)
        if self.symbols and symbolchars.has_symbol(text):
            return self._symbols(utf8, text, tokens, flags, locale)
        return tokens

    def _symbols(
        self, utf8: bytes, text: str, tokens: Sequence[Token], flags: int, locale: str | None
    ) -> list[Token]:
        """The tokens with each symbol's grapheme one of them (text/symbolchars.py: its key,
        over its bytes), in order; what the base tokenizer made of a grapheme's parts (a
        variation selector or a skin tone read as a word, "\ufe0f") goes, and the rest of a
        token that began inside one is tokenized again ("❤️launch": ❤ / launch)."""
        spans: list[tuple[int, int, str]] = []
        pos = offset = 0
        for m in symbolchars.graphemes(text):
            offset += len(text[pos : m.start()].encode("utf-8"))
            size = len(m.group().encode("utf-8"))
            spans.append((offset, offset + size, symbolchars.key(m.group())))
            offset += size
            pos = m.end()
        if not spans:
            return list(tokens)
        # the tokens between graphemes are copied a slice at a time; those a grapheme overlaps
        # give their parts outside it, tokenized again (a part up to the next grapheme)
        starts = [t[0] for t in tokens]
        ends = [t[1] for t in tokens]
        out: list[Token] = []
        marks: list[int] = []  # the symbols' places in out
        done = prev = 0
        for n, (a, b, word) in enumerate(spans):
            following = spans[n + 1][0] if n + 1 < len(spans) else len(utf8)
            lo = bisect.bisect_right(ends, a, done)
            hi = bisect.bisect_left(starts, b, lo)
            out.extend(tokens[done:lo])
            for t in tokens[lo:hi]:
                if max(t[0], prev) < a:
                    out.extend(self._part(utf8, max(t[0], prev), a, flags, locale))
            marks.append(len(out))
            out.append((a, b, word))
            done = hi
            for t in tokens[lo:hi]:
                if t[1] > following:  # it reaches the next grapheme: its part is read there
                    done -= 1
                elif t[1] > b:
                    out.extend(self._part(utf8, b, t[1], flags, locale))
            prev = b
        out.extend(tokens[done:])
        if not self.colocate:
            return out
        if flags & apsw.FTS5_TOKENIZE_QUERY:
            return _merged(out, marks) if len(out) > 1 else out
        return _colocated(out, marks)

    def _part(self, utf8: bytes, a: int, b: int, flags: int, locale: str | None) -> list[Token]:
        return self._base_part(utf8[a:b].decode("utf-8", "replace"), a, flags, locale)

    def _compose(self, utf8: bytes, tokens: Sequence[Token], flags: int) -> list[Token]:
        """Each token whose text is written decomposed (NFD: "и\u0306", "ε\u0301", "\u0958"
        and the like), as its composed twin's (NFC, as queries are: search/request.py), over the
        same bytes: unicode61 folds only Latin marks away, so "мой" typed did not find it."""
        out: list[Token] = []
        for t in tokens:
            seg = utf8[t[0] : t[1]].decode("utf-8", "replace")
            if unicodedata.is_normalized("NFC", seg):
                out.append(t)
            elif self.runs.search(seg):  # a run's character(s), as written: compose them
                out.append((t[0], t[1], *(unicodedata.normalize("NFC", s) for s in t[2:])))
            else:
                again = self._base(unicodedata.normalize("NFC", seg).encode(), flags, None)
                out.append((t[0], t[1], again[0][2]) if len(again) == 1 else t)
        return out

    def _runs(
        self, utf8: bytes, text: str, tokens: list[Token], flags: int, locale: str | None
    ) -> list[Token]:
        """The tokens, those with a run of a script written without spaces rebuilt."""
        found = self.runs.search
        if found(text) is None:
            return tokens
        query = bool(flags & apsw.FTS5_TOKENIZE_QUERY)
        # the tokens to rebuild; the ones between them are copied a slice at a time
        rebuild = [i for i, t in enumerate(tokens) if not t[2].isascii() and found(t[2])]
        out: list[Token] = []
        done = 0
        for i in rebuild:
            out.extend(tokens[done:i])
            out.extend(self._split(utf8, tokens[i][0], tokens[i][1], flags, locale, query))
            done = i + 1
        out.extend(tokens[done:])
        return out

    def _split(
        self, utf8: bytes, start: int, end: int, flags: int, locale: str | None, query: bool
    ) -> list[Token]:
        """One base token with CJK characters: runs as positions, the rest re-tokenized."""
        out: list[Token] = []
        try:
            segment = utf8[start:end].decode("utf-8")
        except UnicodeDecodeError:
            return out
        offset = start  # byte offset of segment[pos]
        pos = 0
        for m in self.runs.finditer(segment):
            if m.start() > pos:
                out.extend(self._base_part(segment[pos : m.start()], offset, flags, locale))
                offset += len(segment[pos : m.start()].encode("utf-8"))
            out.extend(run_tokens(m.group(), offset, query))
            offset += len(m.group().encode("utf-8"))
            pos = m.end()
        if pos < len(segment):
            out.extend(self._base_part(segment[pos:], offset, flags, locale))
        return out

    def _base_part(self, part: str, offset: int, flags: int, locale: str | None) -> list[Token]:
        return [
            (offset + t[0], offset + t[1], *t[2:])
            for t in self._base(part.encode("utf-8"), flags, locale)
        ]


JOIN = " "  # between a word and the symbols beside it in one token (no other token has a space)
RUN = 4  # the symbols beside a word that such a token holds at most


def _runs(tokens: list[Token], marks: list[int]) -> list[tuple[Token | None, list[str]]]:
    """The tokens as (a word, the symbols right after it): the first has no word when the
    text begins with symbols."""
    symbol = set(marks)
    out: list[tuple[Token | None, list[str]]] = [(None, [])]
    for n, t in enumerate(tokens):
        if n in symbol:
            out[-1][1].append(t[2])
        else:
            out.append((t, []))
    return out if out[0][1] else out[1:]


def _colocated(tokens: list[Token], marks: list[int]) -> list[Token]:
    """A document's tokens with each symbol colocated with the word before it (or after it,
    at the text's start): FTS5 counts no colocated token in a column's size, so a symbol
    leaves BM25's length normalisation, and every ranking, as a text without it has them.
    A phrase's adjacency is kept by tokens of a word with the symbols beside it ("day 🚀",
    "🚀 launch", up to RUN symbols: every run after a word begins it, every run before one
    ends it) and of runs of symbols ("🚀 🎉"), colocated too; `_merged` writes a query's so.
    A text of symbols alone: the first has a place of its own, the others share it."""
    runs = _runs(tokens, marks)
    places: list[list[Any]] = [list(w) if w else [] for w, _ in runs]
    for n, (word, symbols) in enumerate(runs):
        if not symbols:
            continue
        host = places[n] if word else (places[n + 1] if n + 1 < len(runs) else places[n])
        if not host:  # symbols alone
            first = tokens[marks[0]]
            host.extend(first[:2])
        extra = list(symbols)
        for size in range(2, RUN + 1):  # runs of symbols ("★★★", "🚀🎉")
            extra += [JOIN.join(symbols[i : i + size]) for i in range(len(symbols) - size + 1)]
        if word:
            top = min(RUN, len(symbols))
            extra += [JOIN.join([word[2], *symbols[:i]]) for i in range(1, top + 1)]
        for t in extra:
            if t not in host[2:]:
                host.append(t)
        if n + 1 < len(runs):  # the word after them: at its own place
            after = places[n + 1]
            top = min(RUN, len(symbols))
            after += [JOIN.join([*symbols[-i:], after[2]]) for i in range(1, top + 1)]
    return [tuple(p) for p in places if p]


def _merged(tokens: list[Token], marks: list[int]) -> list[Token]:
    """A query's phrase as _colocated indexes it: each run of symbols in one token with the
    word after it (or, at the phrase's end, the word before it), so that the phrase's places
    follow each other as its words' do in the text; a run of symbols alone as one token. A
    phrase's last symbols after a word whose token has the symbols before it already are not
    asked for (rare: `"🚀 launch 🎉"` finds "🚀 launch" too)."""
    runs = _runs(tokens, marks)
    out: list[Token] = []
    before: list[str] = []  # the symbols waiting for the word after them
    for word, symbols in runs:
        if word is None:
            before = symbols
            continue
        t = word
        if before:
            t = (word[0], word[1], JOIN.join([*before[-RUN:], word[2]]))
        before = symbols
        out.append(t)
    if before:
        if not out:  # symbols alone
            first = tokens[marks[0]]
            return [(first[0], tokens[marks[-1]][1], JOIN.join(before[:RUN]))]
        last = out[-1]
        if JOIN not in last[2]:
            out[-1] = (last[0], last[1], JOIN.join([last[2], *before[:RUN]]))
    return out


def factory(con: apsw.Connection, args: list[str]) -> CJKTokenizer:
    """FTS5 tokenizer factory: `cjk [symbols] [BASE ARGS...]`, the base defaulting to BASE."""
    symbols = bool(args) and args[0] in (SYMBOLS, APART)  # before m021: none, as then
    colocate = symbols and args[0] == SYMBOLS
    name, *rest = args[symbols:] or BASE
    # a table made before m016 (no categories: its words cut at marks) gets CJK runs only, as
    # then; m016 makes it again
    runs = _RUNS if "categories" in rest else _CJK_RUNS
    return CJKTokenizer(con.fts5_tokenizer(name, rest), runs, symbols, colocate)


def register(con: apsw.Connection) -> None:
    con.register_fts5_tokenizer(NAME, factory)
