"""store/connmemo.py: a value remembered on a connection holds exactly while what it was read
from holds: another connection's commit or the connection's own change forgets it, and inside
a read transaction the version stays the snapshot's, so a value put at the end of a read is
filed under the version the read saw (not a later commit's)."""

from __future__ import annotations

from pathlib import Path

import apsw

from memoryd.store import db
from memoryd.store.connmemo import PerVersion, data_version


def _pair(tmp_path: Path) -> tuple[apsw.Connection, apsw.Connection]:
    writer, _ = db.connect(tmp_path / "m.db", writer=True)
    writer.execute("CREATE TABLE t(x)")
    reader, _ = db.connect(tmp_path / "m.db", writer=False)
    return writer, reader


def test_another_connections_commit_forgets(tmp_path: Path) -> None:
    writer, reader = _pair(tmp_path)
    memo: PerVersion[int] = PerVersion(4)
    memo.put(reader, data_version(reader), "n", 0)
    assert memo.get(reader, data_version(reader), "n") == (True, 0)
    writer.execute("INSERT INTO t VALUES (1)")
    assert memo.get(reader, data_version(reader), "n") == (False, None)


def test_own_change_forgets(tmp_path: Path) -> None:
    writer, _ = _pair(tmp_path)
    memo: PerVersion[int] = PerVersion(4)
    memo.put(writer, data_version(writer), "n", 0)
    writer.execute("INSERT INTO t VALUES (1)")
    assert memo.get(writer, data_version(writer), "n") == (False, None)


def test_version_inside_a_read_transaction_is_the_snapshots(tmp_path: Path) -> None:
    writer, reader = _pair(tmp_path)
    memo: PerVersion[int] = PerVersion(4)
    reader.execute("BEGIN")
    seen = reader.execute("SELECT count(*) FROM t").fetchall()[0][0]
    writer.execute("INSERT INTO t VALUES (1)")  # commits while the read is open
    # filed at the end of the read: under the snapshot's version, not the new one
    memo.put(reader, data_version(reader), "count", seen)
    reader.execute("COMMIT")
    assert memo.get(reader, data_version(reader), "count") == (False, None)
    assert reader.execute("SELECT count(*) FROM t").fetchall()[0][0] == 1


def test_nothing_kept_without_a_version(tmp_path: Path) -> None:
    _, reader = _pair(tmp_path)
    memo: PerVersion[int] = PerVersion(4)
    memo.put(reader, None, "n", 1)  # PostgreSQL: no data version
    assert memo.get(reader, None, "n") == (False, None)


def test_a_full_connection_starts_afresh(tmp_path: Path) -> None:
    _, reader = _pair(tmp_path)
    memo: PerVersion[int] = PerVersion(2)
    version = data_version(reader)
    for i in range(3):
        memo.put(reader, version, i, i)
    assert memo.get(reader, version, 2) == (True, 2)
    assert memo.get(reader, version, 0) == (False, None)
