"""Words whose symbols make them another word: `C#`, `F#`, `C++`, `g++`, `.NET`, `.env`, `$HOME`,
`#123` (stop 37, branch walkh12; in any query, stop 38, branch fm13).

The index's tokenizer (unicode61; on PostgreSQL the english parser) drops `#`, `+`, `.` and `$`,
so `C#` and `C++` are searched as `c`, `.NET` as `net` and `$HOME` as `home`: a search for `C#`
listed the note about C first, and one for `$HOME` every note that says "home". A query that
holds such words asks for them as written, as `rg -F -i -w` reads them, whatever else it holds
(`C# port`, `we ported it to C# last year`, `"C# tool"`, `C# -java`, a filter): each hit must
hold every one of them (with `OR`, one of the query's alternatives: a symbol word as written or
another of its words), between word boundaries (a version may follow: `C++17`) and whatever its
case (`.NET` is not found in `ASP.NET`, as rg does not find it there), in its text or its note's
front-matter values; so a query of one that no text holds answers nothing. The keyword pool
still finds the candidates (the word without its symbols) and ranks them, with the query's
other words; only those that do not hold the word as written are left out, from both pools.
A word the query excludes (`-C#`, `NOT C#`) is excluded as written too: the texts that write
`C#` are left out, not every text that says `c` (ftsquery.unwritten takes it out of the index's
query). Tags (`#oncall`) are not among them: a tag is found as the note writes it,
`#oncall` or `tags: [oncall]`.

Known limit: the keyword pool holds the best matches of the word without its symbols, so in a
workspace where thousands of texts say `c`, a note that says `C#` can rank outside the pool;
the index would need `c#` as a token of its own (a re-index, and a tokenizer of our own on
PostgreSQL too) to find every one.
"""

from __future__ import annotations

import re

from memoryd.search.ftsquery import (
    STOP_WORDS,
    SYMBOL_WORD,
    WORD_QUOTES,
    query_tokens,
    unwritten,
)
from memoryd.search.ranking import Candidate
from memoryd.store import entrytexts
from memoryd.store.protocol import Connection

_WORDS = re.compile(r"\w")


def symbol_words(query: str) -> tuple[list[str], bool]:
    """The words written with symbols that the query asks for (not those it excludes), and
    whether any one of the query's alternatives will do (`C# OR F#`, `C# OR rust`) rather than
    every one of them; ([], False) for a query without such words."""
    found, _others, either = _read(query)
    return found, either and bool(found)


def _read(query: str) -> tuple[list[str], list[str], bool]:
    """(the symbol words the query asks for, its other words, whether it holds `OR`): stop
    words, operators and the words it excludes (`-term`, `NOT term`; not a `-` inside
    backticks, which ftsquery reads as plain text) left out."""
    found: list[str] = []
    others: list[str] = []
    either = "OR" in query.split()
    for raw, code, after_not in query_tokens(query):
        excluded = after_not or (raw.startswith("-") and not code)
        token = raw.lstrip("-(").strip(WORD_QUOTES).rstrip(",;:!?.)").strip(WORD_QUOTES)
        if excluded or not token or raw in ("OR", "NOT") or token.lower() in STOP_WORDS:
            continue
        if SYMBOL_WORD.fullmatch(token) is not None:
            found.append(token)
        elif _WORDS.search(token):
            others.append(token)
    return found, others, either


def _pattern(word: str) -> re.Pattern[str]:
    """The word as rg -F -i -w finds it: the literal, no word character either side; but a
    version may follow a word that ends with its symbol (`C++17`, `C#10` are C++ and C#)."""
    after = r"(?![A-Za-z_])" if not word[-1].isalnum() else r"(?!\w)"
    return re.compile(r"(?<!\w)" + re.escape(word) + after, re.IGNORECASE)


def _stem_pattern(word: str) -> re.Pattern[str]:
    """A word as the index finds it, roughly: its first letters (all but a suffix of up to
    three, at least four) at a word's start."""
    stem = word[: max(4, len(word) - 3)]
    return re.compile(r"(?<!\w)" + re.escape(stem), re.IGNORECASE)


def written_in(text: str, word: str) -> bool:
    """Whether the text writes the symbol word, as a query of it asks (`_pattern`)."""
    return _pattern(word).search(text) is not None


def holding(con: Connection, query: str, ranked: list[Candidate]) -> list[Candidate]:
    """With a query that asks for symbol words (`symbol_words`), the candidates whose text or
    note's front-matter values (a note's hit: one of its matching sections) hold every one of
    them as written (with `OR`, one of the query's alternatives); else all of them. With one it
    excludes (`-C#`), neither the candidates nor the sections that write it."""
    words, others, either = _read(query)
    gone = [_pattern(w) for w in unwritten(query)[1]]  # `-C#`: those that write it, left out
    if not (words or gone) or not ranked:
        return ranked
    ids = {c.id for c in ranked} | {s.id for c in ranked for s in c.sections}
    texts = entrytexts.written(con, sorted(ids))
    if gone:

        def free(i: int) -> bool:
            return not any(p.search(texts.get(i, "")) for p in gone)

        ranked = [c for c in ranked if free(c.id)]
        for c in ranked:
            c.sections = [s for s in c.sections if free(s.id)]
        if not words:
            return ranked
    patterns = [_pattern(w) for w in words]
    # with OR, a text may answer by another alternative: a word of it (its stem: the index
    # stems, `ports` finds `porting`)
    alternatives = [_stem_pattern(w) for w in others] if either else []

    def holds_text(text: str) -> bool:
        if not either:
            return all(p.search(text) for p in patterns)
        return any(p.search(text) for p in (*patterns, *alternatives))

    def holds(c: Candidate) -> bool:
        return any(holds_text(texts.get(i, "")) for i in (c.id, *(s.id for s in c.sections)))

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
