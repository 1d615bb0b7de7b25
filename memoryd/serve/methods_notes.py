"""JSON-RPC methods for whole notes (`note.*`) and `recent_activity`, registered in
serve/registry.py's table (methods.py imports this module, so the table is whole). The rules
(paths, atomic writes, conflicts) live in memoryd/notes/notes.py."""

from __future__ import annotations

from typing import Any

from memoryd.core.errors import InvalidInput
from memoryd.core.fsutil import from_absolute
from memoryd.memory.validation import check_bound
from memoryd.notes import vault
from memoryd.serve.app import App
from memoryd.serve.registry import method, param_int, param_namespace


def _limit(params: dict[str, Any], default: int, most: int = 1000) -> int:
    return param_int(params, "limit", default, 1, most)


@method("note.read", {"path"}, required=("path",))
def note_read(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """The whole file: {path, content, sha256, size, mtime}."""
    return app.notes.read(params.get("path"))


@method(
    "note.write",
    {"path", "content", "expected_sha256", "allow_secrets"},
    required=("path", "content"),
)
def note_write(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """Create or replace a note atomically: {path, sha256, created}."""
    if "content" not in params:
        raise InvalidInput("note.write: content is required (the whole note, front matter too)")
    return app.notes.write(
        params.get("path"),
        params["content"],
        params.get("expected_sha256"),
        allow_secrets=params.get("allow_secrets", False),
    )


@method(
    "note.append",
    {"path", "content", "expected_sha256", "allow_secrets"},
    required=("path", "content"),
)
def note_append(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """Add text at the end of a note (created if missing): {path, sha256, created}."""
    if "content" not in params:
        raise InvalidInput("note.append: content is required")
    return app.notes.append(
        params.get("path"),
        params["content"],
        params.get("expected_sha256"),
        allow_secrets=params.get("allow_secrets", False),
    )


@method("note.list", {"path", "limit", "offset", "cursor"}, from_index=True)
def note_list(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """Indexed notes under a folder: {items: [{path, size, mtime, title, tags}], total,
    next_cursor}."""
    offset = param_int(params, "offset", 0, 0)
    path, cursor = from_absolute(params.get("path"), app.cfg.workspace), params.get("cursor")
    return app.notes.list(path, limit=_limit(params, 50), offset=offset, cursor=cursor)


@method("note.move", {"path", "new_path", "expected_sha256"}, required=("path", "new_path"))
def note_move(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """Rename a note, never over another: {path, new_path, sha256}."""
    return app.notes.move(params.get("path"), params.get("new_path"), params.get("expected_sha256"))


def since_from(value: object, now: float) -> float | None:
    """An ISO date/time, unix seconds, or a duration back from now ("7d", "12h"): the one
    grammar of every since/until (validation.check_bound)."""
    return check_bound(value, "since", now=now)


@method("recent_activity", {"limit", "since", "namespace"}, from_index=True)
def recent_activity(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """Memories added or changed and notes modified, newest first: {items: [...]}. Memories of
    the namespace given (default: memories.default_namespace; "*": all); notes are shared."""
    ns = param_namespace(params) if params.get("namespace") != "" else None
    ns = ns or app.cfg.memories.default_namespace
    namespace = None if ns == "*" else ns
    now = app.clock()
    return app.notes.recent(
        namespace=namespace,
        since=since_from(params.get("since"), now),
        limit=_limit(params, 20),
        now=now,
    )


@method("graph", {"path", "depth", "limit"}, from_index=True, required=("path",))
def graph(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """A note's neighbourhood through links and backlinks: {center, nodes, edges, truncated}."""
    return vault.neighbourhood(
        app.store,
        from_absolute(params.get("path"), app.cfg.workspace),
        app.indexer.others.snapshot(),
        depth=param_int(params, "depth", 2, 1, vault.GRAPH_MAX_DEPTH),
        limit=param_int(params, "limit", 500, 1, vault.GRAPH_MAX_NODES),
    )
