"""Issue 20.6: what a note's entity rows cost at index time. The statements sent to store a
note's mentions (its entities made and counted, the forms looked up, the mentions, pairs and
types written) do not grow with the number of names it writes: each kind is one batch
(store/entities.py `_entities`, `_store`; store/entityforms.py `probes`). Before, each new
entity was a statement of its own (an upsert returning its id), its count another, and each
name that is no entity's key one form look-up: a statement per name, a fifth of the rows' CPU
(BENCHMARKS.md, "Issue 20.6: the entity rows' cost at index time")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import write_synced
from test_entity_store import consistent, rows

from memoryd.store import entities
from memoryd.text.entities import extract_note

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


class Counting:
    """A store connection that counts the statements sent through it (each execute, and each
    executemany: one batch)."""

    def __init__(self, con: Any) -> None:
        self.con = con
        self.sent: list[str] = []

    def execute(self, sql: str, params: Any = None) -> Any:
        self.sent.append(sql)
        return self.con.execute(sql, params) if params is not None else self.con.execute(sql)

    def executemany(self, sql: str, seq: Any) -> Any:
        self.sent.append(sql)
        return self.con.executemany(sql, seq)

    def __getattr__(self, name: str) -> Any:  # dialect, changes, ...
        return getattr(self.con, name)


def _note(codes: int) -> str:
    """A note of two chunks that writes `codes` error codes of its own (identifiers: no
    person, so no first-name look-up), half in each."""
    half = codes // 2
    first = " ".join(f"ERR_A{codes}_{1000 + i}" for i in range(half))
    second = " ".join(f"ERR_B{codes}_{2000 + i}" for i in range(codes - half))
    return f"# Codes {codes}\n\n## One\n\nSeen: {first}.\n\n## Two\n\nAlso: {second}.\n"


def _statements(app: Any, path: str, text: str) -> list[str]:
    """The note's mentions stored again (forgotten first), through a counting connection: the
    statements index_document sent."""
    mentions = extract_note(text, path)
    sent: list[str] = []

    def again(con: Any) -> None:
        for (entry_id,) in con.execute(
            "SELECT e.id FROM entries e JOIN documents d ON d.id = e.document_id WHERE d.path = ?",
            (path,),
        ).fetchall():
            entities.forget(con, int(entry_id))
        counting = Counting(con)
        entities.index_document(counting, path, mentions)
        sent.extend(counting.sent)

    app.store.run_write(again)
    return sent


def test_a_notes_entity_rows_take_as_many_statements_for_60_names_as_for_4(
    make_app: Any,
) -> None:
    app = make_app(model=None)
    Path(app.cfg.workspace).mkdir(parents=True, exist_ok=True)
    few, many = _note(4), _note(60)
    write_synced(app, "few.md", few)
    write_synced(app, "many.md", many)
    assert len(rows(app, "SELECT 1 FROM entities WHERE key LIKE 'err_%'")) == 64
    before = sorted(rows(app, "SELECT key, name, type, mentions FROM entities"))
    sent_few = _statements(app, "few.md", few)
    sent_many = _statements(app, "many.md", many)
    # stored again as they were, counts and pairs exact
    assert sorted(rows(app, "SELECT key, name, type, mentions FROM entities")) == before
    consistent(app)
    assert len(sent_many) == len(sent_few), (len(sent_few), len(sent_many))


def test_new_entities_are_made_and_counted_in_one_batch_with_the_better_name(
    make_app: Any,
) -> None:
    """The batch keeps the upsert's rules: a new entity takes its first mention's name, a name
    with capitals betters one without, and each counts its rows of `mentions`."""
    app = make_app(model=None)
    Path(app.cfg.workspace).mkdir(parents=True, exist_ok=True)
    write_synced(app, "a.md", "# A\n\nSee [[kubernetes]] and billing-svc today.\n")
    found = {
        str(k): (str(n), int(c))
        for k, n, c in rows(app, "SELECT key, name, mentions FROM entities")
    }
    assert found["kubernetes"] == ("kubernetes", 1)
    write_synced(app, "b.md", "# B\n\nKubernetes runs billing-svc.\n\nKubernetes again.\n")
    found = {
        str(k): (str(n), int(c))
        for k, n, c in rows(app, "SELECT key, name, mentions FROM entities")
    }
    assert found["kubernetes"] == ("Kubernetes", 3)
    assert found["billing-svc"] == ("billing-svc", 2)
    consistent(app)
