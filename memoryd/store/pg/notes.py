"""Whole-note keyword evidence on PostgreSQL (issue 19.2; SQLite: store/notetext.py): one row a
note in `notes_fts`, its chunks' words together in one tsvector with a GIN index, so a hybrid
answer weighs a note found by keywords by BM25 over the whole note, as on SQLite.

The row (schema v4, `SCHEMA`):
- `fts`: the note's chunks' tsvectors in order (store/pg/schema.py fills each from its text),
  content (A) and heading paths (C) of every chunk, and the note's tags with its front-matter
  values (D, tables.keyword_tags) once; not the title
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
frequency counts notes (memoryd_note_df: the planner's estimate for a term in more than 1% of
them, else counted). One statement a search. Not exact where PostgreSQL's tsvector
limits a long note: a word's positions stop at 256 and positions past 16,383 fold into one, so
a word's frequency in a note of more than ~16,000 words is undercounted (BM25 saturates long
before).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from memoryd.store import tables
from memoryd.store.pg import fts
from memoryd.store.protocol import Connection

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
           || setweight(to_tsvector('english', memoryd_fts_text(max({tags}))), 'D') AS fts
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

-- How many of this workspace's notes hold a term (BM25's df): the planner's estimate (no row
-- read) for a term in more than 1% of them, where its statistics keep the common lexemes'
-- frequencies (exact for every word of the latency bench's corpus at 23,168 notes); else
-- counted, up to 1,000 (and past that, the estimate again). Counting reads each matching
-- note's tsvector: 1,000 of them cost ~40 ms at 23,000 notes. VOLATILE: EXPLAIN.
CREATE FUNCTION memoryd_note_df(q tsquery, n bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    ws TEXT := current_setting('memoryd.workspace');
    cap BIGINT := least(n, 1000);
    plan JSON;
    est BIGINT;
    counted BIGINT;
BEGIN
    IF n > 1000 THEN
        EXECUTE 'EXPLAIN (FORMAT JSON) SELECT 1 FROM notes_fts WHERE workspace = $1 AND fts @@ $2'
            INTO plan USING ws, q;
        est := (plan->0->'Plan'->>'Plan Rows')::bigint;
        IF est >= greatest(100, n / 100) THEN
            RETURN least(n, est);
        END IF;
    END IF;
    SELECT count(*) INTO counted
        FROM (SELECT 1 FROM notes_fts WHERE workspace = ws AND fts @@ q LIMIT cap) t;
    IF counted >= cap AND est IS NOT NULL THEN
        RETURN greatest(counted, least(n, est));
    END IF;
    RETURN counted;
END
$fn$;

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


def _row(documents: str, entries: str, where: str, props: bool = True) -> str:
    """_ROW: the note's tags with its front-matter values (tables.keyword_tags), or (`props`
    False: a schema before v14) its tags alone."""
    tags = tables.keyword_tags("e") if props else "e.tags"
    return _ROW.format(documents=documents, entries=entries, where=where, tags=tags)


def fill(
    con: Connection,
    workspace: str | None = None,
    ids: Sequence[int] | None = None,
    props: bool = True,
) -> None:
    """The rows of every note (schema v4), of one workspace's (a copied store: pgmigrate, the
    latency bench's load) or of the notes `ids` (schema v9), from the chunks as stored."""
    where, params = "true", list[Any]()
    if workspace is not None:
        where, params = ("d.workspace = ?", [workspace])
    elif ids is not None:
        where, params = ("d.id = ANY(?)", [list(ids)])
    rows = _row("all_documents", "all_entries", where, props)
    con.execute(_UPSERT.format(rows=rows), params)


def refresh(con: Connection, path: str) -> None:
    """The note's row, written again from its chunks as stored (the indexer, after writing
    them); none for a note without chunks."""
    rows = _row("documents", "entries", "d.path = ?")
    con.execute(_UPSERT.format(rows=rows), [path])


_IN_WORKSPACE = "workspace = current_setting('memoryd.workspace')"


def stats(con: Connection) -> tuple[int, float]:
    """This workspace's notes and their mean length in tokens (BM25's N and avgdl)."""
    row = con.execute(f"SELECT notes, tokens FROM notes_stats WHERE {_IN_WORKSPACE}").fetchone()
    if not row or not row[0]:
        return 0, 0.0
    return int(row[0]), max(float(row[1]) / int(row[0]), 1.0)


