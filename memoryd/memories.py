"""Memories added through the API: validation, de-duplication, expiry, update, delete.

Every value is checked here, once, whoever calls (socket API, tests, import): a bad value raises
InvalidInput or TooLarge naming the field, and nothing is stored.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from memoryd import lifecycle, secretguard
from memoryd.errors import InvalidInput, NotFound, Refused, TooLarge
from memoryd.logsetup import get_logger
from memoryd.markdown import sha256_text
from memoryd.store import Store, entries
from memoryd.store.entries import Filters, NewMemory
from memoryd.timeutil import parse_duration, parse_time

log = get_logger("memoryd.memories")

_NAME = re.compile(r"^[\w][\w.:/-]{0,63}$", re.UNICODE)


class MemorySettings(Protocol):
    max_content_bytes: int
    default_type: str
    default_importance: int
    default_namespace: str


@dataclass(frozen=True)
class Added:
    id: int
    duplicate: bool
    record: dict[str, Any] | None
    warnings: tuple[str, ...] = ()
    near_duplicates: tuple[dict[str, Any], ...] = ()
    stored: bool = True


# --- validation of single values (shared with the API layer) ----------------------------------


def check_content(content: object, max_bytes: int) -> str:
    if not isinstance(content, str):
        raise InvalidInput("content: must be a string")
    text = content.strip()
    if not text:
        raise InvalidInput("content: must not be empty")
    if "\x00" in text:
        raise InvalidInput("content: must not contain NUL characters")
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise TooLarge(
            f"content: {size} bytes is over the limit of {max_bytes} "
            "(memories.max_content_bytes); split it or save it as a note in the workspace"
        )
    return text


def check_name(value: object, field: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value.strip()):
        raise InvalidInput(
            f"{field}: expected a short name (letters, digits, '_', '-', '.', ':', '/'), "
            f"got {value!r}"
        )
    return value.strip().lower() if field == "type" else value.strip()


def check_tags(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [t for t in re.split(r"[,\s]+", value) if t]
    if not isinstance(value, list | tuple) or not all(isinstance(t, str) for t in value):
        raise InvalidInput("tags: expected a list of strings or 'a,b,c'")
    out: list[str] = []
    for t in value:
        tag = t.strip().lstrip("#").lower()
        if not tag:
            continue
        if len(tag) > 64 or not _NAME.match(tag):
            raise InvalidInput(f"tags: {t!r} is not a valid tag (letters, digits, '_', '-', '.')")
        if tag not in out:
            out.append(tag)
    if len(out) > 32:
        raise InvalidInput("tags: at most 32 tags")
    return tuple(out)


def check_importance(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10:
        raise InvalidInput(f"importance: expected an integer from 1 to 10, got {value!r}")
    return value


def check_confidence(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidInput(f"confidence: expected a number from 0 to 1, got {value!r}")
    return float(value)


def check_text(value: object, field: str, limit: int = 2000) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field}: must be a string")
    if len(value) > limit:
        raise TooLarge(f"{field}: longer than {limit} characters")
    return value.strip() or None


def expiry(ttl: object, expires_at: object, now: float) -> float | None:
    """ttl ('7d', '90m', seconds) or expires_at (ISO / unix seconds) -> unix seconds or None."""
    if ttl is not None and expires_at is not None:
        raise InvalidInput("give ttl or expires_at, not both")
    if ttl is not None:
        return now + parse_duration(ttl, what="ttl")
    if expires_at is not None:
        return parse_time(expires_at, what="expires_at")
    return None


# --- the service -------------------------------------------------------------------------------


class Memories:
    def __init__(
        self,
        store: Store,
        settings: MemorySettings,
        *,
        clock: Callable[[], float] = time.time,
        on_added: Iterable[Callable[[dict[str, Any]], None]] = (),
        on_changed: Iterable[Callable[[], None]] = (),
        secrets_mode: str = "refuse",
        temporary_ttl: float = 7 * 86400,
        near_duplicates: Callable[[str, str], list[dict[str, Any]]] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.secrets_mode = secrets_mode
        self.temporary_ttl = temporary_ttl
        # near_duplicates(content, namespace) -> [{id, similarity}]: set by the App
        self.near_duplicates = near_duplicates
        # on_added: the daily log appends each new memory; on_changed wakes the embed worker.
        self.on_added = list(on_added)
        self.on_changed = list(on_changed)

    def add(
        self,
        content: object,
        *,
        type: object = None,
        tags: object = None,
        importance: object = None,
        confidence: object = None,
        source: object = None,
        context: object = None,
        ttl: object = None,
        expires_at: object = None,
        namespace: object = None,
        tier: object = None,
        triggers: object = None,
        allow_secrets: bool = False,
        skip_near_duplicates: bool = False,
    ) -> Added:
        started = time.perf_counter()
        s = self.settings
        now = self.clock()
        text = check_content(content, s.max_content_bytes)
        text, warnings = self._guard(text, allow_secrets)
        tier_name = lifecycle.check_tier(tier) if tier is not None else "normal"
        phrases = lifecycle.check_triggers(triggers) if triggers is not None else []
        if tier_name == "temporary" and ttl is None and expires_at is None:
            ttl = self.temporary_ttl
        mem = NewMemory(
            content=text,
            content_hash=sha256_text(text),
            type=check_name(type, "type") if type is not None else s.default_type,
            tags=check_tags(tags) if tags is not None else (),
            source=check_text(source, "source", 200),
            context=check_text(context, "context"),
            confidence=check_confidence(confidence) if confidence is not None else 1.0,
            importance=(
                check_importance(importance) if importance is not None else s.default_importance
            ),
            expires_at=expiry(ttl, expires_at, now),
            namespace=(
                check_name(namespace, "namespace") if namespace is not None else s.default_namespace
            ),
            tier=tier_name,
        )
        if mem.expires_at is not None and mem.expires_at <= now:
            raise InvalidInput("expires_at: is in the past")
        near: list[dict[str, Any]] = []
        existing = self.store.read(
            lambda con: entries.find_memory_by_hash(con, mem.namespace, mem.content_hash)
        )
        if existing is None and self.near_duplicates is not None:
            near = self.near_duplicates(text, mem.namespace)
            if near:
                ids = ", ".join(str(n["id"]) for n in near)
                warnings.append(f"near duplicate of memory {ids}")
                if skip_near_duplicates:
                    return Added(near[0]["id"], False, None, tuple(warnings), tuple(near), False)

        def _insert(con: Any) -> tuple[int, bool, dict[str, Any] | None]:
            entry_id, dup = entries.insert_memory(con, mem, now)
            if not dup and phrases:
                lifecycle.set_triggers(con, entry_id, phrases)
            return entry_id, dup, entries.get(con, entry_id)

        entry_id, duplicate, record = self.store.run_write(_insert, durable=True)
        assert record is not None
        log.info(
            "added",
            id=entry_id,
            duplicate=duplicate,
            duration_ms=round((time.perf_counter() - started) * 1000, 2),
        )
        if not duplicate:
            for hook in self.on_added:
                try:
                    hook(record)
                except Exception:
                    log.exception("after-add hook failed", id=entry_id)
            self._changed()
        return Added(entry_id, duplicate, record, tuple(warnings), tuple(near))

    def _guard(self, text: str, allow: object) -> tuple[str, list[str]]:
        """The secret guard (secrets.mode): refuse, warn, redact or off."""
        if not isinstance(allow, bool):
            raise InvalidInput("allow_secrets: expected true or false")
        if self.secrets_mode == "off":
            return text, []
        kinds = secretguard.kinds(text)
        if not kinds:
            return text, []
        what = ", ".join(kinds)
        if allow:
            return text, [f"stored although it looks like a credential ({what})"]
        if self.secrets_mode == "refuse":
            raise Refused(
                f"content looks like a credential ({what}); not stored. Remove it, or pass "
                "allow_secrets (memoryctl --allow-secrets) if it is meant to be kept",
                data={"secrets": kinds},
            )
        if self.secrets_mode == "redact":
            return secretguard.redact(text), [f"redacted: {what}"]
        return text, [f"looks like a credential ({what})"]

    def get(self, entry_id: object) -> dict[str, Any]:
        eid = check_id(entry_id)
        rec = self.store.read(lambda con: entries.get(con, eid))
        if rec is None:
            raise NotFound(f"no entry with id {eid}")
        return rec

    def list(
        self, filters: Filters, *, limit: int = 20, offset: int = 0
    ) -> tuple[list[dict[str, Any]], int]:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInput(f"limit: expected an integer from 1 to 1000, got {limit!r}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInput(f"offset: expected a non-negative integer, got {offset!r}")
        now = self.clock()
        return self.store.read(
            lambda con: entries.list_entries(con, filters, now=now, limit=limit, offset=offset)
        )

    def update(self, entry_id: object, changes: dict[str, Any]) -> dict[str, Any]:
        eid = check_id(entry_id)
        s = self.settings
        now = self.clock()
        values: dict[str, Any] = {}
        phrases: list[str] | None = None
        changes = dict(changes)
        allow = changes.pop("allow_secrets", False)
        for key, value in changes.items():
            if key == "content":
                text, _ = self._guard(check_content(value, s.max_content_bytes), allow)
                values["content"], values["content_hash"] = text, sha256_text(text)
            elif key == "tier":
                values["tier"] = lifecycle.check_tier(value)
            elif key == "triggers":
                phrases = lifecycle.check_triggers(value)
            elif key == "type":
                values["type"] = check_name(value, "type")
            elif key == "tags":
                values["tags"] = check_tags(value)
            elif key == "importance":
                values["importance"] = check_importance(value)
            elif key == "confidence":
                values["confidence"] = check_confidence(value)
            elif key in ("source", "context"):
                values[key] = check_text(value, key)
            elif key == "namespace":
                values["namespace"] = check_name(value, "namespace")
            elif key == "ttl":
                if value is not None:
                    values["expires_at"] = expiry(value, None, now)
            elif key == "expires_at":
                values["expires_at"] = None if value is None else expiry(None, value, now)
            else:
                raise InvalidInput(f"cannot update {key!r}")

        def _update(con: Any) -> dict[str, Any] | None:
            before = entries.get(con, eid)
            if before is None:
                raise NotFound(f"no entry with id {eid}")
            entries.update_memory(con, eid, values, now)
            if phrases is not None:
                lifecycle.set_triggers(con, eid, phrases)
            after = entries.get(con, eid)
            assert after is not None
            lifecycle.record_history(con, eid, before, after, now)
            return after

        if not values and phrases is None:
            raise InvalidInput("update: nothing to change")
        rec = self.store.run_write(_update, durable=True)
        assert rec is not None
        log.info("updated", id=eid, fields=sorted(values) + (["triggers"] if phrases else []))
        self._changed()
        return rec

    def delete(self, entry_id: object) -> None:
        eid = check_id(entry_id)
        self.store.run_write(lambda con: entries.delete_memory(con, eid), durable=True)
        log.info("deleted", id=eid)

    def expire(self) -> int:
        now = self.clock()
        n = self.store.run_write(lambda con: entries.delete_expired(con, now), durable=True)
        if n:
            log.info("expired entries removed", count=n)
        return n

    def _changed(self) -> None:
        for hook in self.on_changed:
            try:
                hook()
            except Exception:
                log.exception("change hook failed")


def check_id(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"id: expected a positive integer, got {value!r}")
    return value
