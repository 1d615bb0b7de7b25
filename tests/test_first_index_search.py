"""An answer from the notes' index while the daemon's first index since its start is still
reading the workspace says so, for every method that answers from the index (search, links,
backlinks, note.list, recent_activity, graph, entity, entities, related) and at every door (the
socket's answer, memoryctl on stderr, the MCP tool's text; the web page shows search's): the
notes not read yet are not in it, and "no results" alone would read as "not in the vault"
(stop 37's walk: 15K notes, a search 10 s after the first start). status --check says the
differences are the files not read yet."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from conftest import DEADLINE_S, wait_for

from memoryd.agents.catalog import BY_NAME
from memoryd.agents.tools import Bridge, call_tool
from memoryd.ctl import say_indexing
from memoryd.serve import methods  # noqa: F401 (registers the socket methods)
from memoryd.web.actions import call

pytestmark = pytest.mark.backends

NOTE = "# N{i}\n\nwombat {i}, with Caroline Weber. See [[n0]] and [[z]].\n"

# method: (params, the MCP tool that calls it and its arguments, or None)
FROM_INDEX: dict[str, tuple[dict[str, Any], tuple[str, dict[str, Any]] | None]] = {
    "search": ({"query": "wombat"}, ("search", {"query": "wombat"})),
    "links": ({"path": "n1.md"}, ("links", {"path": "n1.md"})),
    "backlinks": ({"path": "n0.md"}, ("backlinks", {"path": "n0.md"})),
    "note.list": ({}, ("list_notes", {})),
    "recent_activity": ({}, ("recent_activity", {})),
    "graph": ({"path": "n0.md"}, None),
    "entity": ({"name": "Caroline Weber"}, ("about", {"name": "Caroline Weber"})),
    "entities": ({}, None),
    "related": ({"name": "Caroline Weber"}, ("related", {"name": "Caroline Weber"})),
}


class AppBridge(Bridge):
    """The MCP tools on an App in this process, through the socket's method table."""

    def __init__(self, app: Any) -> None:
        self.app, self.namespace = app, None

    def call(self, method: str, params: dict[str, Any], keep_null: Any = ()) -> Any:
        return call(self.app, method, params)


@pytest.fixture
def held(make_app: Any) -> Any:
    """An App whose first index has read five notes and waits before the last one."""
    app = make_app(model=None)
    for i in range(5):
        (app.cfg.workspace / f"n{i}.md").write_text(NOTE.format(i=i))
    (app.cfg.workspace / "z.md").write_text("# Z\n\nquokka, read last\n")
    real, gate = app.indexer._index_one, threading.Event()

    def slow(state: Any, *args: Any, **kw: Any) -> Any:
        if state.path == "z.md":
            assert gate.wait(DEADLINE_S), "the test never let the first index end"
        return real(state, *args, **kw)

    app.indexer._index_one = slow
    app.start(jobs=False)
    wait_for(lambda: (app.index_progress or {}).get("done", 0) >= 5)
    yield app, gate
    gate.set()


@pytest.mark.parametrize("method", list(FROM_INDEX))
def test_an_answer_from_the_index_during_the_first_index_says_so_at_every_door(
    held: Any, method: str, capsys: Any
) -> None:
    app, gate = held
    params, tool = FROM_INDEX[method]
    res = call(app, method, params)
    assert res["indexing"] == {"done": 5, "total": 6}  # the socket's answer
    say_indexing(res)  # memoryctl, after what the command prints
    err = capsys.readouterr().err
    assert "still being indexed (5/6 files read): notes not read yet are not in" in err
    if tool is not None:  # the MCP tool's text
        text, _, is_error = call_tool(AppBridge(app), tool[0], tool[1], BY_NAME)
        assert not is_error and "still being indexed: 5/6 files read" in text, text
        assert text.count("still being indexed") == 1, text
    gate.set()
    assert app.ready.wait(DEADLINE_S)
    after = call(app, method, params)
    assert "indexing" not in after
    say_indexing(after)
    assert capsys.readouterr().err == ""
    if tool is not None:
        text, _, _ = call_tool(AppBridge(app), tool[0], tool[1], BY_NAME)
        assert "still being indexed" not in text


@pytest.mark.parametrize("query", ["wombat", "quokka"])  # in the notes read; not yet
def test_a_search_during_the_first_index_says_so_with_hits_or_none(held: Any, query: str) -> None:
    from memoryd.agents.tools import fmt_hits

    app, _ = held
    res = call(app, "search", {"query": query})
    assert bool(res["hits"]) == (query == "wombat")
    text = fmt_hits(res)
    assert "still being indexed: 5/6 files read" in text
    assert ("No results." in text) == (query == "quokka")


def test_status_check_during_the_first_index_says_the_index_is_being_built(
    held: Any, capsys: Any
) -> None:
    """`memoryctl status --check` during a first index: the files not read yet are differences
    (exit 1 still: the index is not the disk), but no "needs attention: drift 14334" and no
    "fix with: memoryctl reindex" (stop 37's walk, 5 s into a 15K-note first index)."""
    from memoryd.ctl.output import print_drift, status_summary

    app, gate = held
    status = app.status(check=True)
    drift = status["drift"]
    assert drift["files_missing_from_index"] == ["z.md"] and drift["total"] == 1
    assert (drift["indexing"]["done"], drift["indexing"]["total"]) == (5, 6)
    summary = status_summary(status)  # (no model here: "no embedding model" is attention)
    assert "drift" not in summary and "first scan running (5/6 files" in summary, summary
    print_drift(drift)
    said = capsys.readouterr().out
    assert "while the workspace is being indexed (5/6 files read)" in said
    assert "reindex" not in said
    gate.set()
    assert app.ready.wait(DEADLINE_S)
    status = app.status(check=True)
    assert status["drift"]["total"] == 0 and status["drift"]["indexing"] is None


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("entity", {"name": "Zed Quokka"}),
        ("related", {"name": "Zed Quokka"}),
        ("links", {"path": "z.md"}),
        ("backlinks", {"path": "z.md"}),
        ("graph", {"path": "z.md"}),
    ],
)
def test_not_found_during_the_first_index_says_the_workspace_is_still_being_indexed(
    held: Any, method: str, params: dict[str, Any]
) -> None:
    """A note or entity not read yet: the error says why it may be missing (and, once the index
    is done, it is found, or the error is the plain one)."""
    from memoryd.core.errors import NotFound

    app, gate = held
    with pytest.raises(NotFound) as info:
        call(app, method, params)
    assert "; the workspace is still being indexed (5/6 files read)" in info.value.message
    gate.set()
    assert app.ready.wait(DEADLINE_S)
    try:
        call(app, method, params)
    except NotFound as exc:
        assert "still being indexed" not in exc.message
