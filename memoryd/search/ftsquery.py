"""User query text -> a safe FTS5 MATCH expression. Pure.

Supported syntax (as in web search boxes):
  words            all must match (implicit AND)
  "exact phrase"   the words in this order
  prefix*          words starting with prefix (stemmed like every term; see parse_query)
  a OR b           either (uppercase OR between two terms or phrases)
  -term, NOT term  must not match (a query of negations only matches nothing)
  `code`           plain words: no operator inside backticks (`go build -cover` asks about
                   cover, it does not exclude it)
Everything else (unbalanced quotes, parentheses, column filters like `content:`, NEAR, AND, ^,
+, stray operators, control characters) is treated as plain text: every term is emitted as a
quoted FTS5 string, so no input can raise an FTS5 syntax error. A token's inner punctuation
keeps its words adjacent, as the tokenizer splits the text's (`foo.bar`, `v2.3.1`, `10.0.0.12`,
`https://x.org/a`, `title:draft`, `Ctrl+Shift+P`: phrases); brackets separate (a call's
arguments, `reconcile_ledger(since=x)`, need not be written as the query writes them).

Chinese, Japanese and Korean: the index's tokenizer (store/tokenizer.py) turns a quoted CJK run
into a phrase of its overlapping bigrams, so "数据库" is matched inside any sentence that has it.
A CJK query is often a whole sentence without spaces ("李明负责什么"), which no note contains
verbatim: in the any-term query each CJK run of MIN_CJK_SPLIT or more characters (shorter ones
are most often one word: 数据库, 双向链接, 勉強会) is also offered as its separate bigrams (李明 OR
明负 OR 负责; not those with a grammatical character: 什么, の会, ルは), and bm25 ranks the notes
that share most of them. A run of katakana alone is one word however long (ボールト, プロジェクト).
A word is thus matched only where its characters are adjacent: one that no note contains finds
nothing (issue 19.7).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from memoryd.store.tokenizer import MARKS, cjk_runs, is_sea
from memoryd.text.symbolchars import GRAPHEME, has_symbol, is_symbol

MAX_TERMS = 64
MIN_CJK_SPLIT = 5  # CJK runs this long are also searched bigram by bigram in match_any
MIN_PREFIX = 4  # a word no text holds is searched as a prefix when it has this many letters
_KATAKANA = re.compile("[\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f]+")
# Characters that mostly carry grammar, not topic: a bigram with one of them is left out of the
# bigram-by-bigram any-term query (like STOP_WORDS), never out of the phrase. Hiragana (Japanese
# particles and inflections: の, は, まった) and common Chinese function characters.
CJK_STOP_CHARS = frozenset(
    [chr(c) for c in range(0x3041, 0x30A0)]
    + list("的了是在吗呢吧啊么什哪谁怎这那个")  # not 都 (京都), 和 (和食), 里 (公里)...
)
# Words that carry no topic: left out of the any-term query (never out of the all-terms one),
# so "what did we decide about auth?" fills its pool with notes about deciding and auth.
STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "just",
        "me",
        "more",
        "most",
        "my",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
    ]
)
_OPERATORS = ("OR", "NOT", "AND", "NEAR")
_TOKEN = re.compile(r'-?"[^"]*"?\*?|[^\s"]+')
_WORDISH = re.compile(r"\w", re.UNICODE)
# a word (a combining mark is inside it) or a symbol's grapheme (text/symbolchars.py: a word of
# its own, "🚀launch" is 🚀 and launch)
_WORD_OR_SYMBOL = re.compile(f"{GRAPHEME}|[\\w{MARKS}]+")
# An English possessive ("Lena's", "the Joneses'"): the word is the name, which the notes mostly
# write without it ("Lena: ..." in a chat, "Lena said"); as a phrase "lena s" it would match only
# the texts that repeat the possessive.
_POSSESSIVE = re.compile(r"(?<=\w)['\u2019]s?$", re.IGNORECASE)


def negation(token: str) -> bool:
    """Whether a query token excludes what follows its `-` (`-staging`, `-"load test"`); a
    command-line option (`--region`, `--`) does not."""
    return len(token) > 1 and token[0] == "-" and token[1] != "-"


def strip_possessive(token: str) -> str:
    """The token without a trailing English possessive ('s, s')."""
    return _POSSESSIVE.sub("", token)


# A word the index reads without its symbols (search/symbols.py): a short name with `#` or `++`
# after it, a name after a dot or a `$`, a number after `#`
SYMBOL_WORD = re.compile(
    r"[A-Za-z][A-Za-z0-9]{0,3}(?:#|\+\+)|\.[A-Za-z][A-Za-z0-9_-]*|\$[A-Za-z_][A-Za-z0-9_]*|#\d+"
)
WORD_QUOTES = "\"'`"


def symbol_token(raw: str) -> str | None:
    """The symbol word a query token writes (`C#`, `(C++)`, `-.NET`, `"$HOME"`, `C#.`), or None
    (a plain word, a phrase's first or last word, a tag)."""
    token = raw.lstrip("-(").rstrip(",;:!?.)")
    if token[:1] in WORD_QUOTES or token[-1:] in WORD_QUOTES:
        if len(token) < 3 or token[0] != token[-1]:
            return None  # a phrase's edge (`"C# tool"`): the phrase is read as the index reads it
        token = token[1:-1].rstrip(",;:!?.)")
    return token if SYMBOL_WORD.fullmatch(token) else None


def query_tokens(query: str) -> Iterator[tuple[str, bool, bool]]:
    """The query's tokens as typed (split at white space), each with whether it lies inside a
    `code span` and whether it follows a `NOT` outside one: what `unwritten` and
    search/symbols.py read a query by."""
    code = after_not = False
    for raw in query.split():
        yield raw, code, after_not
        after_not = raw == "NOT" and not code
        if raw.count("`") % 2:
            code = not code


def unwritten(text: str) -> tuple[str, tuple[str, ...]]:
    """The query without the symbol words it excludes (`-C#`, `NOT C#`, `-$HOME`), and those
    words. They are excluded as written, as `rg -F -i -w` reads them (search/symbols.py), not as
    the index reads them: `-C#` leaves out the texts that write `C#`, not every text that says
    `c`. A `-` inside backticks is the code's own (an option), not an exclusion."""
    if not any(ch in text for ch in "#+.$"):
        return text, ()
    tokens = list(query_tokens(text))
    dropped: set[int] = set()
    words: list[str] = []
    for i, (raw, code, after_not) in enumerate(tokens):
        if not code and (after_not or negation(raw.lstrip("("))):  # brackets are spaces
            word = symbol_token(raw)
            if word is not None:
                words.append(word)
                dropped.update((i - 1, i) if after_not else (i,))
    if not words:
        return text, ()
    return " ".join(t[0] for i, t in enumerate(tokens) if i not in dropped), tuple(words)


@dataclass(frozen=True)
class ParsedQuery:
    match: str | None  # every positive group must match (what the user typed)
    terms: tuple[str, ...]
    negated: tuple[str, ...]
    match_any: str | None = None  # any positive group may match: recall for questions
    quoted: bool = False  # a phrase in quotes: the words as typed were asked for
    excluded: tuple[str, ...] = ()  # the FTS5 expressions a hit must not match (`-term`)
    ignored: int = 0  # the words and phrases past the first MAX_TERMS, left out


def quote_term(term: str) -> str:
    """One FTS5 string literal."""
    return '"' + term.replace('"', '""') + '"'


def prefixes(word: str) -> tuple[str, str]:
    """What a word read as the start of longer ones is searched as, each a prefix: the word, and
    the word less its last letter, as the porter stemmer rewrites a prefix too ("deploy" is
    stemmed "deploi", which would miss "deployment", stem "deploy")."""
    return word, word[:-1]


_DATE = re.compile(r"\d{4} \d{1,2} \d{1,2}")


def unit_term(unit: str) -> str:
    """A query's word or phrase (a unit) as FTS5 matches it: a date (`2026 03 05`, typed
    `2026-03-05` or `2026/03/05`) also as the start of an ISO 8601 date-time, which the
    tokenizer reads as `2026 03 05t10 00 00z` (so `2026-03-05` finds a log line stamped
    `2026-03-05T10:00:00Z`, as `rg` does); anything else as it is."""
    return quote_term(unit) + ("*" if _DATE.fullmatch(unit) else "")


def _clean(text: str) -> str:
    """Control characters and brackets as spaces; `:`, `+` and `^` too, except inside a token,
    where they join its words as `.`, `-` and `/` do: `https://example.com/docs`, `14:30`,
    `C:\\Users`, `title:draft`, `Ctrl+Shift+P` and `x^2` keep their words adjacent (a phrase),
    as the text writes them, instead of asking for each word anywhere."""
    text = _CODE_SPAN.sub(_plain_code, text) if "`" in text else text
    text = "".join(" " if (ord(c) < 32 or c in "()[]{}") else c for c in text)
    return _EDGE_JOINERS.sub(" ", text) if _JOINERS.search(text) else text


_JOINERS = re.compile(r"[:+^]")
# a joiner at a token's edge (`Note:`, `+1`, a lone `:`): nothing to join
_EDGE_JOINERS = re.compile(r"(?<!\S)[:+^]+|[:+^]+(?!\S)")
_CODE_SPAN = re.compile(r"`([^`]*)`")
_CODE_DASHES_QUOTES = re.compile(r'(?<!\S)-+(?=\S)|"')
_CODE_OPERATORS = re.compile(r"\b(?:OR|NOT|AND|NEAR)\b")


def _plain_code(m: re.Match[str]) -> str:
    """A `code span` of the query as plain words: its option dashes, quotes and uppercase
    operators are the code's own (`go build -cover`, `a OR b` in a shell line), not the
    query's, so its words are asked about, as an option's is (`--region`, parse_query)."""
    code = _CODE_DASHES_QUOTES.sub(" ", m.group(1))
    return " " + _CODE_OPERATORS.sub(lambda o: o.group().lower(), code) + " "


def _words(text: str) -> list[str]:
    found = _WORD_OR_SYMBOL.findall(text)
    return [w for w in found if _WORDISH.search(w) or is_symbol(w)]


def sentence_run(run: str) -> bool:
    """Whether a CJK run is taken for a sentence (searched bigram by bigram as well as whole):
    MIN_CJK_SPLIT characters or more, and not katakana alone (a loanword: one word). A Thai,
    Lao, Khmer or Myanmar run never is: a word of theirs is often as long (ข้อมูล), and its
    bigrams would find notes that hold none of it."""
    return len(run) >= MIN_CJK_SPLIT and not _KATAKANA.fullmatch(run) and not is_sea(run)


def cjk_bigrams(words: list[str]) -> list[str]:
    """The bigrams of the CJK runs of MIN_CJK_SPLIT or more characters in words, each once,
    without those with a CJK_STOP_CHARS character."""
    out: dict[str, None] = {}
    for word in words:
        for run in cjk_runs(word):
            if sentence_run(run):
                pairs = (run[i : i + 2] for i in range(len(run) - 1))
                out.update(dict.fromkeys(p for p in pairs if not CJK_STOP_CHARS.intersection(p)))
    return list(out)


def parse_query(text: str) -> ParsedQuery:
    text = _clean(unwritten(text or "")[0])  # `-C#`: search/symbols.py leaves its texts out
    groups: list[list[str]] = []  # OR-groups of quoted expressions, ANDed together
    topical: list[bool] = []  # per group: has a word that is not a stop word
    loosened: list[str | None] = []  # per group: its any-term form when it has one (CJK)
    terms: list[str] = []
    negated: list[str] = []
    negate_next = False
    or_next = False
    quoted = False
    count = ignored = 0
    for raw in _TOKEN.findall(text):
        if count >= MAX_TERMS:  # counted, so the answer can say so (`terms_ignored`)
            ignored += raw not in _OPERATORS and bool(_WORDISH.search(raw) or has_symbol(raw))
            continue
        if raw == "OR":
            or_next = bool(groups)
            continue
        if raw == "NOT":
            negate_next = True
            continue
        if raw in ("AND", "NEAR"):
            continue
        negative = negate_next
        negate_next = False
        if negation(raw):
            negative, raw = True, raw[1:]
        elif raw.startswith("--"):  # a command-line option (`--region`): its word is asked about
            raw = raw.lstrip("-")
        prefix = raw.endswith("*")
        body = raw.rstrip("*")
        if body.startswith('"'):
            words = _words(body.strip('"'))
            if not words:
                continue
            quoted = quoted or not negative
            expr = quote_term(" ".join(words))
            if prefix and len(words) == 1:
                expr += "*"
        else:
            words = _words(strip_possessive(body))
            if not words:
                continue
            if len(words) == 1 and prefix and len(words[0]) >= 4:
                expr = "(" + " OR ".join(f"{quote_term(w)}*" for w in prefixes(words[0])) + ")"
            elif len(words) == 1:
                expr = quote_term(words[0]) + ("*" if prefix else "")
            else:  # "e-mail", "foo.bar": the tokenizer splits them; keep them adjacent
                expr = unit_term(" ".join(words))
        count += 1
        lowered = [w.lower() for w in words]
        if negative:
            negated.extend(lowered)
            groups.append(["NOT " + expr])
            topical.append(False)
            loosened.append(None)
            or_next = False
            continue
        terms.extend(lowered)
        is_topical = any(w not in STOP_WORDS for w in lowered)
        if or_next and groups and not groups[-1][0].startswith("NOT "):
            groups[-1].append(expr)
            topical[-1] = topical[-1] or is_topical
            loosened[-1] = None
        else:
            groups.append([expr])
            topical.append(is_topical)
            bigrams = [] if body.startswith('"') or prefix else cjk_bigrams(words)
            loosened.append(" OR ".join([expr, *map(quote_term, bigrams)]) if bigrams else None)
        or_next = False
    positives = [
        (g, t, lo)
        for g, t, lo in zip(groups, topical, loosened, strict=True)
        if not g[0].startswith("NOT ")
    ]
    excluded = tuple(g[0][4:] for g in groups if g[0].startswith("NOT "))
    if not positives:
        return ParsedQuery(
            None, tuple(dict.fromkeys(terms)), tuple(negated), excluded=excluded, ignored=ignored
        )
    parts = [("(" + " OR ".join(g) + ")") if len(g) > 1 else g[0] for g, _, _ in positives]
    loose = [lo or p for p, (_, t, lo) in zip(parts, positives, strict=True) if t]
    match = " AND ".join(parts)
    widened = any(lo for _, _, lo in positives)
    match_any = " OR ".join(loose) if loose and (len(parts) > 1 or widened) else None
    for g in groups:
        if g[0].startswith("NOT "):
            match = f"({match}) {g[0]}"
            if match_any is not None:
                match_any = f"({match_any}) {g[0]}"
    return ParsedQuery(
        match, tuple(dict.fromkeys(terms)), tuple(negated), match_any, quoted, excluded, ignored
    )


def prefix_match(parsed: ParsedQuery) -> str | None:
    """The any-term query of the topical words' prefixes, for a query none of whose words any
    text holds as typed (issue 19.2): a word may be cut short ("retro" for retrospectives, "docs"
    for documentation). Each word of MIN_PREFIX or more letters (not CJK: its bigrams are its
    own prefixes) matches a word that starts with it, or with it less its last letter (the
    stemmer rewrites a prefix too, as in parse_query); the query's exclusions still apply.
    None when no word qualifies, or when the query quotes a phrase (its words as typed were
    asked for: `"lag replication"` finds nothing when no text has it)."""
    if parsed.quoted:
        return None
    words = [
        t
        for t in parsed.terms
        if t not in STOP_WORDS and len(t) >= MIN_PREFIX and t.isalpha() and not cjk_runs(t)
    ]
    if not words:
        return None
    expr = " OR ".join(
        "(" + " OR ".join(f"{quote_term(p)}*" for p in prefixes(w)) + ")" for w in words
    )
    for n in parsed.negated:
        expr = f"({expr}) NOT {quote_term(n)}"
    return expr
