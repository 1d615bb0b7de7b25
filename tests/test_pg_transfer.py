"""Export/import and checkpoints with a PostgreSQL store: ids kept and the entries sequence moved
past them, all or nothing, dry runs; checkpoints refused with a pointer to pg_dump."""

from __future__ import annotations

from typing import Any

import pytest

from memoryd.core.errors import Refused
from memoryd.serve import methods as api
from memoryd.store import transfer as tstore


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def _exported(make_app: Any) -> tuple[list[dict[str, Any]], list[int]]:
    """Items exported from a SQLite App: three memories with history and an access log; the
    highest id was handed out to a memory deleted before the export."""
    app = make_app(model=None)
    ids = [
        call(app, "add", content=f"fact number {i}", triggers=[f"ask {i}"])["id"] for i in range(3)
    ]
    call(app, "update", id=ids[0], content="fact number zero")
    call(app, "search", query="fact")
    call(app, "delete", id=call(app, "add", content="gone")["id"])
    items = call(app, "export")["items"]
    app.close()
    return items, ids


def _pg_app(make_app: Any, pg_dsn: str) -> Any:
    return make_app(model=None, store={"backend": "postgres", "dsn": pg_dsn})


def test_import_keeps_ids_history_and_moves_the_sequence(make_app: Any, pg_dsn: str) -> None:
    items, ids = _exported(make_app)
    pg = _pg_app(make_app, pg_dsn)
    res = call(pg, "import", items=items)
    assert res["imported"] == 3 and res["renumbered"] == [] and sorted(res["ids"]) == ids
    back = {i["id"]: i for i in call(pg, "export")["items"]}
    for item in items:
        got = back[item["id"]]
        assert (got["content"], got["history"], got["access_log"], got["triggers"]) == (
            item["content"],
            item["history"],
            item["access_log"],
            item["triggers"],
        )
    assert call(pg, "add", content="new on postgres")["id"] > max(ids)
    # the same file again: every text is known, nothing is written twice
    again = call(pg, "import", items=items)
    assert again["imported"] == 0 and again["skipped_duplicates"] == 3


def test_import_is_all_or_nothing_and_dry_run_writes_nothing(
    make_app: Any, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    items, _ = _exported(make_app)
    pg = _pg_app(make_app, pg_dsn)
    dry = call(pg, "import", items=items, dry_run=True)
    assert dry["dry_run"] and dry["imported"] == 3
    assert call(pg, "export")["items"] == []

    real, calls = tstore.insert_memory, []

    def fail_third(con: Any, v: dict[str, Any], entry_id: int | None) -> int:
        calls.append(entry_id)
        if len(calls) == 3:
            raise RuntimeError("disk on fire")
        return real(con, v, entry_id)

    monkeypatch.setattr(tstore, "insert_memory", fail_third)
    with pytest.raises(RuntimeError):
        call(pg, "import", items=items)
    assert call(pg, "export")["items"] == []  # the two first inserts were rolled back
    monkeypatch.setattr(tstore, "insert_memory", real)
    assert call(pg, "import", items=items)["imported"] == 3


def test_an_id_held_by_another_workspace_is_renumbered(
    make_app: Any, pg_dsn: str, tmp_path: Any
) -> None:
    """Another daemon's notes are hidden by the `entries` view, their ids are not free."""
    items, _ = _exported(make_app)
    pg = _pg_app(make_app, pg_dsn)
    other = make_app(
        model=None,
        data_dir=str(tmp_path / "other-data"),
        workspace=str(tmp_path / "other-ws"),
        store={"backend": "postgres", "dsn": pg_dsn},
    )
    (tmp_path / "other-ws").mkdir(exist_ok=True)
    (tmp_path / "other-ws" / "n.md").write_text("# N\n\nanother machine's note\n")
    other.indexer.reconcile()
    taken = other.store.read(
        lambda con: con.execute("SELECT max(id) FROM entries WHERE kind = 'chunk'").fetchone()[0]
    )
    assert pg.store.read(lambda con: tstore.free(con, taken)) is False
    item = {**items[0], "id": taken}
    res = call(pg, "import", items=[item])
    assert res["imported"] == 1 and res["renumbered"][0]["from"] == taken


def test_checkpoints_are_refused_with_a_pointer_to_pg_dump(make_app: Any, pg_dsn: str) -> None:
    pg = _pg_app(make_app, pg_dsn)
    for method, params in (
        ("checkpoint.create", {"name": "c1"}),
        ("checkpoint.list", {}),
        ("checkpoint.restore", {"name": "c1"}),
    ):
        with pytest.raises(Refused, match="pg_dump") as err:
            call(pg, method, **params)
        assert err.value.code == -32006 and "docs/team.md" in err.value.message
    # a copy left in data_dir from the SQLite days can still be deleted
    left = pg.cfg.data_dir / "checkpoints" / "old.db"
    left.parent.mkdir(parents=True, exist_ok=True)
    left.write_bytes(b"x")
    assert call(pg, "checkpoint.delete", name="old") == {"deleted": "old", "kind": "checkpoint"}
    assert not left.exists()
