"""Issue 20.2: a claim withdrawn (store/entityclaims.py). The names other notes and memories
wrote that a full name took through a note's declaration or its claim go back when the note is
deleted, edited so it no longer declares, or the memories that wrote the full name go; the
tables then equal a rebuild's (bench/entity_rebuild.py). Both backends."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import entities_caught_up, write_synced
from test_entity_claims import memory_keys
from test_entity_known import keys_in
from test_entity_store import consistent

from bench import entity_rebuild

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

DAILY = ("daily.md", "# Daily\n\nLena: the invoices are out.\nThe plan came from Caz.\n")
DECLARES = (
    "people/lf.md",
    "---\naliases: [Caz]\n---\n# Lena Fischer\n\nLena Fischer runs billing.\n",
)


def _delete(app: Any) -> None:
    (Path(app.cfg.workspace) / DECLARES[0]).unlink()
    app.indexer.reconcile()
    entities_caught_up(app)


def _edit_away(app: Any) -> None:
    write_synced(app, DECLARES[0], "# Billing\n\nThe invoices run on Tuesdays.\n")


WITHDRAW: dict[str, Callable[[Any], None]] = {
    "deleted": _delete,
    "edited": _edit_away,
}


@pytest.mark.parametrize("how", sorted(WITHDRAW))
def test_a_first_name_and_an_alias_go_back_when_the_declaring_note_goes(
    make_app: Any, how: str
) -> None:
    app = make_app(model=None)
    Path(app.cfg.workspace).mkdir(parents=True, exist_ok=True)
    for path, text in (DAILY, DECLARES):
        write_synced(app, *(path, text))
    assert {"lena fischer"} <= keys_in(app, DAILY[0])
    assert "lena" not in keys_in(app, DAILY[0])
    WITHDRAW[how](app)
    keys = keys_in(app, DAILY[0])
    assert {"lena", "caz"} <= keys, keys
    assert "lena fischer" not in keys
    consistent(app)


def test_a_first_name_goes_back_when_a_memory_writing_the_full_name_goes(make_app: Any) -> None:
    app = make_app(model=None)
    first = app.memories.add(content="Lena prefers Signal.")
    app.memories.add(content="Lena Fischer owns the billing runbook.")
    other = app.memories.add(content="Ask Lena Fischer before a release.")
    assert "lena fischer" in memory_keys(app, first.id)
    app.memories.delete(other.id)
    assert "lena" in memory_keys(app, first.id)
    app.memories.update(first.id, {"content": "Lena prefers Signal, says Lena."})
    assert "lena" in memory_keys(app, first.id)
    consistent(app)


def test_a_first_name_two_shared_goes_to_the_one_left_claiming_it(make_app: Any) -> None:
    app = make_app(model=None)
    Path(app.cfg.workspace).mkdir(parents=True, exist_ok=True)
    write_synced(app, "a.md", "# Lena Fischer\n\nRuns billing.\n")
    write_synced(app, "b.md", "# Lena Okafor\n\nRuns support.\n")
    write_synced(app, *DAILY)
    assert "lena" in keys_in(app, DAILY[0])  # two claim it: it stays its own
    (Path(app.cfg.workspace) / "a.md").unlink()
    app.indexer.reconcile()
    entities_caught_up(app)
    assert "lena okafor" in keys_in(app, DAILY[0])
    consistent(app)


def test_a_link_to_a_file_name_goes_back_when_the_note_is_renamed(make_app: Any) -> None:
    """`[[caroline-baker]]` names the note titled Caroline Baker while it has that file name;
    renamed, the link names nothing (the link is declared: it must not vouch for itself)."""
    app = make_app(model=None)
    Path(app.cfg.workspace).mkdir(parents=True, exist_ok=True)
    write_synced(app, "people/caroline-baker.md", "# Caroline Baker\n\nRuns the garden.\n")
    write_synced(app, "plan.md", "# Plan\n\nSee [[caroline-baker]] for the budget.\n")
    assert "caroline baker" in keys_in(app, "plan.md")
    ws = Path(app.cfg.workspace)
    (ws / "people/caroline-baker.md").rename(ws / "people/cb.md")
    app.indexer.reconcile()
    entities_caught_up(app)
    keys = keys_in(app, "plan.md")
    assert "caroline-baker" in keys and "caroline baker" not in keys, keys
    consistent(app)


def test_the_form_probe_answers_as_the_form_query(make_app: Any) -> None:
    """entityforms.forms_of (two seeks, m017) gives FORM_OF's rows for every written form: one
    a dozen notes link, one two entities share, an entity's own key, a declared alias."""
    from memoryd.store import entityforms

    app = make_app(model=None)
    Path(app.cfg.workspace).mkdir(parents=True, exist_ok=True)
    write_synced(app, "billing-svc.md", "---\naliases: [Billing]\n---\n# Billing service\n")
    for n in range(12):
        write_synced(app, f"n{n}.md", f"# N{n}\n\nSee [[billing-svc]] and Lena and Billing.\n")
    write_synced(app, DECLARES[0], DECLARES[1])
    write_synced(app, "o.md", "# Lena Okafor\n\nLena Okafor: hi. Lena said so.\n")

    def both(con: Any) -> list[tuple[Any, Any]]:
        forms = [str(r[0]) for r in con.execute("SELECT DISTINCT surface_key FROM mentions")]
        return [
            (
                sorted(
                    tuple(r)
                    for r in entityforms.forms_of(con, f, entityforms.probes(con, [f]).get(f))
                ),
                sorted(tuple(r) for r in con.execute(entityforms.FORMS_OF[1], (f, f)).fetchall()),
            )
            for f in forms
        ]

    pairs = app.store.read(both)
    assert len(pairs) > 10
    for probed, queried in pairs:
        assert probed == queried


@pytest.mark.parametrize("seed", [3, 13])
def test_a_random_sequence_ends_as_a_rebuild_does(seed: int) -> None:
    """bench/entity_rebuild.py's differential check, two rounds of eight seeded operations
    (SQLite; `python -m bench.entity_rebuild --pg` for PostgreSQL): both seeds differed from a
    rebuild on main (a claim kept after its note went, a moved note's old title)."""
    said: list[str] = []
    assert entity_rebuild.run(seed, 2, 8, say=said.append) == 0, "\n".join(said)


def test_a_place_keeps_its_name_when_a_person_of_that_first_name_goes(make_app: Any) -> None:
    """Withdrawing gives a shared first name to the one person left claiming it only where
    the name alone reads as a person (adopt_first_names' rule): Jordan the country stays."""
    app = make_app(model=None)
    Path(app.cfg.workspace).mkdir(parents=True, exist_ok=True)
    write_synced(app, "trip.md", "# Trip\n\nWe flew to Jordan in May and stayed in Amman.\n")
    write_synced(app, "a.md", "# Jordan Lee\n\nJordan Lee runs billing.\n")
    write_synced(app, "b.md", "# Jordan Patel\n\nJordan Patel runs support.\n")
    before = keys_in(app, "trip.md")
    (Path(app.cfg.workspace) / "a.md").unlink()
    app.indexer.reconcile()
    entities_caught_up(app)
    assert keys_in(app, "trip.md") == before
    assert "jordan patel" not in before
    consistent(app)
