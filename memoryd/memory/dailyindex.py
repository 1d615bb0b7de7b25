"""The daily log's hook into the indexer: the daemon's own, unedited lines of memories the store
has are blanked before a file is chunked (memory/dailylog.py's "No feedback loop")."""

from __future__ import annotations

import re
from collections.abc import Callable

from memoryd.core.logsetup import get_logger
from memoryd.memory.logfile import LINE_ENDS
from memoryd.memory.loglines import MARKER_TAIL, own_line

log = get_logger("memoryd.memory.dailylog")
# the header is a line_format's placeholders but the date: the others are blank in it
NO_FIELDS = dict.fromkeys(
    ("time", "id", "type", "content", "tags", "source", "importance", "namespace"), ""
)


def preprocess(
    relpath: str,
    text: str,
    *,
    in_folder: bool,
    header: str,
    known: Callable[[set[int]], set[int]] | None,
) -> str:
    """Blank the daemon's own, unedited lines of memories the store has (see dailylog's
    docstring), in any file: a log a person moved out of the log folder, renamed or copied
    still holds the memories' lines, and indexing them there would show each memory twice.
    The log's heading goes too, in the log folder and in a file holding such lines. Neither
    is worth a chunk of its own. The line of a memory the store does not have is the only
    copy of its text left (a store restored from an older copy, a log brought back by
    `git checkout`): it is indexed as text, so what the file shows can be found. `in_folder`:
    the file is in the log folder; `header`: the log's; known(ids): those that are memories."""
    if not in_folder and "<!-- m:" not in text:
        return text
    heading = _header_pattern(header)
    # lines and their ends alternate; every line end counts, as the indexer counts them (a
    # file saved with CR-only line ends is not one long line whose marker is nobody's)
    parts = LINE_ENDS.split(text)
    own: dict[int, int] = {}  # index in parts -> memory id
    for i in range(0, len(parts), 2):
        line = parts[i]
        m = MARKER_TAIL.search(line) if "<!-- m:" in line else None
        if m is not None and own_line(line, m):
            own[i] = int(m.group("id"))
        elif heading is not None and heading.fullmatch(line.strip()) is not None:
            parts[i] = ""
    stored = _stored(known, set(own.values()), relpath) if own else set()
    if not in_folder and not stored:
        return text  # a note that holds no line of a memory (a line quoted, edited)
    for i, entry_id in own.items():
        if entry_id in stored:
            parts[i] = ""
    return "".join(parts)


def _stored(known: Callable[[set[int]], set[int]] | None, ids: set[int], relpath: str) -> set[int]:
    """Those of `ids` that are memories now; all of them when that cannot be known (the
    index of a log file never fails for it: as before, the lines are taken as memories')."""
    if known is None:
        return ids
    try:
        return known(ids)
    except Exception as exc:
        log.warning("daily log lines taken as memories'", path=relpath, error=str(exc))
        return ids


def _header_pattern(header: str) -> re.Pattern[str] | None:
    """The configured header with any date in place of {date}, as a regex."""
    try:
        sample = header.format(date="\x00", **NO_FIELDS).strip()
    except (KeyError, IndexError, ValueError):
        return None
    if not sample:
        return None
    return re.compile(re.escape(sample).replace("\x00", r"\d{4}-\d{2}-\d{2}"))
