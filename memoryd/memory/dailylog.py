"""The daily log: every memory added through the API, one line in <workspace>/daily/YYYY-MM-DD.md
(folder and file name from `[dailylog] folder` and `filename`, e.g. Obsidian's daily-note layout).

No feedback loop, by design:
  The log files live in the workspace and are indexed like any other file, so what a person
  writes or fixes in them is searchable. But each line the daemon writes ends with a marker,
  `<!-- m:ID:HASH8 -->` (invisible when the markdown is rendered), where HASH8 is the first 8 hex
  digits of the SHA-256 of the memory's content. `preprocess` (the indexer's hook,
  memory/dailyindex.py) blanks every line whose marker hash still matches the text on that line,
  if the store has its memory: those lines are memories already in the index, and indexing them
  again would show each memory twice. A line a person edited no longer matches its hash, a line a
  person wrote has no marker, and a line of a memory the store does not have (deleted, then
  brought back by `git checkout`; lost with a store restored from an older copy) is the only copy
  of its text: all are indexed as normal text; an import of those memories has their files read
  again. The state lives in the file itself, so it survives restarts; appends never rewrite the
  file (O_APPEND, one write per line), so they cannot clobber an edit made between two appends,
  and whatever an editor that rewrites the file leaves behind is what the next index sees.
  Blanked lines keep their place, so chunk line numbers stay true.
  An append is all or nothing (memory/logfile.py: a line a full disk cut short is taken back);
  a line the system refuses waits, with every later one behind it, and is written by itself
  once the disk takes it (the add's answer and `status` say so meanwhile).
  A person's editor decides the file's form, and an append follows it: a last line saved
  without a line end gets one first (the memory's line never joins the person's, where a
  delete would take their text with it), CRLF or CR files get CRLF or CR, and a UTF-16/32 file
  (Notepad's "Unicode") stays in its encoding; every reader decodes it so.

Forget means forget:
  Deleting a memory removes its lines (found by their marker id, edited or not) from the log
  file holding them and from the conflict copies a sync tool made beside it (files whose names
  hold its name), else from any log file, and from every file of the workspace that the index
  says holds them (store/logmarks.py: a log moved out of the log folder, renamed or copied,
  whose unedited lines are blanked there as in the log, so each memory is found once). Changing
  a memory rewrites its own lines wherever they are; a line a person
  edited stays as they wrote it, with the memory's new line under it. Such a rewrite is atomic
  (a temp file in the same folder, fsync, rename) under the same lock as appends; the caller
  then re-indexes the file at once, so the watcher's later event finds the new hash already
  stored (our own write, nothing to do).
  Lines go through the secret guard's redaction whatever the secrets mode: with allow_secrets a
  credential is stored in the database, never in a plain-text file of the workspace.
  The log is written only to regular files inside the workspace: never through a symlink
  (a planted `daily/<date>.md -> ~/.bashrc` would have memories appended to it), never by
  opening a FIFO (which blocks), never into a symlinked folder leading elsewhere.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from memoryd.core import oserrors
from memoryd.core.fsutil import SHARED_DIR, make_dirs, within
from memoryd.core.logsetup import get_logger
from memoryd.core.swap import Changed
from memoryd.core.timeutil import parse_time
from memoryd.memory import dailyadds, dailyindex
from memoryd.memory.logfile import (
    append_line,
    load_ids,
    read_regular,
    relpath,
    replace_text,
    save_ids,
    siblings,
)
from memoryd.memory.loglines import hash8, one_line, rewritten_lines
from memoryd.text import secretguard
from memoryd.text.logmarkers import marker_ids

log = get_logger("memoryd.memory.dailylog")


class DailyLogSettings(Protocol):
    """Read-only: the frozen config section (memoryd.core.config) satisfies it."""

    @property
    def enabled(self) -> bool: ...

    @property
    def folder(self) -> str: ...

    @property
    def filename(
        self,
    ) -> str: ...  # strftime pattern, e.g. "%Y-%m-%d.md" (Obsidian's daily-note default)

    @property
    def line_format(self) -> str: ...

    @property
    def header(self) -> str: ...


MAX_WAITING = 10_000  # lines kept while the system refuses them; the memories are stored


class DailyLog:
    def __init__(
        self,
        workspace: Path,
        settings: DailyLogSettings,
        *,
        clock: Callable[[], float] = time.time,
        elsewhere: Callable[[set[int] | None], Iterable[str]] | None = None,
        known: Callable[[set[int]], set[int]] | None = None,
    ) -> None:
        self.workspace = Path(workspace)
        self.settings = settings
        self.clock = clock
        # elsewhere(ids) -> workspace paths of the indexed files holding the marker of one of
        # these memories (None: of any; a log file moved or copied out of the log folder)
        self.elsewhere = elsewhere
        # known(ids) -> those that are memories now (None: all are): a line whose memory the
        # store does not have is indexed as text (see preprocess)
        self.known = known
        # Held for every change of a log file; memoryd.notes.notes takes it too (App passes it), so
        # a note.append and a daily-log line never race on the same file.
        self.lock = threading.Lock()
        # memories whose line the system refused (a full disk, the workspace folder gone while
        # a drive is not mounted), bounded; in order; under _queue. `current` reads a memory as
        # stored now (App: None once deleted) when its line is written late
        self.waiting: list[dict[str, Any]] = []
        self._queue = threading.RLock()
        self.current: Callable[[dict[str, Any]], dict[str, Any] | None] = lambda r: r
        self.refusals = oserrors.Refusals("daily log")
        self.waiting_file: Path | None = None  # App: <data_dir>/dailylog-waiting.json
        # rewrites the system refused (id -> the memory, None: deleted) and their files
        self.unrewritten: dict[int, dict[str, Any] | None] = {}
        self.unrewritten_paths: dict[Path, set[int]] = {}  # (the ids whose lines each holds)
        self.unrenumbered: dict[int, int] = {}  # an import's renumbering refused: old -> new id
        self._changing: set[int] = set()  # memories changing now (changing): kept for a restart
        # adds stored (or about to be) whose line is not written yet (storing; read_waiting
        # gives it its journal beside waiting_file, and dailycatchup writes an earlier run's)
        self.adds = dailyadds.AddsUnderWay()
        # App: dailyrenumber.renumber_again (which builds on this module), to do those again
        self.renumber_again: Callable[..., Any] | None = None
        self._refusals_seen = 0
        # forget_gone (team: a database other daemons share): the logged ids stored at the
        # last look; each file's ids by its stat
        self.team = False
        self._stored_before: set[int] = set()
        self._gone_lock = threading.Lock()  # one look at a time (start-up, the listener)
        self._named: dict[Path, tuple[tuple[int, int], set[int]]] = {}

    def folder(self) -> Path:
        return self.workspace / self.settings.folder

    def path_for(self, when: datetime) -> Path:
        """The log file of a local date: <workspace>/<folder>/<strftime(filename)>."""
        name = when.strftime(getattr(self.settings, "filename", "%Y-%m-%d.md"))
        return self.folder() / name

    def is_log_file(self, relpath: str) -> bool:
        folder = self.settings.folder.strip("/")
        if folder in ("", "."):  # logs at the top of the workspace (Obsidian's default)
            return relpath.endswith(".md")
        return relpath.startswith(folder + "/") and relpath.endswith(".md")

    def render(self, record: dict[str, Any], when: datetime) -> str:
        """The line for a memory (without newline), ending with its marker."""
        body = self.settings.line_format.format(
            time=when.strftime("%H:%M"),
            date=when.strftime("%Y-%m-%d"),
            id=record["id"],
            type=record.get("type") or "",
            content=one_line(record["content"]),
            tags="".join(f" #{t}" for t in record.get("tags") or []),
            source=record.get("source") or "",
            importance=record.get("importance") or "",
            namespace=record.get("namespace") or "",
        )
        # The whole line is redacted, not field by field: every placeholder (type, namespace,
        # and any the format adds later) reaches the file only through the secret guard.
        body = one_line(secretguard.redact(body))
        return f"{body} <!-- m:{record['id']}:{hash8(body)} -->"

    def append(self, record: dict[str, Any]) -> Path | None:
        """Append one memory to the log of its local creation date. Never raises. A line the
        system refuses for a reason that passes (no room, a read-only file system, a
        permission, the workspace folder gone: oserrors.PASSING) waits in `waiting`, and every
        line after it waits behind it, in order; each new line, the daemon's look every 30 s
        and the workspace folder's return write them (append_waiting)."""
        if not self.settings.enabled:
            return None
        with self._queue:
            try:
                if not self.waiting:
                    return self._append(record)
                self._wait(record)
                self.append_waiting()
                return None if self.is_waiting(record["id"]) else self.path_for(self.when(record))
            finally:
                self.adds.done({int(record["id"])})

    def storing(self, entry_id: int) -> None:
        """An add's id, in its transaction before the commit, kept until its line is written
        (append): a kill between the two has the next start write the line if the store holds
        the memory (memory/dailyadds.py). On a shared store (team) only, where nothing else
        says which memories this daemon stored (SQLite: dailycatchup reads the last minutes')."""
        if self.team and self.settings.enabled:
            self.adds.storing(int(entry_id))

    def _append(self, record: dict[str, Any]) -> Path | None:
        when = self.when(record)
        path = self.path_for(when)
        line = self.render(record, when)
        try:
            with self.lock:
                if not os.path.isdir(self.workspace):  # not made again: a drive not mounted
                    raise FileNotFoundError(errno.ENOENT, "the workspace folder is missing")
                self._check_inside(path.parent)
                make_dirs(path.parent, SHARED_DIR)
                self._check_inside(path.parent)
                header = self.settings.header.format(
                    date=f"{when:%Y-%m-%d}", **dailyindex.NO_FIELDS
                )
                append_line(path, line, header)
        except OSError as exc:
            log.error("daily log append failed", path=str(path), error=str(exc))
            if exc.errno in oserrors.PASSING:
                where = self.workspace if exc.errno == errno.ENOENT else path
                self.refusals.refused(f"{where}: {exc.strerror or exc}")
                self._wait(record)
            return None
        self.refusals.worked()
        if self.team:  # stored, and logged: see forget_gone
            self._stored_before.add(int(record["id"]))
        return path

    @contextlib.contextmanager
    def changing(self, ids: list[int]) -> Iterator[None]:
        """Held around a memory update's or removal's transaction and the rewrite of its lines
        after it: the ids are kept in `waiting_file` (fsynced) until the rewrite is done, so a
        kill -9 or a power cut between the two has the next start rewrite them as the memories
        are then (read_waiting): a memory forgotten in the store never keeps its line in a log
        file, where it would be indexed again as a person's text and found."""
        if not self.settings.enabled or self.waiting_file is None or not ids:
            yield
            return
        with self._queue:
            self._changing.update(ids)
            self._keep_waiting()
        try:
            yield
        finally:
            with self._queue:
                self._changing.difference_update(ids)
                self._keep_waiting()

    def _wait(self, record: dict[str, Any]) -> None:
        if len(self.waiting) >= MAX_WAITING:
            return log.error("daily log line dropped: too many waiting", id=record.get("id"))
        self.waiting.append(record)
        self._keep_waiting()

    def _keep_waiting(self) -> None:
        """The ids of the waiting lines and rewrites in `waiting_file` (data_dir), so that a
        restart (or a crash) before the disk takes them still does them (read_waiting)."""
        if self.waiting_file is not None:
            ids = [int(r["id"]) for r in self.waiting]
            redo = sorted({*self.unrewritten, *self._changing})
            save_ids(self.waiting_file, ids, redo, self.unrenumbered)

    def rewrites_waiting(self) -> int:
        """How many memories' rewrites of the log wait for the disk (a delete's, an update's,
        an import's renumbering)."""
        return len(self.unrewritten) + len(self.unrenumbered)

    @property
    def pending(self) -> bool:  # lines or rewrites wait for the disk (append_waiting does them)
        return bool(self.waiting or self.unrewritten or self.unrenumbered)

    def read_waiting(self) -> None:
        """What an earlier run could not write (waiting_file), read when the daemon is built,
        before a change can write the file again (a client's retry at once after a restart):
        kept in it until done. append_waiting writes and rewrites those lines as `current`
        reads each memory then (a rewrite of one gone since: its lines are forgotten), and
        dailycatchup the lines of the adds it kept."""
        ids, redo, moved = load_ids(self.waiting_file)
        with self._queue:
            self.waiting.extend({"id": i} for i in ids if not self.is_waiting(i))
            self.unrewritten.update({i: {"id": i} for i in redo})
            self.unrenumbered.update(moved)
        if self.waiting_file is not None:
            self.adds.path = self.waiting_file.parent / dailyadds.FILE_NAME
            self.adds.read()

    def unforgotten(self, ids: set[int] | None = None) -> list[dict[str, Any]]:
        """The log files still holding lines of deleted memories (or the old lines of `ids`),
        whose rewrite the system refused (a full disk): `still_in` of a delete or an update;
        rewritten with the waiting lines."""
        ids = {i for i, r in self.unrewritten.items() if r is None} if ids is None else ids
        ws, paths = self.workspace, sorted(p for p, h in self.unrewritten_paths.items() if h & ids)
        return [{"kind": "daily_log", "name": relpath(p, ws), "path": str(p)} for p in paths]

    def is_waiting(self, entry_id: object) -> bool:  # its line is among those waiting
        return any(r.get("id") == entry_id for r in self.waiting)

    def append_waiting(
        self, current: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
    ) -> int:
        """Write the waiting lines in order, each memory as `current` (else self.current) reads
        it now (None: deleted, no line), to the first refused again; then the rewrites."""
        read = current or self.current
        written = 0
        with self._queue:
            waiting, self.waiting = self.waiting, []
            for i, record in enumerate(waiting):
                now = read(record)
                if now is not None and self._append(now) is not None:
                    written += 1
                elif self.waiting:  # refused again: the rest wait behind it, in order
                    self.waiting.extend(waiting[i + 1 :])
                    break
            redo, self.unrewritten, self.unrewritten_paths = self.unrewritten, {}, {}
            if redo:  # the rewrites (a delete, an update) refused: now, as the memories are
                again = {i: None if r is None else read(r) for i, r in redo.items()}
                self._rewrite(again, [r for r in again.values() if r is not None])
            moved, self.unrenumbered = self.unrenumbered, {}
            if moved:  # an import's renumbering refused: now, as the memories read
                if self.renumber_again is None:  # (App sets it) nothing to do it: kept
                    self.unrenumbered = moved
                else:
                    self.renumber_again(self, moved, read)
            if not self.pending:
                self.refusals.worked()
            self._keep_waiting()
        if written:
            log.info("daily log lines written late", lines=written, waiting=len(self.waiting))
        return written

    def _check_inside(self, folder: Path) -> None:
        """The log's folder must resolve inside the workspace: a symlinked `daily/` (or year
        folder) leading elsewhere would have the daemon write memories into any file there."""
        real, root = os.path.realpath(folder), os.path.realpath(self.workspace)
        if not within(real, root):
            raise OSError(errno.EXDEV, "leads outside the workspace through a symlink", str(folder))

    def when(self, record: dict[str, Any]) -> datetime:
        """A memory's creation time in local time: its log is the day the user lived."""
        created = record.get("created_at")
        ts = parse_time(created) if isinstance(created, str) else self.clock()
        return datetime.fromtimestamp(ts).astimezone()

    def forget(self, records: list[dict[str, Any]]) -> list[Path]:
        """Remove the lines of these memories from the log files; returns the files changed."""
        return self._rewrite({int(r["id"]): None for r in records}, records)

    def forget_unknown(self, known: Callable[[set[int]], set[int]]) -> list[Path]:
        """Remove every line whose memory no longer exists (`known(ids)` returns those that
        do): after a checkpoint restore, memories added since the checkpoint are gone from the
        store, and their lines, which no delete can reach any more, must go too."""
        if not self.settings.enabled:  # (no log folder: the logs moved out are read still)
            return []
        seen: set[int] = set()
        for _, ids in self._ids_by_file():
            seen |= ids
        gone = seen - known(seen)
        return self._rewrite(dict.fromkeys(gone), []) if gone else []

    def files_naming(self, ids: set[int]) -> list[Path]:
        """The log files with a line of one of these memories."""
        if not ids or not self.settings.enabled:
            return []
        return [path for path, named in self._ids_by_file() if named & ids]

    def forget_gone(self, stored: Callable[[set[int]], set[int]]) -> list[Path]:
        """Remove the lines of memories deleted elsewhere (another daemon of a shared database
        deleted them, and its hooks rewrite its own workspace's log only): ids this log names
        that were memories at the last look (`stored(ids)` -> those stored now) and are not
        now. An id never seen stored (a line of an older store) is never touched; the first
        look only takes stock. Files are read again only when their stat changed."""
        if not self.settings.enabled:
            return []
        with self._gone_lock:
            gone = self._gone(stored)
        return self._rewrite(dict.fromkeys(gone), []) if gone else []

    def _gone(self, stored: Callable[[set[int]], set[int]]) -> set[int]:
        named: set[int] = set()
        seen: dict[Path, tuple[tuple[int, int], set[int]]] = {}
        for _, ids in self._ids_by_file(self._named, seen):
            named |= ids
        self._named = seen
        now = stored(named)
        gone = (self._stored_before & named) - now
        self._stored_before = now
        return gone

    def highest_id(self) -> int:
        """The highest memory id a line of the log names (0 for none)."""
        return max((max(ids, default=0) for _, ids in self._ids_by_file()), default=0)

    def _ids_by_file(
        self,
        before: dict[Path, tuple[tuple[int, int], set[int]]] | None = None,
        seen: dict[Path, tuple[tuple[int, int], set[int]]] | None = None,
    ) -> Iterator[tuple[Path, set[int]]]:
        """Each log file with the memory ids its lines name (a file that cannot be read as a
        log file left out), then each file elsewhere that the index says holds markers (a log
        moved out of the log folder). With `before` (path -> (stat, ids) of an earlier look), a
        file whose mtime and size are unchanged is not read again; `seen` gets this look's."""
        for path in self.files_holding(None):
            try:
                self._check_inside(path.parent)
                if before is None:
                    ids = marker_ids(read_regular(path)[0])
                else:
                    st = path.lstat()
                    key = (st.st_mtime_ns, st.st_size)
                    cached = before.get(path)
                    ids = (
                        cached[1]
                        if cached and cached[0] == key
                        else marker_ids(read_regular(path)[0])
                    )
                    if seen is not None:
                        seen[path] = (key, ids)
            except OSError:
                continue
            yield path, ids

    def files_holding(self, ids: set[int] | None) -> list[Path]:
        """Every log file, then the files the index says hold a marker of `ids` (None: any)."""
        files = list(self._log_files(exclude=set()))
        return [*files, *sorted(set(self.marked(ids)).difference(files))]

    def rewrite(self, record: dict[str, Any]) -> list[Path]:
        """Replace a memory's line with its current text (after an update or a redaction)."""
        return self._rewrite({int(record["id"]): record}, [record])

    def _rewrite(
        self, changes: dict[int, dict[str, Any] | None], records: list[dict[str, Any]]
    ) -> list[Path]:
        refused = len(self.unrewritten_paths), self._refusals_seen
        folder = self.folder()
        try:
            self._check_inside(folder)
        except OSError as exc:
            log.error("daily log rewrite refused", path=str(folder), error=str(exc))
            return []
        # The file each memory was appended to (by the configured `filename`, which may add
        # folders), then every other log file under the folder, at any depth (a line is found
        # wherever the layout put it), then every file the index says holds their markers (a
        # log moved out of the log folder, renamed, copied; a log folder gone: these alone).
        here = folder.is_dir()
        likely = {self.path_for(self.when(r)) for r in records} if here else set()
        changed: list[Path] = []
        pending, done = set(changes) if here else set(), set[Path]()
        with self.lock:
            for path in self._candidates(likely):
                if not pending:
                    break
                done.add(path)
                hit = self._rewrite_file(path, changes, changed)
                pending.difference_update(hit)
                # a sync tool's conflict copy beside a file holding the lines holds them too
                for sibling in siblings(path) if hit else ():
                    if sibling not in done:
                        done.add(sibling)
                        self._rewrite_file(sibling, changes, changed)
            for path in self.marked(set(changes)):
                if path not in done:
                    self._rewrite_file(path, changes, changed)
            if (len(self.unrewritten_paths), self._refusals_seen) != refused:
                self.unrewritten.update(changes)  # tried again with the waiting lines
                self._keep_waiting()
        return changed

    def _rewrite_file(
        self, path: Path, changes: dict[int, dict[str, Any] | None], changed: list[Path]
    ) -> set[int]:
        """Apply `changes` to one file (atomically); the ids whose lines it held."""
        return self.edit_file(
            path, lambda text: rewritten_lines(text, changes, self._line_for), changed
        )

    def edit_file(
        self,
        path: Path,
        edit: Callable[[str], tuple[list[str], set[int]]],
        changed: list[Path],
    ) -> set[int]:
        """`edit` (text -> lines after, ids hit) applied atomically to one log file holding
        markers, in its encoding, over the bytes it was read from: a person's save in between
        (their editor, by rename or in place) is read again, never overwritten; `changed` gets
        the path when it was written."""
        for _ in range(5):
            try:
                self._check_inside(path.parent)
                text, encoding, raw = read_regular(path)
            except OSError:  # gone, a symlink, a FIFO, outside: not a log file to rewrite
                return set()
            if "<!-- m:" not in text:
                return set()
            lines, hit = edit(text)
            if not hit:
                return hit
            try:
                replace_text(path, "".join(lines), encoding, based_on=raw)
            except Changed:
                continue
            except OSError as exc:
                log.error("daily log rewrite failed", path=str(path), error=str(exc))
                if exc.errno in oserrors.PASSING:  # a full disk: done again once it has room
                    self.unrewritten_paths.setdefault(path, set()).update(hit)
                    self._refusals_seen += 1
                    self.refusals.refused(f"{path}: {exc.strerror or exc}")
                return hit
            changed.append(path)
            return hit
        log.warning("daily log kept changing during its rewrite; it waits", path=str(path))
        self.unrewritten_paths.setdefault(path, set()).update(hit)  # (as a full disk's)
        return hit

    def _line_for(self, record: dict[str, Any]) -> str:
        return self.render(record, self.when(record))

    def _candidates(self, likely: set[Path]) -> Iterator[Path]:
        """Files that may hold the lines: the likely ones, then every log file."""
        yield from sorted(likely)
        yield from self._log_files(exclude=likely)

    def marked(self, ids: set[int] | None) -> list[Path]:
        """The workspace files the index says hold a marker of one of `ids` (None: any)."""
        if self.elsewhere is None:
            return []
        try:
            found = sorted(set(self.elsewhere(ids)))
        except Exception as exc:  # the index is a hint: a failure never blocks a delete
            log.warning("daily log lines elsewhere not looked up", error=str(exc))
            return []
        return [self.workspace / rel for rel in found]

    def _log_files(self, exclude: set[Path]) -> Iterator[Path]:
        """Every .md file under the log folder (not following symlinked folders), in order."""
        folder = self.folder()
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if name.endswith(".md") and path not in exclude:
                    rel = path.relative_to(self.workspace).as_posix()
                    if self.is_log_file(rel):
                        yield path

    def preprocess(self, relpath: str, text: str) -> str:
        """The indexer's hook: this log's own lines blanked (memory/dailyindex.py)."""
        return dailyindex.preprocess(
            relpath,
            text,
            in_folder=self.is_log_file(relpath),
            header=self.settings.header,
            known=self.known,
        )
