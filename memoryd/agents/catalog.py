"""Every MCP tool of `memoryd mcp` in one table (memoryd.agents.tools, then the note tools of
memoryd.agents.notetools and the entity tools of memoryd.agents.entitytools), the optional
name prefix, and the rule that a tool's structured copy is never larger than its text (fit)."""

from __future__ import annotations

import json
import re
import traceback
from typing import Any

from memoryd.agents.entitytools import ENTITY_TOOLS
from memoryd.agents.notetools import NOTE_TOOLS
from memoryd.agents.tools import TOOLS, Bridge, ToolSpec, call_tool
from memoryd.agents.wire import say

_ORDER = ["search", "remember", "get", "update", "forget", "session_context", "match_triggers"]
ALL_TOOLS: list[ToolSpec] = sorted(
    [*TOOLS, *NOTE_TOOLS, *ENTITY_TOOLS],
    key=lambda t: _ORDER.index(t.name) if t.name in _ORDER else len(_ORDER),
)
BY_NAME: dict[str, ToolSpec] = {t.name: t for t in ALL_TOOLS}
# memoryd's own phrases that name a tool by a plain word (search, get, ...): under a prefix each
# is said as the agent calls it. A name with an underscore (read_note) is found on its own.
PLAIN_MENTIONS = {
    "search": ("from search results", "search before asking", "or search with entities"),
    "get": ("then get (by id)", "(get ID for details)"),
    "update": ("prefer update with tier",),
    "related": ("or call related",),
    "remember": ("remember durable facts",),
}
_UNDERSCORED = re.compile(
    r"(?<![\w/.'\-])("
    + "|".join(sorted((t.name for t in ALL_TOOLS if "_" in t.name), key=len, reverse=True))
    + r")(?![\w'/\-]|\.\w)"
)
SMALL = 256  # characters a short answer's copy may always take (its path, sha256, flags)
ESSENTIAL = frozenset(
    {"id", "path", "new_path", "sha256", "offset", "next_offset", "next_cursor", "total"}
)
ITEM_KEYS = ESSENTIAL | {
    "kind",
    "score",
    "line",
    "start_line",
    "heading",
    "target",
    "summary",
    "name",
    "from",
    "to",
}
# MCP tool annotations for the tools that change something (read_only=False): destructive =
# may overwrite or remove what is there (update replaces a memory's fields), not only add to
# it; idempotent = a second call with the same arguments changes nothing more (forget, move
# and delete find nothing the second time; write_note writes the same bytes). Not idempotent:
# remember (a second memory), update (a history row a call), feedback (a count), append and
# edit_note (an insert or a replace by a text its replacement holds happens again).
DESTRUCTIVE = frozenset({"update", "forget", "write_note", "move_note", "edit_note", "delete_note"})
IDEMPOTENT = frozenset({"forget", "write_note", "move_note", "delete_note"})


