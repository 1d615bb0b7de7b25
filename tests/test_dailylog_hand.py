"""What a person does to the daily log files (walk stop 37, branch walkj12): the daemon's next
append, update and delete keep their text, whatever the file's last line, line ends and
encoding; an edited line survives an update; a delete reaches every copy of the line (a sync
tool's conflict copy, a log moved out of the log folder)."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import entities_caught_up, older_store

from memoryd.memory.dailylog import DailyLog
from memoryd.search.searcher import SearchRequest
from memoryd.serve import methods as api
from memoryd.text import decoding

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


class Settings:
    enabled = True
    folder = "daily"
    filename = "%Y-%m-%d.md"
    line_format = "- {time} {content}"
    header = "# Memories {date}"


WHEN = "2026-11-26T10:00:00Z"

# (name, the bytes a person's editor saved, the encoding, the line end the file uses)
SAVED = [
    ("no final line end", b"# Memories\n\nmy own thought", "utf-8", "\n"),
    ("LF", b"# Memories\n\nmy own thought\n", "utf-8", "\n"),
    ("CRLF", b"# Memories\r\n\r\nmy own thought\r\n", "utf-8", "\r\n"),
    ("CRLF, no final line end", b"# Memories\r\n\r\nmy own thought", "utf-8", "\r\n"),
    ("CR only", b"# Memories\r\rmy own thought\r", "utf-8", "\r"),
    ("UTF-8 BOM", b"\xef\xbb\xbf# Memories\n\nmy own thought", "utf-8", "\n"),
    ("Latin-1 bytes", b"# Memories\n\nmy own caf\xe9 thought\n", "utf-8", "\n"),
    (
        "UTF-16 LE (Notepad's Unicode)",
        b"\xff\xfe" + "# Memories\r\n\r\nmy own thought\r\n".encode("utf-16-le"),
        "utf-16-le",
        "\r\n",
    ),
    (
        "UTF-16 BE, no final line end",
        b"\xfe\xff" + "# Memories\n\nmy own thought".encode("utf-16-be"),
        "utf-16-be",
        "\n",
    ),
    ("UTF-32 LE", b"\xff\xfe\x00\x00" + "my own thought\n".encode("utf-32-le"), "utf-32-le", "\n"),
]


def log_file(tmp_path: Path, saved: bytes) -> tuple[DailyLog, Path]:
    log = DailyLog(tmp_path, Settings())
    path = log.path_for(log.when({"created_at": WHEN}))
    path.parent.mkdir(parents=True)
    path.write_bytes(saved)
    return log, path


def memory(entry_id: int, content: str) -> dict[str, Any]:
    return {"id": entry_id, "content": content, "created_at": WHEN, "type": "fact"}


@pytest.mark.parametrize(("name", "saved", "encoding", "eol"), SAVED, ids=[s[0] for s in SAVED])
def test_an_append_keeps_the_persons_text_and_a_delete_leaves_it_whole(
    tmp_path: Path, name: str, saved: bytes, encoding: str, eol: str
) -> None:
    log, path = log_file(tmp_path, saved)
    before, enc, _ = decoding.decode(saved)
    assert log.append(memory(7, "bananas are yellow")) == path
    after, enc_after, lossy = decoding.decode(path.read_bytes())
    assert (enc_after, lossy) == (enc, False), "the file keeps its encoding"
    assert after.startswith(before), "the person's text is as they saved it"
    added = after[len(before) :]
    sep = "" if before.endswith(("\n", "\r")) else eol
    line = log.render(memory(7, "bananas are yellow"), log.when(memory(7, "")))
    assert added == sep + line + eol, "the memory's line is a line of its own, with the file's end"
    # the index leaves the daemon's own line out, and only it
    indexed = log.preprocess("daily/2026-11-26.md", after)
    assert "bananas" not in indexed and "own" in indexed
    assert log.highest_id() == 7
    # forgetting the memory takes its line, and nothing of the person's text with it
    assert log.forget([memory(7, "bananas are yellow")]) == [path]
    text, enc_forgotten, _ = decoding.decode(path.read_bytes())
    assert enc_forgotten == enc
    assert text == before + sep
    assert path.read_bytes().startswith(saved[: len(saved) - 1])


@pytest.mark.parametrize(
    "saved", [b"", b"\xef\xbb\xbf", b"\xff\xfe"], ids=["empty", "utf-8 BOM", "utf-16 BOM"]
)
def test_an_empty_file_gets_the_header_first(tmp_path: Path, saved: bytes) -> None:
    log, path = log_file(tmp_path, saved)
    log.append(memory(3, "cherries are red"))
    text, _, _ = decoding.decode(path.read_bytes())
    assert text.startswith("# Memories 2026-11-26\n\n- ")
    assert text.count("\n") == 3


def test_an_edited_line_survives_an_update_and_goes_with_a_delete(tmp_path: Path) -> None:
    log, path = log_file(tmp_path, b"")
    log.append(memory(4, "standup is at nine"))
    path.write_text(path.read_text().replace("at nine", "at ten (moved by Ana)"))
    log.rewrite(memory(4, "standup is at half past nine"))
    lines = path.read_text().splitlines()
    assert "standup is at ten (moved by Ana)" in lines[2]  # the person's edit, kept
    assert "standup is at half past nine" in lines[3]  # the memory as it is now, under it
    log.rewrite(memory(4, "standup is at a quarter to ten"))  # the daemon's own line is replaced
    lines = path.read_text().splitlines()
    assert len(lines) == 4 and "a quarter to ten" in lines[3] and "Ana" in lines[2]
    log.forget([memory(4, "")])  # forget means forget: the edited line goes too
    assert path.read_text() == "# Memories 2026-11-26\n\n"


CONFLICT_COPIES = [
    "2026-11-26 (conflicted copy 2026-11-26).md",  # Dropbox
    "2026-11-26.sync-conflict-20261126-101500-ABCDEFG.md",  # Syncthing
    "2026-11-26 (1).md",  # Google Drive, Nextcloud
    "2026-11-26 2.md",  # iCloud
    "2026-11-26 - Copy.md",  # Windows Explorer
    "Copy of 2026-11-26.md",  # older Google Drive, LibreOffice
]


@pytest.mark.parametrize("name", CONFLICT_COPIES)
def test_a_delete_and_an_update_reach_a_conflict_copy_beside_the_log(
    tmp_path: Path, name: str
) -> None:
    log, path = log_file(tmp_path, b"")
    log.append(memory(5, "melons are big"))
    log.append(memory(6, "pears are soft"))
    log.append(memory(8, "plums are purple"))
    copy = path.with_name(name)
    copy.write_bytes(path.read_bytes())
    other = path.with_name("2026-11-25.md")  # another day's log, no copy: left as it is
    other.write_text("# Memories 2026-11-25\n")
    assert sorted(log.forget([memory(5, "")])) == sorted([path, copy])
    assert sorted(log.rewrite(memory(8, "plums are ripe"))) == sorted([path, copy])
    for p in (path, copy):
        text = p.read_text()
        assert "melons" not in text and "pears" in text and "plums are ripe" in text
    assert other.read_text() == "# Memories 2026-11-25\n"


# -- the daemon: the index equals the files, on both backends ---------------------------------


def today_log(app: Any) -> Path:
    return app.cfg.workspace / "daily" / f"{datetime.now().astimezone():%Y-%m-%d}.md"


def rpc(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def hits(app: Any, query: str) -> list[tuple[str, str | None]]:
    res = app.searcher.search(SearchRequest(query=query, limit=100, record_access=False))
    return sorted((h["kind"], h.get("path")) for h in res["hits"])


def test_the_index_follows_a_hand_edit_and_an_update(make_app: Any) -> None:
    app = make_app(model=None)
    rec = app.memories.add("the standup is at nine sharp")
    path = today_log(app)
    path.write_text(path.read_text().replace("nine sharp", "ten sharp, moved by Ana"))
    app.indexer.reconcile()
    app.memories.update(rec.id, {"tags": ["meetings"]})
    assert "ten sharp, moved by Ana" in path.read_text()
    app.indexer.reconcile()
    assert hits(app, "Ana") == [("chunk", path.relative_to(app.cfg.workspace).as_posix())]
    assert hits(app, '"nine sharp"') == [("memory", None)]  # the new line is the memory's own
    app.memories.delete(rec.id)
    assert "sharp" not in path.read_text()
    app.indexer.reconcile()
    assert hits(app, "sharp") == []


def test_a_markers_hash_on_a_line_indexed_as_text_is_no_entity(make_app: Any) -> None:
    """A log line indexed as text (its memory gone, or the line edited by hand) keeps its
    marker; the marker's hash names no identifier (`memoryctl entities` listed `de6be31d`)."""
    app = make_app(model=None)
    app.memories.add("the standup is at nine")
    path = today_log(app)
    with path.open("a") as f:
        f.write("- 10:00 [fact] Ana Lima moved the deploy to Friday <!-- m:99:de6be31d -->\n")
    app.indexer.reconcile()
    entities_caught_up(app)  # a note's entities are read after its indexing (entity_pending)
    assert hits(app, "Friday") == [("chunk", path.relative_to(app.cfg.workspace).as_posix())]
    keys = app.store.read(lambda con: [r[0] for r in con.execute("SELECT key FROM entities")])
    assert "ana lima" in keys and "de6be31d" not in keys, keys


