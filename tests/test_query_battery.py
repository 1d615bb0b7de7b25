"""What people type into a search box, judged against rg (bench/query_battery.py): every token
kind alone, in a sentence and quoted is found where `rg -i -l -w -F` finds it and not where its
words are apart; a query with no letter or digit answers nothing (no vector padding); a pasted
page says how many of its words were left out; an answer cut by its limit says how many more."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import settle, with_notes

from bench import query_battery as qb
from memoryd.agents.formats import fmt_hits
from memoryd.ctl.output import MAX_QUERY_TERMS, search_notes
from memoryd.search.ftsquery import MAX_TERMS
from memoryd.search.searcher import SearchRequest

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def test_the_battery_passes(make_app: Any) -> None:
    app = with_notes(make_app(), qb.NOTES)
    settle(app)
    rows = qb.Battery(qb.app_caller(app), qb.workspace_files(Path(app.cfg.workspace))).run()
    failed = [f"{r.check}: {r.query[:60]!r}: {r.detail[:160]}" for r in rows if not r.ok]
    assert not failed, "\n".join(failed)
    checks = {r.check.split()[0] for r in rows}
    assert {"literal", "quoted", "sentence", "limit", "absent", "wordless", "operators"} <= checks


def test_more_counts_the_matches_a_full_pool_left_out(make_app: Any) -> None:
    """A word in many sections of each of 24 notes: the keyword pool (50 chunks here) holds a
    few notes' sections, fewer than the limit, so the answer lists those few; `more` counts the
    other notes (search/more.py), which `rg -l` would list."""
    parts = "".join(f"# Part {j}\n\nThe deploy step {j} of run {{}}.\n\n" for j in range(8))
    notes = {f"n{i:02}.md": parts.format(*[i] * 8) for i in range(24)}
    app = with_notes(make_app(search={"max_limit": 20, "candidate_multiplier": 1}), notes)
    res = app.searcher.search(SearchRequest(query="deploy", mode="keyword", limit=20))
    shown = {h["path"] for h in res["hits"]}
    assert len(shown) < 20  # the pool, not the limit, cut the answer
    assert res["more"] == 24 - len(shown)
    grouped_none = app.searcher.search(
        SearchRequest(query="deploy", mode="keyword", limit=20, group="none")
    )
    assert grouped_none["more"] == 50 - 20  # chunks, not notes; the pool's beyond the limit


def test_the_doors_say_what_the_answer_left_out() -> None:
    """memoryctl (on stderr, after the hits or the -l paths) and the MCP search tool."""
    res = {"mode": "keyword", "hits": [{"id": 1, "score": 0.5}], "more": 7, "terms_ignored": 3}
    notes = search_notes(res)
    assert "(1 shown; at least 7 more: raise -n, up to 100, or narrow it)" in notes
    assert any(f"first {MAX_TERMS} words and phrases; 3 more were left out" in n for n in notes)
    why = {"mode": "keyword", "hits": [], "unanswered": "no text contains 'err_99'"}  # --explain
    assert search_notes(why) == ["why nothing: no text contains 'err_99'"]
    budgeted = {**res, "hits": [], "index": [{"id": 1}, {"id": 2}], "total": 2}  # --max-tokens
    assert "(2 shown; at least 7 more" in search_notes(budgeted)[-1]
    text = fmt_hits(res)
    assert "at least 7 more result(s)" in text and "3 more were left out" in text
    assert MAX_QUERY_TERMS == MAX_TERMS  # memoryctl does not import the search package


@pytest.mark.sqlite_only(reason="memoryctl against a daemon subprocess: the doors, not the store")
def test_memoryctl_search_end_to_end(daemon_factory: Any) -> None:
    d = daemon_factory()
    for rel, text in qb.NOTES.items():
        (d.workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (d.workspace / rel).write_text(text)
    d.call("reindex")
    out = d.ctl("search", "deploys", "-l", "-n", "5")
    assert out.returncode == 0 and len(out.stdout.splitlines()) == 5
    assert "(5 shown; at least 7 more" in out.stderr
    out = d.ctl("search", "--", "#")
    assert out.returncode == 1 and "no results" in out.stdout
    out = d.ctl("search", "title:draft", "-l")
    assert out.stdout.split() == ["ops/network.md"], out.stderr
    out = d.ctl("search", "--", " ".join(f"w{i}" for i in range(70)))
    assert "6 more were left out" in out.stderr
    page = ("deploy monitoring " * 12000)[:200_000]  # past the system's 128 KB an argument
    out = d.ctl("search", "-", "-n", "3", input=page)  # `-` reads it from stdin, as `add -`
    assert out.returncode == 0 and "more were left out" in out.stderr, out.stderr
    out = d.ctl("search", "-l", "-", input="title:draft\n")
    assert out.stdout.split() == ["ops/network.md"], out.stderr


@pytest.mark.parametrize(
    ("method", "params", "param"),
    [
        ("search", {"query": "NAME", "kind": "entity"}, "query"),
        ("entity", {"name": "NAME"}, "name"),
        ("related", {"name": "NAME"}, "name"),
        ("search", {"query": "deploy", "entities": ["NAME"]}, "entities"),
    ],
)
def test_a_long_name_is_refused_by_its_limit_at_every_door(
    make_app: Any, method: str, params: dict[str, Any], param: str
) -> None:
    """A 60 KB name pasted where a name goes: `search --kind entity` made it a LIKE pattern
    SQLite refuses (-32603, "LIKE or GLOB pattern too complex"); every door that takes a name
    refuses it by its limit, naming the param."""
    from memoryd.core.errors import MemorydError
    from memoryd.serve import methods as api

    app = with_notes(make_app(), {"a.md": "# A\n\nCaroline Baker deploys billing-svc.\n"})
    big = "Caroline " * 7000
    sent = {k: ([big] if v == ["NAME"] else big if v == "NAME" else v) for k, v in params.items()}
    with pytest.raises(MemorydError) as caught:
        api.lookup(method, sent).fn(app, sent)
    assert caught.value.code in (-32602, -32005) and caught.value.message.startswith(param)
    assert "500" in caught.value.message
