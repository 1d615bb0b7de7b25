"""Keyword search on PostgreSQL: FTS5 MATCH expressions -> tsquery, ranking, snippets, terms.

Search builds its keyword queries once, as FTS5 expressions (memoryd/search/ftsquery.py, fuzzy.py,
evidence.py): quoted strings (`"a b"`, `""` for a quote inside), prefixes (`"dep"*`), AND, OR,
NOT (binary: `a NOT b`), parentheses and juxtaposition (an implicit AND). `tsquery()` turns one
into a tsquery expression in SQL with its parameters, never pasting user text:

- a quoted string: its words (runs of letters and digits, as SQLite's unicode61 splits them)
  -> `phraseto_tsquery('english', ?)` (stemmed, stop words dropped); `"x"*` ->
  `to_tsquery('english', ?)` with `x:*` (x is letters and digits only, so it cannot be tsquery
  syntax); each CJK run -> the phrase of its overlapping bigrams through the `simple`
  configuration (`memoryd_cjk_bigrams`, the function the index trigger uses), so 数据库 is
  found inside any sentence holding it, as with the SQLite `cjk` tokenizer.
- AND -> `&&`, OR -> `||`, `a NOT b` -> `a && !!b`. A term without a word (only stop words,
  only punctuation) is the empty tsquery, which these operators ignore; an expression that is
  empty as a whole matches nothing.
Malformed input (unbalanced parentheses, stray operators) never raises: what cannot be parsed
as an operator is read as a term.

Ranking (docs/team.md, "Search on PostgreSQL"): per positive term t of the query,
`idf(t) * ts_rank_cd(WEIGHTS, fts, t, NORMALIZATION)`, summed (one term: ts_rank_cd of the whole
query): cover density over the weighted tsvector (A content, B the note's title, C headings,
D tags; store/pg/schema.py), each term weighted by BM25's IDF as FTS5 computes it (its document
frequency counted up to DF_CAP, one round trip per query), and saturated by normalisation 32.
Negated so that, as with FTS5's bm25(), lower is better and ranking.py normalises it unchanged.
ts_rank_cd alone has no IDF: a common name outranked the rare word a question is about
(chat-logs keyword nDCG@10 0.58 against SQLite's 0.64).
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Sequence
from typing import Any

from memoryd.store.protocol import Connection, one
from memoryd.store.tokenizer import WORD, cjk_runs, units
from memoryd.text import symbolchars

CONFIG = "english"  # the index's configuration (store/pg/schema.py TS_CONFIG)
# ts_rank_cd weights, in PostgreSQL's order {D, C, B, A}: tags, headings, title, content.
# Measured with `python -m bench quality --backend postgres` on all sets (BENCHMARKS.md).
WEIGHTS = "{0.4, 0.6, 0.6, 1.0}"
# 1 | 32: divide by 1 + log(length) (a mild length normalisation, BM25's b), then map r to
# r / (r + 1) (a term's weight saturates, BM25's k1). Measured on all sets (BENCHMARKS.md):
# without 32, chat-logs keyword nDCG@10 is 0.653 (0.670 with it); weights move it by < 0.003.
NORMALIZATION = 33
SNIPPET_WORDS = 24
MAX_RANKED_TERMS = 32  # terms of one query weighted by their IDF (the rest still match)
DF_CAP = 10_000  # document frequencies for IDF are counted up to this (as evidence.py)

_TOKEN = re.compile(r'"((?:[^"]|"")*)("?)(\*?)|\(|\)|[^\s()"]+')
_WORD = re.compile(WORD)
# Greek final sigma as sigma: PostgreSQL lowers Σ to σ alone, so ΟΔΥΣΣΕΑΣ and Οδυσσέας would
# differ in their last letter (SQLite's unicode61 folds both; the index's memoryd_fts_text too)
SIGMA = str.maketrans("ς", "σ")
_CJK_SPLIT = re.compile(r"[\u0e00-\U0003134f]")  # a cheap pre-check; cjk_runs decides


class _Builder:
    """Recursive descent over the tokens of one expression; collects SQL and parameters."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str, bool]] = []  # (kind, text, prefix)
        for m in _TOKEN.finditer(text or ""):
            if m.group(1) is not None:
                self.tokens.append(("term", m.group(1).replace('""', '"'), bool(m.group(3))))
            elif m.group(0) in ("(", ")", "AND", "OR", "NOT"):
                self.tokens.append((m.group(0), m.group(0), False))
            else:  # a bareword: FTS5 reads it as a term
                word = m.group(0)
                prefix = word.endswith("*")
                self.tokens.append(("term", word.rstrip("*"), prefix))
        self.pos = 0
        self.params: list[Any] = []
        self.negated = 0  # inside the right side of a NOT
        self.leaves: list[tuple[str, list[Any]]] = []  # the positive terms, for IDF weights
        self.cjk: list[str] = []  # the CJK runs of the positive terms, for highlights
        self.symbols: list[str] = []  # their symbols (symbolchars.key), for highlights

    def peek(self) -> str | None:
        return self.tokens[self.pos][0] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str, bool]:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def parse(self) -> str | None:
        parts = []
        while self.pos < len(self.tokens):
            expr = self.or_expr()
            if expr is not None:
                parts.append(expr)
            elif self.pos < len(self.tokens):
                self.pos += 1  # a stray ')' or operator: skip it
        return _join(parts, "&&")

    def or_expr(self) -> str | None:
        parts = [self.and_expr()]
        while self.peek() == "OR":
            self.take()
            parts.append(self.and_expr())
        return _join([p for p in parts if p is not None], "||")

    def and_expr(self) -> str | None:
        parts = [self.not_expr()]
        while self.peek() in ("AND", "term", "("):
            if self.peek() == "AND":
                self.take()
            parts.append(self.not_expr())
        return _join([p for p in parts if p is not None], "&&")

    def not_expr(self) -> str | None:
        left = self.primary()
        while self.peek() == "NOT":
            self.take()
            self.negated += 1
            start = len(self.params)
            right = self.primary()
            self.negated -= 1
            if right is not None and left is not None:
                left = f"({left} && !!{right})"
            else:  # a NOT without a left side matches nothing: drop it, with its parameters
                del self.params[start:]
        return left

    def primary(self) -> str | None:
        kind = self.peek()
        if kind == "(":
            self.take()
            inner = self.or_expr()
            if self.peek() == ")":
                self.take()
            return inner
        if kind == "term":
            _, text, prefix = self.take()
            start = len(self.params)
            sql = self.term(text, prefix)
            if not self.negated and sql != _EMPTY:
                self.leaves.append((sql, self.params[start:]))
            return sql
        return None

    def term(self, text: str, prefix: bool) -> str:
        parts: list[str] = []
        runs = cjk_runs(text) if _CJK_SPLIT.search(text) else []
        rest = text
        for run in runs:
            rest = rest.replace(run, " ")
        if not self.negated:
            self.symbols += [symbolchars.key(m.group()) for m in symbolchars.graphemes(rest)]
        words = _WORD.findall(symbolchars.spelled(rest).translate(SIGMA))
        if words:
            if prefix:
                head, last = words[:-1], words[-1]
                tail = f"to_tsquery('{CONFIG}', ?)"
                if head:  # "a b"*: the phrase a, then a word starting with b
                    self.params.append(" ".join(head))
                    tail = f"tsquery_phrase(phraseto_tsquery('{CONFIG}', ?), {tail})"
                self.params.append(f"{last}:*")
                parts.append(tail)
            else:
                self.params.append(" ".join(words))
                parts.append(f"phraseto_tsquery('{CONFIG}', ?)")
        if not self.negated:
            self.cjk += runs
        for run in runs:
            self.params.append(run)
            parts.append("phraseto_tsquery('simple', memoryd_cjk_bigrams(?))")
        return _join(parts, "&&") or _EMPTY


