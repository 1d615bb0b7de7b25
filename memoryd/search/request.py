"""What a search asks: the query, its mode, filters, limit and options (a plain value that the
edges build and the searcher and the hit renderer read)."""

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
