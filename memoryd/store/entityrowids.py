"""A wide entities filter checked on FTS5's rowids by a set held in memory (issue 20.6).

The keyword pool checks each match of an entities filter against the entries that mention the
name before it ranks it (searchsql.Prefilter). As SQL, `rowid IN (SELECT entry_id FROM mentions
...)`, SQLite builds that set anew for every statement: for a name in 14,000 sections at 100K
chunks, 5-9 ms a search, more than the ranking it saves for a query of a few thousand matches.
Here the set is store/entityfilter.entries_of's (read once per connection while nothing is written)
and the check is its `__contains__`, registered on the connection as an SQL function: no set
built per statement, and a call into C per match (about 2.5 ms less per search at the median
query, the same rows: tests/test_entity_search.py).

The function is re-registered only when the connection's entries change (another name, or a
write); SQLite refuses that while a statement of the connection is running (BUSY): that
search checks the rowids with the SQL set instead, with the same answer. PostgreSQL, and an
empty group, use the SQL (store/entityfilter.rowid_sql).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import apsw
import numpy as np

from memoryd.store.entityfilter import entries_of, rowid_sql
from memoryd.store.protocol import Connection

FUNCTION = "memoryd_mentioning"  # (rowid): whether the entry mentions the filter's entities

# The entries each connection's function holds (entries_of's array: the same object while they
# hold, so `is` tells whether the function is current).
_BOUND: weakref.WeakKeyDictionary[Any, np.ndarray] = weakref.WeakKeyDictionary()


def rowid_check(groups: Sequence[Sequence[int]], con: Connection) -> tuple[str, list[Any]]:
    """The condition on `entries_fts.rowid` that passes the entries mentioning one entity of
    every group (resolve_filter's), for statements run on `con`: the registered set's
    function, or rowid_sql's set where it cannot be used."""
    if not isinstance(con, apsw.Connection) or not all(groups):
        return rowid_sql(groups)
    allowed = entries_of(con, groups)
    if _BOUND.get(con) is not allowed:
        member: Callable[..., Any] = frozenset(allowed.tolist()).__contains__  # C, per match
        try:
            con.create_scalar_function(FUNCTION, member, 1, deterministic=True)
        except apsw.BusyError:  # a statement of this connection is running
            _BOUND.pop(con, None)
            return rowid_sql(groups)
        _BOUND[con] = allowed
    return f"{FUNCTION}(entries_fts.rowid)", []