def _move_out(log: Path, ws: Path) -> list[Path]:
    """`mv daily/DATE.md archive/`."""
    moved = ws / "archive" / log.name
    moved.parent.mkdir()
    os.rename(log, moved)
    return [moved]


def _move_out_renamed(log: Path, ws: Path) -> list[Path]:
    """Moved and renamed, two folders down."""
    moved = ws / "archive" / "2026" / "the day we planned.md"
    moved.parent.mkdir(parents=True)
    os.rename(log, moved)
    return [moved]


def _copy_out(log: Path, ws: Path) -> list[Path]:
    """`cp daily/DATE.md archive/`: the log stays."""
    copy = ws / "archive" / log.name
    copy.parent.mkdir()
    copy.write_bytes(log.read_bytes())
    return [log, copy]


def _move_to_top(log: Path, ws: Path) -> list[Path]:
    """To the top of the workspace, and the log folder removed."""
    moved = ws / log.name
    os.rename(log, moved)
    log.parent.rmdir()
    return [moved]


MOVES = {
    "moved out": _move_out,
    "moved out and renamed": _move_out_renamed,
    "copied out": _copy_out,
    "moved to the top, log folder gone": _move_to_top,
}


@pytest.mark.parametrize("move", list(MOVES))
def test_a_log_moved_out_of_the_log_folder_is_still_the_memories_log(
    make_app: Any, move: str
) -> None:
    """A log a person moved, renamed or copied elsewhere in the workspace still holds the
    memories' own lines: each memory is found once (as the memory, not again as the file's
    text), across a restart, and an update or a delete reaches the lines there as in the log."""
    app = make_app(model=None)
    melons = app.memories.add("melons are big and green")
    pears = app.memories.add("pears are soft and sweet")
    app.indexer.reconcile()
    ws = app.cfg.workspace
    files = MOVES[move](today_log(app), ws)
    app.indexer.reconcile()
    assert hits(app, "melons") == [("memory", None)]
    assert hits(app, "pears") == [("memory", None)]
    make_app.close(app)  # the rule holds from what the store keeps, after a restart
    app = make_app(model=None)
    app.indexer.reconcile()
    app.memories.delete(melons.id)
    app.memories.update(pears.id, {"content": "pears are ripe in September"})
    for path in files:
        text = path.read_text()
        assert "melons" not in text and "soft" not in text, (path, text)
        assert "pears are ripe in September" in text, (path, text)
    app.indexer.reconcile()
    assert hits(app, "melons") == []
    assert hits(app, "September") == [("memory", None)]
    # a person's line in the moved file is text there, as in the log
    with files[-1].open("a") as f:
        f.write("quinces need frost first\n")
    app.indexer.reconcile()
    rel = files[-1].relative_to(ws).as_posix()
    assert hits(app, "quinces") == [("chunk", rel)]
    assert hits(app, "September") == [("memory", None)]
    if move == "moved out":  # and back: the lines are the memories' own there too
        os.rename(files[0], today_log(app))
        app.indexer.reconcile()
        assert hits(app, "September") == [("memory", None)]


