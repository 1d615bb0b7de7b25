"""The MCP tools of `memoryd mcp`, as a table: name, description, input schema, the daemon
call(s) it makes, and how its answer reads as compact text. `call_tool` runs one call; the MCP
server in memoryd/agents/mcp.py only lists the table and hands calls to it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memoryd.agents.argcheck import check_arguments, integral
from memoryd.agents.formats import (
    fmt_added,
    fmt_forgot,
    fmt_hits,
    fmt_items,
    fmt_json,
    fmt_memories,
    fmt_record,
    fmt_session,
    indexing_said,
    kept_said,
)
from memoryd.agents.hints import ERROR_NAMES, HINTS, MEMORY_CONFLICT_HINT, SECRET_HINT
from memoryd.ctl import Client, ClientError, Unreachable
from memoryd.text.markdown import estimate_tokens

CLEARABLE = ("expires_at", "source", "context")  # update: null clears them (protocol.md)
INVALID = -32602  # invalid params: a bad argument, said as the daemon says it

# --- the bridge to the daemon ------------------------------------------------------------------


class ToolFailure(Exception):
    """A tool could not do its work; the message is what the agent reads."""

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message, self.data = message, data or {}


class Bridge:
    """Calls the daemon for the tools; knows the agent's default namespace.

    `socket` may be a list: the first path, then others where the daemon may listen (see
    memoryd.agents.mcp.socket_candidates); each call uses the first that exists, so a daemon started
    after the agent is found wherever it came up."""

    def __init__(
        self, socket: str | Sequence[str], namespace: str | None, timeout: float = 60.0
    ) -> None:
        self.sockets = [socket] if isinstance(socket, str) else list(socket)
        self.client = Client(self.sockets[0], timeout=timeout)
        self.namespace = namespace

    def _socket(self) -> str:
        return next((s for s in self.sockets if _is_socket(s)), self.sockets[0])

    def call(self, method: str, params: dict[str, Any], keep_null: Sequence[str] = ()) -> Any:
        """The daemon's answer; params that are None are left out (not given), except those
        in `keep_null`, where null means something (update's expires_at: null clears it)."""
        if len(self.sockets) > 1:
            self.client.path = self._socket()
        sent = {k: v for k, v in params.items() if v is not None or k in keep_null}
        try:
            return self.client.call(method, sent)
        except Unreachable as exc:
            raise ToolFailure(str(exc), {"code": "unreachable"}) from None
        except ClientError as exc:
            name = ERROR_NAMES.get(exc.code, "error")
            text = f"memoryd {method}: {exc.message} ({name}, code {exc.code})"
            current = exc.data.get("current_sha256") if isinstance(exc.data, dict) else None
            if exc.code == -32009 and current:
                text += f" Current sha256: {current}."
            if exc.code == -32006 and isinstance(exc.data, dict) and "secrets" in exc.data:
                # the daemon's hint names allow_secrets and memoryctl's flag; no tool takes
                # either: an agent cannot store a credential, a person can
                message = exc.message.split("; not stored", 1)[0] + "; not stored."
                text = f"memoryd {method}: {message} ({name}, code {exc.code}) {SECRET_HINT}"
            elif exc.code in HINTS and "earlier memoryd than this one" not in exc.message:
                memory = isinstance(exc.data, dict) and "current_updated_at" in exc.data
                # (the client named the older daemon already)
                text += " " + (MEMORY_CONFLICT_HINT if memory else HINTS[exc.code])
            raise ToolFailure(
                text, {"code": exc.code, "message": exc.message, "data": exc.data}
            ) from None

    def ns(self, args: dict[str, Any]) -> dict[str, Any]:
        """Arguments with the agent's default namespace filled in where none was given."""
        if args.get("namespace") is None and self.namespace:
            return {**args, "namespace": self.namespace}
        return args


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


# --- tools -------------------------------------------------------------------------------------

STR = {"type": "string"}
INT = {"type": "integer"}
BOOL = {"type": "boolean"}
TIME = {
    "type": ["string", "number"],
    "description": "ISO 8601 date or time (2026-11-22, 2026-11-22T10:00:00Z; naive = UTC), a "
    "year (2026) or month (2026-11), or unix seconds",
}
_BOUND_TEXT = (
    "a duration back from now ('24h', '7d'), an ISO 8601 date or time "
    "(2026-11-22, 2026-11-22T10:00:00Z; naive = UTC; a bare date is a UTC day), a year (2026) "
    "or month (2026-11), or unix seconds"
)
BOUND = {"type": ["string", "number"], "description": _BOUND_TEXT}  # every since/until
TAGS = {"type": "array", "items": STR, "description": "tags (lowercase words)"}
NAMESPACE = {
    "type": "string",
    "description": "memory namespace (default: this agent's, from --namespace or "
    "MEMORYD_NAMESPACE, else the daemon's default); '*' = all",
}
NOTE_PATH = {
    "type": "string",
    "minLength": 1,
    "description": "workspace-relative path of a markdown note, e.g. 'projects/auth.md'",
}
SHA = {
    "type": "string",
    "pattern": "^([0-9a-fA-F]{64})?$",
    "description": "the sha256 read_note returned; the change is refused (conflict) if the note "
    "changed since. '' = the note must not exist yet",
}
MEMORY_FIELDS: dict[str, Any] = {
    "type": {"type": "string", "description": "fact, preference, decision, procedure, ..."},
    "tags": TAGS,
    "importance": {**INT, "minimum": 1, "maximum": 10, "description": "1..10 (default 5)"},
    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    "source": {**STR, "description": "where it came from (a URL, a file, 'user')"},
    "context": STR,
    "ttl": {
        "type": ["string", "number"],
        "description": "expire after this long: '90m', '7d', or seconds",
    },
    "expires_at": {
        **TIME,
        "description": "expire at this time (ISO 8601 or unix seconds; not with ttl)",
    },
    "tier": {
        "type": "string",
        "enum": ["constitutional", "critical", "important", "normal", "temporary", "deprecated"],
        "description": "constitutional = always loaded by session_context",
    },
    "triggers": {
        "type": "array",
        "items": STR,
        "description": "phrases that bring this memory up through match_triggers",
    },
}
# search: common parameters on top, the rare ones in one `filters` object (docs/agents.md)
SEARCH_FILTERS: dict[str, Any] = {
    "entities": {**TAGS, "description": "names every result must mention (a note: one section)"},
    "mode": {"type": "string", "enum": ["auto", "keyword", "vector", "hybrid", "fuzzy"]},
    "type": {**STR, "description": "memory types, comma separated"},
    "source": STR,
    "min_importance": {**INT, "minimum": 1, "maximum": 10},
    "tier": {**STR, "description": "tiers, comma separated (constitutional ... deprecated)"},
    "include_expired": BOOL,
    "include_deprecated": BOOL,
    "group": {
        "type": "string",
        "enum": ["note", "none"],
        "description": "note (default) = one result per note with its other matching sections; "
        "none = every matching chunk",
    },
    "workspace": {
        "type": "string",
        "enum": ["this", "all"],
        "description": "this (default) = this machine's notes and the memories; all = every "
        "machine's notes too (a team's shared PostgreSQL store)",
    },
}
SEARCH_SCHEMA: dict[str, Any] = {
    "query": {
        **STR,
        "minLength": 1,
        "description": 'words or a question; "quoted phrase", -exclude, OR',
    },
    "limit": {**INT, "minimum": 1, "maximum": 100, "description": "results (default 10)"},
    "kind": {
        "type": "string",
        "enum": ["memory", "chunk", "all"],
        "description": "memory = memories only, chunk = notes only (default all)",
    },
    "tags": {**TAGS, "description": "every tag listed must be present"},
    "path": {**STR, "description": "only notes under this workspace folder or path prefix"},
    "since": BOUND,
    "until": {**BOUND, "description": _BOUND_TEXT + "; a bare date, year or month includes it"},
    "namespace": NAMESPACE,
    "max_tokens": {
        **INT,
        "minimum": 1,
        "description": "token budget: full text for the top hits that fit, one-line summaries "
        "for the rest",
    },
    "filters": {
        "type": "object",
        "properties": SEARCH_FILTERS,
        "additionalProperties": False,
        "description": "rarely needed: entities, mode, type, tier, group, workspace, ... "
        "(see schema)",
    },
}


def _obj(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    schema: dict[str, Any]
    run: Callable[[Bridge, dict[str, Any]], Any]
    text: Callable[[Any], str]
    read_only: bool = True


def run_method(method: str, *, namespaced: bool = False) -> Callable[[Bridge, dict[str, Any]], Any]:
    def run(b: Bridge, args: dict[str, Any]) -> Any:
        return b.call(method, b.ns(args) if namespaced else args)

    return run


def run_search(b: Bridge, args: dict[str, Any]) -> Any:  # `filters` spread into the params
    params = {k: v for k, v in args.items() if k != "filters"}
    return b.call("search", b.ns({**(args.get("filters") or {}), **params}))


def run_feedback(b: Bridge, args: dict[str, Any]) -> Any:
    verdict = args["verdict"]
    if verdict == "used":
        return b.call("used", {"id": args["id"]})
    return b.call("validate", {"id": args["id"], "useful": verdict == "useful"})


def run_session_context(b: Bridge, args: dict[str, Any]) -> dict[str, Any]:
    """Constitutional memories first, then recent activity while the budget lasts."""
    budget = args.get("max_tokens") or 800
    ns = b.ns({"namespace": args.get("namespace")})["namespace"]
    start = b.call("session_start", {"namespace": ns, "max_tokens": budget})
    used = int(start.get("tokens_used") or 0)
    recent: list[dict[str, Any]] = []
    want = args.get("recent_limit", 20)
    if used < budget and want:
        got = b.call("recent_activity", {"namespace": ns, "limit": want})
        for item in got.get("items") or []:
            cost = estimate_tokens(fmt_items({"items": [item]})) + 2
            if used + cost > budget:
                break
            recent.append(item)
            used += cost
    return {
        "memories": start.get("memories") or [],
        "has_more_memories": bool(start.get("has_more")),
        "recent": recent,
        "tokens_used": used,
        "max_tokens": budget,
    }


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "search",
        "Search memories and workspace notes by keyword and meaning. Returns ranked hits: "
        "[id] where · score — snippet. Memories show their type and tags; note hits show "
        "path:line and heading. Use filters to narrow, max_tokens to cap the answer's size, "
        "then get (by id) or read_note (by path) for the full text.",
        _obj(SEARCH_SCHEMA, ("query",)),
        run_search,
        fmt_hits,
    ),
    ToolSpec(
        "remember",
        "Store a new memory: one self-contained fact, preference, decision or procedure, "
        "written so it makes sense later without this conversation. Returns its id. Refuses "
        "text that looks like a secret (API keys, passwords). Near-duplicates are reported.",
        _obj(
            {
                "content": {**STR, "minLength": 1, "description": "the memory itself"},
                **MEMORY_FIELDS,
                "namespace": NAMESPACE,
            },
            ("content",),
        ),
        run_method("add", namespaced=True),
        fmt_added,
        read_only=False,
    ),
    ToolSpec(
        "get",
        "Fetch one entry in full by id (a memory or a note chunk from search results), or a "
        "note or one of its sections by path and heading.",
        _obj(
            {
                "id": {**INT, "minimum": 1},
                "path": NOTE_PATH,
                "section": {**STR, "description": "heading text of one section of the note"},
            }
        ),
        run_method("get"),
        fmt_record,
    ),
    ToolSpec(
        "update",
        "Change a memory in place (content, tags, type, importance, tier, triggers, ...). Only "
        "the fields given change. Its id stays the same and its history is kept.",
        _obj(
            {
                "id": {**INT, "minimum": 1},
                "content": STR,
                **MEMORY_FIELDS,
                "expires_at": {
                    "type": ["string", "number", "null"],
                    "description": "expire at this time (ISO 8601 or unix seconds); null = "
                    "never expires",
                },
                "source": {"type": ["string", "null"], "description": "null = none"},
                "context": {"type": ["string", "null"], "description": "null = none"},
                "expected_updated_at": {
                    "type": "string",
                    "description": "the updated_at get gave: if it changed since, a conflict",
                },
            },
            ("id",),
        ),
        lambda b, a: b.call("update", a, keep_null=CLEARABLE),
        fmt_record,
        read_only=False,
    ),
    ToolSpec(
        "forget",
        "Delete one memory by id, for good (for outdated memories prefer update with "
        "tier 'deprecated'). Notes are not deleted here.",
        _obj(
            {
                "id": {**INT, "minimum": 1},
                "expected_updated_at": {
                    "type": "string",
                    "description": "the updated_at get gave: if it changed since, a conflict",
                },
            },
            ("id",),
        ),
        run_method("delete"),
        fmt_forgot,
        read_only=False,
    ),
    ToolSpec(
        "session_context",
        "Call at the start of a task: the standing (constitutional) memories, most important "
        "first, then recent activity (memories added, notes changed), all within max_tokens.",
        _obj(
            {
                "max_tokens": {**INT, "minimum": 50, "description": "budget (default 800)"},
                "namespace": NAMESPACE,
                "recent_limit": {**INT, "minimum": 0, "maximum": 100},
            }
        ),
        run_session_context,
        fmt_session,
    ),
    ToolSpec(
        "match_triggers",
        "Memories whose trigger phrases occur in the given text (e.g. the user's message): "
        "cheap, exact recall of procedures and warnings tied to words.",
        _obj({"prompt": {**STR, "minLength": 1}, "namespace": NAMESPACE}, ("prompt",)),
        run_method("match_triggers", namespaced=True),
        fmt_memories,
    ),
    ToolSpec(
        "feedback",
        "Tell memoryd how a memory served: 'useful' or 'not_useful' (validation; useful ones "
        "become promotion candidates) or 'used' (you relied on it; it counts as an access).",
        _obj(
            {
                "id": {**INT, "minimum": 1},
                "verdict": {"type": "string", "enum": ["useful", "not_useful", "used"]},
            },
            ("id", "verdict"),
        ),
        run_feedback,
        lambda r: "Recorded. " + fmt_json(r),
        read_only=False,
    ),
    ToolSpec(
        "write_note",
        "Create or replace a whole markdown note (the content is the entire file, front "
        "matter included). Atomic; searchable at once. Give expected_sha256 when replacing.",
        _obj({"path": NOTE_PATH, "content": STR, "expected_sha256": SHA}, ("path", "content")),
        run_method("note.write"),
        lambda r: (
            f"{'Created' if r.get('created') else 'Wrote'} {r['path']} (sha256 {r['sha256']})"
            + kept_said(r)
        ),
        read_only=False,
    ),
    ToolSpec(
        "append_to_note",
        "Append text to the end of a note (on a new line), creating it if missing. Front "
        "matter is untouched. Searchable at once.",
        _obj(
            {"path": NOTE_PATH, "content": {**STR, "minLength": 1}, "expected_sha256": SHA},
            ("path", "content"),
        ),
        run_method("note.append"),
        lambda r: f"Appended to {r['path']} (sha256 {r['sha256']})" + kept_said(r),
        read_only=False,
    ),
    ToolSpec(
        "list_notes",
        "List the workspace's notes (path, title, tags, size, modified time), by path, "
        "optionally under one folder.",
        _obj(
            {
                "path": {**STR, "description": "folder, e.g. 'projects'"},
                "limit": {**INT, "minimum": 1, "maximum": 1000},
                "offset": {**INT, "minimum": 0},
                "cursor": {
                    **STR,
                    "description": "the next page: the cursor the previous page gave",
                },
            }
        ),
        run_method("note.list"),
        fmt_items,
    ),
    ToolSpec(
        "move_note",
        "Rename or move a note inside the workspace (never over an existing note). Its index "
        "entries follow it.",
        _obj(
            {"path": NOTE_PATH, "new_path": NOTE_PATH, "expected_sha256": SHA}, ("path", "new_path")
        ),
        run_method("note.move"),
        lambda r: f"Moved {r['path']} -> {r['new_path']}",
        read_only=False,
    ),
    ToolSpec(
        "recent_activity",
        "What changed lately, newest first: memories added or updated (this namespace) and "
        "notes modified.",
        _obj(
            {
                "limit": {**INT, "minimum": 1, "maximum": 1000},
                "since": BOUND,
                "namespace": NAMESPACE,
            }
        ),
        run_method("recent_activity", namespaced=True),
        fmt_items,
    ),
]
TOOLS_BY_NAME = {t.name: t for t in TOOLS}


