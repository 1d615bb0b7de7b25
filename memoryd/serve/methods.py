"""The JSON-RPC method table: request params -> library calls -> JSON-ready results.

This is the only place where the wire protocol meets the library. Each method names the params
it accepts; an unknown param is an error (it is almost always a typo), and values are checked by
the library functions they are passed to.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from memoryd import __version__
from memoryd.core.errors import InvalidInput, NotFound, Unavailable, describe
from memoryd.core.fsutil import as_on_disk, from_absolute
from memoryd.memory import checkpoints, lifecycle, transfer
from memoryd.memory.memories import (
    ADD_FIELDS,
    check_id,
    check_name,
    check_tags,
)
from memoryd.memory.validation import check_bound, check_int, check_str
from memoryd.notes import vault
from memoryd.notes.fsops import normalize as note_path
from memoryd.search import entities as entity_search
from memoryd.search.searcher import SearchRequest
from memoryd.serve import (
    methods_entities,  # registers entity, entities, related; expired_gone
    methods_notes,  # noqa: F401  (registers note.* and recent_activity)
)
from memoryd.serve.app import App
from memoryd.serve.registry import (  # noqa: F401  (METHODS, Method, lookup: server.py and tests read them here)
    METHODS,
    Method,
    check_strings,
    lookup,
    method,
    param_bool,
    param_int,
    param_namespace,
)
from memoryd.store import entitystage
from memoryd.store.entityread import filter_answer, resolved
from memoryd.store.entries import Filters

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
        "entities",
    }
)


def filters_from(
    params: dict[str, Any], *, default_kind: str | None, root: Path | None = None
) -> Filters:
    """The filter params as Filters; a `path` under `root` (the workspace) is taken as it is
    written on disk (fsutil.as_on_disk: 'café' typed finds the folder a Mac named)."""
    kind = params.get("kind", default_kind)
    if kind == "all":
        kind = None
    if kind not in (None, "memory", "chunk"):
        raise InvalidInput(f"kind: expected memory, chunk or all, got {describe(kind)}")
    types = params.get("type")
    if types is None:
        type_list: tuple[str, ...] = ()
    elif isinstance(types, str):
        type_list = tuple(check_name(t, "type") for t in types.split(",") if t.strip())
    elif isinstance(types, list):
        type_list = tuple(check_name(t, "type") for t in types)
    else:
        raise InvalidInput("type: expected a string or a list of strings")
    # a folder as note.list reads it ('', '.' or '/' = all; './a', 'a//b' and 'a\\b' are 'a/b';
    # '..' and absolute paths refused): one rule for every param naming a workspace path
    path = from_absolute(params.get("path"), root)
    path = None if path in (None, "", ".", "/") else note_path(path)
    if path is not None and root is not None:
        path = as_on_disk(root, path)  # 'café' typed: the folder a Mac named 'café'
    source = params.get("source")
    if source is not None:
        source = check_str(source, "source", limit=1000)
    tiers = params.get("tier")
    if tiers is None:
        tier_list: tuple[str, ...] = ()
    elif isinstance(tiers, str):
        tier_list = tuple(lifecycle.check_tier(t) for t in tiers.split(",") if t.strip())
    elif isinstance(tiers, list):
        tier_list = tuple(lifecycle.check_tier(t) for t in tiers)
    else:
        raise InvalidInput("tier: expected a string or a list of tiers")
    names = params.get("entities")
    if isinstance(names, str):
        names = [names]
    if names is not None and (
        not isinstance(names, list) or not all(isinstance(n, str) for n in names)
    ):
        raise InvalidInput(f"entities: expected a list of names, got {describe(names)}")
    if names and not all(n.strip() for n in names):
        raise InvalidInput("entities: a name must not be empty")
    since, until = (
        check_bound(params.get("since"), "since"),
        check_bound(params.get("until"), "until"),
    )
    if since is not None and until is not None and until <= since:  # swapped, most likely
        raise InvalidInput(
            f"until: {describe(params['until'])} is not after since ({describe(params['since'])}):"
            " nothing can match"
        )
    return Filters(
        entities=tuple(check_str(n, "entities", limit=500) for n in names or ()),
        kind=kind,
        types=type_list,
        tags=check_tags(params["tags"]) if params.get("tags") is not None else (),
        source=source,
        path_prefix=path,
        since=since,
        until=until,
        min_importance=(
            check_int(params["min_importance"], "min_importance", 1, 10)
            if params.get("min_importance") is not None
            else None
        ),
        include_expired=param_bool(params, "include_expired"),
        namespace=param_namespace(params),
        tiers=tier_list,
        include_deprecated=param_bool(params, "include_deprecated"),
    )


# --- methods -----------------------------------------------------------------------------------


@method("ping")
def ping(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return {"pong": True, "version": __version__}


ADD_PARAMS = set(ADD_FIELDS) | {"allow_secrets"}


@method("add", ADD_PARAMS | {"skip_near_duplicates"}, required=("content",))
def add(app: App, params: dict[str, Any]) -> dict[str, Any]:
    added = app.memories.add(**params)
    warnings = list(added.warnings)
    if added.stored and app.dailylog.is_waiting(added.id):  # stored; its log line waits
        warnings.append(
            f"stored, but not in the daily log yet ({app.dailylog.refusals.error}); "
            "the line is written there by itself once the disk takes it"
        )
    return {
        "id": added.id,
        "duplicate": added.duplicate,
        "stored": added.stored,
        "memory": added.record,
        "warnings": warnings,
        "near_duplicates": list(added.near_duplicates),
    }


@method("get", {"id", "path", "section"})
def get(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """{id}: a memory or chunk; {path, section?}: a note of the workspace, or one section."""
    if params.get("path") is not None:
        if params.get("id") is not None:
            raise InvalidInput("get: give id, or path (and section), not both")
        rel = note_path(from_absolute(params["path"], app.cfg.workspace))
        return app.memories.get_note(rel, params.get("section"))
    if params.get("section") is not None:
        raise InvalidInput("get: section needs a path")
    if "id" not in params:
        raise InvalidInput("get: give id, or path (and section)")
    return app.memories.get(params.get("id"))


@method("used", {"id"}, required=("id",))
def used(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return app.memories.used(params.get("id"))


def _search_limit(app: App, params: dict[str, Any]) -> int:
    return param_int(params, "limit", app.cfg.search.default_limit, 1, app.cfg.search.max_limit)


@method("list", FILTER_PARAMS | {"limit", "offset", "cursor"})
def list_(app: App, params: dict[str, Any]) -> dict[str, Any]:
    filters = filters_from(params, default_kind="memory", root=app.cfg.workspace)
    if filters.namespace is None:
        filters = replace(filters, namespace=app.cfg.memories.default_namespace)
    limit = param_int(params, "limit", 20, 1, 1000)
    offset = param_int(params, "offset", 0, 0)
    if filters.entities:  # resolved once, as search does: the names no entity has are said
        filters = app.store.read(lambda con: resolved(con, filters))
    items, total, following = app.memories.list(
        filters, limit=limit, offset=offset, cursor=params.get("cursor")
    )
    out: dict[str, Any] = {"items": items, "total": total, "next_cursor": following}
    return out | filter_answer(filters)  # unknown names, the others a name is for: as search


@method(
    "update",
    (ADD_PARAMS - {"content"}) | {"id", "content", "expected_updated_at"},
    required=("id",),
)
def update(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """Change fields of a memory; with expected_updated_at, only the version read."""
    return app.memories.update(params.get("id"), {k: v for k, v in params.items() if k != "id"})


@method(
    "delete",
    {"id", "tag", "namespace", "path", "dry_run", "expected_sha256", "expected_updated_at"},
)
def delete(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """One of: id; tag (memories carrying it); namespace (all its memories); path (a workspace
    file or folder: moved to <data_dir>/trash, its chunks leave the index; with
    expected_sha256, only the note at that version)."""
    given = [k for k in ("id", "tag", "namespace", "path") if params.get(k) is not None]
    if len(given) != 1:
        raise InvalidInput("delete: give exactly one of id, tag, namespace, path")
    dry = param_bool(params, "dry_run")
    sha = params.get("expected_sha256")
    if sha is not None and "path" not in given:
        raise InvalidInput("expected_sha256: only with path (the note's version note.read gave)")
    at = params.get("expected_updated_at")
    if at is not None and "id" not in given:
        raise InvalidInput("expected_updated_at: only with id (the memory's version get gave)")
    if "id" in given:
        res = app.memories.delete(params["id"], dry_run=dry, expected_updated_at=at)
        return {**res, "deleted": True, "id": res["ids"][0]}
    if "path" in given:
        return app.notes.trash(params["path"], dry_run=dry, expected_sha256=sha)
    return app.memories.delete_where(
        tag=params.get("tag"), namespace=params.get("namespace"), dry_run=dry
    )


@method("prune", {"dry_run"})
def prune(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """Remove expired and deprecated memories (dry_run: only say which)."""
    return app.memories.prune(dry_run=param_bool(params, "dry_run"))


@method("session_start", {"namespace", "max_tokens"})
def session_start(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """The constitutional memories, most important first, within a token budget."""
    budget = param_int(params, "max_tokens", app.cfg.lifecycle.session_max_tokens, 1)
    ns = params.get("namespace")
    ns = check_name(ns, "namespace") if ns not in (None, "", "*") else (ns or None)
    ns = ns or app.cfg.memories.default_namespace
    now = app.clock()
    found, used, total = app.store.read(
        lambda con: lifecycle.session_memories(con, ns, budget, now)
    )
    return {"memories": found, "tokens_used": used, "total": total, "has_more": len(found) < total}


@method("match_triggers", {"prompt", "namespace"}, required=("prompt",))
def match_triggers(app: App, params: dict[str, Any]) -> dict[str, Any]:
    prompt = check_str(params.get("prompt"), "prompt", limit=1_000_000)
    if not prompt.strip():  # as the MCP tool's schema says: nothing can match an empty text
        raise InvalidInput("prompt: must not be empty")
    ns = param_namespace(params)
    now = app.clock()
    found = app.store.read(lambda con: lifecycle.matching(con, app.triggers, prompt, ns, now))
    return {"memories": found}


@method("validate", {"id", "useful"}, required=("id", "useful"))
def validate(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return app.memories.validate(params.get("id"), params.get("useful"))


@method("promotion_candidates", {"limit", "cursor"})
def promotion_candidates(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """A page of them: {candidates, total, has_more, next_cursor}."""
    most = lifecycle.CANDIDATES_MAX
    limit = param_int(params, "limit", lifecycle.CANDIDATES_LIMIT, 1, most)
    cursor, rule = params.get("cursor"), app.memories.lifecycle  # ([lifecycle] thresholds)
    return app.store.read(
        lambda con: lifecycle.promotion_candidates(con, rule, limit=limit, cursor=cursor)
    )


@method("promote", {"id", "tier"}, required=("id",))
def promote(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return app.memories.promote(params.get("id"), params.get("tier", "critical"))


@method("history", {"id", "limit", "cursor"}, required=("id",))
def history(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """A page of a memory's changes: {id, history, total, has_more, next_cursor}."""
    entry_id = check_id(params.get("id"))
    limit = param_int(params, "limit", lifecycle.HISTORY_LIMIT, 1, lifecycle.HISTORY_MAX)
    cursor = params.get("cursor")
    page = app.store.read(lambda con: lifecycle.history(con, entry_id, limit=limit, cursor=cursor))
    return {"id": entry_id, **page}


