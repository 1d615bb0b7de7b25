"""Issue 10, the write path: one validator for every change, stable ids, forget means forget,
a failed COMMIT, a full disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest

from memoryd.core.errors import DiskFull, InvalidInput, NotFound, Refused, StoreError, TooLarge
from memoryd.search.request import SearchRequest
from memoryd.serve import methods as api
from memoryd.store import SqliteStore
from memoryd.store.migrations import MIGRATIONS, migrate

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

AWS = "AKIAIOSFODNN7EXAMPLE"
GHP = "ghp_" + "a1B2" * 10
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def memory_count(app: Any) -> int:
    return app.stats(namespace="*")["memories"]


# --- one validator -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {"content": "lone \ud800 surrogate"},
        {"content": "nul \x00 byte"},
        {"content": "ok", "importance": 2**63},
        {"content": "ok", "confidence": float("nan")},
        {"content": "ok", "ttl": 1e15},
        {"content": "ok", "ttl": float("inf")},
        {"content": "ok", "expires_at": 1e18},
        {"content": "ok", "expires_at": "9999999-01-01"},
        {"content": "ok", "context": "ctx \udfff"},
        {"content": "ok", "source": "a\x00b"},
        {"content": "ok", "tags": ["ok", "\ud800"]},
        {"content": "ok", "triggers": ["ship \ud800 it"]},
        {"content": "ok", "namespace": "ns\ud800"},
        {"content": "ok", "tier": "norm\x00al"},
    ],
)
def test_add_refuses_bad_values_with_invalid_params(make_app: Any, params: dict) -> None:
    app = make_app(model=None)
    with pytest.raises(InvalidInput):
        call(app, "add", **params)
    assert memory_count(app) == 0


@pytest.mark.parametrize("field", ["context", "source", "tags", "triggers"])
def test_secrets_in_every_text_field_are_refused(make_app: Any, field: str) -> None:
    app = make_app(model=None)
    value: Any = {"context": f"key {AWS}", "source": GHP, "tags": [GHP], "triggers": [f"use {AWS}"]}
    with pytest.raises(Refused) as err:
        call(app, "add", content="harmless text", **{field: value[field]})
    assert field in err.value.message and AWS not in err.value.message
    assert GHP not in err.value.message
    assert memory_count(app) == 0
    mid = call(app, "add", content="harmless text")["id"]
    with pytest.raises(Refused):
        call(app, "update", id=mid, **{field: value[field]})


def test_bad_values_answer_32602_over_the_socket(daemon_factory: Any) -> None:
    from tests.conftest import rpc

    d = daemon_factory()
    mid = d.call("add", {"content": "the first memory"})["id"]
    for method, params in [
        ("add", {"content": "x\ud800"}),
        ("add", {"content": "ok", "importance": 2**63}),
        ("add", {"content": "ok", "ttl": 1e15}),
        ("add", {"content": "ok", "expires_at": 1e18}),
        ("delete", {"path": "a\x00b.md"}),
        ("reindex", {"path": "a\x00b.md"}),
        ("list", {"path": "x\ud800"}),
        ("get", {"id": 2**64}),
        ("list", {"offset": 2**63}),
        ("list", {"limit": 2**63}),
        ("list", {"min_importance": 2**63}),
        ("session_start", {"max_tokens": 2**63}),
        ("history", {"id": 2**63}),
        ("validate", {"id": 2**63, "useful": True}),
        ("used", {"id": -1}),
        ("update", {"id": mid, "context": "c\ud800"}),
        ("search", {"query": "lone \ud800"}),
        ("search", {"query": "ok", "tags": ["a\x00"]}),
        ("add", {"content": "ok", "\ud800": 1}),
        ("import", {"items": [{"content": "ok", "history": [{"field": "x\ud800"}]}]}),
        ("add", {"content": "ok", "ttl": AWS}),
    ]:
        resp = rpc(d.socket, method, params)
        assert resp["error"]["code"] == -32602, (method, params, resp)
        assert AWS not in resp["error"]["message"]
    assert d.call("ping")["pong"] is True


def test_namespace_change_onto_same_text_is_invalid_input(make_app: Any) -> None:
    app = make_app(model=None)
    a = call(app, "add", content="deploys on tuesday", namespace="one")["id"]
    call(app, "add", content="deploys on tuesday", namespace="two")
    with pytest.raises(InvalidInput, match="already has this content"):
        call(app, "update", id=a, namespace="two")
    assert call(app, "get", id=a)["namespace"] == "one"


# --- import ------------------------------------------------------------------------------------


def _item(content: str, **kw: Any) -> dict[str, Any]:
    return {"content": content, **kw}


@pytest.mark.parametrize(
    ("item", "error"),
    [
        (_item(PEM), Refused),
        (_item(f"token {GHP}"), Refused),
        (_item("nul \x00 inside"), InvalidInput),
        (_item("big context", context="x" * 900_000), TooLarge),
        (_item("far future", created_at=1e20), InvalidInput),
        (_item("counted", access_count=AWS), InvalidInput),
        (_item("counted", access_count=2**63), InvalidInput),
        (_item("secret ctx", context=f"aws {AWS}"), Refused),
        (_item("secret tag", tags=[GHP]), Refused),
        (_item("unknown", colour="red"), InvalidInput),
        (_item("id zero", id=0), InvalidInput),  # a huge id is renumbered: test_redteam
        ("not an object", InvalidInput),
    ],
)
def test_import_checks_each_item_as_add_does_and_is_atomic(
    make_app: Any, item: Any, error: type
) -> None:
    app = make_app(model=None)
    good = [_item(f"good memory number {i}") for i in range(5)]
    with pytest.raises(error) as err:
        call(app, "import", items=[*good, item, *good[:1]], first_line=101)
    assert err.value.message.startswith("line 106:")  # the file's line, not the batch's
    assert err.value.data["line"] == 106
    assert AWS not in err.value.message and GHP not in err.value.message
    assert memory_count(app) == 0  # all or nothing


def test_import_with_far_future_time_does_not_break_list(make_app: Any) -> None:
    app = make_app(model=None)
    with pytest.raises(InvalidInput):
        call(app, "import", items=[_item("x", created_at=1e20)])
    call(app, "add", content="still listable")
    assert call(app, "list")["total"] == 1


def test_rejected_secret_value_never_reaches_the_daemon_log(daemon_factory: Any) -> None:
    from tests.conftest import rpc

    d = daemon_factory()
    resp = rpc(d.socket, "import", {"items": [{"content": "c", "access_count": AWS}]})
    assert resp["error"]["code"] == -32602 and AWS not in json.dumps(resp)
    resp = rpc(d.socket, "add", {"content": f"the key is {GHP}", "allow_secrets": True})
    assert "result" in resp
    d.call("add", {"content": "the key is elsewhere", "context": "nothing secret"})
    assert AWS not in d.log() and GHP not in d.log()
    daily = "".join(p.read_text() for p in (d.workspace / "daily").glob("*.md"))
    assert "the key is" in daily and GHP not in daily and "[REDACTED:github_token]" in daily


# --- stable identity ---------------------------------------------------------------------------


def test_ids_are_never_reused(make_app: Any) -> None:
    app = make_app(model=None)
    first = call(app, "add", content="first memory")["id"]
    top = call(app, "add", content="second memory")["id"]
    call(app, "delete", id=top)
    again = call(app, "add", content="third memory")["id"]
    assert again > top > first
    ws = app.cfg.workspace
    (ws / "n.md").write_text("# N\n\nsome words\n")
    app.indexer.reconcile()
    chunk = app.store.read(lambda con: con.execute("SELECT max(id) FROM entries").fetchall())[0][0]
    (ws / "n.md").unlink()
    app.indexer.reconcile()
    assert call(app, "add", content="fourth memory")["id"] > chunk


@pytest.mark.sqlite_only("migrations of the SQLite file")
def test_m003_keeps_rows_triggers_and_fts_and_skips_used_ids(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    con = apsw.Connection(str(path))
    con.execute("PRAGMA foreign_keys = ON")
    for version, step in enumerate(MIGRATIONS[:2], start=1):
        step(con)
        con.execute(f"PRAGMA user_version = {version}")
    for i in (1, 2, 3):
        con.execute(
            "INSERT INTO entries(id, kind, content, content_hash, type, created_at, updated_at)"
            " VALUES (?, 'memory', ?, ?, 'fact', 0, 0)",
            (i, f"zebra memory {i}", f"h{i}"),
        )
    con.execute("INSERT INTO triggers(entry_id, phrase, norm) VALUES (2, 'Zoo', 'zoo')")
    con.execute("INSERT INTO access_log(ts, query, entry_id, rank) VALUES (0, 'q', 9, 1)")
    con.execute("DELETE FROM entries WHERE id = 3")
    con.close()
    store = SqliteStore(path)
    try:
        rows = store.read(lambda c: c.execute("SELECT count(*) FROM triggers").fetchall())
        assert rows[0][0] == 1
        hits = store.read(
            lambda c: c.execute(
                "SELECT rowid FROM entries_fts WHERE entries_fts MATCH 'zebra'"
            ).fetchall()
        )
        assert sorted(h[0] for h in hits) == [1, 2]
        new = store.run_write(
            lambda c: c.execute(
                "INSERT INTO entries(kind, content, content_hash, type, created_at, updated_at)"
                " VALUES ('memory', 'new zebra', 'h4', 'fact', 0, 0) RETURNING id"
            ).fetchall()
        )[0][0]
        assert new == 10  # above the access log's 9: no id ever seen is handed out again
        check = store.read(lambda c: c.execute("PRAGMA integrity_check").fetchall())
        assert check == [("ok",)]
    finally:
        store.close()


def test_get_by_path_and_section(make_app: Any) -> None:
    app = make_app(model=None)
    (app.cfg.workspace / "proj").mkdir(parents=True)
    (app.cfg.workspace / "proj" / "plan.md").write_text(
        "# Plan\n\nintro words\n\n## Risks\n\nthe bridge may fail\n\n## Budget\n\nten coins\n"
    )
    app.indexer.reconcile()
    note = call(app, "get", path="proj/plan.md")
    assert note["kind"] == "note" and "ten coins" in note["content"]
    assert [s["heading"] for s in note["sections"]] == ["Plan", "Risks", "Budget"]
    risks = call(app, "get", path="proj/plan.md", section="risks")
    assert "bridge" in risks["content"] and "coins" not in risks["content"]
    assert risks["start_line"] == 5
    with pytest.raises(NotFound, match="Budget"):
        call(app, "get", path="proj/plan.md", section="Nope")
    with pytest.raises(NotFound):
        call(app, "get", path="proj/none.md")
    with pytest.raises(InvalidInput):
        call(app, "get", path="proj/plan.md", id=1)


def test_used_get_and_validate_record_accesses(make_app: Any) -> None:
    app = make_app(model=None)
    mid = call(app, "add", content="the runbook lives in ops/")["id"]
    assert call(app, "used", id=mid)["access_count"] == 1
    call(app, "get", id=mid)
    call(app, "validate", id=mid, useful=True)
    assert app.memories.get(mid, record_access=False)["access_count"] == 3
    with pytest.raises(NotFound):
        call(app, "used", id=mid + 100)


# --- forget means forget -----------------------------------------------------------------------


def _daily(app: Any) -> str:
    return "".join(p.read_text() for p in (app.cfg.workspace / "daily").glob("*.md"))


@pytest.mark.sqlite_only("checkpoints copy the SQLite file (PgStore.backup_to refuses)")
def test_delete_removes_the_daily_log_line_and_names_older_copies(make_app: Any) -> None:
    app = make_app(model=None)
    keep = call(app, "add", content="the cafeteria opens at eight")["id"]
    gone = call(app, "add", content="the vault code is purple")["id"]
    (app.cfg.workspace / "daily" / "note.md").write_text("# mine\n\nmy own line\n")
    call(app, "checkpoint.create", name="before")
    assert "vault code" in _daily(app)
    res = call(app, "delete", id=gone)
    assert "vault code" not in _daily(app) and "cafeteria" in _daily(app)
    assert [c["name"] for c in res["still_in"]] == ["before"]
    assert res["still_in"][0]["kind"] == "checkpoint"
    hits = app.searcher.search(SearchRequest(query="vault", mode="keyword", record_access=False))[
        "hits"
    ]
    assert hits == []  # re-indexed at once: the line is not a chunk either
    res = call(app, "delete", tag="none-such")
    assert res["deleted"] == 0
    call(
        app,
        "update",
        id=keep,
        content=f"the cafeteria opens at nine, code {AWS}",
        allow_secrets=True,
    )
    text = _daily(app)
    assert "opens at nine" in text and AWS not in text and "eight" not in text
    assert "my own line" in text


def test_allow_secrets_writes_a_redacted_daily_log_line(make_app: Any) -> None:
    app = make_app(model=None)
    for mode in ("refuse", "warn", "off"):
        app.memories.secrets_mode = mode
        call(app, "add", content=f"{mode}: deploy key {GHP}", allow_secrets=True)
    assert GHP not in _daily(app) and _daily(app).count("[REDACTED:github_token]") == 3


def test_prune_and_namespace_delete_forget_log_lines(make_app: Any) -> None:
    app = make_app(model=None)
    call(app, "add", content="old approach to caching", tier="deprecated")
    call(app, "add", content="scratch note alpha", namespace="scratch")
    assert call(app, "prune")["pruned"] == 1
    assert call(app, "delete", namespace="scratch")["deleted"] == 1
    assert "old approach" not in _daily(app) and "alpha" not in _daily(app)


# --- the store under failure -------------------------------------------------------------------


@pytest.mark.sqlite_only("injects a failure into the SQLite writer's commit (apsw)")
def test_failed_commit_is_rolled_back_and_later_writes_work(make_app: Any) -> None:
    app = make_app(model=None)
    real = app.store._commit

    def broken(con: Any) -> None:
        raise apsw.IOError("injected: commit failed")

    app.store._commit = broken
    with pytest.raises(StoreError) as err:  # the client's store error, not an internal one
        app.memories.add("lost in a failed commit")
    assert "injected: commit failed" in err.value.message
    assert "nothing was written" in err.value.message
    app.store._commit = real
    mid = app.memories.add("written after the failure").id
    assert app.memories.get(mid)["content"] == "written after the failure"
    assert memory_count(app) == 1


def _fill_disk(app: Any) -> None:
    """SQLite's own SQLITE_FULL: the writer may not grow the file any more."""
    con = app.store._writer
    pages = con.execute("PRAGMA page_count").fetchall()[0][0]
    con.execute(f"PRAGMA max_page_count = {pages}")


