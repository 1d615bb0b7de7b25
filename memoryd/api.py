"""The JSON-RPC method table: request params -> library calls -> JSON-ready results.

This is the only place where the wire protocol meets the library. Each method names the params
it accepts; an unknown param is an error (it is almost always a typo), and values are checked by
the library functions they are passed to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd import __version__
from memoryd.app import App
from memoryd.errors import InvalidInput
from memoryd.memories import check_id, check_importance, check_name, check_tags
from memoryd.search import SearchRequest
from memoryd.store.entries import Filters
from memoryd.timeutil import parse_time

FILTER_PARAMS = frozenset(
    {
        "kind",
        "type",
        "tags",
        "source",
        "path",
        "since",
        "until",
        "min_importance",
        "include_expired",
        "namespace",
    }
)


@dataclass(frozen=True)
class Method:
    fn: Callable[[App, dict[str, Any]], Any]
    params: frozenset[str]
    slow: bool = False  # runs long (reindex, jobs): no request timeout


METHODS: dict[str, Method] = {}


def method(name: str, params: set[str] | frozenset[str] = frozenset(), *, slow: bool = False):
    def register(fn: Callable[[App, dict[str, Any]], Any]) -> Callable[[App, dict[str, Any]], Any]:
        METHODS[name] = Method(fn, frozenset(params), slow)
        return fn

    return register


def lookup(name: str, params: dict[str, Any]) -> Method:
    """The method and checked param names; raises KeyError for an unknown method."""
    m = METHODS[name]
    unknown = set(params) - m.params
    if unknown:
        allowed = ", ".join(sorted(m.params)) or "none"
        raise InvalidInput(
            f"{name}: unknown param {', '.join(sorted(unknown))} (accepted: {allowed})"
        )
    return m


def _bool(params: dict[str, Any], key: str) -> bool:
    value = params.get(key, False)
    if not isinstance(value, bool):
        raise InvalidInput(f"{key}: expected true or false, got {value!r}")
    return value


def _int(params: dict[str, Any], key: str, default: int) -> int:
    value = params.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{key}: expected an integer, got {value!r}")
    return value


def filters_from(params: dict[str, Any], *, default_kind: str | None) -> Filters:
    kind = params.get("kind", default_kind)
    if kind == "all":
        kind = None
    if kind not in (None, "memory", "chunk"):
        raise InvalidInput(f"kind: expected memory, chunk or all, got {kind!r}")
    types = params.get("type")
    if types is None:
        type_list: tuple[str, ...] = ()
    elif isinstance(types, str):
        type_list = tuple(check_name(t, "type") for t in types.split(",") if t.strip())
    elif isinstance(types, list):
        type_list = tuple(check_name(t, "type") for t in types)
    else:
        raise InvalidInput("type: expected a string or a list of strings")
    path = params.get("path")
    if path is not None and not isinstance(path, str):
        raise InvalidInput("path: expected a workspace-relative path prefix")
    source = params.get("source")
    if source is not None and not isinstance(source, str):
        raise InvalidInput("source: expected a string")
    namespace = params.get("namespace")
    return Filters(
        kind=kind,
        types=type_list,
        tags=check_tags(params["tags"]) if params.get("tags") is not None else (),
        source=source,
        path_prefix=path,
        since=parse_time(params["since"], what="since")
        if params.get("since") is not None
        else None,
        until=parse_time(params["until"], what="until")
        if params.get("until") is not None
        else None,
        min_importance=(
            check_importance(params["min_importance"])
            if params.get("min_importance") is not None
            else None
        ),
        include_expired=_bool(params, "include_expired"),
        namespace=check_name(namespace, "namespace") if namespace is not None else None,
    )


# --- methods -----------------------------------------------------------------------------------


@method("ping")
def ping(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return {"pong": True, "version": __version__}


ADD_PARAMS = {
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
}


@method("add", ADD_PARAMS)
def add(app: App, params: dict[str, Any]) -> dict[str, Any]:
    if "content" not in params:
        raise InvalidInput("add: content is required")
    added = app.memories.add(**params)
    return {"id": added.id, "duplicate": added.duplicate, "memory": added.record}


@method("get", {"id"})
def get(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return app.memories.get(params.get("id"))


@method("list", FILTER_PARAMS | {"limit", "offset"})
def list_(app: App, params: dict[str, Any]) -> dict[str, Any]:
    items, total = app.memories.list(
        filters_from(params, default_kind="memory"),
        limit=_int(params, "limit", 20),
        offset=_int(params, "offset", 0),
    )
    return {"items": items, "total": total}


@method("update", (ADD_PARAMS - {"content"}) | {"id", "content"})
def update(app: App, params: dict[str, Any]) -> dict[str, Any]:
    changes = {k: v for k, v in params.items() if k != "id"}
    if not changes:
        raise InvalidInput("update: nothing to change (give content, type, tags, ...)")
    return app.memories.update(params.get("id"), changes)


@method("delete", {"id"})
def delete(app: App, params: dict[str, Any]) -> dict[str, Any]:
    entry_id = check_id(params.get("id"))
    app.memories.delete(entry_id)
    return {"deleted": True, "id": entry_id}


@method("search", FILTER_PARAMS | {"query", "limit", "mode", "explain"})
def search(app: App, params: dict[str, Any]) -> dict[str, Any]:
    query = params.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("search: query must be a non-empty string")
    mode = params.get("mode", "auto")
    if not isinstance(mode, str):
        raise InvalidInput("mode: expected a string")
    limit = params.get("limit")
    return app.searcher.search(
        SearchRequest(
            query=query,
            limit=limit,
            mode=mode,
            filters=filters_from(params, default_kind=None),
            explain=_bool(params, "explain"),
        )
    )


@method("stats")
def stats(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return app.stats()


@method("status", {"check"}, slow=True)
def status(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return app.status(check=_bool(params, "check"))


@method("reindex", {"path", "full"}, slow=True)
def reindex(app: App, params: dict[str, Any]) -> dict[str, Any]:
    path = params.get("path")
    if path is not None:
        if not isinstance(path, str) or not path.strip():
            raise InvalidInput("path: expected a workspace-relative path")
        full = (app.cfg.workspace / path).resolve()
        if app.indexer.relpath(full) is None:
            raise InvalidInput(f"path: {path!r} is outside the workspace")
        return app.indexer.sync_paths([Path(full)]).as_dict()
    if _bool(params, "full"):
        # Forget every stored hash: each file is read, chunked and stored again in place (search
        # keeps answering meanwhile; vectors are reused through their text hashes).
        app.store.run_write(lambda con: con.execute("UPDATE documents SET sha256 = '', size = -1"))
    return app.indexer.reconcile().as_dict()


@method("jobs", slow=True)
def jobs(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return {"jobs": app.jobs.list()}


@method("jobs.run", {"name"}, slow=True)
def jobs_run(app: App, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    if not isinstance(name, str):
        raise InvalidInput("name: expected a job name (see the jobs method)")
    return app.jobs.run_now(name)
