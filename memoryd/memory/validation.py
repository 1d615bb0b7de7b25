"""The one validator every change to a memory goes through (add, update, import).

`check_fields` is the validator; the `check_*` functions are its per-field checkers (also used by
the API for filters).

Each field has one checker; `check_fields` runs the checkers of the fields given, then the
secret guard over every text field (content, context, source, tags, triggers, and the names
type and namespace). Messages name the
field and what is wrong, never the rejected value itself (a rejected value may be a credential,
and messages end up in logs).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from memoryd.core.errors import InvalidInput, Refused, TooLarge, check_int, describe
from memoryd.core.names import NAME, check_name, check_str
from memoryd.core.timeutil import MAX_TIME, parse_bound, parse_duration, parse_time
from memoryd.memory import lifecycle
from memoryd.text import secretguard
from memoryd.text.markdown import nfc, sha256_text

MAX_INT = 2**63 - 1  # SQLite's INTEGER range
MAX_SOURCE = 200
MAX_CONTEXT = 2000
_NAME = NAME  # (the one rule: core/names.py)
TEXT_FIELDS = ("content", "context", "source", "tags", "triggers", "type", "namespace")
# Names cannot carry "[REDACTED:kind]": in redact mode a credential in one is refused instead.
NAME_FIELDS = ("type", "namespace")


def check_content(content: object, max_bytes: int) -> str:
    text = check_str(content, "content").strip()
    if not text:
        raise InvalidInput("content: must not be empty")
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise TooLarge(
            f"content: {size} bytes is over the limit of {max_bytes} "
            "(memories.max_content_bytes); split it or save it as a note in the workspace"
        )
    return text


def check_tags(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [t for t in re.split(r"[,\s]+", check_str(value, "tags")) if t]
    if not isinstance(value, list | tuple):
        raise InvalidInput(f"tags: expected a list of strings or 'a,b,c', got {describe(value)}")
    out: list[str] = []
    for t in value:
        tag = nfc(check_str(t, "tags", limit=200)).strip().lstrip("#").lower()
        if not tag:
            continue
        if len(tag) > 64 or not _NAME.match(tag):
            raise InvalidInput("tags: a tag is not valid (letters, digits, '_', '-', '.')")
        if tag not in out:
            out.append(tag)
    if len(out) > 32:
        raise InvalidInput("tags: at most 32 tags")
    return tuple(out)


def check_tag(value: object, field: str = "tag") -> str:
    """Exactly one tag (delete by tag): a string that check_tags keeps one tag of."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field}: expected one tag, got {describe(value)}")
    tags = check_tags([value])
    if len(tags) != 1:
        raise InvalidInput(f"{field}: expected one tag, got an empty one")
    return tags[0]


def check_importance(value: object) -> int:
    return check_int(value, "importance", 1, 10)


def check_count(value: object, field: str) -> int:
    return check_int(value, field, 0)


def check_confidence(value: object) -> float:
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or not 0 <= value <= 1
    ):
        raise InvalidInput(f"confidence: expected a number from 0 to 1, got {describe(value)}")
    return float(value)


def _quiet(parse: Any, value: object, field: str) -> float:
    """timeutil's parsers, with messages that do not repeat the rejected value."""
    try:
        return float(parse(value, what=field))
    except InvalidInput as exc:
        raise InvalidInput(exc.message.split(", got ")[0]) from None


def check_time(value: object, field: str) -> float:
    """ISO 8601 or unix seconds between 1970 and 9999 (what ISO output can represent)."""
    if isinstance(value, str):
        check_str(value, field, limit=100)
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInput(f"{field}: expected a finite time")
    try:
        ts = _quiet(parse_time, value, field)
    except InvalidInput:
        if field == "expires_at" and isinstance(value, str) and _is_duration(value):
            raise InvalidInput("expires_at: expected a time, not a duration (give ttl)") from None
        raise
    if not 0 <= ts <= MAX_TIME:
        raise InvalidInput(f"{field}: out of range (1970-01-01 to 9999-12-31)")
    return ts