def test_an_upgraded_store_reads_a_moved_log_again_as_the_memories_log(
    make_app: Any, backend: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Schema m014 (SQLite) / v13 (PostgreSQL): a log moved out of the log folder, indexed as
    text by an older memoryd, is read again at the first reconcile: its memories are found
    once, and a delete reaches its lines."""
    store = older_store(monkeypatch, request, backend, "m014_log_marks", "_v13_log_marks")
    old = make_app(model=None, **store)
    melons = old.memories.add("melons are big and green")
    old.indexer.reconcile()
    moved = _move_out(today_log(old), old.cfg.workspace)[0]
    as_before = old.indexer.preprocess  # outside the log folder, an older memoryd read it as is
    old.indexer.preprocess = lambda rel, text: (
        as_before(rel, text) if old.dailylog.is_log_file(rel) else text
    )
    old.indexer.reconcile()
    assert hits(old, "melons") == [("chunk", "archive/" + moved.name), ("memory", None)]
    make_app.close(old)
    monkeypatch.undo()
    new = make_app(model=None, **store)  # the same store, migrated
    assert new.indexer.reconcile().indexed == 1  # the moved log, read again
    assert hits(new, "melons") == [("memory", None)]
    new.memories.delete(melons.id)
    assert "melons" not in moved.read_text()


@pytest.mark.sqlite_only("checkpoints copy the SQLite file")
@pytest.mark.parametrize("move", ["moved out", "moved to the top, log folder gone"])
def test_a_checkpoint_restore_takes_its_lines_from_a_log_moved_out_since(
    make_app: Any, move: str
) -> None:
    """A restore takes away the memories added since the checkpoint, and their lines, also
    from a log moved out of the log folder after the checkpoint was made (and with the log
    folder gone)."""
    app = make_app(model=None)
    app.memories.add("apples were stored before the checkpoint")
    app.indexer.reconcile()
    rpc(app, "checkpoint.create", name="first")
    app.memories.add("bananas were stored after the checkpoint")
    moved = MOVES[move](today_log(app), app.cfg.workspace)[0]
    app.indexer.reconcile()
    rpc(app, "checkpoint.restore", name="first")
    text = moved.read_text()
    assert "apples" in text and "bananas" not in text, text
    assert hits(app, "bananas") == [] and hits(app, "apples") == [("memory", None)]


def test_a_line_quoted_in_a_note_of_a_memory_gone_is_text(make_app: Any) -> None:
    """A marked line whose memory the store does not have is text wherever it is (the only
    copy of its text), and so is a marked line a person edited."""
    app = make_app(model=None)
    app.memories.add("apricots are orange")
    note = app.cfg.workspace / "notes" / "quoted.md"
    note.parent.mkdir()
    line = app.dailylog.render({"id": 999, "content": "figs are purple"}, datetime.now())
    note.write_text(f"# Quoted\n\n{line}\n")
    app.indexer.reconcile()
    assert hits(app, "figs") == [("chunk", "notes/quoted.md")]


def test_a_memorys_line_never_joins_a_persons_last_line(make_app: Any) -> None:
    app = make_app(model=None)
    app.memories.add("bananas are yellow")
    path = today_log(app)
    with path.open("a") as f:
        f.write("my own thought about kiwis")  # saved without a final line end
    cherries = app.memories.add("cherries are red")
    app.indexer.reconcile()
    assert hits(app, "cherries") == [("memory", None)]
    app.memories.delete(cherries.id)
    assert path.read_text().endswith("my own thought about kiwis\n")
    app.indexer.reconcile()
    assert hits(app, "kiwis") == [("chunk", path.relative_to(app.cfg.workspace).as_posix())]


def test_a_forgotten_memorys_line_brought_back_by_git_is_text_not_a_memory(make_app: Any) -> None:
    """`git checkout` of an older log brings back the line of a memory deleted since: the
    memory stays forgotten (no list, no memory hit), and the text the file shows is found."""
    app = make_app(model=None)
    app.memories.add("the quokka census is on monday")
    gone = app.memories.add("the wombat census is on tuesday")
    app.indexer.reconcile()
    path = today_log(app)
    older = path.read_bytes()
    app.memories.delete(gone.id)
    assert "wombat" not in path.read_text()
    app.indexer.reconcile()
    path.write_bytes(older)  # git checkout HEAD~1 -- daily/DATE.md
    app.indexer.reconcile()
    rel = path.relative_to(app.cfg.workspace).as_posix()
    assert hits(app, "wombat") == [("chunk", rel)]
    assert hits(app, "quokka") == [("memory", None)]  # a stored memory's line stays left out
    assert app.stats()["memories"] == 1  # the memory stays forgotten


@pytest.mark.parametrize("wanted", [41, 1], ids=["its id kept", "its id taken here"])
def test_an_import_makes_the_lines_it_names_the_memories_own(make_app: Any, wanted: int) -> None:
    """A new store (an export to be imported into it): the log's lines are the only copy of
    those memories and are found as text; once imported they are the memories' own again,
    found once. Also when the memory is renumbered: the new store's notes took its id (the
    log's own chunk is entry 1), and its lines name its new id."""
    app = make_app(model=None)
    item = {"id": wanted, "content": "the capybara census is on friday", "created_at": WHEN}
    log = app.dailylog
    path = log.path_for(log.when(item))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# Memories 2026-11-26\n\n" + log.render(item, log.when(item)) + "\n")
    app.indexer.reconcile()
    rel = path.relative_to(app.cfg.workspace).as_posix()
    assert hits(app, "capybara") == [("chunk", rel)]
    counts = app.memories.import_items([item])
    assert counts["imported"] == 1 and bool(counts["renumbered"]) == (wanted == 1), counts
    assert hits(app, "capybara") == [("memory", None)]
    new_id = counts["ids"][0]
    assert f"<!-- m:{new_id}:" in path.read_text()
    app.memories.delete(new_id)  # and the delete finds the line by its new id
    assert "capybara" not in path.read_text()


def test_memoryctl_end_to_end_a_notepad_log_keeps_its_form(daemon_factory: Any) -> None:
    """`memoryd run` and memoryctl: a log re-saved by Notepad (UTF-16, CRLF, no final line
    end) takes the next memory in its own form, and a delete leaves the person's text whole."""
    d = daemon_factory()
    out = d.ctl("add", "the otter census is on monday")
    assert out.returncode == 0, out.stderr
    log = d.workspace / "daily" / f"{datetime.now().astimezone():%Y-%m-%d}.md"
    text = log.read_text().replace("\n", "\r\n") + "Notes from Ana"
    log.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    out = d.ctl("add", "the beaver census is on friday")
    assert out.returncode == 0, out.stderr
    beaver = int(out.stdout.split()[-1])
    saved, encoding, lossy = decoding.decode(log.read_bytes())
    assert (encoding, lossy) == ("utf-16-le", False)
    assert saved.startswith(text + "\r\n- ") and saved.endswith("-->\r\n")
    assert d.ctl("delete", str(beaver)).returncode == 0
    assert decoding.decode(log.read_bytes())[0] == text + "\r\n"
