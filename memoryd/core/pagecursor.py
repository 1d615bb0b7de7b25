"""The cursor of a list that pages (`list`, `note.list`, `entities`): where the next page
starts, as the last item of this one names it, so that entries added or deleted between two
pages neither repeat an entry nor skip one (an offset counts rows, which a write moves).

A `list` cursor is the last memory's creation time and id, `1795765762.9921:12` (the order
is newest first, ties by id); a `note.list` cursor is the last note's path (the order is by
path). An `entities` cursor is the last entity's mention count and key, `42:caroline baker`
(the order is most mentioned first, ties by key). Each is text a client passes back as it got
it, on any door."""

from __future__ import annotations

import math
import re

from memoryd.core.errors import InvalidInput, describe

_ENTRY = re.compile(r"(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?):(\d{1,19})", re.I)
_ENTITY = re.compile(r"(\d{1,18}):(.+)", re.S)


def entry_cursor(created_at: float, entry_id: int) -> str:
    return f"{float(created_at)!r}:{int(entry_id)}"


def read_entry_cursor(value: object) -> tuple[float, int] | None:
    """(created_at, id) from a `list` cursor; None when none was given."""
    if value is None:
        return None
    found = _ENTRY.fullmatch(value) if isinstance(value, str) else None
    if found is None or not math.isfinite(float(found.group(1))) or int(found.group(2)) > 2**63 - 1:
        raise InvalidInput(
            f"cursor: expected the next_cursor of an earlier list answer, got {describe(value)}"
        )
    return float(found.group(1)), int(found.group(2))


def read_path_cursor(value: object) -> str | None:
    """The path after which a `note.list` page starts; None when none was given."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidInput(
            f"cursor: expected the next_cursor of an earlier note.list answer, got "
            f"{describe(value)}"
        )
    return value


def one_way(cursor: object, offset: int) -> None:
    """A page starts at a cursor or at an offset, not both."""
    if cursor is not None and offset:
        raise InvalidInput("cursor: give cursor or offset, not both (the cursor says where)")


def entity_cursor(mentions: int, key: str) -> str:
    return f"{int(mentions)}:{key}"


def read_entity_cursor(value: object) -> tuple[int, str] | None:
    """(mentions, key) from an `entities` cursor; None when none was given."""
    if value is None:
        return None
    found = _ENTITY.fullmatch(value) if isinstance(value, str) else None
    if found is None:
        raise InvalidInput(
            f"cursor: expected the next_cursor of an earlier entities answer, got {describe(value)}"
        )
    return int(found.group(1)), found.group(2)
