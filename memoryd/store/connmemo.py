"""Values read on a SQLite connection, remembered while what they were read from holds.

A value read on a connection stays true while its data version holds (no other connection
committed since: `PRAGMA data_version`) and the connection changed nothing itself
(`total_changes`). `data_version` reads that pair; `PerVersion` keeps a few values per
connection under it (the entry count, a query's best BM25, its best whole note, an entities
filter's entries), forgotten as soon as either moves. Read the version before reading the value,
so a commit in between voids it; inside a read transaction (every search's `store.read`) the
version is the snapshot's and does not move when another connection commits, so a value put at
the end of a read is filed under what the read saw (tests/test_connmemo.py). On PostgreSQL
nothing is kept (the version is None).
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

import apsw

from memoryd.store.protocol import Connection

V = TypeVar("V")
Version = tuple[int, int]


def data_version(con: Connection) -> Version | None:
    """What a value read on this SQLite connection is good for: its data version (it changes
    when another connection commits) and its own changes. None on PostgreSQL."""
    if not isinstance(con, apsw.Connection):
        return None
    dv = con.execute("PRAGMA data_version").fetchone()
    return int(dv[0]) if dv else -1, con.total_changes()


class PerVersion(Generic[V]):
    """Up to `size` values a connection, by key, for the version they were read under."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._by: weakref.WeakKeyDictionary[Any, tuple[Version, dict[Hashable, V]]] = (
            weakref.WeakKeyDictionary()
        )

    def get(self, con: Connection, version: Version | None, key: Hashable) -> tuple[bool, V | None]:
        """(whether the value is known under `version`, the value)."""
        known = self._by.get(con) if version is not None else None
        if known is None or known[0] != version or key not in known[1]:
            return False, None
        return True, known[1][key]

    def put(self, con: Connection, version: Version | None, key: Hashable, value: V) -> None:
        """Remember `value`, read under `version` (a full connection's values start afresh)."""
        if version is None:
            return
        known = self._by.get(con)
        if known is None or known[0] != version or len(known[1]) >= self.size:
            known = self._by[con] = (version, {})
        known[1][key] = value
