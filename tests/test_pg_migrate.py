"""`memoryd store migrate --to postgres`: a SQLite store copied into PostgreSQL with its ids,
history, notes and vectors, counts checked, all or nothing (tests/pgserver.py's server)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from memoryd.core.errors import AlreadyRunning, Refused
from memoryd.serve import methods as api
from memoryd.store import pgmigrate as storemigrate


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def _sqlite_store(make_app: Any, settle: Any, tag: str = "a", memories: bool = True) -> Any:
    """A SQLite App with notes (and links), memories with history, triggers, feedback, a tier,
    an access log and vectors (fake embedder); closed, its config returned."""
    app = make_app()
    ws = app.cfg.workspace
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "notes").mkdir(exist_ok=True)
    (ws / "notes" / f"deploy-{tag}.md").write_text(
        f"# Deploy {tag}\n\nThe rollout of {tag} uses blue green switching.\n\n"
        "## Rollback\n\nSee [[runbook]] for the steps.\n"
    )
    (ws / "runbook.md").write_text("# Runbook\n\nRestart the workers, then drain the queue.\n")
    app.indexer.reconcile()
    ids = []
    if memories:
        for i, text in enumerate(("the team uses postgres 16", "deploys happen on tuesdays")):
            r = call(app, "add", content=text, tags=[f"t{i}"], triggers=[f"phrase {i}"])
            ids.append(r["id"])
        call(app, "update", id=ids[0], content="the team uses postgres 17")
        call(app, "validate", id=ids[1], useful=True)
        call(app, "promote", id=ids[1], tier="important")
        call(app, "search", query="postgres")
        call(app, "delete", id=call(app, "add", content="to be deleted")["id"])
    settle(app)
    cfg = app.cfg
    app.close()
    return cfg, ids


def _pg_counts(dsn: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(dsn) as con:
        out = {}
        for t in ("all_entries", "all_documents", "history", "triggers", "access_log", "links"):
            exists = con.execute("SELECT to_regclass(%s)", [t]).fetchone()[0]
            out[t] = con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] if exists else 0
        return out


def test_copy_keeps_ids_history_notes_and_vectors(
    make_app: Any, pg_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from conftest import settle

    cfg, ids = _sqlite_store(make_app, settle)
    result = storemigrate.migrate(cfg, dsn=pg_dsn)
    src, dst = result["source"], result["target"]
    assert src["memories"] == 2 and src["documents"] == 3 and src["vectors"] > 0
    assert src["history"] > 0 and src["triggers"] == 2 and src["access_log"] > 0
    assert src["links"] == 1 and src["mentions"] > 0
    for key in (*storemigrate.CHECKED, "vectors"):
        assert dst[key] == src[key], key
    assert not dst["renumbered_notes"]
    import psycopg

    with psycopg.connect(pg_dsn) as con:  # the triggers counted the copied mentions
        counted = con.execute(
            "SELECT count(*) FROM entities e WHERE e.mentions ="
            " (SELECT count(*) FROM mentions m WHERE m.entity_id = e.id) AND e.mentions > 0"
        ).fetchone()
        assert counted == con.execute("SELECT count(*) FROM entities").fetchone()

    pg = make_app(store={"backend": "postgres", "dsn": pg_dsn})
    got = call(pg, "get", id=ids[1])
    assert got["tier"] == "important" and got["useful_count"] == 1
    assert call(pg, "get", id=ids[0])["content"] == "the team uses postgres 17"
    assert [h["field"] for h in call(pg, "history", id=ids[0])["history"]]
    assert call(pg, "match_triggers", prompt="phrase 1")["memories"][0]["id"] == ids[1]
    # nothing to embed again: the copied model is complete and holds every text
    pg.model.start()
    assert pg.model.wait_ready(10)
    pg.embedder.ensure_model()
    assert pg.embedder.counts()["pending"] == 0
    hits = call(pg, "search", query="blue green rollout", mode="hybrid")["hits"]
    assert hits and hits[0]["path"] == "notes/deploy-a.md"
    assert call(pg, "backlinks", path="runbook.md")["backlinks"]
    # ids the SQLite store handed out (the deleted memory's too) are not handed out again
    new = call(pg, "add", content="added on postgres")["id"]
    assert new > max(ids) + 1


def test_second_run_copies_nothing_and_conflicts_are_refused(
    make_app: Any, pg_dsn: str, tmp_path: Path
) -> None:
    from conftest import settle

    cfg, _ = _sqlite_store(make_app, settle)
    storemigrate.migrate(cfg, dsn=pg_dsn)
    before = _pg_counts(pg_dsn)
    again = storemigrate.migrate(cfg, dsn=pg_dsn)
    assert again["already"] and "nothing to do" in storemigrate.report_lines(again)[0]
    assert _pg_counts(pg_dsn) == before
    # another store whose memories have the same ids: refused, the target unchanged
    other, _ = _sqlite_store(
        lambda: make_app(data_dir=str(tmp_path / "d2"), workspace=str(tmp_path / "ws2")),
        settle,
        tag="b",
    )
    with pytest.raises(Refused, match=r"ids of memories here.*memoryctl export"):
        storemigrate.migrate(other, dsn=pg_dsn)
    assert _pg_counts(pg_dsn) == before


def test_a_second_workspace_without_memories_gets_new_note_ids(
    make_app: Any, pg_dsn: str, tmp_path: Path
) -> None:
    from conftest import settle

    first, _ = _sqlite_store(make_app, settle)
    storemigrate.migrate(first, dsn=pg_dsn)
    second, _ = _sqlite_store(
        lambda: make_app(data_dir=str(tmp_path / "d2"), workspace=str(tmp_path / "ws2")),
        settle,
        tag="b",
        memories=False,
    )
    result = storemigrate.migrate(second, dsn=pg_dsn)
    assert result["target"]["renumbered_notes"] == 1
    assert result["target"]["chunks"] == result["source"]["chunks"]
    pg = make_app(
        data_dir=str(tmp_path / "d2"),
        workspace=str(tmp_path / "ws2"),
        store={"backend": "postgres", "dsn": pg_dsn},
    )
    hits = call(pg, "search", query="blue green rollout", mode="keyword")["hits"]
    assert [h["path"] for h in hits if h["kind"] == "chunk"][:1] == ["notes/deploy-b.md"]
    assert call(pg, "backlinks", path="runbook.md")["backlinks"]


def test_notes_a_daemon_indexed_already_are_refused_or_replaced(make_app: Any, pg_dsn: str) -> None:
    from conftest import settle

    cfg, ids = _sqlite_store(make_app, settle)
    early = make_app(data_dir=str(cfg.data_dir), store={"backend": "postgres", "dsn": pg_dsn})
    early.indexer.reconcile()  # started on PostgreSQL before the copy: this workspace indexed
    early.close()
    with pytest.raises(Refused, match="--replace-notes"):
        storemigrate.migrate(cfg, dsn=pg_dsn)
    result = storemigrate.migrate(cfg, dsn=pg_dsn, replace_notes=True)
    assert result["target"]["chunks"] == result["source"]["chunks"]
    pg = make_app(data_dir=str(cfg.data_dir), store={"backend": "postgres", "dsn": pg_dsn})
    assert call(pg, "get", id=ids[1])["tier"] == "important"
    assert len(call(pg, "search", query="blue green rollout", mode="keyword")["hits"]) == 1


def test_notes_indexed_on_postgresql_holding_the_memories_ids_point_to_replace_notes(
    make_app: Any, pg_dsn: str
) -> None:
    """The workspace grew before its daemon moved to PostgreSQL: indexed there first, its notes
    took the ids of the SQLite store's memories. The refusal names --replace-notes (those ids
    are this workspace's own index), not export/import, and --replace-notes copies with the
    memories' ids kept."""
    from conftest import settle

    cfg, ids = _sqlite_store(make_app, settle)
    sections = "\n\n".join(f"## Part {i}\n\nStep {i} of the long guide." for i in range(40))
    (cfg.workspace / "guide.md").write_text(f"# Guide\n\n{sections}\n")
    early = make_app(data_dir=str(cfg.data_dir), store={"backend": "postgres", "dsn": pg_dsn})
    early.indexer.reconcile()
    early.close()
    import psycopg

    with psycopg.connect(pg_dsn) as con:  # the notes' chunks hold the memories' ids
        row = con.execute("SELECT count(*) FROM all_entries WHERE id = ANY(%s)", [ids]).fetchone()
        assert row is not None and row[0] == len(ids)
    with pytest.raises(Refused, match="--replace-notes") as refused:
        storemigrate.migrate(cfg, dsn=pg_dsn)
    assert "memoryctl export" not in str(refused.value)
    result = storemigrate.migrate(cfg, dsn=pg_dsn, replace_notes=True)
    assert result["target"]["memories"] == len(ids)
    pg = make_app(data_dir=str(cfg.data_dir), store={"backend": "postgres", "dsn": pg_dsn})
    assert call(pg, "get", id=ids[0])["content"] == "the team uses postgres 17"


