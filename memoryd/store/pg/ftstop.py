"""The keyword pool on PostgreSQL without scoring every match (issue 23.4; SQLite's counterpart:
store/ftsprune.py).

An any-word query of common words matches a fifth of a 100K-chunk index, and the pool's ranking
(store/pg/fts.py: per term, IDF x `ts_rank_cd`) reads and scores every one of those heap rows:
~100 ms for the 18,000 matches of two common words. Most of them cannot reach the pool.

For a single lexeme, `ts_rank_cd(WEIGHTS, fts, t, 1 | 32)` is r = x / (x + 1) with x = f / ln(1 +
len): f the sum of t's occurrences' column weights in the row, len the row's positions (cover
density: each occurrence is a cover of its own). A row holding only some of the query's terms
scores sum(idf_i * r_i) over the terms it holds. So (schema v5) `memoryd_fts_top(fts, t)` keeps
the lexemes of a row whose r reaches t, with a GIN expression index for each tier t of TIERS
(`entries_fts_top35`, `entries_fts_top25`), and the pool is first ranked over the rows that
either hold every term (`a && b`) or hold one of them with r >= t (`memoryd_fts_top(fts, t) @@
(a || b)`). Every other matching row lacks a term and has r < t for each term it holds: it
scores less than t * (sum(idf) - min(idf)). When the pool's last row scores more than that, no
other row can enter the pool and the first ranking is the whole ranking: the same rows in the
same order (ties between rows of the first ranking are broken by id as before; no row outside
can tie). Otherwise every match is ranked as before. The higher tier keeps fewer rows to
score, and holds when the pool is a small share of the matches; the lower one holds where the
pool is a larger share (`tier`).

Only for queries the bound covers: an OR of 2-4 terms, each one word (one lexeme: its tsquery is
checked in the statement). Phrases, prefixes, CJK runs, NOT and a single word rank every match.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from memoryd.store.protocol import Connection
from memoryd.store.tokenizer import WORD

# More columns for the ranked rows' select (`, e.x ...`), and what turns that select and its
# parameters into the statement run (store/pg/pool.py: a select over it)
Shape = tuple[str, Callable[[str, list[Any]], tuple[str, list[Any]]]]

# The tiers: a lexeme is kept in memoryd_fts_top(fts, t) when its ts_rank_cd reaches t. Measured
# on the latency bench's 40 two-word queries (BENCHMARKS.md, issue 23.4), the rows a pool of 200
# scores and how often the bound held: at 100K chunks (~19,000 matches a query) 0.35 held for
# 40 (1,500 rows scored, p50), 0.3 for 40 (2,500), 0.25 for 40 (3,600); at 10K (~2,000
# matches) 0.35 for 2, 0.3 for 12, 0.25 for 40 (370 rows), 0.2 for 40 (1,100).
TIERS = (0.35, 0.25)
HIGH_TIER_MATCHES = 50  # matches a pooled row from which the higher tier is tried first
MAX_TERMS = 4
# Tried when the terms' document frequencies add up to MIN_MATCHES or more and to MATCHES_PER_ROW
# times the pool or more: with fewer, ranking every match is cheap (a few hundred rows).
MIN_MATCHES = 1_000
MATCHES_PER_ROW = 5
MARGIN = 1e-9  # relative: the pool's last score must beat the bound by this much

_WORD_TERM = "phraseto_tsquery('english', ?)"
_ONE_WORD = re.compile(WORD)


def top_sql(column: str, tier: float) -> str:
    """The tier's indexed expression (the same text as its index's, so the planner uses it)."""
    return f"memoryd_fts_top({column}, {tier!r})"


# Schema v5 and v6 (schema.py; idempotent: v6 runs it again where v5 made the first version's
# one index, at r >= 0.3, and drops that). The weights are fts.WEIGHTS' ({D, C, B, A}: tags
# 0.4, headings 0.6, title 0.6, content 1.0): changing them means a migration that rebuilds the
# indexes. A lexeme without positions counts as weight D, as ts_rank_cd counts it.
SCHEMA = """
CREATE OR REPLACE FUNCTION memoryd_fts_top(v tsvector, t float8) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT coalesce(array_to_tsvector(array_agg(lexeme) FILTER (WHERE f >= x * l)),
                    ''::tsvector)
    FROM (SELECT lexeme,
                 -- 1.0 A + 0.6 B + 0.6 C + 0.4 D, D = n - A - B - C
                 CASE WHEN n = 0 THEN 0.4::float8
                      ELSE 0.4::float8 * n + 0.6::float8 * a + 0.2::float8 * (b + c) END AS f,
                 ln(1 + sum(greatest(n, 1)) OVER ()) AS l,
                 t / (1 - t) * 0.999 AS x
          FROM (SELECT lexeme, cardinality(weights) AS n,
                       cardinality(array_positions(weights, 'A')) AS a,
                       cardinality(array_positions(weights, 'B')) AS b,
                       cardinality(array_positions(weights, 'C')) AS c
                FROM unnest(v)) u) s
