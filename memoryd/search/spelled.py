"""The corrected query as the notes write it: what a search's `corrected_query` and
`suggestion` show for the typo tier's rewrite (search/fuzzy.py finds the corrections; this
names each with a word the notes write, never a stem or an edit no note wrote)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import apsw

from memoryd.search.ftsquery import quote_term
from memoryd.search.fuzzy import FuzzyResult, damerau
from memoryd.store import entrytexts, searchsql
from memoryd.store.dialect import Tokenize, query_tokenizers
from memoryd.store.protocol import Connection


def answered(
    con: Connection,
    rewritten: FuzzyResult,
    query: str,
    ranked: Sequence[Any],
    keyword: Sequence[Any],
) -> str:
    """corrected_query of an answer: as its first texts that the keyword pool matched (the
    ranked candidates with a keyword rank, best first) write the corrected words, else as the
    keyword pool's first texts do."""
    used = [c.id for c in ranked if c.keyword_rank is not None][:5]
    return as_written(con, rewritten, query, used or [c.id for c in keyword[:5]])


def shown(
    result: FuzzyResult,
    tok: Tokenize,
    find: Callable[[str], list[str]],
    query: str = "",
    texts: Sequence[str] | None = None,
) -> str:
    """corrected_query as the notes write it: each corrected word replaced by the word
    the search used, as the first of `texts` (the texts it answers with, best first; by
    default the first the corrected query matches, `find`: an FTS5 query -> a few of the
    texts it matches) that holds one of its readings writes it (used_form: "retro" shows
    as retrospective where the answer is the retrospective, as retry where it is the
    retry note); else the word the texts that hold its best correction write
    (written_form: the stem itself, a cheap term lookup, then the correction's prefix
    query), never a stem or an edit no note wrote ("falsificaton" shows as falsification,
    not falsificator or falsif). A correction no text is found for (a race with an edit)
    keeps its form. The words not corrected are shown as the `query` writes them
    (PostgreSQL, not postgresql)."""
    typed = {w.lower(): w for w in re.findall(r"\w+", query)}
    words = [typed.get(w, w) for w in result.corrected_query.split(" ")]
    if texts is None:
        texts = find(result.match)
    for i, as_typed, stem, match, heads in result.fixes:
        word = used_form(tok, heads, texts, as_typed)
        word = word or written_form(tok, stem, find(quote_term(stem)), as_typed)
        word = word or written_form(tok, stem, find(match), as_typed)
        if word and i < len(words):
            words[i] = word
    return " ".join(words)


def as_written(
    con: Connection, rewritten: FuzzyResult, query: str = "", ids: Sequence[int] = ()
) -> str:
    """The corrected query as the notes write its words (shown): as the
    texts `ids` (the answer's, best first) write them, else a few of the texts that hold each
    correction (any text: the vocabulary is the whole index's)."""

    def find(match: str) -> list[str]:
        ids = [i for i, _, _ in searchsql.keyword_pool(con, match, "1 = 1", [], 5)]
        return list(entrytexts.texts(con, ids).values())

    tok, _ = query_tokenizers(con, cjk=False)
    held = entrytexts.texts(con, list(ids)) if ids else {}
    texts = [held[i] for i in ids if i in held] or None
    return shown(rewritten, tok, find, query, texts)


def _spelled(forms: dict[str, dict[str, int]], typed: str, cut: bool = False) -> str:
    """Of the words found (lowercased -> their spellings, counted), the one to show: with
    `cut`, one the typed word begins first (a word cut short: "retro", retrospective); then
    the closest to the word as typed, the most frequent, the shortest. Lowercase, unless the
    texts never write it so (a name: Popper, PostgreSQL), then as they write it most often."""
    count = {w: sum(spelt.values()) for w, spelt in forms.items()}
    best = min(
        forms,
        key=lambda w: (
            cut and not w.startswith(typed),
            damerau(typed, w, len(w)),
            -count[w],
            len(w),
            w,
        ),
    )
    if best in forms[best]:
        return best
    return max(forms[best], key=lambda w: (forms[best][w], w))


def used_form(
    tok: Tokenize, heads: Sequence[str], texts: Sequence[str], typed: str = ""
) -> str | None:
    """The word the first of the texts that holds one of a correction's readings (a token that
    begins with one of `heads`, as its prefix queries match) writes for it, else None; a word
    the typed word begins comes first (the word was cut short, not mistyped)."""
    if not heads:
        return None
    starts = tuple(heads)
    for text in texts:
        data = text.encode("utf-8", "replace")
        forms: dict[str, dict[str, int]] = {}
        for start, end, token in tok(
            data, apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=True, include_colocated=False
        ):
            if token.startswith(starts):
                word = data[start:end].decode("utf-8", "replace")
                spellings = forms.setdefault(word.lower(), {})
                spellings[word] = spellings.get(word, 0) + 1
        if forms:
            return _spelled(forms, typed.lower(), cut=True)
    return None


def written_form(tok: Tokenize, stem: str, texts: Sequence[str], typed: str = "") -> str | None:
    """The word the texts write for a stem: of its forms, the one closest to the word as typed
    ("netwrking": networking, not network), then the most frequent, then the shortest; a word
    whose stem only begins with it when none has it exactly (a correction is a prefix query);
    None when the texts hold neither. Lowercase, unless the texts never write it so (a name:
    Popper, PostgreSQL), then as they write it most often."""
    data = "\n".join(texts).encode("utf-8", "replace")
    exact: dict[str, dict[str, int]] = {}  # lowercased form -> its spellings, counted
    longer: dict[str, dict[str, int]] = {}
    for start, end, token in tok(
        data, apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=True, include_colocated=False
    ):
        if token.startswith(stem):
            word = data[start:end].decode("utf-8", "replace")
            spellings = (exact if token == stem else longer).setdefault(word.lower(), {})
            spellings[word] = spellings.get(word, 0) + 1
    forms = exact or longer
    return _spelled(forms, typed) if forms else None
