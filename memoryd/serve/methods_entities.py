"""JSON-RPC methods for entities (`entity`, `entities`, `related`), registered in
serve/registry.py's table (methods.py imports this module, so the table is whole). The answers
are shaped in memoryd/search/entities.py; `search` with kind "entity" and the `entities` filter
live in methods.py."""

from __future__ import annotations

import math
import weakref
from typing import Any

from memoryd.core import pagecursor
from memoryd.core.errors import StoreError, StoreUnavailable
from memoryd.memory.validation import check_bound
from memoryd.search import entities
from memoryd.serve.app import App
from memoryd.serve.registry import method, param_int
from memoryd.store import entitystage, lifecycle

EXPIRY_RETRY_S = 30.0
_FRUITLESS: weakref.WeakKeyDictionary[App, float] = weakref.WeakKeyDictionary()


def expired_gone(app: App) -> None:
    """The expired entries removed before an entity answer is read: search and list leave an
    expired memory out from the moment it expires, but the entity tables keep its mentions
    until the expiry job deletes it (every 5 minutes), so `entity`, `entities`, `related` and
    kind "entity" still named a person only an expired memory mentioned. One look-up in the
    expiry index when nothing is due; else the job, run now (after a run of it under way; it
    deletes through the same door as `delete`, and a failure is the job's, logged and listed
    by `jobs`, never this answer's). When a run this started removed nothing though something
    was due (it failed, or another daemon of a shared store runs the job), none is started
    again for EXPIRY_RETRY_S: not a failing job run per request."""
    if "expiry" not in app.jobs.states:
        return
    now = app.memories.clock()
    if now - _FRUITLESS.get(app, -math.inf) < EXPIRY_RETRY_S:
        return
    if app.store.read(lambda con: lifecycle.any_expired(con, now)):
        done = app.jobs.run_now("expiry")
        if done.get("error") or not (done.get("result") or {}).get("removed"):
            _FRUITLESS[app] = now


def caught_up(app: App, *, search: bool = False) -> int:
    """The notes indexed since have their entities read first (store/entitystage.py), for
    up to DOOR_BUDGET_S: how many still wait (the answer says `entities_pending`). A search
    without an entity filter reads none: it is not kept waiting on extraction and the writer
    (queries first, issue 23.1; its entity weight ignores the notes that wait, a moment)."""
    try:
        return entitystage.caught_up(
            app.store.read,
            app.store.run_write,
            entitystage.DOOR_BUDGET_S,
            at_most=0 if search else None,
        )
    except (StoreUnavailable, StoreError):  # a write refused (another program's lock, a full
        return int(app.store.read(entitystage.pending))  # disk): a read answers all the same


@method("entity", {"name", "max_tokens", "relations", "type"}, from_index=True, required=("name",))
def entity(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """The entity page: type, aliases, first and last seen, the notes and memories that mention
    it most (each with its line), its strongest relations; within max_tokens; `type` picks
    among the entities a name means."""
    budget = param_int(params, "max_tokens", entities.PAGE_TOKENS, 50)
    relations = param_int(params, "relations", 10, 0, 100)
    name = entities.check_name(params.get("name"))
    type_ = entities.check_type(params.get("type"))
    expired_gone(app)
    left = caught_up(app)
    return entitystage.answered(
        left,
        lambda: entities.page(app.store, name, max_tokens=budget, relations=relations, type_=type_),
    )


@method("entities", {"type", "since", "top", "cursor"}, from_index=True)
def entities_(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """The most mentioned entities, of these types, mentioned since a date, `top` a page; the
    next page after `cursor` (the previous page's next_cursor)."""
    types = entities.check_types(params.get("type"))
    since = check_bound(params.get("since"), "since")
    top = param_int(params, "top", 50, 1, entities.MAX_TOP)
    expired_gone(app)
    left = caught_up(app)
    return entitystage.answered(
        left,
        lambda: entities.listing(
            app.store, types=types, since=since, top=top, cursor=params.get("cursor")
        ),
    )


@method(
    "related",
    {"name", "depth", "top", "type", "max_tokens", "cursor"},
    from_index=True,
    required=("name",),
)
def related(app: App, params: dict[str, Any]) -> dict[str, Any]:
    """The graph around an entity, `depth` steps of co-mentions, `top` per entity; a page of it
    within max_tokens, the next after `cursor` (the previous page's next_cursor)."""
    depth = param_int(params, "depth", 1, 1, entities.MAX_DEPTH)
    top = param_int(params, "top", 10, 1, 100)
    name = entities.check_name(params.get("name"))
    type_ = entities.check_type(params.get("type"))
    budget = None if "max_tokens" not in params else param_int(params, "max_tokens", 0, 50)
    pagecursor.read_related_cursor(params.get("cursor"))  # its form, before the name is looked up
    expired_gone(app)
    left = caught_up(app)
    return entitystage.answered(
        left,
        lambda: entities.related(
            app.store,
            name,
            depth=depth,
            top=top,
            type_=type_,
            max_tokens=budget,
            cursor=params.get("cursor"),
        ),
    )
