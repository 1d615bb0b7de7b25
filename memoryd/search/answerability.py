"""Does anything in the index answer this query? The checks that need no score (issue 11.3;
docs/protocol.md, "No answer"), beside the absent identifier of evidence.py: a query that asks
about a named thing no text mentions ("How do I migrate a Redis cluster to Valkey?", "Which
host runs the Elasticsearch cluster?") is answered by nothing, however close its other words
bring the notes about Redis or about hosts.

A *name* here is a word written with a capital letter where English does not need one (not only
the first letter of a sentence: `Valkey` mid-sentence, `RabbitMQ` or `SFTP` anywhere), of four
or more ASCII letters and no digit (identifiers with digits are evidence.py's). It is *missing*
when the index holds no text with it, it is not a common English word (the typo corrector's
list: `Visa`, `Portugal`, `March` are common words the notes may simply not use), and typo
correction finds no index word it could be a misspelling of.

A code name joined by underscores (`compute_fx_rate()`, `sync_merchant_limits`) that no text
holds answers nothing either, digits or not (ranking.identifier asks for digits: `covid-19`;
an underscore is never prose), as evidence.py does for `ERR_AUTH_2207`. So does a *literal*
(`literal_units`): an exact string no prose writes, words joined by `.`, `:`, `/`, `@`, `\\` or
`+` (an address, a URL, a path, a file name, a key chord: `10.9.9.9`, `ops@example.com`,
`https://x.org/a`, `src/lib/none.rs`, `Ctrl+Alt+Q`), numbers in three or more parts
(`2031-01-01`), or a tag or mention (`#release-train`, `@nobody`): without it, weak vector
neighbours (similarity 0.2-0.3, scores ~0.05) answered 60 to 100 notes where `rg` finds none.
Words joined by a hyphen alone are prose (`e-mail`, `state-of-the-art`: a note may write
`email`), as are two words joined by an apostrophe.

Why not a score: on the labelled sets the no-answer questions resemble the answerable ones in
every retrieval score (BENCHMARKS.md, "No answer"); a name that no text holds is the one tell
that needs no threshold. Short acronyms (PR, MFA, SLA) are left alone: notes often spell them
out ("pull request", "multi-factor").
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from memoryd.search.ftsquery import negation, quote_term, unit_term
from memoryd.search.fuzzy import common_words
from memoryd.search.ranking import identifier, idf, query_units
from memoryd.store import searchsql
from memoryd.store.protocol import Connection

MIN_NAME = 4  # the common-word list holds words of 4+ letters only
_SPLIT = re.compile(r"[^A-Za-z0-9']+")
_POSSESSIVE = re.compile(r"'s?$", re.IGNORECASE)
_ASCII_WORD = re.compile(r"[A-Za-z]+")
_IDENT = re.compile(r"[0-9_]")
_SNAKE = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)+")
_SENTENCE_END = re.compile(r"[.?!:;]['\")\]]*$")
_EDGE = "\"'`()[]{}<>,;.:!?*"  # what surrounds a token in a sentence (not `#` or `@`)
_JOINED = re.compile(r"[^\W_][.:/@\\+]+[^\W_]")
_NUMBERS = re.compile(r"\d+(?:[-.]\d+){2,}")
_TAG = re.compile(r"[#@][^\W\d][\w/-]*")


class DocFreq(Protocol):
    def doc_freq(self, con: Connection, expr: str, n: int | None = None) -> int: ...


class Rewriter(Protocol):
    def rewrite(self, con: Connection, terms: list[str]) -> Any: ...


def names(query: str) -> list[str]:
    """The query's words that are written as names (lowercased, each once, in order): a capital
    letter after the first character, or a capital first letter where no sentence starts."""
    out: dict[str, None] = {}
    starts_sentence = True
    for token in query.split():
        first, starts_sentence = starts_sentence, bool(_SENTENCE_END.search(token))
        if negation(token):  # excluded by the query, not asked about
            continue
        if _IDENT.search(token):  # ERR_AUTH_2207, S3, db-replica-05: identifiers, not names
            continue
        parts = [p for p in _SPLIT.split(token) if p]
        for i, part in enumerate(parts):
            word = _POSSESSIVE.sub("", part)
            if len(word) < MIN_NAME or not _ASCII_WORD.fullmatch(word):
                continue
            sentence_start = first and i == 0
            if any(ch.isupper() for ch in word[1:]) or (word[0].isupper() and not sentence_start):
                out[word.lower()] = None
    return list(out)


def literal_units(query: str) -> set[str]:
    """The units (`query_units`) of the query's literal tokens: words joined by `.`, `:`, `/`,
    `@`, `\\` or `+`, numbers in three or more parts, or a word after `#` or `@` (a tag, a
    mention); see the module's doc."""
    out: set[str] = set()
    for token in query.split():
        if negation(token):  # excluded by the query, not asked about
            continue
        token = token.strip(_EDGE)
        if _JOINED.search(token) or _NUMBERS.fullmatch(token) or _TAG.fullmatch(token):
            out.update(query_units(token))
    return out


