"""The adds under way of a daemon on a shared store: the id of each memory it is storing, from its
transaction (before the commit) until its daily-log line is written, kept in a journal beside
dailylog-waiting.json (DATA_DIR/dailylog-adds), so that a kill between the store's commit and the
line has the next start write the line if the store holds the memory, and drop the id if it
does not (the commit never came: memory/dailycatchup.py). On a store other daemons share
(PostgreSQL), nothing else says which of the memories stored in a killed run's last minutes were
this daemon's.

An add is the hot path, so the journal costs it two appends of a few bytes (`+ID`, `-ID`), each
one write to a file opened O_APPEND: a kill never tears one. Not fsynced: a power cut may lose
the ids of the adds then under way, which loses their lines (their memories are stored), never
anything else. Replacing a file (rename, truncate) on ext4 flushes its data at once (7 ms, the
cost of an fsync), so the journal is only appended to; it is written anew from the ids under way
(or removed, when none is) once it passes MAX_BYTES. A line torn by a power cut is skipped.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from memoryd.core.fsutil import atomic_write
from memoryd.core.logsetup import get_logger

log = get_logger("memoryd.memory.dailylog")

FILE_NAME = "dailylog-adds"
MAX_BYTES = 64 * 1024  # ~6,000 adds between rewrites
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)


class AddsUnderWay:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path  # None: not kept (no data folder)
        self.ids: set[int] = set()  # under way now, and those `before` until caught up
        self.before: set[int] = set()  # an earlier run's, read at start
        self._lock = threading.Lock()
        self._refused = False

    def read(self) -> set[int]:
        """At start: the ids an earlier run left under way (kept until `done`)."""
        if self.path is None:
            return set()
        found: set[int] = set()
        try:
            text = self.path.read_text(encoding="ascii", errors="replace")
        except OSError:  # none: every add of the earlier run was done
            return set()
        for line in text.splitlines():
            sign, digits = line[:1], line[1:]
            if digits.isdigit() and sign in "+-":
                (found.add if sign == "+" else found.discard)(int(digits))
        with self._lock:
            self.before = found
            self.ids |= found
            if not found:
                with contextlib.suppress(OSError):
                    self.path.unlink()
        if found:
            log.info("daily log: adds under way before the restart", ids=sorted(found)[:50])
        return found

    def storing(self, entry_id: int) -> None:
        with self._lock:
            self.ids.add(entry_id)
            self._append(f"+{entry_id}\n")

    def done(self, ids: set[int]) -> None:
        """These adds' lines are written (or wait in the daily log's queue), or their memories
        are not the store's: no longer under way."""
        with self._lock:
            ids = ids & self.ids
            if ids:
                self.ids -= ids
                self.before -= ids
                self._append("".join(f"-{i}\n" for i in sorted(ids)))

    def _append(self, text: str) -> None:
        if self.path is None:
            return
        try:
            fd = os.open(self.path, _FLAGS | getattr(os, "O_CLOEXEC", 0), 0o600)
            try:
                os.write(fd, text.encode("ascii"))
                size = os.fstat(fd).st_size
            finally:
                os.close(fd)
            if size > MAX_BYTES:
                self._rewrite()
        except OSError as exc:  # a full disk: the add goes on; its line is written as ever
            if not self._refused:
                log.warning("daily log: an add under way not kept", error=str(exc))
            self._refused = True
            return
        self._refused = False

    def _rewrite(self) -> None:
        assert self.path is not None
        if self.ids:
            data = "".join(f"+{i}\n" for i in sorted(self.ids)).encode("ascii")
            atomic_write(self.path, data, 0o600)
        else:
            self.path.unlink(missing_ok=True)
