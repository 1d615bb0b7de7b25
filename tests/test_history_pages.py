"""`history` answers a page of a memory's changes (stop 44, bound20).

main answered every recorded change of a memory at once, each with its whole old and new value:
a memory an agent updated 10,000 times answered 10,000 rows (of its content, if that changed).
Now at most `limit` (HISTORY_LIMIT unless asked, up to HISTORY_MAX), oldest first, with
`total`, `has_more` and `next_cursor` (the last row's time and id): passed back as `cursor`,
the next page starts after it, so changes recorded between two pages are neither repeated nor
skipped. On both backends: the history is the store's."""

from __future__ import annotations

import io
from argparse import Namespace
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import pytest

from memoryd.core.errors import InvalidInput
from memoryd.ctl import handlers
from memoryd.memory import lifecycle
from memoryd.serve import methods as api

pytestmark = pytest.mark.backends


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def test_a_long_history_comes_a_page_at_a_time(make_app: Any) -> None:
    app = make_app(model=None)
    mid = app.memories.add(content="a memory changed often", importance=1).id
    for i in range(130):
        app.memories.update(mid, {"importance": i % 10 + 1, "content": f"version {i}"})
    whole = call(app, "history", id=mid, limit=lifecycle.HISTORY_MAX)
    total = whole["total"]
    assert total == len(whole["history"]) > lifecycle.HISTORY_LIMIT
    assert (whole["has_more"], whole["next_cursor"]) == (False, None)
    first = call(app, "history", id=mid)
    assert len(first["history"]) == lifecycle.HISTORY_LIMIT == 100
    assert (first["total"], first["has_more"]) == (total, True)
    assert first["history"] == whole["history"][:100]
    # changes recorded between two pages come at the end: none repeats, none is skipped
    app.memories.update(mid, {"content": "the last version"})
    got, page = list(first["history"]), first
    while page["next_cursor"]:
        page = call(app, "history", id=mid, limit=30, cursor=page["next_cursor"])
        got += page["history"]
    now = call(app, "history", id=mid, limit=lifecycle.HISTORY_MAX)["history"]
    assert got == now and len(now) > total and now[-1]["new"] == "the last version"
    # memoryctl: the rows on stdout, the next page's cursor on stderr
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        handlers.s_history(first, Namespace(id=mid))
    assert len(out.getvalue().splitlines()) == 100
    assert err.getvalue().startswith(f"(100 shown of {total}; next page: --cursor ")
    with pytest.raises(InvalidInput, match="limit"):
        call(app, "history", id=mid, limit=lifecycle.HISTORY_MAX + 1)
    with pytest.raises(InvalidInput, match="cursor"):
        call(app, "history", id=mid, cursor="12.0:notes/a.md")


def test_a_short_history_answers_as_before_and_says_it_is_whole(make_app: Any) -> None:
    app = make_app(model=None)
    mid = app.memories.add(content="changed once", importance=3).id
    app.memories.update(mid, {"importance": 4})
    res = call(app, "history", id=mid)
    assert [(h["field"], h["old"], h["new"]) for h in res["history"]] == [("importance", 3, 4)]
    assert (res["id"], res["total"], res["has_more"], res["next_cursor"]) == (mid, 1, False, None)
