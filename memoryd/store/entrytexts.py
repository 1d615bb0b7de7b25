"""The texts of given entries, per id: as stored (the ranking reads ranges in them, the fuzzy
vocabulary reads a few), and as written in the note's file, with its front-matter values (what
rg reads and the keyword index holds: search/symbols.py). Both backends."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memoryd.store.dialect import is_postgres
from memoryd.store.protocol import Connection


def per_id(con: Connection, column: str, ids: Sequence[int]) -> list[tuple[Any, Any]]:
    """(id, `column`) of the given entries; `column` is one of this module's fixed expressions,
    never user text (searchsql's, this module's)."""
    if not ids:
        return []
    if is_postgres(con):
        sql = f"SELECT id, {column} FROM entries WHERE id = ANY(?)"
        return list(con.execute(sql, [list(ids)]))
    sql = f"SELECT id, {column} FROM entries WHERE id IN (SELECT value FROM json_each(?))"
    return list(con.execute(sql, [json.dumps(list(ids))]))


def texts(con: Connection, ids: Sequence[int]) -> dict[int, str]:
    """Each entry's text, per id (a few: the ranking reads ranges in them, search/ranges.py)."""
    return {int(i): str(t or "") for i, t in per_id(con, "content", ids)}


def written(con: Connection, ids: Sequence[int]) -> dict[int, str]:
    """Each entry's text with its note's front-matter values (what rg reads in the note's file
    and the keyword index holds: tables.keyword_tags), per id."""
    column = "content || coalesce(' ' || props, '')"
    return {int(i): str(t or "") for i, t in per_id(con, column, ids)}
