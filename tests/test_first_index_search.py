"""A search while the daemon's first index since its start is still reading the workspace says
so, at every door (the socket's answer, memoryctl, the MCP tool; the web page shows the
answer's field): the notes not read yet are not found, and "no results" alone would read as
"not in the vault" (stop 37's walk: 15K notes, a search 10 s after the first start)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from conftest import DEADLINE_S, wait_for

from memoryd.agents.tools import fmt_hits
from memoryd.ctl.output import search_notes
from memoryd.serve import methods  # noqa: F401 (registers the socket methods)
from memoryd.web.actions import call

pytestmark = pytest.mark.backends

DOORS: dict[str, Callable[[dict[str, Any]], str]] = {
    # what each door shows of one search's answer
    "socket (JSON)": lambda res: str(res.get("indexing")),
    "memoryctl (stderr)": lambda res: "\n".join(search_notes(res)),
    "MCP search tool": fmt_hits,
}


@pytest.fixture
def held(make_app: Any) -> Any:
    """An App whose first index has read some notes and waits before the last one."""
    app = make_app(model=None)
    for i in range(5):
        (app.cfg.workspace / f"n{i}.md").write_text(f"# N{i}\n\nwombat {i}\n")
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


@pytest.mark.parametrize("door", list(DOORS))
@pytest.mark.parametrize("query", ["wombat", "quokka"])  # found in the notes read; not yet
def test_a_search_during_the_first_index_says_the_workspace_is_still_being_indexed(
    held: Any, door: str, query: str
) -> None:
    app, gate = held
    res = call(app, "search", {"query": query})
    assert bool(res["hits"]) == (query == "wombat")
    assert res["indexing"] == {"done": 5, "total": 6}
    shown = DOORS[door](res)
    assert "5" in shown and "6" in shown, shown
    if door != "socket (JSON)":
        assert "still being indexed" in shown and "5/6 files read" in shown, shown
    gate.set()
    assert app.ready.wait(DEADLINE_S)
    after = call(app, "search", {"query": query})
    assert "indexing" not in after and after["hits"]
    assert "still being indexed" not in DOORS[door](after)


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
    assert "needs attention" not in status_summary(status)
    print_drift(drift)
    said = capsys.readouterr().out
    assert "while the workspace is being indexed (5/6 files read)" in said
    assert "reindex" not in said
    gate.set()
    assert app.ready.wait(DEADLINE_S)
    status = app.status(check=True)
    assert status["drift"]["total"] == 0 and status["drift"]["indexing"] is None