def test_dry_run_and_a_count_mismatch_write_nothing(
    make_app: Any, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import settle

    from memoryd.store.pg import copy as pc

    cfg, _ = _sqlite_store(make_app, settle)
    dry = storemigrate.migrate(cfg, dsn=pg_dsn, dry_run=True)
    assert dry["dry_run"] and dry["target"]["memories"] == 2
    assert "nothing was written" in storemigrate.report_lines(dry)[-1]
    assert sum(_pg_counts(pg_dsn).values()) == 0

    real = pc.target_counts

    def short(*args: Any) -> dict[str, int]:
        out = real(*args)
        out["chunks"] -= 1
        return out

    monkeypatch.setattr(pc, "target_counts", short)
    with pytest.raises(storemigrate.CountMismatch, match=r"chunks: .* nothing was written"):
        storemigrate.migrate(cfg, dsn=pg_dsn)
    assert sum(_pg_counts(pg_dsn).values()) == 0
    monkeypatch.setattr(pc, "target_counts", real)
    assert storemigrate.migrate(cfg, dsn=pg_dsn)["target"]["memories"] == 2  # re-run works


def test_a_full_server_disk_is_disk_full_and_writes_nothing(make_app: Any) -> None:
    """The server's own SQLSTATE 53100 (raised by a trigger, as a full disk raises it) is
    -32013 saying what to do, as for every write without room (was -32012 "failed")."""
    import pgserver
    import psycopg
    from conftest import settle

    from memoryd.core.errors import DiskFull

    dsn = pgserver.fresh_dsn("full", migrated=True)
    try:
        with psycopg.connect(dsn, autocommit=True) as con:
            con.execute(
                "CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                "RAISE EXCEPTION 'could not extend file: No space left on device' "
                "USING ERRCODE = 'disk_full'; END $$; "
                "CREATE TRIGGER full_disk BEFORE INSERT ON all_entries "
                "FOR EACH ROW EXECUTE FUNCTION full_disk()"
            )
        cfg, _ = _sqlite_store(make_app, settle)
        with pytest.raises(DiskFull, match=r"server's disk is full.*nothing was written"):
            storemigrate.migrate(cfg, dsn=dsn)
        assert sum(_pg_counts(dsn).values()) == 0
        with psycopg.connect(dsn, autocommit=True) as con:
            con.execute("DROP TRIGGER full_disk ON all_entries; DROP FUNCTION full_disk()")
        assert storemigrate.migrate(cfg, dsn=dsn)["target"]["memories"] == 2  # room again
    finally:
        pgserver.release(dsn)


def test_refused_while_a_daemon_holds_the_store(make_app: Any, pg_dsn: str) -> None:
    from conftest import settle

    from memoryd.core.fsutil import acquire_lock

    cfg, _ = _sqlite_store(make_app, settle)
    fd = acquire_lock(cfg.lock_path)
    try:
        with pytest.raises(AlreadyRunning, match="stop it first"):
            storemigrate.migrate(cfg, dsn=pg_dsn)
    finally:
        os.close(fd)
    assert sum(_pg_counts(pg_dsn).values()) == 0


def test_refused_while_a_daemon_on_postgresql_uses_the_workspace_id(
    make_app: Any, pg_dsn: str
) -> None:
    """A daemon on PostgreSQL with this workspace id (its lock, store/pg/claim.py) reads the
    index the copy writes under that id, and --replace-notes removes: refused, nothing
    written; copied once it stops."""
    import psycopg
    from conftest import settle

    from memoryd.store.backend import workspace_id
    from memoryd.store.pg import claim

    cfg, _ = _sqlite_store(make_app, settle)
    early = make_app(data_dir=str(cfg.data_dir), store={"backend": "postgres", "dsn": pg_dsn})
    early.indexer.reconcile()  # its notes, and the workspaces table, on PostgreSQL
    early.close()
    before = _pg_counts(pg_dsn)
    workspace = workspace_id(storemigrate.target_config(cfg, pg_dsn))
    with psycopg.connect(pg_dsn, autocommit=True) as daemon:
        assert claim.take(daemon, workspace)
        for replace in (False, True):
            with pytest.raises(AlreadyRunning, match="another memoryd uses workspace id"):
                storemigrate.migrate(cfg, dsn=pg_dsn, replace_notes=replace)
        assert _pg_counts(pg_dsn) == before
    result = storemigrate.migrate(cfg, dsn=pg_dsn, replace_notes=True)
    assert result["target"]["chunks"] == result["source"]["chunks"]


def test_cli_prints_both_counts(
    make_app: Any, pg_dsn: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from conftest import settle

    from memoryd.cli import main
    from memoryd.core.config import to_toml

    cfg, _ = _sqlite_store(make_app, settle)
    path = tmp_path / "config.toml"
    path.write_text(to_toml(cfg))
    assert (
        main(["store", "migrate", "--to", "postgres", "--dsn", pg_dsn, "--config", str(path)]) == 0
    )
    out = capsys.readouterr()
    assert "memories" in out.out and "the counts match" in out.out
    assert "copying" in out.err
    bad = "postgresql://u:secret@localhost/db"
    assert main(["store", "migrate", "--to", "postgres", "--dsn", bad, "--config", str(path)]) == 2
    assert "holds a password" in capsys.readouterr().err


# -- docs/team.md's SQL, run for real --------------------------------------------------------

DOC = Path(__file__).resolve().parent.parent / "docs" / "team.md"


def team_sql(marker: str, name: str) -> list[str]:
    """The statements of the ```sql block after `<!-- sql:MARKER` in docs/team.md, with the
    role and database names `memoryd` / `memoryd_daemon` made unique for this test."""
    import re

    text = DOC.read_text(encoding="utf-8")
    at = text.index(f"<!-- sql:{marker}")
    block = text[text.index("```sql\n", at) + 7 : text.index("```", text.index("```sql\n", at) + 7)]
    block = re.sub(r"\bmemoryd_daemon\b", f"{name}_daemon", block)
    block = re.sub(r"\bmemoryd\b", name, block)
    return [s.strip() for s in block.split(";") if s.strip()]


@pytest.fixture
def team_db() -> Any:
    """A database and roles made by docs/team.md's SQL; dropped (roles too) afterwards."""
    import pgserver
    import psycopg
    from psycopg.conninfo import make_conninfo

    admin = pgserver.server_uri()
    name = f"memoryd_g{os.getpid()}_{next(_names)}"

    def dsn(user: str | None = None) -> str:
        kw = {"dbname": name, "user": user} if user else {"dbname": name}
        return make_conninfo(admin, **kw).replace("password=''", "").strip()

    try:
        yield name, dsn
    finally:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            for role in (f"{name}_daemon", name):
                con.execute(f'DROP ROLE IF EXISTS "{role}"')


_names = iter(range(10**6))


def test_team_sql_split_roles_run_memoryd(make_app: Any, team_db: Any, tmp_path: Path) -> None:
    """docs/team.md: the owner set-up lets `memoryd store migrate` create the schema as a plain
    (non-superuser) owner; the split set-up's daemon role, with exactly its grants, runs an App:
    reads, adds, imports with a kept id, embeds, indexes notes, deletes."""
    import pgserver
    import psycopg
    from conftest import settle

    name, dsn = team_db
    admin = pgserver.server_uri()
    with psycopg.connect(admin, autocommit=True) as con:
        for stmt in team_sql("server", name):
            con.execute(stmt)
    with psycopg.connect(dsn(), autocommit=True) as con:  # superuser, in the new database
        for stmt in team_sql("database", name):
            con.execute(stmt)
        assert not con.execute(
            "SELECT rolsuper FROM pg_roles WHERE rolname = %s", [name]
        ).fetchone()[0]

    cfg, ids = _sqlite_store(make_app, settle)
    result = storemigrate.migrate(cfg, dsn=dsn(name))  # as the owner
    assert result["target"]["memories"] == 2

    with psycopg.connect(dsn(), autocommit=True) as con:
        for stmt in team_sql("split", name):
            con.execute(stmt)
    daemon = dsn(f"{name}_daemon")
    with (
        psycopg.connect(daemon, autocommit=True) as con,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        con.execute("CREATE TABLE intruder(x int)")  # the role really is restricted

    app = make_app(data_dir=str(cfg.data_dir), store={"backend": "postgres", "dsn": daemon})
    try:
        assert call(app, "get", id=ids[0])["content"] == "the team uses postgres 17"
        added = call(app, "add", content="added by the daemon role")["id"]
        assert added > max(ids)
        item = {**call(app, "export")["items"][0], "id": added + 100, "content": "imported"}
        item.pop("content_hash", None)
        res = call(app, "import", items=[item])
        assert res["ids"] == [added + 100]  # kept id: the sequence moved past it (setval)
        assert call(app, "add", content="after the import")["id"] > added + 100
        (cfg.workspace / "new.md").write_text("# New\n\nwritten after the move to postgres\n")
        app.indexer.reconcile()
        settle(app)  # the fake model's vector table exists (the owner's copy): no CREATE
        hits = call(app, "search", query="written after the move", mode="hybrid")["hits"]
        assert hits and hits[0]["path"] == "new.md"
        call(app, "delete", id=added)
        assert call(app, "status")["db_bytes"] > 0
    finally:
        app.close()


def test_an_older_sqlite_store_is_copied_and_left_as_it_was(
    make_app: Any, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/team.md: "The SQLite file is left as it was". A store of an earlier schema version
    (here before m008) was upgraded in place by the copy; it is now read from an upgraded copy,
    which goes afterwards."""
    import hashlib

    from conftest import migrations_before, settle

    from memoryd.store import migrations

    migrations_before(monkeypatch, migrations, migrations.m008_note_text)
    app = make_app(dailylog={"enabled": False})  # memories only: today's indexer needs m008
    ids = [call(app, "add", content=t)["id"] for t in ("postgres 17 it is", "deploy on tuesdays")]
    settle(app)
    cfg = app.cfg
    app.close()
    monkeypatch.undo()
    before = hashlib.sha256(cfg.db_path.read_bytes()).hexdigest()
    said: list[str] = []
    result = storemigrate.migrate(cfg, dsn=pg_dsn, say=said.append)
    assert result["target"]["memories"] == len(ids)
    assert result["target"]["vectors"] == result["source"]["vectors"] > 0
    assert hashlib.sha256(cfg.db_path.read_bytes()).hexdigest() == before
    assert any("has schema version 7" in line for line in said), said
    assert not [p.name for p in cfg.data_dir.iterdir() if ".migrate-" in p.name or ".bak" in p.name]


def test_notes_whose_entities_are_pending_are_copied_and_read_on_postgresql(
    make_app: Any, pg_dsn: str
) -> None:
    """The entity stage's queue (store/entitystage.py) goes with the notes: the daemon on
    PostgreSQL reads their entities, in the order they were indexed."""
    app = make_app(model=None)
    ws = app.cfg.workspace
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "lf.md").write_text("---\naliases: [Caz]\n---\n# Lena Fischer\n\nShe runs billing.\n")
    (ws / "daily.md").write_text("# Daily\n\nCaz sent the invoices.\n")
    app.indexer.reconcile()
    assert app.status()["entities"]["pending"] == 2
    cfg = app.cfg
    app.close()
    result = storemigrate.migrate(cfg, dsn=pg_dsn)
    assert result["target"]["documents"] == 2
    pg = make_app(model=None, store={"backend": "postgres", "dsn": pg_dsn})
    assert pg.status()["entities"]["pending"] == 2
    page = call(pg, "entity", name="Caz")
    assert page["name"] == "Lena Fischer" and page["mentions"] >= 2
    assert "entities_pending" not in page
    assert pg.status()["entities"]["pending"] == 0
