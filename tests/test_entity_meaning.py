"""One name, one meaning on every entity door (stop 42, branch ent18), both backends.

A name that is one entity's name and also a written form of others ("Jordan" the country and
Jordan Lee said alone; "Caro" for two people's `[[...|Caro]]`) meant the one on the entity page
and all of them in the `entities` filter of search and list (10 of the 299 most mentioned names
of the Obsidian help vault: "Sync" had 22 sources on its page and 45 under the filter). Now
every door resolves it as the page does (store/entityread.by_name) and names the others under
`also`. And `related` pages by cursor: no entity repeated or skipped while notes change."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from memoryd.core.errors import InvalidInput
from memoryd.serve import methods as api

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


# every text holds "zeta", so one search finds any of them by the filter alone
MEMORIES = (
    "Jordan Lee led the zeta rollout. Jordan said it is done.",
    "Jordan Lee wrote the zeta notes with Raj Patel.",
    "We flew to Jordan for zeta in March; Jordan is dry and warm.",
    "Raj Patel met Caroline Baker about zeta.",
)
NOTES = {
    "trip.md": "# Trip\n\nThe zeta trip to Jordan with Raj Patel went well.\n",
    "team.md": "# Team\n\n[[Caroline Baker|Caro]] and Jordan Lee wrote zeta. Jordan agreed.\n",
    "review.md": "# Review\n\n[[Carol Oates|Caro]] reviewed zeta with Raj Patel.\n",
    "more.md": "# More\n\n[[Carol Oates|Caro]] and [[Carol Oates]] checked zeta again.\n",
}
# (a name as typed, the entity it means, the others it is written for)
NAMES = [
    ("Jordan", "Jordan", {"Jordan Lee"}),  # the country's name; Jordan Lee said alone
    ("jordan lee", "Jordan Lee", set()),
    ("Caro", "Carol Oates", {"Caroline Baker"}),  # an alias of two: the most mentioned
    ("Caroline", "Caroline Baker", set()),  # a first name said alone
    ("Raj Patel", "Raj Patel", set()),
    ("[[Carol Oates|C.]]", "Carol Oates", set()),  # a link: its target
]


@pytest.fixture
def app(make_app: Any) -> Any:
    a = make_app(model=None)
    for path, text in NOTES.items():
        (Path(a.cfg.workspace) / path).write_text(text)
    a.indexer.reconcile()
    for text in MEMORIES:
        call(a, "add", content=text)
    return a


def _where(item: dict[str, Any]) -> Any:
    return item.get("path") or item["id"]


@pytest.mark.parametrize(("typed", "meant", "others"), NAMES)
def test_a_name_means_one_entity_on_every_door(
    app: Any, typed: str, meant: str, others: set[str]
) -> None:
    page = call(app, "entity", name=typed, max_tokens=100_000)
    assert page["name"] == meant
    assert {a["name"] for a in page.get("also", [])} == others
    sources = {_where(s) for s in page["sources"]}
    assert not page["has_more"] and len(sources) == page["total_sources"]
    # search and list with the name as a filter find what the page lists, and say the others
    found = call(app, "search", query="zeta", entities=[typed], limit=100, mode="keyword")
    listed = call(app, "list", entities=[typed], kind="all", limit=100)
    for door, items in (("search", found["hits"]), ("list", listed["items"])):
        assert {_where(h) for h in items} == sources, (door, typed)
    assert listed["total"] == page["total_sources"]
    for res in (found, listed):
        if others:
            assert res["means"][typed]["name"] == meant
            assert res["also"][typed] == page["also"]
        else:
            assert "also" not in res and "means" not in res
    # related, and the web graph built on it, walk from the same entity
    walk = call(app, "related", name=typed, depth=2)
    assert walk["name"] == meant and walk.get("also") == page.get("also")
    assert walk["nodes"][0]["name"] == meant


def test_the_web_graph_is_related(app: Any) -> None:
    from webclient import WebHarness

    web = WebHarness(app)
    try:
        web.sign_in()
        for typed, _, _ in NAMES:
            got = web.api("GET", f"/api/related?name={quote(typed)}&depth=2&top=10")
            assert got == call(app, "related", name=typed, depth=2, top=10)
            page = web.api("GET", f"/api/entity?name={quote(typed)}")
            assert page["name"] == got["name"] and page.get("also") == got.get("also")
    finally:
        web.close()


def test_memoryctl_and_mcp_say_the_other_entities(capsys: pytest.CaptureFixture[str]) -> None:
    from argparse import Namespace

    from memoryd.agents.formats import fmt_hits
    from memoryd.ctl.handlers import s_list

    res = {
        "items": [],
        "total": 0,
        "means": {"Jordan": {"name": "Jordan", "type": "place", "mentions": 1}},
        "also": {"Jordan": [{"name": "Jordan Lee", "type": "person", "mentions": 2}]},
    }
    s_list(res, Namespace(offset=0))
    err = capsys.readouterr().err
    assert "'Jordan' means Jordan (place); it is also written for Jordan Lee (person)" in err
    text = fmt_hits({**res, "hits": []})
    assert "took 'Jordan' for Jordan (place); it is also written for Jordan Lee (person)" in text


# -- related pages by cursor ---------------------------------------------------------------


def _walk(app: Any, budget: int, between: Any = None, **params: Any) -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = []
    cursor = None
    for step in range(200):
        extra = {"cursor": cursor} if cursor else {}
        page = call(app, "related", max_tokens=budget, **params, **extra)
        pages.append(page)
        cursor = page.get("next_cursor")
        assert bool(cursor) == bool(page.get("has_more"))
        if not cursor:
            return pages
        if between is not None:
            between(step)
    raise AssertionError("related did not come to its last page")


def _hub(app: Any, n: int = 30) -> None:
    for i in range(n):
        call(
            app, "add", content=f"Kestrel shipped with Dev{chr(65 + i % 26)}{i} Tester and QA-{i}."
        )


def test_related_pages_are_the_whole_walk(make_app: Any) -> None:
    app = make_app(model=None)
    _hub(app)
    whole = call(app, "related", name="Kestrel", depth=2, top=100)
    for budget in (120, 400, 1500):
        pages = _walk(app, budget, name="Kestrel", depth=2, top=100)
        assert len(pages) > 1, budget
        nodes = [n for p in pages for n in p["nodes"]]
        assert nodes == whole["nodes"]  # in the walk's order, none twice
        edges = [e for p in pages for e in p["edges"]]
        key = sorted((e["from"], e["to"], e["together"]) for e in edges)
        assert key == sorted((e["from"], e["to"], e["together"]) for e in whole["edges"])
        for p in pages:
            assert p["tokens_used"] <= budget or len(p["nodes"]) == 1, (budget, p["tokens_used"])
            assert p["name"] == "Kestrel"


def test_related_pages_neither_repeat_nor_skip_while_notes_change(make_app: Any) -> None:
    """Memories added and deleted between pages (new relations of the root and of its
    relations, one relation made stronger, one that leaves the walk): every entity the walk
    reaches before and after comes once, none twice."""
    app = make_app(model=None)
    _hub(app, 24)
    before = {n["name"] for n in call(app, "related", name="Kestrel", depth=2, top=100)["nodes"]}
    gone = call(app, "add", content="Kestrel met Zorro Quill about QA-900.")["id"]
    before |= {"Zorro Quill", "QA-900"}

    def change(step: int) -> None:
        if step == 0:
            call(app, "delete", id=gone)  # Zorro Quill and QA-900 leave the walk
        elif step == 1:
            for _ in range(3):  # DevB1 grows stronger: its place in the walk moves up
                call(app, "add", content="Kestrel and DevB1 Tester paired again.")
        elif step == 2:
            call(app, "add", content="Kestrel shipped with Newcomer Person and QA-777.")

    pages = _walk(app, 150, change, name="Kestrel", depth=2, top=100)
    assert len(pages) > 4
    given = [n["name"] for p in pages for n in p["nodes"]]
    assert len(given) == len(set(given)), "an entity came twice"
    after = {n["name"] for n in call(app, "related", name="Kestrel", depth=2, top=100)["nodes"]}
    assert (before & after) <= set(given), sorted((before & after) - set(given))
    assert {"Newcomer Person", "QA-777"} <= set(given)  # brought in after the first page


def test_a_related_cursor_belongs_to_its_walk(make_app: Any) -> None:
    app = make_app(model=None)
    _hub(app, 12)
    first = call(app, "related", name="Kestrel", depth=2, top=100, max_tokens=100)
    cursor = first["next_cursor"]
    for params in (
        {"name": "Kestrel", "depth": 1, "top": 100},
        {"name": "Kestrel", "depth": 2, "top": 10},
        {"name": "QA-1", "depth": 2, "top": 100},
    ):
        with pytest.raises(InvalidInput, match="cursor: from another walk"):
            call(app, "related", cursor=cursor, **params)
    for bad in ("42:kestrel", "r1.2.100.!!", cursor[:-3] + "xyz", 7):
        with pytest.raises(InvalidInput, match="cursor"):
            call(app, "related", name="Kestrel", depth=2, top=100, cursor=bad)


def test_memoryctl_related_pages_by_the_cursor_it_prints(
    make_app: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """memoryctl prints the next page's `--cursor` on stderr; a later page hangs its entities
    under the ones of earlier pages they were reached from."""
    import shlex
    from argparse import Namespace

    from memoryd.ctl.entities import s_related

    app = make_app(model=None)
    _hub(app, 12)
    shown: list[str] = []
    cursor = None
    for _ in range(50):
        extra = {"cursor": cursor} if cursor else {}
        res = call(app, "related", name="Kestrel", depth=2, top=100, max_tokens=120, **extra)
        capsys.readouterr()  # the daemon's log lines, not memoryctl's
        s_related(res, Namespace())
        out, err = capsys.readouterr()
        lines = out.splitlines()
        assert lines[0].startswith("Kestrel")
        shown += [ln.split(" (")[0].strip() for ln in lines[1:] if "(above)" not in ln]
        if "next page: " not in err:
            break
        option = err.split("next page: ", 1)[1].rstrip().removesuffix(")")
        cursor = shlex.split(option)[1]
    whole = call(app, "related", name="Kestrel", depth=2, top=100)
    assert sorted(shown) == sorted(n["name"] for n in whole["nodes"][1:])


def test_a_real_daemon_pages_related_through_memoryctl_and_mcp(
    daemon_factory: Any, tmp_path: Any
) -> None:
    """memoryctl's --cursor and the MCP tool's cursor, on a daemon: every page's entities once,
    together the whole walk; and `search --entity Jordan` says the other Jordan on stderr."""
    import re
    import shlex
    import sys

    import anyio
    from conftest import wait_for
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    d = daemon_factory(workspace=str(tmp_path / "ws"))
    for i in range(12):
        d.call("add", {"content": f"Kestrel shipped with Dev{chr(65 + i)}{i} Tester and QA-{i}."})
    for text in MEMORIES:
        d.call("add", {"content": text})
    wait_for(lambda: d.call("entities", {})["entities"], timeout=30)
    whole = d.call("related", {"name": "Kestrel", "depth": 2, "top": 100})
    want = sorted(n["name"] for n in whole["nodes"][1:])

    shown: list[str] = []
    args = ["related", "Kestrel", "--depth", "2", "--top", "100", "--max-tokens", "150"]
    for _ in range(60):
        done = d.ctl(*args)
        assert done.returncode == 0, done.stderr
        shown += [
            ln.split(" (")[0].strip() for ln in done.stdout.splitlines()[1:] if "(above)" not in ln
        ]
        if "next page: " not in done.stderr:
            break
        option = done.stderr.split("next page: ", 1)[1].strip().removesuffix(")")
        args = [*args[:8], *shlex.split(option)]
    assert sorted(shown) == want
    done = d.ctl("search", "zeta", "--entity", "Jordan", "--mode", "keyword")
    assert "'Jordan' means Jordan (place); it is also written for Jordan Lee (person" in (
        done.stderr
    ), done.stderr

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryd", "mcp", "--socket", str(d.socket)],
        cwd=str(Path(__file__).resolve().parents[1]),
    )

    async def main() -> list[str]:
        got: list[str] = []
        with open(tmp_path / "mcp-stderr.log", "a") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as s,
            ):
                await s.initialize()
                call: dict[str, Any] = {"name": "Kestrel", "depth": 2, "top": 100}
                call["max_tokens"] = 150
                for _ in range(60):
                    out = await s.call_tool("related", call)
                    text = "\n".join(getattr(c, "text", "") for c in out.content)
                    assert not out.is_error, text
                    got += [
                        m.group(1)
                        for m in re.finditer(r"^- .+? -- (.+?) \(", text, re.M)
                        if m.group(1) != "Kestrel"
                    ]
                    cursor = re.search(r"cursor=(\S+)$", text, re.M)
                    if cursor is None:
                        assert "cursor" in call, "one page: nothing was paged"
                        return got
                    call["cursor"] = cursor.group(1)
        return got

    edges_to = anyio.run(main)  # each entity is the far end of the edge that reached it
    assert set(edges_to) == set(want)


def test_the_web_graph_s_more_adds_the_next_page(make_app: Any, tmp_path: Path) -> None:
    """graph.js under node (tests/webdom.js): the first page of the walk is drawn with a
    "more" button; a click asks for the next page by its cursor and draws both; the last page
    has no button. A name written for several entities names the others under the graph."""
    import json
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (the page's JS)")
    app = make_app(model=None)
    _hub(app, 12)
    for text in MEMORIES:
        call(app, "add", content=text)
    first = call(app, "related", name="Kestrel", depth=2, top=10, max_tokens=300)
    second = call(
        app,
        "related",
        name="Kestrel",
        depth=2,
        top=10,
        max_tokens=100_000,
        cursor=first["next_cursor"],
    )
    assert first["has_more"] and "next_cursor" not in second
    webdom = Path(__file__).resolve().parent / "webdom.js"

    def page(name: str, pages: list[Any], *clicks: str) -> dict[str, Any]:
        answers = tmp_path / "answers.json"
        entities = call(app, "entities", top=500)
        answers.write_text(
            json.dumps({"/api/entities": entities, "/api/related": {"__pages__": pages}})
        )
        search = f"?of=entities&name={quote(name)}&depth=2"
        out = subprocess.run(
            [node, str(webdom), "graph", str(answers), search, *clicks],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        shown: dict[str, Any] = json.loads(out.stdout)
        assert shown["errors"] == [], shown["errors"]
        return shown

    n1, n2 = len(first["nodes"]), len(second["nodes"])
    one = page("Kestrel", [first, second])
    assert one["ids"]["graph-info"].startswith(f"{n1} nodes, ") and "graph-more" in one["ids"]
    both = page("Kestrel", [first, second], "graph-more")
    assert both["ids"]["graph-info"].startswith(f"{n1 + n2} nodes, ")
    assert "graph-more" not in both["ids"]
    asked = [u for u in both["fetched"] if u.startswith("/api/related")]
    assert len(asked) == 2 and "max_tokens=8000" in asked[0] and "cursor" not in asked[0]
    assert f"cursor={quote(first['next_cursor'], safe='')}" in asked[1].replace("%2F", "/")
    jordan = page("Jordan", [call(app, "related", name="Jordan", depth=2, max_tokens=8000)])
    assert "also written for Jordan Lee (person)" in jordan["ids"]["graph-also"]


def test_the_mcp_text_of_a_later_page_types_the_entities_it_adds() -> None:
    """A later page's edge from an entity of an earlier page gave that entity the new one's
    type ("Set up Obsidian Sync -- Obsidian (other)": Obsidian is a system)."""
    from memoryd.agents.entitytools import fmt_related

    later = {
        "name": "Sync",
        "depth": 2,
        "nodes": [{"name": "Set up Obsidian Sync", "type": "other", "mentions": 9, "depth": 1}],
        "edges": [
            {"from": "Sync", "to": "Set up Obsidian Sync", "together": 9},
            {"from": "Set up Obsidian Sync", "to": "Obsidian", "together": 9},
        ],
        "has_more": True,
        "next_cursor": "r1.2.10.eNpjnsXEzwgAAqEAsA",
    }
    text = fmt_related(later)
    assert "- Sync -- Set up Obsidian Sync (other): 9x" in text
    assert "- Obsidian -- Set up Obsidian Sync (other): 9x" in text
    assert "Obsidian (other)" not in text
    assert text.startswith("Sync: more of the walk") and "cursor=r1.2.10." in text
