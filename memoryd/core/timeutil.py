"""Time helpers: unix seconds inside, ISO 8601 UTC at the edges, human durations in config/API."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

from memoryd.core.errors import InvalidInput

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$", re.IGNORECASE)


def now() -> float:
    return time.time()


def iso(ts: float | None) -> str | None:
    """Unix seconds -> '2026-11-22T16:40:00Z' (None stays None)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_duration(value: object, *, what: str = "duration") -> float:
    """'90m', '7d', '1.5h', '500ms', 30 (seconds) -> seconds. Raises InvalidInput."""
    if isinstance(value, bool):
        raise InvalidInput(f"{what}: expected a duration like '30s', '5m', '7d', got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        seconds = float(m.group(1)) * _UNITS[(m.group(2) or "s").lower()]
    else:
        raise InvalidInput(f"{what}: expected a duration like '30s', '5m', '7d', got {value!r}")
    if seconds <= 0:
        raise InvalidInput(f"{what}: must be positive, got {value!r}")
    return seconds


def parse_time(value: object, *, what: str = "time") -> float:
    """ISO 8601 date/datetime (naive = UTC), or unix seconds -> unix seconds."""
    if isinstance(value, bool):
        raise InvalidInput(f"{what}: expected an ISO 8601 date or unix seconds, got {value!r}")
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
        f"{what}: expected an ISO 8601 date like 2026-11-22 or 2026-11-22T10:00:00Z, got {value!r}"
    )