@pytest.mark.sqlite_only("fills the SQLite file with PRAGMA max_page_count")
def test_disk_full_is_diskfull_and_reads_keep_working(make_app: Any) -> None:
    app = make_app(model=None)
    mid = call(app, "add", content="written before the disk filled")["id"]
    _fill_disk(app)
    with pytest.raises(DiskFull) as err:
        for i in range(2000):
            call(app, "add", content=f"filler memory {i} " + "words " * 200)
    assert err.value.code == -32013
    assert call(app, "get", id=mid)["content"] == "written before the disk filled"
    assert call(app, "list")["total"] >= 1
    app.store._writer.execute("PRAGMA max_page_count = 1073741823")
    call(app, "add", content="written after space came back")


@pytest.mark.sqlite_only("checkpoints copy the SQLite file (PgStore.backup_to refuses)")
def test_failed_checkpoint_leaves_no_tmp_and_startup_cleans_up(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    import memoryd.store.db as store_mod  # db.vacuum_into: every copy of the live file

    app = make_app(model=None)
    call(app, "add", content="something to copy")

    def no_space(*a: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_mod.os, "replace", no_space)
    with pytest.raises(DiskFull):
        call(app, "checkpoint.create", name="full")
    monkeypatch.undo()
    folder = app.cfg.data_dir / "checkpoints"
    assert list(folder.glob("*.tmp*")) == []
    (folder / "half.db.tmp").write_bytes(b"partial")
    (app.cfg.data_dir / "snapshots").mkdir(exist_ok=True)
    (app.cfg.data_dir / "snapshots" / "memoryd-x.db.tmp").write_bytes(b"partial")
    app2 = make_app(model=None)
    assert app2.cfg.data_dir == app.cfg.data_dir
    assert list(folder.glob("*.tmp*")) == []
    assert list((app.cfg.data_dir / "snapshots").glob("*.tmp")) == []


@pytest.mark.parametrize("name", ["abc\n", "a/b", "../x", "a b", "x\x00", "tab\t", "", "é"])
def test_checkpoint_names_refuse_control_chars_and_separators(make_app: Any, name: str) -> None:
    app = make_app(model=None)
    with pytest.raises(InvalidInput):
        call(app, "checkpoint.create", name=name)


# --- checkpoint restore ------------------------------------------------------------------------


def test_restore_refuses_empty_and_foreign_files(make_app: Any) -> None:
    app = make_app(model=None)
    call(app, "add", content="must survive a bad restore")
    folder = app.cfg.data_dir / "checkpoints"
    folder.mkdir(exist_ok=True)
    (folder / "empty.db").write_bytes(b"")
    (folder / "text.db").write_text("hello, not a database\n" * 100)
    other = apsw.Connection(str(folder / "foreign.db"))
    other.execute("CREATE TABLE t(x); INSERT INTO t VALUES (1); PRAGMA user_version = 2")
    other.close()
    for name in ("empty", "text", "foreign"):
        with pytest.raises(Refused, match="nothing was restored"):
            call(app, "checkpoint.restore", name=name)
    assert call(app, "list")["items"][0]["content"] == "must survive a bad restore"


@pytest.mark.sqlite_only("restores a SQLite checkpoint file")
def test_restore_migrates_an_older_checkpoint_keeps_a_safety_copy_and_ids(
    make_app: Any, tmp_path: Path
) -> None:
    app = make_app(model=None)
    folder = app.cfg.data_dir / "checkpoints"
    folder.mkdir(exist_ok=True)
    old = apsw.Connection(str(folder / "v2.db"))
    for version, step in enumerate(MIGRATIONS[:2], start=1):
        old.execute("BEGIN")
        step(old)
        old.execute(f"PRAGMA user_version = {version}; COMMIT")
    old.execute(
        "INSERT INTO entries(kind, content, content_hash, type, created_at, updated_at)"
        " VALUES ('memory', 'from the old days', 'h', 'fact', 0, 0)"
    )
    old.close()
    for i in range(5):
        last = call(app, "add", content=f"current memory {i}")["id"]
    res = call(app, "checkpoint.restore", name="v2")
    assert res["migrated"] is True and res["schema_version"] == 2
    assert [m["content"] for m in call(app, "list")["items"]] == ["from the old days"]
    assert (folder / f"{res['safety_copy']}.db").exists()
    assert call(app, "add", content="after the restore")["id"] > last
    back = call(app, "checkpoint.restore", name=res["safety_copy"])
    assert back["migrated"] is False
    assert call(app, "list")["total"] == 5


@pytest.mark.sqlite_only("migrations of the SQLite file")
def test_migration_backup_is_private(tmp_path: Path) -> None:
    from memoryd.store import db

    path = tmp_path / "m.db"
    con, _ = db.connect(path, writer=True)  # registers what later steps need (tokenizers)
    MIGRATIONS[0](con)
    con.execute("PRAGMA user_version = 1")
    migrate(con, path)
    con.close()
    (backup,) = tmp_path.glob("*.bak")
    assert backup.stat().st_mode & 0o777 == 0o600


def test_import_dry_run_checks_everything_and_stores_nothing(make_app: Any) -> None:
    app = make_app(model=None)
    call(app, "add", content="already here")
    items = [_item("already here"), _item("new one"), _item("new one")]
    res = call(app, "import", items=items, dry_run=True)
    assert res == {"imported": 1, "skipped_duplicates": 2, "vectors": 0, "dry_run": True}
    assert memory_count(app) == 1
    with pytest.raises(InvalidInput, match="line 3:"):
        call(app, "import", items=[*items[:2], _item("x", importance=99)], dry_run=True)


@pytest.mark.sqlite_only("checkpoints and snapshots copy the SQLite file")
def test_checkpoint_delete_forgets_the_copy(make_app: Any) -> None:
    app = make_app(model=None)
    mid = call(app, "add", content="the locker combination is 1234")["id"]
    call(app, "checkpoint.create", name="c1")
    app.jobs.run_now("snapshot")
    res = call(app, "delete", id=mid)
    kinds = {c["kind"]: c["name"] for c in res["still_in"]}
    assert set(kinds) == {"checkpoint", "snapshot"}
    for kind, name in kinds.items():
        call(app, "checkpoint.delete", name=name, kind=kind)
    assert call(app, "checkpoint.list")["checkpoints"] == []
    assert list((app.cfg.data_dir / "snapshots").glob("*.db")) == []
    with pytest.raises(NotFound):
        call(app, "checkpoint.delete", name="c1")
    with pytest.raises(InvalidInput):
        call(app, "checkpoint.delete", name="../memoryd")


def test_a_failing_near_duplicate_check_never_blocks_an_add(make_app: Any) -> None:
    app = make_app()
    app.model.start()
    assert app.model.wait_ready(10)
    app.store.vec_enabled = False  # as when sqlite-vec is missing: no knn, word overlap only
    call(app, "add", content="the staging database runs on port 5433")
    again = call(app, "add", content="the staging database runs on port 5433 now")
    assert again["near_duplicates"]

    def broken(text: str, ns: str) -> list:
        raise RuntimeError("vector search exploded")

    app.memories.near_duplicates = broken
    assert call(app, "add", content="stored anyway")["stored"] is True


def test_update_with_ttl_none_keeps_the_expiry(make_app: Any) -> None:
    app = make_app(model=None)
    mid = call(app, "add", content="expires later", ttl="7d")["id"]
    before = call(app, "get", id=mid)["expires_at"]
    assert call(app, "update", id=mid, ttl=None, importance=7)["expires_at"] == before
    assert call(app, "update", id=mid, expires_at=None)["expires_at"] is None


@pytest.mark.sqlite_only("reads the bytes of the SQLite file (FTS5 secure-delete)")
def test_a_deleted_memory_leaves_no_trace_in_the_database_file(make_app: Any) -> None:
    app = make_app(model=None)
    for i in range(30):
        call(app, "add", content=f"filler memory number {i} about gardening")
    word = "zqxjvorpalblade"
    mid = call(app, "add", content=f"the {word} is in the shed", tags=["tools"])["id"]
    call(app, "update", id=mid, content=f"the {word} moved to the attic")
    call(app, "used", id=mid)
    call(app, "delete", id=mid)
    app.store.checkpoint("TRUNCATE")
    data = b"".join(p.read_bytes() for p in app.cfg.data_dir.glob("memoryd.db*") if p.is_file())
    assert word.encode() not in data
    assert word not in _daily(app)


def test_history_keeps_no_credential_after_a_redaction(make_app: Any) -> None:
    app = make_app(model=None)
    mid = call(app, "add", content=f"deploy key {GHP}", allow_secrets=True)["id"]
    call(app, "update", id=mid, content="deploy key is in the vault")
    hist = call(app, "history", id=mid)["history"]
    assert GHP not in json.dumps(hist) and "[REDACTED:github_token]" in json.dumps(hist)


@pytest.mark.sqlite_only("inspects a SQLite checkpoint file (PostgreSQL: test_pg_transfer.py)")
def test_bad_restore_and_bad_checkpoint_name_over_the_socket(daemon_factory: Any) -> None:
    from tests.conftest import rpc

    d = daemon_factory()
    d.call("add", {"content": "survives a bad restore"})
    folder = Path(d.cfg["data_dir"]) / "checkpoints"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "empty.db").write_bytes(b"")
    resp = rpc(d.socket, "checkpoint.restore", {"name": "empty"})
    assert resp["error"]["code"] == -32006 and "not a memoryd database" in resp["error"]["message"]
    resp = rpc(d.socket, "checkpoint.create", {"name": "abc\n"})
    assert resp["error"]["code"] == -32602
    assert d.call("list")["items"][0]["content"] == "survives a bad restore"
    assert d.call("add", {"content": "and writes still work"})["stored"] is True