_EMPTY = "''::tsquery"


def _join(parts: Sequence[str], op: str) -> str | None:
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return "(" + f" {op} ".join(parts) + ")"


def tsquery(match: str) -> tuple[str, list[Any]]:
    """An FTS5 MATCH expression -> (SQL for the equivalent tsquery, its parameters)."""
    b = _Builder(match)
    sql = b.parse()
    return (sql or _EMPTY), b.params


def terms(match: str) -> list[tuple[str, list[Any]]]:
    """The positive terms of an FTS5 expression, each as (tsquery SQL, its parameters)."""
    b = _Builder(match)
    b.parse()
    return b.leaves[:MAX_RANKED_TERMS]


# --- the queries ---------------------------------------------------------------------------------


def rank_sql(column: str, query: str) -> str:
    """Lower is better, like FTS5's bm25()."""
    return f"-ts_rank_cd('{WEIGHTS}'::real[], {column}, {query}, {NORMALIZATION})"


def idf(n: int, df: int) -> float:
    """BM25's inverse document frequency (as FTS5 computes it, never below a small floor)."""
    return max(1e-6, math.log((n - df + 0.5) / (df + 0.5))) if df < n else 1e-6


def weighted_rank(con: Connection, match: str) -> tuple[str, list[Any]]:
    """The ranking expression over `e.fts` (lower is better) and its parameters: with one
    term, ts_rank_cd; with several, the sum of each term's ts_rank_cd weighted by its IDF (the
    number of entries holding it, counted up to DF_CAP), so that a rare word outweighs a common
    one as in BM25."""
    sql, params, _, _ = _ranking(con, terms(match))
    return sql, params


