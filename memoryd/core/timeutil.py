"""Time helpers: unix seconds inside, ISO 8601 UTC at the edges, human durations in config/API.

The one grammar of every time a caller gives (parse_time; parse_bound adds durations), the
same as memoryctl's (ctl/handlers.py `when`): a duration back from now (`90m`, `24h`, `7d`,
`2w`, `30s`; since/until only), an ISO 8601 date (`2026-11-26`, `20261126`, `2026-W48-4`) or
date-time (naive = UTC; `Z` or an offset), a year or a month (`2026`, `2026-11`, as a person
means them: unix second 2026 is half an hour into 1970; as since/until, so is a whole number
from 1000 to 9999, an agent's JSON, while elsewhere a number is unix seconds, as export writes
them), or unix seconds (a number, or a string of one that is not a date). A bare date is
midnight UTC of that day, a year, a month or a week (`2026-W48`) its first day's; as `until`
each means its end: `until` is exclusive (created before it), so `--until 2024-03-05` includes
all of March 5th and `--until 2026` all of 2026.
Times lie between MIN_TIME and MAX_TIME (1970 to 9999, what ISO output shows): `iso` shows any
stored value inside them, and `in_range` brings a note's own dates into them.
"""

from __future__ import annotations

import math
import re
import time
from datetime import UTC, date, datetime

from memoryd.core.errors import InvalidInput, describe

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$", re.IGNORECASE)
_AGO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$", re.IGNORECASE)
_DATE = re.compile(r"^\s*\d{4}-\d{2}-\d{2}\s*$")
_NUMBER = re.compile(r"^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)\s*$")
_WEEK = re.compile(r"^\s*\d{4}-?W\d{2}\s*$")  # a week without its day
_PERIOD = re.compile(r"^\s*(\d{4})(?:-(\d{1,2}))?\s*$")  # a year, or a year and a month
FIRST_YEAR, LAST_YEAR = 1000, 9999  # a whole number between them is a year
MIN_TIME = 0.0  # 1970-01-01T00:00:00Z
MAX_TIME = 253402300799.0  # 9999-12-31T23:59:59Z, the last second ISO 8601 can show
DAY = 86400.0
BOUND_HINT = (  # memoryctl says the same (ctl/handlers.py TIME_GRAMMAR, tests/test_doors.py)
    "a duration back from now (90m, 24h, 7d, 2w), an ISO 8601 date or time, a year (2026) or "
    "month (2026-11), or unix seconds"
)
TIME_HINT = (
    "an ISO 8601 date like 2026-11-22 or 2026-11-22T10:00:00Z, a year (2026) or month "
    "(2026-11), or unix seconds"
)


def now() -> float:
    return time.time()


# The text of times met lately (issue 23.3): a search renders ~20 records of three or four times
# each, which repeat (a note's chunks share theirs), and strftime costs ~2.5 us a time.
_ISO_SEEN: dict[float, str] = {}
_ISO_SEEN_MAX = 4096


def in_range(ts: float) -> float:
    """A time brought into MIN_TIME..MAX_TIME (what the API takes and ISO output shows)."""
    return min(max(ts, MIN_TIME), MAX_TIME)


