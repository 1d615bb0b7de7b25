"""The MCP tools on entities: `about` ("what do we know about X?", the entity page, for an agent to
call before it answers about a person, a system or a place) and `related` (who and what X is
mentioned with, a few steps out). Both call the daemon's `entity` / `related` methods; a name
the index does not know answers with the entities whose names come closest, so the agent can
ask again."""

from __future__ import annotations

from typing import Any

from memoryd.agents.tools import INT, STR, Bridge, ToolFailure, ToolSpec, _obj

NAME = {
    **STR,
    "minLength": 1,
    "description": "a name as the notes write it: 'Caroline', 'billing-svc', an alias",
}
# the one of this type, when the name is written for several (the page's "also")
PICK = {"type": "string", "enum": ["person", "system", "place", "identifier", "tag", "other"]}


def _day(iso: Any) -> str:
    return str(iso)[:10] if iso else "?"


def pending_line(r: dict[str, Any]) -> list[str]:
    """The answer's `entities_pending` said: notes indexed whose entities are not read yet."""
    n = r.get("entities_pending")
    if not n:
        return []
    return [f"(Not complete yet: {n} notes indexed just now still wait for their entities.)"]


def _closest(b: Bridge, name: str, exc: ToolFailure) -> ToolFailure:
    """A not-found answer that names the closest entities: the daemon's own suggestions (those
    `entity` and memoryctl name: a misspelt name's too), else search kind entity's (an older
    daemon gave none)."""
    if exc.data.get("code") != -32004:
        return exc
    data = exc.data.get("data")
    hits = data.get("suggestions") if isinstance(data, dict) else None
    if not isinstance(hits, list):
        hits = b.call("search", {"query": name, "kind": "entity", "limit": 5}).get("hits") or []
    code = " (not found, code -32004)"  # as every other error the tools relay
    if isinstance(data, dict) and data.get("entities_pending"):  # it may be in those notes
        code += f"; {data['entities_pending']} notes indexed just now still wait for their entities"
    if not hits:
        return ToolFailure(f"Nothing in the notes or memories is named {name!r}{code}.", exc.data)
    names = ", ".join(f"{h['name']} ({h['type']})" for h in hits)
    return ToolFailure(f"No entity is named {name!r}{code}; the closest: {names}.", exc.data)


def run_about(b: Bridge, args: dict[str, Any]) -> Any:
    try:
        return b.call("entity", args)
    except ToolFailure as exc:
        raise _closest(b, args["name"], exc) from None


def fmt_about(r: dict[str, Any]) -> str:
    lines = [
        f"{r['name']} ({r['type']}): {r['mentions']} mention{'' if r['mentions'] == 1 else 's'},"
        f" first {_day(r.get('first_seen'))}, last {_day(r.get('last_seen'))}"
    ]
    if r.get("aliases"):
        lines.append(f"Also written: {', '.join(r['aliases'])}")
    if r.get("also"):
        others = ", ".join(f"{a['name']} ({a['type']})" for a in r["also"])
        lines.append(f"The name is also written for: {others} (a full name or type asks for one)")
    if r.get("sources"):
        lines += ["", "Mentioned in (most first, then newest):"]
    for s in r.get("sources") or []:
        where = f"{s['path']}:{s['line']}" if s["kind"] == "note" else f"memory [{s['id']}]"
        lines.append(f"- {where} ({s['mentions']}x, {_day(s.get('date'))}): {s['text']}")
    if r.get("has_more"):
        rest = r["total_sources"] - len(r.get("sources") or [])
        lines.append(f"- ... {rest} more (raise max_tokens, or search with entities: [name])")
    if r.get("relations"):
        lines += ["", "Mentioned with:"]
        lines += [
            f"- {x['name']} ({x['type']}): {x['together']}x,"
            f" {_day(x.get('first'))} .. {_day(x.get('last'))}"
            for x in r["relations"]
        ]
    if r.get("relations_cut"):
        lines.append("- ... more (raise max_tokens, or call related)")
    return "\n".join(lines + pending_line(r))


RELATED_TOKENS = 2000  # the related tool's budget when the agent gives none


def run_related(b: Bridge, args: dict[str, Any]) -> Any:
    try:
        return b.call("related", {"max_tokens": RELATED_TOKENS, **args})
    except ToolFailure as exc:
        raise _closest(b, args["name"], exc) from None


def fmt_related(r: dict[str, Any]) -> str:
    types = {n["name"]: n["type"] for n in r.get("nodes") or []}
    head = "mentioned with" if "nodes" in r and r["name"] in types else "more of the walk"
    lines = [f"{r['name']}: {head} (depth {r['depth']})"]
    for e in r.get("edges") or []:  # the entity of this page on the right, with its type
        near, far = (e["to"], e["from"]) if e["to"] not in types else (e["from"], e["to"])
        lines.append(f"- {near} -- {far} ({types.get(far, '?')}): {e['together']}x")
    if len(lines) == 1:
        lines.append("- nothing: no section or memory mentions it with another name")
    if r.get("also"):
        others = ", ".join(f"{a['name']} ({a['type']})" for a in r["also"])
        lines.append(f"The name is also written for: {others} (a full name or type asks for one)")
    if r.get("next_cursor"):
        lines.append(
            f"- ... {len(types)} entities on this page; the next: the same call with"
            f" cursor={r['next_cursor']}"
        )
    return "\n".join(lines + pending_line(r))


ENTITY_TOOLS: list[ToolSpec] = [
    ToolSpec(
        "about",
        "What the notes and memories say about a person, system, place or identifier: call it "
        "before answering a question about one. Returns its type, the names it is written as, "
        "first and last seen, the notes (path:line) and memories that mention it most, each "
        "with its line, and who or what it is mentioned with. Fits max_tokens (default 1000). "
        "type picks one when the name is written for several.",
        _obj({"name": NAME, "max_tokens": {**INT, "minimum": 50}, "type": PICK}, ("name",)),
        run_about,
        fmt_about,
    ),
    ToolSpec(
        "related",
        "Who and what an entity is mentioned with, with counts; depth 2 or 3 walks further out "
        "(their relations in turn). For the graph around a person, project or system. Fits "
        "max_tokens (default 2000); a longer walk comes in pages (cursor).",
        _obj(
            {
                "name": NAME,
                "depth": {**INT, "minimum": 1, "maximum": 3},
                "top": {**INT, "minimum": 1, "maximum": 100, "description": "per entity (10)"},
                "max_tokens": {**INT, "minimum": 50},
                "type": PICK,
                "cursor": {**STR, "description": "the next page: the last answer's cursor"},
            },
            ("name",),
        ),
        run_related,
        fmt_related,
    ),
]
