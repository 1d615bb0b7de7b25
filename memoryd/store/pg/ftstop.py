"""The keyword pool on PostgreSQL without scoring every match (issue 23.4; SQLite's counterpart:
store/ftsprune.py).

An any-word query of common words matches a fifth of a 100K-chunk index, and the pool's ranking
(store/pg/fts.py: per term, IDF x `ts_rank_cd`) reads and scores every one of those heap rows:
~100 ms for the 18,000 matches of two common words. Most of them cannot reach the pool.

For a single lexeme, `ts_rank_cd(WEIGHTS, fts, t, 1 | 32)` is r = x / (x + 1) with x = f / ln(1 +
len): f the sum of t's occurrences' column weights in the row, len the row's positions (cover
density: each occurrence is a cover of its own). A row holding only some of the query's terms
scores sum(idf_i * r_i) over the terms it holds. So (schema v5) `memoryd_fts_top(fts)` keeps the
lexemes of a row whose r reaches TOP_R, with a GIN expression index `entries_fts_top`, and the
pool is first ranked over the rows that either hold every term (`a && b`) or hold one of them
with r >= TOP_R (`memoryd_fts_top(fts) @@ (a || b)`). Every other matching row lacks a term and
has r < TOP_R for each term it holds: it scores less than TOP_R * (sum(idf) - min(idf)). When the
pool's last row scores more than that, no other row can enter the pool and the first ranking is
the whole ranking: the same rows in the same order (ties between rows of the first ranking are
broken by id as before; no row outside can tie). Otherwise every match is ranked as before.

Only for queries the bound covers: an OR of 2-4 terms, each one word (one lexeme: its tsquery is
checked in the statement). Phrases, prefixes, CJK runs, NOT and a single word rank every match.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from memoryd.store.protocol import Connection

# a lexeme is kept in memoryd_fts_top when its ts_rank_cd reaches this; measured on the latency
# bench's 100K chunks (BENCHMARKS.md, issue 23.4): 0.35 held the bound for every one of its 40
# two-word queries with 0.8 lexemes kept a row; 0.3 too, with 2.7 a row; 0.4 failed 3 of 40.
TOP_R = 0.3
# what the index compares: x = f / ln(1 + len) >= TOP_X, i.e. r >= TOP_R; a little below, so a
# float rounding never leaves out a lexeme whose ts_rank_cd (float4) reaches TOP_R
TOP_X = TOP_R / (1 - TOP_R) * 0.999
MAX_TERMS = 4
# Tried when the terms' document frequencies add up to MIN_MATCHES or more and to MATCHES_PER_ROW
# times the pool or more: with fewer, ranking every match is cheap, and the pool's last row
# scores too little to beat the bound (latency bench, 10K chunks, pool 200: of the 40 queries
# the first try answered 6 of the 7 with 3,000 matches or more and 5 of the 33 with fewer,
# each failure a statement wasted; at 100K every query has 10,000 or more and all 40 passed)
MIN_MATCHES = 2_000
MATCHES_PER_ROW = 15
MARGIN = 1e-9  # relative: the pool's last score must beat the bound by this much

_WORD_TERM = "phraseto_tsquery('english', ?)"
_ONE_WORD = re.compile(r"[^\W_]+")

# Schema v5 (schema.py). The weights are fts.WEIGHTS' ({D, C, B, A}: tags 0.4, headings 0.6,
# title 0.6, content 1.0): changing them means a migration that rebuilds the index. A lexeme
# without positions counts as weight D, as ts_rank_cd counts it.
SCHEMA = f"""
CREATE FUNCTION memoryd_fts_top(v tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT coalesce(array_to_tsvector(array_agg(lexeme) FILTER (WHERE f >= {TOP_X!r} * l)),
                    ''::tsvector)
    FROM (SELECT lexeme,
                 -- 1.0 A + 0.6 B + 0.6 C + 0.4 D, D = n - A - B - C
                 CASE WHEN n = 0 THEN 0.4::float8
                      ELSE 0.4::float8 * n + 0.6::float8 * a + 0.2::float8 * (b + c) END AS f,
                 ln(1 + sum(greatest(n, 1)) OVER ()) AS l
          FROM (SELECT lexeme, cardinality(weights) AS n,
                       cardinality(array_positions(weights, 'A')) AS a,
                       cardinality(array_positions(weights, 'B')) AS b,
                       cardinality(array_positions(weights, 'C')) AS c
                FROM unnest(v)) u) s
$fn$;
CREATE INDEX entries_fts_top ON all_entries USING gin(memoryd_fts_top(fts));
"""


def words(match: str, leaves: Sequence[tuple[str, list[Any]]], q: str) -> bool:
    """Whether the expression (its tsquery SQL `q`, its positive terms `leaves`) is an OR of
    2-MAX_TERMS single words, the queries the bound covers."""
    if not 2 <= len(leaves) <= MAX_TERMS or "NOT" in match:
        return False
    if any(sql != _WORD_TERM or len(ps) != 1 for sql, ps in leaves):
        return False
    if any(not isinstance(p, str) or _ONE_WORD.fullmatch(p) is None for _, (p,) in leaves):
        return False
    return q == "(" + " || ".join(sql for sql, _ in leaves) + ")"


def pool(
    con: Connection,
    leaves: Sequence[tuple[str, list[Any]]],
    rank: tuple[str, list[Any]],
    idfs: Sequence[float],
    dfs: Sequence[int],
    filtered: tuple[str, Sequence[Any]],
    size: int,
) -> list[tuple[int, float, int | None]] | None:
    """The best `size` matches ranked from the rows the bound cannot rule out, when that is
    provably the whole ranking; None when every match must be ranked. `leaves`: the query's
    single-word terms (`words`); `rank`: the ranking expression over `e.fts` and its parameters
    (fts.weighted_rank), `idfs` and `dfs` its terms' IDF and document frequencies; `filtered`:
    the filter (an expression over e and d) and its parameters."""
    if sum(dfs) < max(MIN_MATCHES, MATCHES_PER_ROW * size):
        return None
    any_sql = " || ".join(sql for sql, _ in leaves)
    all_sql = " && ".join(sql for sql, _ in leaves)
    one_each = " AND ".join(f"numnode({sql}) = 1" for sql, _ in leaves)
    ps = [p for _, leaf in leaves for p in leaf]
    where, params = filtered
    rank_sql, rank_params = rank
    rows = con.execute(
        f"SELECT e.id, {rank_sql} AS score, e.document_id"
        f" FROM (SELECT ({any_sql}) AS q, ({all_sql}) AS qa, ({one_each}) AS ok) q,"
        " entries e LEFT JOIN documents d ON d.id = e.document_id"
        " WHERE q.ok AND (e.fts @@ q.qa OR memoryd_fts_top(e.fts) @@ q.q) AND "
        f"{where} ORDER BY score, e.id LIMIT ?",
        [*rank_params, *ps, *ps, *ps, *params, size],
    ).fetchall()
    if len(rows) < size:
        return None
    bound = TOP_R * (sum(idfs) - min(idfs))
    if -float(rows[-1][1]) <= bound * (1 + MARGIN):
        return None
    return [(int(i), float(s), None if doc is None else int(doc)) for i, s, doc in rows]
