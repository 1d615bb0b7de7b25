"""Values read on a SQLite connection, remembered while what they were read from holds.

A value read on a connection stays true while its data version holds (no other connection
committed since: `PRAGMA data_version`) and the connection changed nothing itself
(`total_changes`). `data_version` reads that pair; `PerVersion` keeps a few values per
connection under it (the entry count, a query's best BM25, its best whole note, an entities
filter's entries), forgotten as soon as either moves. Read the version before reading the value,
so a commit in between voids it; inside a read transaction (every search's `store.read`) the
version is the snapshot's and does not move when another connection commits, so a value put at
the end of a read is filed under what the read saw (tests/test_connmemo.py).

On PostgreSQL the version is a read-only transaction's snapshot (`pg_current_snapshot()`, read
with its BEGIN: store/pg/conn.py), and values are kept per store scope (the connection's
`owner`) rather than per connection (a pooled connection serves every thread): two reads whose
snapshots are equal see the same committed data. A write's connection has no version, and
nothing is kept for it (tests/test_pg_snapmemo.py).
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

import apsw

from memoryd.store.protocol import Connection

V = TypeVar("V")
Version = tuple[int, int] | str


def data_version(con: Connection) -> Version | None:
    """What a value read on this SQLite connection is good for: its data version (it changes
    when another connection commits) and its own changes. PostgreSQL: a read-only
    transaction's snapshot (no round trip: read with the BEGIN), None in a write."""
    if not isinstance(con, apsw.Connection):
        version = getattr(con, "version", None)
        return version if isinstance(version, str) else None
    dv = con.execute("PRAGMA data_version").fetchone()
    return int(dv[0]) if dv else -1, con.total_changes()


def owner(con: Connection) -> Any:
    """Whose values a connection reads: its own (SQLite), its store scope's (PostgreSQL)."""
    if isinstance(con, apsw.Connection):
        return con
    return getattr(con, "owner", None) or con


class PerVersion(Generic[V]):
    """Up to `size` values a connection, by key, for the version they were read under."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._by: weakref.WeakKeyDictionary[Any, tuple[Version, dict[Hashable, V]]] = (
            weakref.WeakKeyDictionary()
        )

    def get(self, con: Connection, version: Version | None, key: Hashable) -> tuple[bool, V | None]:
        """(whether the value is known under `version`, the value)."""
        known = self._by.get(owner(con)) if version is not None else None
        if known is None or known[0] != version or key not in known[1]:
            return False, None
        return True, known[1][key]

    def put(self, con: Connection, version: Version | None, key: Hashable, value: V) -> None:
        """Remember `value`, read under `version` (a full connection's values start afresh)."""
        if version is None:
            return
        by = owner(con)
        known = self._by.get(by)
        if known is None or known[0] != version or len(known[1]) >= self.size:
            known = self._by[by] = (version, {})
        known[1][key] = value