$fn$;
""" + "".join(
    f"CREATE INDEX IF NOT EXISTS entries_fts_top{round(t * 100)} ON all_entries"
    f" USING gin({top_sql('fts', t)});\n"
    for t in TIERS
)


def tiers(matches: int, size: int) -> tuple[float, ...]:
    """The tiers to try, in order, for a pool of `size` from `matches` matches: none when
    ranking them all is cheap; the higher first when the pool is a small share of them."""
    if matches < max(MIN_MATCHES, MATCHES_PER_ROW * size):
        return ()
    return TIERS if matches >= HIGH_TIER_MATCHES * size else TIERS[1:]


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
    shape: Shape | None = None,
) -> list[tuple[Any, ...]] | None:
    """The best `size` matches ranked from the rows the bound cannot rule out, when that is
    provably the whole ranking; None when every match must be ranked. `leaves`: the query's
    single-word terms (`words`); `rank`: the ranking expression over `e.fts` and its parameters
    (fts.weighted_rank), `idfs` and `dfs` its terms' IDF and document frequencies; `filtered`:
    the filter (an expression over e and d) and its parameters; `shape`: more columns of the
    ranked rows (`, e.x ...`) and the statement around the ranking that reads the rows
    (store/pg/pool.py). Rows: (id, score, document id, *what `shape` adds)."""
    for tier in tiers(sum(dfs), size):
        found = _first(con, leaves, rank, filtered, size, tier, shape)
        bound = tier * (sum(idfs) - min(idfs))
        if len(found) >= size and -float(found[-1][1]) > bound * (1 + MARGIN):
            return found
    return None


def _first(
    con: Connection,
    leaves: Sequence[tuple[str, list[Any]]],
    rank: tuple[str, list[Any]],
    filtered: tuple[str, Sequence[Any]],
    size: int,
    tier: float,
    shape: Shape | None,
) -> list[tuple[Any, ...]]:
    """The best `size` of the rows holding every term or one with r >= tier; none when a term
    is not one lexeme (checked in the statement: `ok`)."""
    any_sql = " || ".join(sql for sql, _ in leaves)
    all_sql = " && ".join(sql for sql, _ in leaves)
    one_each = " AND ".join(f"numnode({sql}) = 1" for sql, _ in leaves)
    ps = [p for _, leaf in leaves for p in leaf]
    where, params = filtered
    rank_sql, rank_params = rank
    sql, args = (
        f"SELECT e.id, {rank_sql} AS score, e.document_id{shape[0] if shape else ''}"
        f" FROM (SELECT ({any_sql}) AS q, ({all_sql}) AS qa, ({one_each}) AS ok) q,"
        " entries e LEFT JOIN documents d ON d.id = e.document_id"
        f" WHERE q.ok AND (e.fts @@ q.qa OR {top_sql('e.fts', tier)} @@ q.q) AND {where}"
        " ORDER BY score, e.id LIMIT ?",
        [*rank_params, *ps, *ps, *ps, *params, size],
    )
    if shape is not None:
        sql, args = shape[1](sql, args)
    return [tuple(r) for r in con.execute(sql, args).fetchall()]
