"""The agent's two doors say a bad argument the same way (stop 35, walk a).

Every integer argument of every MCP tool, and every integer param of every socket method, is
refused with one message, `NAME: expected an integer from LO to HI, got VALUE` (or `of at least
LO`), null included (it is not a silent default), in the daemon's words on both doors: the
MCP tools' own schema check translates its errors into them (memoryd/agents/tools.py,
schema_message), and the daemon says them from one helper (core.errors.int_expected).

Also here: edit_note keeps a CRLF note CRLF and refuses, with a code, what it cannot do; the
structured copy of an entity answer names its items."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import module_daemon, rpc, wait_for

from memoryd.agents import catalog, notetools
from memoryd.agents.tools import Bridge
from memoryd.core.errors import describe, int_expected
from memoryd.serve import methods as api

# Each MCP tool's integer argument and the socket method and param it is sent as. An integer
# argument the daemon never sees (paging a note the bridge read whole, edit_note's count) is in
# MCP_ONLY; session_context's budget is its own (at least 50, of which session_start gets part).
TO_METHOD = {
    ("search", "limit"): ("search", "limit"),
    ("search", "max_tokens"): ("search", "max_tokens"),
    ("search", "filters.min_importance"): ("search", "min_importance"),
    ("remember", "importance"): ("add", "importance"),
    ("update", "importance"): ("update", "importance"),
    ("update", "id"): ("update", "id"),
    ("get", "id"): ("get", "id"),
    ("forget", "id"): ("delete", "id"),
    ("feedback", "id"): ("validate", "id"),
    ("list_notes", "limit"): ("note.list", "limit"),
    ("list_notes", "offset"): ("note.list", "offset"),
    ("recent_activity", "limit"): ("recent_activity", "limit"),
    ("about", "max_tokens"): ("entity", "max_tokens"),
    ("related", "depth"): ("related", "depth"),
    ("related", "top"): ("related", "top"),
    ("related", "max_tokens"): ("related", "max_tokens"),
    ("links", "limit"): ("links", "limit"),
    ("backlinks", "limit"): ("backlinks", "limit"),
}
MCP_ONLY = {
    ("read_note", "offset"),
    ("read_note", "limit"),
    ("edit_note", "count"),
    ("session_context", "max_tokens"),
    ("session_context", "recent_limit"),
}
# A valid call of each tool, one argument replaced at a time.
TOOL_BASE: dict[str, dict[str, Any]] = {
    "search": {"query": "memory"},
    "remember": {"content": "a memory for the argument checks"},
    "update": {"id": 1, "importance": 6},
    "get": {"id": 1},
    "forget": {"id": 1},
    "feedback": {"id": 1, "verdict": "used"},
    "about": {"name": "Nobody"},
    "related": {"name": "Nobody"},
    "links": {"path": "a.md"},
    "backlinks": {"path": "a.md"},
    "read_note": {"path": "a.md"},
    "edit_note": {"path": "a.md", "action": "replace", "find": "A", "replace": "B"},
}
# Every integer param of every socket method: (low, high); high None = no upper bound but 64 bits.
SOCKET_INTS: dict[tuple[str, str], tuple[int, int | None]] = {
    ("search", "limit"): (1, 100),
    ("search", "max_tokens"): (1, None),
    ("search", "min_importance"): (1, 10),
    ("list", "limit"): (1, 1000),
    ("list", "offset"): (0, None),
    ("list", "min_importance"): (1, 10),
    ("note.list", "limit"): (1, 1000),
    ("note.list", "offset"): (0, None),
    ("recent_activity", "limit"): (1, 1000),
    ("session_start", "max_tokens"): (1, None),
    ("entity", "max_tokens"): (50, None),
    ("entity", "relations"): (0, 100),
    ("entities", "top"): (1, 1000),
    ("related", "depth"): (1, 3),
    ("related", "top"): (1, 100),
    ("related", "max_tokens"): (50, None),
    ("graph", "depth"): (1, 4),
    ("graph", "limit"): (1, 2000),
    ("links", "limit"): (1, 5000),
    ("backlinks", "limit"): (1, 5000),
    ("history", "limit"): (1, 1000),
    ("promotion_candidates", "limit"): (1, 1000),
    ("get", "id"): (1, None),
    ("used", "id"): (1, None),
    ("history", "id"): (1, None),
    ("validate", "id"): (1, None),
    ("promote", "id"): (1, None),
    ("delete", "id"): (1, None),
    ("update", "id"): (1, None),
    ("import", "first_line"): (1, None),
}
METHOD_BASE: dict[str, dict[str, Any]] = {
    "search": {"query": "memory"},
    "entity": {"name": "Nobody"},
    "related": {"name": "Nobody"},
    "graph": {"path": "a.md"},
    "links": {"path": "a.md"},
    "backlinks": {"path": "a.md"},
    "validate": {"useful": True},
    "update": {"importance": 6},
    "import": {"items": [], "dry_run": True},
}


def integer_arguments() -> list[tuple[str, str, dict[str, Any]]]:
    """(tool, argument, its schema) for every integer argument of every tool, `filters.x` for
    those inside search's filters."""
    out = []
    for tool in catalog.ALL_TOOLS:
        props = tool.schema.get("properties", {})
        for name, schema in props.items():
            if schema.get("type") == "integer":
                out.append((tool.name, name, schema))
            for sub, inner in (schema.get("properties") or {}).items():
                if inner.get("type") == "integer":
                    out.append((tool.name, f"{name}.{sub}", inner))
    return out


