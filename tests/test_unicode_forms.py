"""One name, however its accents are encoded: a vault synced from macOS names files decomposed
(NFD: a letter, then its combining mark), while most editors write text composed (NFC). Links
resolve, and backlinks are found, across the two forms (both backends)."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import pytest
from conftest import migrations_before

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


# decomposed everywhere a keyword row reads: the text, a heading, a tag (and the file's name)
NFD_NOTES = {
    **NOTES,
    nfd("Müller.md"): nfd("---\ntags: [équipe]\n---\n# Größe\n\nThe supplier.\n"),
}
NFD_QUERIES = [*QUERIES, ("größe", [nfd("Müller.md")])]


def _written_decomposed(a: Any) -> None:
    ws = Path(a.cfg.workspace)
    ws.mkdir(parents=True, exist_ok=True)
    for name, text in NFD_NOTES.items():
        (ws / name).write_text(nfd(text))
    assert a.indexer.reconcile().errors == []


def _found_either_form(a: Any) -> None:
    for query, want in NFD_QUERIES:
        for form in (query, nfd(query)):
            hits = call(a, "search", query=form, mode="keyword")["hits"]
            assert sorted({h["path"] for h in hits if h.get("path")}) == want, (form, hits)
    hits = call(a, "search", query="supplier", mode="keyword", tags=["équipe"])["hits"]
    assert [h["path"] for h in hits] == [nfd("Müller.md")]


def test_a_note_written_decomposed_is_found_by_either_form(make_app: Any) -> None:
    """PostgreSQL's parser cut "Zu\u0308rich" at its mark, so a note written NFD (text, heading,
    tag or file name) was found on SQLite only, whose unicode61 folds both forms."""
    a = make_app()
    _written_decomposed(a)
    _found_either_form(a)


def test_a_database_indexed_before_v9_finds_its_decomposed_notes_once_upgraded(
    make_app: Any, backend: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Schema v9 indexes again, composed, the keyword rows written decomposed, with no note
    read again (SQLite's index always folded them: nothing to upgrade)."""
    if backend == "sqlite":
        pytest.skip("FTS5's unicode61 folded decomposed text from the start")
    from memoryd.store.pg import schema, sqlfuncs

    store = {"store": {"backend": "postgres", "dsn": request.getfixturevalue("pg_dsn")}}
    migrations_before(monkeypatch, schema, schema._v9_composed_words)
    # v1's trigger as it was: the text as written
    monkeypatch.setattr(
        sqlfuncs,
        "nfc_function",
        lambda cur: cur.execute(sqlfuncs.NFC_FUNCTION.replace("@BODY@", "t")),
    )
    old = make_app(**store)
    _written_decomposed(old)
    assert call(old, "search", query="Zürich", mode="keyword")["hits"] == []  # as before
    old.close()
    monkeypatch.undo()
    migrations_before(monkeypatch, schema, schema._v10_note_titles)  # (v10 reads notes again)
    new = make_app(**store)  # the same database, migrated to v9
    _found_either_form(new)
    assert new.indexer.reconcile().unchanged == len(NFD_NOTES)  # no note read again
