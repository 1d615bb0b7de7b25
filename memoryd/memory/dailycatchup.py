"""The daily-log lines of memories a run stored but was killed before it wrote (kill -9, a power
cut, a crash between the store's commit and the line's append). The next start, told that the
previous run did not stop cleanly and when it was last seen running (core/crashlog: its start,
then every half minute), reads the log files of the memories stored from two minutes before that
(and the files the index says hold their markers) and appends the line of each that no file
names, in order. Only after such a stop, and only for its last minutes: a line a person deleted
from a log by hand is not written back at every start. Not on PostgreSQL, a store other daemons
may share (each writes its own memories' lines, and nothing says whose a memory is)."""

from __future__ import annotations

from typing import Any

from memoryd.core.logsetup import get_logger
from memoryd.memory.dailylog import DailyLog
from memoryd.memory.logfile import read_regular
from memoryd.store import logmarks
from memoryd.store.protocol import Store
from memoryd.text.logmarkers import marker_ids

log = get_logger("memoryd.memory.dailylog")

MARGIN_S = 120.0  # the mark is touched every 30 s (serve/daemon._keep_paths)


def catch_up(daily: DailyLog, store: Store, since: float, started: float) -> int:
    """Append the lines of the memories the previous run (last seen at `since`) stored and
    never wrote; not those of this run (started at `started`), whose adds write their own."""
    if not daily.settings.enabled or daily.team:
        return 0
    ids = store.read(lambda con: logmarks.memories_between(con, since - MARGIN_S, started))
    records: list[dict[str, Any]] = [
        r for r in (daily.current({"id": i}) for i in ids) if r is not None
    ]
    if not records:
        return 0
    named: set[int] = set()
    days = {daily.path_for(daily.when(r)) for r in records}
    for path in [*sorted(days), *daily.marked({int(r["id"]) for r in records})]:
        try:
            named |= marker_ids(read_regular(path)[0])
        except OSError:  # no such day's file yet, or not a regular file: names nothing
            continue
    missing = [r for r in records if int(r["id"]) not in named and not daily.is_waiting(r["id"])]
    for record in missing:
        daily.append(record)
    if missing:
        log.warning(
            "daily log lines written late: the previous run stopped before it wrote them",
            ids=[int(r["id"]) for r in missing][:50],
            count=len(missing),
        )
    return len(missing)
