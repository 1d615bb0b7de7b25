"""FTS5 snippets of a few given entries without reading the expression's matches in the whole
index (issue 23.3).

A snippet (FTS5's `snippet()`) is a function of one row alone: its columns' text, the tokenizer
and the expression's phrases found in that row (which passage holds most of them, where the
sentences begin); no statistic of the other rows enters it. Looked up in `entries_fts`, though,
the rows cost a read of every match of the expression (a common word matches ~30,000 chunks at
100K: 2.5-4 ms a search for the 10 hits) or a lookup each (the expression parsed and its terms
sought again per row: 0.1-0.4 ms a row, a prefix expanded again each time).

So the given entries are copied, as they are indexed (content, heading path, tags with the note's
front-matter values: the columns of `entries_fts`), into a table of the same columns and
tokenizer (but for its symbols, each at a place of its own: tokenizer.APART_OPTION, so that the
symbol is marked, not the word `entries_fts` colocates it with) in a private in-memory
database of the calling thread, and the snippets are asked of it, inside a transaction rolled
back after: 0.3-0.5 ms for 10 hits at 100K, the same snippets (tests/test_search_stable.py
compares them with `entries_fts` row by row). SQLite only;
PostgreSQL has `ts_headline` (store/pg/fts.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import apsw

from memoryd.store import tables, tokenizer
from memoryd.store.protocol import Connection

# entries_fts's columns and tokenizer (migrations m001 and m004); external content there, its
# own here (the rows live only inside one rolled-back transaction)
SCHEMA = (
    "CREATE VIRTUAL TABLE rows_fts USING fts5(content, heading_path, tags,"
    f" {tokenizer.APART_OPTION})"
)

# The same table with the tokenizer `cjk` wraps, for rows and an expression without a CJK
# (Thai...) character or one written decomposed (tokenizer.rebuilt): `cjk` then passes the
# wrapped tokenizer's tokens through unchanged, so the snippets are the same, without a call into
# Python for each column of each row (0.2 against 0.3 ms for 10 hits; issue 23.3).
PLAIN_SCHEMA = SCHEMA.replace(tokenizer.APART_OPTION, f'tokenize = "{tokenizer.BASE_OPTION}"')

_local = threading.local()


def _shadow(plain: bool = False) -> apsw.Connection:
    """The calling thread's in-memory database with an empty `rows_fts` (apsw connections are
    not shared between threads that may use them at once), tokenized by `cjk` or (`plain`) by
    the tokenizer it wraps. Made once a thread (~0.5 ms; the daemon's RPC and search threads
    are pools that live as long as it does); it goes with its thread."""
    name = "plain" if plain else "con"
    con: apsw.Connection | None = getattr(_local, name, None)
    if con is None:
        con = apsw.Connection(":memory:")
        tokenizer.register(con)
        con.execute(PLAIN_SCHEMA if plain else SCHEMA)
        setattr(_local, name, con)
    return con


def _has_cjk(rows: Sequence[Sequence[Any]], match: str) -> bool:
    """Whether the expression or any indexed column of the rows has a CJK (Thai...) character
    or one written decomposed: what `cjk` tokenizes otherwise than the tokenizer it wraps."""
    texts = [match, *(t for row in rows for t in row[1:])]
    return any(isinstance(t, str) and not t.isascii() and tokenizer.rebuilt(t) for t in texts)


def snippets(
    con: Connection,
    match: str,
    ids: Sequence[int],
    open_mark: str,
    close_mark: str,
    tokens: int = 24,
) -> dict[int, str]:
    """snippet(entries_fts, 0, open_mark, close_mark, '…', tokens) of those of the given
    entries that match the FTS5 expression `match`, per id (as `entries_fts` would give)."""
    if not ids:
        return {}
    rows = con.execute(
        f"SELECT id, content, heading_path, {tables.keyword_tags('entries')} FROM entries"
        " WHERE id IN (SELECT value FROM json_each(?))",
        [json.dumps([int(i) for i in ids])],
    ).fetchall()
    return snippets_of(rows, match, open_mark, close_mark, tokens)


def snippets_of(
    rows: Sequence[Sequence[Any]], match: str, open_mark: str, close_mark: str, tokens: int = 24
) -> dict[int, str]:
    """`snippets` of rows already read: (id, content, heading_path, tags) as stored."""
    if not rows:
        return {}
    shadow = _shadow(plain=not _has_cjk(rows, match))
    shadow.execute("BEGIN")
    try:
        shadow.executemany(
            "INSERT INTO rows_fts(rowid, content, heading_path, tags) VALUES (?, ?, ?, ?)", rows
        )
        return {
            int(i): str(snip)
            for i, snip in shadow.execute(
                "SELECT rowid, snippet(rows_fts, 0, ?, ?, '…', ?) FROM rows_fts"
                " WHERE rows_fts MATCH ?",
                [open_mark, close_mark, tokens, match],
            )
        }
    finally:
        shadow.execute("ROLLBACK")