def _ranking(
    con: Connection, leaves: list[tuple[str, list[Any]]]
) -> tuple[str, list[Any], list[float], list[int]]:
    """weighted_rank of these terms, with each term's IDF and document frequency (none for
    one term)."""
    if len(leaves) <= 1:
        return rank_sql("e.fts", "q.q"), [], [], []
    n, dfs = doc_freqs(con, leaves)
    parts, params, idfs = [], [], []
    for (sql, ps), df in zip(leaves, dfs, strict=True):
        parts.append(f"?::float8 * ts_rank_cd('{WEIGHTS}'::real[], e.fts, {sql}, {NORMALIZATION})")
        idfs.append(idf(max(n, df), df))
        params += [idfs[-1], *ps]
    return "-(" + " + ".join(parts) + ")", params, idfs, dfs


DF_TTL_S = 60.0  # a remembered document frequency is counted again after this long
MEMO_MAX = 4096
# Counted exactly up to this; a term in more texts takes the planner's estimate (its
# statistics keep the most common lexemes' frequencies: within 1% for those at 100K entries).
# A count visits every matching heap row: 10,000 of them cost 50-80 ms on a busy server.
EXACT_MAX = 1000
# In a store of LARGE entries or more (N the planner's estimate), a term the planner estimates
# in ESTIMATED_MIN texts or more takes the estimate without a count (a count would reach
# EXACT_MAX and end there anyway); below, it is counted first.
LARGE = 10_000
ESTIMATED_MIN = 2 * EXACT_MAX

ENTRIES = "entries e WHERE e.fts"  # what a count reads: the chunks' (pg/notes.py: notes')

# Schema v5: a term's document frequency, one call a term inside the statement that reads N
# (one round trip for a search's terms), as `counted` completes a count, but the estimate first
# in a large store. VOLATILE: EXPLAIN.
DF_SCHEMA = f"""
CREATE FUNCTION memoryd_entry_df(q tsquery, n bigint, cap bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    plan JSON;
    est BIGINT;
    counted BIGINT;
BEGIN
    IF n >= {LARGE} AND cap > {EXACT_MAX} THEN
        EXECUTE 'EXPLAIN (FORMAT JSON) SELECT 1 FROM {ENTRIES} @@ $1' INTO plan USING q;
        est := (plan->0->'Plan'->>'Plan Rows')::bigint;
        IF est >= {ESTIMATED_MIN} THEN
            RETURN least(cap, est);
        END IF;
    END IF;
    SELECT count(*) INTO counted
        FROM (SELECT 1 FROM {ENTRIES} @@ q LIMIT least(cap, {EXACT_MAX})) t;
    IF counted < {EXACT_MAX} OR cap <= {EXACT_MAX} THEN
        RETURN counted;
    END IF;
    IF est IS NULL THEN
        EXECUTE 'EXPLAIN (FORMAT JSON) SELECT 1 FROM {ENTRIES} @@ $1' INTO plan USING q;
        est := (plan->0->'Plan'->>'Plan Rows')::bigint;
    END IF;
    RETURN greatest(counted, least(cap, est));
END
$fn$;
"""


