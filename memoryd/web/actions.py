"""What the page's JSON routes do: each one calls the socket API's method table (the same
doors, the same param checks: serve/registry.lookup), and answers JSON.

A route's query string or JSON body becomes the method's params; only the params a route
names are passed on. Errors come back as {"error": {"code", "message"}} with an HTTP status
that says what kind of error it is."""

from __future__ import annotations

import collections
import contextlib
import itertools
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.core.errors import (
    Conflict,
    DiskFull,
    InvalidInput,
    MemorydError,
    NotFound,
    Refused,
    StoreUnavailable,
    TooLarge,
    Unavailable,
    describe,
)
from memoryd.notes.vault import LINKS_MAX
from memoryd.serve import methods  # noqa: F401  (fills the method table `lookup` reads)
from memoryd.serve.app import App
from memoryd.serve.registry import lookup
from memoryd.web.http import Request, Response

TRASH_KEEP = 100
# a note's backlinks the note page lists at first, and at each "show more" (/api/backlinks with
# the cursor the last page gave): a hub note of 10,000 notes answered 770 kB and as many rows
BACKLINKS_SHOWN = 500
LIST_PARAMS = (
    "type",
    "tier",
    "tags",
    "namespace",
    "since",
    "until",
    "limit",
    "offset",
    "cursor",
    "source",
)
SEARCH_PARAMS = (
    "query",
    "mode",
    "kind",
    "type",
    "tier",
    "tags",
    "namespace",
    "path",
    "since",
    "until",
    "limit",
    "min_importance",
    "include_deprecated",
    "include_expired",
    "explain",
)
INT_PARAMS = frozenset(
    {
        "limit",
        "offset",
        "min_importance",
        "depth",
        "id",
        "importance",
        "top",
        "relations",
        "max_tokens",
    }
)
BOOL_PARAMS = frozenset({"include_deprecated", "include_expired", "explain", "useful"})
TRUE, FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off"})
LIST_VALUED = frozenset({"tags"})


@dataclass
class Trash:
    """Memories deleted from the page, for undo: kept in memory only, for the daemon's
    lifetime (memoryd overwrites deleted text on disk; a file of them would undo that)."""

    items: collections.deque[dict[str, Any]] = field(
        default_factory=lambda: collections.deque(maxlen=TRASH_KEEP)
    )
    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def put(self, record: dict[str, Any]) -> dict[str, Any]:
        entry = {"key": next(self.ids), "deleted_at": time.time(), "memory": record}
        with self.lock:
            self.items.appendleft(entry)
        return entry

    def take(self, key: int) -> dict[str, Any] | None:
        with self.lock:
            for entry in self.items:
                if entry["key"] == key:
                    self.items.remove(entry)
                    return entry
        return None

    def list(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.items)


@dataclass
class Context:
    app: App
    trash: Trash


def call(app: App, name: str, params: dict[str, Any]) -> Any:
    """One call through the socket API's method table: its param check, then its function."""
    return lookup(name, params).fn(app, params)


STATUS = {
    NotFound.code: 404,
    InvalidInput.code: 400,
    Conflict.code: 409,
    TooLarge.code: 413,
    Refused.code: 403,
    Unavailable.code: 503,
    StoreUnavailable.code: 503,
    DiskFull.code: 507,  # no room to write (Insufficient Storage)
}


def status_of(code: int) -> int:
    """The HTTP status that says what kind of error a JSON-RPC code is (500: the others)."""
    return STATUS.get(code, 500)


def http_status(exc: MemorydError) -> int:
    return status_of(exc.code)


def error(exc: MemorydError) -> Response:
    """{"error": {"code", "message"}}, and `data.suggestions` of a name no entity has (the
    entity page links them; nothing else of an error's data is passed on)."""
    body: dict[str, Any] = {"code": exc.code, "message": exc.message}
    data = exc.data if isinstance(exc.data, dict) else {}
    if isinstance(data.get("suggestions"), list):
        body["data"] = {"suggestions": data["suggestions"]}
    return Response.json({"error": body}, status=http_status(exc))


def params_from(
    values: dict[str, Any], names: tuple[str, ...], route: str, *, text: bool = True
) -> dict[str, Any]:
    """The named params, from a query string (`text`: numbers, booleans and comma lists are
    read as the API takes them; blank counts as not given) or a JSON body (as sent, as the
    socket takes it: `"id": "5"` is refused as there). Any other param is refused as the
    socket refuses one (`/api/memories: unknown param 'kind' (accepted: ...)`): left out, a
    filter would silently not apply."""
    unknown = set(values) - set(names)
    if unknown:
        shown = ", ".join(sorted(describe(k) for k in unknown))
        accepted = ", ".join(sorted(names)) or "none"
        raise InvalidInput(f"{route}: unknown param {shown} (accepted: {accepted})")
    if not text:
        return {name: values[name] for name in names if name in values}
    out: dict[str, Any] = {}
    for name in names:
        value = values.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        if isinstance(value, str):
            if name in INT_PARAMS:
                # text that is no integer goes on as it is: the method refuses it in its own
                # words, as the socket does (`limit: expected an integer from 1 to 1000, got
                # 'x'`)
                with contextlib.suppress(ValueError):
                    value = int(value)
            elif name in BOOL_PARAMS:
                word = value.strip().lower()
                if word not in TRUE | FALSE:
                    raise InvalidInput(f"{name}: expected true or false, got {describe(value)}")
                value = word in TRUE
            elif name in LIST_VALUED:
                value = [t.strip() for t in value.split(",") if t.strip()]
        out[name] = value
    return out


# --- the routes ------------------------------------------------------------------------------


