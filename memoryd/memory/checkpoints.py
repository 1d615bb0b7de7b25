"""Named checkpoints of the whole store: create, list, restore (while the daemon runs).

Create is an online backup (VACUUM INTO) through a temp file that is removed if the copy fails
(and at startup, if the daemon died during one). Restore first checks that the file is a memoryd
database (user_version, quick_check, the expected tables), keeps a safety copy of the current
database as the checkpoint `pre-restore-<time>`, migrates a checkpoint of an older schema on a
temp copy, and then copies it into the live database through SQLite's backup API under the
writer lock: requests in flight finish on their snapshot, writes wait, and the index and its
vectors come back together because they live in the same file. The id sequence never goes
backwards (ids used after the checkpoint are not handed out again). Afterwards the workspace is
reconciled, so files changed since the checkpoint are indexed as they are now.

With a PostgreSQL store (docs/team.md) create, list and restore are refused (-32006) and point
at pg_dump; delete still removes copies left in data_dir from the SQLite days.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw

from memoryd.core.errors import InvalidInput, NotFound, Refused, describe
from memoryd.core.logsetup import get_logger
from memoryd.core.timeutil import iso
from memoryd.memory.dailylog import DailyLog
from memoryd.store import Store, db, entries, files
from memoryd.store.migrations import MIGRATIONS

log = get_logger("memoryd.memory.checkpoints")

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
REQUIRED_TABLES = frozenset({"entries", "documents", "meta", "access_log", "embeddings"})


def refuse_on_postgres(store: Store, outcome: str) -> None:
    """Checkpoints are copies of the SQLite file: with a PostgreSQL store, the server's own
    backups (pg_dump, base backups, replicas) take their place (docs/team.md, "Backups")."""
    if not store.file_backed:
        raise Refused(
            'checkpoints copy the SQLite file; with store.backend = "postgres" back the '
            "database up with pg_dump (or your server's backups) and restore with pg_restore "
            f"(docs/team.md, Backups); {outcome}. checkpoint.delete still removes copies "
            "left from the SQLite days"
        )


def folder(data_dir: Path) -> Path:
    return data_dir / "checkpoints"


def check_name(name: object) -> str:
    # fullmatch: `$` would let a trailing newline through ("abc\n")
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name.endswith(".tmp"):
        raise InvalidInput(
            "name: letters, digits, '.', '_' and '-' (no spaces, slashes or control "
            "characters), at most 64 characters, starting with a letter or digit"
        )
    return name


def _path(data_dir: Path, name: object) -> Path:
    return folder(data_dir) / f"{check_name(name)}.db"


KINDS = {"checkpoint": "checkpoints", "snapshot": "snapshots"}  # kind -> folder in data_dir


def check_kind(kind: object) -> str:
    if not isinstance(kind, str) or kind not in KINDS:
        raise InvalidInput("kind: expected checkpoint or snapshot")
    return str(kind)


def copy_path(data_dir: Path, name: object, kind: object = "checkpoint") -> Path:
    """A checkpoint (`memoryctl checkpoint create`) or a scheduled snapshot (the snapshot job):
    the two kinds of copy that list, restore and delete act on alike."""
    return data_dir / KINDS[check_kind(kind)] / f"{check_name(name)}.db"


def create(store: Store, data_dir: Path, name: object) -> dict[str, Any]:
    path = _path(data_dir, name)
    refuse_on_postgres(store, "no checkpoint was made")
    if path.exists():
        raise InvalidInput(
            f"checkpoint {describe(name)} exists; pick another name or delete it first"
        )
    store.backup_to(path)
    return {"name": name, "path": str(path), "bytes": path.stat().st_size}


def delete(data_dir: Path, name: object, kind: object = "checkpoint") -> dict[str, Any]:
    """Remove a checkpoint or a snapshot (to forget a deleted memory everywhere)."""
    path = copy_path(data_dir, name, kind)
    if not path.is_file():
        raise NotFound(f"no {kind} named {describe(name)}")
    path.unlink()
    log.info("copy deleted", kind=kind, name=name)
    return {"deleted": name, "kind": kind}


def list_all(store: Store, data_dir: Path, kind: object = "checkpoint") -> list[dict[str, Any]]:
    refuse_on_postgres(store, "there are no checkpoints to list")
    out = []
    for p in sorted((data_dir / KINDS[check_kind(kind)]).glob("*.db")):
        st = _regular_stat(p)
        if st is None:  # a folder, a FIFO, a dangling symlink: not a checkpoint
            continue
        out.append({"name": p.stem, "created_at": iso(st.st_mtime), "bytes": st.st_size})
    return out


def inspect(path: Path) -> int:
    """The schema version of a memoryd database file; Refused when it is not one we can use."""
    if path.stat().st_size == 0:
        raise Refused(f"{path.name} is empty, not a memoryd database; nothing was restored")
    try:
        info = files.describe(path)
    except apsw.Error as exc:
        raise Refused(
            f"{path.name} is not a readable SQLite database ({exc}); nothing was restored"
        ) from None
    version, tables, check = info.user_version, info.tables, list(info.quick_check)
    if version < 1 or not tables >= REQUIRED_TABLES:
        raise Refused(f"{path.name} is not a memoryd database; nothing was restored")
    if version > len(MIGRATIONS):
        raise Refused(
            f"{path.name} has schema version {version}, newer than this memoryd knows "
            f"({len(MIGRATIONS)}); nothing was restored"
        )
    if check != ["ok"]:
        raise Refused(
            f"{path.name} fails quick_check ({'; '.join(check[:3])}); nothing was restored"
        )
    return version


def restore(
    store: Store,
    data_dir: Path,
    name: object,
    *,
    clock: Callable[[], float],
    dailylog: DailyLog,
    after_restore: Callable[[], None],
    sync_paths: Callable[[list[Path]], Any],
    reconcile: Callable[[], Any],
    kind: object = "checkpoint",
) -> dict[str, Any]:
    """Replace the live database with a checkpoint, or a scheduled snapshot (`kind`).
    `after_restore` drops what was cached of the old one; `sync_paths` indexes daily log files
    rewritten here; `reconcile` compares the workspace with the restored index (an indexer
    Report)."""
    path = copy_path(data_dir, name, kind)
    refuse_on_postgres(store, "nothing was restored")
    if not path.is_file():
        see = "checkpoint list" + (" --snapshot" if kind == "snapshot" else "")
        raise NotFound(f"no {kind} named {describe(name)} (see {see})")
    version = inspect(path)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(clock()))
    safety = folder(data_dir) / f"pre-restore-{stamp}.db"
    n = 1
    while safety.exists():
        n += 1
        safety = folder(data_dir) / f"pre-restore-{stamp}-{n}.db"
    store.backup_to(safety)
    source, migrated = path, False
    work = folder(data_dir) / f".restore-{stamp}.db.tmp"
    try:
        if version < len(MIGRATIONS):
            db.remove_db_files(work)
            files.migrated_copy(path, work)
            source, migrated = work, True
        high = store.read(entries.id_high_water)
        store.restore_from(source)
        store.run_write(lambda con: entries.raise_id_high_water(con, high))
    finally:
        db.remove_db_files(work)
    log.info(
        "checkpoint restored", name=name, kind=kind, migrated=migrated, safety_copy=safety.stem
    )
    after_restore()
    report = reconcile()  # first: the files the checkpoint does not know are indexed too
    # lines of memories the restore took away (added after the checkpoint) leave the daily log,
    # and the files the index says hold their markers (a log moved out of the log folder since)
    rewritten = dailylog.forget_unknown(
        lambda ids: store.read(lambda con: entries.memory_ids_among(con, ids))
    )
    if rewritten:
        sync_paths(rewritten)
    return {
        "restored": name,
        "kind": kind,
        "schema_version": version,
        "migrated": migrated,
        "safety_copy": safety.stem,
        "reconcile": report.as_dict(),
    }


def _regular_stat(path: Path) -> os.stat_result | None:
    """The stat of a regular file (through a symlink), else None: what list and still_in name
    must be something checkpoint.delete and restore can act on."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def copies(data_dir: Path) -> list[dict[str, Any]]:
    """Every copy of the database memoryd keeps: checkpoints, snapshots, migration backups."""
    out: list[dict[str, Any]] = []
    found = [
        *(("checkpoint", p) for p in (data_dir / "checkpoints").glob("*.db")),
        *(("snapshot", p) for p in (data_dir / "snapshots").glob("*.db")),
        *(("migration_backup", p) for p in data_dir.glob("*.pre-v*.bak")),
    ]
    for kind, p in found:
        st = _regular_stat(p)
        if st is None:
            continue
        mtime = st.st_mtime
        out.append({"kind": kind, "name": p.stem, "path": str(p), "created_at": mtime})
    out.sort(key=lambda c: c["created_at"])
    return out


