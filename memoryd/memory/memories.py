"""The one door for every change to a memory: add, update, import, delete, prune, validate,
promote, expire and `used`.

Every value goes through memoryd.memory.validation (one checker per field, then the secret guard
over every text field), whoever calls: the socket API, the MCP bridge, jobs, tests. After a change
the same hooks run: the daily log (append, rewrite, forget), the embed worker and the trigger
index.
"""

from __future__ import annotations

import builtins  # the class has a method named `list`: annotations after it say builtins.list
import contextlib
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from memoryd.core.errors import (
    InvalidInput,
    MemorydError,
    NotFound,
    StoreError,
    check_int,
    describe,
)
from memoryd.core.logsetup import get_logger
from memoryd.core.timeutil import parse_time
from memoryd.memory import lifecycle
from memoryd.memory.validation import (
    ADD_FIELDS,
    IMPORT_FIELDS,
    check_confidence,
    check_content,
    check_fields,
    check_id,
    check_importance,
    check_name,
    check_str,
    check_tag,
    check_tags,
    check_text,
    expiry,
    guard,
)
from memoryd.store import Store, entries, pages
from memoryd.store import lifecycle as lcstore
from memoryd.store.entries import Filters, NewMemory

__all__ = [
    "ADD_FIELDS",
    "Added",
    "Memories",
    "check_confidence",
    "check_content",
    "check_id",
    "check_importance",
    "check_name",
    "check_tags",
    "check_text",
    "expiry",
]

log = get_logger("memoryd.memory.memories")
LOGGED_FIELDS = ("content", "tags", "type", "source", "importance", "namespace")


class MemorySettings(Protocol):
    """Read-only: the frozen config section (memoryd.core.config) satisfies it."""

    @property
    def max_content_bytes(self) -> int: ...

    @property
    def default_type(self) -> str: ...

    @property
    def default_importance(self) -> int: ...

    @property
    def default_namespace(self) -> str: ...


@dataclass(frozen=True)
class Added:
    id: int
    duplicate: bool
    record: dict[str, Any] | None
    warnings: tuple[str, ...] = ()
    near_duplicates: tuple[dict[str, Any], ...] = ()
    stored: bool = True


