"""One name, however its accents are encoded: a vault synced from macOS names files decomposed
(NFD: a letter, then its combining mark), while most editors write text composed (NFC). Links
resolve, and backlinks are found, across the two forms (both backends)."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import pytest

from memoryd.serve import methods as api

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def test_links_resolve_and_backlinks_are_found_across_the_two_forms(make_app: Any) -> None:
    a = make_app(model=None)
    ws = Path(a.cfg.workspace)
    (ws / "people").mkdir(parents=True, exist_ok=True)
    (ws / "Café.md").write_text("# Café\n\nThe menu.\n")  # named composed
    (ws / "people" / nfd("Zoë.md")).write_text("# Zoë\n\nHer page.\n")  # named decomposed
    (ws / "written-nfd.md").write_text(nfd("See [[Café]], [[people/Zoë|her]] and ![[Zoë]].\n"))
    (ws / "written-nfc.md").write_text("See [[café]], [[people/Zoë|her]] and ![[Zoë]].\n")
    assert a.indexer.reconcile().errors == []
    for source in ("written-nfd.md", "written-nfc.md"):
        got = [link["path"] for link in call(a, "links", path=source)["links"]]
        assert got == ["Café.md", f"people/{nfd('Zoë.md')}", f"people/{nfd('Zoë.md')}"], source
    for name in ("Café", nfd("Café"), "Zoë", nfd("people/Zoë.md"), "people/Zoë.md"):
        back = call(a, "backlinks", path=name)
        assert sorted({b["path"] for b in back["backlinks"]}) == [
            "written-nfc.md",
            "written-nfd.md",
        ], name


NOTES = {
    "a.md": "# Trip\n\nThe café in Zürich served crème brûlée.\n",
    "b.md": "# Trip two\n\nAnother café near Köln with naïve art.\n",
}
QUERIES = [
    ("café", ["a.md", "b.md"]),
    ("Zürich", ["a.md"]),
    ("köln naïve", ["b.md"]),
    ('"crème brûlée"', ["a.md"]),
]


def _same_notes_either_form(a: Any, mode: str) -> None:
    for query, want in QUERIES:
        for form in (query, nfd(query)):
            hits = call(a, "search", query=form, mode=mode)["hits"]
            assert sorted({h["path"] for h in hits if h.get("path")}) == want, (form, hits)


@pytest.mark.parametrize("mode", ["keyword", "auto"])
def test_a_query_typed_decomposed_finds_what_its_composed_twin_finds(
    make_app: Any, mode: str
) -> None:
    """A query typed NFD was cut at its combining marks ("Zu", "rich"): Zürich found nothing."""
    a = make_app()
    ws = Path(a.cfg.workspace)
    ws.mkdir(parents=True, exist_ok=True)
    for name, text in NOTES.items():
        (ws / name).write_text(text)
    assert a.indexer.reconcile().errors == []
    _same_notes_either_form(a, mode)


@pytest.mark.sqlite_only(
    "FTS5's unicode61 folds a decomposed note's text; PostgreSQL's parser does not (docs/team.md)"
)
def test_a_note_written_decomposed_is_found_by_either_form(make_app: Any) -> None:
    a = make_app()
    ws = Path(a.cfg.workspace)
    ws.mkdir(parents=True, exist_ok=True)
    for name, text in NOTES.items():
        (ws / name).write_text(nfd(text))
    assert a.indexer.reconcile().errors == []
    _same_notes_either_form(a, "keyword")
