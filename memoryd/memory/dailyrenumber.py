"""The daily log after an import that renumbered memories (memoryd.memory.transfer).

An export imported on a second machine beside a copy of the first one's vault (a sync tool, git)
brings the log lines of those memories along, each ending with its marker `<!-- m:ID:HASH8 -->`.
A memory whose id was taken there (by that machine's notes or memories) gets a new one, and its
lines named the old id: another entry of this store, or another memory. They were then indexed
as text (each such memory found twice, once as a line of the log), and worse, the other memory's
delete or update took or rewrote them (dailylog.py: a line is found by its marker id). Each line
of a renumbered memory that still holds its text (as written, or redacted as the log writes it)
names its new id instead; the rest of the line, and its hash, stay as they were. A line a person
edited away from that text is left as it is: there is no telling whose it is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from memoryd.memory import dailylog as dl
from memoryd.memory.loglines import MARKER_TAIL, one_line
from memoryd.text import secretguard


def renumber(daily: dl.DailyLog, moved: list[tuple[int, int, str]]) -> list[Path]:
    """Rename the markers of renumbered memories ((old id, new id, content) each) in every log
    file, wherever it lies; the files changed (to be indexed again). A line is a renumbered
    memory's by its text, so where the old id is another memory of this store, that memory's
    own lines keep it. A file the disk refuses to rewrite (a full disk) is done again with the
    log's waiting lines (DailyLog.append_waiting, kept across a restart), as a delete's is."""
    if not moved or not daily.settings.enabled:
        return []
    by_old: dict[int, tuple[int, tuple[str, ...]]] = {}
    for old, new, content in moved:
        text = one_line(content)
        by_old.setdefault(old, (new, (text, one_line(secretguard.redact(text)))))
    changed: list[Path] = []

    def renamed(text: str) -> tuple[list[str], set[int]]:
        lines: list[str] = []
        hit: set[int] = set()
        for line in text.splitlines(keepends=True):
            body = line.rstrip("\r\n")
            m = MARKER_TAIL.search(body)
            got = by_old.get(int(m.group("id"))) if m else None
            if m is not None and got is not None and any(t in body[: m.start()] for t in got[1]):
                line = (
                    body[: m.start()] + f"<!-- m:{got[0]}:{m.group('hash')} -->" + line[len(body) :]
                )
                hit.add(int(m.group("id")))
            lines.append(line)
        return lines, hit

    with daily.lock:
        refused = daily._refusals_seen
        for path in daily.files_holding(set(by_old)):  # wherever a log lies (store/logmarks.py)
            daily.edit_file(path, renamed, changed)
        if daily._refusals_seen != refused:  # all of it again later: a line done is not found
            daily.unrenumbered.update({old: new for old, (new, _) in by_old.items()})
            daily._keep_waiting()
    return changed


def renumber_again(
    daily: dl.DailyLog,
    moved: dict[int, int],
    read: Callable[[dict[str, Any]], dict[str, Any] | None],
) -> list[Path]:
    """The renumbering a full disk refused (old id -> new), each memory as `read` reads it now
    (one deleted since: its lines are left as they are)."""
    triples = []
    for old, new in moved.items():
        record = read({"id": new})
        if record is not None and record.get("content") is not None:
            triples.append((old, new, str(record["content"])))
    return renumber(daily, triples)