def migration_backups(data_dir: Path) -> list[dict[str, Any]]:
    """The copies upgrades made of the store before migrating it, oldest first
    (`memoryd.db.pre-v12.bak` is the store as the memoryd of schema 11 left it): the way back
    to that memoryd (docs/service.md#upgrading). Nothing removes them: status lists them."""
    found: list[tuple[float, Path, int]] = []
    for p in data_dir.glob("*.pre-v*.bak"):
        st = _regular_stat(p)
        if st is not None:
            found.append((st.st_mtime, p, st.st_size))
    return [
        {"file": p.name, "path": str(p), "bytes": size, "created_at": iso(mtime)}
        for mtime, p, size in sorted(found)
    ]


def copies_since(data_dir: Path, since: float) -> list[dict[str, Any]]:
    """Copies made at or after `since` (a memory created then is in them)."""
    return [
        {**c, "created_at": iso(c["created_at"])}
        for c in copies(data_dir)
        if c["created_at"] >= since - 1
    ]


def clean_partial(data_dir: Path) -> list[str]:
    """Remove what an interrupted checkpoint, snapshot or restore left behind (startup)."""
    removed = []
    for sub in ("checkpoints", "snapshots"):
        for p in (data_dir / sub).glob("*.tmp*"):
            p.unlink(missing_ok=True)
            removed.append(p.name)
    if removed:
        log.warning("removed partial copies", files=removed)
    return removed
