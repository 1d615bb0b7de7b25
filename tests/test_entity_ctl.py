"""Issue 20, points 4 and 5 against a real daemon on both backends: memoryctl entity, entities,
related and search --entity / --kind entity (exit codes, --json), and the MCP tools `about` and
`related` and the `entities` filter of the MCP `search` tool."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[1]
NOTES = {
    "people/caroline.md": "---\naliases: [Caro]\n---\n# Caroline Baker\n\n"
    "Caroline Baker runs the payments team with Oskar Lindqvist.\n",
    "trip.md": "# Trip\n\nOskar Lindqvist flew to Lisbon with Melanie.\n",
    "ops.md": "# Ops\n\nThe billing-svc deploy failed; Oskar Lindqvist rolled it back.\n",
}


@pytest.fixture
def d(daemon_factory: Any, tmp_path: Path) -> Any:
    ws = tmp_path / "ws"
    for rel, text in NOTES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    daemon = daemon_factory(workspace=str(ws))
    wait_for(lambda: daemon.call("status")["counts"]["documents"] == 3, timeout=30)
    wait_for(lambda: daemon.call("entities", {})["entities"], timeout=30)
    return daemon


def test_memoryctl_entity_commands(d: Any) -> None:
    done = d.ctl("entity", "Caro")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Caroline Baker  ")
    assert any(line.strip().startswith("people/caroline.md:") for line in lines)
    assert "Oskar Lindqvist" in done.stdout  # mentioned with
    page = json.loads(d.ctl("--json", "entity", "caroline baker").stdout)
    assert page["name"] == "Caroline Baker" and page["sources"][0]["path"] == "people/caroline.md"
    done = d.ctl("entity", "Nobody Known")
    assert done.returncode == 1 and "no entity named" in done.stderr

    done = d.ctl("entities", "--top", "2")
    assert done.returncode == 0, done.stderr
    rows = [line.split("\t") for line in done.stdout.splitlines()]
    assert {r[2] for r in rows} == {"Caroline Baker", "Oskar Lindqvist"}  # the most mentioned
    assert int(rows[0][0]) >= int(rows[1][0]) >= 3
    assert d.ctl("entities", "--since", "2999-01-01").returncode == 1  # nothing: exit 1
    assert d.ctl("entities", "--top", "x").returncode == 2  # usage

    done = d.ctl("related", "Melanie", "--depth", "2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("Melanie (")
    assert "  Oskar Lindqvist" in done.stdout and "    Caroline Baker" in done.stdout
    # an argument the daemon refuses is a usage error (2), not "nothing found" (1)
    assert d.ctl("related", "Melanie", "--depth", "9").returncode == 2
    assert d.ctl("entities", "--type", "bogus").returncode == 2
    assert d.ctl("search", "Oskar", "--limit", "0").returncode == 2
    assert d.ctl("entity", "Nobody Known").returncode == 1  # not found: 1

    done = d.ctl("search", "Oskar", "--entity", "Lisbon", "-l")
    assert (done.returncode, done.stdout) == (0, "trip.md\n")
    done = d.ctl("search", "Oskar", "--entity", "Nobody Known")
    assert done.returncode == 1 and "no entity named 'Nobody Known'" in done.stderr
    done = d.ctl("search", "lindqvist", "--kind", "entity")
    assert done.returncode == 0 and "Oskar Lindqvist (person" in done.stdout


def test_memoryctl_entity_says_on_its_page_what_else_the_name_means(d: Any) -> None:
    # stop 37's walk: the other entity was on stderr, lost to a script or an agent reading stdout
    d.call("add", {"content": "Jordan Lee led the rollout. Jordan said it is done."})
    d.call("add", {"content": "We flew to Jordan in March; Jordan is dry and warm."})
    done = d.ctl("entity", "Jordan")
    assert done.returncode == 0, done.stderr
    head = done.stdout.splitlines()[:3]
    assert head[0].startswith("Jordan  place, 1 mention,"), head  # one: no "1 mentions"
    assert "the name is also written for: Jordan Lee (person, " in done.stdout, done.stdout
    assert "also written for" not in done.stderr
    done = d.ctl("search", "jordan", "--kind", "entity")
    assert "Jordan (place, 1 mention)" in done.stdout, done.stdout


def test_mcp_about_related_and_the_search_filter(d: Any, tmp_path: Path) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryd", "mcp", "--socket", str(d.socket)],
        cwd=str(ROOT),
    )

    def text(result: Any) -> str:
        return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")

    async def main() -> None:
        with open(tmp_path / "mcp-stderr.log", "a") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as s,
            ):
                await s.initialize()
                about = await s.call_tool("about", {"name": "Oskar Lindqvist"})
                assert not about.is_error, text(about)
                out = text(about)
                assert out.startswith("Oskar Lindqvist (person)")
                assert "- ops.md:3" in out and "Mentioned with:" in out
                close = await s.call_tool("about", {"name": "Oskar L"})
                assert close.is_error and "Oskar Lindqvist" in text(close)
                related = await s.call_tool("related", {"name": "Melanie", "depth": 2})
                assert "Caroline Baker" in text(related)
                hits = await s.call_tool(
                    "search", {"query": "Oskar", "filters": {"entities": ["billing-svc"]}}
                )
                assert "ops.md" in text(hits) and "trip.md" not in text(hits)
                none = await s.call_tool(
                    "search", {"query": "Oskar", "filters": {"entities": ["Nobody Known"]}}
                )
                assert "no entity named 'Nobody Known'" in text(none)

    anyio.run(main)
