"""Links and backlinks between notes: the `links` and `backlinks` methods.

Links are stored as written by the indexer (memoryd.store.links) and resolved here, when asked,
against the notes indexed now and the names of the workspace's other files (attachments, which
the indexer keeps current: memoryd.index.attachments) with memoryd.text.obsidian.Resolver: a
note created after the link was written answers it, and a renamed note is found under its new
name. A note asked for by a name several notes share is the one a link in the vault's root
would reach; the answer names it and lists the others (`others`).

Both answers are pages (a hub note of a vault has thousands of backlinks; one answer held them
all, 770 kB for 10,000): at most `limit` links (LINKS_LIMIT unless asked, LINKS_MAX at most),
ordered by the note that holds the link, its line and its place on that line, with `total`,
`has_more` and `next_cursor`, the last link's place (core/pagecursor.py): passed back as
`cursor`, the next page starts after it, so notes written or deleted between two pages make
no link repeat and none go missing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memoryd.core import pagecursor
from memoryd.core.errors import InvalidInput, NotFound, check_int, describe
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
        raise InvalidInput(
            f"path: expected a string, got {describe(path)} (a workspace-relative note path or a "
            "note name)"
        )
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


LINKS_LIMIT = 500  # links or backlinks in a page when the caller names no limit
LINKS_MAX = 5000  # the most a caller may ask for in one page

Place = tuple[str, int, int]  # (the note a link is written in, its line, its rank on the line)


def _ranked(found: Iterable[tuple[str, int, dict[str, Any]]]) -> list[tuple[Place, dict[str, Any]]]:
    """Each link with its place; the rank tells apart the links of one line (in their order
    there: the store's ids rise as a note's links are written), so a place names one link."""
    seen: dict[tuple[str, int], int] = {}
    out: list[tuple[Place, dict[str, Any]]] = []
    for src, line, item in found:
        rank = seen.get((src, line), 0)
        seen[(src, line)] = rank + 1
        out.append(((src, line, rank), item))
    return sorted(out, key=lambda pair: pair[0])  # by path in Python: one order on both backends


def _page(
    key: str, rows: list[tuple[Place, dict[str, Any]]], limit: int, after: Place | None
) -> dict[str, Any]:
    rest = rows if after is None else [r for r in rows if r[0] > after]
    shown = rest[:limit]
    more = len(rest) > limit
    return {
        key: [item for _, item in shown],
        "total": len(rows),
        "has_more": more,
        "next_cursor": pagecursor.link_cursor(*shown[-1][0]) if more else None,
    }


def links(
    store: Store,
    path: object,
    files: Iterable[str] = (),
    *,
    limit: int = LINKS_LIMIT,
    cursor: object = None,
) -> dict[str, Any]:
    """The links written in a note, each resolved to a note or attachment path (or null): a
    page of them, in the note's order."""
    check_int(limit, "limit", 1, LINKS_MAX)
    after = pagecursor.read_link_cursor(cursor, "links")
    files = frozenset(files)

    def read(con: Any) -> tuple[str, list[str], list[store_links.StoredLink], list[str]]:
        paths = store_links.note_paths(con)
        src, others = _choose(path, paths, files)
        return src, others, store_links.links_from(con, src), paths

    src, others, found, paths = store.read(read)
    resolver = obsidian.Resolver(paths, files)
    rows = _ranked(
        (
            "",
            s.link.line,
            {
                "target": s.link.target,
                "path": resolver.resolve(s.link, src),
                "heading": s.link.heading,
                "alias": s.link.alias,
                "line": s.link.line,
                "embed": s.link.embed,
                "kind": s.link.kind,
            },
        )
        for s in found
    )
    return _chosen({"path": src, **_page("links", rows, limit, after)}, others)


