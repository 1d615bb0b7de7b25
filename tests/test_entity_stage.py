"""Issue 20.6: entities as a background stage (store/entitystage.py, serve/entitywork.py). A note
indexed writes its keyword rows and a row in `entity_pending`, no entity rows; its entities are
read later, in indexing order: by the daemon's stage thread, or first by a door that reads them
(which says `entities_pending: N` when more waits than it drains). Both backends."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
from conftest import DEADLINE_S, entities_caught_up, wait_for
from test_entity_store import consistent

from bench import entity_rebuild
from memoryd.core.errors import NotFound
from memoryd.serve import methods as api
from memoryd.store import entitystage

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

LENA = ("people/lf.md", "---\naliases: [Caz]\n---\n# Lena Fischer\n\nLena Fischer runs billing.\n")
DAILY = ("daily.md", "# Daily\n\nLena: the invoices are out.\nThe plan came from Caz.\n")


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def written(app: Any, rel: str, text: str) -> None:
    """A note written and indexed as the watcher would: its entities not read yet."""
    path = Path(app.cfg.workspace) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    app.indexer.sync_paths([path])


def count(app: Any, sql: str) -> int:
    return int(app.store.read(lambda con: con.execute(sql).fetchall()[0][0]))


def keys(app: Any) -> set[str]:
    return {
        str(r[0])
        for r in app.store.read(
            lambda con: con.execute(
                "SELECT DISTINCT n.key FROM mentions m JOIN entities n ON n.id = m.entity_id"
            ).fetchall()
        )
    }


def test_indexing_writes_keyword_rows_and_a_queue_row_the_stage_reads_later(
    make_app: Any,
) -> None:
    app = make_app(model=None)
    written(app, *LENA)
    # no entity rows yet, one note waiting; keyword-searchable (a search drains a short queue)
    assert count(app, "SELECT count(*) FROM mentions") == 0
    assert app.status()["entities"]["pending"] == 1
    hits = call(app, "search", query="billing", mode="keyword", limit=5)["hits"]
    assert [h["path"] for h in hits] == [LENA[0]]
    page = call(app, "entity", name="Caz")  # the door reads the queue first: exact
    assert page["name"] == "Lena Fischer" and "entities_pending" not in page
    assert app.status()["entities"]["pending"] == 0
    consistent(app)


def test_a_door_says_entities_pending_when_more_waits_than_it_drains(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(model=None)
    written(app, *LENA)
    entities_caught_up(app)
    written(app, *DAILY)
    written(app, "ops.md", "# Ops\n\nPriya Raman deploys billing-svc on Tuesdays.\n")
    monkeypatch.setattr(entitystage, "DOOR_BUDGET_S", 0.0)  # a bulk indexing's queue
    assert call(app, "entity", name="Lena Fischer")["entities_pending"] == 2
    assert call(app, "entities")["entities_pending"] == 2
    assert call(app, "related", name="Lena Fischer")["entities_pending"] == 2
    assert call(app, "search", query="Lena", kind="entity")["entities_pending"] == 2
    found = call(app, "search", query="billing", mode="keyword", entities=["Lena Fischer"])
    assert found["entities_pending"] == 2
    with pytest.raises(NotFound) as exc:  # the name may be in the notes that wait
        call(app, "entity", name="Priya Raman")
    assert exc.value.data is not None and exc.value.data["entities_pending"] == 2
    assert "wait for their entities" in exc.value.message
    # a search without an entity filter reads none: it never waits on extraction
    monkeypatch.setattr(entitystage, "DOOR_BUDGET_S", 30.0)
    plain = call(app, "search", query="billing", mode="keyword")
    assert plain["entities_pending"] == 2
    written(app, "one.md", "# One\n\nOskar Berg.\n")  # one more: still not read by a search
    assert call(app, "search", query="billing", mode="keyword")["entities_pending"] == 3
    assert "entities_pending" not in call(app, "entity", name="Priya Raman")  # drained
    assert "entities_pending" not in call(app, "search", query="billing", mode="keyword")
    consistent(app)


def test_edits_moves_and_deletes_of_pending_notes_leave_the_rows_a_rebuild_has(
    make_app: Any,
) -> None:
    """The held keys of a note edited twice before its entities were read are merged; a moved
    pending note is read under its new name; a deleted one withdraws what its old text held."""
    app = make_app(model=None)
    written(app, *DAILY)
    written(app, *LENA)
    entities_caught_up(app)
    assert "lena fischer" in keys(app) and "lena" not in keys(app)
    written(app, LENA[0], "# Lena Fischer\n\nStill Lena Fischer.\n")  # pending: holds its keys
    written(app, LENA[0], "# Billing\n\nThe invoices run on Tuesdays.\n")  # again, pending
    ws = Path(app.cfg.workspace)
    (ws / "ops.md").write_text("# Ops\n\nOskar Berg on call.\n")
    app.indexer.reconcile()
    (ws / "ops.md").rename(ws / "oncall.md")  # moved while pending
    assert app.indexer.reconcile().moved == 1
    assert count(app, "SELECT count(*) FROM entity_pending") == 2  # Lena's note (twice), ops
    entities_caught_up(app)
    got = keys(app)
    assert {"lena", "caz", "oskar berg"} <= got and "lena fischer" not in got, got
    consistent(app)
    written(app, "gone.md", "# Gone\n\n[[Lena Fischer]] wrote [[Caz]].\n")
    (ws / "gone.md").unlink()  # deleted while pending
    app.indexer.reconcile()
    assert app.status()["entities"]["pending"] == 0
    entities_caught_up(app)
    assert keys(app) == got
    consistent(app)


@pytest.mark.parametrize("seed", [1, 4])
def test_rounds_whose_entities_are_read_at_their_end_end_as_a_rebuild_does(seed: int) -> None:
    """bench/entity_rebuild.py --lazy (SQLite; `--pg` for PostgreSQL): a round's edits, moves,
    deletes and reindexes meet notes whose entities are pending."""
    said: list[str] = []
    assert entity_rebuild.run(seed, 2, 10, say=said.append, lazy=True) == 0, "\n".join(said)


def test_the_queue_survives_a_stop_and_the_stage_drains_it_at_the_start(make_app: Any) -> None:
    app = make_app(model=None)
    written(app, *DAILY)
    written(app, *LENA)
    app.close()
    again = make_app(model=None)  # the same store (tmp dirs of this test)
    assert again.status()["entities"]["pending"] == 2
    again.entity_work.start()
    wait_for(lambda: again.status()["entities"]["pending"] == 0, DEADLINE_S)
    assert {"lena fischer"} <= keys(again) and "lena" not in keys(again)
    consistent(again)


NAMES = [
    f"{first} {last}"
    for first in ("Lena", "Oskar", "Priya", "Maya", "Ravi")
    for last in ("Fischer", "Berg", "Raman", "Okafor", "Patel", "Novak", "Silva", "Tanaka")
]


def test_kill_9_loses_no_pending_note(daemon_factory: Any) -> None:
    """`memoryd run` killed as soon as its notes are keyword-searchable (its stage may be
    mid-queue: the queue is in the store, committed with the keyword rows): the next start
    reads every note's entities."""
    d = daemon_factory()
    for i, name in enumerate(NAMES):
        (d.workspace / f"p{i}.md").write_text(f"# Note {i}\n\n{name} met the team today.\n")
    wait_for(lambda: (d.call("status")["counts"] or {}).get("documents") == len(NAMES))
    d.stop(signal.SIGKILL)
    d2 = daemon_factory()
    wait_for(lambda: d2.call("status")["entities"]["pending"] == 0, DEADLINE_S)
    for name in NAMES:
        page = d2.call("entity", {"name": name})
        assert page["name"] == name and "entities_pending" not in page


