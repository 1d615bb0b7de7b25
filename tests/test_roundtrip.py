"""The data leaves and comes back (branch walko13): a store's export imported into a second
store beside the same notes gives the same answers, field by field (bench/roundtrip.py): stats,
every memory, search in each mode, every entity's page and related walk. Both backends, the
notes indexed before the import and after it (a second machine's vault synced before or after),
twice (an import is idempotent), and a bad file changes nothing."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import settle

from bench import roundtrip
from memoryd.core.errors import MemorydError
from memoryd.serve import methods as api

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

MODES = ("keyword", "vector", "hybrid")


def caller(app: Any) -> roundtrip.Call:
    return lambda method, params: api.lookup(method, params).fn(app, params)


def _write(ws: Path, notes: dict[str, str]) -> None:
    for rel, text in notes.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _source(make_app: Any, tmp_path: Path) -> Any:
    """A store holding memories added, changed, used and validated through the API (first:
    they have the lowest ids, and their daily log lines name them), imported memories with
    every field, then seeded notes."""
    app = make_app(workspace=str(tmp_path / "ws-a"), secrets={"mode": "off"})
    call = caller(app)
    first = call(
        "add",
        {
            "content": "Caroline Baker moved billing-svc to PostgreSQL 17",
            "tags": ["db"],
            "triggers": ["billing database"],
            "importance": 9,
            "source": "meeting",
            "context": "weekly sync",
            "ttl": "30d",
            "namespace": "work",
            "tier": "critical",
            "confidence": 0.8,
        },
    )["id"]
    second = call("add", {"content": "短期の記憶: 田中さんは金曜日に東京へ"})["id"]
    call("update", {"id": second, "tier": "constitutional", "tags": ["cjk"]})
    call("used", {"id": first})
    call("validate", {"id": second, "useful": True})
    call("import", {"items": roundtrip.seeded_memories(30, time.time())})
    _write(Path(app.cfg.workspace), roundtrip.seeded_notes(12))
    app.indexer.reconcile()
    settle(app)
    return app


def _copy_notes(src: Any, dst: Any) -> None:
    """The first machine's vault as a sync tool brings it (daily log included, times kept)."""
    shutil.copytree(src.cfg.workspace, dst.cfg.workspace, dirs_exist_ok=True)
    dst.indexer.reconcile()


@pytest.mark.parametrize("notes_first", [True, False], ids=["notes-first", "notes-after"])
def test_an_export_imported_beside_the_same_notes_answers_the_same(
    make_app: Any, new_store: Any, tmp_path: Path, notes_first: bool
) -> None:
    src = _source(make_app, tmp_path)
    before = roundtrip.answers(caller(src), modes=MODES)
    # 32 seeded, 4 of them expired: answers() runs the expiry job first, as an entity call would
    assert before["stats"]["memories"] == 28 and len(before["entities"]) > 10
    items = caller(src)("export", {"namespace": "*", "vectors": True})["items"]

    dst = make_app(
        workspace=str(tmp_path / "ws-b"),
        data_dir=str(tmp_path / "data-b"),
        store=new_store(),
        secrets={"mode": "off"},
    )
    Path(dst.cfg.workspace).mkdir(exist_ok=True)
    if notes_first:
        _copy_notes(src, dst)
    res = caller(dst)("import", {"items": items})
    # the notes indexed first took the memories' ids there: those are renumbered
    assert res["imported"] == len(items) and bool(res["renumbered"]) == notes_first
    if not notes_first:
        _copy_notes(src, dst)
    settle(dst)
    after = roundtrip.answers(caller(dst), modes=MODES, renumbered=res["renumbered"])
    assert roundtrip.differences(before, after) == []

    # the same file again: nothing is stored twice, no answer moves
    again = caller(dst)("import", {"items": items})
    assert again["imported"] == 0 and again["skipped_duplicates"] == len(items)
    after = roundtrip.answers(caller(dst), modes=MODES, renumbered=res["renumbered"])
    assert roundtrip.differences(before, after) == []


def test_a_bad_file_changes_no_answer(make_app: Any, tmp_path: Path) -> None:
    """A file with a bad item anywhere (here its last, as a half-written file ends) stores
    nothing: every answer is as it was, and the error names the item's line."""
    app = _source(make_app, tmp_path)
    before = roundtrip.answers(caller(app), modes=MODES)
    items: list[Any] = roundtrip.seeded_memories(5, time.time() + 10)
    items = [{**i, "content": "new " + i["content"]} for i in items] + [{"content": ""}]
    with pytest.raises(MemorydError, match="line 6: content"):
        caller(app)("import", {"items": items})
    assert roundtrip.differences(before, roundtrip.answers(caller(app), modes=MODES)) == []


def test_differences_names_the_field() -> None:
    a = {"entity:X": {"sources": [{"line": 8, "id": None}], "type": "person"}}
    b = {"entity:X": {"sources": [{"line": 9, "id": None}], "type": "person"}, "extra": 1}
    assert roundtrip.differences(a, b) == [
        "entity:X.sources[0].line: 8 != 9",
        "extra: 'missing' != 1",
    ]


