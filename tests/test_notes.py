"""Issue 13.2: whole notes through the API (memoryd/notes/notes.py and the note.* methods)."""

from __future__ import annotations

import os
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import rpc, wait_for

from memoryd.core import swap
from memoryd.core.errors import Conflict, DiskFull, InvalidInput, NotFound, Refused, TooLarge
from memoryd.notes.notes import normalize, sha256_bytes
from memoryd.search.searcher import SearchRequest
from memoryd.serve import methods as api

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def hits(app: Any, query: str) -> list[str]:
    res = app.searcher.search(
        SearchRequest(query=query, limit=20, record_access=False, mode="keyword")
    )
    return [h.get("path") for h in res["hits"]]


def call(app: Any, name: str, **params: Any) -> Any:
    return api.lookup(name, params).fn(app, params)


# --- paths -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        "../outside.md",
        "notes/../../outside.md",
        "a/../../b.md",
        "/etc/passwd.md",
        "~/x.md",
        "C:\\x.md",
        "",
        "   ",
        ".",
        "ok\x00.md",
        "line\nbreak.md",
        "c1\x85control.md",
        "invoice\u202egpj.md",
        "isolate\u2067x\u2069.md",
        None,
        42,
    ],
)
def test_paths_that_escape_or_are_not_paths_are_refused(make_app: Any, bad: Any) -> None:
    app = make_app(model=None)
    with pytest.raises(InvalidInput):
        app.notes.write(bad, "x")
    with pytest.raises(InvalidInput):
        app.notes.read(bad)
    outside = app.cfg.workspace.parent
    assert not (outside / "outside.md").exists() and not (outside / "b.md").exists()


def test_normalize_cleans_harmless_forms() -> None:
    assert normalize("./a//b/./c.md") == "a/b/c.md"
    assert normalize("a\\b.md") == "a/b.md"


@pytest.mark.parametrize("bad", ["notes/x.txt", "notes/x", ".obsidian/x.md", "a/.hidden/x.md"])
def test_targets_the_indexer_would_not_index_are_refused(make_app: Any, bad: str) -> None:
    app = make_app(model=None)
    with pytest.raises(InvalidInput, match="not a note memoryd indexes"):
        app.notes.write(bad, "x")


def test_excluded_globs_are_refused(make_app: Any) -> None:
    app = make_app(model=None, indexer={"exclude": ["private/**"]})
    with pytest.raises(InvalidInput):
        app.notes.write("private/x.md", "x")


def test_symlinks_out_of_the_workspace_are_refused(make_app: Any, tmp_path: Path) -> None:
    app = make_app(model=None)
    ws = app.cfg.workspace
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("outside secret\n")
    (ws / "linkdir").symlink_to(outside, target_is_directory=True)
    (ws / "link.md").symlink_to(outside / "secret.md")
    (ws / "dangling.md").symlink_to(outside / "new.md")
    for path in ("linkdir/secret.md", "linkdir/new.md", "link.md", "dangling.md"):
        with pytest.raises(InvalidInput, match="outside the workspace"):
            app.notes.read(path)
        with pytest.raises(InvalidInput, match="outside the workspace"):
            app.notes.write(path, "overwritten")
        with pytest.raises(InvalidInput, match="outside the workspace"):
            app.notes.append(path, "more")
    with pytest.raises(InvalidInput, match="outside the workspace"):
        app.notes.write("linkdir/sub/new.md", "x")
    with pytest.raises(InvalidInput, match="outside the workspace"):
        app.notes.move("link.md", "moved.md")
    assert (outside / "secret.md").read_text() == "outside secret\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]


def test_inner_symlink_can_be_read_but_not_written_through(make_app: Any) -> None:
    app = make_app(model=None)
    ws = app.cfg.workspace
    (ws / "real.md").write_text("# Real\nthe real text\n")
    (ws / "alias.md").symlink_to(ws / "real.md")
    assert app.notes.read("alias.md")["content"] == "# Real\nthe real text\n"
    with pytest.raises(Refused, match="symlink"):
        app.notes.write("alias.md", "x")
    assert (ws / "alias.md").is_symlink()


# --- write / read ------------------------------------------------------------------------------


