"""Words whose symbols make them another word: `C#`, `F#`, `C++`, `g++`, `.NET`, `.env`, `$HOME`,
`#123` (stop 37, branch walkh12).

The index's tokenizer (unicode61; on PostgreSQL the english parser) drops `#`, `+`, `.` and `$`,
so `C#` and `C++` are searched as `c`, `.NET` as `net` and `$HOME` as `home`: a search for `C#`
listed the note about C first, and one for `$HOME` every note that says "home". A query made of
nothing but such words (stop words aside) asks for them as written, as `rg -F -i -w` reads
them: each hit must hold every one of them (any one, with `OR`; a query that excludes, `NOT`
or `-term`, is searched as before), between word boundaries (a version may follow: `C++17`)
and whatever its case
(`.NET` is not found in `ASP.NET`, as rg does not find it there), so a query of one that no
text holds answers nothing. The keyword pool still finds the candidates (the word without its
symbols) and ranks them; only those that do not hold the word as written are left out, from
both pools. A sentence with such a word in it (`how do we build the C# tool?`) is searched as
before: its other words decide. Tags (`#oncall`) are not among them: a tag is found as the
note writes it, `#oncall` or `tags: [oncall]`.

Known limit: the keyword pool holds the best matches of the word without its symbols, so in a
workspace where thousands of texts say `c`, a note that says `C#` can rank outside the pool;
the index would need `c#` as a token of its own (a re-index) to find every one.
"""

from __future__ import annotations

import re

from memoryd.search.ftsquery import STOP_WORDS
from memoryd.search.ranking import Candidate
from memoryd.store import searchsql
from memoryd.store.protocol import Connection

# a short name with `#` or `++` after it, a name after a dot or a `$`, a number after `#`
_SYMBOL_WORD = re.compile(
    r"[A-Za-z][A-Za-z0-9]{0,3}(?:#|\+\+)|\.[A-Za-z][A-Za-z0-9_-]*|\$[A-Za-z_][A-Za-z0-9_]*|#\d+"
)
_QUOTES = "\"'`"


def symbol_words(query: str) -> tuple[list[str], bool]:
    """The query's words written with symbols, when it holds nothing else but stop words, and
    whether any of them will do (`C# OR F#`) rather than every one; ([], False) for any other
    query, or one that excludes (`NOT`, `-term`): it is searched as it always was."""
    found: list[str] = []
    tokens = query.split()
    if "NOT" in tokens or any(t.startswith("-") for t in tokens):
        return [], False
    for token in tokens:
        token = token.strip(_QUOTES).rstrip(",;:!?")
        if not token or token.lower() in STOP_WORDS:
            continue
        if _SYMBOL_WORD.fullmatch(token) is None:
            return [], False
        found.append(token)
    return found, "OR" in tokens


def _pattern(word: str) -> re.Pattern[str]:
    """The word as rg -F -i -w finds it: the literal, no word character either side; but a
    version may follow a word that ends with its symbol (`C++17`, `C#10` are C++ and C#)."""
    after = r"(?![A-Za-z_])" if not word[-1].isalnum() else r"(?!\w)"
    return re.compile(r"(?<!\w)" + re.escape(word) + after, re.IGNORECASE)


def written_in(text: str, word: str) -> bool:
    """Whether the text writes the symbol word, as a query of it asks (`_pattern`)."""
    return _pattern(word).search(text) is not None


def holding(con: Connection, query: str, ranked: list[Candidate]) -> list[Candidate]:
    """With a query of symbol words only (`symbol_words`), the candidates whose text (a note's
    hit: one of its matching sections) holds every one of them as written (any one, with
    `OR`); else all of them."""
    words, either = symbol_words(query)
    if not words or not ranked:
        return ranked
    ids = {c.id for c in ranked} | {s.id for c in ranked for s in c.sections}
    texts = searchsql.texts(con, sorted(ids))
    patterns = [_pattern(w) for w in words]

    every = any if either else all

    def holds(c: Candidate) -> bool:
        return any(
            every(p.search(texts.get(i, "")) for p in patterns)
            for i in (c.id, *(s.id for s in c.sections))
        )

    return [c for c in ranked if holds(c)]


def widened(ranges: list[list[int]], snippet: str, query: str) -> list[list[int]]:
    """A snippet's highlights with each match of a symbol word marked whole (`C++`, `$HOME`:
    the index marks `C`, `HOME`), for a query of such words; else the ranges as they are."""
    words, _ = symbol_words(query)
    if not words:
        return ranges
    spans = [(m.start(), m.end()) for w in words for m in _pattern(w).finditer(snippet)]
    out = []
    for a, b in ranges:
        for start, end in spans:
            if start < b and a < end:  # they overlap
                a, b = min(a, start), max(b, end)
        out.append([a, b])
    return out