class Memories:
    def __init__(
        self,
        store: Store,
        settings: MemorySettings,
        *,
        clock: Callable[[], float] = time.time,
        on_added: Iterable[Callable[[dict[str, Any]], object]] = (),
        on_changed: Iterable[Callable[[], object]] = (),
        on_updated: Iterable[Callable[[dict[str, Any]], object]] = (),
        on_removed: Iterable[Callable[[list[dict[str, Any]]], object]] = (),
        on_imported: Iterable[Callable[[dict[str, Any]], object]] = (),
        changing: Callable[[builtins.list[int]], AbstractContextManager[object]] | None = None,
        storing: Callable[[int], object] = lambda entry_id: None,
        copies_since: Callable[[float], list[dict[str, Any]]] | None = None,
        stale_lines: Callable[[set[int]], list[dict[str, Any]]] = lambda ids: [],
        secrets_mode: str = "refuse",
        temporary_ttl: float = 7 * 86400,
        near_duplicates: Callable[[str, str], list[dict[str, Any]]] | None = None,
        lifecycle_settings: Any = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.secrets_mode = secrets_mode
        self.temporary_ttl = temporary_ttl
        # [lifecycle]: the promotion thresholds validate and promotion_candidates judge by
        self.lifecycle = lifecycle_settings if lifecycle_settings is not None else _Defaults()
        self.near_duplicates = near_duplicates  # (content, namespace) -> [{id, similarity}]
        # on_added / on_updated / on_removed: the daily log appends, rewrites or forgets a
        # memory's line, on_imported(counts) reads lines that name ids stored again (an import);
        # on_changed wakes the embed worker and the trigger index.
        self.on_added, self.on_changed = list(on_added), list(on_changed)
        self.on_updated, self.on_removed = list(on_updated), list(on_removed)
        self.on_imported = list(on_imported)
        # changing(ids) around an update's or removal's transaction and hooks, storing(id) in an
        # add's before its commit: the daily log keeps the ids until their lines are written
        self.changing = changing or (lambda ids: contextlib.nullcontext())
        self.storing = storing
        self.copies_since = copies_since  # (ts) -> checkpoints and snapshots taken since ts
        self.stale_lines = stale_lines  # (ids) -> the log files whose rewrite was refused

    # -- add ------------------------------------------------------------------------------------

    def add(
        self,
        content: object = None,
        *,
        allow_secrets: object = False,
        skip_near_duplicates: object = False,
        **fields: Any,
    ) -> Added:
        started = time.perf_counter()
        s = self.settings
        now = self.clock()
        unknown = set(fields) - ADD_FIELDS
        if unknown:
            raise InvalidInput(f"add: unknown field {', '.join(sorted(unknown))}")
        if not isinstance(skip_near_duplicates, bool):
            shown = describe(skip_near_duplicates)
            raise InvalidInput(f"skip_near_duplicates: expected true or false, got {shown}")
        if content is None:
            raise InvalidInput("add: content is required")
        raw = {"content": content, **fields}
        values = check_fields(raw, s.max_content_bytes, now)
        g = guard(values, self.secrets_mode, allow_secrets, raw)
        values, warnings = g.values, g.warnings
        tier = values.get("tier", "normal")
        if tier == "temporary" and values.get("expires_at") is None:
            values["expires_at"] = now + self.temporary_ttl
        if values.get("expires_at") is not None and values["expires_at"] <= now:
            raise InvalidInput("expires_at: is in the past")
        mem = NewMemory(
            content=values["content"],
            content_hash=values["content_hash"],
            type=values.get("type") or s.default_type,
            tags=values.get("tags", ()),
            source=values.get("source"),
            context=values.get("context"),
            confidence=values.get("confidence", 1.0),
            importance=values.get("importance", s.default_importance),
            expires_at=values.get("expires_at"),
            namespace=values.get("namespace") or s.default_namespace,
            tier=tier,
        )
        phrases = values.get("triggers") or []
        near: list[dict[str, Any]] = []
        existing = self.store.read(
            lambda con: entries.find_memory_by_hash(con, mem.namespace, mem.content_hash)
        )
        if existing is None and self.near_duplicates is not None:
            try:
                near = self.near_duplicates(mem.content, mem.namespace)
            except StoreError:
                raise
            except Exception:  # a hint only: it never stops a memory from being stored
                log.exception("near-duplicate check failed", namespace=mem.namespace)
                near = []
            if near:
                ids = ", ".join(str(n["id"]) for n in near)
                warnings.append(f"near duplicate of memory {ids}")
                if skip_near_duplicates:
                    return Added(near[0]["id"], False, None, tuple(warnings), tuple(near), False)

        def _insert(con: Any) -> tuple[int, bool, dict[str, Any] | None]:
            entry_id, dup = entries.insert_memory(con, mem, now)
            if not dup:
                self.storing(entry_id)
                if phrases:
                    lifecycle.set_triggers(con, entry_id, phrases)
            return entry_id, dup, entries.get(con, entry_id)

        try:
            entry_id, duplicate, record = self.store.run_write(_insert, durable=True)
        except Exception as exc:
            if not lcstore.same_text_stored(exc):
                raise
            # Another daemon sharing the database stored the same text between our check and
            # our insert: the unique index refused ours (nothing of it was written). It is the
            # same answer as a duplicate found by the check.
            found = self.store.read(
                lambda con: entries.find_memory_by_hash(con, mem.namespace, mem.content_hash)
            )
            if found is None:  # stored and removed again meanwhile: a real conflict, say so
                raise StoreError(
                    "the same memory was being stored and removed by another daemon at once; "
                    "try again"
                ) from None
            entry_id, duplicate = found, True
            record = self.store.read(lambda con: entries.get(con, found))
            log.info("same text stored by another daemon at once", id=entry_id)
        assert record is not None
        log.info(
            "added",
            id=entry_id,
            duplicate=duplicate,
            duration_ms=round((time.perf_counter() - started) * 1000, 2),
        )
        if not duplicate:
            self._run(self.on_added, record)
            self._changed()
        return Added(entry_id, duplicate, record, tuple(warnings), tuple(near))

    # -- read -----------------------------------------------------------------------------------

    def get(self, entry_id: object, *, record_access: bool = True) -> dict[str, Any]:
        """One entry by id. Counts as an access (best effort: a full disk does not fail it)."""
        eid = check_id(entry_id)
        rec = self.store.read(lambda con: entries.get(con, eid))
        if rec is None:
            raise NotFound(f"no entry with id {eid}")
        if record_access:
            self._access([eid], "get")
        return rec

    def get_note(self, path: object, section: object = None) -> dict[str, Any]:
        """A note of the workspace by path, or one of its sections (by heading text)."""
        rel = check_str(path, "path", limit=4096).strip().strip("/")
        if not rel:
            raise InvalidInput(
                "path: must not be empty (a workspace-relative path like 'notes/idea.md')"
            )
        sec = None if section is None else check_str(section, "section", limit=1000).strip()
        chunks = self.store.read(lambda con: entries.document_chunks(con, rel))
        if not chunks:
            raise NotFound(f"no indexed note at {describe(rel)}")
        sections = lifecycle.note_sections(chunks)
        if sec:
            chosen = [c for c in chunks if (c["heading_path"] or [""])[-1] == sec]
            if not chosen:
                folded = sec.casefold()
                chosen = [c for c in chunks if (c["heading_path"] or [""])[-1].casefold() == folded]
            if not chosen:
                names = ", ".join(repr(x["heading"]) for x in sections[:20] if x["heading"])
                raise NotFound(f"no section {describe(sec)} in {rel} (sections: {names or 'none'})")
        else:
            chosen = chunks
        self._access([c["id"] for c in chosen], "get")
        return {
            "kind": "note",
            "path": rel,
            "section": sec,
            "content": "\n\n".join(c["content"] for c in chosen),
            "start_line": min(c["start_line"] for c in chosen),
            "end_line": max(c["end_line"] for c in chosen),
            "chunks": chosen,
            "sections": sections,
        }

    def used(self, entry_id: object) -> dict[str, Any]:
        """An explicit real use of an entry (an agent acted on it): one access."""
        eid = check_id(entry_id)
        now = self.clock()

        def run(con: Any) -> dict[str, Any]:
            if entries.get(con, eid) is None:
                raise NotFound(f"no entry with id {eid}")
            entries.record_access(con, "used", [eid], now)
            rec = entries.get(con, eid)
            assert rec is not None
            return rec

        rec = self.store.run_write(run)
        return {"id": eid, **{k: rec[k] for k in ("access_count", "last_accessed_at")}}

    def _access(self, ids: list[int], what: str) -> None:
        """Record reads as accesses; a full disk (or any store failure) never fails the read."""
        now = self.clock()
        try:
            self.store.run_write(lambda con: entries.record_access(con, what, ids, now))
        except StoreError as exc:
            log.warning("access not recorded", ids=ids[:10], error=exc.message)

    def list(
        self, filters: Filters, *, limit: int = 20, offset: int = 0, cursor: object = None
    ) -> tuple[builtins.list[dict[str, Any]], int, str | None]:
        check_int(limit, "limit", 1, 1000)
        check_int(offset, "offset", 0)
        now = self.clock()  # (the page, how many match, the next page's cursor or None)
        return self.store.read(
            lambda con: pages.entry_page(con, filters, now, limit, offset, cursor)
        )

    # -- update, validate, promote --------------------------------------------------------------

    def update(self, entry_id: object, changes: dict[str, Any]) -> dict[str, Any]:
        eid = check_id(entry_id)
        now = self.clock()
        changes = dict(changes)
        allow = changes.pop("allow_secrets", False)
        expected = lifecycle.expected_at(changes.pop("expected_updated_at", None))
        unknown = set(changes) - ADD_FIELDS
        if unknown:
            raise InvalidInput(f"cannot update {', '.join(sorted(unknown))}")
        if not changes:
            raise InvalidInput("update: nothing to change (give content, type, tags, ...)")
        values = check_fields(changes, self.settings.max_content_bytes, now)
        if values.get("expires_at") is not None and values["expires_at"] <= now:
            # as add: a past expiry is a mistaken date or zone (to forget: delete)
            raise InvalidInput("expires_at: is in the past")
        values = guard(values, self.secrets_mode, allow, changes).values
        phrases = values.pop("triggers", None)

        def _update(con: Any) -> tuple[dict[str, Any], dict[str, Any]]:
            stamp, before = lifecycle.held(con, eid, now, expected, "changed")
            if before is None:
                raise NotFound(f"no entry with id {eid}")
            entries.update_memory(con, eid, values, stamp)
            if phrases is not None:
                lifecycle.set_triggers(con, eid, phrases)
            after = entries.get(con, eid)
            assert after is not None
            lifecycle.record_history(con, eid, before, after, now)
            return before, after

        with self.changing([eid]):
            try:
                before, rec = self.store.run_write(_update, durable=True)
            except Exception as exc:
                if not lcstore.same_text_stored(exc):
                    raise
                # another daemon stored this text in the namespace since our check: the same
                # refusal as the check's, and nothing of the update was written
                raise InvalidInput(
                    "another memory in this namespace already has this content; delete one of "
                    "the two (or change the text) first"
                ) from None
            log.info("updated", id=eid, fields=sorted(values) + (["triggers"] if phrases else []))
            # every field a daily log line can show (dailylog.line_format placeholders)
            if any(before.get(k) != rec.get(k) for k in LOGGED_FIELDS):
                self._run(self.on_updated, rec)
        self._changed()
        stale = self.stale_lines({eid})  # a full disk refused its log line's rewrite: as delete
        return {**rec, "still_in": stale} if stale else rec

    def promote(self, entry_id: object, tier: object = "critical") -> dict[str, Any]:
        return self.update(entry_id, {"tier": tier})

    def validate(self, entry_id: object, useful: object) -> dict[str, Any]:
        """Record one outcome (useful or not); it also counts as an access."""
        eid = check_id(entry_id)
        if not isinstance(useful, bool):
            raise InvalidInput(f"useful: expected true or false, got {describe(useful)}")
        now = self.clock()

        def run(con: Any) -> dict[str, Any]:
            out = lifecycle.validate(con, eid, useful, now, self.lifecycle)
            entries.record_access(con, "validate", [eid], now)
            return out

        return self.store.run_write(run, durable=True)

    # -- import ---------------------------------------------------------------------------------

    def import_items(
        self,
        items: object,
        *,
        first_line: object = 1,
        allow_secrets: object = False,
        dry_run: object = False,
    ) -> dict[str, Any]:
        """Store exported memories, all or nothing. Each item is checked exactly as `add`
        checks (plus the fields only an export carries); an error names the item's line,
        counted from `first_line` (the file's line of the first item). dry_run: check and
        count only (a client sending a large file in batches checks them all first)."""
        from memoryd.memory import transfer

        if not isinstance(items, list):
            raise InvalidInput("items: expected a list of exported memories")
        first_line = check_int(first_line, "first_line", 1)
        if not isinstance(dry_run, bool):
            raise InvalidInput(f"dry_run: expected true or false, got {describe(dry_run)}")
        if not isinstance(allow_secrets, bool):  # also when no item reaches the secret guard
            raise InvalidInput(
                f"allow_secrets: expected true or false, got {describe(allow_secrets)}"
            )
        now = self.clock()
        checked = []
        for n, item in enumerate(items):
            line = first_line + n
            try:
                checked.append(self._check_import(item, now, allow_secrets))
            except MemorydError as exc:
                data = dict(exc.data or {})
                data["line"] = line
                raise type(exc)(f"line {line}: {exc.message}", data=data) from None
        if dry_run:
            return {
                **self.store.read(lambda con: transfer.plan_items(con, checked)),
                "dry_run": True,
            }
        for attempt in range(3):
            try:
                counts = self.store.run_write(
                    lambda con: transfer.store_items(con, checked, now=now), durable=True
                )
                break
            except Exception as exc:
                # another daemon stored one of these texts meanwhile: the whole import was
                # rolled back; run it again, and that text counts as a duplicate
                if not lcstore.same_text_stored(exc) or attempt == 2:
                    raise
        if counts["imported"]:
            self._changed()
            self._run(self.on_imported, counts)  # its ids, and those renumbered
        log.info("imported", **{k: v for k, v in counts.items() if isinstance(v, int)})
        return counts

    def _check_import(self, item: object, now: float, allow: object) -> dict[str, Any]:
        from memoryd.memory import transfer

        if not isinstance(item, dict):
            raise InvalidInput("expected an object (one exported memory)")
        unknown = set(item) - IMPORT_FIELDS
        if unknown:
            raise InvalidInput(f"unknown field {', '.join(sorted(map(str, unknown)))}")
        if item.get("kind", "memory") != "memory":
            raise InvalidInput("kind: only memories can be imported")
        fields = {k: v for k, v in item.items() if k in (IMPORT_FIELDS - transfer.EXTRAS)}
        if "content" not in fields:
            raise InvalidInput("content: is required")
        values = check_fields(fields, self.settings.max_content_bytes, now)
        values = guard(values, self.secrets_mode, allow, fields).values
        # an id too high to keep (transfer.MAX_KEPT_ID) is renumbered, not refused
        values["id"] = check_id(item["id"]) if item.get("id") is not None else None
        values.update(transfer.check_extras(item))
        s = self.settings
        values.setdefault("type", s.default_type)
        values.setdefault("namespace", s.default_namespace)
        values.setdefault("importance", s.default_importance)
        values.setdefault("created_at", now)
        values.setdefault("updated_at", values["created_at"])
        return values

    # -- delete, prune, expire ------------------------------------------------------------------

    def delete(
        self, entry_id: object, *, dry_run: bool = False, expected_updated_at: object = None
    ) -> dict[str, Any]:
        """One memory; with expected_updated_at only that version (checked as the row is
        deleted, holding it: a change made since is a Conflict and nothing goes)."""
        eid = check_id(entry_id)
        expected = lifecycle.expected_at(expected_updated_at)

        def check(con: Any) -> list[int]:
            rec = entries.get(con, eid)
            if rec is None:
                raise NotFound(f"no entry with id {eid}")
            if rec["kind"] != "memory":
                raise InvalidInput(
                    f"entry {eid} is a chunk of a workspace file; delete or edit the file "
                    "instead (delete path=...)"
                )
            return [eid]

        def guard(con: Any) -> object:
            return lifecycle.held(con, eid, 0.0, expected, "deleted")

        ids = self.store.read(check)
        if dry_run:
            self.store.read(lambda con: lifecycle.held(con, eid, 0.0, expected, "deleted", False))
        return self._remove(ids, dry_run=dry_run, why="deleted", guard=guard)[0]

    def delete_where(
        self, *, tag: object = None, namespace: object = None, dry_run: bool = False
    ) -> dict[str, Any]:
        t = check_tag(tag) if tag is not None else None
        ns = check_name(namespace, "namespace") if namespace is not None else None
        if t is None and ns is None:
            raise InvalidInput("delete: give a tag or a namespace")
        ids = self.store.read(lambda con: lcstore.select_ids(con, tag=t, namespace=ns))
        return self._remove(ids, dry_run=dry_run, why="deleted")[0]

    def prune(self, *, dry_run: bool = False) -> dict[str, Any]:
        """Remove expired and deprecated memories (dry_run: only say which)."""
        now = self.clock()
        ids = self.store.read(
            lambda con: lcstore.select_ids(con, expired_before=now, deprecated=True)
        )
        out, records = self._remove(ids, dry_run=dry_run, why="pruned")
        return {
            "pruned": out["deleted"],
            "dry_run": dry_run,
            "still_in": out["still_in"],
            "items": [
                {
                    "id": r["id"],
                    "tier": r["tier"],
                    "expires_at": r["expires_at"],
                    "summary": lifecycle.summary(r["content"]),
                }
                for r in records
            ],
        }

    def expire(self) -> int:
        """The expiry job: expired memories go through the same door as a delete."""
        now = self.clock()
        ids = self.store.read(lambda con: lcstore.select_ids(con, expired_before=now))
        n = self._remove(ids, dry_run=False, why="expired")[0]["deleted"] if ids else 0
        chunks = self.store.run_write(lambda con: entries.delete_expired(con, now))
        if n or chunks:
            log.info("expired entries removed", memories=n, chunks=chunks)
        return n + chunks

    def _remove(
        self,
        ids: builtins.list[int],
        *,
        dry_run: bool,
        why: str,
        guard: Callable[[Any], object] | None = None,
    ) -> tuple[dict[str, Any], builtins.list[dict[str, Any]]]:
        """Delete memories by id through the hooks; the answer names the checkpoints and
        snapshots taken since the oldest of them was created: they still hold a copy."""
        records = self.store.read(lambda con: entries.get_many(con, ids))
        found = [records[i] for i in ids if i in records]
        if not dry_run and found:

            def remove(con: Any) -> None:
                if guard is not None:  # in the delete's transaction
                    guard(con)
                lcstore.delete_ids(con, [r["id"] for r in found])

            with self.changing([r["id"] for r in found]):
                self.store.run_write(remove, durable=True)
                self._run(self.on_removed, found)
            self._changed()
            log.info(why, ids=[r["id"] for r in found][:50], count=len(found))
        oldest = min((parse_time(r["created_at"]) for r in found), default=None)
        copies = self.copies_since(oldest) if (self.copies_since and oldest is not None) else []
        answer = {
            "deleted": len(found),
            "ids": [r["id"] for r in found],
            "dry_run": dry_run,
            "still_in": copies,
        }
        return answer, found

    # -- hooks ----------------------------------------------------------------------------------

    def _run(self, hooks: builtins.list[Callable[[Any], object]], arg: Any) -> None:
        for hook in hooks:
            try:
                hook(arg)
            except Exception:
                log.exception("memory hook failed", hook=getattr(hook, "__name__", "?"))

    def _changed(self) -> None:
        for hook in self.on_changed:
            try:
                hook()
            except Exception:
                log.exception("change hook failed")


class _Defaults:
    """[lifecycle]'s promotion defaults, for a Memories built without a configuration."""

    promotion_min_useful = 5
    promotion_min_ratio = 0.9