def test_write_then_read_round_trip_keeps_front_matter_and_is_searchable(make_app: Any) -> None:
    app = make_app(model=None)
    text = "---\ntitle: Llama care\ntags: [animals]\n---\n# Feeding\nLlamas eat hay.\n"
    out = app.notes.write("zoo/llama.md", text)
    # searchable as soon as write() returns (indexed in the call, nothing to wait for); the
    # "within 1 s" target is `python -m bench targets`
    assert hits(app, "llamas hay") == ["zoo/llama.md"]
    assert out == {"path": "zoo/llama.md", "sha256": sha256_bytes(text.encode()), "created": True}
    got = app.notes.read("zoo/llama.md")
    assert got["content"] == text
    assert got["sha256"] == out["sha256"] and got["size"] == len(text.encode())
    assert got["mtime"].endswith("Z")
    assert (app.cfg.workspace / "zoo" / "llama.md").read_text() == text
    listed = app.notes.list()
    assert listed["total"] == 1
    assert listed["items"][0]["title"] == "Llama care"
    assert listed["items"][0]["tags"] == ["animals"]
    # the watcher's later look finds the file unchanged: nothing is indexed twice
    before = app.indexer.totals.indexed
    app.indexer.sync_paths([app.cfg.workspace / "zoo" / "llama.md"])
    assert app.indexer.totals.indexed == before


def test_the_watchers_later_event_finds_the_written_note_unchanged(make_app: Any) -> None:
    app = make_app(model=None)
    app.start(jobs=False)
    wait_for(app.ready.is_set)
    indexed, unchanged = app.indexer.totals.indexed, app.indexer.totals.unchanged
    app.notes.write("flat.md", "# Flat\nan ibex on a ledge\n")
    assert app.indexer.totals.indexed == indexed + 1  # indexed by the write itself
    wait_for(lambda: app.indexer.totals.unchanged > unchanged)  # the watcher's turn
    assert app.indexer.totals.indexed == indexed + 1
    assert hits(app, "ibex") == ["flat.md"]


def test_read_missing_is_not_found(make_app: Any) -> None:
    app = make_app(model=None)
    with pytest.raises(NotFound):
        app.notes.read("nope.md")


def test_stale_sha_is_a_conflict_and_writes_nothing(make_app: Any) -> None:
    app = make_app(model=None)
    first = app.notes.write("n.md", "version one\n")
    second = app.notes.write("n.md", "version two\n", expected_sha256=first["sha256"])
    assert second["created"] is False
    with pytest.raises(Conflict) as exc:
        app.notes.write("n.md", "version three\n", expected_sha256=first["sha256"])
    assert exc.value.code == -32009
    assert exc.value.data == {"path": "n.md", "current_sha256": second["sha256"]}
    with pytest.raises(Conflict):
        app.notes.append("n.md", "more\n", expected_sha256=first["sha256"])
    with pytest.raises(Conflict):
        app.notes.move("n.md", "m.md", expected_sha256=first["sha256"])
    assert (app.cfg.workspace / "n.md").read_text() == "version two\n"
    # "" = create only
    with pytest.raises(Conflict, match="already exists"):
        app.notes.write("n.md", "x", expected_sha256="")
    assert app.notes.write("fresh.md", "x", expected_sha256="")["created"] is True
    with pytest.raises(Conflict, match="no longer exists"):
        app.notes.write("gone.md", "x", expected_sha256=first["sha256"])
    with pytest.raises(InvalidInput, match="expected_sha256"):
        app.notes.write("n.md", "x", expected_sha256="abc")


def test_two_writers_with_the_same_sha_one_wins(make_app: Any) -> None:
    app = make_app(model=None)
    base = app.notes.write("race.md", "base\n")["sha256"]
    results: list[str] = []

    def writer(n: int) -> None:
        try:
            app.notes.write("race.md", f"writer {n}\n", expected_sha256=base)
            results.append("ok")
        except Conflict:
            results.append("conflict")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["conflict"] * 7 + ["ok"]


def test_size_limit_from_config(make_app: Any) -> None:
    app = make_app(model=None, notes={"max_bytes": 100})
    app.notes.write("small.md", "x" * 100)
    with pytest.raises(TooLarge, match=r"notes\.max_bytes"):
        app.notes.write("big.md", "x" * 101)
    assert not (app.cfg.workspace / "big.md").exists()
    with pytest.raises(TooLarge):
        app.notes.append("small.md", "more")
    assert (app.cfg.workspace / "small.md").read_text() == "x" * 100
    (app.cfg.workspace / "huge.md").write_text("y" * 500)
    with pytest.raises(TooLarge):
        app.notes.read("huge.md")


