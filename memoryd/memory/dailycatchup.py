"""The daily-log lines of memories a run stored but was killed before it wrote (kill -9, a power
cut, a crash between the store's commit and the line's append).

Two ways to know which memories those are. On a store of its own (SQLite), the next start, told
that the previous run did not stop cleanly and when it was last seen running (core/crashlog:
its start, then every half minute), reads the log files of the memories stored from two minutes
before that (and the files the index says hold their markers) and appends the line of each that
no file names, in order. Only after such a stop, and only for its last minutes: a line a person
deleted from a log by hand is not written back at every start. On a shared store (PostgreSQL),
whose memories of those minutes may be other daemons' (each writes its own lines), the add
itself kept its id in its transaction, before the commit, until its line was written
(memory/dailyadds.py): the ids an earlier run left so that the store holds and no log names get
their line; those it does not hold (the commit never came) are dropped."""

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


def catch_up(daily: DailyLog, store: Store, since: float | None, started: float) -> int:
    """Append the lines of the memories the previous run stored and never wrote: the adds it
    kept (daily.adds.before) and, after an unclean stop (`since`: when it was last seen) on a
    store of its own, those it stored in its last minutes; not this run's adds (since
    `started`), which write their own."""
    before = set(daily.adds.before)
    ids = sorted(before)
    if since is not None and not daily.team:
        ids += store.read(lambda con: logmarks.memories_between(con, since - MARGIN_S, started))
    written = _write_unnamed(daily, sorted(set(ids))) if daily.settings.enabled else 0
    daily.adds.done(before)  # written, or not the store's (a look that failed: kept)
    return written


def _write_unnamed(daily: DailyLog, ids: list[int]) -> int:
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
