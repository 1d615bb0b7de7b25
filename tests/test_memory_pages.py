"""`history` and `promotion_candidates` answer a page (stop 44, bound20).

main answered every recorded change of a memory at once, each with its whole old and new value:
a memory an agent updated 10,000 times answered 10,000 rows (of its content, if that changed).
Now at most `limit` (HISTORY_LIMIT unless asked, up to HISTORY_MAX), oldest first, with
`total`, `has_more` and `next_cursor` (the last row's time and id): passed back as `cursor`,
the next page starts after it, so changes recorded between two pages are neither repeated nor
skipped. `promotion_candidates` listed every memory the rule accepts, each a whole record; now
a page of them the same way (most useful first, the cursor the last one's count and id). On
both backends: the history and the counts are the store's."""

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


def test_promotion_candidates_come_a_page_at_a_time(make_app: Any) -> None:
    app = make_app(model=None)
    ids = [app.memories.add(f"a habit worth keeping, number {i}").id for i in range(12)]
    for k, mid in enumerate(ids):
        for _ in range(5 + k % 3):  # 5, 6 or 7 times useful: all candidates, in three ranks
            call(app, "validate", id=mid, useful=True)
    whole = call(app, "promotion_candidates", limit=lifecycle.CANDIDATES_MAX)
    order = [m["id"] for m in whole["candidates"]]
    assert sorted(order) == ids and (whole["total"], whole["next_cursor"]) == (12, None)
    assert [m["useful_count"] for m in whole["candidates"]] == sorted(
        (m["useful_count"] for m in whole["candidates"]), reverse=True
    )
    first = call(app, "promotion_candidates", limit=5)
    assert [m["id"] for m in first["candidates"]] == order[:5]
    assert (first["total"], first["has_more"]) == (12, True)
    # a candidate more, of the lowest rank, between two pages: on a later page, once
    late = app.memories.add("a habit found useful later").id
    for _ in range(5):
        call(app, "validate", id=late, useful=True)
    got, page = [m["id"] for m in first["candidates"]], first
    while page["next_cursor"]:
        page = call(app, "promotion_candidates", limit=5, cursor=page["next_cursor"])
        got += [m["id"] for m in page["candidates"]]
    assert got == [*order, late]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        handlers.s_candidates(first, Namespace())
    assert len(out.getvalue().splitlines()) == 5
    assert err.getvalue() == f"(5 shown of 12; next page: --cursor {first['next_cursor']})\n"
    with pytest.raises(InvalidInput, match="earlier promotion_candidates answer"):
        call(app, "promotion_candidates", cursor="x")
