"""Links and backlinks between notes: the `links` and `backlinks` methods.

Links are stored as written by the indexer (memoryd.store.links) and resolved here, when asked,
against the notes indexed now (memoryd.text.obsidian.Resolver): a note created after the link was
written answers it, and a renamed note is found under its new name.
"""

from __future__ import annotations

from typing import Any

from memoryd.core.errors import InvalidInput, NotFound, describe
from memoryd.notes.notes import normalize
from memoryd.store import Store
from memoryd.store import links as store_links
from memoryd.text import obsidian


def note_path(path: object, paths: list[str]) -> str:
    """An indexed note's path from what a user typed: its path, or a name that resolves
    the way a [[wikilink]] would ("Project Plan" -> "work/Project Plan.md")."""
    if not isinstance(path, str):
        raise InvalidInput("path: expected a workspace-relative note path or a note name")
    # the notes API's rules ('..', NUL, control characters); a leading '/' means the vault's root
    wanted = normalize(path.strip().replace("\\", "/").lstrip("/"))
    if wanted in paths:
        return wanted
    found = obsidian.Resolver(paths).resolve(
        obsidian.Link(wanted, None, None, 0, False, "wiki"), ""
    )
    if found is None:
        raise NotFound(f"no indexed note {describe(path)} (paths are workspace-relative)")
    return found


def links(store: Store, path: object) -> dict[str, Any]:
    """The links written in a note, each resolved to a note path (or null)."""

    def read(con: Any) -> tuple[str, list[store_links.StoredLink], list[str]]:
        paths = store_links.note_paths(con)
        src = note_path(path, paths)
        return src, store_links.links_from(con, src), paths

    src, found, paths = store.read(read)
    resolver = obsidian.Resolver(paths)
    return {
        "path": src,
        "links": [
            {
                "target": s.link.target,
                "path": resolver.resolve(s.link, src),
                "heading": s.link.heading,
                "alias": s.link.alias,
                "line": s.link.line,
                "embed": s.link.embed,
                "kind": s.link.kind,
            }
            for s in found
        ],
    }


def backlinks(store: Store, path: object) -> dict[str, Any]:
    """The places in other notes (and this one) that link to a note."""

    def read(con: Any) -> tuple[str, list[store_links.StoredLink], list[str]]:
        paths = store_links.note_paths(con)
        dest = note_path(path, paths)
        return dest, store_links.links_named(con, [obsidian.note_key(dest), ""]), paths

    dest, candidates, paths = store.read(read)
    resolver = obsidian.Resolver(paths)
    return {
        "path": dest,
        "backlinks": [
            {
                "path": s.source,
                "line": s.link.line,
                "heading": s.link.heading,
                "alias": s.link.alias,
                "embed": s.link.embed,
            }
            for s in candidates
            if resolver.resolve(s.link, s.source) == dest
        ],
    }
