"""Whole-note keyword evidence on PostgreSQL (issue 19.2; SQLite: store/notetext.py): one row a
note in `notes_fts`, its chunks' words together in one tsvector with a GIN index, so a hybrid
answer weighs a note found by keywords by BM25 over the whole note, as on SQLite.

The row (schema v4, `SCHEMA`):
- `fts`: the note's chunks' tsvectors in order (store/pg/schema.py fills each from its text),
  content (A) and heading paths (C) of every chunk, and the note's tags (D) once; not the title
  (B), which FTS5's `notes_fts` does not hold either. The same words as the chunks', so nothing
  is parsed twice.
- `length`: the note's token count (its positions), BM25's D.
- `notes_stats` (notes and tokens per workspace, BM25's N and avgdl) is kept by triggers on
  `notes_fts`, so a search reads them with one key lookup.
The indexer writes a note's row after its chunks (`refresh`, through notetext.refresh); deleting
a note's chunks (a new version, expiry) deletes it (a trigger), deleting its document cascades.

The score (`note_bm25`) is FTS5's bm25() (k1 1.2, b 0.75, IDF log((N - df + 0.5)/(df + 0.5))
over notes), negated: per positive term of the query, its frequency in the note is
`ts_rank_cd(WEIGHTS, fts, term, 0)`, which for a term is the sum of its occurrences' column
weights (content 1.0, headings 0.6, tags 0.4, as FTS5's bm25(notes_fts, 1.0, 0.6, 0.4); a
phrase's occurrence counts the harmonic mean of its words' weights); each term's document
frequency counts notes (the planner's estimate for a term in more than 1% of them, else
counted; remembered while N holds, as the chunks' are). Not exact where PostgreSQL's tsvector
limits a long note: a word's positions stop at 256 and positions past 16,383 fold into one, so
a word's frequency in a note of more than ~16,000 words is undercounted (BM25 saturates long
before).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from memoryd.store.pg import fts
from memoryd.store.protocol import Connection, one

K1 = 1.2  # FTS5's bm25() constants
B = 0.75
# ts_rank_cd's weights {D, C, B, A}: tags, headings, (no title), content, as notetext.BM25
WEIGHTS = "{0.4, 0.6, 0.0, 1.0}"

# the note's row from its chunks (the `entries` view's or the tables' names and a condition)
_ROW = """
SELECT d.id, d.workspace, v.fts,
       (SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(v.fts) u)
FROM {documents} d CROSS JOIN LATERAL (
    SELECT memoryd_tsvector_agg(ts_filter(e.fts, '{{a,c}}') ORDER BY e.seq)
           || setweight(to_tsvector('english', memoryd_fts_text(max(e.tags))), 'D') AS fts
    FROM {entries} e WHERE e.document_id = d.id HAVING count(*) > 0
) v
WHERE {where}
"""
_UPSERT = (
    "INSERT INTO notes_fts(document_id, workspace, fts, length) {rows}"
    " ON CONFLICT (document_id) DO UPDATE SET fts = excluded.fts, length = excluded.length"
)

SCHEMA = """
CREATE AGGREGATE memoryd_tsvector_agg(tsvector) (
    SFUNC = tsvector_concat, STYPE = tsvector, INITCOND = ''
);
CREATE TABLE notes_fts(
    document_id BIGINT PRIMARY KEY REFERENCES all_documents(id) ON DELETE CASCADE,
    workspace TEXT NOT NULL,
    fts TSVECTOR NOT NULL,
    length BIGINT NOT NULL
);
CREATE INDEX notes_fts_fts ON notes_fts USING gin(fts);
CREATE INDEX notes_fts_workspace ON notes_fts(workspace);
CREATE TABLE notes_stats(
    workspace TEXT PRIMARY KEY,
    notes BIGINT NOT NULL,
    tokens BIGINT NOT NULL
);

-- A note's chunks deleted (replaced by a new version, expired): its row goes with them; the
-- indexer writes it again after writing the new chunks.
CREATE FUNCTION memoryd_note_chunks_gone() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    DELETE FROM notes_fts WHERE document_id IN
        (SELECT DISTINCT document_id FROM gone WHERE document_id IS NOT NULL);
    RETURN NULL;
