"""Which workspace paths are notes (indexer.include/exclude gitignore patterns, hidden parts)
and how a path is shown; pure, shared by the indexer and the note.* methods."""

from __future__ import annotations

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