def search(ctx: Context, req: Request) -> Any:
    params = params_from(req.query, SEARCH_PARAMS, req.path)
    params.setdefault("limit", 20)
    return call(ctx.app, "search", params)


def memories(ctx: Context, req: Request) -> Any:
    params = params_from(req.query, LIST_PARAMS, req.path)
    params.setdefault("limit", 100)
    return call(ctx.app, "list", params)


def memory(ctx: Context, req: Request) -> Any:
    return call(ctx.app, "get", params_from(req.query, ("id",), req.path))


def facets(ctx: Context, req: Request) -> Any:
    """What the filters offer: namespaces, types and tiers (from `stats`)."""
    stats = call(ctx.app, "stats", params_from(req.query, ("namespace",), req.path))
    return {
        "namespaces": stats.get("namespaces"),
        "by_type": stats.get("by_type"),
        "by_tier": stats.get("by_tier"),
        "default_namespace": ctx.app.cfg.memories.default_namespace,
    }


def note(ctx: Context, req: Request) -> Any:
    """A note, its links and its first BACKLINKS_SHOWN backlinks (how many there are, and the
    cursor of the next page: /api/backlinks), and where to open it."""
    path = params_from(req.query, ("path",), req.path).get("path", "")
    found = call(ctx.app, "note.read", {"path": path})
    links = call(ctx.app, "links", {"path": found["path"], "limit": LINKS_MAX})
    backlinks = call(ctx.app, "backlinks", {"path": found["path"], "limit": BACKLINKS_SHOWN})
    workspace = Path(ctx.app.cfg.workspace)
    vault = (workspace / ".obsidian").is_dir()
    return {
        **found,
        "links": links["links"],
        "links_total": links["total"],
        "backlinks": backlinks["backlinks"],
        "backlinks_total": backlinks["total"],
        "backlinks_cursor": backlinks["next_cursor"],
        "file": str(workspace / found["path"]),
        "vault": workspace.name if vault else None,
    }


def backlinks(ctx: Context, req: Request) -> Any:
    """A page of a note's backlinks: the note page's "show more"."""
    params = params_from(req.query, ("path", "limit", "cursor"), req.path)
    params.setdefault("limit", BACKLINKS_SHOWN)
    return call(ctx.app, "backlinks", params)


def notes(ctx: Context, req: Request) -> Any:
    return call(
        ctx.app,
        "note.list",
        params_from(req.query, ("path", "limit", "offset", "cursor"), req.path),
    )


def graph(ctx: Context, req: Request) -> Any:
    return call(ctx.app, "graph", params_from(req.query, ("path", "depth", "limit"), req.path))


def entities(ctx: Context, req: Request) -> Any:
    return call(
        ctx.app, "entities", params_from(req.query, ("type", "since", "top", "cursor"), req.path)
    )


def entity(ctx: Context, req: Request) -> Any:
    return call(
        ctx.app,
        "entity",
        params_from(req.query, ("name", "max_tokens", "relations", "type"), req.path),
    )


def related(ctx: Context, req: Request) -> Any:
    return call(
        ctx.app,
        "related",
        params_from(req.query, ("name", "depth", "top", "type", "max_tokens", "cursor"), req.path),
    )


def status(ctx: Context, req: Request) -> Any:
    out = call(ctx.app, "status", params_from(req.query, (), req.path))
    out["searches"] = call(ctx.app, "searches", {})
    out["stats"] = call(ctx.app, "stats", {"namespace": "*"})
    return out


def memory_update(ctx: Context, req: Request) -> Any:
    body = _body(req)
    # expected_updated_at: the version the form was opened on (a change since: 409, conflict)
    fields: tuple[str, ...] = (
        "id",
        "content",
        "type",
        "tags",
        "importance",
        "source",
        "context",
        "namespace",
    )
    fields = (*fields, "expected_updated_at")
    return call(ctx.app, "update", params_from(body, fields, req.path, text=False))


def memory_validate(ctx: Context, req: Request) -> Any:
    return call(
        ctx.app, "validate", params_from(_body(req), ("id", "useful"), req.path, text=False)
    )


def memory_tier(ctx: Context, req: Request) -> Any:
    return call(ctx.app, "promote", params_from(_body(req), ("id", "tier"), req.path, text=False))


def memory_delete(ctx: Context, req: Request) -> Any:
    """Delete through the API's door, keeping the memory as it was for undo."""
    params = params_from(_body(req), ("id", "expected_updated_at"), req.path, text=False)
    record = call(ctx.app, "get", {"id": params.get("id")})
    if record.get("kind") != "memory":
        raise InvalidInput("only memories are deleted here; edit or delete the note instead")
    result = call(ctx.app, "delete", params)
    entry = ctx.trash.put(record)
    return {**result, "trash_key": entry["key"]}


def trash(ctx: Context, req: Request) -> Any:
    params_from(req.query, (), req.path)
    return {"items": ctx.trash.list()}


def trash_restore(ctx: Context, req: Request) -> Any:
    """Undo a delete: the memory as it was goes back through `import` (a new id: ids are never
    reused)."""
    key = params_from(_body(req), ("key",), req.path, text=False).get("key")
    if isinstance(key, bool) or not isinstance(key, int):
        raise InvalidInput("key: expected the number of a deleted memory in the trash")
    entry = ctx.trash.take(key)
    if entry is None:
        raise NotFound(f"nothing in the trash under {key}")
    try:
        result = call(ctx.app, "import", {"items": [entry["memory"]]})
    except MemorydError:
        with ctx.trash.lock:
            ctx.trash.items.appendleft(entry)
        raise
    return result


def _body(req: Request) -> dict[str, Any]:
    data = req.json()
    if not isinstance(data, dict):
        raise InvalidInput("the body must be a JSON object")
    return data