def doc_freqs(
    con: Connection, leaves: list[tuple[str, list[Any]]], cap: int = DF_CAP
) -> tuple[int, list[int]]:
    """N and each term's document frequency, up to `cap` (memoryd_entry_df: counted up to
    EXACT_MAX, then the planner's estimate; in a large store a common term's estimate without a
    count), in one statement. A search asks for the same terms again (the keyword pool, the
    evidence's counts: match_count) and so may the next search, so each is remembered in the
    store's memo (PgConnection.memo) while N holds, for at most DF_TTL_S: IDF needs no exact
    count, and N (the planner's estimate once large) changes with every write only while the
    store is small, where counting is cheap."""
    memo: dict[Any, Any] = getattr(con, "memo", {})
    now = time.monotonic()
    keys = [("df", sql, tuple(ps), cap) for sql, ps in leaves]
    fresh: dict[Any, tuple[int, int, float]] = {
        k: memo[k] for k in keys if k in memo and now - memo[k][2] < DF_TTL_S
    }
    n = 0
    for attempt in range(2):
        missing = [(k, leaf) for k, leaf in zip(keys, leaves, strict=True) if k not in fresh]
        known = getattr(con, "n", None)
        if not missing and known is not None:  # N read already in this transaction
            n = max(int(known), 1)
        else:
            counts = "".join(f", memoryd_entry_df({sql}, s.n, ?)" for _, (sql, _) in missing)
            row = one(
                con.execute(
                    f"SELECT s.n{counts} FROM (SELECT {N_SQL} AS n) s",
                    [p for _, (_, ps) in missing for p in [*ps, cap]],
                )
            )
            _remember_n(con, int(row[0] or 0))
            n = max(int(row[0]), 1)
            if len(memo) > MEMO_MAX:
                memo.clear()
            for (k, _), df in zip(missing, row[1:], strict=True):
                fresh[k] = memo[k] = (int(df), n, now)
        stale = [k for k in keys if fresh[k][1] != n]  # counted when N was another
        if not stale or attempt:
            break
        for k in stale:
            del fresh[k]
    return n, [fresh[k][0] for k in keys]


def entry_count(con: Connection) -> int:
    """The entries' count of IDF (N_SQL), read once a transaction: a search asks for it several
    times (the keyword pool's IDF, the evidence's), and inside one REPEATABLE READ snapshot the
    count cannot change (the estimate is the planner's)."""
    known = getattr(con, "n", None)
    if known is not None:
        return int(known)
    row = con.execute(f"SELECT {N_SQL}").fetchone()
    n = int(row[0] or 0) if row else 0
    _remember_n(con, n)
    return n


def _remember_n(con: Connection, n: int) -> None:
    """Keep N on a read-only transaction's connection (a write's count moves as it writes)."""
    if getattr(con, "snapshot", False):
        setattr(con, "n", n)  # noqa: B010 (a PgConnection; the protocol has no `n`)


# N of the IDF: the planner's row estimate once the table is large (a count(*) would cost
# ~4 ms a pool at 100K entries; IDF needs no exact N), an exact count while it is small.
N_SQL = (
    f"(SELECT CASE WHEN c.reltuples >= {LARGE} THEN c.reltuples::bigint"
    " ELSE (SELECT count(*) FROM entries) END FROM pg_class c"
    " WHERE c.oid = 'all_entries'::regclass)"
)
# N_SQL where it is the estimate, NULL where it would count: read with every read's BEGIN
# (PgStore.read: a catalog lookup, no round trip of its own), so a search whose document
# frequencies are remembered asks the server nothing for N.
N_LARGE_SQL = (
    f"(SELECT CASE WHEN c.reltuples >= {LARGE} THEN c.reltuples::bigint END FROM pg_class c"
    " WHERE c.oid = 'all_entries'::regclass)"
)


def term_key(sql: str, params: Sequence[Any]) -> tuple[str, tuple[Any, ...]]:
    """A tsquery's identity: its SQL and parameters (a term reads the same from the pool's
    expression and from the evidence's quoted word)."""
    return sql, tuple(params)


def snippets(
    con: Connection, match: str, ids: Sequence[int], open_mark: str, close_mark: str
) -> dict[int, str]:
    """ts_headline of the content, matches wrapped in the markers; '…' where text was cut."""
    h = Headline(match, open_mark, close_mark)
    out: dict[int, str] = {}
    for i, content, snip in con.execute(
        f"SELECT e.id, e.content, {h.sql('q.q')} FROM (SELECT {h.q} AS q) q, entries e"
        " WHERE e.id = ANY(?)",
        [*h.params, *h.qparams, list(ids)],  # in the order the ?s appear
    ):
        out[int(i)] = h.finish(str(content), str(snip))
    return out