def call_tool(
    bridge: Bridge,
    name: str,
    arguments: dict[str, Any] | None,
    tools: dict[str, ToolSpec] | None = None,
) -> tuple[str, Any, bool]:
    """(text, structured result, is_error) for one tool call, from `tools` (default: this
    module's table; memoryd.agents.catalog adds the note tools). Run it in a thread."""
    table = TOOLS_BY_NAME if tools is None else tools
    spec = table.get(name)
    if spec is None:
        return f"unknown tool {name!r} (tools: {', '.join(table)})", None, True
    args = dict(arguments or {})
    problems = check_arguments(spec.schema, args)
    if problems:  # the daemon's words and code for a bad param (invalid input, -32602)
        text = f"{name}: {problems} ({ERROR_NAMES[INVALID]}, code {INVALID})"
        return text, {"error": {"code": INVALID, "message": problems}}, True
    args = integral(spec.schema, args)  # 2.0 passed the schema as an integer: the daemon's 2
    try:
        result = spec.run(bridge, args)
    except ToolFailure as exc:
        return exc.message, {"error": exc.data}, True
    text = spec.text(result)
    indexing = indexing_said(result) if isinstance(result, dict) else ""
    if indexing and indexing not in text:  # (search says it in its first line)
        text += f"\n({indexing}: notes not read yet are not in this answer)"
    return text, result, False
