"""`links` and `backlinks` answer a page, never the whole list (stop 44, bound20).

main's `backlinks` answered every link to a note: a hub of a vault of 10,000 notes, 770 kB
(stop 43 bounded only the web page's note view, after the whole answer was made); `links` every
link a note holds. Now each is a page: at most `limit` (vault.LINKS_LIMIT unless asked, up to
vault.LINKS_MAX), with `total`, `has_more` and `next_cursor`, the last link's place; passed
back as `cursor`, the next page starts after it, so notes written or deleted between two pages
make no link repeat and none go missing. On both backends: the links are the store's."""

from __future__ import annotations

import io
import json
from argparse import Namespace
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from conftest import with_notes

from memoryd.agents import notetools
from memoryd.core.errors import InvalidInput
from memoryd.ctl import admin
from memoryd.notes import vault
from memoryd.serve import methods as api

pytestmark = pytest.mark.backends

NOTES = 30  # notes linking the hub
LINES = 20  # lines of each that link it; the last line links it twice
PER_NOTE = LINES + 1
TOTAL = NOTES * PER_NOTE  # 630: more than a page of LINKS_LIMIT (500)


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def linker(i: int) -> str:
    lines = [f"# Note {i}", *(f"line {k}: see [[hub]]" for k in range(LINES - 1))]
    return "\n".join([*lines, "twice: [[hub]] and [[hub#Top|the top]]"]) + "\n"


@pytest.fixture
def app(make_app: Any) -> Any:
    notes = {f"n/n{i:03d}.md": linker(i) for i in range(NOTES)}
    big = "# Big\n\n" + "".join(f"- [[n/n{i:03d}]] [[hub]]\n" for i in range(NOTES))
    return with_notes(make_app(model=None), {"hub.md": "# Hub\n\n## Top\n", **notes, "big.md": big})


def places(items: list[dict[str, Any]]) -> list[tuple[str, int, str | None]]:
    return [(b["path"], b["line"], b.get("heading")) for b in items]


def test_a_hubs_backlinks_come_a_page_at_a_time(app: Any) -> None:
    """main answered all 630 (and 10,000 of 10,000): no limit, no total, no cursor."""
    first = call(app, "backlinks", path="hub.md")
    assert len(first["backlinks"]) == vault.LINKS_LIMIT == 500
    assert (first["total"], first["has_more"]) == (TOTAL + NOTES, True)  # big.md's 30 too
    assert isinstance(first["next_cursor"], str)
    everything = call(app, "backlinks", path="hub.md", limit=vault.LINKS_MAX)
    assert len(everything["backlinks"]) == TOTAL + NOTES
    assert (everything["has_more"], everything["next_cursor"]) == (False, None)
    assert everything["backlinks"][:500] == first["backlinks"]
    rest = call(app, "backlinks", path="hub.md", cursor=first["next_cursor"])
    assert first["backlinks"] + rest["backlinks"] == everything["backlinks"]
    assert (rest["has_more"], rest["next_cursor"]) == (False, None)
    # one line holding two links to the hub: both, one after the other, across a page's end
    split = call(app, "backlinks", path="hub.md", limit=NOTES + LINES)  # big.md, n000 but one
    after = call(app, "backlinks", path="hub.md", limit=5, cursor=split["next_cursor"])
    assert split["backlinks"][-1]["heading"] is None and after["backlinks"][0]["heading"] == "Top"
    assert split["backlinks"][-1]["line"] == after["backlinks"][0]["line"]


def test_a_small_answer_keeps_its_keys_and_says_it_is_whole(app: Any) -> None:
    """Old callers read `path` and `backlinks` (`links`); the new keys say nothing is left."""
    back = call(app, "backlinks", path="n/n000.md")
    back.pop("indexing", None)  # (from_index: a first index under way says how far)
    assert back == {
        "path": "n/n000.md",
        "backlinks": [
            {"path": "big.md", "line": 3, "heading": None, "alias": None, "embed": False}
        ],
        "total": 1,
        "has_more": False,
        "next_cursor": None,
    }
    out = call(app, "links", path="n/n000.md")
    assert (len(out["links"]), out["total"], out["has_more"]) == (PER_NOTE, PER_NOTE, False)
    assert out["next_cursor"] is None


def test_a_notes_links_page_in_their_order(app: Any) -> None:
    whole = call(app, "links", path="big.md")["links"]
    assert len(whole) == 2 * NOTES
    got, cursor = [], None
    while True:
        page = call(app, "links", path="big.md", limit=7, **({"cursor": cursor} if cursor else {}))
        got += page["links"]
        assert page["total"] == 2 * NOTES
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert got == whole  # two links a line: the rank on the line keeps them apart


def test_pages_neither_repeat_nor_skip_while_notes_change(app: Any) -> None:
    """An offset counts rows, which a write moves; the cursor names the last link given."""
    ws = Path(app.cfg.workspace)
    page = call(app, "backlinks", path="hub.md", limit=200)
    got = places(page["backlinks"])
    # between pages: a note before the cursor, one after, and one not given yet deleted
    with_notes(app, {"a-first.md": "[[hub]]\n", "zz-last.md": "[[hub]]\n"})
    (ws / "n/n020.md").unlink()
    app.indexer.reconcile()
    while page["next_cursor"]:
        page = call(app, "backlinks", path="hub.md", limit=200, cursor=page["next_cursor"])
        got += places(page["backlinks"])
    now = places(call(app, "backlinks", path="hub.md", limit=vault.LINKS_MAX)["backlinks"])
    assert [p for p in now if p[0] != "a-first.md"] == got  # all but the one before the cursor
    assert ("zz-last.md", 1, None) in got and not any(p[0] == "n/n020.md" for p in got)


@pytest.mark.parametrize("method", ["links", "backlinks"])
def test_a_bad_limit_or_cursor_is_refused_in_words(app: Any, method: str) -> None:
    with pytest.raises(InvalidInput, match="limit"):
        call(app, method, path="hub.md", limit=vault.LINKS_MAX + 1)
    with pytest.raises(InvalidInput, match=f"next_cursor of an earlier {method} answer"):
        call(app, method, path="hub.md", cursor="r1.2.3.x")
    with pytest.raises(InvalidInput, match="cursor"):
        call(app, method, path="hub.md", cursor=12)


def test_memoryctl_and_the_mcp_tool_say_how_to_get_the_next_page(app: Any) -> None:
    res = call(app, "backlinks", path="hub.md", limit=3)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        admin.s_backlinks(res, Namespace(path="hub.md"))
    assert len(out.getvalue().splitlines()) == 3
    assert err.getvalue() == f"(3 shown of {TOTAL + NOTES}; next page: --cursor 5.0:big.md)\n"
    text = notetools.fmt_backlinks(res)
    assert text.startswith(f"{TOTAL + NOTES} link(s) to hub.md:")
    assert text.endswith(
        f"(3 shown; the next page: call backlinks again with the same path and cursor"
        f" {json.dumps(res['next_cursor'])})"
    )
    whole = call(app, "backlinks", path="n/n001.md")
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        admin.s_backlinks(whole, Namespace(path="n/n001.md"))
    assert err.getvalue() == "" and "next page" not in notetools.fmt_backlinks(whole)
    links = call(app, "links", path="big.md", limit=2)
    assert "call links again" in notetools.fmt_links(links)
    assert notetools.fmt_links(links).startswith(f"big.md links to {2 * NOTES}:")
