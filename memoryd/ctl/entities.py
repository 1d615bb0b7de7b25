"""memoryctl's entity commands (`entity NAME`, `entities`, `related NAME --depth N`): their rows
of the command table (ctl/table.py adds them), params and printers; and the printer of
`search --kind entity`. Standard library only, like the rest of ctl/."""

from __future__ import annotations

import sys

from memoryd.ctl.handlers import EXIT_OK, cursor_option, given, time_value, when
from memoryd.ctl.output import entities_note, mentions, one_line
from memoryd.ctl.rows import Command, arg, listed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from typing import Any

TYPES = ("person", "system", "place", "identifier", "tag", "other")


def _brief(e: dict[str, Any]) -> str:
    return f"{e.get('name')} ({e.get('type')}, {mentions(e.get('mentions'))})"


def _day(iso: Any) -> str:
    return str(iso)[:10] if iso else "?"


def pending_note(res: dict[str, Any]) -> None:
    """On stderr, when the daemon says notes indexed just now still wait for their entities."""
    if note := entities_note(res):
        print(note, file=sys.stderr)


def p_entity(a: Namespace) -> dict[str, Any]:
    return {
        "name": a.name,
        **given({"max_tokens": a.max_tokens, "relations": a.relations, "type": a.type}),
    }


def s_entity(res: dict[str, Any], a: Namespace) -> int:
    """The page: a header, aliases, where it is mentioned (path:line and the line), with whom."""
    print(
        f"{res.get('name')}  {res.get('type')}, {mentions(res.get('mentions'))},"
        f" {_day(res.get('first_seen'))} .. {_day(res.get('last_seen'))}"
    )
    if res.get("aliases"):
        print(f"also written: {', '.join(res['aliases'])}")
    if res.get("also"):  # on the page, not on stderr: a script or an agent reads stdout
        also = ", ".join(_brief(o) for o in res["also"])
        print(f"the name is also written for: {also} (a full name or --type asks for one)")
    sources = res.get("sources") or []
    if sources:
        print("\nmentioned in:")
    for s in sources:
        where = (
            f"{s.get('path')}:{s.get('line')}"
            if s.get("kind") == "note"
            else f"memory {s.get('id')}"
        )
        print(
            f"  {where}  ({s.get('mentions')}x, {_day(s.get('date'))})"
            f"  {one_line(s.get('text'), 100)}"
        )
    more = int(res.get("total_sources") or 0) - len(sources)
    if more > 0:
        print(f"  ... and {more} more (--max-tokens N shows more)")
    relations = res.get("relations") or []
    if relations:
        print("\nmentioned with:")
    for r in relations:
        print(
            f"  {r.get('name')} ({r.get('type')})  {r.get('together')}x,"
            f" {_day(r.get('first'))} .. {_day(r.get('last'))}"
        )
    pending_note(res)
    return EXIT_OK


def p_entities(a: Namespace) -> dict[str, Any]:
    return given({"type": a.type, "since": time_value(a.since), "top": a.top, "cursor": a.cursor})


def s_entities(res: dict[str, Any], a: Namespace) -> int:
    """One entity a line: mentions, type, name (tab separated)."""
    items = res.get("entities") or []
    for e in items:
        print(f"{e.get('mentions')}\t{e.get('type')}\t{e.get('name')}")
    if not items:
        print("no entities", file=sys.stderr)
    elif res.get("next_cursor"):  # the same flags and this cursor give the next page
        print(
            f"({len(items)} shown; next page: {cursor_option(res['next_cursor'])})", file=sys.stderr
        )
    elif res.get("has_more"):  # a daemon older than the cursor
        print(f"({len(items)} shown; more: raise --top, up to 1000)", file=sys.stderr)
    pending_note(res)
    return EXIT_OK


def p_related(a: Namespace) -> dict[str, Any]:
    return {
        "name": a.name,
        **given(
            {
                "depth": a.depth,
                "top": a.top,
                "type": a.type,
                "max_tokens": a.max_tokens,
                "cursor": a.cursor,
            }
        ),
    }


