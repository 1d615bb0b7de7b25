"""Which workspace paths are notes (indexer.include/exclude gitignore patterns, hidden parts,
editors' and sync tools' own files) and how a path is shown; pure, shared by the indexer and
the note.* methods."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol

from pathspec import GitIgnoreSpec


class PathRules(Protocol):
    """Read-only: the frozen config section (memoryd.core.config) satisfies it."""

    @property
    def include(self) -> list[str] | tuple[str, ...]: ...

    @property
    def exclude(self) -> list[str] | tuple[str, ...]: ...

    @property
    def skip_hidden(self) -> bool: ...

    @property
    def skip_tool_files(self) -> bool: ...


# The files editors and sync tools keep beside a note while they save it, lock it, fetch it or
# keep an older copy of it (indexer.skip_tool_files): never notes, whatever `include` says.
# A sync tool's conflict copy (`x (conflicted copy).md`, `x.sync-conflict-*.md`) is not one of
# them: it holds the edits found nowhere else (docs/configuration.md says how to exclude them).
_TOOL_NAME = re.compile(
    r"(?:"
    r".*~"  # the previous version: vim, emacs, nano, rsync --backup
    r"|#.*#"  # emacs auto-save
    r"|\.#.*"  # emacs lock (a symlink to nowhere)
    r"|\..*\.sw[a-p]"  # vim swap
    r"|.*___jb_(?:tmp|old)___"  # JetBrains' safe write
    r"|\.~lock\..*#"  # LibreOffice lock
    r"|~\$.*"  # Microsoft Office lock
    r"|\.syncthing\..*\.tmp|~syncthing~.*\.tmp"  # Syncthing's download in progress
    r"|\..*\.icloud"  # iCloud's placeholder of a file not downloaded
    r"|\._.*"  # macOS's AppleDouble file beside each note on a non-Mac disk or share
    r")\Z",
    re.DOTALL,
)
# old versions (Syncthing), caches and downloads in progress (Dropbox, Google Drive)
_TOOL_FOLDERS = frozenset(
    {".stversions", ".dropbox.cache", ".tmp.drivedownload", ".tmp.driveupload"}
)
# Logseq's page backups, Resilio Sync's old versions
_TOOL_SUBFOLDERS = (("logseq", "bak"), ("logseq", "version-files"), (".sync", "Archive"))


# how a tool file's name ends or starts, or a folder of theirs shows in a path: a cheap first
# look, so that the walk of a large workspace pays almost nothing for the rule
_TOOL_ENDS = ("~", "#", "___", ".tmp", ".icloud", *(f".sw{c}" for c in "abcdefghijklmnop"))
_TOOL_STARTS = ("~$", ".#", "._")
_TOOL_IN_PATH = re.compile(r"\.stversions/|\.dropbox\.cache/|\.tmp\.drive|logseq/|\.sync/")


def tool_file(rel: str) -> bool:
    """True for a workspace path an editor or a sync tool keeps for itself (_TOOL_NAME), or
    one under their folders of old versions and downloads (Syncthing's `.stversions/`,
    Logseq's `logseq/bak/` and `logseq/version-files/`, Resilio's `.sync/Archive/`, Dropbox's
    `.dropbox.cache/`, Google Drive's `.tmp.drivedownload/` and `.tmp.driveupload/`)."""
    folder, _, name = rel.rpartition("/")
    if (name.endswith(_TOOL_ENDS) or name.startswith(_TOOL_STARTS)) and _TOOL_NAME.match(name):
        return True
    if not _TOOL_IN_PATH.search(rel):
        return False
    folders = folder.split("/")
    if any(p in _TOOL_FOLDERS for p in folders):
        return True
    return any(
        folders[i : i + 2] == list(pair) for pair in _TOOL_SUBFOLDERS for i in range(len(folders))
    )


@lru_cache(maxsize=64)
def _spec(patterns: tuple[str, ...]) -> GitIgnoreSpec:
    return GitIgnoreSpec.from_lines(patterns)


def matches(patterns: Sequence[str], rel: str) -> bool:
    """True when the patterns, read as the lines of a .gitignore file at the workspace's top
    (pathspec's GitIgnoreSpec), match the '/'-separated relative path: ** spans folders, * ? and
    [...] don't, a pattern without an inner '/' matches in any folder, one naming a folder covers
    everything under it, and a later `!pattern` takes a match back (even inside a folder an
    earlier pattern matched: memoryd tests each file, it never skips a folder unread)."""
    return _spec(tuple(patterns)).match_file(rel)


def path_accepted(rel: str, s: PathRules) -> bool:
    """True for a workspace-relative path memoryd indexes as a note."""
    parts = rel.split("/")
    if s.skip_hidden and any(p.startswith(".") for p in parts):
        return False
    if s.skip_tool_files and tool_file(rel):
        return False
    return not matches(s.exclude, rel) and matches(s.include, rel)


def valid_name(rel: str) -> bool:
    """False for a path that holds bytes that are not UTF-8 (os.fsdecode turns those into lone
    surrogates, which SQLite, JSON and the log cannot carry)."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(rel: str) -> str:
    """A path for log lines and messages, with undecodable bytes shown as \\xNN."""
    try:
        return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return rel.encode("utf-8", "backslashreplace").decode("utf-8")
