"""What a search asks: the query, its mode, filters, limit and options (a plain value that the
edges build and the searcher and the hit renderer read), and what its filters amount to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from memoryd.core.errors import Unavailable
from memoryd.core.logsetup import get_logger
from memoryd.store import searchsql
from memoryd.store.entityfilter import is_wide, rowid_sql
from memoryd.store.entityread import resolved
from memoryd.store.entityrowids import rowid_check
from memoryd.store.entries import Filters, filter_sql
from memoryd.store.protocol import Connection
from memoryd.text.markdown import nfc
from memoryd.text.symbolchars import graphemes, has_symbol

log = get_logger("memoryd.search")

MODES = ("auto", "keyword", "vector", "hybrid", "fuzzy")
GROUPS = ("note", "none")
WORKSPACES = ("this", "all")


@dataclass(frozen=True)
class SearchRequest:
    query: str
    limit: int | None = None
    mode: str = "auto"
    filters: Filters = field(default_factory=Filters)
    explain: bool = False
    use_decay: bool = True
    include_constitutional: bool = False
    max_tokens: int | None = None
    concepts: tuple[str, ...] = ()
    group: str = "note"
    record_access: bool = False  # ignored: search never records accesses (kept for callers)
    # "this": this daemon's workspace notes and every memory; "all": every workspace's notes
    # too (PostgreSQL shared by several daemons; on SQLite there is one workspace: the same)
    workspace: str = "this"


def base_filters(f: Filters) -> Filters:
    """The filters every search has (namespace, expiry, tiers): "unfiltered" for a user."""
    return Filters(
        namespace=f.namespace,
        include_expired=f.include_expired,
        tiers=f.tiers,
        include_deprecated=f.include_deprecated,
    )


def narrowing(f: Filters, vector: bool = False) -> bool:
    """Whether a filter can leave few entries (then an exact scan over them is cheapest).
    A namespace alone does not: every chunk passes it. For the `vector` pool an entities
    filter on a name mentioned more than NARROW_MENTIONS times does not either: its nearest
    texts are checked instead (the keyword pool ranks every match that passes a filter: a
    common name's set of entries costs less there than ranking first and falling back)."""
    return bool(
        f.kind == "memory"
        or f.types
        or f.tags
        or f.source
        or f.path_prefix
        or f.since is not None
        or f.until is not None
        or f.min_importance is not None
        or f.tiers
        or (bool(f.entities) and not (vector and is_wide(f.entity_mentions)))
    )


def wide_first(f: Filters, size: int, con: Connection) -> int | None:
    """With a wide entities filter (store/entityfilter.py, NARROW_MENTIONS), how many of the best
    matches a pool ranks before filtering them so that about `size` pass: its share of the
    entries, with room (a third more), instead of widening step by step. None otherwise."""
    if not f.entities or not is_wide(f.entity_mentions) or not f.entity_mentions:
        return None
    entries = searchsql.entry_count(con)
    return int(size * max(1.0, entries / f.entity_mentions) * 4 / 3) + 1


def keyword_prefilter(f: Filters, now: float) -> searchsql.Prefilter | None:
    """An entities filter (resolved) split off for the keyword pool: its matches are checked
    against the entities' entries before they are ranked, the rest of the filter after."""
    if not f.entities or f.entity_ids is None:
        return None
    where, params = filter_sql(replace(f, entities=(), entity_ids=None), now)
    rowid, rowid_params = rowid_sql(f.entity_ids)
    # a wide one's set is held in memory (a set SQLite would build anew for each statement)
    check = partial(rowid_check, f.entity_ids) if is_wide(f.entity_mentions) else None
    return searchsql.Prefilter(where, params, rowid, rowid_params, check)


def vector_mask(f: Filters, now: float) -> tuple[Any, str, list[Any]] | None:
    """An entities filter (resolved) split off for the vector pool, whose in-memory cache
    checks it as a mask over its rows (vecindex.nearest_entries, `among`): its groups, and the
    rest of the filter as SQL (checked on the nearest texts)."""
    if not f.entities or f.entity_ids is None:
        return None
    where, params = filter_sql(replace(f, entities=(), entity_ids=None), now)
    return f.entity_ids, where, params


QUERY_FAILED = "unable to embed this query"  # a search's model_state: keywords answered it
WORDLESS = "the query has no letter, digit or symbol to search for"  # `unanswered` (explain)


def wordless(query: str) -> bool:
    """Whether a query holds no letter, digit or symbol (`#`, `...`, `:)`, `&&`, a zero-width
    space): no keyword to match, so nothing answers it. A symbol (an emoji, `→`, `€`, `✓`:
    text/symbolchars.py) is a word of its own, found where the notes write it."""
    return letterless(query) and not has_symbol(query)


def letterless(query: str) -> bool:
    """Whether a query holds no letter or digit (the above, or symbols alone: `🚀`, `→`):
    nothing the model reads as meaning (it embeds every such text as the same unknown token,
    whose nearest notes are noise), so no vector answers it; keywords may (its symbols)."""
    return not any(ch.isalnum() for ch in query)


def unanswered(query: str, hits: list[Any]) -> str | None:
    """Why a query that needs no ranking to fail answers nothing (`unanswered`, with explain):
    it has no letter, digit or symbol, or it is symbols alone that no text writes."""
    if wordless(query):
        return WORDLESS
    if not hits and letterless(query):  # (no vector answers it: its symbols are absent)
        return f"no text contains {' '.join(m.group() for m in graphemes(query))!r}"
    return None


def query_vector(model: Any, req: SearchRequest) -> Any:
    """The query's vector; a query the model raises on is answered by keywords in auto and
    hybrid mode (None, and the answer's model_state says QUERY_FAILED), refused in vector mode
    (it was an internal error, -32603, in every mode)."""
    if model is None or model.state != "ready":
        refuse_vector_mode(model, req)  # vector mode says why (auto and hybrid: keywords)
        return None
    if letterless(req.query):
        return None
    try:
        return model.embed_query(req.query)
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}"
        if req.mode == "vector":
            raise Unavailable(f"the embedding model failed on this query ({why})") from exc
        log.warning("the model failed on a query; keywords answer it", error=why)
        return None