def s_related(res: dict[str, Any], a: Namespace) -> int:
    """The walk as a tree: each entity under the one it was reached from, with the count. A
    page after the first (--cursor) starts under the entities of earlier pages it continues
    from, each marked "(above)"."""
    nodes = {n.get("name"): n for n in res.get("nodes") or []}
    children: dict[Any, list[tuple[Any, Any]]] = {}
    placed = {res.get("name")}
    for e in res.get("edges") or []:
        src, dst = e.get("from"), e.get("to")
        if dst in placed or dst not in nodes:
            if src in nodes and src not in placed:  # reached from an earlier page's entity
                dst, src = src, dst
            else:
                continue
        placed.add(dst)
        children.setdefault(src, []).append((dst, e.get("together")))

    def show(name: Any, depth: int) -> None:
        for child, n in children.get(name, []):
            node = nodes.get(child, {})
            print(f"{'  ' * depth}{child} ({node.get('type')})  {n}x")
            show(child, depth + 1)

    root = nodes.get(res.get("name"), {})
    print(_brief(root) if root else f"{res.get('name')} (above)")
    show(res.get("name"), 1)
    for earlier in [p for p in children if p not in nodes and p != res.get("name")]:
        print(f"  {earlier} (above)")
        show(earlier, 2)
    if res.get("also"):
        also = ", ".join(_brief(o) for o in res["also"])
        print(f"the name is also written for: {also} (a full name or --type asks for one)")
    if res.get("next_cursor"):  # the same name, --depth and --top, and this cursor
        print(
            f"({len(nodes)} shown; next page: {cursor_option(res['next_cursor'])})",
            file=sys.stderr,
        )
    pending_note(res)
    return EXIT_OK


ENTITIES_CURSOR = (
    "start after the page that printed this cursor (its next page: ...), with the same --type"
    " and --since"
)
PICK = arg(
    "--type",
    metavar="TYPE",
    help=f"the one of this type when the name is written for several ({', '.join(TYPES)})",
)
NAME = arg("name", metavar="NAME", help="a name as written: Caroline, caroline's, an alias")

COMMANDS: tuple[Command, ...] = (
    Command(
        "entity",
        "what the notes and memories say about NAME: type, aliases, where, with whom",
        method="entity",
        params=p_entity,
        show=s_entity,
        args=(
            NAME,
            arg("--max-tokens", type=int, metavar="N", help="answer budget (default 1000)"),
            arg("--relations", type=int, metavar="N", help="strongest relations shown (10)"),
            PICK,
        ),
        examples=(
            'memoryctl entity "Caroline Baker"',
            "memoryctl entity billing-svc --json",
            "memoryctl entity Jordan --type person",
        ),
    ),
    Command(
        "entities",
        "the most mentioned people, systems, places, identifiers and tags",
        method="entities",
        params=p_entities,
        show=s_entities,
        found=listed("entities"),
        args=(
            arg("--type", help=f"only these types (a,b): {', '.join(TYPES)}"),
            arg("--since", type=when, metavar="WHEN", help="mentioned since: 7d, a date"),
            arg("--top", type=int, metavar="N", help="at most N a page (default 50)"),
            arg("--cursor", metavar="C", help=ENTITIES_CURSOR),
        ),
        examples=(
            "memoryctl entities --type person --top 20",
            "memoryctl entities --since 30d",
            "memoryctl entities --top 100 --cursor '42:caroline baker'",
        ),
    ),
    Command(
        "related",
        "who and what NAME is mentioned with, --depth steps out",
        method="related",
        params=p_related,
        show=s_related,
        args=(
            NAME,
            arg("--depth", type=int, metavar="N", help="steps out, 1 to 3 (default 1)"),
            arg("--top", type=int, metavar="N", help="relations per entity (default 10)"),
            arg(
                "--max-tokens",
                type=int,
                metavar="N",
                help="a page's budget (default: none, the whole walk)",
            ),
            PICK,
            arg(
                "--cursor",
                metavar="C",
                help="the next page of the walk (the cursor the last page printed), with the"
                " same NAME, --depth and --top",
            ),
        ),
        examples=(
            "memoryctl related Caroline --depth 2",
            "memoryctl related Caroline --depth 2 --top 50 --max-tokens 2000",
        ),
    ),
)
