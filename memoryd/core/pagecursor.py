"""The cursor of a list that pages (`list`, `note.list`, `entities`): where the next page
starts, as the last item of this one names it, so that entries added or deleted between two
pages neither repeat an entry nor skip one (an offset counts rows, which a write moves).

A `list` cursor is the last memory's creation time and id, `1795765762.9921:12` (the order
is newest first, ties by id); a `note.list` cursor is the last note's path (the order is by
path). An `entities` cursor is the last entity's mention count and key, `42:caroline baker`
(the order is most mentioned first, ties by key). A `links` or `backlinks` cursor is the last
link's place: its line, its rank among the links of that line, and (backlinks) the note it is
written in, `12.0:notes/a.md` (the order is by note path, line, rank). A `related` cursor
names the walk and the entities its pages gave (related_cursor). Each is text a client passes
back as it got it, on any door."""

from __future__ import annotations

import base64
import math
import re
import zlib
from collections.abc import Iterable

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


_LINK = re.compile(r"(\d{1,10})\.(\d{1,6}):(.*)", re.S)
_COUNT = re.compile(r"(\d{1,18}):(\d{1,18})")


def link_cursor(path: str, line: int, rank: int) -> str:
    return f"{int(line)}.{int(rank)}:{path}"


def _matched(pattern: re.Pattern[str], value: object, method: str) -> re.Match[str]:
    """The cursor's parts, or the one refusal of a cursor that is not of its method's form."""
    found = pattern.fullmatch(value) if isinstance(value, str) else None
    if found is None:
        raise InvalidInput(
            f"cursor: expected the next_cursor of an earlier {method} answer, got "
            f"{describe(value if not isinstance(value, str) else value[:60])}"
        )
    return found


def read_link_cursor(value: object, method: str) -> tuple[str, int, int] | None:
    """(path, line, rank) from a `links` or `backlinks` cursor; None when none was given."""
    if value is None:
        return None
    found = _matched(_LINK, value, method)
    return found.group(3), int(found.group(1)), int(found.group(2))


def count_cursor(count: int, entry_id: int) -> str:
    """A `promotion_candidates` cursor: the last memory's useful count and id, `7:42` (the
    order is most useful first, ties by id)."""
    return f"{int(count)}:{int(entry_id)}"


def read_count_cursor(value: object) -> tuple[int, int] | None:
    if value is None:
        return None
    found = _matched(_COUNT, value, "promotion_candidates")
    return int(found.group(1)), int(found.group(2))


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


# A `related` cursor: the walk's root, depth and top, and the ids of the entities its pages
# gave so far (sorted, as deltas in varints, deflated, base64url). The walk is redone for each
# page (the graph may have changed since the last): the next page holds the entities it
# reaches that no page gave, so none repeats and none still reached is skipped.
_RELATED = re.compile(r"r(\d{1,19})\.([1-9])\.(\d{1,3})\.([A-Za-z0-9_-]*)")
MAX_RELATED_IDS = 100_000  # bytes a cursor's ids may inflate to (500 ids take under 3,000)


def related_cursor(root: int, depth: int, top: int, given: Iterable[int]) -> str:
    out = bytearray()
    prev = 0
    for i in sorted(set(given)):
        d, prev = i - prev, i
        while d >= 0x80:
            out.append((d & 0x7F) | 0x80)
            d >>= 7
        out.append(d)
    body = base64.urlsafe_b64encode(zlib.compress(bytes(out), 9)).decode().rstrip("=")
    return f"r{int(root)}.{int(depth)}.{int(top)}.{body}"


def read_related_cursor(value: object) -> tuple[int, int, int, frozenset[int]] | None:
    """(root id, depth, top, the ids given so far) from a `related` cursor; None when none."""
    if value is None:
        return None
    found = _RELATED.fullmatch(value) if isinstance(value, str) else None
    ids: list[int] = []
    try:
        if found is None:
            raise ValueError
        body = found.group(4)
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        inflate = zlib.decompressobj()
        data = inflate.decompress(raw, MAX_RELATED_IDS)
        if inflate.unconsumed_tail or not inflate.eof:
            raise ValueError
        prev = shift = acc = 0
        for byte in data:
            acc |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                prev += acc
                ids.append(prev)
                acc = shift = 0
        if shift:
            raise ValueError
    except (ValueError, zlib.error):
        raise InvalidInput(
            f"cursor: expected the next_cursor of an earlier related answer, got "
            f"{describe(value if not isinstance(value, str) else value[:60])}"
        ) from None
    assert found is not None
    return int(found.group(1)), int(found.group(2)), int(found.group(3)), frozenset(ids)
