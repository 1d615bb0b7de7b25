"""Copies of the SQLite file (docs/service.md, "Backups and restore"): its commands, run as
written, and every copy memoryd makes of a live
database (a checkpoint, a scheduled snapshot, the backup before a migration) exists only
complete, and one that fails (a full disk) leaves nothing behind, not even the journal SQLite
made beside its temp file.

The failure is real: the copy runs in a child process whose files may not grow past 4 KB
(RLIMIT_FSIZE), so SQLite's write fails part way through, as on a full disk, after it has made
the temp file's journal. No root, no mount.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, doc_commands, wait_for

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


# --- docs/service.md, "Backups and restore", run as written ---------------------------------

SERVICE_MD = ROOT / "docs" / "service.md"
EXAMPLE_SNAPSHOT = "memoryd-20261126T030000Z"


def answers(d: Any) -> dict[str, Any]:
    """What a user sees: every memory, and a search's hits with their scores."""
    listed = d.call("list", {"limit": 100, "namespace": "*"})["items"]
    hits = d.call("search", {"query": "quokka handbook", "mode": "keyword", "namespace": "*"})
    return {
        "memories": sorted((m["id"], m["content"]) for m in listed),
        "hits": [(h["id"], h.get("path"), round(h["score"], 6)) for h in hits["hits"]],
    }


def test_the_backup_and_restore_commands_of_service_md(daemon_factory: Any, tmp_path: Path) -> None:
    """Each command of the three blocks, word by word (the snapshot's name and the data_dir
    are this test's; systemctl is the test's stop and start): each exits 0, a restore while
    running and one into a new data_dir give back the answers of the day of the copy."""
    d = daemon_factory(jobs={"snapshot_keep": 3})
    (d.workspace / "handbook.md").write_text("# Quokka handbook\n\nFeed the quokka at noon.\n")
    d.call("add", {"content": "The quokka handbook lives in the wiki"})
    d.call("add", {"content": "Quokkas were moved to the north enclosure", "tags": ["zoo"]})
    wait_for(lambda: len(answers(d)["hits"]) == 3)
    snap = d.call("jobs.run", {"name": "snapshot"})["result"]["snapshot"].removesuffix(".db")
    before = answers(d)
    env = {k: v for k, v in d.env.items()}

    def run(line: str, data_dir: Path) -> None:
        line = line.replace(EXAMPLE_SNAPSHOT, snap)
        line = line.replace("~/.local/share/memoryd", str(data_dir))
        words = shlex.split(line)
        if words[0] == "memoryctl":
            out = subprocess.run(
                [sys.executable, "-m", "memoryd.ctl", "--socket", str(d.socket), *words[1:]],
                capture_output=True,
                text=True,
                env=env,
                cwd=tmp_path,
                timeout=120,
            )
            assert out.returncode == 0, (line, out.stdout, out.stderr)
            if words[1:3] == ["checkpoint", "list"]:
                assert snap in out.stdout
        elif words[0] == "cp":
            source = Path(d.cfg["data_dir"]) / "snapshots" / words[1]
            shutil.copy(source, words[2])
        else:
            raise AssertionError(f"a command this test does not know: {line}")

    data_dir = Path(d.cfg["data_dir"])
    for line in doc_commands(SERVICE_MD, "backup"):
        run(line, data_dir)
    assert (tmp_path / "memories.jsonl").stat().st_size > 0
    d.call("add", {"content": "Added after the copies: the quokka moved again"})
    assert answers(d) != before
    for line in doc_commands(SERVICE_MD, "restore"):
        run(line, data_dir)
    assert answers(d) == before

    d.call("add", {"content": "Added after the restore: the quokka moved once more"})
    fresh = tmp_path / "new-machine"
    fresh.mkdir(mode=0o700)
    for line in doc_commands(SERVICE_MD, "restore-stopped"):
        if line == "systemctl --user stop memoryd":
            assert d.stop() == 0
        elif line == "systemctl --user start memoryd":
            d = daemon_factory(data_dir=str(fresh), jobs={"snapshot_keep": 3})
        else:
            run(line, fresh)
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"])
    after = answers(d)
    assert after["memories"] == before["memories"]
    # the memory added after the copy is not in it; its daily log line, the only copy of its
    # text left, is found as text (docs/jobs.md), beside the answers of the day of the copy
    logged = [h for h in after["hits"] if (h[1] or "").startswith("daily/")]
    assert len(logged) == 1
    assert [h[:2] for h in after["hits"] if h not in logged] == [h[:2] for h in before["hits"]]


def test_a_copy_moved_over_the_live_file_is_refused_not_written_into(make_app: Any) -> None:
    """`mv snapshot.db memoryd.db` while the daemon runs (the restore docs/service.md says to
    do stopped): the writer went on writing into the old, unlinked file (lost at the next
    start) and a new reader read the new file with the old one's WAL ("database disk image is
    malformed"). Now writes and new readers are refused with what to do, and status says so."""
    import threading

    from memoryd.core.errors import StoreUnavailable
    from memoryd.serve import methods as api

    def call(method: str, **params: Any) -> Any:
        return api.lookup(method, params).fn(app, params)

    app = make_app(model=None)
    call("add", content="stored before the copy")
    copy = app.cfg.data_dir / "copy.db"
    app.store.backup_to(copy)
    copy.replace(app.cfg.db_path)
    with pytest.raises(StoreUnavailable, match="replaced or removed while memoryd was running"):
        call("add", content="would have gone to the old file")
    errors: list[BaseException] = []

    def search() -> None:  # a thread of its own: a new reader connection
        try:
            call("search", query="stored")
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=search)
    worker.start()
    worker.join(30)
    assert [type(e) for e in errors] == [StoreUnavailable]
    status = app.status()
    assert status["store"]["ok"] is False and "checkpoint restore" in status["store"]["error"]
    from memoryd.ctl.output import status_summary

    assert "database file replaced under the daemon: restart it" in status_summary(status)


def test_a_checkpoint_chunked_with_other_settings_is_chunked_again_on_restore(
    make_app: Any,
) -> None:
    """index/chunking.py at a restore too: the checkpoint's notes were chunked with the
    settings of its day; the reconcile after the restore reads them with today's."""
    from memoryd.serve import methods as api

    note = "# Handbook\n\n" + "feed the quokka leaves at noon and count them twice. " * 120
    app = make_app(model=None, indexer={"chunk_max_tokens": 200, "chunk_overlap_tokens": 30})
    (app.cfg.workspace / "handbook.md").write_text(note)
    app.indexer.reconcile()
    api.lookup("checkpoint.create", {"name": "big"}).fn(app, {"name": "big"})
    make_app.close(app)
    app = make_app(model=None, indexer={"chunk_max_tokens": 48, "chunk_overlap_tokens": 8})
    app.indexer.reconcile()
    small = api.lookup("stats", {}).fn(app, {})["chunks"]
    res = api.lookup("checkpoint.restore", {"name": "big"}).fn(app, {"name": "big"})
    assert res["reconcile"]["indexed"] == 1
    assert api.lookup("stats", {}).fn(app, {})["chunks"] == small
