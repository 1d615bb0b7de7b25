"""Rows a search reads in fewer round trips on PostgreSQL (issue 23.4), SQLite as before.

- `hit_rows`: the winners' records, their snippets and the records of their notes' other
  sections (search/hits.py). SQLite reads the records, makes the snippets of each expression
  from those rows (store/rowsnippets.py: their text is not read twice) and reads only the
  heading and lines of the other sections; PostgreSQL in one statement, where they were three
  round trips: the same records, the same ts_headline of each.
- `read_ahead`: what search asks of the vector pool's texts once it is known (their signal
  columns, lengths, which hold each query word), one statement on PostgreSQL where it was three;
  nothing on SQLite, whose reads cost no round trip. `note_ahead`, `carried`, `adopt_carried`
  (PostgreSQL): the vector pool's own read, under the search's snapshot, reads the same with
  its k-NN, and the search's read keeps it: no statement of its own.
- `new_words`, `words_ahead`, `adopt_words` (SQLite): which texts hold each of the query's
  words, read on the vector pool's thread for the search's connection (store/wordrows.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memoryd.store import entries, rowsnippets, searchsql, tables, wordrows
from memoryd.store.db import in_batches
from memoryd.store.dialect import is_postgres
from memoryd.store.protocol import Connection


def read_ahead(con: Connection, ids: Sequence[int], seen: searchsql.Seen) -> None:
    """Read now what search asks of these entries next: PostgreSQL, in one statement, their
    signal columns (into `seen`: searchsql.Seen), their lengths (searchsql.text_lengths) and
    which hold each expression noted for `matching` (store/pg/held.py); SQLite: nothing."""
    if not is_postgres(con):
        return
    from memoryd.store.pg import held  # imported on first use: SQLite never loads it

    if held.known(con, ids, seen):  # read with the pool's entries (held.hash_rows)
        return
    columns = ", ".join(f"e.{c}" for c in searchsql.SIGNAL_COLUMNS)
    seen.update((r[0], tuple(r[1:])) for r in held.read_ahead(con, list(ids), columns))


def note_ahead(con: Connection, matches: Sequence[str]) -> None:
    """PostgreSQL: note the expressions the search's evidence will ask about on another read
    (the vector pool's), whose k-NN then reads which of its entries hold each, with their
    lengths and signal columns (store/pg/held.py `carry`); SQLite: nothing."""
    if is_postgres(con):
        from memoryd.store.pg import held

        held.note_carry(con, matches, ", ".join(f"e.{c}" for c in searchsql.SIGNAL_COLUMNS))


def carried(con: Connection) -> Any:
    """What a read kept for another one (`note_ahead`), for `adopt_carried`; None on SQLite."""
    if not is_postgres(con):
        return None
    from memoryd.store.pg import held

    return held.carried(con)


def adopt_carried(con: Connection, found: Any, seen: searchsql.Seen) -> bool:
    """Keep on the search's read what `carried` took from another read when both saw the same
    snapshot: `read_ahead` then reads nothing of those entries. Whether it was kept."""
    if found is None or not is_postgres(con):
        return False
    from memoryd.store.pg import held

    return held.adopt(con, found, seen)


def new_words(con: Connection, matches: Sequence[str]) -> list[str]:
    """Those of the one-term expressions whose matches `con` has not read yet (SQLite; none on
    PostgreSQL, whose `matching` asks for every noted expression in one statement)."""
    return [] if is_postgres(con) else wordrows.unknown(con, matches)


def words_ahead(con: Connection, matches: Sequence[str]) -> wordrows.Ahead | None:
    """The expressions' matches read on this connection for another one (`adopt_words`)."""
    return None if is_postgres(con) or not matches else wordrows.read_ahead(con, matches)


def adopt_words(con: Connection, ahead: wordrows.Ahead | None) -> None:
    """Keep on `con` what `words_ahead` read elsewhere, when it holds for `con`'s snapshot."""
    if ahead is not None and not is_postgres(con):
        wordrows.adopt(con, ahead)


# where a record's row (entries.RECORD_COLUMNS) holds its id and the columns entries_fts indexes
# before its tags
_ROW_TEXT = tuple(entries._NAMES.index(c) for c in ("id", "content", "heading_path"))


def section_lines(con: Connection, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The heading path and lines of each entry (SQLite), as its record has them (None but
    for a chunk): what hits.fill_sections reads of a note's other sections."""
    rows = con.execute(
        "SELECT id, kind, heading_path, start_line, end_line FROM entries"
        " WHERE id IN (SELECT value FROM json_each(?))",
        [json.dumps([int(i) for i in ids])],
    )
    out: dict[int, dict[str, Any]] = {}
    for entry_id, kind, heading, start, end in rows:
        chunk = kind == "chunk"
        out[int(entry_id)] = {
            "heading_path": json.loads(heading or "[]") if chunk else None,
            "start_line": start if chunk else None,
            "end_line": end if chunk else None,
        }
    return out


def hit_rows(
    con: Connection,
    ids: Sequence[int],
    by_match: dict[str, list[int]],
    more: Sequence[int],
    marks: tuple[str, str],
) -> tuple[dict[int, dict[str, Any]], dict[int, str], dict[int, dict[str, Any]] | None]:
    """(records of `ids`, snippets of the ids of each expression of `by_match`, records of
    `more`): `marks` wrap the matches. SQLite: of `more`, only the heading path and lines
    (`section_lines`: all hits.fill_sections asks of them)."""
    if not is_postgres(con):
        # the records' rows give the snippets their text (no second read of it), and the other
        # sections need only their heading and lines (search/hits.fill_sections)
        stored: list[Sequence[Any]] = []
        # and, last, what the keyword row holds as its tags (with the note's front-matter values)
        cols = f"{entries.RECORD_COLUMNS}, {tables.keyword_tags('e')}"
        for part, places in in_batches(ids):  # entries.get_many's rows
            where = f"e.id IN ({places})"
            stored.extend(
                con.execute(f"SELECT {cols} FROM {entries.RECORD_FROM} WHERE {where}", part)
            )
        found = {int(row[0]): entries.row_to_record(row[:-1]) for row in stored}
        text = {int(row[0]): (*(row[k] for k in _ROW_TEXT), row[-1]) for row in stored}
        snippets: dict[int, str] = {}
        for match, matched in by_match.items():
            mine = [text[i] for i in matched if i in text]
            snippets.update(rowsnippets.snippets_of(mine, match, *marks))
        return found, snippets, section_lines(con, more) if more else None
    # imported on first use: SQLite never loads them
    from memoryd.store.pg.conn import execute_prepared
    from memoryd.store.pg.fts import Headline

    heads = [(Headline(match, *marks), matched) for match, matched in by_match.items()]
    cols = "".join(
        f", CASE WHEN e.id = ANY(?) THEN {h.sql(f'q.q{j}')} END" for j, (h, _) in enumerate(heads)
    )
    source = entries.RECORD_FROM
    if heads:
        tsq = ", ".join(f"{h.q} AS q{j}" for j, (h, _) in enumerate(heads))
        source = f"(SELECT {tsq}) q, {source}"
    wanted = list(dict.fromkeys([*ids, *more]))
    rows = execute_prepared(
        con,
        f"SELECT {entries.RECORD_COLUMNS}{cols} FROM {source} WHERE e.id = ANY(?)",
        [
            *(p for h, matched in heads for p in (list(matched), *h.params)),
            *(p for h, _ in heads for p in h.qparams),
            wanted,
        ],
    ).fetchall()
    width = len(rows[0]) - len(heads) if rows else 0
    records: dict[int, dict[str, Any]] = {}
    out: dict[int, str] = {}
    for row in rows:
        rec = entries.row_to_record(row[:width])
        records[rec["id"]] = rec
        for (h, _), snip in zip(heads, row[width:], strict=True):
            if snip is not None:
                out[rec["id"]] = h.finish(str(rec["content"]), str(snip))
    top = set(ids)
    return {i: r for i, r in records.items() if i in top}, out, records
