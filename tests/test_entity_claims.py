"""Issue 20: who a first name written alone stands for across notes (store/firstnames.py,
claims), an older store migrated to the rule (SQLite m013, PostgreSQL v12), and a note's
credentials kept out of its names (text/secretguard.masked_lines). Both backends."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import entities_caught_up, older_store, with_notes, write_synced
from test_entity_known import CHATS, QUOTE, keys_in, rows
from test_entity_store import consistent

from memoryd.text.entities import extract_document, extract_note
from memoryd.text.markdown import parse_front_matter
from memoryd.text.secretguard import mask_known

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def memory_keys(app: Any, memory_id: int) -> set[str]:
    return {
        str(r[0])
        for r in rows(
            app,
            "SELECT n.key FROM mentions x JOIN entities n ON n.id = x.entity_id"
            " WHERE x.entry_id = ?",
            (memory_id,),
        )
    }


def test_two_memories_that_write_the_full_name_claim_the_first_name(make_app: Any) -> None:
    app = make_app(model=None)
    first = app.memories.add(content="Lena prefers Signal.")
    app.memories.add(content="Lena Fischer owns the billing runbook.")
    assert "lena" in memory_keys(app, first.id)  # one memory is no claim
    app.memories.add(content="Ask Lena Fischer before a release.")
    assert "lena fischer" in memory_keys(app, first.id)
    later = app.memories.add(content="Lena is away in May.")
    assert "lena fischer" in memory_keys(app, later.id)
    consistent(app)


def test_the_migration_frees_a_first_name_one_quote_took(
    make_app: Any, backend: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """A store written by the rule before m013 / v12 (one quote of John Locke took every John):
    once migrated and reconciled, the chats' and a memory's John is John again, the quoting note
    keeps John Locke, and the counts are exact."""
    store = older_store(monkeypatch, request, backend, "m013_declared", "_v12_declared")
    old = make_app(model=None, **store)
    Path(old.cfg.workspace).mkdir(parents=True, exist_ok=True)
    for path, text in [QUOTE, *CHATS[:2]]:
        write_synced(old, path, text)
    memory = old.memories.add(content="John prefers the morning trail.")
    assert "john locke" in keys_in(old, CHATS[0][0])  # the old rule
    assert "john locke" in memory_keys(old, memory.id)
    old.close()
    monkeypatch.undo()
    new = make_app(model=None, **store)
    assert "john" in memory_keys(new, memory.id)  # memories are read again by the migration
    new.indexer.reconcile()  # notes at the next reconcile
    entities_caught_up(new)
    for path, _ in CHATS[:2]:
        assert "john" in keys_in(new, path)
        assert "john locke" not in keys_in(new, path)
    assert "john locke" in keys_in(new, QUOTE[0])
    consistent(new)


def test_a_claim_in_another_workspace_takes_no_first_name_here(
    team: Callable[[str], Any], backend: str
) -> None:
    """On a PostgreSQL store two daemons share, Alice's note titled Lena Fischer claims "Lena"
    in Alice's notes only: Bob's chats keep their own Lena, before and after."""
    if backend != "postgres":
        pytest.skip("several daemons share a PostgreSQL store")
    alice, bob = team("alice"), team("bob")
    with_notes(bob, {"chat.md": "# Chat\n\nLena: I went hiking today.\nLena's dog came.\n"})
    with_notes(
        alice,
        {
            "people/lf.md": "# Lena Fischer\n\nLena Fischer runs billing.\n",
            "daily.md": "# Daily\n\nLena: the invoices are out.\n",
        },
    )
    with_notes(bob, {"chat2.md": "# Chat\n\nLena: back home.\n"})
    assert "lena fischer" in keys_in(alice, "daily.md")
    for path in ("chat.md", "chat2.md"):
        assert "lena" in keys_in(bob, path)
        assert "lena fischer" not in keys_in(bob, path)


SECRETS = (
    "# Deploy\n\nDB_PASSWORD=hunter2\napi_key: sk-proj-abcdefghij0123456789XYZ\n"
    "password: CorrectHorseBattery\nThe secret = Swordfish99 for Lena.\n"
    "Use ghp_abcdefghijklmnopqrstuvwxyz0123456789AB with Maya Okafor.\n"
)


def test_a_note_holding_credentials_makes_no_entity_of_them(make_app: Any) -> None:
    """A workspace note's password or token is not a name (as a memory's is not); the names
    around it stay."""
    app = make_app(model=None)
    Path(app.cfg.workspace).mkdir(parents=True, exist_ok=True)
    write_synced(app, "deploy.md", SECRETS)
    keys = keys_in(app, "deploy.md")
    assert {"db_password", "api_key", "lena", "maya okafor"} <= keys
    for secret in ("hunter2", "sk-proj", "correcthorse", "swordfish", "ghp_"):
        assert not [k for k in keys if secret in k], secret


def test_the_guard_reads_only_flagged_lines_and_finds_what_masking_the_whole_note_does() -> None:
    texts = [
        SECRETS,
        SECRETS
        + "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n",
        "# Notes\n\nCaroline: the token budget is fine. Ravi: ok.\nSee https://a.example/x.\n",
    ]
    for text in texts:
        masked = mask_known(text)
        assert extract_note(text, "n.md") == extract_document(
            *parse_front_matter(masked), masked, "n.md", guard=False
        )