def _is_duration(value: str) -> bool:
    try:
        parse_duration(value)
    except InvalidInput:
        return False
    return True


def check_bound(value: object, field: str, *, now: float | None = None) -> float | None:
    """A `since` or `until` filter (timeutil.parse_bound's grammar: 7d, 24h, 90m, ISO dates and
    times, unix seconds; a bare date as `until` includes that whole day), or None."""
    if value is None:
        return None
    if isinstance(value, str):
        check_str(value, field, limit=100)
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInput(f"{field}: expected a finite time")
    ts = parse_bound(value, what=field, until=field == "until", now=now)
    if not 0 <= ts <= MAX_TIME + 86400:
        raise InvalidInput(f"{field}: out of range (1970-01-01 to 9999-12-31)")
    return ts


def check_text(value: object, field: str, limit: int = MAX_CONTEXT) -> str | None:
    if value is None:
        return None
    return check_str(value, field, limit=limit).strip() or None


def check_id(value: object) -> int:
    return check_int(value, "id", 1)


def expiry(ttl: object, expires_at: object, now: float) -> float | None:
    """ttl ('7d', '90m', seconds) or expires_at (ISO / unix seconds) -> unix seconds or None."""
    if ttl is not None and expires_at is not None:
        raise InvalidInput("give ttl or expires_at, not both")
    if ttl is not None:
        if isinstance(ttl, str):
            check_str(ttl, "ttl", limit=100)
        if isinstance(ttl, float) and not math.isfinite(ttl):
            raise InvalidInput("ttl: expected a finite duration")
        seconds = _quiet(parse_duration, ttl, "ttl")
        if now + seconds > MAX_TIME:
            raise InvalidInput("ttl: too long (the expiry would be after 9999-12-31)")
        return now + seconds
    if expires_at is not None:
        return check_time(expires_at, "expires_at")
    return None


# --- the secret guard over every text field ---------------------------------------------------


@dataclass
class Guarded:
    """Checked values plus what the secret guard said about them."""

    values: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    secrets: dict[str, list[str]] = field(default_factory=dict)  # field -> kinds found