@method("checkpoint.create", {"name"}, slow=True, required=("name",))
def checkpoint_create(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return checkpoints.create(app.store, app.cfg.data_dir, params.get("name"))


@method("checkpoint.list", {"kind"})
def checkpoint_list(app: App, params: dict[str, Any]) -> dict[str, Any]:
    kind = params.get("kind", "checkpoint")
    return {"checkpoints": checkpoints.list_all(app.store, app.cfg.data_dir, kind)}


@method("checkpoint.restore", {"name", "kind"}, slow=True, required=("name",))
def checkpoint_restore(app: App, params: dict[str, Any]) -> dict[str, Any]:
    restored = checkpoints.restore(
        app.store,
        app.cfg.data_dir,
        params.get("name"),
        kind=params.get("kind", "checkpoint"),
        clock=app.clock,
        dailylog=app.dailylog,
        after_restore=app.after_restore,
        sync_paths=app.indexer.sync_paths,
        reconcile=app.indexer.reconcile,
    )
    entitystage.store_caught_up(app.store)  # the notes it read again: their entities too
    return restored


@method("export", {"namespace", "vectors"}, slow=True)
def export(app: App, params: dict[str, Any]) -> dict[str, Any]:
    ns = param_namespace(params)
    with_vectors = param_bool(params, "vectors")
    items = app.store.read(
        lambda con: list(transfer.export(con, namespace=ns, with_vectors=with_vectors))
    )
    return {"items": items, "count": len(items)}


# items: checked one by one (errors name the line), exactly as add checks its params
@method(
    "import",
    {"items", "first_line", "allow_secrets", "dry_run"},
    slow=True,
    own_check=frozenset({"items"}),
    required=("items",),
)
def import_(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return app.memories.import_items(
        params.get("items"),
        first_line=params.get("first_line", 1),
        allow_secrets=params.get("allow_secrets", False),
        dry_run=params.get("dry_run", False),
    )


@method("checkpoint.delete", {"name", "kind"}, required=("name",))
def checkpoint_delete(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return checkpoints.delete(
        app.cfg.data_dir, params.get("name"), params.get("kind", "checkpoint")
    )


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
    "workspace",
}


@method("search", SEARCH_PARAMS, from_index=True)
def search(app: App, params: dict[str, Any]) -> dict[str, Any]:
    concepts = params.get("concepts") or ()
    if not isinstance(params.get("concepts", []), list | None):
        raise InvalidInput("concepts: expected a list of 2 to 5 strings")
    query = params.get("query", "")
    if not concepts and not isinstance(query, str):
        raise InvalidInput(f"query: expected a string, got {describe(query)} (or give concepts)")
    if not concepts and not query.strip():
        raise InvalidInput("query: must not be empty (or give concepts)")
    mode = params.get("mode", "auto")
    if not isinstance(mode, str):
        raise InvalidInput("mode: expected a string")
    use_decay = params.get("use_decay", True)
    if not isinstance(use_decay, bool):
        raise InvalidInput(f"use_decay: expected true or false, got {describe(use_decay)}")
    if params.get("kind") == "entity":  # entities themselves, by name (search/entities.py)
        methods_entities.expired_gone(app)
        left = methods_entities.caught_up(app)
        types = entity_search.check_types(params.get("type"))
        limit = _search_limit(app, params)
        return entitystage.answered(
            left, lambda: entity_search.find(app.store, query, limit, types)
        )
    filters = filters_from(params, default_kind=None, root=app.cfg.workspace)
    if filters.namespace is None:
        filters = replace(filters, namespace=app.cfg.memories.default_namespace)
    started = time.perf_counter()
    # the entity filter's rows, as the entity doors read them; without one, nothing read
    left = methods_entities.caught_up(app, search=not params.get("entities"))
    found = app.searcher.search(
        SearchRequest(
            query=query if isinstance(query, str) else "",
            limit=param_int(
                params, "limit", app.cfg.search.default_limit, 1, app.cfg.search.max_limit
            ),
            mode=mode,
            filters=filters,
            explain=param_bool(params, "explain"),
            use_decay=use_decay,
            include_constitutional=param_bool(params, "include_constitutional"),
            max_tokens=param_int(params, "max_tokens", 1, 1) if "max_tokens" in params else None,
            concepts=tuple(concepts),
            group=params.get("group", "note"),
            workspace=params.get("workspace", "this"),
        )
    )
    app.search_log.record((time.perf_counter() - started) * 1000)
    return entitystage.with_pending(found, left)


@method("searches")
def searches(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """Search latency and volume over the last day, in ten-minute buckets."""
    return app.search_log.series()


@method("web.open")
def web_open(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """Start the local web page if it is not running: {url, host, port, state_file}."""
    if app.open_page is None:
        raise Unavailable(
            "this daemon has no web page (it runs inside `memoryd run`); start the daemon with "
            "`memoryd run`"
        )
    return app.open_page()


@method("stats", {"namespace"})
def stats(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return app.stats(namespace=param_namespace(params))


@method("status", {"check"}, slow=True)
def status(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return app.status(check=param_bool(params, "check"))


@method("reindex", {"path", "full"}, slow=True)
def reindex(app: App, params: dict[str, Any]) -> dict[str, Any]:
    if params.get("path") is not None:
        rel, full = app.indexer.resolve_path(params["path"], root_ok=True)
        if param_bool(params, "full") and rel not in (".", ""):
            app.notes.forget_hashes(rel)  # its notes are read and chunked again
        elif param_bool(params, "full"):
            app.notes.forget_hashes()
        report = app.indexer.sync_paths([full])
        if (
            not (report.indexed or report.unchanged or report.deleted or report.moved)
            and not (report.skipped or report.errors)
            and not os.path.lexists(full)
            and os.path.isdir(app.indexer.root)  # (a workspace away says so in status)
        ):  # a typo said nothing: "indexed 0, unchanged 0, ..." and exit 0
            raise NotFound(
                f"path: no file or folder {describe(rel)} in the workspace, and none indexed "
                "there (paths are workspace-relative)"
            )
        return report.as_dict()
    if param_bool(params, "full"):
        # Forget every stored hash: each file is read, chunked and stored again in place (search
        # keeps answering meanwhile; vectors are reused through their text hashes).
        app.notes.forget_hashes()
    report = app.reconcile().as_dict()  # with index.progress in status
    entitystage.store_caught_up(app.store)  # and the notes' entities read (as it did)
    return report


@method("jobs", slow=True)
def jobs(app: App, params: dict[str, Any]) -> dict[str, Any]:
    return {"jobs": app.jobs.list()}


@method("jobs.run", {"name"}, slow=True, required=("name",))
def jobs_run(app: App, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    if not isinstance(name, str):
        raise InvalidInput("name: expected a job name (see the jobs method)")
    return app.jobs.run_now(name)


# --- links between notes (Obsidian vaults) ---------------------------------------------------


@method("links", {"path", "limit", "cursor"}, from_index=True, required=("path",))
def note_links(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """A page of the links written in a note: {path, links, total, has_more, next_cursor}."""
    path = from_absolute(params.get("path"), app.cfg.workspace)
    limit = param_int(params, "limit", vault.LINKS_LIMIT, 1, vault.LINKS_MAX)
    return vault.links(
        app.store, path, app.indexer.others.snapshot(), limit=limit, cursor=params.get("cursor")
    )


@method("backlinks", {"path", "limit", "cursor"}, from_index=True, required=("path",))
def note_backlinks(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """A page of the links to a note: {path, backlinks, total, has_more, next_cursor}."""
    path = from_absolute(params.get("path"), app.cfg.workspace)
    limit = param_int(params, "limit", vault.LINKS_LIMIT, 1, vault.LINKS_MAX)
    return vault.backlinks(
        app.store, path, app.indexer.others.snapshot(), limit=limit, cursor=params.get("cursor")
    )
