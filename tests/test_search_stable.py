"""Issue 19: the same question gets the same answer (whatever the limit, whatever the time), and
a grouped answer lists only sections that would have been hits themselves."""

from __future__ import annotations

import time
from typing import Any

from conftest import q, settle


def _vault(app: Any, notes: int = 40) -> None:
    ws = app.cfg.workspace
    for i in range(notes):
        words = " ".join(f"w{(i * 7 + j) % 23}" for j in range(6))
        (ws / f"n{i:02d}.md").write_text(
            f"# Note {i}\n\nThe deploy checklist {words} and the rollback plan {i % 5}.\n"
        )
    app.indexer.reconcile()


def _order(res: dict[str, Any]) -> list[tuple[str, float]]:
    return [(h["path"], h["score"]) for h in res["hits"]]


def test_the_first_ten_at_limit_ten_are_the_first_ten_at_limit_hundred(make_app: Any) -> None:
    app = make_app(dailylog={"enabled": False})
    _vault(app)
    settle(app)
    # the pools do not shrink with the limit: a smaller pool would drop what a wider one fuses in
    assert app.searcher.pool_size(10) == app.searcher.pool_size(100)
    for query in ("deploy rollback w3 w11", "checklist plan", "w5 w17 w22"):
        for mode in ("auto", "keyword", "hybrid"):
            for group in ("note", "none"):
                ten = q(app, query, mode=mode, group=group, limit=10)
                hundred = q(app, query, mode=mode, group=group, limit=100)
                assert _order(ten) == _order(hundred)[:10], (query, mode, group)


def test_the_order_does_not_depend_on_the_wall_clock(make_app: Any) -> None:
    app = make_app(dailylog={"enabled": False})
    _vault(app)
    settle(app)
    first = {qq: _order(q(app, qq, limit=20)) for qq in ("deploy rollback", "w3 checklist")}
    later = time.time() + 7 * 3600  # seven hours on: recency must not move a score
    app.searcher.clock = lambda: later
    again = {qq: _order(q(app, qq, limit=20)) for qq in first}
    assert again == first


def test_a_grouped_note_lists_only_sections_that_would_be_hits(make_app: Any) -> None:
    app = make_app(dailylog={"enabled": False})
    body = "\n\n".join(
        f"## Part {i}\n\nThe apple harvest note number {i} for the orchard ledger."
        for i in range(30)
    )
    (app.cfg.workspace / "orchard.md").write_text(f"# Orchard\n\n{body}\n")
    (app.cfg.workspace / "other.md").write_text("# Other\n\nNothing about fruit here at all.\n")
    app.indexer.reconcile()
    settle(app)
    for limit in (3, 10):
        grouped = q(app, "apple harvest", limit=limit)["hits"]
        chunks = q(app, "apple harvest", limit=limit, group="none")["hits"]
        listed = {s["id"] for h in grouped for s in h.get("sections", ())}
        assert listed, "the note lists its other matching sections"
        assert listed <= {h["id"] for h in chunks}, limit
        assert len(listed) <= limit - 1