def backlinks(
    store: Store,
    path: object,
    files: Iterable[str] = (),
    *,
    limit: int = LINKS_LIMIT,
    cursor: object = None,
) -> dict[str, Any]:
    """The places in other notes (and this one) that link to a note (or an attachment): a
    page of them, by the path of the note that holds the link, then its line."""
    check_int(limit, "limit", 1, LINKS_MAX)
    after = pagecursor.read_link_cursor(cursor, "backlinks")
    files = frozenset(files)

    def read(con: Any) -> tuple[str, list[str], list[store_links.StoredLink], list[str]]:
        paths = store_links.note_paths(con)
        dest, others = _choose(path, paths, files)
        found = store_links.links_named(con, [obsidian.note_key(dest), ""])
        return dest, others, found, paths

    dest, others, candidates, paths = store.read(read)
    resolver = obsidian.Resolver(paths, files)
    rows = _ranked(
        (
            s.source,
            s.link.line,
            {
                "path": s.source,
                "line": s.link.line,
                "heading": s.link.heading,
                "alias": s.link.alias,
                "embed": s.link.embed,
            },
        )
        for s in candidates
        if resolver.resolve(s.link, s.source) == dest
    )
    return _chosen({"path": dest, **_page("backlinks", rows, limit, after)}, others)


GRAPH_MAX_NODES = 2000
GRAPH_MAX_DEPTH = 4


def neighbourhood(
    store: Store, path: object, files: Iterable[str] = (), *, depth: int = 2, limit: int = 500
) -> dict[str, Any]:
    """The notes within `depth` links of a note, either way (links and backlinks), breadth
    first, at most `limit` nodes: {center, nodes, edges, truncated}.

    Nodes are {id, kind, label, path, depth, degree}: kind "note", "attachment" or "missing"
    (a link to no file); edges are {source, target, kind} with kind "link" or "embed". Other
    kinds of node and edge (entities and their mentions) can join the same shape."""
    check_int(depth, "depth", 1, GRAPH_MAX_DEPTH)
    check_int(limit, "limit", 1, GRAPH_MAX_NODES)
    files = frozenset(files)

    def read(con: Any) -> dict[str, Any]:
        paths = store_links.note_paths(con)
        center, _ = _choose(path, paths, files)
        resolver = obsidian.Resolver(paths, files)
        known = set(paths)
        seen: dict[str, int] = {center: 0}
        edges: dict[tuple[str, str], str] = {}
        frontier, truncated = [center], False
        for hop in range(1, depth + 1):
            nxt: list[str] = []
            for node in frontier:
                if node not in known:
                    continue  # attachments and missing targets link nowhere
                out = [
                    (resolver.resolve(s.link, node) or f"?{s.link.target}", s.link.embed)
                    for s in store_links.links_from(con, node)
                ]
                # (not the key "" that `backlinks` adds for a note's own [[#heading]] links:
                # such a link resolves to the note that holds it, so it is never an edge here,
                # and reading the vault's every one of them per node walked cost nodes x links:
                # 8 s at depth 3 on 3,000 notes with 24,000 of them)
                cands = store_links.links_named(con, [obsidian.note_key(node)])
                back = [
                    (s.source, s.link.embed)
                    for s in cands
                    if s.source != node and resolver.resolve(s.link, s.source) == node
                ]
                pairs = [((node, t), e) for t, e in out] + [((s, node), e) for s, e in back]
                for (src, dst), embed in pairs:
                    other = dst if src == node else src
                    if other not in seen:
                        if len(seen) >= limit:
                            truncated = True
                            continue
                        seen[other] = hop
                        nxt.append(other)
                    if src != dst:
                        edges.setdefault((src, dst), "embed" if embed else "link")
            frontier = nxt
        degree: dict[str, int] = dict.fromkeys(seen, 0)
        for src, dst in edges:
            degree[src] += 1
            degree[dst] += 1
        nodes = [
            {
                "id": node,
                "kind": "note"
                if node in known
                else ("missing" if node.startswith("?") else "attachment"),
                "label": _label(node),
                "path": None if node.startswith("?") else node,
                "depth": d,
                "degree": degree[node],
            }
            for node, d in seen.items()
        ]
        return {
            "center": center,
            "nodes": nodes,
            "edges": [{"source": s, "target": t, "kind": k} for (s, t), k in edges.items()],
            "truncated": truncated,
        }

    return store.read(read)


def _label(node: str) -> str:
    name = node.lstrip("?").rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name