# null means "not given" (add) or "unchanged" (update) for a memory's fields, and for a filter
# (min_importance); delete's params are "exactly one of": null is refused by that rule
NULL_IS_ABSENT = {"add", "update", "remember", "delete", "forget"}


def bad_values(low: int, high: int | None, where: str = "", param: str = "") -> list[Any]:
    null = [] if where in NULL_IS_ABSENT or param == "min_importance" else [None]  # a filter
    return [*null, low - 1, -1, "5", 5.5, True, *([high + 1] if high is not None else [])]


def with_arg(base: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    if "." in dotted:
        outer, inner = dotted.split(".", 1)
        return {**base, outer: {inner: value}}
    return {**base, dotted: value}


def test_every_integer_argument_of_every_tool_is_classified() -> None:
    """A new tool's integer argument must say which socket param it is (or that it has
    none), so that the test below covers it."""
    found = {(tool, arg) for tool, arg, _ in integer_arguments()}
    assert found == set(TO_METHOD) | MCP_ONLY, found ^ (set(TO_METHOD) | MCP_ONLY)


def test_every_integer_param_of_every_method_is_listed() -> None:
    """The socket's integer params, from the method table: each is checked below."""
    ints = {"limit", "offset", "max_tokens", "min_importance", "relations", "top", "depth"}
    ints |= {"id", "first_line"}
    found = {
        (name, p)
        for name, m in api.METHODS.items()
        for p in m.params
        if p in ints and not (name == "delete" and p != "id")
    }
    assert found <= set(SOCKET_INTS) | {("add", "importance"), ("update", "importance")}, (
        found - set(SOCKET_INTS)
    )


@pytest.mark.parametrize(("tool", "arg"), sorted(MCP_ONLY), ids=lambda v: str(v))
def test_an_argument_only_the_bridge_reads_is_refused_in_the_daemon_words(
    tool: str, arg: str
) -> None:
    schema = {(t, a): s for t, a, s in integer_arguments()}[(tool, arg)]
    low, high = schema.get("minimum", 0), schema.get("maximum")
    bridge = Bridge("/nowhere/memoryd.sock", None)  # never reached: the check answers first
    for value in bad_values(low, high):
        args = with_arg(TOOL_BASE.get(tool, {}), arg, value)
        text, structured, failed = catalog.call(bridge, tool, args)
        said = int_expected(arg, value, low, high)
        assert failed and text == f"{tool}: {said} (invalid input, code -32602)", text
        assert structured == {"error": {"code": -32602, "message": said}}


@pytest.fixture(scope="module")
def sock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real daemon for the module (keyword mode), with a note and a memory."""
    with module_daemon(tmp_path_factory, "agentparams", {"a.md": "# A\n\nAlpha text.\n"}) as d:
        socket = str(d.socket)
        assert "result" in rpc(socket, "add", {"content": "memory one"})
        wait_for(lambda: rpc(socket, "note.read", {"path": "a.md"}).get("result"))
        yield socket


@pytest.mark.parametrize(("method", "param"), sorted(SOCKET_INTS), ids=lambda v: str(v))
def test_every_integer_param_on_the_socket_says_one_message(
    sock: str, method: str, param: str
) -> None:
    low, high = SOCKET_INTS[(method, param)]
    base = METHOD_BASE.get(method, {})
    if param != "id" and method in ("validate", "update", "get", "used", "history", "promote"):
        base = {**base, "id": 1}
    where = method if param != "id" or method == "delete" else ""
    for value in bad_values(low, high, where, param):
        answer = rpc(sock, method, {**base, param: value})
        error = answer.get("error")
        assert error is not None, f"{method} took {param}={value!r}: {answer}"
        assert error["code"] == -32602
        assert error["message"] == int_expected(param, value, low, high), error


@pytest.mark.parametrize(("tool", "arg"), sorted(TO_METHOD), ids=lambda v: str(v))
def test_a_bad_integer_reads_the_same_on_mcp_and_on_the_socket(
    sock: str, tool: str, arg: str
) -> None:
    method, param = TO_METHOD[(tool, arg)]
    schema = {(t, a): s for t, a, s in integer_arguments()}[(tool, arg)]
    bridge = Bridge(sock, None)
    null_too = "" if param == "id" and method != "delete" else method
    for value in bad_values(schema.get("minimum", 0), schema.get("maximum"), null_too, param):
        text, structured, failed = catalog.call(
            bridge, tool, with_arg(TOOL_BASE.get(tool, {}), arg, value)
        )
        base = {"content": "x"} if method == "add" else {}
        base |= {"id": 1} if method in ("update", "validate") and param != "id" else {}
        base |= {"useful": True} if method == "validate" else {}
        base |= {"importance": 6} if method == "update" and param != "importance" else {}
        base |= METHOD_BASE.get(method, {}) if method not in ("update", "validate") else {}
        error = rpc(sock, method, {**base, param: value}).get("error")
        assert failed and error is not None, (tool, arg, value, text)
        # the MCP names the argument as the agent wrote it (filters.min_importance)
        assert structured["error"]["message"].removeprefix("filters.") == error["message"]
        assert structured["error"]["code"] == error["code"] == -32602


# a valid value of each integer argument (its minimum, or what makes sense), written 2.0
GOOD_INT = {("session_context", "max_tokens"): 300, ("about", "max_tokens"): 300}


@pytest.mark.parametrize(
    ("tool", "arg"), sorted((t, a) for t, a, _ in integer_arguments()), ids=lambda v: str(v)
)
def test_an_integer_written_with_a_zero_fraction_is_that_integer(
    sock: str, tool: str, arg: str
) -> None:
    """JSON Schema counts 3.0 as an integer, so the tool's schema takes it (and so do hosts
    that check arguments against it): the daemon must then get 3, not refuse `got 3.0`, and
    read_note's paging must not fail on it (it answered a JSON-RPC error with code 0). The
    answer is the one the integer gets."""
    schema = {(t, a): s for t, a, s in integer_arguments()}[(tool, arg)]
    value = GOOD_INT.get((tool, arg), max(schema.get("minimum", 0), 1))
    base = TOOL_BASE.get(tool, {})
    if tool in ("update", "forget", "feedback") and arg != "id":
        base = {**base, "id": 999_999}  # changes nothing the module's other tests read
    if arg == "id" and tool in ("update", "forget", "feedback"):
        value = 999_999
    said = []
    for given in (float(value), value):
        text, _, _ = catalog.call(Bridge(sock, None), tool, with_arg(base, arg, given))
        assert "expected an integer" not in text, text
        said.append(text)
        assert "could not complete" not in text, text
    if tool in ("search", "get", "read_note", "about", "related"):  # (not a listing a daily
        assert said[0] == said[1]  # log note, written after another test's memory, can grow)


@pytest.mark.parametrize(
    ("tool", "args", "said"),
    [
        ("search", {}, "query: expected a string, got nothing (it is required)"),
        ("search", {"query": ""}, "query: must not be empty"),
        ("search", {"query": "x", "tags": "ops"}, "tags: expected a list of strings, got 'ops'"),
        ("search", {"query": "x", "filters": None}, "filters: expected an object, got null"),
        ("search", {"query": "x", "since": True}, "since: expected a string or a number, got true"),
        (
            "search",
            {"query": "x", "filters": {"mode": "bad"}},
            "filters.mode: expected one of auto, keyword, vector, hybrid, fuzzy, got 'bad'",
        ),
        (
            "feedback",
            {"id": 1, "verdict": None},
            "verdict: expected one of useful, not_useful, used, got null",
        ),
        (
            "remember",
            {"content": "x", "confidence": 2},
            "confidence: expected a number from 0 to 1, got 2",
        ),
        ("forget", {}, "id: expected an integer of at least 1, got nothing (it is required)"),
    ],
)
def test_schema_errors_use_json_words_and_the_invalid_params_code(
    tool: str, args: dict[str, Any], said: str
) -> None:
    """Never Python's None or True, never jsonschema's phrasing; the code an agent can test."""
    text, structured, failed = catalog.call(Bridge("/nowhere/s.sock", None), tool, args)
    assert failed and text == f"{tool}: {said} (invalid input, code -32602)", text
    assert structured == {"error": {"code": -32602, "message": said}}
    assert "None" not in text and "True" not in text


def test_an_unknown_argument_lists_the_accepted_ones_as_the_daemon_does() -> None:
    text, _, failed = catalog.call(Bridge("/nowhere/s.sock", None), "get", {"id": 1, "idd": 2})
    assert failed and "get: unknown param 'idd' (accepted: id, path, section)" in text


# --- edit_note -----------------------------------------------------------------------------

CRLF = "# Title\r\n\r\nintro\r\n\r\n## Part\r\n\r\nold body\r\n"
EDITS = [
    {"action": "replace_section", "heading": "Part", "content": "new\nlines\n"},
    {"action": "insert_before", "heading": "Part", "content": "before\nit"},
    {"action": "insert_after", "heading": "Part", "content": "after"},
    {"action": "replace", "find": "intro\n\n## Part", "replace": "intro\nmore\n\n## Part"},
    {"action": "replace", "find": "old body", "replace": "one\ntwo"},
]


@pytest.mark.parametrize("args", EDITS, ids=lambda a: a["action"] + "-" + str(len(str(a))))
def test_every_edit_of_a_crlf_note_keeps_it_crlf(args: dict[str, Any]) -> None:
    new, _ = notetools.edit(CRLF, args)
    assert new != CRLF
    assert new.count("\n") == new.count("\r\n"), repr(new)  # no bare LF
    assert "\r\r" not in new


def test_edits_of_an_lf_note_are_unchanged_by_the_crlf_rule() -> None:
    lf = CRLF.replace("\r\n", "\n")
    for args in EDITS:
        new, _ = notetools.edit(lf, args)
        assert "\r" not in new


class Notes(Bridge):
    """A bridge over one note held in memory: note.read answers it, note.write takes it."""

    def __init__(self, text: str) -> None:
        super().__init__("/nowhere/s.sock", None)
        self.text, self.writes = text, 0

    def call(self, method: str, params: dict[str, Any], keep_null: Any = ()) -> Any:
        if method == "note.read":
            return {"path": params["path"], "content": self.text, "sha256": "ab" * 32}
        self.writes += 1
        self.text = params["content"]
        return {"path": params["path"], "sha256": "cd" * 32}


TWICE = "# Doc\n\n## Deploy\n\none\n\n## Deploy\n\ntwo\n"


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        ({"action": "replace_section", "heading": "Nope", "content": "x"}, -32004, "no heading"),
        ({"action": "replace_section", "heading": "Deploy", "content": "x"}, -32602, "path"),
        (
            {"action": "replace_section", "heading": "Doc > Deploy", "content": "x"},
            -32602,
            "each with the path 'Doc > Deploy': change one with action 'replace'",
        ),
        ({"action": "replace", "find": "Deploy", "replace": "Ship"}, -32602, "occurs 2 time"),
        ({"action": "replace", "find": "one"}, -32602, "needs find and replace"),
        ({"action": "insert_after", "heading": "Doc"}, -32602, "needs heading and content"),
        (
            {"action": "replace", "find": "one", "replace": "1", "heading": "Doc"},
            -32602,
            "heading: not an argument of action 'replace' (it takes find, replace, count)",
        ),
        (
            {"action": "insert_before", "heading": "Doc", "content": "x", "count": 2},
            -32602,
            "count: not an argument of action 'insert_before'",
        ),
    ],
)
def test_an_edit_the_tool_refuses_carries_a_code_and_writes_nothing(
    args: dict[str, Any], code: int, needle: str
) -> None:
    bridge = Notes(TWICE)
    text, structured, failed = catalog.call(bridge, "edit_note", {"path": "d.md", **args})
    assert failed and needle in text and f"code {code})" in text, text
    assert structured["error"]["code"] == code
    assert bridge.writes == 0 and bridge.text == TWICE


def test_a_replacement_equal_to_the_text_found_says_nothing_changed() -> None:
    bridge = Notes(TWICE)
    text, _, failed = catalog.call(
        bridge, "edit_note", {"path": "d.md", "action": "replace", "find": "one", "replace": "one"}
    )
    assert not failed and text.startswith("Unchanged d.md: nothing to change") and not bridge.writes


# --- the structured copy of entity answers, and update's expires_at --------------------------


def test_the_structured_copy_of_an_entity_answer_names_its_items() -> None:
    """Cut to fit the text, a relation, node or edge keeps the name(s) that identify it,
    never an empty object."""
    related = {
        "name": "billing-svc",
        "depth": 1,
        "nodes": [
            {"name": f"Person {i}", "type": "person", "mentions": 3, "depth": 1} for i in range(8)
        ],
        "edges": [{"from": "billing-svc", "to": f"Person {i}", "together": 2} for i in range(8)],
    }
    out = catalog.fit(related, "billing-svc: mentioned with (depth 1)\n" + "- x\n" * 8)
    items = [*out["nodes"], *out["edges"]]
    assert items and all(item for item in items), out
    assert all("name" in n for n in out["nodes"]) and all("to" in e for e in out["edges"])


def test_update_can_clear_an_expiry_and_remember_can_set_one() -> None:
    sent: list[tuple[str, dict[str, Any]]] = []

    class Recording(Bridge):
        def call(self, method: str, params: dict[str, Any], keep_null: Any = ()) -> Any:
            kept = {k: v for k, v in params.items() if v is not None or k in keep_null}
            sent.append((method, kept))
            return {"id": 1, "content": "x", "stored": True}

    bridge = Recording("/nowhere/s.sock", None)
    _, _, failed = catalog.call(bridge, "update", {"id": 1, "expires_at": None})
    assert not failed and sent[-1] == ("update", {"id": 1, "expires_at": None})
    _, _, failed = catalog.call(bridge, "remember", {"content": "x", "expires_at": "2099-01-01"})
    assert not failed and sent[-1] == ("add", {"content": "x", "expires_at": "2099-01-01"})
    assert describe(None) == "null"


# --- text arguments: empty, white space, another type ------------------------------------------

# (tool, argument, the rest of a valid call) -> (method, param, the rest of its request)
TEXT_ARGS = [
    ("search", "query", {}, "search", {}),
    ("remember", "content", {}, "add", {}),
    ("match_triggers", "prompt", {}, "match_triggers", {}),
    ("about", "name", {}, "entity", {}),
    ("related", "name", {}, "related", {}),
    ("read_note", "path", {}, "note.read", {}),
    ("write_note", "path", {"content": "x"}, "note.write", {"content": "x"}),
    ("append_to_note", "path", {"content": "x"}, "note.append", {"content": "x"}),
    ("move_note", "new_path", {"path": "a.md"}, "note.move", {"path": "a.md"}),
    ("links", "path", {}, "links", {}),
    ("backlinks", "path", {}, "backlinks", {}),
    ("delete_note", "path", {}, "note.read", {}),
    ("get", "path", {}, "get", {}),
]


@pytest.mark.parametrize(
    ("tool", "arg", "args", "method", "params"),
    TEXT_ARGS,
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_an_empty_or_mistyped_text_reads_the_same_on_both_doors(
    sock: str, tool: str, arg: str, args: dict[str, Any], method: str, params: dict[str, Any]
) -> None:
    """'' (refused by the tool's schema), white space (refused by the daemon, relayed) and a
    number: the socket's message is the tool's, perhaps with a hint after it."""
    bridge = Bridge(sock, None)
    for value in ("", "   ", 5):
        _, structured, failed = catalog.call(bridge, tool, {**args, arg: value})
        error = rpc(sock, method, {**params, arg: value}).get("error")
        assert failed and error is not None and error["code"] == -32602, (tool, value, error)
        said = structured["error"]["message"]
        assert error["message"].startswith(said), (said, error["message"])
        expected = f"{arg}: must not be empty" if isinstance(value, str) else f"{arg}: expected a "
        assert said.startswith(expected), said


# --- the structured copy never holds a list cut short -------------------------------------------

MEMORY = {
    "id": 53,
    "kind": "memory",
    "content": "The VPN gateway for the Lisbon office is vpn-lis-02",
    "type": "fact",
    "tags": ["net", "vpn", "lisbon", "office"],
    "importance": 5,
    "namespace": "default",
    "created_at": "2026-11-26T18:55:38Z",
    "updated_at": "2026-11-26T18:55:38Z",
    "last_accessed_at": "2026-11-26T18:55:38Z",
    "tier": "deprecated",
    "triggers": ["lisbon vpn", "office gateway"],
    "content_hash": "a" * 64,
}
PAGE = {
    "name": "Caroline Baker",
    "key": "caroline baker",
    "type": "person",
    "aliases": ["Caro", "Caroline", "Caroline's", "Cazzie", "caroline-baker"],
    "mentions": 8,
    "relations": [{"name": f"Name {i}", "type": "person", "together": 1} for i in range(6)],
    "sources": [
        {"kind": "note", "path": f"p{i}.md", "line": i, "text": "t " * 30} for i in range(4)
    ],
}


def value_lists(value: Any, where: str = "") -> dict[str, list[Any]]:
    """Every list of scalars in `value`, by where it is."""
    out: dict[str, list[Any]] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out |= value_lists(v, f"{where}.{k}")
    elif isinstance(value, list):
        if value and not any(isinstance(v, dict | list) for v in value):
            out[where] = value
        for i, v in enumerate(value):
            if isinstance(v, dict | list):
                out |= value_lists(v, f"{where}[{i}]")
    return out


@pytest.mark.parametrize("record", [MEMORY, PAGE], ids=["memory", "entity page"])
@pytest.mark.parametrize("text_length", [40, 180, 260, 330, 420])
def test_a_list_of_values_is_kept_whole_or_left_out(
    record: dict[str, Any], text_length: int
) -> None:
    """A memory's tags cut to [] told the agent it had none; now a list of values (tags,
    triggers, aliases) is whole or absent, while result lists may lose items from the end."""
    out = catalog.fit(record, "x" * text_length)
    before = value_lists(record)
    for where, values in value_lists(out).items():
        assert values == before[where], (where, values, before[where])
    assert catalog.size(out) <= max(text_length, catalog.SMALL)


# --- a time range the wrong way round; ttl in seconds; an unknown entity's code ----------------


@pytest.mark.parametrize("method", ["search", "list"])
def test_a_range_ending_before_it_starts_is_refused_not_answered_empty(
    sock: str, method: str
) -> None:
    params = {"since": "2026-12-01", "until": "2026-01-01"}
    base = {"query": "memory"} if method == "search" else {}
    error = rpc(sock, method, {**base, **params}).get("error")
    assert error is not None and error["code"] == -32602
    assert error["message"].startswith("until: '2026-01-01' is not after since ('2026-12-01')")
    text, _, failed = catalog.call(Bridge(sock, None), "search", {"query": "memory", **params})
    assert failed and "until: '2026-01-01' is not after since" in text
    ok = rpc(sock, method, {**base, "since": "2026-03-05", "until": "2026-03-05"})
    assert "result" in ok  # a bare date as until is the end of that day


def test_remember_takes_a_ttl_in_seconds_as_the_socket_does(sock: str) -> None:
    text, structured, failed = catalog.call(
        Bridge(sock, None), "remember", {"content": "expires in an hour, in seconds", "ttl": 3600}
    )
    assert not failed, text
    got = rpc(sock, "get", {"id": structured["id"]})["result"]
    assert got["expires_at"] is not None


def test_an_unknown_entity_reads_as_a_not_found_error(sock: str) -> None:
    text, structured, failed = catalog.call(Bridge(sock, None), "about", {"name": "Nobody Xyz"})
    assert failed and "(not found, code -32004)" in text
    assert structured["error"]["code"] == -32004


def test_under_a_prefix_errors_name_the_tools_as_the_agent_calls_them() -> None:
    from memoryd.agents.mcp import prefixed

    said = "edit_note: no heading 'X' in the note (headings: none) (not found, code -32004)"
    assert prefixed(said, "edit_note", "md_") == "md_" + said
    listed = prefixed("unknown tool 'nope' (tools: search, ...)", "nope", "md_")
    assert listed.startswith("unknown tool 'md_nope' (tools: md_search, md_remember,")
    assert prefixed("Created a.md (sha256 ab)", "write_note", "md_") == "Created a.md (sha256 ab)"


# every boolean param of every method, given a word: one message, the value said
BOOLS = [
    ("search", "explain", {"query": "memory"}),
    ("search", "use_decay", {"query": "memory"}),
    ("search", "include_expired", {"query": "memory"}),
    ("add", "skip_near_duplicates", {"content": "a boolean probe"}),
    ("add", "allow_secrets", {"content": "a boolean probe"}),
    ("validate", "useful", {"id": 1}),
    ("import", "dry_run", {"items": []}),
    ("import", "allow_secrets", {"items": []}),
    ("prune", "dry_run", {}),
    ("reindex", "full", {}),
    ("note.write", "allow_secrets", {"path": "b.md", "content": "x"}),
]


@pytest.mark.parametrize(("method", "param", "base"), BOOLS, ids=lambda v: str(v)[:20])
def test_every_boolean_param_says_one_message(
    sock: str, method: str, param: str, base: dict[str, Any]
) -> None:
    for value in ("yes", 1):
        error = rpc(sock, method, {**base, param: value}).get("error")
        assert error is not None and error["code"] == -32602, (method, param, value)
        assert error["message"] == f"{param}: expected true or false, got {describe(value)}"


def test_an_empty_append_is_refused_not_reported_as_appended(sock: str) -> None:
    before = rpc(sock, "note.read", {"path": "a.md"})["result"]["sha256"]
    error = rpc(sock, "note.append", {"path": "a.md", "content": ""}).get("error")
    assert error is not None and error["message"].startswith("content: must not be empty")
    _, structured, failed = catalog.call(
        Bridge(sock, None), "append_to_note", {"path": "a.md", "content": ""}
    )
    assert failed and structured["error"]["message"] == "content: must not be empty"
    assert rpc(sock, "note.read", {"path": "a.md"})["result"]["sha256"] == before
    assert "error" in rpc(sock, "note.append", {"path": "fresh.md", "content": ""})
    assert "error" in rpc(sock, "note.read", {"path": "fresh.md"})  # no empty note made
