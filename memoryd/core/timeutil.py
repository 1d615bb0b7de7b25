"""Time helpers: unix seconds inside, ISO 8601 UTC at the edges, human durations in config/API.

One grammar for every `since`/`until` (parse_bound), the same as memoryctl's (ctl/when.py):
a duration back from now (`90m`, `24h`, `7d`, `2w`, `30s`), an ISO 8601 date or date-time
(naive = UTC), or unix seconds. A bare date as `until` means the end of that day: `until`
is exclusive (created before it), so `--until 2024-03-05` includes all of March 5th.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

from memoryd.core.errors import InvalidInput, describe

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$", re.IGNORECASE)
_AGO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$", re.IGNORECASE)
_DATE = re.compile(r"^\s*\d{4}-\d{2}-\d{2}\s*$")
BOUND_HINT = "a duration back from now (90m, 24h, 7d), an ISO 8601 date or time, or unix seconds"


def now() -> float:
    return time.time()


# The text of times met lately (issue 23.3): a search renders ~20 records of three or four times
# each, which repeat (a note's chunks share theirs), and strftime costs ~2.5 us a time.
_ISO_SEEN: dict[float, str] = {}
_ISO_SEEN_MAX = 4096


def iso(ts: float | None) -> str | None:
    """Unix seconds -> '2026-11-22T16:40:00Z' (None stays None)."""
    if ts is None:
        return None
    text = _ISO_SEEN.get(ts)
    if text is None:
        text = datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
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


def parse_time(value: object, *, what: str = "time") -> float:
    """ISO 8601 date/datetime (naive = UTC), or unix seconds -> unix seconds."""
    if isinstance(value, bool):
        raise InvalidInput(
            f"{what}: expected an ISO 8601 date or unix seconds, got {describe(value)}"
        )
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            pass
        else:
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=UTC)
            return dt.timestamp()
    raise InvalidInput(
        f"{what}: expected an ISO 8601 date like 2026-11-22 or 2026-11-22T10:00:00Z, "
        f"got {describe(value)}"
    )


def parse_bound(
    value: object, *, what: str, until: bool = False, now: float | None = None
) -> float:
    """A `since` or `until` value (the grammar above) -> unix seconds. A bare date as `until`
    is the start of the next day (the bound is exclusive). Raises InvalidInput, describing the
    accepted forms without repeating the value."""
    if isinstance(value, str) and (m := _AGO.match(value)):
        seconds = float(m.group(1)) * _UNITS[m.group(2).lower()]
        return (time.time() if now is None else now) - seconds
    if isinstance(value, str) and _DATE.match(value):
        try:
            day = datetime.fromisoformat(value.strip()).replace(tzinfo=UTC)
        except ValueError:
            raise InvalidInput(f"{what}: not a valid date; expected {BOUND_HINT}") from None
        return (day + timedelta(days=1) if until else day).timestamp()
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    try:
        return parse_time(value, what=what)
    except InvalidInput:
        raise InvalidInput(f"{what}: expected {BOUND_HINT}") from None
