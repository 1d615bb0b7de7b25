"""Which workspace paths are notes (indexer.include/exclude globs, hidden parts) and how a
path is shown; pure, shared by the indexer and the note.* methods."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Protocol


class PathRules(Protocol):
    include: list[str] | tuple[str, ...]
    exclude: list[str] | tuple[str, ...]
    skip_hidden: bool


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """A gitignore-like glob over '/'-separated relative paths: ** spans folders, * and ? don't.

    A pattern without '/' matches the file name in any folder ("*.md" == "**/*.md").
    """
    pat = pattern.strip().lstrip("/")
    if "/" not in pat:
        pat = "**/" + pat
    out, i = [], 0
    while i < len(pat):
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif pat[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pat[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pat[i]))
            i += 1
    body = "".join(out)
    # A pattern naming a folder ("drafts/**" or "drafts") also covers everything under it.
    return re.compile(rf"^{body}(?:/.*)?$")


def path_accepted(rel: str, s: PathRules) -> bool:
    """True for a workspace-relative path memoryd indexes as a note."""
    parts = rel.split("/")
    if s.skip_hidden and any(p.startswith(".") for p in parts):
        return False
    if any(compile_glob(g).match(rel) for g in s.exclude):
        return False
    return any(compile_glob(g).match(rel) for g in s.include)


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