@pytest.mark.sqlite_only("the store moved is a SQLite one; its copy is on PostgreSQL")
def test_a_store_moved_to_postgresql_answers_the_same(
    make_app: Any, tmp_path: Path, pg_dsn: str
) -> None:
    """`memoryd store migrate --to postgres` (docs/team.md, section 4), and back by export and
    import into a new SQLite store: every memory, entity
    page and related walk as it was. Search is compared as the set of hits it finds, all of
    them (their order and scores are each backend's keyword ranking: docs/team.md, section 8)."""
    from memoryd.store import pgmigrate

    src = _source(make_app, tmp_path)
    before = roundtrip.answers(caller(src), modes=MODES, search_limit=100)
    cfg = src.cfg
    make_app.close(src)
    pgmigrate.migrate(cfg, dsn=pg_dsn, say=lambda _msg: None)
    pg = make_app(
        workspace=str(cfg.workspace),
        data_dir=str(cfg.data_dir),
        store={"backend": "postgres", "dsn": pg_dsn},
        secrets={"mode": "off"},
    )
    settle(pg)
    after = roundtrip.answers(caller(pg), modes=MODES, search_limit=100)
    moved = dict(before)
    for key in [k for k in moved if k.startswith("search:")]:
        found = [roundtrip.hit_key(h) for h in moved.pop(key)]
        assert sorted(found) == sorted(roundtrip.hit_key(h) for h in after.pop(key)), key
    assert roundtrip.differences(moved, after) == []

    # and back (docs/team.md: an export imports into any store): a SQLite store of its own
    # beside a copy of the notes answers as the first one did, search included
    items = caller(pg)("export", {"namespace": "*", "vectors": True})["items"]
    back = make_app(
        workspace=str(tmp_path / "ws-back"),
        data_dir=str(tmp_path / "data-back"),
        secrets={"mode": "off"},
    )
    res = caller(back)("import", {"items": items})
    _copy_notes(pg, back)
    settle(back)
    again = roundtrip.answers(
        caller(back), modes=MODES, search_limit=100, renumbered=res["renumbered"]
    )
    assert roundtrip.differences(before, again) == []


@pytest.mark.sqlite_only("checkpoints copy the SQLite file (PostgreSQL: pg_dump, docs/team.md)")
def test_a_checkpoint_restored_answers_as_when_it_was_made(make_app: Any, tmp_path: Path) -> None:
    """docs/service.md, "Backups and restore": a checkpoint made, then memories added, changed
    and deleted, then the checkpoint restored: every answer is as when it was made."""
    app = _source(make_app, tmp_path)
    call = caller(app)
    before = roundtrip.answers(call, modes=MODES)
    call("checkpoint.create", {"name": "before"})
    added = call("add", {"content": "Caroline Baker left billing-svc for the ledger team"})["id"]
    call("update", {"id": added, "tags": ["moved"]})
    victim = next(k for k in before if k.startswith("memory:"))
    call("delete", {"id": before[victim]["id"]})
    assert roundtrip.differences(before, roundtrip.answers(call, modes=MODES))
    call("checkpoint.restore", {"name": "before"})
    settle(app)
    assert roundtrip.differences(before, roundtrip.answers(call, modes=MODES)) == []


def test_a_renumbered_memorys_log_line_names_its_new_id(
    make_app: Any, new_store: Any, tmp_path: Path
) -> None:
    """A memory whose id was taken in the store it is imported into gets a new one; its daily
    log line, brought along with the first machine's vault, named the old id: another memory
    here. It was indexed as text (the memory found twice), and that other memory's delete took
    it from the log. Now the line names the new id: the memory's own, and only its delete
    removes it."""
    src = make_app(workspace=str(tmp_path / "ws-a"), data_dir=str(tmp_path / "data-a"))
    alpha = caller(src)("add", {"content": "alpha memory from the laptop"})["id"]
    items = caller(src)("export", {})["items"]
    (log_a,) = (Path(src.cfg.workspace) / "daily").glob("*.md")

    dst = make_app(
        workspace=str(tmp_path / "ws-b"), data_dir=str(tmp_path / "data-b"), store=new_store()
    )
    gamma = caller(dst)("add", {"content": "gamma memory of the desktop"})["id"]
    assert gamma == alpha  # the id is taken here
    copied = Path(dst.cfg.workspace) / "daily" / "from-laptop.md"
    shutil.copyfile(log_a, copied)
    dst.indexer.reconcile()
    res = caller(dst)("import", {"items": items})
    (moved,) = res["renumbered"]
    assert moved["from"] == alpha and f"<!-- m:{moved['to']}:" in copied.read_text()
    hits = caller(dst)("search", {"query": "alpha laptop", "mode": "keyword"})["hits"]
    assert [(h["kind"], h["id"]) for h in hits] == [("memory", moved["to"])]
    caller(dst)("delete", {"id": gamma})
    assert "alpha memory from the laptop" in copied.read_text()
    caller(dst)("delete", {"id": moved["to"]})
    assert "alpha memory" not in copied.read_text()