def refuse_vector_mode(model: Any, req: SearchRequest) -> None:
    """Vector mode without a model ready to embed the query says why, with what to do: it has
    no keywords to answer with (auto and hybrid answer by keywords and say so: model_note)."""
    if req.mode != "vector":
        return
    state = "none" if model is None else str(model.state)
    reason = "" if model is None else str(getattr(model, "reason", "") or "")
    if state == "loading":
        raise Unavailable(
            "vector search waits for the embedding model, still loading (the first seconds "
            "after a start): try again in a moment, or mode auto or keyword"
        )
    if state == "failed":
        raise Unavailable(f"vector search needs the embedding model: {reason}")
    if state != "ready":
        why = reason.removesuffix("; keyword search only") or "none is configured"
        raise Unavailable(f"vector search needs an embedding model: {why}; try mode keyword")


def refuse_no_vectors(con: Connection, model: Any, pending: int | None, mine: bool) -> None:
    """A vector search that found nothing says why when the store has no usable vectors of
    the daemon's model (not when it has them, or when there is no text at all): its first
    backfill is still running (the first index of a workspace, or a change of model: no
    search compares vectors of two models), or, on a shared database, another daemon made
    another model the active one (`mine`: the daemon's worker registered its model, which
    was the active one then)."""
    from memoryd.store import vectors

    ident = getattr(model, "identity", None)
    active = vectors.active_model(con)
    if ident is None or (active is not None and active[1] == ident.key):
        return
    current = vectors.embedding_model(con)
    if mine and current is not None and current[1] != ident.key:  # (not before it registers)
        raise Unavailable(
            f"vector search is unavailable: the database's embedding model is {current[1]}, "
            f"this daemon's is {ident.key}; every daemon of a shared database must use the "
            "same model (docs/team.md): try mode keyword"
        )
    if not pending and vectors.top_entry_id(con) == 0:
        return  # nothing stored: nothing to find
    left = f"{pending} text(s) still to embed" if pending else "texts still being embedded"
    raise Unavailable(
        f"vector search has no vectors of {ident.name} yet: {left} (a first index or a change "
        "of model); mode auto or keyword answers by keyword meanwhile (`memoryctl status "
        "--watch` shows the progress)"
    )


def model_note(model: Any, req: SearchRequest, query_vec: Any) -> str | None:
    """Why an auto or hybrid answer could only use keywords, for its `model_state`: the model
    is still loading (the first seconds after start) or failed, or it raised on this query."""
    if model is None or req.mode not in ("auto", "hybrid"):
        return None
    if model.state in ("loading", "failed"):
        return str(model.state)
    if query_vec is None and model.state == "ready" and not req.concepts:
        return None if letterless(req.query) else QUERY_FAILED
    return None


def composed(req: SearchRequest) -> SearchRequest:
    """The request with its query composed (NFC): a query typed decomposed ("Zu" + U+0308 +
    "rich") has its words whole, not cut at the combining mark (the index folds either form)."""
    q = nfc(req.query) if isinstance(req.query, str) else req.query
    return req if q is req.query else replace(req, query=q)


def resolved_entities(req: SearchRequest, read: Callable[..., Any]) -> SearchRequest:
    """The request with its entities filter's names resolved (store/entityread.resolved: the
    one entity each means, as on every door), once a search instead of in every pool
    statement; `read` runs a function on a connection."""
    f = req.filters
    if not f.entities or f.entity_ids is not None:
        return req
    return replace(req, filters=read(lambda con: resolved(con, f)))