def test_file_system_failures_are_refusals_not_internal_errors(make_app: Any) -> None:
    app = make_app(model=None)
    with pytest.raises(Refused, match="File name too long"):
        app.notes.write("n" * 300 + ".md", "x")
    app.notes.write("file.md", "x")
    with pytest.raises(InvalidInput, match="is a file, not a folder"):
        app.notes.write("file.md/inner.md", "x")


def test_content_must_be_text(make_app: Any) -> None:
    app = make_app(model=None)
    for bad in (None, 3, ["a"], "nul\x00byte"):
        with pytest.raises(InvalidInput):
            app.notes.write("x.md", bad)


# --- atomicity ---------------------------------------------------------------------------------


def test_a_failed_write_leaves_the_old_note_and_no_temp_file(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(model=None)
    app.notes.write("keep.md", "the old text\n")

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(DiskFull, match="No space left on device"):  # as the store's full disk
        app.notes.write("keep.md", "the new text\n")
    monkeypatch.undo()
    assert (app.cfg.workspace / "keep.md").read_text() == "the old text\n"
    assert sorted(p.name for p in app.cfg.workspace.iterdir()) == ["keep.md"]


def test_writes_go_through_a_temp_file_and_a_rename(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(model=None)
    app.notes.write("n.md", "old\n")
    (app.cfg.workspace / "n.md").chmod(0o640)
    seen: list[tuple[str, str, str]] = []

    def spy() -> None:
        # at the moment of the swap the note is still whole and old; the temp is whole and new
        folder = app.cfg.workspace
        [tmp] = [p for p in folder.iterdir() if p.name.endswith(".tmp")]
        seen.append(((folder / "n.md").read_text(), tmp.read_text(), tmp.name))

    monkeypatch.setattr(swap, "before_swap", spy)
    app.notes.write("n.md", "new\n")
    assert seen[0][:2] == ("old\n", "new\n")
    assert seen[0][2].startswith(".n.md.") and seen[0][2].endswith(".tmp")
    assert (app.cfg.workspace / "n.md").stat().st_mode & 0o777 == 0o640  # mode kept


def _edit_during_first_fsync(monkeypatch: pytest.MonkeyPatch, path: Path, text: str) -> None:
    """Simulate an editor (or the daily log) changing the note while a change is in flight."""
    real_fsync = os.fsync
    done: list[bool] = []

    def fsync(fd: int) -> None:
        real_fsync(fd)
        if not done:
            done.append(True)
            with open(path, "a") as f:
                f.write(text)

    monkeypatch.setattr(os, "fsync", fsync)


def test_an_edit_racing_an_append_is_kept(make_app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(model=None)
    app.notes.write("day.md", "# Day\n")
    _edit_during_first_fsync(monkeypatch, app.cfg.workspace / "day.md", "- the daemon's line\n")
    app.notes.append("day.md", "- the agent's line")
    monkeypatch.undo()
    assert (app.cfg.workspace / "day.md").read_text() == (
        "# Day\n- the daemon's line\n- the agent's line\n"
    )


def test_an_edit_racing_a_guarded_write_is_a_conflict(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(model=None)
    sha = app.notes.write("n.md", "v1\n")["sha256"]
    _edit_during_first_fsync(monkeypatch, app.cfg.workspace / "n.md", "typed by a person\n")
    with pytest.raises(Conflict, match="changed while it was being written"):
        app.notes.write("n.md", "v2 from the agent\n", expected_sha256=sha)
    monkeypatch.undo()
    assert (app.cfg.workspace / "n.md").read_text() == "v1\ntyped by a person\n"
    assert sorted(p.name for p in app.cfg.workspace.iterdir()) == ["n.md"]  # no temp left


# --- append / move / list / recent ------------------------------------------------------------


def test_append_adds_a_line_and_keeps_front_matter(make_app: Any) -> None:
    app = make_app(model=None)
    app.notes.write("log.md", "---\ntags: [journal]\n---\nfirst line")
    out = app.notes.append("log.md", "a capybara appeared")
    text = (app.cfg.workspace / "log.md").read_text()
    assert text == "---\ntags: [journal]\n---\nfirst line\na capybara appeared\n"
    assert out["sha256"] == sha256_bytes(text.encode()) and out["created"] is False
    assert hits(app, "capybara") == ["log.md"]
    assert app.notes.append("new/log.md", "created by append")["created"] is True


def test_move_keeps_the_index_rows_and_refuses_to_overwrite(make_app: Any) -> None:
    app = make_app(model=None)
    written = app.notes.write("a.md", "# Okapi\nokapis are shy\n")
    app.notes.write("b.md", "bee\n")
    ids_before = app.store.read(
        lambda con: [r[0] for r in con.execute("SELECT id FROM entries WHERE kind = 'chunk'")]
    )
    with pytest.raises(Refused, match="already exists"):
        app.notes.move("a.md", "b.md")
    out = app.notes.move("a.md", "archive/2026/okapi.md", expected_sha256=written["sha256"])
    assert out == {"path": "a.md", "new_path": "archive/2026/okapi.md", "sha256": written["sha256"]}
    assert not (app.cfg.workspace / "a.md").exists()
    assert hits(app, "okapis") == ["archive/2026/okapi.md"]
    ids_after = app.store.read(
        lambda con: [r[0] for r in con.execute("SELECT id FROM entries WHERE kind = 'chunk'")]
    )
    assert sorted(ids_after) == sorted(ids_before)  # a move, not a delete and a re-index
    with pytest.raises(NotFound):
        app.notes.move("a.md", "c.md")
    with pytest.raises(InvalidInput):
        app.notes.move("b.md", "../b.md")


def test_list_pages_and_filters_by_folder(make_app: Any) -> None:
    app = make_app(model=None)
    for name in ("p/one.md", "p/two.md", "p/sub/three.md", "q/four.md", "pp.md"):
        app.notes.write(name, f"# Title of {name}\nbody\n")
    out = call(app, "note.list", path="p", limit=2)
    assert out["total"] == 3
    assert [i["path"] for i in out["items"]] == ["p/one.md", "p/sub/three.md"]
    assert out["items"][0]["title"] == "Title of p/one.md"
    page2 = call(app, "note.list", path="p/", limit=2, offset=2)
    assert [i["path"] for i in page2["items"]] == ["p/two.md"]
    assert call(app, "note.list")["total"] == 5
    with pytest.raises(InvalidInput):
        call(app, "note.list", path="../x")
    with pytest.raises(InvalidInput):
        call(app, "note.list", limit=0)


def test_recent_activity_mixes_memories_and_notes_newest_first(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    t = [1_800_000_000.0]
    app.memories.clock = lambda: t[0]
    app.memories.add("an old memory about walruses")
    note = app.cfg.workspace / "n.md"
    app.notes.write("n.md", "# Walrus note\n")
    os.utime(note, (t[0] + 10, t[0] + 10))
    app.indexer.sync_paths([note])
    t[0] += 20
    app.memories.add("a newer memory about walruses", namespace="other")
    app.memories.add("the newest memory", namespace="default")
    out = call(app, "recent_activity")
    kinds = [(i["kind"], i.get("id") or i.get("path")) for i in out["items"]]
    assert [k for k, _ in kinds] == ["memory", "note", "memory"]
    assert out["items"][0]["summary"] == "the newest memory"
    assert out["items"][1]["path"] == "n.md" and out["items"][1]["title"] == "Walrus note"
    everyone = call(app, "recent_activity", namespace="*", limit=2)
    assert len(everyone["items"]) == 2
    since = call(app, "recent_activity", since=datetime.fromtimestamp(t[0] - 5).isoformat())
    assert [i["kind"] for i in since["items"]] == ["memory"]


def test_note_methods_over_the_socket(daemon_factory: Any) -> None:
    d = daemon_factory()
    w = d.call("note.write", {"path": "s/one.md", "content": "# Socket\nnarwhal tusk\n"})
    found = d.call("search", {"query": "narwhal"})
    assert [h.get("path") for h in found["hits"]] == ["s/one.md"]
    stale = rpc(
        d.socket, "note.write", {"path": "s/one.md", "content": "x", "expected_sha256": "0" * 64}
    )
    assert stale["error"]["code"] == -32009
    assert stale["error"]["data"]["current_sha256"] == w["sha256"]
    bad = rpc(d.socket, "note.read", {"path": "../etc/passwd"})
    assert bad["error"]["code"] == -32602
    assert d.call("note.read", {"path": "s/one.md"})["sha256"] == w["sha256"]


# --- the daily log in Obsidian's daily-note layout --------------------------------------------


def test_daily_log_follows_folder_and_filename_format(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"folder": "Journal", "filename": "%Y/%m/%Y-%m-%d (%a).md"})
    # no watcher here: watchdog warns from its thread when nested folders appear at once
    app.memories.add("a memory about a pangolin")
    now = datetime.now().astimezone()
    path = app.cfg.workspace / "Journal" / now.strftime("%Y/%m/%Y-%m-%d (%a).md")
    assert "pangolin" in path.read_text()
    assert app.dailylog.is_log_file(path.relative_to(app.cfg.workspace).as_posix())
    # its own line is still not indexed twice (the marker rule follows the new layout)
    assert app.indexer.reconcile().indexed == 1
    assert hits(app, "pangolin") == [None]  # the memory only


def test_daily_log_at_the_top_of_the_workspace(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"folder": ".", "filename": "%Y-%m-%d.md"})
    app.memories.add("a memory about a tapir")
    now = datetime.now().astimezone()
    assert "tapir" in (app.cfg.workspace / f"{now:%Y-%m-%d}.md").read_text()


@pytest.mark.parametrize("bad", ["daily.txt", "/abs/%Y.md", "../%Y.md", "fixed.md", 3])
def test_daily_log_filename_is_validated(bad: Any) -> None:
    from memoryd.core.config import Config
    from memoryd.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"dailylog\.filename"):
        Config.from_dict({"dailylog": {"filename": bad}})


# --- symlinks swapped in after the checks (TOCTOU) ----------------------------------------------


def _swap_folder_after_checks(
    monkeypatch: pytest.MonkeyPatch, app: Any, folder: Path, outside: Path
) -> None:
    """Once the path checks are done, replace `folder` with a symlink to `outside`: what a
    hostile process racing the daemon would do between the check and the write."""
    from memoryd.notes import notes as notes_mod

    real_ensure = notes_mod.Notes._ensure_parent

    def ensure_then_swap(self: Any, full: Path, rel: str) -> Any:
        out = real_ensure(self, full, rel)
        if folder.is_dir() and not folder.is_symlink():
            for child in folder.iterdir():
                child.rename(outside / ("moved-" + child.name))
            folder.rmdir()
            folder.symlink_to(outside, target_is_directory=True)
        return out

    monkeypatch.setattr(notes_mod.Notes, "_ensure_parent", ensure_then_swap)


@pytest.mark.parametrize("op", ["write", "append"])
def test_a_folder_swapped_for_a_symlink_after_the_check_is_not_followed(
    make_app: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, op: str
) -> None:
    app = make_app(model=None)
    ws = app.cfg.workspace
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "sub").mkdir()
    _swap_folder_after_checks(monkeypatch, app, ws / "sub", outside)
    with pytest.raises((InvalidInput, Refused)):
        getattr(app.notes, op)("sub/new.md", "should not leave the workspace\n")
    assert [p.name for p in outside.iterdir() if not p.name.startswith("moved-")] == []


def test_a_folder_swapped_for_a_symlink_is_not_read_through(
    make_app: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryd.notes import notes as notes_mod

    app = make_app(model=None)
    ws = app.cfg.workspace
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("outside secret\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "secret.md").write_text("inside\n")
    real_resolve = notes_mod.Notes.resolve

    def resolve_then_swap(self: Any, path: object, what: str = "path") -> Any:
        out = real_resolve(self, path, what)
        if not (ws / "sub").is_symlink():
            (ws / "sub" / "secret.md").unlink()
            (ws / "sub").rmdir()
            (ws / "sub").symlink_to(outside, target_is_directory=True)
        return out

    monkeypatch.setattr(notes_mod.Notes, "resolve", resolve_then_swap)
    with pytest.raises((InvalidInput, Refused, NotFound)):
        app.notes.read("sub/secret.md")


def test_a_target_swapped_for_a_symlink_is_replaced_not_followed(
    make_app: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A symlink planted at the target after the checks is never written through: the swap
    finds a file it did not check there and the write is refused (it was replaced before)."""
    from memoryd.notes import notes as notes_mod

    app = make_app(model=None)
    ws = app.cfg.workspace
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("outside secret\n")
    real_ensure = notes_mod.Notes._ensure_parent

    def ensure_then_link(self: Any, full: Path, rel: str) -> Any:
        out = real_ensure(self, full, rel)
        if not full.is_symlink():
            full.symlink_to(outside / "secret.md")
        return out

    monkeypatch.setattr(notes_mod.Notes, "_ensure_parent", ensure_then_link)
    with pytest.raises(Refused, match=r"t\.md is a symlink"):
        app.notes.write("t.md", "mine\n")
    assert (outside / "secret.md").read_text() == "outside secret\n"
    assert (ws / "t.md").is_symlink()  # left as it was found


def test_a_name_that_differs_only_in_unicode_normalization_is_the_same_note(
    make_app: Any,
) -> None:
    """A vault synced from macOS keeps decomposed names (e + U+0301); an agent types the
    composed é. Both must name the one note, not create a second that looks the same."""
    app = make_app(model=None)
    ws = app.cfg.workspace
    (ws / "Caf\u00e9s").mkdir()  # composed folder, decomposed file
    (ws / "Caf\u00e9s" / "cafe\u0301.md").write_text("# Café\nold\n")
    composed = "Cafe\u0301s/caf\u00e9.md"  # the other way round, in both parts
    read = app.notes.read(composed)
    assert read["path"] == "Caf\u00e9s/cafe\u0301.md" and "old" in read["content"]
    app.notes.write(composed, "# Café\nnew\n", expected_sha256=read["sha256"])
    app.notes.append(composed, "more")
    assert os.listdir(ws / "Caf\u00e9s") == ["cafe\u0301.md"]
    assert (ws / "Caf\u00e9s" / "cafe\u0301.md").read_text() == "# Café\nnew\nmore\n"
    app.notes.write("Caf\u00e9s/new\u0301.md", "x\n")  # a new name is kept as given
    assert sorted(os.listdir(ws / "Caf\u00e9s")) == ["cafe\u0301.md", "new\u0301.md"]


def test_an_inner_folder_symlink_still_works_for_reads_and_writes(make_app: Any) -> None:
    """The descriptor walk follows the real path resolve() checked, so a symlinked folder that
    stays inside the workspace keeps working."""
    app = make_app(model=None)
    ws = app.cfg.workspace
    (ws / "real").mkdir()
    (ws / "alias").symlink_to(ws / "real", target_is_directory=True)
    app.notes.write("alias/n.md", "# N\nthrough the alias\n")
    assert (ws / "real" / "n.md").read_text() == "# N\nthrough the alias\n"
    assert app.notes.read("alias/n.md")["content"] == "# N\nthrough the alias\n"
    app.notes.append("alias/n.md", "more")
    assert app.notes.read("real/n.md")["content"].endswith("more\n")


def test_a_daily_log_line_written_during_an_append_is_not_lost(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's own daily-log appends (O_APPEND on the file) and note.append (read, temp
    file, rename) on the same file take one lock: a line the daily log wrote between the
    append's last check and its rename went to the replaced file and was lost."""
    app = make_app(model=None)
    day = app.notes.append("daily/today.md", "# Today")["path"]
    monkeypatch.setattr(app.dailylog, "path_for", lambda when: app.cfg.workspace / day)
    raced: list[threading.Thread] = []

    def a_racing_daily_log() -> None:
        if not raced:  # the memory is added while the append is about to rename
            t = threading.Thread(target=app.memories.add, args=("raced into the daily log",))
            raced.append(t)
            t.start()
            t.join(timeout=0.5)  # done at once unless the daily log waits for the append

    # between the append's last check and its swap (core/swap.py guarded_replace)
    monkeypatch.setattr(swap, "before_swap", a_racing_daily_log)
    app.notes.append(day, "- the agent's line")
    raced[0].join(timeout=10)
    monkeypatch.undo()
    text = (app.cfg.workspace / day).read_text()
    assert "- the agent's line\n" in text
    assert "raced into the daily log" in text