def code_names(query: str) -> list[str]:
    """The query's words joined by underscores (lowercased): `compute_fx_rate` from
    `compute_fx_rate()`; not a phrase the tokenizer makes of a longer token
    (`reconcile_ledger(since=x)`), whose exact wording a note need not repeat."""
    return [u for u in query_units(query) if _SNAKE.fullmatch(u)]


def missing_name(
    con: Connection, query: str, evidence: DocFreq, fuzzy: Rewriter | None
) -> str | None:
    """The first code name of the query (`code_names`) that no text holds; else the first name
    (`names`) that no text holds, that is not a common English word and that typo correction
    cannot turn into an index word (no name at all without a typo corrector to rule out a
    misspelling). None when there is none."""
    for word in code_names(query):
        if evidence.doc_freq(con, quote_term(word)) == 0:
            return word
    if fuzzy is None:
        return None
    common = common_words()
    for word in names(query):
        if word in common or evidence.doc_freq(con, quote_term(word)) != 0:
            continue
        if fuzzy.rewrite(con, [word]) is not None:
            continue  # perhaps a misspelling of a word the notes do use
        return word
    return None


def absent_units(con: Connection, query: str, evidence: DocFreq) -> tuple[list[str], float]:
    """The query's units that no text of the index holds, and their IDF-weighted share of all
    its units (0..1; a unit no text holds weighs most). Issue 19.3: such a word lowers every
    hit's score (ranking.damp) and never empties an answer by itself."""
    units = query_units(query)
    if not units:
        return [], 0.0
    n = searchsql.entry_count(con)
    dfs = {u: evidence.doc_freq(con, unit_term(u), n) for u in units}
    weights = {u: idf(df, max(n, df)) for u, df in dfs.items()}
    absent = [u for u, df in dfs.items() if df == 0]
    total = sum(weights.values())
    return absent, (sum(weights[u] for u in absent) / total if total else 0.0)


def only_absent_names(
    con: Connection, query: str, absent: list[str], fuzzy: Rewriter | None
) -> str | None:
    """The first unit of a query made of nothing but absent names or identifiers (beside stop
    words): every unit is absent and each is an identifier (`ranking.identifier`), a code name
    joined by underscores, or a name (`names`) that is not a common English word and that typo
    correction cannot turn into an index word, or a literal (`literal_units`: `10.9.9.9`,
    `ops@example.com`). Such a query answers nothing ("ERR_AUTH_2207", "Valkey"); None for
    any other query, which keeps its hits (issue 19.3)."""
    units = query_units(query)
    if not units or set(units) != set(absent):
        return None
    written_as_names = set(names(query))
    common = common_words()
    literal = literal_units(query)
    for u in units:
        if identifier(u) or _SNAKE.fullmatch(u) or u in literal:
            continue
        if fuzzy is None or u not in written_as_names or u in common:
            return None
        if fuzzy.rewrite(con, [u]) is not None:
            return None  # perhaps a misspelling of a word the notes do use
    return units[0]
