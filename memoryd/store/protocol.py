"""What the rest of memoryd may ask of a store, whichever backend holds it.

`Store` is the interface both stores implement: `SqliteStore` (memoryd/store/sqlite.py, one
file in data_dir) and `PgStore` (memoryd/store/pg, a database several daemons share). Code
outside memoryd/store/ holds a `Store` and asks it for capabilities (`shared`, `file_backed`,
`vector_index()`), never which backend it is.

`Connection` is the part of apsw's connection the store functions use (execute, changes,
in_transaction): an apsw.Connection satisfies it as it is, and store/pg/conn.py's PgConnection
speaks it over psycopg. The store functions are annotated with it, so a type checker sees every
call on both backends. Rows are tuples of Any: the database decides the values' types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from memoryd.core.oserrors import Refusals

T = TypeVar("T")
Row = tuple[Any, ...]

__all__ = ["Connection", "Cursor", "Row", "Store", "VectorIndex", "one"]


class Cursor(Protocol):
    """The rows of one statement: iterate, fetchall() or fetchone()."""

    def __iter__(self) -> Iterator[Row]: ...

    def fetchall(self) -> list[Row]: ...

    def fetchone(self) -> Row | None: ...


@runtime_checkable
class Connection(Protocol):
    """One connection inside the transaction its store opened (`?` placeholders)."""

    def execute(self, sql: str, params: Sequence[Any] | None = None, /) -> Cursor: ...

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]], /) -> Any: ...

    def changes(self) -> int: ...

    @property
    def in_transaction(self) -> bool: ...


def one(cur: Cursor) -> Row:
    """The one row a statement always yields (an aggregate, RETURNING after an insert)."""
    row = cur.fetchone()
    if row is None:
        raise LookupError("the statement yielded no row")
    return row


class VectorIndex(Protocol):
    """Nearest neighbours among the stored vectors (search/vecindex.py's VectorCache in
    memory over SQLite, store/pg/vectors.py's PgVectorIndex in the server)."""

    def invalidate(self) -> None: ...

    def warm(self, con: Connection) -> None: ...

    def knn(
        self, con: Connection, model_id: int, dim: int, query: np.ndarray, k: int
    ) -> list[tuple[str, float]]: ...

    def similarities(
        self, con: Connection, model_id: int, dim: int, query: np.ndarray, wanted: set[str]
    ) -> dict[str, float]: ...


@runtime_checkable
class Store(Protocol):
    """A thread-safe store: call read() / write() from any thread.

    Capabilities (what callers may need to know, instead of which backend this is):
    - `shared`: several daemons (several workspaces) use this database at once: caches expire,
      once-per-database jobs take `exclusive()`, other daemons' changes arrive through
      `on_change`, and `scope="all"` reaches every workspace's rows.
    - `file_backed`: the store is one SQLite file in data_dir: WAL checkpoints, quick_check,
      snapshots and checkpoints (file copies) mean something.
    - `vec_enabled`: nearest-neighbour search works (sqlite-vec loaded; always on PostgreSQL).
    """

    backend: str  # "sqlite" or "postgres": for messages and status, not for branching
    path: Path
    vec_enabled: bool
    shared: bool
    file_backed: bool
    # writes the system refuses now (a full disk): status `store.writes_refused`, core/oserrors
    refusals: Refusals

    def read(
        self,
        fn: Callable[[Connection], T],
        *,
        scope: str | None = None,
        export: bool = False,
        snapshot: str | None = None,
    ) -> T:
        """fn inside one read transaction (a consistent snapshot). scope="all": every
        workspace's rows (a shared store; a file holds one workspace, so it changes nothing).
        `export` and `snapshot` (PostgreSQL; a file's reads ignore them): the connection names
        its snapshot (`exported`), and another read takes that snapshot by its name."""
        ...

    def write(
        self, *, durable: bool = False, scope: str | None = None
    ) -> AbstractContextManager[Connection]:
        """One write transaction, committed when the block ends, rolled back if it raises.
        durable: the data exists nowhere else (SQLite commits with synchronous=FULL)."""
        ...

    def run_write(
        self, fn: Callable[[Connection], T], *, durable: bool = False, scope: str | None = None
    ) -> T: ...

    def exclusive(self, name: str) -> AbstractContextManager[bool]:
        """Whether this daemon runs the once-per-database job `name` now."""
        ...

    def info(self) -> dict[str, Any]:
        """The `store` section of status."""
        ...

    def vector_index(self) -> VectorIndex | None:
        """The index the database keeps itself (PostgreSQL's HNSW), or None: the caller keeps
        its own in-memory index over the stored vectors."""
        ...

    def on_change(self, cb: Callable[[dict[str, Any]], None]) -> None:
        """Call cb(payload) when another daemon changes the database (never, for a store no
        one else writes)."""
        ...

    def checkpoint(self, mode: str = "RESTART") -> tuple[int, int, int]: ...

    def quick_check(self) -> list[str]: ...

    def optimize(self) -> None: ...

    def backup_to(self, target: Path) -> None: ...

    def restore_from(self, source: Path) -> None: ...

    def size_bytes(self) -> int: ...

    def close(self) -> None: ...
