"""What a search asks: the query, its mode, filters, limit and options (a plain value that the
edges build and the searcher and the hit renderer read), and what its filters amount to."""

from __future__ import annotations

from dataclasses import dataclass, field

from memoryd.store.entries import Filters

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


def narrowing(f: Filters) -> bool:
    """Whether a filter can leave few entries (then an exact scan over them is cheapest).
    A namespace alone does not: every chunk passes it."""
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
        or f.entities
    )
