"""What people search for that is not a plain word (stop 37, branch walkh12): a corrected word
is shown as the notes write it, in every door that shows it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

TYPO_NOTES = {
    "plain.md": "# Falsification\n\nPopper wrote about falsifiability and falsification of "
    "theories. Analysis of results follows.\n",
    "draft.md": "# Launch plan\n\nWe will falsify the results and analyze the metrics. The "
    "engine uses templates and the firmware is compiled; a->b dereferences.\n",
}


def indexed(app: Any, notes: dict[str, str]) -> Path:
    ws = app.cfg.workspace
    ws.mkdir(parents=True, exist_ok=True)
    for rel, text in notes.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text, encoding="utf-8")
    app.indexer.reconcile()
    return ws


# (query, mode, the answer's field that shows the correction): on main these showed a stem
# (falsif, templat, analys), an edit no note writes (falsificator, analysys) or a word of
# the wrong form
CORRECTED = [
    ("falsificaton", "auto", "corrected_query"),
    ("fasliyf", "auto", "corrected_query"),
    ("teplmates", "auto", "corrected_query"),
    ("analisys", "auto", "corrected_query"),
    ("falsificaton", "keyword", "suggestion"),
    ("teplmates", "keyword", "suggestion"),
    ("falsificaton teplmates", "keyword", "suggestion"),
]


@pytest.mark.parametrize(("query", "mode", "field"), CORRECTED)
def test_a_corrected_word_is_shown_as_the_notes_write_it(
    make_app: Any, query: str, mode: str, field: str
) -> None:
    from memoryd.agents.formats import fmt_hits
    from memoryd.ctl.output import search_notes
    from memoryd.search.searcher import SearchRequest

    app = make_app(model=None)
    indexed(app, TYPO_NOTES)
    res = app.searcher.search(SearchRequest(query=query, mode=mode))
    shown = res.get(field)
    written = set(re.findall(r"\w+", " ".join(TYPO_NOTES.values()).lower()))
    assert shown, res
    assert set(shown.split()) <= written, f"{shown!r} holds a word no note writes"
    # every door that shows a search answer shows it: the MCP tool's text, memoryctl
    assert shown in fmt_hits(res)
    if field == "suggestion":
        assert f"did you mean: {shown}?" in search_notes(res)
