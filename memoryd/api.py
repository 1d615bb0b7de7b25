"""The JSON-RPC method table: request params -> library calls -> JSON-ready results.

This is the only place where the wire protocol meets the library. Each method names the params
it accepts; an unknown param is an error (it is almost always a typo), and values are checked by
the library functions they are passed to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memoryd import __version__, checkpoints, lifecycle, transfer
from memoryd.app import App
from memoryd.errors import InvalidInput
from memoryd.memories import check_id, check_importance, check_name, check_tags
from memoryd.search import SearchRequest
from memoryd.store import entries
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
        "tier",
        "include_deprecated",
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
    tiers = params.get("tier")
    if tiers is None:
        tier_list: tuple[str, ...] = ()
    elif isinstance(tiers, str):
        tier_list = tuple(lifecycle.check_tier(t) for t in tiers.split(",") if t.strip())
    elif isinstance(tiers, list):
        tier_list = tuple(lifecycle.check_tier(t) for t in tiers)
    else:
        raise InvalidInput("tier: expected a string or a list of tiers")
    if namespace is not None and namespace != "*":
        namespace = check_name(namespace, "namespace")
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
        namespace=namespace,
        tiers=tier_list,
        include_deprecated=_bool(params, "include_deprecated"),
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
    "tier",
    "triggers",
    "allow_secrets",
}


@method("add", ADD_PARAMS | {"skip_near_duplicates"})
def add(app: App, params: dict[str, Any]) -> dict[str, Any]:
    if "content" not in params:
        raise InvalidInput("add: content is required")
    for key in ("allow_secrets", "skip_near_duplicates"):
        _bool(params, key)
    added = app.memories.add(**params)
    return {
        "id": added.id,
        "duplicate": added.duplicate,
        "stored": added.stored,
        "memory": added.record,
        "warnings": list(added.warnings),
        "near_duplicates": list(added.near_duplicates),
    }


@method("get", {"id"})
def get(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return app.memories.get(params.get("id"))


@method("list", FILTER_PARAMS | {"limit", "offset"})
def list_(app: App, params: dict[str, Any]) -> dict[str, Any]:
    filters = filters_from(params, default_kind="memory")
    if filters.namespace is None:
        filters = replace(filters, namespace=app.cfg.memories.default_namespace)
    items, total = app.memories.list(
        filters,
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


@method("delete", {"id", "tag", "namespace", "path", "dry_run"})
def delete(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """One of: id; tag (memories carrying it); namespace (all its memories); path (a workspace
    file or folder: moved to <data_dir>/trash, its chunks leave the index)."""
    given = [k for k in ("id", "tag", "namespace", "path") if params.get(k) is not None]
    if len(given) != 1:
        raise InvalidInput("delete: give exactly one of id, tag, namespace, path")
    dry = _bool(params, "dry_run")
    if "id" in given:
        entry_id = check_id(params["id"])
        if not dry:
            app.memories.delete(entry_id)
        return {"deleted": True, "id": entry_id, "ids": [entry_id], "dry_run": dry}
    if "path" in given:
        return app.trash_path(params["path"], dry_run=dry)
    tag = check_tags([params["tag"]])[0] if "tag" in given else None
    ns = check_name(params["namespace"], "namespace") if "namespace" in given else None
    ids = app.store.read(lambda con: lifecycle.select_ids(con, tag=tag, namespace=ns))
    if not dry and ids:
        app.store.run_write(lambda con: lifecycle.delete_ids(con, ids), durable=True)
    return {"deleted": len(ids), "ids": ids, "dry_run": dry}


@method("prune", {"dry_run"})
def prune(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """Remove expired and deprecated memories (dry_run: only say which)."""
    dry = _bool(params, "dry_run")
    now = app.clock()
    ids = app.store.read(lambda con: lifecycle.select_ids(con, expired_before=now, deprecated=True))
    records = app.store.read(lambda con: entries.get_many(con, ids))
    if not dry and ids:
        app.store.run_write(lambda con: lifecycle.delete_ids(con, ids), durable=True)
    return {
        "pruned": len(ids),
        "dry_run": dry,
        "items": [
            {
                "id": i,
                "tier": records[i]["tier"],
                "expires_at": records[i]["expires_at"],
                "summary": lifecycle.summary(records[i]["content"]),
            }
            for i in ids
        ],
    }


@method("session_start", {"namespace", "max_tokens"})
def session_start(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """The constitutional memories, most important first, within a token budget."""
    budget = _int(params, "max_tokens", app.cfg.lifecycle.session_max_tokens)
    if budget < 1:
        raise InvalidInput("max_tokens: expected a positive integer")
    ns = params.get("namespace") or app.cfg.memories.default_namespace
    now = app.clock()
    found, used, total = app.store.read(
        lambda con: lifecycle.session_memories(con, ns, budget, now)
    )
    return {"memories": found, "tokens_used": used, "total": total, "has_more": len(found) < total}


@method("match_triggers", {"prompt", "namespace"})
def match_triggers(app: App, params: dict[str, Any]) -> dict[str, Any]:
    prompt = params.get("prompt")
    if not isinstance(prompt, str):
        raise InvalidInput("prompt: expected a string")
    ns = params.get("namespace")

    def run(con: Any) -> list[dict[str, Any]]:
        found = app.triggers.match(con, prompt)
        records = entries.get_many(con, list(found))
        return [
            {**records[i], "matched": found[i]}
            for i in found
            if i in records and (not ns or ns == "*" or records[i]["namespace"] == ns)
        ]

    return {"memories": app.store.read(run)}


@method("validate", {"id", "useful"})
def validate(app: App, params: dict[str, Any]) -> dict[str, Any]:
    entry_id = check_id(params.get("id"))
    if not isinstance(params.get("useful"), bool):
        raise InvalidInput("useful: expected true or false")
    now = app.clock()
    out = app.store.run_write(
        lambda con: lifecycle.validate(con, entry_id, params["useful"], now), durable=True
    )
    lc = app.cfg.lifecycle
    out["promotion_candidate"] = (
        out["useful_count"] >= lc.promotion_min_useful
        and out["useful_count"] >= lc.promotion_min_ratio * out["validation_count"]
    )
    return out


@method("promotion_candidates")
def promotion_candidates(app: App, params: dict[str, Any]) -> dict[str, Any]:
    lc = app.cfg.lifecycle
    found = app.store.read(
        lambda con: lifecycle.promotion_candidates(
            con, lc.promotion_min_useful, lc.promotion_min_ratio
        )
    )
    return {"candidates": found}


@method("promote", {"id", "tier"})
def promote(app: App, params: dict[str, Any]) -> dict[str, Any]:
    tier = lifecycle.check_tier(params.get("tier", "critical"))
    return app.memories.update(params.get("id"), {"tier": tier})


@method("history", {"id"})
def history(app: App, params: dict[str, Any]) -> dict[str, Any]:
    entry_id = check_id(params.get("id"))
    return {"id": entry_id, "history": app.store.read(lambda con: lifecycle.history(con, entry_id))}


@method("checkpoint.create", {"name"}, slow=True)
def checkpoint_create(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return checkpoints.create(app, params.get("name"))  # type: ignore[arg-type]


@method("checkpoint.list")
def checkpoint_list(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return {"checkpoints": checkpoints.list_all(app)}


@method("checkpoint.restore", {"name"}, slow=True)
def checkpoint_restore(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return checkpoints.restore(app, params.get("name"))  # type: ignore[arg-type]


@method("export", {"namespace", "vectors"}, slow=True)
def export(app: App, params: dict[str, Any]) -> dict[str, Any]:
    ns = params.get("namespace")
    with_vectors = _bool(params, "vectors")
    items = app.store.read(
        lambda con: list(transfer.export(con, namespace=ns, with_vectors=with_vectors))
    )
    return {"items": items, "count": len(items)}


@method("import", {"items"}, slow=True)
def import_(app: App, params: dict[str, Any]) -> dict[str, Any]:
    items = params.get("items")
    if not isinstance(items, list):
        raise InvalidInput("items: expected a list of exported memories")
    now = app.clock()
    limit = app.cfg.memories.max_content_bytes
    counts = app.store.run_write(
        lambda con: transfer.import_items(con, items, now=now, max_bytes=limit), durable=True
    )
    app.triggers.invalidate()
    app.embedder.wake()
    return counts


SEARCH_PARAMS = FILTER_PARAMS | {
    "query",
    "limit",
    "mode",
    "explain",
    "use_decay",
    "include_constitutional",
    "max_tokens",
    "concepts",
    "group",
}


@method("search", SEARCH_PARAMS)
def search(app: App, params: dict[str, Any]) -> dict[str, Any]:
    concepts = params.get("concepts") or ()
    if concepts and not isinstance(concepts, list):
        raise InvalidInput("concepts: expected a list of 2 to 5 strings")
    query = params.get("query", "")
    if not concepts and (not isinstance(query, str) or not query.strip()):
        raise InvalidInput("search: query must be a non-empty string (or give concepts)")
    mode = params.get("mode", "auto")
    if not isinstance(mode, str):
        raise InvalidInput("mode: expected a string")
    use_decay = params.get("use_decay", True)
    if not isinstance(use_decay, bool):
        raise InvalidInput("use_decay: expected true or false")
    filters = filters_from(params, default_kind=None)
    if filters.namespace is None:
        filters = replace(filters, namespace=app.cfg.memories.default_namespace)
    return app.searcher.search(
        SearchRequest(
            query=query if isinstance(query, str) else "",
            limit=params.get("limit"),
            mode=mode,
            filters=filters,
            explain=_bool(params, "explain"),
            use_decay=use_decay,
            include_constitutional=_bool(params, "include_constitutional"),
            max_tokens=params.get("max_tokens"),
            concepts=tuple(concepts),
            group=params.get("group", "note"),
        )
    )


@method("stats", {"namespace"})
def stats(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return app.stats(namespace=params.get("namespace"))


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
