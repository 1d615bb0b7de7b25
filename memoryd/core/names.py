"""The rules for a string the store can carry and for a short name (a memory's type or
namespace, a tag's shape), in one place for the daemon's validator (memory/validation.py) and
for the clients that check a name before they send it (agents/mcp.py's --namespace)."""

from __future__ import annotations

import re

from memoryd.core.errors import InvalidInput, TooLarge, describe

NAME = re.compile(r"^[\w][\w.:/-]{0,63}$", re.UNICODE)


def check_str(value: object, field: str, *, limit: int | None = None) -> str:
    """A string that SQLite and JSON can carry: no NUL, no lone surrogate, within `limit`."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field}: expected a string, got {describe(value)}")
    if "\x00" in value:
        raise InvalidInput(f"{field}: must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field}: not valid Unicode (a lone surrogate)") from None
    if limit is not None and len(value) > limit:
        raise TooLarge(f"{field}: longer than {limit} characters")
    return value


def check_name(value: object, field: str) -> str:
    text = check_str(value, field, limit=200).strip()
    if not NAME.match(text):
        raise InvalidInput(
            f"{field}: expected a short name (letters, digits, '_', '-', '.', ':', '/'; "
            "at most 64 characters)"
        )
    return text.lower() if field == "type" else text
