"""The names of the workspace's files that are not notes (attachments: images, PDFs, canvases),
so that `![[Engelbart.jpg]]` resolves like Obsidian does. Names only: no such file is opened,
read or hashed. A whole-workspace scan fills the set, a folder scan replaces what lies under
that folder, and the watcher keeps it current between scans (event)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from memoryd.core.logsetup import get_logger
from memoryd.text.pathrules import PathRules, matches, path_accepted, tool_file, valid_name

log = get_logger("memoryd.index.attachments")

MAX_FILES = 500_000  # names kept (about 100 bytes each); links to the rest stay unresolved


class OtherFiles:
    """A thread-safe set of workspace-relative paths of files that are not notes."""

    def __init__(
        self,
        root: Path,
        rules: Callable[[], PathRules],
        is_private: Callable[[str], bool],
        relpath: Callable[[Path], str | None],
    ) -> None:
        self.root = root
        self.rules = rules  # the indexer's settings now (they change on SIGHUP)
        self.is_private = is_private
        self.relpath = relpath
        self._paths: set[str] = set()
        self._lock = threading.Lock()
        self._warned = False

    def snapshot(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._paths)

    def wanted(self, rel: str) -> bool:
        """True for a path a link may name as an attachment: not a note, not hidden (with
        indexer.skip_hidden), not an editor's or sync tool's own file (indexer.skip_tool_files), not
        excluded, not memoryd's own, a UTF-8 name."""
        s = self.rules()
        if not valid_name(rel) or path_accepted(rel, s):
            return False
        if s.skip_hidden and any(p.startswith(".") for p in rel.split("/")):
            return False
        if s.skip_tool_files and tool_file(rel):
            return False
        if matches(s.exclude, rel):
            return False
        return not self.is_private(rel)

    def replace(self, under: str, found: Iterable[str]) -> None:
        """What a scan of `under` ("." for the whole workspace) found."""
        prefix = "" if under in (".", "") else under.rstrip("/") + "/"
        with self._lock:
            if prefix:
                kept = {f for f in self._paths if not f.startswith(prefix)}
                self._paths = kept | set(found)
            else:
                self._paths = set(found)
            self._cap()

    def event(self, path: Path) -> None:
        """The watcher saw `path` (a file or a folder) appear, change or vanish."""
        rel = self.relpath(Path(path))
        if rel is None or rel in (".", ""):
            return
        full = self.root / rel
        try:
            is_dir = full.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            self.replace(rel, self._walk(full))
            return
        present = os.path.lexists(full) and self.wanted(rel)
        with self._lock:
            if present:
                self._paths.add(rel)
                self._cap()
                return
            self._paths.discard(rel)
            prefix = rel + "/"  # a folder that vanished
            if any(f.startswith(prefix) for f in self._paths):
                self._paths = {f for f in self._paths if not f.startswith(prefix)}

    def _walk(self, folder: Path) -> set[str]:
        found: set[str] = set()
        skip_hidden = self.rules().skip_hidden
        for dirpath, dirnames, filenames in os.walk(folder):
            base = self.relpath(Path(dirpath))
            if base is None:
                continue
            if skip_hidden:
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                rel = name if base == "." else f"{base}/{name}"
                if self.wanted(rel):
                    found.add(rel)
        return found

    def _cap(self) -> None:
        if len(self._paths) <= MAX_FILES:
            return
        if not self._warned:
            self._warned = True
            log.warning(
                "too many files that are not notes: links to the rest stay unresolved",
                kept=MAX_FILES,
            )
        self._paths = set(sorted(self._paths)[:MAX_FILES])