def test_memoryctl_and_the_mcp_tools_say_the_entities_pending(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from argparse import Namespace

    from memoryd.agents import formats
    from memoryd.agents.entitytools import fmt_about, fmt_related
    from memoryd.ctl import entities as ctl_entities
    from memoryd.ctl.output import search_notes

    page = {"name": "Lena Fischer", "type": "person", "mentions": 2, "entities_pending": 7}
    assert "7 notes indexed just now still wait" in fmt_about(page)
    walk = {"name": "Lena Fischer", "depth": 1, "nodes": [], "edges": [], "entities_pending": 7}
    assert "7 notes indexed just now still wait" in fmt_related(walk)
    found = {"mode": "keyword", "hits": [], "entities_pending": 7}
    assert "7 notes indexed just now" in formats.fmt_hits(found)
    assert any("7 note(s) indexed just now" in n for n in search_notes(found))
    ctl_entities.s_entity(page, Namespace())
    ctl_entities.s_entities({"entities": [], "entities_pending": 7}, Namespace())
    err = capsys.readouterr().err
    assert err.count("7 note(s) indexed just now still wait for their entities") == 2


def test_a_note_whose_names_cannot_be_read_does_not_hold_back_the_queue(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Extraction that fails on one note (a text no rule foresaw) made the stage retry that
    batch every 5 s for ever: no note indexed after it got its entities. It has none; the rest
    are read."""
    app = make_app(model=None)
    real = entitystage.entities.extract_document

    def fails_on_odd(fm: Any, body: Any, first: Any, text: str, path: str) -> Any:
        if path.startswith("odd"):
            raise ValueError("a text no rule foresaw")
        return real(fm, body, first, text, path)

    monkeypatch.setattr(entitystage.entities, "extract_document", fails_on_odd)
    written(app, "odd.md", "# Odd\n\nOskar Berg wrote this.\n")
    written(app, *LENA)
    assert entitystage.store_caught_up(app.store) == 0
    assert "lena fischer" in keys(app) and "oskar berg" not in keys(app)
    assert call(app, "search", query="Oskar", mode="keyword")["hits"]  # its text is found
    consistent(app)
