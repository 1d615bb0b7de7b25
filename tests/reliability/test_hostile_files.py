"""The hostile file zoo: workspace files built to break an indexer. Each one is skipped with a
log line or indexed safely, and the daemon keeps answering reindex, status --check and search.

Fast enough for CI: the largest file is ~2 MB and the daemon runs without a model.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from conftest import wait_for

from memoryd.search.searcher import SearchRequest

BILLION_LAUGHS = (
    "---\n"
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
    "---\n"
    "# Laughs\n\nthe body of the laughing note mentions quokka\n"
)
HEADINGS_2MB = "".join(f"## Heading number {i}\n" for i in range(82_000))  # ~1.96 MB
NON_UTF8_NAME = b"caf\xe9-latin1.md"
# one line each of unclosed link and code syntax: quadratic regexes take minutes on these
SYNTAX_BOMB = "\n".join(
    ["[[a " * 50_000, "[a](" * 50_000, "`a " * 60_000, "``a` " * 40_000, "#a" * 90_000]
)


def build_zoo(ws: Path) -> None:
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "plain.md").write_text("# Plain\n\nan ordinary note about wombats\n")
    os.symlink("self.md", ws / "self.md")  # a link to itself
    os.symlink("ping.md", ws / "pong.md")  # two links to each other
    os.symlink("pong.md", ws / "ping.md")
    (ws / "sub").mkdir()
    os.symlink("..", ws / "sub" / "up")  # a folder loop
    os.symlink(".", ws / "sub" / "here")
    (ws / "sub" / "inner.md").write_text("inner note about numbats\n")
    (ws / "laughs.md").write_text(BILLION_LAUGHS)
    (ws / "headings.md").write_text(HEADINGS_2MB)
    (ws / "utf16le.md").write_bytes("# UTF-16\n\nsixteen bit narwhal\n".encode("utf-16"))
    (ws / "utf16be.md").write_bytes(b"\xfe\xff" + "big endian ocelot\n".encode("utf-16-be"))
    (ws / "utf32.md").write_bytes("thirty-two bit axolotl\n".encode("utf-32"))
    (ws / "utf8bom.md").write_bytes(b"\xef\xbb\xbf# BOM\n\nbyte order mark pangolin\n")
    (ws / "empty.md").write_text("")
    (ws / "syntax-bomb.md").write_text("a dugong first\n\n" + SYNTAX_BOMB + "\n")
    os.mkfifo(ws / "fifo.md")
    try:
        with open(os.path.join(os.fsencode(ws), NON_UTF8_NAME), "wb") as f:
            f.write(b"latin one file name tapir\n")
    except OSError:  # a filesystem that refuses such names: nothing to test there
        pass


def keyword(app: Any, query: str) -> list[str]:
    res = app.searcher.search(SearchRequest(query=query, mode="keyword", record_access=False))
    return [h.get("path") for h in res["hits"]]


def test_zoo_in_process(make_app: Any, capsys: Any) -> None:
    app = make_app(indexer={"max_chunks_per_file": 400})
    ws = app.cfg.workspace
    build_zoo(ws)
    started = time.process_time()  # CPU, not wall: a busy machine does not slow it down
    report = app.indexer.reconcile()
    took = time.process_time() - started
    assert report.errors == []
    # a bound on a blow-up (quadratic regexes take minutes on the bombs), not a speed target
    assert took < 30, f"reconcile of the zoo took {took:.1f} s of CPU"
    assert report.skipped >= 4  # self, ping, pong, fifo (+ the non-UTF-8 name)
    assert keyword(app, "wombats") == ["plain.md"]
    assert keyword(app, "numbats") == ["sub/inner.md"]  # once, not through the folder loops
    assert keyword(app, "quokka") == ["laughs.md"]  # body indexed, front matter refused
    assert keyword(app, "lol") == []
    for word, path in [
        ("narwhal", "utf16le.md"),
        ("ocelot", "utf16be.md"),
        ("axolotl", "utf32.md"),
        ("pangolin", "utf8bom.md"),
        ("dugong", "syntax-bomb.md"),
    ]:
        assert keyword(app, word) == [path], word
    chunks = app.store.read(
        lambda con: con.execute(
            "SELECT count(*) FROM chunks e JOIN documents d ON d.id = e.document_id"
            " WHERE d.path = 'headings.md'"
        ).fetchall()[0][0]
    )
    assert 0 < chunks <= 400
    drift = app.indexer.drift()
    assert drift["total"] == 0, drift
    json.dumps(drift).encode("utf-8")  # what status --check sends must be encodable
    # nothing stored carries an undecodable path
    paths = app.store.read(lambda con: [r[0] for r in con.execute("SELECT path FROM documents")])
    assert all(p.encode("utf-8") for p in paths)
    again = app.indexer.reconcile()
    assert again.errors == [] and again.indexed == 0
    # the watcher's way in: each hostile path handed over on its own
    for name in ("self.md", "ping.md", "sub/up", "sub/here", "fifo.md", os.fsdecode(NON_UTF8_NAME)):
        synced = app.indexer.sync_paths([ws / name])
        assert synced.errors == [] and synced.indexed == 0, name
    out = capsys.readouterr().out
    for line in (
        "symlink loop",
        "YAML aliases",
        "too many chunks",
        "not a regular file",
        "caf\\xe9-latin1.md",  # the undecodable byte shown, the file named
        "file name is not valid UTF-8",
    ):
        assert line in out, line


def test_zoo_through_the_daemon(daemon_factory: Any, config_dict: dict[str, Any]) -> None:
    ws = Path(config_dict["workspace"])
    build_zoo(ws)  # present at startup: the startup reconcile meets them first
    d = daemon_factory()
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"], timeout=60)
    status = d.call("status", {"check": True})
    assert status["drift"]["total"] == 0
    assert d.call("reindex", {})["errors"] == []
    res = d.call("search", {"query": "narwhal", "mode": "keyword"})
    assert [h["path"] for h in res["hits"]] == ["utf16le.md"]
    # a loop appearing while the daemon runs: the reconcile job and status still answer
    os.symlink("loop2.md", ws / "loop1.md")
    os.symlink("loop1.md", ws / "loop2.md")
    d.call("jobs.run", {"name": "reconcile"})
    assert d.call("status", {"check": True})["drift"]["total"] == 0
    log = d.log()
    assert "symlink loop" in log
    assert "YAML aliases" in log
    assert "too many chunks" not in log or "headings.md" in log
    assert d.call("ping")["pong"] is True