def _scored(
    match: str, where: str, params: Sequence[Any], by_id: bool = False
) -> tuple[str, list[Any]] | None:
    """One statement: (document_id, whole-note BM25) of the notes of `n` that pass `where`
    and match; None when the query has no positive term. N, avgdl and each term's note
    frequency (memoryd_note_df) are read once, in the statement, so a search makes one round
    trip for its whole notes. `by_id`: `where` names the notes by id (a search's ~200), which
    are then looked up by id and tested: the match is not offered to the GIN index, whose
    scan of two common words (12,000 of 23,000 notes) cost more than the lookups (a planner
    that saw the notes' tsvectors in their rows, schema v7, chose it: 7 of 25 ms)."""
    leaves = fts.terms(match)
    if not leaves:
        return None
    dfs = ", ".join(f"memoryd_note_df({sql}, notes) AS d{i}" for i, (sql, _) in enumerate(leaves))
    # f_i: the term's weighted frequency in the note; k: k1 (1 - b + b D / avgdl)
    freqs = ", ".join(
        f"ts_rank_cd('{WEIGHTS}'::real[], n.fts, {sql}, 0) AS f{i}"
        for i, (sql, _) in enumerate(leaves)
    )
    # BM25's IDF as FTS5 computes it (fts.idf): never below 1e-6
    parts = " + ".join(
        f"greatest(1e-6, ln((s.n - s.d{i} + 0.5) / (s.d{i} + 0.5)))"
        f" * f.f{i} * {K1 + 1} / (f.f{i} + k.k)"
        for i in range(len(leaves))
    )
    q, qparams = fts.tsquery(match)
    sql = (
        # MATERIALIZED: N, avgdl and the frequencies once, not once a note
        f"WITH s AS MATERIALIZED (SELECT notes AS n,"
        f" greatest(tokens::float8 / notes, 1) AS avgdl, {dfs}"
        f" FROM notes_stats WHERE {_IN_WORKSPACE} AND notes > 0)"
        f" SELECT n.document_id, -({parts}) AS score FROM s CROSS JOIN notes_fts n"
        f" CROSS JOIN LATERAL (SELECT {K1} * (1 - {B} + {B} * n.length::float8 / s.avgdl) AS k) k"
        # OFFSET 0: evaluated once a row (a subquery the planner pulls up is evaluated where
        # each f_i appears: twice)
        f" CROSS JOIN LATERAL (SELECT {freqs} OFFSET 0) f"
        f" WHERE {where} AND {f'(n.fts @@ ({q})) IS TRUE' if by_id else f'n.fts @@ ({q})'}"
    )
    terms = [p for _, ps in leaves for p in ps]
    return sql, [*terms, *terms, *params, *qparams]  # in the order of the ?s


def note_bm25(
    con: Connection, match: str, doc_ids: Sequence[int], everywhere: bool = False
) -> tuple[dict[int, float], float | None]:
    """notetext.note_bm25 on PostgreSQL: (each given note's whole-note BM25 where the note
    matches, the norm), lower is better; the norm is the best of those or, with `everywhere`,
    of every note of the workspace that matches."""
    if not doc_ids:
        return {}, None
    scored = _scored(match, "n.document_id = ANY(?)", [list(doc_ids)], by_id=True)
    if scored is None:
        return {}, None
    scores = {int(i): float(s) for i, s in con.execute(*scored)}
    if not everywhere:
        return scores, min(scores.values(), default=None)
    return scores, best_note(con, match)


def best_note(con: Connection, match: str) -> float | None:
    """The best (lowest) whole-note BM25 of every note of the workspace that matches;
    remembered in the store's memo while N and the token total hold, for at most
    fts.DF_TTL_S (a filtered search asks it of every query; a write that adds or removes a
    note, or changes a note's length, moves them; an edit that keeps every length is seen
    within the 60 s). It ranks every note that matches: a query of common
    words costs about what the keyword pool does (BENCHMARKS.md, "PostgreSQL: a note ranked as
    a whole")."""
    memo: dict[Any, Any] = getattr(con, "memo", {})
    version = stats(con)
    key = ("note_best", match)
    now = time.monotonic()
    if key in memo and memo[key][1] == version and now - memo[key][2] < fts.DF_TTL_S:
        return memo[key][0]
    best = None
    scored = _scored(match, f"n.{_IN_WORKSPACE}", [])
    if scored is not None and version[0]:
        sql, params = scored
        row = con.execute(f"SELECT min(score) FROM ({sql}) t", params).fetchone()
        best = float(row[0]) if row and row[0] is not None else None
    if len(memo) > fts.MEMO_MAX:
        memo.clear()
    memo[key] = (best, version, now)
    return best