class Headline:
    """The snippet of one expression: its tsquery (`q`, `qparams`), the ts_headline column
    over a given tsquery column (`sql`, with `params`), and the text made of its result
    (`finish`: the CJK runs marked, '…' where text was cut)."""

    def __init__(self, match: str, open_mark: str, close_mark: str) -> None:
        b = _Builder(match)
        self.q, self.qparams, self.cjk = b.parse() or _EMPTY, b.params, b.cjk
        self.symbols = frozenset(b.symbols)
        self.marks = open_mark, close_mark
        self.params = [
            f'StartSel="{open_mark}", StopSel="{close_mark}", MaxWords={SNIPPET_WORDS},'
            f" MinWords={SNIPPET_WORDS // 2}, ShortWord=0, HighlightAll=false"
        ]

    def sql(self, column: str) -> str:
        # final sigma as sigma, as the query's words have it (SIGMA); finish() writes it back;
        # for a query of symbols, each as its word (as written: finish() writes it back too)
        text = "translate(e.content, 'ς', 'σ')"
        if self.symbols:
            text = f"memoryd_symbols({text}, true)"
        return f"ts_headline('{CONFIG}', {text}, {column}, ?)"

    def finish(self, content: str, snip: str) -> str:
        if "ς" in content:  # a sigma that ends a word was a final sigma: Greek writes it so
            close = re.escape(self.marks[1])
            snip = re.sub(f"σ(?=(?:{close})?(?:\\W|$))", "ς", snip)
        if self.symbols and "symb" in snip:
            snip = _mark_symbols(content, snip, self.symbols, *self.marks)
        return _ellipsis(content, _mark_cjk(snip, self.cjk, *self.marks), *self.marks)


def _mark_symbols(
    content: str, snip: str, keys: frozenset[str], open_mark: str, close_mark: str
) -> str:
    """The headline with its symbols as the content writes them, each of the query's (as the
    index folds them: a skin tone, a variation selector) marked whole where ts_headline could
    not."""
    # a folded grapheme's word, marked or not, then its word as written: the latter, marked so
    o, c = re.escape(open_mark), re.escape(close_mark)
    pair = f"({o})?{symbolchars.PREFIX}[0-9a-fx]+({c})?\x1f({symbolchars.EXACT}[0-9a-fx]+)"
    snip = re.sub(pair, lambda m: (m[1] or "") + m[3] + (m[2] or ""), snip)
    written: dict[str, str] = {}  # (a folded word whose word as written the headline cut off)
    for m in symbolchars.graphemes(content):
        written.setdefault(symbolchars.key(m.group()), m.group())
    snip = symbolchars.unspelled(snip, written).replace("\x1f", "")
    if not keys:
        return snip
    pieces = re.split(f"({re.escape(open_mark)}.*?{re.escape(close_mark)})", snip)
    out = []
    for p in pieces:
        if not p.startswith(open_mark):
            for m in reversed(symbolchars.graphemes(p)):
                if symbolchars.key(m.group()) in keys:
                    p = p[: m.start()] + open_mark + m.group() + close_mark + p[m.end() :]
        out.append(p)
    return "".join(out)


def _mark_cjk(snip: str, runs: Sequence[str], open_mark: str, close_mark: str) -> str:
    """Wrap the query's CJK runs in the markers where ts_headline could not: its parser reads
    a CJK run of the text as one word, which the query's bigrams never equal."""
    if not runs:
        return snip
    words = re.compile("|".join(map(re.escape, sorted(set(runs), key=len, reverse=True))))
    # outside the spans already marked
    pieces = re.split(f"({re.escape(open_mark)}.*?{re.escape(close_mark)})", snip)
    return "".join(
        p if p.startswith(open_mark) else words.sub(lambda m: open_mark + m[0] + close_mark, p)
        for p in pieces
    )


def _ellipsis(content: str, snip: str, open_mark: str, close_mark: str) -> str:
    """'…' before and after a headline that does not reach the content's start or end."""
    plain = snip.replace(open_mark, "").replace(close_mark, "").strip()
    text = content.strip()
    if not plain:
        return snip
    head = "" if text.startswith(plain[:20]) else "…"
    tail = "" if text.endswith(plain[-20:]) else "…"
    return head + snip.strip() + tail


