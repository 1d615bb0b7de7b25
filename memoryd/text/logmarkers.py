"""The marker that ends each line the daily log writes (memory/dailylog.py): `<!-- m:ID:HASH8 -->`,
the memory's id and the first 8 hex digits of the SHA-256 of the line's text. The indexer keeps,
for every file it reads, the memory ids its markers name (store/logmarks.py), so a memory's
lines are found wherever a person moved or copied a log file."""

from __future__ import annotations

import re

# a marker that ends a line (spaces or tabs may follow it)
MARKER_IDS = re.compile(r"<!-- m:(?P<id>\d+):[0-9a-f]{8} -->[ \t]*(?=[\r\n]|\Z)")


def marker_ids(text: str) -> set[int]:
    """The memory ids of the daily-log markers that end lines of `text`."""
    if "<!-- m:" not in text:
        return set()
    return {int(m.group("id")) for m in MARKER_IDS.finditer(text)}
