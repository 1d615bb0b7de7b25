"""The daily log: every memory added through the API, one line in <workspace>/daily/YYYY-MM-DD.md
(folder and file name from `[dailylog] folder` and `filename`, e.g. Obsidian's daily-note layout).

No feedback loop, by design:
  The log files live in the workspace and are indexed like any other file, so what a person
  writes or fixes in them is searchable. But each line the daemon writes ends with a marker,
  `<!-- m:ID:HASH8 -->` (invisible when the markdown is rendered), where HASH8 is the first 8 hex
  digits of the SHA-256 of the memory's content. `preprocess` (the indexer's hook) blanks every
  line whose marker hash still matches the text on that line: those lines are memories already
  in the index, and indexing them again would show each memory twice. A line a person edited no
  longer matches its hash, and a line a person wrote has no marker: both are indexed as normal
  text. The state lives in the file itself, so it survives restarts; appends never rewrite the
  file (O_APPEND, one write per line), so they cannot clobber an edit made between two appends,
  and whatever an editor that rewrites the file leaves behind is what the next index sees.
  Blanked lines keep their place, so chunk line numbers stay true.

Forget means forget:
  Deleting a memory removes its line (found by its marker id, edited or not), and changing its
  text rewrites the line. Such a rewrite is atomic (a temp file in the same folder, fsync,
  rename) under the same lock as appends; the caller then re-indexes the file at once, so the
  watcher's later event finds the new hash already stored (our own write, nothing to do).
  Lines go through the secret guard's redaction whatever the secrets mode: with allow_secrets a
  credential is stored in the database, never in a plain-text file of the workspace.
  The log is written only to regular files inside the workspace: never through a symlink
  (a planted `daily/<date>.md -> ~/.bashrc` would have memories appended to it), never by
  opening a FIFO (which blocks), never into a symlinked folder leading elsewhere.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from memoryd.core.fsutil import SHARED_DIR, atomic_write, make_dirs, within
from memoryd.core.logsetup import get_logger
from memoryd.core.timeutil import parse_time
from memoryd.text import secretguard

log = get_logger("memoryd.memory.dailylog")

# a memory's marker at the end of its line, searched from its literal start: linear on any line
# (a pattern anchored at the line's start backtracks quadratically on a line of many spaces)
_MARKER_TAIL = re.compile(r"<!-- m:(?P<id>\d+):(?P<hash>[0-9a-f]{8}) -->\s*$")


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


_MARKER_IDS = re.compile(r"<!-- m:(?P<id>\d+):[0-9a-f]{8} -->[ \t]*(?=[\r\n]|\Z)")


MAX_WAITING = 10_000  # lines kept for a workspace folder that is gone; the memories are stored


def marker_ids(text: str) -> set[int]:
    """The memory ids of the daily-log markers that end lines of `text`."""
    return {int(m.group("id")) for m in _MARKER_IDS.finditer(text)}


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _open_regular(path: Path, flags: int, mode: int = 0o600) -> int:
    """A descriptor of a regular file at `path`, never through a final symlink and never
    blocking (a FIFO planted under a log file's name would hang an open without O_NONBLOCK);
    OSError for anything else."""
    fd = os.open(path, flags | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC, mode)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_regular(path: Path) -> str:
    fd = _open_regular(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        return f.read().decode("utf-8", errors="surrogateescape")


def _atomic_write(path: Path, text: str) -> None:
    """fsutil.atomic_write of the text; keeps the file's mode."""
    mode = path.stat().st_mode & 0o777
    atomic_write(path, text.encode("utf-8", errors="surrogateescape"), mode)


def _hash8(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def one_line(text: str) -> str:
    return " ⏎ ".join(part.strip() for part in text.strip().splitlines() if part.strip())


class DailyLog:
    def __init__(
        self,
        workspace: Path,
        settings: DailyLogSettings,
        *,
        clock: Callable[[], float] = time.time,
        elsewhere: Callable[[set[int]], Iterable[str]] | None = None,
    ) -> None:
        self.workspace = Path(workspace)
        self.settings = settings
        self.clock = clock
        # elsewhere(ids) -> workspace paths outside the log folder whose indexed text holds
        # the marker of one of these memories (a log file moved or copied elsewhere)
        self.elsewhere = elsewhere
        # Held for every change of a log file; memoryd.notes.notes takes it too (App passes it), so
        # a note.append and a daily-log line never race on the same file.
        self.lock = threading.Lock()
        # memories added while the workspace folder was gone (a drive not mounted), bounded
        self.waiting: list[dict[str, Any]] = []

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
        return f"{body} <!-- m:{record['id']}:{_hash8(body)} -->"

    def append(self, record: dict[str, Any]) -> Path | None:
        """Append one memory to the log of its local creation date. Never raises."""
        if not self.settings.enabled:
            return None
        when = self._when(record)
        path = self.path_for(when)
        line = self.render(record, when) + "\n"
        try:
            with self.lock:
                if not os.path.isdir(self.workspace):  # not made again: a drive not mounted
                    raise FileNotFoundError(errno.ENOENT, "the workspace folder is missing")
                self._check_inside(path.parent)
                make_dirs(path.parent, SHARED_DIR)
                self._check_inside(path.parent)
                fd = _open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                try:
                    if os.fstat(fd).st_size == 0:
                        header = self.settings.header.format(
                            date=f"{when:%Y-%m-%d}",
                            time="",
                            id="",
                            type="",
                            content="",
                            tags="",
                            source="",
                            importance="",
                            namespace="",
                        )
                        line = f"{header}\n\n{line}"
                    os.write(fd, line.encode("utf-8"))
                    os.fsync(fd)
                finally:
                    os.close(fd)
        except OSError as exc:
            log.error("daily log append failed", path=str(path), error=str(exc))
            if not os.path.isdir(self.workspace) and len(self.waiting) < MAX_WAITING:
                self.waiting.append(record)  # written when the workspace folder is back
            return None
        return path

    def append_waiting(
        self, current: Callable[[dict[str, Any]], dict[str, Any] | None] = lambda r: r
    ) -> int:
        """The lines of the memories added while the workspace folder was gone, now it is
        back (in the order they were added), each as `current` reads it now (None: deleted
        meanwhile, no line; updated: its new text); returns how many were written."""
        waiting, self.waiting = self.waiting, []
        now = (current(record) for record in waiting)
        return sum(self.append(record) is not None for record in now if record is not None)

    def _check_inside(self, folder: Path) -> None:
        """The log's folder must resolve inside the workspace: a symlinked `daily/` (or year
        folder) leading elsewhere would have the daemon write memories into any file there."""
        real, root = os.path.realpath(folder), os.path.realpath(self.workspace)
        if not within(real, root):
            raise OSError(errno.EXDEV, "leads outside the workspace through a symlink", str(folder))

    def _when(self, record: dict[str, Any]) -> datetime:
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
        if not self.settings.enabled or not self.folder().is_dir():
            return []
        seen: set[int] = set()
        for path in self._log_files(exclude=set()):
            try:
                self._check_inside(path.parent)
                text = _read_regular(path)
            except OSError:
                continue
            seen.update(marker_ids(text))
        gone = seen - known(seen)
        return self._rewrite(dict.fromkeys(gone), []) if gone else []

    def highest_id(self) -> int:
        """The highest memory id a line of the log names (0 for none)."""
        if not self.folder().is_dir():
            return 0
        top = 0
        for path in self._log_files(exclude=set()):
            try:
                self._check_inside(path.parent)
                top = max(top, *marker_ids(_read_regular(path)), 0)
            except OSError:
                continue
        return top

    def rewrite(self, record: dict[str, Any]) -> list[Path]:
        """Replace a memory's line with its current text (after an update or a redaction)."""
        return self._rewrite({int(record["id"]): record}, [record])

    def _rewrite(
        self, changes: dict[int, dict[str, Any] | None], records: list[dict[str, Any]]
    ) -> list[Path]:
        folder = self.folder()
        if not folder.is_dir():
            return []
        try:
            self._check_inside(folder)
        except OSError as exc:
            log.error("daily log rewrite refused", path=str(folder), error=str(exc))
            return []
        # The file each memory was appended to (by the configured `filename`, which may add
        # folders), then every other log file under the folder, at any depth: a line is found
        # wherever the layout put it, also after `filename` changed.
        likely = {self.path_for(self._when(r)) for r in records}
        changed: list[Path] = []
        pending = set(changes)
        with self.lock:
            for path in self._candidates(likely, pending):
                if not pending:
                    break
                try:
                    self._check_inside(path.parent)
                    text = _read_regular(path)
                except OSError:  # gone, a symlink, a FIFO, outside: not a log file to rewrite
                    continue
                if "<!-- m:" not in text:
                    continue
                # Lines split at every line ending (\n, \r\n, a lone \r as old Mac editors
                # write) and kept with their endings: a file of CR-only lines is not one line
                # whose removal would take the whole file with it.
                lines, hit = [], False
                for line in text.splitlines(keepends=True):
                    body = line.rstrip("\r\n")
                    m = _MARKER_TAIL.search(body)
                    entry_id = int(m.group("id")) if m else None
                    if entry_id is not None and entry_id in changes:
                        hit = True
                        pending.discard(entry_id)
                        new = changes[entry_id]
                        if new is not None:
                            lines.append(self.render(new, self._when(new)) + line[len(body) :])
                        continue
                    lines.append(line)
                if hit:
                    try:
                        _atomic_write(path, "".join(lines))
                    except OSError as exc:
                        log.error("daily log rewrite failed", path=str(path), error=str(exc))
                        continue
                    changed.append(path)
        return changed

    def _candidates(self, likely: set[Path], pending: set[int]) -> Iterator[Path]:
        """Files that may hold the lines: the likely ones, every log file, then (while lines
        are still missing) files elsewhere in the workspace that the index says hold them."""
        seen = set(likely)
        yield from sorted(likely)
        for path in self._log_files(exclude=likely):
            seen.add(path)
            yield path
        if pending and self.elsewhere is not None:
            try:
                found = sorted(set(self.elsewhere(set(pending))))
            except Exception as exc:  # the index is a hint: a failure never blocks a delete
                log.warning("daily log lines elsewhere not looked up", error=str(exc))
                return
            for rel in found:
                path = self.workspace / rel
                if path not in seen:
                    yield path

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
        """Blank the log's own heading and the daemon's own, unedited lines (see the module
        docstring): neither is worth a chunk of its own."""
        if not self.is_log_file(relpath):
            return text
        header = self._header_pattern()
        out = []
        for line in text.split("\n"):
            m = _MARKER_TAIL.search(line) if "<!-- m:" in line else None
            own = m is not None and _hash8(line[: m.start()].strip()) == m.group("hash")
            is_header = header is not None and header.fullmatch(line.strip()) is not None
            out.append("" if own or is_header else line)
        return "\n".join(out)

    def _header_pattern(self) -> re.Pattern[str] | None:
        """The configured header with any date in place of {date}, as a regex."""
        fields = dict.fromkeys(
            ("time", "id", "type", "content", "tags", "source", "importance", "namespace"), ""
        )
        try:
            sample = self.settings.header.format(date="\x00", **fields).strip()
        except (KeyError, IndexError, ValueError):
            return None
        if not sample:
            return None
        return re.compile(re.escape(sample).replace("\x00", r"\d{4}-\d{2}-\d{2}"))
