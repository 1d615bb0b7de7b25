"""`memoryd store migrate --to postgres`: copy this config's SQLite store into PostgreSQL.

What travels: memories with their ids, tiers, counters, history, triggers and access log; this
workspace's documents, chunks and links (keyed by this daemon's workspace id), each note's
whole-note row made again from its chunks (store/pg/notes.py); models and vectors, so nothing
is embedded again. The counts are checked on both sides before the commit.

The rules (docs/team.md, "Moving an existing store"):
- The copy is one PostgreSQL transaction: all or nothing. A failed copy leaves the target as it
  was, so running it again is safe; a finished one is recorded in the target's meta table, and a
  second run says so and copies nothing.
- Memories keep their ids. A target that already holds one of those ids, or one of those texts
  in the same namespace, is refused: move such memories with `memoryctl export` and
  `memoryctl import` instead (which skips known texts and renumbers taken ids).
- A target that already holds notes of this workspace (a daemon on PostgreSQL indexed it) is
  refused; `replace_notes` (--replace-notes) removes them first (they are an index of this
  machine's files, which the copy brings again).
- Documents and chunks keep their ids when no row of the target has any of them, and otherwise
  get new ones (another machine's store was copied first).
- The identity sequences move past every copied id and every id the SQLite store handed out.
  (PostgreSQL sequences are not transactional: a copy rolled back, or a dry run, may leave them
  moved forward. Ids are then skipped, never handed out twice.)
- While a daemon holds this data_dir's lock, the copy refuses to start; while it runs, it holds
  the lock, so no daemon starts on the SQLite store under it.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.core.config import Config
from memoryd.core.dsn import check_dsn
from memoryd.core.errors import ConfigError, MemorydError, Refused, StoreError

Say = Callable[[str], None]
CHECKED = (
    "memories",
    "chunks",
    "documents",
    "history",
    "triggers",
    "access_log",
    "links",
    "log_marks",
    "mentions",
)


class CountMismatch(StoreError):
    """The copy does not hold what the SQLite store holds; nothing was written."""


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def target_config(cfg: Config, dsn: str | None) -> Config:
    """The config with --dsn in place of store.dsn (refused when it holds a password)."""
    if dsn is None:
        return cfg
    check_dsn(dsn, "--dsn")
    return dataclasses.replace(cfg, store=dataclasses.replace(cfg.store, dsn=dsn))


def migrate(
    cfg: Config,
    *,
    dsn: str | None = None,
    dry_run: bool = False,
    replace_notes: bool = False,
    say: Say = _stderr,
) -> dict[str, Any]:
    """Copy the SQLite store into PostgreSQL. Returns {"source", "target", "dry_run", ...};
    raises CountMismatch (nothing written) when the counts differ, Refused on a conflict."""
    from memoryd.core.fsutil import acquire_lock
    from memoryd.store import SqliteStore
    from memoryd.store.backend import conninfo, workspace_id

    try:
        import pgvector.psycopg  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"copying to PostgreSQL needs its driver: pip install 'memoryd[postgres]' ({exc})"
        ) from None
    tcfg = target_config(cfg, dsn)
    info = conninfo(tcfg)  # ConfigError without a dsn
    if not cfg.db_path.is_file():
        raise Refused(f"no SQLite store at {cfg.db_path}: nothing to copy (data_dir?)")
    lock = acquire_lock(cfg.lock_path)  # AlreadyRunning while a daemon uses this data_dir
    try:
        workspace = workspace_id(tcfg)
        copy = _upgraded_copy(cfg, say)
        try:
            store = SqliteStore(copy or cfg.db_path)
            try:
                return store.read(
                    lambda lite: _copy(lite, info, workspace, cfg, dry_run, replace_notes, say)
                )
            finally:
                store.close()
        finally:
            if copy is not None:
                for p in copy.parent.glob(copy.name + "*"):  # -wal, -shm, .pre-vN.bak
                    p.unlink(missing_ok=True)
    finally:
        os.close(lock)


def _upgraded_copy(cfg: Config, say: Say) -> Path | None:
    """An older store is read from a copy that opening upgrades (SqliteStore migrates what it
    opens), so the SQLite file stays as it was, as the rules promise: None when the file's
    schema is this memoryd's."""
    import apsw

    from memoryd.store import db, migrations
    from memoryd.store.migrations import MIGRATIONS

    con = apsw.Connection(str(cfg.db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        version = migrations.schema_version(con)
        if version >= len(MIGRATIONS):
            return None
        copy = cfg.db_path.with_name(f".{cfg.db_path.name}.migrate-{os.getpid()}")
        for p in copy.parent.glob(copy.name + "*"):
            p.unlink()
        say(
            f"{cfg.db_path} has schema version {version} (this memoryd's is {len(MIGRATIONS)}): "
            "reading an upgraded copy of it; the file stays as it was"
        )
        old = os.umask(0o077)  # the copy holds every memory: owner-only
        try:
            con.execute("VACUUM INTO ?", (str(copy),))
        finally:
            os.umask(old)
        writer, _ = db.connect(copy, writer=True)
        try:
            migrations.migrate(writer)  # no snapshot of a copy that goes after the copy
        finally:
            writer.close()
        return copy
    finally:
        con.close()


def _copy(
    lite: Any,
    info: str,
    workspace: str,
    cfg: Config,
    dry_run: bool,
    replace_notes: bool,
    say: Say,
) -> dict[str, Any]:
    import psycopg
    from pgvector.psycopg import register_vector

    from memoryd.store import entries
    from memoryd.store.pg import claim, schema, session
    from memoryd.store.pg import copy as pc

    def progress(label: str, n: int, total: int) -> None:
        if total >= pc.BATCH:
            say(f"  {label}: {n}/{total} ({time.monotonic() - started:.1f} s)")

    started = time.monotonic()
    source = pc.sqlite_counts(lite)
    mem_ids, chunk_ids, doc_ids = pc.sqlite_entry_ids(lite)
    high = entries.id_high_water(lite)
    say(
        f"copying {cfg.db_path} ({source['memories']} memories, {source['documents']} notes "
        f"in {source['chunks']} chunks, {source['vectors']} vectors) to PostgreSQL as "
        f"workspace {workspace}" + (" (dry run)" if dry_run else "")
    )
    try:
        raw = psycopg.connect(info, connect_timeout=max(1, round(cfg.store.connect_timeout_s)))
    except psycopg.OperationalError as exc:
        raise StoreError(f"cannot connect to PostgreSQL: {_first_line(exc)}") from None
    try:
        # A daemon on PostgreSQL may run with this workspace id (another machine, or this one
        # before its data_dir moved): the copy would write under it, and --replace-notes
        # remove the index it reads. Its lock (store/pg/claim.py) is held for the copy.
        if not claim.take(raw, workspace):
            raise claim.refuse(raw, workspace)
        raw.commit()  # (the lock is the session's; the copy's transaction starts below)
        # One transaction for everything, the schema too: a failed or dry run leaves no trace.
        raw.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        raw.execute("SELECT set_config('memoryd.workspace', %s, true)", [workspace])
        session.long_work(raw, local=True)  # (whatever the DBA set: the copy takes its time)
        schema.migrate(raw)
        register_vector(raw)
        done = pc.marker(raw, workspace)
        if done is not None:
            raw.rollback()
            return {
                "already": True,
                "copied_at": done.get("at"),
                "source": done.get("source"),
                "target": done.get("target"),
                "workspace": workspace,
                "dry_run": dry_run,
            }
        if replace_notes:
            dropped = pc.drop_workspace_notes(raw, workspace)
            if dropped:
                say(f"  removed {dropped} notes of workspace {workspace} from the target")
        _refuse_conflicts(raw, lite, workspace, mem_ids)
        before = {t: pc.table_count(raw, t) for t in ("history", "access_log")}
        target = _write(raw, lite, workspace, high, mem_ids, chunk_ids, doc_ids, progress)
        for t in ("history", "access_log"):
            target[t] = pc.table_count(raw, t) - before[t]
        differ = {k: (source[k], target[k]) for k in source if source[k] != target.get(k)}
        if differ:
            raise CountMismatch(
                "the copy does not match the SQLite store ("
                + ", ".join(f"{k}: {a} in SQLite, {b} copied" for k, (a, b) in differ.items())
                + "); nothing was written"
            )
        now = time.time()
        raw.execute(
            "INSERT INTO workspaces(id, label, first_seen, last_seen) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (id) DO NOTHING",
            [workspace, f"{socket.gethostname()}:{cfg.workspace}", now, now],
        )
        pc.set_marker(
            raw,
            workspace,
            {"at": now, "from": str(cfg.db_path), "source": source, "target": target},
        )
        if dry_run:
            raw.rollback()
        else:
            raw.commit()
    except psycopg.errors.DiskFull as exc:  # -32013, as for every write without room
        from memoryd.store.pg.conn import disk_full

        raise disk_full(exc) from None
    except psycopg.OperationalError as exc:
        raise StoreError(
            f"PostgreSQL failed during the copy ({_first_line(exc)}); nothing was written"
        ) from None
    except psycopg.Error as exc:
        if isinstance(exc, psycopg.errors.InsufficientPrivilege):
            raise Refused(
                f"PostgreSQL refused ({_first_line(exc)}); the copy needs a role that may "
                "create tables, e.g. the database owner (docs/team.md); nothing was written"
            ) from None
        raise StoreError(f"the copy failed ({_first_line(exc)}); nothing was written") from None
    finally:
        raw.close()
    return {
        "already": False,
        "workspace": workspace,
        "dry_run": dry_run,
        "source": source,
        "target": target,
        "seconds": round(time.monotonic() - started, 2),
    }


def _refuse_conflicts(raw: Any, lite: Any, workspace: str, mem_ids: list[int]) -> None:
    from memoryd.store.pg import copy as pc

    fix = (
        "; nothing was written. Move the memories with `memoryctl export` / `memoryctl import` "
        "instead (known texts are skipped, taken ids renumbered; docs/team.md)"
    )
    # This workspace's own notes first: a daemon on PostgreSQL that indexed them may hold the
    # very ids of the memories below, and --replace-notes, not export/import, is the way out.
    held = pc.workspace_documents(raw, workspace)
    if held:
        raise Refused(
            f"the target already holds {held} notes of workspace {workspace} (a daemon on "
            f"PostgreSQL indexed it); nothing was written. They are an index of this "
            "machine's files: --replace-notes removes them and copies the SQLite store's index "
            "(and its vectors) in their place"
        )
    taken = pc.taken_ids(raw, "all_entries", mem_ids)
    if taken:
        raise Refused(f"the target already holds entries with ids of memories here: {taken}{fix}")
    same = pc.taken_memory_texts(raw, pc.sqlite_memory_keys(lite))
    if same:
        raise Refused(f"the target already holds memories with the same texts (ids {same}){fix}")


def _write(
    raw: Any,
    lite: Any,
    workspace: str,
    high: int,
    mem_ids: list[int],
    chunk_ids: list[int],
    doc_ids: list[int],
    progress: Callable[[str, int, int], None],
) -> dict[str, int]:
    from memoryd.store.pg import copy as pc
    from memoryd.store.pg import notes as pgnotes
    from memoryd.store.pg.conn import PgConnection

    # Ids the SQLite store handed out are never handed out by the target either, and a daemon
    # adding rows meanwhile gets ids above those copied here.
    pc.raise_sequence(raw, "all_entries", high)
    pc.raise_sequence(raw, "all_documents", max(doc_ids, default=0))
    keep = not pc.taken_ids(raw, "all_entries", chunk_ids) and not pc.taken_ids(
        raw, "all_documents", doc_ids
    )
    if keep:
        chunk_map = {i: i for i in chunk_ids}
        doc_map = {i: i for i in doc_ids}
    else:
        chunk_map = dict(
            zip(chunk_ids, pc.new_ids(raw, "all_entries", len(chunk_ids)), strict=True)
        )
        doc_map = dict(zip(doc_ids, pc.new_ids(raw, "all_documents", len(doc_ids)), strict=True))

    def entry(i: Any) -> Any:
        return chunk_map.get(int(i), i) if i is not None else None

    pc.copy_rows(
        raw,
        "all_documents",
        (*pc.DOCUMENT_COLUMNS, "workspace"),
        (
            (doc_map[int(r[0])], *r[1:], workspace)
            for r in pc.sqlite_rows(lite, "documents", pc.DOCUMENT_COLUMNS)
        ),
        label="documents",
        total=len(doc_ids),
        progress=progress,
    )
    doc_at = pc.ENTRY_COLUMNS.index("document_id")

    def entry_row(r: tuple[Any, ...]) -> tuple[Any, ...]:
        row = list(r)
        is_chunk = row[1] == "chunk"
        row[0] = entry(row[0]) if is_chunk else row[0]
        if row[doc_at] is not None:
            row[doc_at] = doc_map[int(row[doc_at])]
        return (*row, workspace if is_chunk else None)

    pc.copy_rows(
        raw,
        "all_entries",
        (*pc.ENTRY_COLUMNS, "workspace"),
        (entry_row(r) for r in pc.sqlite_rows(lite, "entries", pc.ENTRY_COLUMNS)),
        label="entries",
        total=len(mem_ids) + len(chunk_ids),
        progress=progress,
    )
    pc.raise_sequence(raw, "all_entries", high)
    pc.raise_sequence(raw, "all_documents", max(doc_ids, default=0))
    # each note's whole-note row, from the chunks as copied (store/pg/notes.py)
    pgnotes.fill(PgConnection(raw), workspace)
    for table, cols in (
        ("triggers", ("entry_id", "phrase", "norm")),
        ("history", ("entry_id", "ts", "field", "old", "new")),
        ("access_log", ("entry_id", "ts", "query", "rank")),
    ):
        pc.copy_rows(
            raw,
            table,
            cols,
            ((entry(r[0]), *r[1:]) for r in pc.sqlite_rows(lite, table, cols)),
            label=table,
            total=pc.count_rows(lite, f"SELECT count(*) FROM {table}"),
            progress=progress,
        )
    pc.copy_rows(
        raw,
        "links",
        pc.LINK_COLUMNS,
        ((doc_map[int(r[0])], *r[1:]) for r in pc.sqlite_rows(lite, "links", pc.LINK_COLUMNS)),
        label="links",
        total=pc.count_rows(lite, "SELECT count(*) FROM links"),
        progress=progress,
    )
    pc.copy_rows(
        raw,
        "log_marks",
        pc.LOG_MARK_COLUMNS,
        (
            (doc_map[int(r[0])], *r[1:])
            for r in pc.sqlite_rows(lite, "log_marks", pc.LOG_MARK_COLUMNS)
        ),
        label="log marks",
        total=pc.count_rows(lite, "SELECT count(*) FROM log_marks"),
        progress=progress,
    )
    pc.copy_rows(  # the notes whose entities were still to be read: read on PostgreSQL
        raw,
        "entity_pending",
        pc.PENDING_COLUMNS,
        (
            (doc_map[int(r[0])], *r[1:])
            for r in pc.sqlite_rows(lite, "entity_pending", pc.PENDING_COLUMNS, order="seq")
        ),
        label="entities pending",
        total=pc.count_rows(lite, "SELECT count(*) FROM entity_pending"),
        progress=progress,
    )
    entity_map = pc.copy_entities(raw, lite)
    pc.copy_rows(
        raw,
        "mentions",
        pc.MENTION_COLUMNS,
        (
            (entity_map[int(r[0])], entry(r[1]), *r[2:])
            for r in pc.sqlite_rows(lite, "mentions", pc.MENTION_COLUMNS, "entry_id, entity_id")
        ),
        label="mentions",
        total=pc.count_rows(lite, "SELECT count(*) FROM mentions"),
        progress=progress,
    )
    pc.recount_entities(raw)
    vectors = 0
    for m in pc.sqlite_models(lite):
        try:
            target_id, _ = pc.target_model(raw, m)
        except ValueError as exc:
            raise Refused(f"{exc}; nothing was written") from None
        total = pc.count_rows(
            lite, "SELECT count(*) FROM embeddings WHERE model_id = ?", (m["id"],)
        )
        vectors += pc.copy_vectors(
            raw,
            target_id,
            int(m["dim"]),
            pc.sqlite_vectors(lite, m["id"]),
            total=total,
            progress=progress,
        )
    new_entry_ids = [*mem_ids, *chunk_map.values()]
    out = pc.target_counts(raw, workspace, mem_ids, new_entry_ids)
    out["vectors"] = vectors
    out["renumbered_notes"] = int(not keep)
    return out


def report_lines(result: dict[str, Any]) -> list[str]:
    """The counts on both sides, one line each, for the terminal."""
    if result.get("already"):
        at = result.get("copied_at")
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at)) if at else "earlier"
        return [
            f"this store was copied into the target already ({when}, workspace "
            f"{result['workspace']}); nothing to do"
        ]
    src, dst = result["source"], result["target"]
    lines = [f"{'':12} {'SQLite':>10} {'PostgreSQL':>10}"]
    for key in (*CHECKED, "vectors"):
        lines.append(f"{key:12} {src[key]:>10} {dst.get(key, 0):>10}")
    if dst.get("renumbered_notes"):
        lines.append(
            "notes and chunks got new ids (the target held their ids); memories kept theirs"
        )
    if result["dry_run"]:
        lines.append(f"dry run: the counts match; nothing was written ({result['seconds']} s)")
    else:
        lines.append(
            f"copied in {result['seconds']} s; the counts match. Next: set "
            '[store] backend = "postgres" and the dsn in the config, then start memoryd. '
            "The SQLite file stays as it was."
        )
    return lines


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


__all__ = ["CountMismatch", "MemorydError", "migrate", "report_lines", "target_config"]
