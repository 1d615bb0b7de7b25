"""Entities through every door as a person and an agent use them (stop 41's walk, branch ent17),
both backends: a name in any spelling a person types (a URL, a `[[link|alias]]`, a host with
its port, a first name alone) means one entity to `entity`, `related`, search's and list's
`entities` filters alike; a misspelt name is answered with the names it is a misspelling of;
the entity page keeps to `max_tokens` by cutting relations for its first source; `entities`
pages by cursor with nothing repeated or skipped while other entries are written."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoryd.core.errors import InvalidInput, NotFound
from memoryd.serve import methods as api

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


MEMORIES = (
    "Caroline Baker moved db-01.example.com to the new rack; see https://db-01.example.com/status.",
    "Caroline Baker and Raj Patel wrote to raj@example.com about OPS-1234.",
    "Raj Patel restarted db-01.example.com after OPS-1234.",
)

# (as written, the entity it means)
SPELLINGS = [
    ("https://db-01.example.com/status", "db-01.example.com"),
    ("db-01.example.com:5432", "db-01.example.com"),
    ("db-01.example.com.", "db-01.example.com"),
    ("[[Caroline Baker|Caro]]", "Caroline Baker"),
    ("[[caroline baker]]", "Caroline Baker"),
    ("mailto:raj@example.com", "raj@example.com"),
    ("Caroline", "Caroline Baker"),  # a first name said alone: the one Caroline
    ("caroline baker's", "Caroline Baker"),
    ("ops-1234", "OPS-1234"),
]


@pytest.fixture
def app(make_app: Any) -> Any:
    a = make_app(model=None)
    for text in MEMORIES:
        call(a, "add", content=text)
    return a


@pytest.mark.parametrize(("written", "meant"), SPELLINGS)
def test_every_spelling_means_one_entity_at_every_door(app: Any, written: str, meant: str) -> None:
    page = call(app, "entity", name=written)
    assert page["name"] == meant
    assert call(app, "related", name=written)["name"] == meant
    ids = {s["id"] for s in page["sources"]}
    # the filters of search and list find the entries the page lists
    found = call(app, "search", query="the", entities=[written], limit=100, mode="keyword")
    assert "unknown_entities" not in found
    listed = call(app, "list", entities=[written], limit=100)
    assert {i["id"] for i in listed["items"]} == ids, (written, listed)
    assert listed["total"] == len(ids) == page["total_sources"]
    # and kind "entity" names it first
    hits = call(app, "search", query=written, kind="entity")["hits"]
    assert hits and hits[0]["name"] == meant


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("Caroln Baker", "Caroline Baker"), ("Caroln", "Caroline Baker"), ("OPS-1243", "OPS-1234")],
)
@pytest.mark.parametrize("method", ["entity", "related"])
def test_a_misspelt_name_is_answered_with_the_names_it_misspells(
    app: Any, method: str, typed: str, meant: str
) -> None:
    with pytest.raises(NotFound) as missing:
        call(app, method, name=typed)
    assert meant in [s["name"] for s in missing.value.data["suggestions"]]
    assert f"did you mean {meant}" in str(missing.value)
    with pytest.raises(NotFound) as none:  # nothing near: no suggestion, and it says so
        call(app, method, name="Xyzzyqq")
    assert none.value.data == {"suggestions": []}


def test_the_page_cuts_relations_to_fit_its_first_source(make_app: Any) -> None:
    """A budget the page and its first source can meet is met: the relations made room for the
    first source (before, they were cut to fit the page without it: 348 tokens for 300)."""
    app = make_app(model=None)
    others = " ".join(f"Person{chr(65 + i)} Tester{chr(65 + i)}," for i in range(12))
    long_line = "Kestrel shipped. " + "The rollout went through every region in turn. " * 12
    call(app, "add", content=f"{long_line}\nKestrel was reviewed by {others} and more.")
    for budget in (150, 200, 300, 400, 600):
        page = call(app, "entity", name="Kestrel", max_tokens=budget)
        assert page["sources"], budget
        bare = {k: v for k, v in page.items() if k not in ("sources", "relations")}
        floor = len(json.dumps(bare)) // 4 + len(json.dumps(page["sources"][0])) // 4
        if page["relations"]:
            assert page["tokens_used"] <= budget, (budget, page["tokens_used"])
        else:  # only the name's own fields and its first source: they always come
            assert page["tokens_used"] <= max(budget, floor + 20)


def _names(app: Any, **params: Any) -> tuple[list[str], Any]:
    res = call(app, "entities", **params)
    return [e["name"] for e in res["entities"]], res.get("next_cursor")


def test_entities_pages_by_cursor_without_repeat_or_gap(make_app: Any) -> None:
    app = make_app(model=None)
    for i in range(14):  # entities of 1 to 3 mentions, several of each count (ties by key)
        call(app, "add", content=f"Ticket QA-{100 + i} was opened." * (1 + i % 3))
    whole, last = _names(app, top=1000)
    assert last is None and len(whole) >= 14
    walked: list[str] = []
    cursor = None
    for step in range(100):
        params = {"top": 3, **({"cursor": cursor} if cursor else {})}
        names, cursor = _names(app, **params)
        walked += names
        # other writes between two pages: a new entity each time
        call(app, "add", content=f"Ticket ZZ-{900 + step} was opened.")
        if not cursor:
            break
    unchanged = [n for n in whole]  # none of the first listing's counts changed
    assert len(walked) == len(set(walked)), walked  # nothing twice
    assert [n for n in walked if n in unchanged] == unchanged  # nothing skipped, in order
    # a page's has_more and next_cursor agree; the last page has neither
    res = call(app, "entities", top=2)
    assert res["has_more"] and res["next_cursor"]
    with pytest.raises(InvalidInput, match="cursor"):
        call(app, "entities", cursor="not a cursor")
    with pytest.raises(InvalidInput, match="cursor"):
        call(app, "entities", cursor=7)


def test_entities_cursor_keeps_type_and_since(make_app: Any) -> None:
    app = make_app(model=None)
    for i in range(5):
        call(app, "add", content=f"Ticket QB-{200 + i} was opened by Ann Vale.")
    whole, _ = _names(app, type="identifier", top=1000)
    assert sorted(whole) == sorted(f"QB-{200 + i}" for i in range(5))
    first, cursor = _names(app, type="identifier", top=2)
    rest: list[str] = []
    while cursor:
        names, cursor = _names(app, type="identifier", top=2, cursor=cursor)
        rest += names
    assert first + rest == whole


def test_memoryctl_and_mcp_doors(daemon_factory: Any, tmp_path: Any) -> None:
    """The same through a real daemon: memoryctl entities pages by the cursor its stderr names
    (the shell word it prints is the one to pass back), entity takes a URL, and the MCP tool
    `about` relays the daemon's suggestions for a misspelt name (it asked search kind entity,
    which matches no misspelling, and said nothing is named so)."""
    import shlex
    import sys
    from pathlib import Path

    import anyio
    from conftest import wait_for
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    d = daemon_factory(workspace=str(tmp_path / "ws"))
    for text in MEMORIES:
        d.call("add", {"content": text})
    wait_for(lambda: d.call("entities", {})["entities"], timeout=30)
    whole = [r.split("\t")[2] for r in d.ctl("entities").stdout.splitlines()]
    walked: list[str] = []
    args = ["entities", "--top", "2"]
    for _ in range(len(whole)):
        done = d.ctl(*args)
        assert done.returncode == 0, done.stderr
        walked += [r.split("\t")[2] for r in done.stdout.splitlines()]
        if "next page: " not in done.stderr:
            break
        option = done.stderr.split("next page: ", 1)[1].rstrip().removesuffix(")")
        args = ["entities", "--top", "2", *shlex.split(option)]
    assert walked == whole and len(whole) > 2
    done = d.ctl("entity", "https://db-01.example.com/status")
    assert done.returncode == 0 and done.stdout.startswith("db-01.example.com  "), done.stderr
    done = d.ctl("entity", "Caroln")
    assert done.returncode == 1 and "did you mean Caroline Baker (person)" in done.stderr

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryd", "mcp", "--socket", str(d.socket)],
        cwd=str(Path(__file__).resolve().parents[1]),
    )

    async def main() -> None:
        with open(tmp_path / "mcp-stderr.log", "a") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as s,
            ):
                await s.initialize()
                for tool in ("about", "related"):
                    out = await s.call_tool(tool, {"name": "Caroln"})
                    text = "\n".join(getattr(c, "text", "") for c in out.content)
                    assert out.is_error and "the closest: Caroline Baker (person)" in text, text
                out = await s.call_tool("about", {"name": "[[Caroline Baker|Caro]]"})
                text = "\n".join(getattr(c, "text", "") for c in out.content)
                assert not out.is_error and text.startswith("Caroline Baker (person)"), text

    anyio.run(main)


def test_an_entity_only_an_expired_entry_mentions_is_gone_from_every_door(
    make_app: Any,
) -> None:
    """search and list leave an expired memory out from the moment it expires; the entity
    doors named its people until the expiry job ran (every 5 minutes): now they run it first."""
    app = make_app(model=None)
    now = [1_800_000_000.0]
    app.memories.clock = app.searcher.clock = lambda: now[0]
    call(app, "add", content="Caroline Baker met Quintessa Delacroix about ZEPH-9002.", ttl=60)
    call(app, "add", content="Caroline Baker reviewed OPS-77 with Raj Patel.")
    assert call(app, "entity", name="Quintessa Delacroix")["mentions"] == 1
    now[0] += 61
    assert call(app, "search", query="Quintessa", mode="keyword")["hits"] == []
    for name in ("Quintessa Delacroix", "ZEPH-9002"):
        for method in ("entity", "related"):
            with pytest.raises(NotFound):
                call(app, method, name=name)
        assert call(app, "search", query=name, kind="entity")["hits"] == []
    listed = [e["name"] for e in call(app, "entities", top=1000)["entities"]]
    assert "Quintessa Delacroix" not in listed and "Raj Patel" in listed
    nodes = [n["name"] for n in call(app, "related", name="Caroline Baker", top=100)["nodes"]]
    assert "Quintessa Delacroix" not in nodes and "Raj Patel" in nodes
    page = call(app, "entity", name="Caroline Baker")
    assert page["mentions"] == 1 and page["total_sources"] == 1


def test_type_picks_among_the_entities_a_name_means(make_app: Any) -> None:
    """Jordan the place and Jordan Lee, who is "Jordan" alone: the page said the name also
    means the other, with no way to ask for it but its full name; `type` picks (every door)."""
    app = make_app(model=None)
    call(app, "add", content="Jordan Lee led the rollout. Jordan said it is done.")
    call(app, "add", content="We flew to Jordan in March; Jordan is dry and warm.")
    page = call(app, "entity", name="Jordan")
    assert page["type"] == "place" and [a["name"] for a in page["also"]] == ["Jordan Lee"]
    page = call(app, "entity", name="Jordan", type="person")
    assert page["name"] == "Jordan Lee" and [a["name"] for a in page["also"]] == ["Jordan"]
    assert call(app, "related", name="Jordan", type="person")["name"] == "Jordan Lee"
    assert call(app, "related", name="Jordan", type="place")["name"] == "Jordan"
    with pytest.raises(NotFound) as none:
        call(app, "entity", name="Jordan", type="tag")
    assert "no tag named 'Jordan'; the name is written for Jordan (place)" in str(none.value)
    assert {s["name"] for s in none.value.data["suggestions"]} == {"Jordan", "Jordan Lee"}
    with pytest.raises(InvalidInput, match="type: expected one of person"):
        call(app, "related", name="Jordan", type="human")


def test_related_fits_max_tokens_and_so_does_the_mcp_text(make_app: Any) -> None:
    """A hub's walk had no budget: depth 2, top 100 on a 100K-chunk store is 500 entities and
    145 KB, read whole by an agent (the MCP tool now asks for 2,000 tokens by default)."""
    from memoryd.agents.entitytools import fmt_related
    from memoryd.text.markdown import estimate_tokens

    app = make_app(model=None)
    for i in range(30):
        call(
            app, "add", content=f"Kestrel shipped with Dev{chr(65 + i % 26)}{i} Tester and QA-{i}."
        )
    whole = call(app, "related", name="Kestrel", depth=2, top=100)
    assert "truncated" not in whole and len(whole["nodes"]) > 40
    for budget in (50, 200, 800):
        part = call(app, "related", name="Kestrel", depth=2, top=100, max_tokens=budget)
        assert part["has_more"] and part["nodes"][0]["name"] == "Kestrel"
        assert "truncated" not in part  # the walk is whole: its next page is a cursor away
        assert part["tokens_used"] <= budget or len(part["nodes"]) == 1, part["tokens_used"]
        assert part["nodes"] == whole["nodes"][: len(part["nodes"])]  # the nearest first
        kept = {n["name"] for n in part["nodes"]}
        assert all(e["from"] in kept and e["to"] in kept for e in part["edges"])
        assert estimate_tokens(fmt_related(part)) <= max(budget, part["tokens_used"])
    roomy = call(app, "related", name="Kestrel", depth=2, top=100, max_tokens=100_000)
    assert roomy["nodes"] == whole["nodes"] and roomy["edges"] == whole["edges"]
    assert "truncated" not in roomy


def test_list_says_which_names_no_entity_has_as_search_does(app: Any) -> None:
    """`search --entity Nobody` said "no entity named 'Nobody'"; `list --entity Nobody` only
    "nothing found", as if the name were known and unmentioned."""
    for method, extra in (("list", {}), ("search", {"query": "the", "mode": "keyword"})):
        res = call(app, method, entities=["Caroline", "Nobody Known"], **extra)
        assert res["unknown_entities"] == ["Nobody Known"], (method, res)
        res = call(app, method, entities=["Caroline"], **extra)
        assert "unknown_entities" not in res


def test_memoryctl_list_says_an_unknown_name_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    from argparse import Namespace

    from memoryd.ctl.handlers import s_list

    s_list({"items": [], "total": 0, "unknown_entities": ["Nobody"]}, Namespace(offset=0))
    assert "no entity named 'Nobody' (memoryctl entities lists them)" in capsys.readouterr().err


def test_kind_entity_finds_a_misspelt_name_as_the_suggestions_do(app: Any) -> None:
    hits = call(app, "search", query="Caroln", kind="entity")["hits"]
    assert [(h["name"], h["score"]) for h in hits][:1] == [("Caroline Baker", 0.1)]
    assert call(app, "search", query="Caroln", kind="entity", type="system")["hits"] == []
    assert call(app, "search", query="Xyzzyqq", kind="entity")["hits"] == []


def test_a_failing_expiry_is_not_run_again_by_every_entity_request(make_app: Any) -> None:
    """The expiry the entity doors start is the job's: a failure is logged and listed by
    `jobs`, the answer still comes, and the next requests do not each run it again."""
    app = make_app(model=None)
    now = [1_800_000_000.0]
    app.memories.clock = app.searcher.clock = lambda: now[0]
    call(app, "add", content="Quintessa Delacroix met Raj Patel.", ttl=60)
    now[0] += 61

    def broken() -> int:
        raise OSError(28, "No space left on device")

    app.memories.expire = broken
    st = app.jobs.states["expiry"]
    for _ in range(3):
        assert call(app, "entity", name="Raj Patel")["name"] == "Raj Patel"
    assert st.runs == 1 and "No space left" in (st.last_error or "")
    now[0] += 31  # tried again after a while
    call(app, "entities")
    assert st.runs == 2