def test_a_time_stored_out_of_range_no_longer_breaks_list(make_app: Any) -> None:
    app = make_app(model=None)
    mid = call(app, "add", content="imported by an old memoryd")["id"]
    app.store.run_write(
        lambda con: con.execute("UPDATE entries SET created_at = 1e20 WHERE id = ?", (mid,))
    )
    assert call(app, "list")["items"][0]["created_at"] == "9999-12-31T23:59:59Z"
    assert call(app, "get", id=mid)["id"] == mid


@pytest.mark.sqlite_only("FTS5 secure-delete in the SQLite file")
def test_fts_secure_delete_survives_a_recreated_fts_table(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    store.run_write(lambda c: c.execute("DELETE FROM entries_fts_config WHERE k = 'secure-delete'"))
    store.close()
    store = SqliteStore(tmp_path / "s.db")
    try:
        rows = store.read(
            lambda c: c.execute(
                "SELECT v FROM entries_fts_config WHERE k = 'secure-delete'"
            ).fetchall()
        )
        assert rows == [(1,)]
    finally:
        store.close()


def test_delete_path_of_a_symlink_loop_is_invalid_input(make_app: Any) -> None:
    app = make_app(model=None)
    ws = app.cfg.workspace
    (ws / "self.md").symlink_to("self.md")
    (ws / "loop").symlink_to("loop")
    with pytest.raises(InvalidInput, match="cannot resolve"):
        call(app, "delete", path="loop/inner.md")  # a loop on the way
    with pytest.raises(InvalidInput, match="cannot resolve"):
        call(app, "reindex", path="self.md")
    # the looping link itself can be deleted: the link goes to the trash (test_redteam)
    assert call(app, "delete", path="self.md")["trash"].endswith("self.md")
    assert not (ws / "self.md").is_symlink()