def match_count(con: Connection, match: str, cap: int) -> int:
    """How many entries match, up to `cap`: counted up to EXACT_MAX, estimated above
    (doc_freqs: remembered, and shared with the keyword pool's IDF)."""
    return doc_freqs(con, [tsquery(match)], cap)[1][0]


def keyword_memories(
    con: Connection, match: str, namespace: str, limit: int
) -> list[tuple[int, str]]:
    q, qparams = tsquery(match)
    return [
        (int(i), str(c))
        for i, c, _ in con.execute(
            f"SELECT e.id, e.content, {rank_sql('e.fts', 'q.q')} AS score"
            f" FROM (SELECT {q} AS q) q, entries e WHERE e.fts @@ q.q"
            " AND e.kind = 'memory' AND e.namespace = ? ORDER BY score, e.id LIMIT ?",
            [*qparams, namespace, limit],
        )
    ]


def vocabulary(con: Connection) -> list[tuple[str, int]]:
    """Every lexeme of the index with the number of entries holding it (ts_stat: one scan of
    the tsvectors; fuzzy.py keeps the result and rebuilds it at most every refresh_interval)."""
    return [
        (str(w), int(n)) for w, n in con.execute("SELECT word, ndoc FROM ts_stat(?)", [_STAT_SQL])
    ]


_STAT_SQL = "SELECT fts FROM entries"


def stems(con: Connection, words: Sequence[str]) -> list[str | None]:
    """The index's stem of each word (None for a stop word), in one round trip."""
    if not words:
        return []
    rows = con.execute(
        "SELECT ts_lexize('english_stem', w) FROM unnest(?::text[]) WITH ORDINALITY AS t(w, n)"
        " ORDER BY n",
        [list(words)],
    ).fetchall()
    return [r[0][0] if r[0] else None for r in rows]


_TOKENS = re.compile(WORD)


class Stemmer:
    """What fuzzy.py needs of an FTS5 tokenizer, answered by the server's `english_stem`
    dictionary (the one the index uses), called as apsw's tokenizers are: utf-8 bytes in,
    stems out (with byte offsets when asked). Words are runs of letters and digits; a stop word
    stands for itself (the index has no stop words, so it never matches a term). `cjk`: a CJK
    run gives its overlapping bigrams (a single character itself), as the index's
    memoryd_cjk_bigrams does."""

    def __init__(self, con: Connection, cjk: bool = False) -> None:
        self.con = con
        self.cjk = cjk

    def __call__(
        self,
        data: bytes,
        flags: int = 0,
        locale: str | None = None,
        *,
        include_offsets: bool = True,
        include_colocated: bool = False,
    ) -> list[Any]:
        text = data.decode("utf-8", "replace")
        spans: list[tuple[int, int, str]] = []  # (start, end) in characters, token
        stem_idx: list[int] = []
        for m in _TOKENS.finditer(text):
            word = m.group(0)
            runs = cjk_runs(word) if self.cjk and _CJK_SPLIT.search(word) else []
            if not runs:
                stem_idx.append(len(spans))
                spans.append((m.start(), m.end(), word.lower().translate(SIGMA)))
                continue
            pos = m.start()
            for piece in re.split(f"({'|'.join(map(re.escape, runs))})", word):
                if not piece:
                    continue
                if piece in runs:
                    chars = units(piece)  # a Thai letter with its marks is one
                    grams = [a + b for a, b in itertools.pairwise(chars)] or chars
                    at = pos
                    for ch, g in zip(chars, grams, strict=False):
                        spans.append((at, at + len(g), g))
                        at += len(ch)
                else:
                    for w in _TOKENS.finditer(piece):
                        stem_idx.append(len(spans))
                        word = w.group(0).lower().translate(SIGMA)
                        spans.append((pos + w.start(), pos + w.end(), word))
                pos += len(piece)
        stemmed = stems(self.con, [spans[i][2] for i in stem_idx])
        for i, s in zip(stem_idx, stemmed, strict=True):
            if s:
                spans[i] = (spans[i][0], spans[i][1], s)
        if not include_offsets:
            return [t for _, _, t in spans]
        offsets = [0]
        for ch in text:
            offsets.append(offsets[-1] + len(ch.encode("utf-8")))
        return [(offsets[a], offsets[b], t) for a, b, t in spans]
