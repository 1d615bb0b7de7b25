"""The store: the `Store` protocol (store/protocol.py) and its two implementations,
`SqliteStore` (one file in data_dir, store/sqlite.py) and `PgStore` (a PostgreSQL database
several daemons share, store/pg; imported only when configured), which backend.open_store picks;
the SQL over a `Connection` that both run (entries, links, notes, vectors, lifecycle, search),
the schema (SQLite migrations, store/pg/schema.py, the shared column lists in store/tables.py)
and the copy from SQLite to PostgreSQL. Code outside this package asks a store for capabilities
(shared, file_backed, vector_index()), never which backend it is.

May import: memoryd.core, memoryd.text.
"""

from memoryd.store.protocol import Connection, Cursor, Row, Store, VectorIndex, one
from memoryd.store.sqlite import SqliteStore

__all__ = ["Connection", "Cursor", "Row", "SqliteStore", "Store", "VectorIndex", "one"]