def size(value: Any) -> int:
    """The length of `value` as compact JSON text (what the host passes on)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def fit(structured: Any, text: str) -> Any:
    """The structured copy of a tool's answer, no larger than its text (or than SMALL
    characters, so that a one-line answer's copy keeps its path and sha256): null fields dropped,
    then prose the text already holds (a note's content, a memory's text), then prose at all,
    then the fields of list items other than ITEM_KEYS, then items of result lists from the end
    and, last, whole fields (`"truncated": true` says so); a list of values (tags) is never
    cut. The text is what the agent reads; the copy gives it the ids, paths, shas and offsets
    to act on."""
    limit = max(len(text), SMALL)
    out = _pruned(structured)
    if size(out) <= limit:
        return out
    flat = " ".join(text.split())
    out = _drop_strings(out, lambda s: _prose(s) and " ".join(s.split())[:200] in flat)
    if size(out) <= limit:
        return out
    out = _drop_strings(out, _prose)
    if size(out) <= limit:
        return out
    out = _items_cut(out)  # the items of lists (hits, links) keep what names and places them
    if size(out) <= limit or not isinstance(out, dict):
        return out if size(out) <= limit else {"truncated": True}
    out = {**out, "truncated": True}
    while size(out) > limit:
        # a list of results (hits, links, sources) loses items from the end; a list of values
        # (tags, aliases, triggers) is never cut, since a shorter one would say something false
        # (a memory without its tags): it is kept whole or left out with the other fields below
        lists = [(k, v) for k, v in out.items() if isinstance(v, list) and v and _items(v)]
        if lists:
            key, longest = max(lists, key=lambda kv: size(kv[1]))
            out[key] = longest[:-1]
            continue
        rest = [k for k in out if k != "truncated"]
        if not rest:
            break
        # the fields an agent acts on (ids, paths, shas, offsets) go last
        del out[max(rest, key=lambda k: (k not in ESSENTIAL, size(out[k])))]
    return out


def _items(values: list[Any]) -> bool:
    return all(isinstance(v, dict) for v in values)


def _prose(s: str) -> bool:
    """Text rather than an identifier: an id, a sha256, a path or a time (no white space, not
    over 200 characters) is what an agent acts on and is always kept."""
    return len(s) > 200 or (len(s) >= 40 and any(c.isspace() for c in s))


def _items_cut(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _items_cut(v) for k, v in value.items()}
    if isinstance(value, list):
        return [
            {k: v for k, v in item.items() if k in ITEM_KEYS} if isinstance(item, dict) else item
            for item in value
        ]
    return value


def _pruned(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _drop_strings(value: Any, drop: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _drop_strings(v, drop)
            for k, v in value.items()
            if not (isinstance(v, str) and drop(v))
        }
    if isinstance(value, list):
        return [_drop_strings(v, drop) for v in value if not (isinstance(v, str) and drop(v))]
    return value


def call(bridge: Bridge, name: str, arguments: dict[str, Any] | None) -> tuple[str, Any, bool]:
    """(text, structured copy that fits, is_error) for one call of any tool."""
    text, structured, is_error = call_tool(bridge, name, arguments, BY_NAME)
    if structured is not None and not isinstance(structured, dict):
        structured = {"result": structured}
    return text, (None if structured is None else fit(structured, text)), is_error


def call_safely(
    bridge: Bridge, name: str, arguments: dict[str, Any] | None
) -> tuple[str, Any, bool]:
    """call(), but a failure nobody foresaw (a bug, an answer of an older daemon that does not
    read as expected) is a tool error the agent reads (isError, with what failed), and its
    traceback goes to stderr, instead of a JSON-RPC error with code 0 and Python's words."""
    try:
        return call(bridge, name, arguments)
    except Exception as exc:
        say(traceback.format_exc().rstrip())
        text = (
            f"{name}: memoryd mcp could not complete this call ({type(exc).__name__}: {exc}), "
            "an error in memoryd itself; the MCP server's log (stderr) has the details"
        )
        return (
            text,
            {"error": {"code": "internal", "message": f"{type(exc).__name__}: {exc}"}},
            True,
        )


def named(text: str, prefix: str, everywhere: bool = True) -> str:
    """`text` (memoryd's words) with the tools it names as the agent calls them under `prefix`
    (`Read the note again (memoryd_read_note)`): the plain-word tools in memoryd's phrases for
    them, and, with `everywhere` (descriptions, instructions, errors; not an answer's body,
    which quotes notes), each tool named with an underscore outside a path or quotes."""
    if not prefix:
        return text
    if everywhere:
        text = _UNDERSCORED.sub(lambda m: prefix + m[1], text)
    for name, phrases in PLAIN_MENTIONS.items():
        for phrase in phrases:
            if phrase in text:
                text = text.replace(phrase, phrase.replace(name, prefix + name, 1))
    return text


def named_in(schema: Any, prefix: str) -> Any:
    """A tool's input schema with its descriptions naming the tools as the agent calls them."""
    if not prefix:
        return schema
    if isinstance(schema, dict):
        return {
            k: named(v, prefix)
            if k == "description" and isinstance(v, str)
            else named_in(v, prefix)
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [named_in(v, prefix) for v in schema]
    return schema
