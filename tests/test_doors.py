"""One door per kind of change (issue 18): the same secret guard for memories and notes, tags and
type checked before they are lowercased, truthful note answers when the store fails after the
file was written, and a deleted memory's history gone with it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memoryd.core.errors import InvalidInput, Refused, StoreUnavailable
from memoryd.serve import methods as api

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

AWS = "AKIAIOSFODNN7EXAMPLE"


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


@pytest.mark.parametrize("field", ["tags", "type"])
def test_a_key_id_as_tag_or_type_is_refused_before_lowercasing(make_app: Any, field: str) -> None:
    app = make_app(model=None)
    value: Any = [AWS] if field == "tags" else AWS
    with pytest.raises(Refused) as err:
        call(app, "add", content="harmless text", **{field: value})
    assert field in err.value.message and AWS not in err.value.message
    assert app.stats(namespace="*")["memories"] == 0
    mid = call(app, "add", content="harmless text")["id"]
    with pytest.raises(Refused):
        call(app, "update", id=mid, **{field: value})
    with pytest.raises(Refused):
        call(app, "import", items=[{"content": "other text", field: value}])
    kept = call(app, "add", content="another text", allow_secrets=True, **{field: value})
    assert kept["warnings"]


def test_redact_mode_drops_a_key_id_tag(make_app: Any) -> None:
    app = make_app(model=None, secrets={"mode": "redact"})
    rec = call(app, "add", content="harmless text", tags=["ok", AWS])
    assert call(app, "get", id=rec["id"])["tags"] == ["ok"]


@pytest.mark.parametrize("method", ["note.write", "note.append"])
def test_a_note_with_a_credential_is_refused_like_a_memory(make_app: Any, method: str) -> None:
    app = make_app(model=None)
    note = app.cfg.workspace / "keys.md"
    with pytest.raises(Refused) as err:
        call(app, method, path="keys.md", content=f"the key is {AWS}\n")
    with pytest.raises(Refused) as mem_err:
        call(app, "add", content=f"the key is {AWS}")
    assert err.value.message == mem_err.value.message  # the same error, the same hint
    assert "allow_secrets" in err.value.message and AWS not in err.value.message
    assert not note.exists()
    out = call(app, method, path="keys.md", content=f"the key is {AWS}\n", allow_secrets=True)
    assert out["path"] == "keys.md" and AWS in note.read_text()


def test_a_note_with_a_credential_is_refused_through_mcp(make_app: Any) -> None:
    from memoryd.agents import tools

    app = make_app(model=None)

    class Local(tools.Bridge):
        def call(self, method: str, params: dict[str, Any]) -> Any:
            try:
                return api.lookup(method, params).fn(app, params)
            except Refused as exc:
                raise tools.ToolFailure(exc.message, exc.data) from None

    bridge = Local.__new__(Local)
    bridge.namespace = None
    for name in ("write_note", "append_to_note"):
        text, _, failed = tools.call_tool(
            bridge, name, {"path": "keys.md", "content": f"key {AWS}"}
        )
        assert failed and "credential" in text and AWS not in text, text
    assert not (app.cfg.workspace / "keys.md").exists()


class _FailingStore:
    """The app's store, except that every read and write raises StoreUnavailable: the database
    went away after the note's file was written."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name in ("read", "run_write", "write"):

            def fail(*args: Any, **kwargs: Any) -> Any:
                raise StoreUnavailable("the store is unreachable; nothing was written")

            return fail
        return getattr(self._store, name)