def _texts(name: str, value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def _given(name: str, value: Any) -> list[str]:
    """The strings of a field as the caller gave it (only tags and type are changed by their
    checker): each tag as check_tags reads it, minus the '#' and spaces, case kept."""
    if name not in ("tags", "type") or value is None:
        return []
    if isinstance(value, str):
        items = re.split(r"[,\s]+", value) if name == "tags" else [value]
    elif isinstance(value, list | tuple):
        items = [v for v in value if isinstance(v, str)]
    else:
        return []
    return [t.strip().lstrip("#") for t in items if t.strip()]


def guard(
    values: dict[str, Any], mode: str, allow: object, raw: dict[str, Any] | None = None
) -> Guarded:
    """Look for credentials in every text field. refuse: Refused naming fields and kinds (never
    the value); redact: replace them; warn: keep them with a warning; off: no check. allow_secrets
    keeps them (the daily log still gets a redacted line). `raw`: the fields as given, before
    check_fields lowercased tags and type (an AWS key id lowercased is no longer one): they are
    looked at as given."""
    if not isinstance(allow, bool):
        raise InvalidInput(f"allow_secrets: expected true or false, got {describe(allow)}")
    out = Guarded(dict(values))
    if mode == "off":
        return out
    given = raw or {}
    for name in TEXT_FIELDS:
        texts = _texts(name, values.get(name)) + _given(name, given.get(name))
        found = sorted({k for t in texts for k in secretguard.kinds(t)})
        if name in NAME_FIELDS:  # ids in names ("agent-<uuid>") are not credentials
            found = [k for k in found if k != "high_entropy_token"]
        if found:
            out.secrets[name] = found
    if not out.secrets:
        return out
    what = "; ".join(f"{f}: {', '.join(k)}" for f, k in out.secrets.items())
    if allow:
        out.warnings.append(f"stored although it looks like a credential ({what})")
        return out
    names = [n for n in NAME_FIELDS if n in out.secrets]
    if mode == "refuse" or (mode == "redact" and names):
        raise Refused(
            f"looks like a credential ({what}); not stored. Remove it, or if it is meant to be "
            "kept send it again with allow_secrets: true (memoryctl: the flag goes after the "
            "command, `memoryctl add - --allow-secrets` with the text on stdin, where other "
            "users' `ps` cannot see it; also for update and import)",
            data={
                "secrets": sorted({k for ks in out.secrets.values() for k in ks}),
                "fields": sorted(out.secrets),
            },
        )
    if mode == "redact":
        for name in out.secrets:
            value = out.values[name]
            if name == "tags":  # a tag cannot hold "[REDACTED:...]": drop it
                bad = {t.lower() for t in _given("tags", given.get("tags")) if secretguard.kinds(t)}
                out.values[name] = tuple(
                    t for t in value if not secretguard.kinds(t) and t not in bad
                )
            elif name == "triggers":
                out.values[name] = [secretguard.redact(t) for t in value]
            else:
                out.values[name] = secretguard.redact(value)
        if "content" in out.values:
            out.values["content_hash"] = sha256_text(out.values["content"])
        out.warnings.append(f"redacted: {what}")
        return out
    out.warnings.append(f"looks like a credential ({what})")
    return out


# --- every field of a memory -------------------------------------------------------------------

ADD_FIELDS = frozenset(
    {
        "content",
        "type",
        "tags",
        "importance",
        "confidence",
        "source",
        "context",
        "ttl",
        "expires_at",
        "namespace",
        "tier",
        "triggers",
    }
)
# What an exported item may carry beyond what add takes (ttl is not exported: expires_at is).
IMPORT_FIELDS = (ADD_FIELDS - {"ttl"}) | {
    "id",
    "kind",
    "content_hash",
    "created_at",
    "updated_at",
    "last_accessed_at",
    "access_count",
    "useful_count",
    "validation_count",
    "history",
    "access_log",
    "vector",
    "model",
}


def check_fields(raw: dict[str, Any], max_bytes: int, now: float) -> dict[str, Any]:
    """The one validator: every field of add, update and import -> column values.

    A None value means "not given" for add and import, and "clear it" for update (source,
    context, expires_at). Unknown fields are refused, by name.
    """
    if raw.get("ttl") is not None and raw.get("expires_at") is not None:
        raise InvalidInput("give ttl or expires_at, not both")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if not isinstance(key, str):
            raise InvalidInput("field names must be strings")
        check_str(key, "field name", limit=64)
        if key == "content":
            out["content"] = check_content(value, max_bytes)
            out["content_hash"] = sha256_text(out["content"])
        elif value is None:  # ttl None: no change; these three None: cleared (update)
            if key in ("source", "context", "expires_at"):
                out.setdefault(key, None)
        elif key == "type":
            out["type"] = check_name(value, "type")
        elif key == "tags":
            out["tags"] = check_tags(value)
        elif key == "importance":
            out["importance"] = check_importance(value)
        elif key == "confidence":
            out["confidence"] = check_confidence(value)
        elif key == "source":
            out["source"] = check_text(value, "source", MAX_SOURCE)
        elif key == "context":
            out["context"] = check_text(value, "context")
        elif key == "namespace":
            out["namespace"] = check_name(value, "namespace")
        elif key == "tier":
            out["tier"] = lifecycle.check_tier(check_str(value, "tier", limit=64))
        elif key == "triggers":
            if isinstance(value, list | tuple):
                for p in value:
                    check_str(p, "triggers", limit=1000)
            elif isinstance(value, str):
                check_str(value, "triggers", limit=50000)
            out["triggers"] = lifecycle.check_triggers(value)
        elif key == "ttl":
            out["expires_at"] = expiry(value, None, now)
        elif key == "expires_at":
            out["expires_at"] = check_time(value, "expires_at")
        elif key in ("created_at", "updated_at", "last_accessed_at"):
            out[key] = check_time(value, key)
        elif key in ("access_count", "useful_count", "validation_count"):
            out[key] = check_count(value, key)
        else:
            raise InvalidInput(f"unknown field {describe(key)}")
    return out
