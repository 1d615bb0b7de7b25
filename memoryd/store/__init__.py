"""The store: memoryd.store.protocol.Store and its two implementations, SqliteStore (one file
in data_dir, memoryd/store/sqlite.py) and PgStore (a shared PostgreSQL database,
memoryd/store/pg; imported only when configured). memoryd.store.backend.open_store picks one."""

from memoryd.store.protocol import Connection, Cursor, Row, Store, VectorIndex, one
from memoryd.store.sqlite import SqliteStore

__all__ = ["Connection", "Cursor", "Row", "SqliteStore", "Store", "VectorIndex", "one"]
