"""The daily log's line grammar: the marker `<!-- m:ID:HASH8 -->` that ends a memory's line,
whether a line is still as the daemon wrote it, and a log file's lines after some memories
changed or went (memory/dailylog.py writes the files; memory/dailyrenumber.py renames markers)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

# a memory's marker at the end of its line, searched from its literal start: linear on any line
# (a pattern anchored at the line's start backtracks quadratically on a line of many spaces)
MARKER_TAIL = re.compile(r"<!-- m:(?P<id>\d+):(?P<hash>[0-9a-f]{8}) -->\s*$")


def hash8(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def one_line(text: str) -> str:
    return " ⏎ ".join(part.strip() for part in text.strip().splitlines() if part.strip())


def own_line(body: str, m: re.Match[str]) -> bool:
    """Whether a line (without its line end) is as the daemon wrote it: its marker's hash
    is that of the text before it (a line a person edited is not)."""
    return hash8(body[: m.start()].strip()) == m.group("hash")


def rewritten_lines(
    text: str,
    changes: dict[int, dict[str, Any] | None],
    line_for: Callable[[dict[str, Any]], str],
) -> tuple[list[str], set[int]]:
    """The lines of a log file (each with its own line end) after `changes` (id -> the
    memory now, None: forgotten), and the ids whose lines were found. Lines split at every
    line end (\n, \r\n, a lone \r as old Mac editors write): a file of CR-only lines is not one
    line whose removal would take the whole file with it. A forgotten memory's lines go,
    edited or not (forget means forget); an updated memory's own line is written anew, but a
    line a person edited stays as they wrote it, with the memory's new line under it."""
    lines: list[str] = []
    hit: set[int] = set()
    edited: dict[int, int] = {}  # id -> index in `lines` after its last edited line
    written: set[int] = set()
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        m = MARKER_TAIL.search(body)
        entry_id = int(m.group("id")) if m else None
        if m is None or entry_id is None or entry_id not in changes:
            lines.append(line)
            continue
        hit.add(entry_id)
        new = changes[entry_id]
        if new is None:
            continue
        ending = line[len(body) :]
        if not own_line(body, m):
            lines.append(line if ending else line + "\n")
            edited[entry_id] = len(lines)
            continue
        lines.append(line_for(new) + ending)
        written.add(entry_id)
    for entry_id, at in sorted(edited.items(), key=lambda kv: -kv[1]):
        new = changes[entry_id]
        if entry_id not in written and new is not None:
            prev = lines[at - 1]
            ending = prev[len(prev.rstrip("\r\n")) :]
            lines.insert(at, line_for(new) + ending)
    return lines, hit
