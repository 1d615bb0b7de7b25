"""Copies of the SQLite file (docs/service.md, "Backups"): every copy memoryd makes of a live
database (a checkpoint, a scheduled snapshot, the backup before a migration) exists only
complete, and one that fails (a full disk) leaves nothing behind, not even the journal SQLite
made beside its temp file.

The failure is real: the copy runs in a child process whose files may not grow past 4 KB
(RLIMIT_FSIZE), so SQLite's write fails part way through, as on a full disk, after it has made
the temp file's journal. No root, no mount.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")

SETUP = """
import apsw, resource, signal, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from memoryd.store import db
from memoryd.store.sqlite import SqliteStore
from memoryd.store.migrations import MIGRATIONS, migrate
data = Path({data!r})
store = SqliteStore(data / "memoryd.db")
store.run_write(lambda con: con.execute(
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)"
    " INSERT INTO meta(key, value) SELECT 'k' || i, hex(randomblob(400)) FROM n"))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
"""

DOORS = {
    # store.backup_to: checkpoint.create and the snapshot job
    "checkpoint": """
store.checkpoint("TRUNCATE")
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
try:
    store.backup_to(data / "checkpoints" / "full.db")
except Exception as exc:
    print("failed:", type(exc).__name__)
""",
    "snapshot": """
from memoryd.serve.jobs import snapshot
store.checkpoint("TRUNCATE")
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
try:
    snapshot(store, data / "snapshots", 7, 0.0)
except Exception as exc:
    print("failed:", type(exc).__name__)
""",
    # the copy an upgrade makes before its first migration step
    "migration_backup": """
store.checkpoint("TRUNCATE")
store.close()
con, _ = db.connect(data / "memoryd.db", writer=True)
con.execute(f"PRAGMA user_version = {len(MIGRATIONS) - 1}")
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
try:
    migrate(con, data / "memoryd.db")
except Exception as exc:
    print("failed:", type(exc).__name__)
""",
}


@pytest.mark.parametrize("door", sorted(DOORS))
def test_a_failed_copy_leaves_nothing_behind(tmp_path: Path, door: str) -> None:
    data = tmp_path / "data"
    code = textwrap.dedent(SETUP.format(root=str(ROOT), data=str(data))) + DOORS[door]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert "failed:" in out.stdout, (out.stdout, out.stderr)
    own = {"memoryd.db", "memoryd.db-wal", "memoryd.db-shm"}
    left = sorted(
        str(p.relative_to(data)) for p in data.rglob("*") if p.is_file() and p.name not in own
    )
    assert left == [], f"a failed {door} left {left}"
