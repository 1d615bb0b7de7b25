"""Links and backlinks between notes: the `links` and `backlinks` methods.

Links are stored as written by the indexer (memoryd.store.links) and resolved here, when asked,
against the notes indexed now and the names of the workspace's other files (attachments, which
the indexer keeps current: memoryd.index.attachments) with memoryd.text.obsidian.Resolver: a
note created after the link was written answers it, and a renamed note is found under its new
name. A note asked for by a name several notes share is the one a link in the vault's root
would reach; the answer names it and lists the others (`others`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memoryd.core.errors import InvalidInput, NotFound, describe
from memoryd.notes.notes import normalize
from memoryd.store import Store
from memoryd.store import links as store_links
from memoryd.text import obsidian


def note_path(path: object, paths: list[str], files: Iterable[str] = ()) -> str:
    """An indexed note's path from what a user typed: its path, or a name that resolves
    the way a [[wikilink]] would ("Project Plan" -> "work/Project Plan.md")."""
    return _choose(path, paths, files)[0]


def _choose(path: object, paths: list[str], files: Iterable[str]) -> tuple[str, list[str]]:
    """(the note or attachment meant, the other paths the same name could mean)."""
    if not isinstance(path, str):
        raise InvalidInput("path: expected a workspace-relative note path or a note name")
    # the notes API's rules ('..', NUL, control characters); a leading '/' means the vault's root
    wanted = normalize(path.strip().replace("\\", "/").lstrip("/"))
    if wanted in paths:
        return wanted, []
    resolver = obsidian.Resolver(paths, files)
    link = obsidian.Link(wanted, None, None, 0, False, "wiki")
    found = resolver.resolve(link, "")
    if found is None:
        raise NotFound(f"no indexed note {describe(path)} (paths are workspace-relative)")
    return found, [p for p in resolver.candidates(link) if p != found]


def _chosen(answer: dict[str, Any], others: list[str]) -> dict[str, Any]:
    if others:
        answer["others"] = others  # the same name, not chosen: ask for one by its path
    return answer


def links(store: Store, path: object, files: Iterable[str] = ()) -> dict[str, Any]:
    """The links written in a note, each resolved to a note or attachment path (or null)."""
    files = frozenset(files)

    def read(con: Any) -> tuple[str, list[str], list[store_links.StoredLink], list[str]]:
        paths = store_links.note_paths(con)
        src, others = _choose(path, paths, files)
        return src, others, store_links.links_from(con, src), paths

    src, others, found, paths = store.read(read)
    resolver = obsidian.Resolver(paths, files)
    answer = {
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
    return _chosen(answer, others)


def backlinks(store: Store, path: object, files: Iterable[str] = ()) -> dict[str, Any]:
    """The places in other notes (and this one) that link to a note (or an attachment)."""
    files = frozenset(files)

    def read(con: Any) -> tuple[str, list[str], list[store_links.StoredLink], list[str]]:
        paths = store_links.note_paths(con)
        dest, others = _choose(path, paths, files)
        found = store_links.links_named(con, [obsidian.note_key(dest), ""])
        return dest, others, found, paths

    dest, others, candidates, paths = store.read(read)
    resolver = obsidian.Resolver(paths, files)
    answer = {
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
    return _chosen(answer, others)
