"""A note in another encoding than plain UTF-8 (a byte order mark, UTF-16/32, Latin-1 or
Windows-1252 bytes from an older editor) reads the same through every door: the index, search,
note.read (and through it the MCP tools and the web page), and a note.append or a write of what
was read keeps every character."""

from __future__ import annotations

from typing import Any

import pytest

from memoryd.search.searcher import SearchRequest
from memoryd.serve import methods as api
from memoryd.text.decoding import decode

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

TEXT = "# Café notes\n\nThe naïve “quokka” résumé\n"

ENCODERS = {
    "utf-8": lambda t: t.encode(),
    "utf-8 with a byte order mark": lambda t: b"\xef\xbb\xbf" + t.encode(),
    "utf-16 le": lambda t: b"\xff\xfe" + t.encode("utf-16-le"),
    "utf-16 be": lambda t: b"\xfe\xff" + t.encode("utf-16-be"),
    "utf-32": lambda t: t.encode("utf-32"),
    "windows-1252": lambda t: t.encode("cp1252"),
    "utf-8 with one latin-1 byte": lambda t: t.replace("Café", "Caf\udce9").encode(
        "utf-8", "surrogateescape"
    ),
    "crlf": lambda t: t.replace("\n", "\r\n").encode(),
}


def call(app: Any, name: str, **params: Any) -> Any:
    return api.lookup(name, params).fn(app, params)


def hits(app: Any, query: str) -> list[dict[str, Any]]:
    req = SearchRequest(query=query, limit=5, record_access=False, mode="keyword")
    return app.searcher.search(req)["hits"]


@pytest.mark.parametrize("kind", sorted(ENCODERS))
def test_every_door_reads_a_note_as_the_index_does(make_app: Any, kind: str) -> None:
    app = make_app(model=None)
    (app.cfg.workspace / "n.md").write_bytes(ENCODERS[kind](TEXT))
    app.indexer.reconcile()
    expected = TEXT.replace("\n", "\r\n") if kind == "crlf" else TEXT
    read = call(app, "note.read", path="n.md")
    assert read["content"] == expected
    for word in ("café", "naïve", "résumé", "quokka"):
        found = hits(app, word)
        assert [h["path"] for h in found] == ["n.md"], word
        assert "Café" in found[0]["content"]
    # what was read, written back (as the MCP edit tools do), loses nothing
    call(app, "note.write", path="n.md", content=read["content"], expected_sha256=read["sha256"])
    assert call(app, "note.read", path="n.md")["content"] == expected


@pytest.mark.parametrize("kind", sorted(ENCODERS))
def test_an_append_keeps_the_notes_encoding(make_app: Any, kind: str) -> None:
    app = make_app(model=None)
    path = app.cfg.workspace / "n.md"
    path.write_bytes(ENCODERS[kind](TEXT.rstrip("\n")))  # no line end at the end
    app.indexer.reconcile()
    call(app, "note.append", path="n.md", content="- numbat rollout ✓")
    data = path.read_bytes()
    text, encoding, lossy = decode(data)
    assert not lossy and encoding == decode(ENCODERS[kind](TEXT))[1]
    eol = "\r\n" if kind == "crlf" else "\n"  # a CRLF note's line ends, not a mix
    assert text.startswith("# Café notes") and text.endswith(f"résumé{eol}- numbat rollout ✓{eol}")
    assert text.count("\ufeff") == 0  # one byte order mark at most, and it is not text
    assert [h["path"] for h in hits(app, "numbat")] == ["n.md"]
    assert [h["path"] for h in hits(app, "résumé")] == ["n.md"]