END
$fn$;
CREATE TRIGGER entries_note_gone AFTER DELETE ON all_entries
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION memoryd_note_chunks_gone();

-- N and the token total per workspace (BM25's N and avgdl), one statement at a time.
CREATE FUNCTION memoryd_notes_counted() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO notes_stats(workspace, notes, tokens)
            SELECT workspace, count(*), sum(length) FROM added GROUP BY workspace
            ON CONFLICT (workspace) DO UPDATE SET notes = notes_stats.notes + excluded.notes,
                tokens = notes_stats.tokens + excluded.tokens;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE notes_stats s SET notes = s.notes - g.n, tokens = s.tokens - g.t
            FROM (SELECT workspace, count(*) AS n, sum(length) AS t FROM gone
                  GROUP BY workspace) g
            WHERE s.workspace = g.workspace;
    END IF;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER notes_fts_added AFTER INSERT ON notes_fts
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT
    EXECUTE FUNCTION memoryd_notes_counted();
CREATE TRIGGER notes_fts_changed AFTER UPDATE ON notes_fts
    REFERENCING OLD TABLE AS gone NEW TABLE AS added FOR EACH STATEMENT
    EXECUTE FUNCTION memoryd_notes_counted();
CREATE TRIGGER notes_fts_gone AFTER DELETE ON notes_fts
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION memoryd_notes_counted();
"""


def fill(con: Connection, workspace: str | None = None) -> None:
    """The rows of every note (schema v4), or of one workspace's (a copied store: pgmigrate,
    the latency bench's load), from the chunks as stored."""
    where, params = ("d.workspace = ?", [workspace]) if workspace is not None else ("true", [])
    rows = _ROW.format(documents="all_documents", entries="all_entries", where=where)
    con.execute(_UPSERT.format(rows=rows), params)


def refresh(con: Connection, path: str) -> None:
    """The note's row, written again from its chunks as stored (the indexer, after writing
    them); none for a note without chunks."""
    rows = _ROW.format(documents="documents", entries="entries", where="d.path = ?")
    con.execute(_UPSERT.format(rows=rows), [path])


_IN_WORKSPACE = "workspace = current_setting('memoryd.workspace')"


def stats(con: Connection) -> tuple[int, float]:
    """This workspace's notes and their mean length in tokens (BM25's N and avgdl)."""
    row = con.execute(f"SELECT notes, tokens FROM notes_stats WHERE {_IN_WORKSPACE}").fetchone()
    if not row or not row[0]:
        return 0, 0.0
    return int(row[0]), max(float(row[1]) / int(row[0]), 1.0)


def common(n: int) -> int:
    """How many notes make a term common enough to take the planner's estimate: 1% of N, at
    least 100 (1,000 of 100,000 entries for the chunks). The planner's statistics keep the
    frequencies of the most common lexemes: exact for every word of the latency bench's corpus
    at 23,168 notes; a term it does not keep is estimated below its least common one's."""
    return max(100, n // 100)


def doc_freqs(con: Connection, n: int, leaves: list[tuple[str, list[Any]]]) -> list[int]:
    """How many of this workspace's notes hold each term, remembered in the store's memo while
    N holds, for at most fts.DF_TTL_S (as the chunks' frequencies: fts.doc_freqs). The
    planner's estimate first (no row read): a common term (`common`) takes it; a rarer one is
    counted, up to fts.EXACT_MAX (and past that, the estimate again). Counting visits every
    matching note's row, tsvector and all: counting 1,000 notes cost ~40 ms a query at 23,000
    notes, where an estimate costs one round trip."""
    memo: dict[Any, Any] = getattr(con, "memo", {})
    now = time.monotonic()
    keys = [("note_df", sql, tuple(ps)) for sql, ps in leaves]
    fresh = {
        k: memo[k][0]
        for k in keys
        if k in memo and memo[k][1] == n and now - memo[k][2] < fts.DF_TTL_S
    }
    missing = [(k, leaf) for k, leaf in zip(keys, leaves, strict=True) if k not in fresh]
    estimated = {k: fts.estimate(con, sql, ps, _NOTES) for k, (sql, ps) in missing}
    rare = [(k, leaf) for k, leaf in missing if estimated[k] < common(n)]
    for k, _ in missing:
        fresh[k] = min(n, estimated[k])
    if rare:
        counts = ", ".join(
            f"(SELECT count(*) FROM (SELECT 1 FROM {_NOTES} @@ {sql} LIMIT ?) t)"
            for _, (sql, _) in rare
        )
        cap = min(n, fts.EXACT_MAX)
        params = [p for _, (_, ps) in rare for p in [*ps, cap]]
        row = one(con.execute(f"SELECT {counts}", params))
        for (k, _), df in zip(rare, row, strict=True):
            fresh[k] = int(df) if int(df) < cap else max(int(df), fresh[k])
    if len(memo) > fts.MEMO_MAX:
        memo.clear()
    for k, _ in missing:
        memo[k] = (fresh[k], n, now)
    return [fresh[k] for k in keys]


_NOTES = f"notes_fts n WHERE n.{_IN_WORKSPACE} AND n.fts"  # what a count reads


def _score(con: Connection, match: str) -> tuple[str, list[Any]] | None:
    """The BM25 expression over `n` (lower is better) and its parameters; None when the query
    has no positive term or the workspace no note."""
    leaves = fts.terms(match)
    n, avgdl = stats(con)
    if not leaves or not n:
        return None
    dfs = doc_freqs(con, n, leaves)
    # f_i: the term's weighted frequency in the note; k: k1 (1 - b + b D / avgdl)
    freqs = ", ".join(
        f"ts_rank_cd('{WEIGHTS}'::real[], n.fts, {sql}, 0) AS f{i}"
        for i, (sql, _) in enumerate(leaves)
    )
    parts = " + ".join(
        f"?::float8 * f.f{i} * {K1 + 1} / (f.f{i} + k.k)" for i in range(len(leaves))
    )
    sql = (
        f"-({parts}) FROM notes_fts n"
        f" CROSS JOIN LATERAL (SELECT {K1} * (1 - {B} + {B} * n.length::float8 / ?) AS k) k"
        # OFFSET 0: evaluated once a row (a subquery the planner pulls up is evaluated where
        # each f_i appears: twice)
        f" CROSS JOIN LATERAL (SELECT {freqs} OFFSET 0) f"
    )
    params = [
        *(fts.idf(max(n, df), df) for df in dfs),
        avgdl,
        *(p for _, ps in leaves for p in ps),
    ]
    return sql, params


def note_bm25(
    con: Connection, match: str, doc_ids: Sequence[int], everywhere: bool = False
) -> tuple[dict[int, float], float | None]:
    """notetext.note_bm25 on PostgreSQL: (each given note's whole-note BM25 where the note
    matches, the norm), lower is better; the norm is the best of those or, with `everywhere`,
    of every note of the workspace that matches."""
    if not doc_ids:
        return {}, None
    score = _score(con, match)
    if score is None:
        return {}, None
    sql, params = score
    q, qparams = fts.tsquery(match)
    scores = {
        int(i): float(s)
        for i, s in con.execute(
            f"SELECT n.document_id, {sql} WHERE n.document_id = ANY(?) AND n.fts @@ ({q})",
            [*params, list(doc_ids), *qparams],
        )
    }
    if not everywhere:
        return scores, min(scores.values(), default=None)
    return scores, best_note(con, match)


def best_note(con: Connection, match: str) -> float | None:
    """The best (lowest) whole-note BM25 of every note of the workspace that matches;
    remembered in the store's memo while N and the token total hold, for at most
    fts.DF_TTL_S (a filtered search asks it of every query; a write that adds, removes or
    changes a note moves the total)."""
    memo: dict[Any, Any] = getattr(con, "memo", {})
    n, avgdl = stats(con)
    key = ("note_best", match)
    now = time.monotonic()
    if key in memo and memo[key][1] == (n, avgdl) and now - memo[key][2] < fts.DF_TTL_S:
        return memo[key][0]
    score = _score(con, match)
    best = None
    if score is not None:
        sql, params = score
        q, qparams = fts.tsquery(match)
        row = con.execute(
            f"SELECT min(s) FROM (SELECT {sql} WHERE n.{_IN_WORKSPACE} AND n.fts @@ ({q})) t(s)",
            [*params, *qparams],
        ).fetchone()
        best = float(row[0]) if row and row[0] is not None else None
    memo[key] = (best, (n, avgdl), now)
    return best
