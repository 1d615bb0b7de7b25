"""Whole-note keyword evidence (issue 19.2): one FTS5 row per note, its chunks' text together,
so a hybrid search can weigh a note by BM25 over the whole note (its words' frequency over the
note and the note's length), as a reader who opens the note sees it, beside the BM25 of its best
chunk. A short chunk that repeats a question's words ranks high by itself; a note about them
throughout ranks high as a whole.

`notes_fts` (SQLite, migrations m008 and m009) is contentless (`contentless_delete`): the text
stays in `entries`; the indexer writes a note's row again after its chunks (`refresh`), and
triggers delete it with its document or with its last chunk (an expired note). PostgreSQL
(schema v4) keeps one tsvector a note in its own `notes_fts` and computes the same BM25 from it
(store/pg/notes.py): `refresh`, `note_bm25` and `best_note` answer on either backend, with the
same meaning.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memoryd.store import tables
from memoryd.store.connmemo import PerVersion, data_version
from memoryd.store.dialect import is_postgres
from memoryd.store.protocol import Connection
from memoryd.store.tokenizer import OPTION

# the same column weights as the chunks' BM25 (ftsprune.BM25): content, headings, tags
BM25 = "bm25(notes_fts, 1.0, 0.6, 0.4)"

TABLE = f"""
CREATE VIRTUAL TABLE notes_fts USING fts5(
    content, heading_path, tags,
    content = '', contentless_delete = 1,
    {OPTION}
);
"""
SCHEMA = f"""{TABLE}
CREATE TRIGGER documents_notes_ad AFTER DELETE ON documents BEGIN
    DELETE FROM notes_fts WHERE rowid = old.id;
END;
"""


# A note whose last chunk goes (front matter `expires`: the expiry job deletes its chunks and
# keeps its document) loses its row too, so no gone text counts in N, the mean length or the
# best of every note (migration m009; PostgreSQL: a statement trigger, store/pg/notes.py).
LAST_CHUNK_TRIGGER = """
CREATE TRIGGER entries_notes_ad AFTER DELETE ON entries
WHEN old.document_id IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM entries WHERE document_id = old.document_id)
BEGIN
    DELETE FROM notes_fts WHERE rowid = old.document_id;
END;
"""

# the note's tags and front-matter values (tables.keyword_tags), as each of its chunks' rows
_FILL = (
    "INSERT INTO notes_fts(rowid, content, heading_path, tags)"
    " SELECT document_id, group_concat(content, char(10)), group_concat(heading_path, ' '),"
    " max(tags) FROM (SELECT document_id, content, heading_path, {tags} AS tags"
    " FROM entries WHERE {where} ORDER BY document_id, seq) GROUP BY document_id"
)


def _fill_sql(where: str, props: bool = True) -> str:
    tags = tables.keyword_tags("entries") if props else "tags"
    return _FILL.format(where=where, tags=tags)


def fill(con: Any, props: bool = True) -> None:
    """One row per note from its chunks (the migration; `refresh` keeps each one after);
    without `props` for a store that has no such column yet (m008)."""
    con.execute(_fill_sql("document_id IS NOT NULL", props))


def refresh(con: Connection, path: str) -> None:
    """The note's row, written again from its chunks as stored (the indexer, after writing
    them): their texts, their heading paths, the note's tags."""
    if is_postgres(con):
        from memoryd.store.pg import notes

        notes.refresh(con, path)
        return
    doc = "(SELECT id FROM documents WHERE path = ?)"
    con.execute(f"DELETE FROM notes_fts WHERE rowid = {doc}", (path,))
    con.execute(_fill_sql(f"document_id = {doc}"), (path,))


# `rowid + 0`: checked on each match; a constraint would query once per id
_NOTE_BM25 = (
    f"SELECT rowid, {BM25} FROM notes_fts WHERE notes_fts MATCH ?"
    " AND (rowid + 0) IN (SELECT value FROM json_each(?))"
)
# the same rows as two JSON arrays (bm25() is not allowed inside an aggregate: materialised)
_NOTE_BM25_JSON = (
    f"WITH m(id, score) AS MATERIALIZED ({_NOTE_BM25})"
    " SELECT json_group_array(id), json_group_array(score) FROM m"
)
_EXACT: list[bool] = []


def exact_json_floats(con: Connection) -> bool:
    """Whether this SQLite writes a REAL into JSON with every digit it needs to be read back
    the same (17 significant digits: SQLite 3.54 does), checked once a process."""
    if not _EXACT:
        row = con.execute("SELECT json_array(0.1 + 0.2, -2.0 / 3, 1e-300 / 3)").fetchone()
        _EXACT.append(row is not None and json.loads(row[0]) == [0.1 + 0.2, -2.0 / 3, 1e-300 / 3])
    return _EXACT[0]


def note_bm25(
    con: Connection, match: str, doc_ids: Sequence[int], everywhere: bool = False
) -> tuple[dict[int, float], float | None]:
    """(BM25 over the whole note of each of `doc_ids` that matches, the norm): lower is
    better, as FTS5's bm25(). The norm is the best of those notes (the notes of an unfiltered
    keyword pool), or with `everywhere` (a filtered search, whose pool is narrower) the best of
    every note that matches, so a filtered search scores as an unfiltered one restricted unless
    the best note of all holds none of the unfiltered pool's chunks. Only the given notes are
    scored (1-2 ms at 100K chunks; the best of every note costs 15-20 ms there: BENCHMARKS.md,
    issue 19.2, branch rank3). On PostgreSQL: store/pg/notes.py."""
    if is_postgres(con):
        from memoryd.store.pg import notes

        return notes.note_bm25(con, match, doc_ids, everywhere)
    if not doc_ids:
        return {}, None
    args = [match, json.dumps(list(doc_ids))]
    if exact_json_floats(con):
        # one row (two JSON arrays) instead of one a note: the search thread that reads this
        # beside the search's own (searcher.py) takes the GIL once, not back for each of
        # ~200 rows while the search runs Python (1-3 ms it waited at 100K chunks)
        row = con.execute(_NOTE_BM25_JSON, args).fetchone()  # an aggregate: always one
        ids, bm25s = (json.loads(row[0]), json.loads(row[1])) if row else ([], [])
        scores = {int(i): float(s) for i, s in zip(ids, bm25s, strict=True)}
    else:
        scores = {int(i): float(s) for i, s in con.execute(_NOTE_BM25, args)}
    if not everywhere:
        return scores, min(scores.values(), default=None)
    return scores, best_note(con, match)


# best_note's answers per connection, while its data version holds (nothing written since):
# {match: best}. The best of every note is no filter's, so the same query filtered by another
# name, or asked again, ranks no note again (issue 20.6).
_BEST: PerVersion[float | None] = PerVersion(64)


def best_note(con: Connection, match: str) -> float | None:
    """The best (lowest) whole-note BM25 of every note that matches."""
    if is_postgres(con):
        from memoryd.store.pg import notes

        return notes.best_note(con, match)
    version = data_version(con)
    found, best = _BEST.get(con, version, match)
    if found:
        return best
    row = con.execute(
        f"SELECT {BM25} AS s FROM notes_fts WHERE notes_fts MATCH ? ORDER BY s LIMIT 1", [match]
    ).fetchall()
    best = float(row[0][0]) if row else None
    _BEST.put(con, version, match, best)
    return best
