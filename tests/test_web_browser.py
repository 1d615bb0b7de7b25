"""The web page in a real browser: headless Chromium from the system's packages, driven by
Playwright (never `playwright install`: no download). Loads each page through the one-time
link `memoryctl open` prints, searches, reads a note, edits a memory and checks that the graph
draws, with no script error and no Content-Security-Policy violation on the way.

Skips, saying why, where Playwright or Chromium is missing (`apt-get install chromium`; or
point MEMORYD_CHROMIUM at another Chromium). With MEMORYD_WEB_SCREENSHOTS=DIR it saves a PNG
of each page there (docs/web/ holds the ones docs/web.md shows)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

# read at import: the isolated_env fixture clears MEMORYD_* before each test
CHROMIUM = os.environ.get("MEMORYD_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = os.environ.get("MEMORYD_WEB_SCREENSHOTS")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NOTES = {
    "auth.md": "# Auth\n\nSessions live in **Redis** for 14 days. See [[db]] and [[later]].\n\n"
    "## Tokens\n\nRedis keys expire.\n\n<script>alert('x')</script>\n\n"
    "[click](javascript:alert(1))\n",
    "db.md": "---\ntags: [db]\n---\n# DB\n\nWe chose Postgres over MySQL; Redis is a cache. "
    "Back to [[auth]].\n",
    "ops/deploy.md": "# Deploy\n\nDeploys go out on Tuesdays, after [[db]] migrations.\n",
    "ops/oncall.md": "# On call\n\nPage the owner of [[auth]] and [[ops/deploy]].\n",
}


@pytest.fixture
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install playwright; no browser download)")
    if not Path(CHROMIUM).exists():
        pytest.skip(
            f"no Chromium at {CHROMIUM}: apt-get install chromium (or set MEMORYD_CHROMIUM)"
        )
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def test_each_page_works_in_a_real_browser(
    browser: Any, daemon_factory: Any, tmp_path: Path
) -> None:
    shots = SHOTS
    d = daemon_factory(workspace=str(tmp_path / "ws"))
    for path, text in NOTES.items():
        (d.workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (d.workspace / path).write_text(text)
    d.call("reindex")
    d.call("add", {"content": "Redis runs on port 6380 in staging", "tags": ["redis", "ops"]})
    d.call("add", {"content": "We deploy on Tuesdays", "type": "decision", "tier": "important"})
    d.call("search", {"query": "redis"})
    out = d.ctl("--json", "open")
    assert out.returncode == 0, out.stderr
    link = json.loads(out.stdout)["login_url"]
    base = link.split("/login")[0]

    page = browser.new_page(viewport={"width": 1200, "height": 780})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.accept()

    page.on("dialog", on_dialog)

    def shot(name: str) -> None:
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(Path(shots) / f"{name}.png"))

    # search as you type
    page.goto(link)
    assert page.url == f"{base}/search"
    page.fill("#q", "redis")
    page.wait_for_selector(".hit mark")
    assert page.inner_text("#mode") == "keyword"
    kinds = page.eval_on_selector_all(".hit", "els => els.map(e => e.dataset.kind)")
    assert "memory" in kinds and "chunk" in kinds
    assert "redis" in page.url  # linkable: the query is in the address
    shot("search")
    # a typo: what was searched for instead, as the notes write it (memoryctl and MCP say it too)
    page.fill("#q", "reddis")
    page.wait_for_function("() => document.body.innerText.includes('searched for redis')")

    # a note: rendered, escaped, its links and backlinks
    page.goto(f"{base}/note?path=auth.md")
    page.wait_for_selector("#note-body h1")
    assert page.inner_text("#note-body h1") == "Auth"
    assert page.inner_text("#note-body strong") == "Redis"
    assert page.eval_on_selector("#note-body a.wikilink", "a => a.getAttribute('href')") == (
        "/note?path=db.md"
    )
    assert page.query_selector("#note-body .wikilink.missing") is not None
    assert page.query_selector("#note-body script") is None
    assert "<script>" in page.inner_text("#note-body")  # shown as text, never run
    assert page.query_selector("#note-body a[href^='javascript']") is None
    assert "oncall.md" in page.inner_text("#backlinks")
    shot("note")

    # memories: a timeline by day; edit one
    page.goto(f"{base}/memories")
    page.wait_for_selector(".memory")
    card = page.locator(".memory", has_text="port 6380")
    card.locator("button.edit").click()
    page.fill(".memory textarea", "Redis runs on port 6381 in staging")
    page.click(".memory button.save")
    page.wait_for_selector(".memory:has-text('6381')")
    found = d.call("search", {"query": "6381", "kind": "memory"})["hits"]
    assert [h["content"] for h in found] == ["Redis runs on port 6381 in staging"]
    page.locator(".memory", has_text="6381").locator("select.tier").select_option("critical")
    wait_for(lambda: d.call("get", {"id": found[0]["id"]})["tier"] == "critical", timeout=10)
    page.wait_for_selector(".memory .badge.tier-critical")
    shot("memories")
    page.locator(".memory", has_text="6381").locator("button.delete").click()
    page.wait_for_selector("#toast button")
    assert dialogs and "Delete memory" in dialogs[-1]
    assert d.call("search", {"query": "6381", "kind": "memory"})["hits"] == []
    page.click("#toast button")  # undo
    wait_for(lambda: d.call("search", {"query": "6381", "kind": "memory"})["hits"], timeout=10)

    # the graph draws, and a click centres it on another note
    page.goto(f"{base}/graph?path=db.md")
    page.wait_for_selector("#graph[data-nodes] canvas")
    assert int(page.get_attribute("#graph", "data-nodes")) == 5
    drawn = page.evaluate("window.memorydGraph.nodes().length")
    assert drawn == 5
    shot("graph")
    page.evaluate("window.memorydGraph.getElementById('ops/oncall.md').emit('tap')")
    page.wait_for_function("new URLSearchParams(location.search).get('path') === 'ops/oncall.md'")

    # entities: the most mentioned, one's page with where it is mentioned, and its graph
    page.goto(f"{base}/entities")
    page.wait_for_selector(".entity-row")
    names = page.eval_on_selector_all(".entity-row", "els => els.map(e => e.dataset.name)")
    redis = next(n for n in names if n.lower() == "redis")
    page.locator(f".entity-row[data-name='{redis}'] a.entity").click()
    page.wait_for_selector("#entity-sources .source")
    assert page.inner_text("#entity h1") == redis
    kinds = page.eval_on_selector_all(".source", "els => els.map(e => e.dataset.kind)")
    assert {"note", "memory"} <= set(kinds)
    assert "Postgres" in page.inner_text(".relations")
    shot("entity")
    page.click("text=Show its graph")
    page.wait_for_selector("#graph[data-nodes] canvas")
    assert page.evaluate("window.memorydGraph.getElementById('Postgres').length") == 1
    page.evaluate("window.memorydGraph.getElementById('Postgres').emit('tap')")
    page.wait_for_function("new URLSearchParams(location.search).get('name') === 'Postgres'")
    # a misspelt name: the error and a link to each name it comes close to (ent17)
    page.goto(f"{base}/entities?name=Rediss")
    page.wait_for_selector("#entity-suggestions a.entity")
    assert redis in page.inner_text("#entity-suggestions")
    page.click(f"#entity-suggestions a.entity:text-is('{redis}')")
    page.wait_for_selector("#entity-sources .source")
    assert page.inner_text("#entity h1") == redis
    # the list pages: "more" adds the next page below, none repeated
    page.goto(f"{base}/entities?top=50")
    page.wait_for_selector(".entity-row")
    first = page.eval_on_selector_all(".entity-row", "els => els.map(e => e.dataset.name)")
    if page.is_visible("#entities-more"):
        page.click("#entities-more")
        page.wait_for_function(f"document.querySelectorAll('.entity-row').length > {len(first)}")
        both = page.eval_on_selector_all(".entity-row", "els => els.map(e => e.dataset.name)")
        assert both[: len(first)] == first and len(set(both)) == len(both)

    # status: progress, the search chart, jobs
    page.goto(f"{base}/status")
    page.wait_for_selector("#embedding")
    page.wait_for_selector("#search-chart")
    page.wait_for_selector("#jobs table")
    assert "searches" in page.inner_text("#searches")
    shot("status")

    assert not problems, problems
    page.close()