def iso(ts: float | None) -> str | None:
    """Unix seconds -> '2026-11-22T16:40:00Z' (None stays None). A stored time outside 1970 to
    9999 (a note dated in year 1, an old import's 1e20) shows as the nearest one inside: every
    page that prints a time (a hit, an entity's first and last seen, a job) renders it."""
    if ts is None:
        return None
    text = _ISO_SEEN.get(ts)
    if text is None:
        if math.isnan(ts):
            return None
        text = datetime.fromtimestamp(in_range(ts), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if len(_ISO_SEEN) >= _ISO_SEEN_MAX:
            _ISO_SEEN.clear()
        _ISO_SEEN[ts] = text
    return text


def parse_duration(value: object, *, what: str = "duration") -> float:
    """'90m', '7d', '1.5h', '500ms', 30 (seconds) -> seconds. Raises InvalidInput."""
    if isinstance(value, bool):
        raise InvalidInput(
            f"{what}: expected a duration like '30s', '5m', '7d', got {describe(value)}"
        )
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        seconds = float(m.group(1)) * _UNITS[(m.group(2) or "s").lower()]
    else:
        raise InvalidInput(
            f"{what}: expected a duration like '30s', '5m', '7d', got {describe(value)}"
        )
    if seconds <= 0:
        raise InvalidInput(f"{what}: must be positive, got {describe(value)}")
    return seconds


def _day(text: str) -> float | None:
    """An ISO 8601 date alone (2026-11-26, 20261126, 2026-W48-4) -> its midnight UTC, else
    None (a date that does not exist, 2026-02-30, is None too)."""
    try:
        day = date.fromisoformat(text)
    except ValueError:
        return None
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()


def _period(value: object, until: bool, numbers: bool = False) -> float | None:
    """A year (`2026`; with `numbers`, the number 2026 too) or a month (`2026-11`) -> its first
    midnight UTC, or with `until` the first of the next (9999's end is MAX_TIME + 1); None for
    anything else. A month that does not exist (`2026-13`) raises."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not numbers:
            return None
        if not (value == int(value) and FIRST_YEAR <= value <= LAST_YEAR):
            return None
        year, month = int(value), None
    elif isinstance(value, str) and (m := _PERIOD.match(value)):
        year, month = int(m.group(1)), None if m.group(2) is None else int(m.group(2))
        if year < FIRST_YEAR or (month is not None and not 1 <= month <= 12):
            raise InvalidInput("not a valid date")
    else:
        return None
    if until:
        year, month = (year + 1, 1) if month in (None, 12) else (year, (month or 0) + 1)
        if year > LAST_YEAR:
            return MAX_TIME + 1
    return datetime(year, month or 1, 1, tzinfo=UTC).timestamp()


def parse_iso(value: str) -> float | None:
    """An ISO 8601 date or date-time (naive = UTC, `Z` or an offset) -> unix seconds; None
    for any other text. Dates before year 1 or after 9999 are None; the result is not
    range-checked (in_range, or the callers' checks)."""
    text = value.strip()
    if (day := _day(text)) is not None:
        return day
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return dt.timestamp()
    except (ValueError, OverflowError):  # 2026-02-30; 0001-01-01T00:00+05:00 (before year 1)
        return None


def parse_time(value: object, *, what: str = "time", until: bool = False) -> float:
    """A time (the grammar above, without durations) -> unix seconds. `until`: a bare date is
    the end of that day (the start of the next), a year or month the end of it. Raises
    InvalidInput. A string of digits is a date when it is one (20261126: ISO 8601's basic
    form), a year when it has four (2026), else unix seconds."""
    if isinstance(value, bool):
        raise InvalidInput(f"{what}: expected {TIME_HINT}, got {describe(value)}")
    try:
        period = _period(value, until)
    except InvalidInput:
        raise InvalidInput(f"{what}: not a valid date; expected {TIME_HINT}") from None
    if period is not None:
        return period
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        if (day := _day(value.strip())) is not None:
            # as until, the end of the day, or of the week (2026-W48: Monday to Sunday)
            return day + (7 * DAY if _WEEK.match(value) else DAY) if until else day
        if _NUMBER.match(value):
            return float(value)
        if (ts := parse_iso(value)) is not None:
            return ts
        if _DATE.match(value):
            raise InvalidInput(f"{what}: not a valid date; expected {TIME_HINT}")
    raise InvalidInput(f"{what}: expected {TIME_HINT}, got {describe(value)}")


def parse_bound(
    value: object, *, what: str, until: bool = False, now: float | None = None
) -> float:
    """A `since` or `until` value (the grammar above) -> unix seconds. A bare date as `until`
    is the start of the next day (the bound is exclusive). Raises InvalidInput, describing the
    accepted forms and the value as every param's check shows one (describe)."""
    if isinstance(value, str) and (m := _AGO.match(value)):
        seconds = float(m.group(1)) * _UNITS[m.group(2).lower()]
        return (time.time() if now is None else now) - seconds
    if isinstance(value, int | float) and (year := _period(value, until, True)) is not None:
        return year  # a filter's 2026 is a year (no filter means 1970's first hours)
    try:
        return parse_time(value, what=what, until=until)
    except InvalidInput as exc:
        if "not a valid date" in exc.message:
            raise InvalidInput(f"{what}: not a valid date; expected {BOUND_HINT}") from None
        raise InvalidInput(f"{what}: expected {BOUND_HINT}, got {describe(value)}") from None
