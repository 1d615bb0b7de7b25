"""Whole-note keyword evidence (issue 19.2): one FTS5 row per note, its chunks' text together,
so a hybrid search can weigh a note by BM25 over the whole note (its words' frequency over the
note and the note's length), as a reader who opens the note sees it, beside the BM25 of its best
chunk. A short chunk that repeats a question's words ranks high by itself; a note about them
throughout ranks high as a whole.

`notes_fts` (SQLite, migration m008) is contentless (`contentless_delete`): the text stays in
`entries`; the indexer writes a note's row again after its chunks (`refresh`), and a trigger
deletes it with its document. PostgreSQL has no such table: there `note_bm25` finds nothing
and notes rank by their best chunk, as before.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memoryd.store.dialect import is_postgres
from memoryd.store.protocol import Connection
from memoryd.store.tokenizer import TOKENIZE

# the same column weights as the chunks' BM25 (ftsprune.BM25): content, headings, tags
BM25 = "bm25(notes_fts, 1.0, 0.6, 0.4)"

SCHEMA = f"""
CREATE VIRTUAL TABLE notes_fts USING fts5(
    content, heading_path, tags,
    content = '', contentless_delete = 1,
    tokenize = '{TOKENIZE}'
);
CREATE TRIGGER documents_notes_ad AFTER DELETE ON documents BEGIN
    DELETE FROM notes_fts WHERE rowid = old.id;
END;
"""


_FILL = (
    "INSERT INTO notes_fts(rowid, content, heading_path, tags)"
    " SELECT document_id, group_concat(content, char(10)), group_concat(heading_path, ' '),"
    " max(tags) FROM (SELECT document_id, content, heading_path, tags FROM entries"
    " WHERE {where} ORDER BY document_id, seq) GROUP BY document_id"
)


def fill(con: Any) -> None:
    """One row per note from its chunks (the migration; `refresh` keeps each one after)."""
    con.execute(_FILL.format(where="document_id IS NOT NULL"))


def refresh(con: Connection, path: str) -> None:
    """The note's row, written again from its chunks as stored (the indexer, after writing
    them): their texts, their heading paths, the note's tags."""
    if is_postgres(con):
        return
    doc = "(SELECT id FROM documents WHERE path = ?)"
    con.execute(f"DELETE FROM notes_fts WHERE rowid = {doc}", (path,))
    con.execute(_FILL.format(where=f"document_id = {doc}"), (path,))


def note_bm25(
    con: Connection, match: str, doc_ids: Sequence[int]
) -> tuple[dict[int, float], float | None]:
    """(BM25 over the whole note of each of `doc_ids` that matches, the best BM25 of any note
    that matches): lower is better, as FTS5's bm25(). The best is over every note, whatever the
    search's filter, so a filtered search scores as an unfiltered one restricted. ({}, None) on
    PostgreSQL."""
    if is_postgres(con) or not doc_ids:
        return {}, None
    sql = (
        f"WITH m AS MATERIALIZED (SELECT rowid AS id, {BM25} AS s FROM notes_fts"
        " WHERE notes_fts MATCH ?)"
        " SELECT id, s FROM m WHERE id IN (SELECT value FROM json_each(?))"
        " UNION ALL SELECT NULL, min(s) FROM m"
    )
    scores: dict[int, float] = {}
    best: float | None = None
    for i, s in con.execute(sql, [match, json.dumps(list(doc_ids))]):
        if i is None:
            best = None if s is None else float(s)
        else:
            scores[int(i)] = float(s)
    return scores, best