@pytest.mark.parametrize("method", ["note.write", "note.append"])
def test_a_store_failure_after_the_file_write_is_not_reported_as_nothing_written(
    make_app: Any, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    call(app, "note.write", path="log.md", content="# Log\n")
    monkeypatch.setattr(app.indexer, "store", _FailingStore(app.store))
    out = call(app, method, path="log.md", content="- shipped it\n")
    assert out["indexed"] is False and "file was written" in out["warning"]
    assert "do not retry" in out["warning"]
    assert (app.cfg.workspace / "log.md").read_text().count("- shipped it") == 1
    monkeypatch.undo()
    app.reconcile()  # what the reconcile job does once the store answers again
    hits = app.memories.get_note("log.md")
    assert "shipped it" in hits["content"]


def test_deleting_a_memory_removes_its_history(make_app: Any) -> None:
    app = make_app(model=None)
    mid = app.memories.add("first words").id
    app.memories.update(mid, {"content": "second words"})
    call(app, "validate", id=mid, useful=True)

    def rows(con: Any) -> int:
        return int(
            con.execute("SELECT count(*) FROM history WHERE entry_id = ?", (mid,)).fetchall()[0][0]
        )

    assert app.store.read(rows) >= 2
    call(app, "delete", id=mid)
    assert app.store.read(rows) == 0


# --- lists that page (walkw16) -----------------------------------------------------------------
#
# A list pages by a cursor: the answer's `next_cursor` names its last entry, and the next page
# starts after it, so writes between two pages neither repeat an entry nor skip one that was
# there before (an offset counts rows, which every add and delete moves: the web page's "Older
# memories" showed a memory twice after an agent added one, and skipped one after a delete).
# Every method that takes `offset` takes `cursor` too, read from the method table.


def _paged_methods() -> set[str]:
    return {name for name, m in api.METHODS.items() if "offset" in m.params}


def test_every_method_that_pages_by_offset_also_takes_a_cursor() -> None:
    assert _paged_methods() == set(PAGED), "a list that pages: add it to PAGED below"
    for name in PAGED:
        assert "cursor" in api.METHODS[name].params, name


def _seed_memories(app: Any, n: int) -> list[int]:
    app.memories.clock = lambda: 1_800_000_000.0  # every memory at one time: ties by id
    return [call(app, "add", content=f"memory {i} of the paging walk")["id"] for i in range(n)]


def _seed_notes(app: Any, n: int) -> list[str]:
    paths = [f"walk/{'nÄBé_ '[i % 6]}n{i:02d}.md" for i in range(n)]  # cases, accents, space
    for p in paths:
        call(app, "note.write", path=p, content=f"# {p}\n\nnote of the paging walk\n")
    return paths


def _write_memory(app: Any, i: int) -> None:
    call(app, "add", content=f"written while paging {i}")


def _write_note(app: Any, i: int) -> None:
    call(app, "note.write", path=f"walk/a{i:02d}.md", content=f"# new {i}\n")  # sorts first
    call(app, "note.write", path=f"walk/z{i:02d}.md", content=f"# new {i}\n")  # sorts last


PAGED: dict[str, tuple[Any, Any, str, dict[str, Any]]] = {
    # method: (seed, a write between pages, the key that names an item, params)
    "list": (_seed_memories, _write_memory, "id", {}),
    "note.list": (_seed_notes, _write_note, "path", {"path": "walk"}),
}


PAST_THE_END = {"list": "0.0:1"}  # older than every entry (note.list: its last path)


@pytest.mark.parametrize("method", sorted(PAGED))
def test_paging_while_writes_happen_repeats_and_skips_nothing(make_app: Any, method: str) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    seed, write, key, params = PAGED[method]
    before = seed(app, 11)
    if method == "list":
        app.memories.clock = lambda: 1_800_000_000.0 + len(seen)  # later adds are newer
    seen: list[Any] = []
    cursor, pages = None, 0
    while True:
        page = call(app, method, limit=3, **params, **({"cursor": cursor} if cursor else {}))
        seen += [item[key] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        write(app, pages)
        pages += 1
        assert pages < 20, "the pages never end"
    assert len(seen) == len(set(seen)), f"repeated: {seen}"
    assert set(before) <= set(seen), f"skipped: {set(before) - set(seen)}"
    if method == "note.list":  # the notes written after the cursor's place are listed too
        assert [p for p in seen if "/z" in p], seen
    # the last page says it is the last; past the end is an empty last page, not an error
    whole = call(app, method, limit=1000, **params)
    assert whole["next_cursor"] is None
    end = PAST_THE_END.get(method) or str(whole["items"][-1][key])  # the last path
    past = call(app, method, limit=3, cursor=end, **params)
    assert past["items"] == [] and past["next_cursor"] is None
    with pytest.raises(InvalidInput, match="cursor"):
        call(app, method, cursor=1, **params)
    with pytest.raises(InvalidInput, match="not both"):
        call(app, method, cursor=page_cursor(app, method, params), offset=3, **params)


def page_cursor(app: Any, method: str, params: dict[str, Any]) -> str:
    cursor = call(app, method, limit=1, **params)["next_cursor"]
    assert isinstance(cursor, str)
    return cursor


def test_a_deleted_entry_s_cursor_still_starts_the_next_page(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    ids = _seed_memories(app, 6)  # newest first: ids[5], ids[4], ...
    first = call(app, "list", limit=2)
    assert [m["id"] for m in first["items"]] == [ids[5], ids[4]]
    call(app, "delete", id=ids[4])  # the entry the cursor names
    call(app, "delete", id=ids[3])  # and the one after it
    rest = call(app, "list", limit=10, cursor=first["next_cursor"])
    assert [m["id"] for m in rest["items"]] == [ids[2], ids[1], ids[0]]


# --- the web page's JSON routes: the socket's words for the same mistakes (walkw16) -------------


@pytest.fixture
def web(make_app: Any) -> Any:
    from webclient import WebHarness

    app = make_app(model=None, dailylog={"enabled": False})
    call(app, "note.write", path="db.md", content="# DB\n\nWe chose Postgres.\n")
    mem = call(app, "add", content="Redis runs on port 6380")["id"]
    h = WebHarness(app)
    h.mem = mem  # type: ignore[attr-defined]
    h.sign_in()
    yield h
    h.close()


def _route_params(web: Any, method: str, path: str) -> list[str]:
    """What a route takes, as its own refusal of an unknown param lists it."""
    ans = web.request(method, path + "?bogus=1" if method == "GET" else path, {"bogus": 1})
    said = ans.json()["error"]["message"]
    listed = said.split("(accepted: ", 1)[1].rstrip(")")
    return [] if listed == "none" else listed.split(", ")


def _routes() -> list[tuple[str, str]]:
    from memoryd.web import routes

    return sorted(routes.ROUTES)


@pytest.mark.parametrize(("method", "path"), _routes(), ids=lambda v: str(v))
def test_every_route_refuses_a_param_it_does_not_take(web: Any, method: str, path: str) -> None:
    """`/api/memories?kind=chunk` listed memories and `/api/search?...&entities=Caroline` every
    hit, the filter silently left out; an update's `tier` in the body was dropped while the
    content changed. A route now refuses what it does not take, as the socket refuses an
    unknown param, and says what it takes."""
    if method == "GET":
        ans = web.request(method, f"{path}?bogus=1")
    else:
        ans = web.request(method, path, {"bogus": 1})
    assert ans.status == 400, ans.text
    error = ans.json()["error"]
    assert error["code"] == -32602
    assert error["message"].startswith(f"{path}: unknown param 'bogus' (accepted: "), error


@pytest.mark.parametrize(("method", "path"), _routes(), ids=lambda v: str(v))
def test_every_integer_param_of_every_route_is_refused_in_the_socket_words(
    web: Any, method: str, path: str
) -> None:
    """`/api/memories?limit=x` said `limit: expected an integer`; the socket says
    `limit: expected an integer from 1 to 1000, got 'x'`: the route now passes the text on and
    the method refuses it in its words."""
    from memoryd.web.actions import INT_PARAMS

    takes = _route_params(web, method, path)
    for name in set(takes) & INT_PARAMS:
        given = {"query": "redis", "name": "Redis", "path": "db.md", "id": web.mem, "useful": True}
        base = {k: v for k, v in given.items() if k in takes and k != name}
        if method == "GET":
            q = "&".join(f"{k}={v}" for k, v in {**base, name: "x"}.items())
            ans = web.request("GET", f"{path}?{q}")
        else:
            ans = web.request("POST", path, {**base, name: "x"})
        error = ans.json()["error"]
        assert ans.status == 400 and error["code"] == -32602, (name, error)
        assert error["message"].startswith(f"{name}: expected an integer "), (name, error)
        assert error["message"].endswith(", got 'x'"), (name, error)


@pytest.mark.parametrize(
    ("failure", "code", "status"),
    [
        (RuntimeError("boom"), -32603, 500),
        (TypeError("Bad binding argument type supplied - argument #1: type list"), -32602, 400),
        (OSError(28, "No space left on device"), -32013, 507),
    ],
    ids=["bug", "unchecked type", "disk full"],
)
def test_an_unexpected_failure_answers_as_on_the_socket(
    web: Any, monkeypatch: pytest.MonkeyPatch, failure: Exception, code: int, status: int
) -> None:
    """The web page's answer to a failure no method turned into an error had no `code` (the
    socket's -32603), and a value of the wrong type that reached SQL was a 500 where the socket
    says -32602: one function (registry.unexpected) answers for both doors now."""
    from memoryd.serve.registry import unexpected

    def fail(app: Any, params: dict[str, Any]) -> Any:
        raise failure

    monkeypatch.setitem(api.METHODS, "get", api.Method(fail, api.METHODS["get"].params))
    ans = web.request("GET", "/api/memory?id=1")
    assert ans.status == status, ans.text
    error = ans.json()["error"]
    assert error["code"] == code == unexpected(failure, "/api/memory")[0], error
    assert error["message"] == unexpected(failure, "/api/memory")[1]


# --- docs/protocol.md names every param of every method (walkw16) -----------------------------


def _method_sections() -> dict[str, str]:
    text = (Path(__file__).resolve().parent.parent / "docs" / "protocol.md").read_text()
    parts = re.split(r"^### ", text, flags=re.M)
    found = {}
    for part in parts[1:]:
        head = re.match(r"`([\w.]+)`", part)
        if head:
            found[head.group(1)] = part.split("\n## ", 1)[0]
    return found


FILTERS_DOC = (
    (Path(__file__).resolve().parent.parent / "docs" / "protocol.md")
    .read_text()
    .split("### Filters", 1)[1]
    .split("## Methods", 1)[0]
)
SAME_AS = {"update": "add"}  # update: "at least one of the `add` params"


@pytest.mark.parametrize("method", sorted(api.METHODS))
def test_every_param_of_every_method_is_in_its_section_of_the_protocol_doc(method: str) -> None:
    """The method table and docs/protocol.md agree param by param (the method list itself is
    checked in test_ctl.py): a param added to a method is documented with it. A method that
    takes the filters may name them in "Filters"; update names add's."""
    section = _method_sections()[method]
    also = _method_sections().get(SAME_AS.get(method, ""), "")
    for param in sorted(api.METHODS[method].params):
        named = f"`{param}`" in section or f'"{param}"' in section or f"`{param}`" in also
        filters = "Filters" in section and f"`{param}`" in FILTERS_DOC
        assert named or filters, f"{method}: param {param} is not in docs/protocol.md"


@pytest.mark.parametrize("method", sorted(api.METHODS))
def test_every_param_a_method_s_table_documents_exists(method: str) -> None:
    """The other way round: a param row of a method's table in docs/protocol.md names a param
    the method takes (a renamed param leaves no stale row behind)."""
    section = _method_sections()[method]
    tables = re.findall(r"^\| param \|.*\n\|[-|]+\|\n((?:\|.*\n)+)", section, flags=re.M)
    for table in tables:
        for first_cell in re.findall(r"^\| ([^|]+) \|", table, flags=re.M):
            for name in re.findall(r"`([\w.]+)`", first_cell):
                assert name in api.METHODS[method].params, f"{method}: {name} is documented only"
    assert tables or method not in ("add", "search", "delete"), f"{method}: no param table read"


# --- a required param left out: one message on every door (walkw16) ----------------------------

NOT_STRICTLY = {("search", "query")}  # "not needed with concepts": search says so itself


def _starred() -> set[tuple[str, str]]:
    found = set()
    for method, section in _method_sections().items():
        for name in re.findall(r'"(\w+)"\*', section) + re.findall(r"`(\w+)`\*", section):
            found.add((method, name))
    return found - NOT_STRICTLY


def test_the_required_params_are_the_ones_the_protocol_doc_stars() -> None:
    required = {(name, p) for name, m in api.METHODS.items() for p in m.required}
    assert required == _starred(), required ^ _starred()


REQUIRED = sorted((name, p) for name, m in api.METHODS.items() for p in m.required)


@pytest.mark.parametrize(("method", "param"), REQUIRED, ids=lambda v: str(v))
def test_a_required_param_left_out_is_said_one_way(make_app: Any, method: str, param: str) -> None:
    """Left out, a required param was `add: content is required`, `id: expected an integer of
    at least 1, got null` (nothing was sent), `name: letters, digits, ...`, `jobs.run: name:
    expected a job name`: now the words of the MCP tools' check, and null stays a wrong value."""
    from memoryd.serve.registry import missing

    app = make_app(model=None, dailylog={"enabled": False})
    others = {p: GIVEN[p] for p in api.METHODS[method].required if p != param}
    with pytest.raises(InvalidInput) as err:
        call(app, method, **others)
    assert err.value.message == missing(param)
    assert err.value.message.endswith("got nothing (it is required)")


GIVEN: dict[str, Any] = {"id": 1, "useful": True, "path": "a.md", "content": "x", "name": "n"}
GIVEN |= {"new_path": "b.md", "prompt": "p", "items": []}

# the MCP tools that call one method with the same argument name (agents/*.py tables)
TOOL_METHOD = {
    "remember": "add",
    "update": "update",
    "forget": "delete",
    "match_triggers": "match_triggers",
    "read_note": "note.read",
    "write_note": "note.write",
    "append_to_note": "note.append",
    "move_note": "note.move",
    "links": "links",
    "backlinks": "backlinks",
    "about": "entity",
    "related": "related",
}


def test_an_mcp_tool_says_a_left_out_argument_as_the_socket_does() -> None:
    from memoryd.agents import catalog
    from memoryd.serve.registry import missing

    compared = 0
    for tool, method in sorted(TOOL_METHOD.items()):
        schema = catalog.BY_NAME[tool].schema
        for arg in schema.get("required", []):
            if method == "delete" or arg in api.METHODS[method].required:
                args = {a: GIVEN[a] for a in schema["required"] if a != arg}
                bridge = catalog.Bridge("/nowhere/memoryd.sock", None)  # the check answers first
                _, structured, failed = catalog.call(bridge, tool, args)
                assert failed and structured["error"]["message"] == missing(arg), (tool, arg)
                compared += 1
    assert compared >= len(TOOL_METHOD)


@pytest.mark.parametrize(
    ("answer", "offset", "said"),
    [
        ({"items": [1, 2], "total": 9, "next_cursor": "17.5:4"}, 0, "next page: --cursor 17.5:4"),
        ({"items": [1], "total": 9, "next_cursor": "my notes/a b.md"}, 0, "'my notes/a b.md'"),
        ({"items": [1], "total": 9, "next_cursor": "it's.md"}, 0, "--cursor 'it'\"'\"'s.md'"),
        ({"items": [1], "total": 9, "next_cursor": "-draft.md"}, 0, "--cursor=-draft.md)"),
        ({"items": [1, 2], "total": 2, "next_cursor": None}, 0, "(2 shown of 2)"),
        ({"items": [1, 2], "total": 9}, 4, "next page: --offset 6"),  # a daemon before cursors
    ],
)
def test_memoryctl_s_page_footer_gives_the_cursor_as_a_shell_word(
    capsys: pytest.CaptureFixture[str], answer: dict[str, Any], offset: int, said: str
) -> None:
    from memoryd.ctl import build_parser
    from memoryd.ctl.handlers import page_footer

    page_footer(answer, offset)
    err = capsys.readouterr().err
    assert said in err, err
    if answer.get("next_cursor"):
        import shlex

        option = err.split("next page: ", 1)[1].rsplit(")", 1)[0]
        args = build_parser().parse_args(["note", "list", *shlex.split(option)])
        assert args.cursor == answer["next_cursor"]


def test_every_method_is_behind_an_mcp_tool_or_named_as_not_offered() -> None:
    """docs/agents.md: the tools table's "daemon method" column, and the paragraph "What no
    tool offers": a new method is one or the other, so an agent's door cannot drift silently."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "agents.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \|.*\| ([^|]+) \| [^|]+ \|$", text, flags=re.M)
    behind = {m for _, col in rows for m in re.findall(r"`([\w.]+)`", col)} & set(api.METHODS)
    para = text.split("**What no tool offers.**", 1)[1].split("\n\n", 1)[0]
    not_offered = set(re.findall(r"`([\w.]+)`", para)) & set(api.METHODS)
    from memoryd.agents import catalog

    assert {t for t, _ in rows} == set(catalog.BY_NAME), "the tools table lists every tool"
    assert behind | not_offered == set(api.METHODS), set(api.METHODS) - behind - not_offered
    assert not behind & not_offered, behind & not_offered


@pytest.mark.parametrize("value", ["yesterday", "-7d", True, [2026]])
def test_a_time_outside_the_grammar_is_said_alike_by_the_daemon_and_memoryctl(
    make_app: Any, value: Any
) -> None:
    """The daemon said `since: expected a duration back from now (90m, 24h, 7d), ...` without
    the value; memoryctl (which checks first) names 2w too and the value: one text now, kept
    twice since memoryctl imports nothing of the daemon's."""
    from memoryd.core.errors import describe
    from memoryd.core.timeutil import BOUND_HINT
    from memoryd.ctl.handlers import TIME_GRAMMAR

    assert BOUND_HINT == TIME_GRAMMAR
    app = make_app(model=None)
    for method in ("list", "search", "recent_activity", "entities"):
        extra = {"query": "x"} if method == "search" else {}
        with pytest.raises(InvalidInput) as err:
            call(app, method, since=value, **extra)
        assert err.value.message == f"since: expected {BOUND_HINT}, got {describe(value)}"


# --- the web page's lists go on by the cursor (walkw16) ---------------------------------------

NODE = shutil.which("node")


def _page(page: str, answers: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers))
    assert NODE is not None
    webdom = Path(__file__).resolve().parent / "webdom.js"
    out = subprocess.run(
        [NODE, str(webdom), page, str(path)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    shown: dict[str, Any] = json.loads(out.stdout)
    assert shown["errors"] == [], shown["errors"]
    return shown


MEMORY = {"id": 7, "kind": "memory", "content": "x", "type": "fact", "tags": [], "tier": "normal"}
MEMORY |= {"importance": 5, "namespace": "default", "created_at": "2026-11-27T08:00:00Z"}


@pytest.mark.skipif(NODE is None, reason="node is not installed (the page's JS)")
@pytest.mark.parametrize("last", [False, True], ids=["more", "last"])
@pytest.mark.parametrize(
    ("page", "route", "item", "button", "count"),
    [
        ("memories", "/api/memories", MEMORY, "more", "summary"),
        ("note", "/api/notes", {"path": "a.md", "title": "A"}, "more-notes", "notes-count"),
    ],
)
def test_a_page_s_list_offers_more_exactly_while_the_answer_has_a_next_cursor(
    tmp_path: Path, page: str, route: str, item: Any, button: str, count: str, last: bool
) -> None:
    """The notes picker showed the first 200 notes of any vault and no more; the memories
    timeline went on by offset (a memory deleted from the page made the next page skip one).
    Both go on after the last item shown, and offer more exactly while there is more."""
    answer = {"items": [item, item], "total": 5, "next_cursor": None if last else "c"}
    shown = _page(page, {route: answer, "/api/trash": {"items": []}}, tmp_path)
    assert (button in shown["hidden"]) is last, shown
    assert ("2 shown" in shown["ids"][count]) is not last, shown["ids"][count]


@pytest.mark.skipif(NODE is None, reason="node is not installed (the page's JS)")
@pytest.mark.parametrize("last", [False, True], ids=["more", "last"])
def test_the_entity_list_offers_more_exactly_while_the_answer_has_a_next_cursor(
    tmp_path: Path, last: bool
) -> None:
    """The entities page said "a larger top shows them" and stopped at 500 (ent17): it goes on
    by the cursor, as the memories and notes lists do."""
    row = {"name": "Ana Lima", "type": "person", "mentions": 3}
    answer = {"entities": [row, row], "count": 2, "has_more": not last}
    answer["next_cursor"] = None if last else "3:ana lima"
    shown = _page("entities", {"/api/entities": answer}, tmp_path)
    assert ("entities-more" in shown["hidden"]) is last, shown
    assert ("there are more" in shown["ids"]["entities-summary"]) is not last, shown


def test_memoryctl_s_paths_only_listing_says_its_next_page_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from memoryd.ctl import say_next_page

    say_next_page({"items": [{"path": "a b.md"}], "next_cursor": "a b.md"})
    assert capsys.readouterr() == ("", "(next page: --cursor 'a b.md')\n")
    say_next_page({"items": [{"path": "a.md"}], "next_cursor": None})
    assert capsys.readouterr() == ("", "")


def test_the_entity_list_says_when_more_match_than_top_let_through(make_app: Any) -> None:
    """`entities --top 2` of ten answered two with `count: 2` and no word of the others; it
    says there are more (and, since ent17, pages: tests/test_entity_doors.py)."""
    app = make_app(model=None, dailylog={"enabled": False})
    for i, name in enumerate(["Ana Lima", "Bruno Costa", "Carla Dias"]):
        call(app, "note.write", path=f"p{i}.md", content=f"# {name}\n\n{name} said hello.\n")
    every = call(app, "entities", top=1000)
    assert every["has_more"] is False and every["count"] == len(every["entities"]) >= 3
    cut = call(app, "entities", top=2)
    assert cut["has_more"] is True and cut["count"] == 2
    assert cut["entities"] == every["entities"][:2]
    exact = call(app, "entities", top=every["count"])
    assert exact["has_more"] is False


def test_memoryctl_entities_says_there_are_more_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from memoryd.ctl.entities import s_entities

    row = {"name": "Ana Lima", "type": "person", "mentions": 3}
    s_entities({"entities": [row], "count": 1, "has_more": True}, None)  # type: ignore[arg-type]
    out, err = capsys.readouterr()
    assert out == "3\tperson\tAna Lima\n" and "more: raise --top" in err
    s_entities({"entities": [row], "count": 1, "has_more": False}, None)  # type: ignore[arg-type]
    assert capsys.readouterr().err == ""


def test_recent_activity_says_when_its_limit_left_some_out(make_app: Any) -> None:
    """`recent_activity` is a list with a limit and no page: it says when the limit cut it,
    memories and notes alike (one more of each is read to know)."""
    app = make_app(model=None, dailylog={"enabled": False})
    for i in range(3):
        call(app, "add", content=f"recent memory {i}")
    call(app, "note.write", path="r.md", content="# R\n")
    assert call(app, "recent_activity", limit=4)["has_more"] is False
    assert call(app, "recent_activity", limit=3)["has_more"] is True
    assert call(app, "recent_activity", limit=1000)["has_more"] is False
    from memoryd.agents.formats import fmt_items

    cut = call(app, "recent_activity", limit=2)
    assert "more: raise limit" in fmt_items(cut)
    assert "more" not in fmt_items(call(app, "recent_activity", limit=4))


@pytest.mark.parametrize(
    ("path", "method", "body"),
    [
        ("/api/memory/update", "update", {"importance": "7"}),
        ("/api/memory/update", "update", {"content": ""}),
        ("/api/memory/validate", "validate", {"useful": "yes"}),
        ("/api/memory/tier", "promote", {"tier": 3}),
        ("/api/memory/delete", "delete", {}),
    ],
)
@pytest.mark.parametrize("as_text", [True, False], ids=["id as text", "id"])
def test_a_json_body_is_taken_as_sent_as_the_socket_takes_it(
    web: Any, path: str, method: str, body: dict[str, Any], as_text: bool
) -> None:
    """A JSON body's `"id": "5"` or `"importance": "7"` was read as a number, and `"content":
    ""` as not given ("nothing to change"): the socket refuses each, and now so does the page's
    route, in the same words."""
    params = {"id": str(web.mem) if as_text else web.mem, **body}
    if not as_text and not body:
        return  # a plain delete: nothing wrong to compare
    with pytest.raises(InvalidInput) as err:
        call(web.app, method, **params)
    ans = web.request("POST", path, params)
    assert ans.status == 400, ans.text
    assert ans.json()["error"] == {"code": -32602, "message": err.value.message}


def test_read_note_s_next_page_of_a_note_changed_meanwhile_is_a_conflict(make_app: Any) -> None:
    """read_note pages a long note by line offsets: an edit between two pages moved them, and
    the next page repeated a line (or skipped one) without a word. Given the sha256 of the page
    before (as every other note tool takes it), the next page of another version is refused."""
    from memoryd.agents import catalog

    app = make_app(model=None, dailylog={"enabled": False})

    class Local(catalog.Bridge):
        def call(self, method: str, params: dict[str, Any], keep_null: Any = ()) -> Any:
            return api.lookup(method, params).fn(app, params)

    bridge = Local.__new__(Local)
    bridge.namespace = None
    call(app, "note.write", path="long.md", content="".join(f"line {i}\n" for i in range(10)))
    text, first, failed = catalog.call(bridge, "read_note", {"path": "long.md", "limit": 3})
    assert not failed and "with expected_sha256" in text
    nxt = {"path": "long.md", "offset": first["next_offset"], "limit": 3}
    _, same, failed = catalog.call(bridge, "read_note", {**nxt, "expected_sha256": first["sha256"]})
    assert not failed and same["content"] == "line 3\nline 4\nline 5\n"
    call(
        app,
        "note.write",
        path="long.md",
        content="new\n" + "".join(f"line {i}\n" for i in range(10)),
    )
    text, out, failed = catalog.call(
        bridge, "read_note", {**nxt, "expected_sha256": first["sha256"]}
    )
    assert failed and out["error"]["code"] == -32009 and "from offset 0" in text
    assert out["error"]["data"]["current_sha256"] != first["sha256"]
