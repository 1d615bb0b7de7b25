"""A workspace that churns (editors, git, sync tools), with the real watchdog observer: once the
events settle, the index equals the disk (every note once, with its current text; nothing that
is gone; a moved note under its new path only), and a word planted in a note finds the notes
that hold it. Each sequence here is one a seeded churn run found wrong (the report of branch
walke11 names its class)."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import DEADLINE_S, q, started_app, to_toml, wait_for

from memoryd.store import entries

pytestmark = pytest.mark.backends


def on_disk(ws: Path) -> dict[str, str]:
    """Every *.md file outside dot folders, symlinks to files followed (what `rg -L --files -g
    '*.md'` lists), with the SHA-256 of its bytes."""
    found = {}
    for dirpath, dirs, files in os.walk(ws):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            full = Path(dirpath, name)
            if name.endswith(".md") and not name.startswith(".") and full.is_file():
                found[full.relative_to(ws).as_posix()] = hashlib.sha256(
                    full.read_bytes()
                ).hexdigest()
    return found


def in_index(app: Any) -> dict[str, str]:
    return {p: d.sha256 for p, d in app.store.read(entries.documents).items()}


def settled(app: Any, timeout: float = DEADLINE_S) -> dict[str, str]:
    """Waits (with a deadline) until the index equals the disk; returns the disk's notes."""
    ws = app.cfg.workspace

    def equal() -> bool:
        return in_index(app) == on_disk(ws)

    try:
        wait_for(equal, timeout=timeout, interval=0.2)
    except AssertionError:
        disk, idx = on_disk(ws), in_index(app)
        raise AssertionError(
            f"index != disk: only on disk {sorted(set(disk) - set(idx))}, only indexed "
            f"{sorted(set(idx) - set(disk))}, stale "
            f"{sorted(p for p in set(disk) & set(idx) if disk[p] != idx[p])}"
        ) from None
    return on_disk(ws)


def found_by(app: Any, word: str) -> set[str]:
    return {h["path"] for h in q(app, word, limit=50)["hits"] if h.get("path")}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _file_to_folder(ws: Path) -> None:
    """A sync tool or a script replaces a note with a folder of its name."""
    (ws / "x.md").unlink()
    write(ws / "x.md" / "inner.md", "# Inner\n\nquokka\n")


def _folder_to_file(ws: Path) -> None:
    shutil.rmtree(ws / "d")
    write(ws / "d", "not a note: no .md")
    write(ws / "d.md", "# D\n\nquokka\n")


def _file_to_folder_and_back(ws: Path) -> None:
    _file_to_folder(ws)
    shutil.rmtree(ws / "x.md")
    write(ws / "x.md", "# X again\n\nquokka\n")


SEQUENCES: dict[str, Callable[[Path], None]] = {
    "file replaced by a folder of its name": _file_to_folder,
    "folder replaced by a file": _folder_to_file,
    "file to folder and back": _file_to_folder_and_back,
}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_the_index_equals_the_disk_after(make_app: Any, name: str) -> None:
    app = started_app(make_app)
    ws = app.cfg.workspace
    write(ws / "x.md", "# X\n\nwombat\n")
    write(ws / "d" / "a.md", "# A\n\nwombat\n")
    write(ws / "keep.md", "# Keep\n\nwombat\n")
    settled(app)
    SEQUENCES[name](ws)
    disk = settled(app)
    for word in ("wombat", "quokka"):
        holding = {p for p in disk if word in (ws / p).read_text()}
        assert found_by(app, word) == holding, word


RULE_CHANGES = {
    # the rule changed on reload, the note it takes out (-) or lets in (+)
    "exclude": ({"exclude": ["drafts/"]}, "-drafts/d.md"),
    "include": ({"include": ["**/*.md", "**/*.txt"]}, "+plain.txt"),
    "skip_hidden": ({"skip_hidden": False}, "+.hidden/h.md"),
}


@pytest.mark.parametrize("rule", list(RULE_CHANGES))
def test_a_reload_that_changes_which_files_are_notes_applies_to_the_index_at_once(
    daemon_factory: Any, rule: str
) -> None:
    """SIGHUP with new indexer.include/exclude/skip_hidden: the index follows at once (it
    waited for the hourly reconcile or a restart, so `exclude = ["drafts/"]` left the drafts
    searchable)."""
    change, expect = RULE_CHANGES[rule]
    d = daemon_factory()
    for rel, word in (("drafts/d.md", "quokka"), ("plain.txt", "quokka"), (".hidden/h.md", "x")):
        write(d.workspace / rel, f"# Note\n\n{word} numbat\n")
    wait_for(lambda: d.call("search", {"query": "numbat"})["hits"])
    before = {h["path"] for h in d.call("search", {"query": "numbat"})["hits"]}
    assert before == {"drafts/d.md"}
    cfg = dict(d.cfg, indexer={**d.cfg.get("indexer", {}), **change})
    d.config_path.write_text(to_toml(cfg))
    assert d.proc is not None
    d.proc.send_signal(signal.SIGHUP)
    want = before - {expect[1:]} if expect[0] == "-" else before | {expect[1:]}
    wait_for(lambda: {h["path"] for h in d.call("search", {"query": "numbat"})["hits"]} == want)


# What editors and sync tools leave beside a note (indexer.skip_tool_files), and names like them
# that are notes
TOOL_FILES = [
    "a.md~",
    "#a.md#",
    ".#a.md",
    ".a.md.swp",
    "sub/.a.md.swo",
    "a.md___jb_tmp___",
    "a.md___jb_old___",
    ".~lock.a.md#",
    "~$a.md",
    ".syncthing.a.md.tmp",
    "~syncthing~a.md.tmp",
    ".a.md.icloud",
    ".stversions/a~20261126-101010.md",
    "sub/.stversions/a.md",
    ".dropbox.cache/a.md",
    "logseq/bak/pages/a/2026-11-26T10_10_10.000Z.Desktop.md",
    "graph/logseq/version-files/a.md",
    "._a.md",
    "sub/._a.md",
    ".sync/Archive/a.md",
    ".tmp.drivedownload/a.md",
]
NOTES_LIKE_THEM = [
    "a.md",
    "a (conflicted copy 2026-11-26).md",
    "a.sync-conflict-20261126-101010-ABCDEFG.md",
    "notes~draft.md",
    "#idea.md",
    "logseq/pages/a.md",
    "bak/a.md",
    "sync/Archive/a.md",
    "_a.md",
]


@pytest.mark.parametrize("rel", TOOL_FILES + NOTES_LIKE_THEM)
def test_which_names_are_tool_files(rel: str) -> None:
    from memoryd.core.sections import IndexerConfig
    from memoryd.text.pathrules import path_accepted, tool_file

    wide = IndexerConfig(include=["**/*"], skip_hidden=False)
    assert tool_file(rel) == (rel in TOOL_FILES)
    assert path_accepted(rel, wide) == (rel not in TOOL_FILES)
    assert path_accepted(rel, replace(wide, skip_tool_files=False))


def test_editors_and_sync_tools_files_are_never_notes(make_app: Any) -> None:
    """With include = ["**/*"] and skip_hidden = false, the files an editor or a sync tool
    writes while saving (a temp file renamed over the note, a backup, a lock, a swap file, an
    old version) are not indexed; the note and a conflict copy are."""
    app = make_app(model=None, indexer={"include": ["**/*"], "skip_hidden": False})
    app.start(jobs=False)
    assert app.ready.wait(DEADLINE_S)
    wait_for(lambda: app.watcher is not None and app.watcher.alive)
    ws = app.cfg.workspace
    for rel in TOOL_FILES:
        write(ws / rel, "# Copy\n\nnumbat\n")
    for rel in NOTES_LIKE_THEM:
        write(ws / rel, f"# {rel}\n\nnumbat\n")
    # a JetBrains save and an atomic save through Syncthing's temp name, after the others
    write(ws / "a.md___jb_tmp___", "# A\n\nnumbat saved\n")
    os.replace(ws / "a.md___jb_tmp___", ws / "a.md")
    write(ws / ".syncthing.a.md.tmp", "# A\n\nnumbat synced\n")
    os.replace(ws / ".syncthing.a.md.tmp", ws / "a.md")
    want = {rel: hashlib.sha256((ws / rel).read_bytes()).hexdigest() for rel in NOTES_LIKE_THEM}
    wait_for(lambda: in_index(app) == want)
    assert {h["path"] for h in q(app, "numbat", limit=50)["hits"]} == set(NOTES_LIKE_THEM)


def _append(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


OTHER_NAMES = {
    # how the other name is made, where, and how the note is written through it
    "hard link, same folder, in place": (os.link, "b.md", "rewrite"),
    "hard link, other folder, appended": (os.link, "sub/b.md", "append"),
    "hard links, three names, in place": (os.link, "sub/deep/c.md", "rewrite"),
    "hard link renamed and edited (git pull)": (os.link, "sub/b.md", "rename_edit"),
    "symlink, written through the link": (os.symlink, "b.md", "rewrite"),
    "symlink, other folder, the file written": (os.symlink, "sub/b.md", "file"),
    "symlink, the file saved by rename": (os.symlink, "sub/b.md", "rename"),
}


def _save(ws: Path, other: str, how: str) -> None:
    if how == "rewrite":
        (ws / other).write_text("# A\n\nquokka rewritten\n")
    elif how == "append":
        _append(ws / other, "\nquokka appended\n")
    elif how == "rename_edit":
        (ws / other).rename(ws / "moved.md")
        _append(ws / "moved.md", "\nquokka after the move\n")
    elif how == "file":
        (ws / "a.md").write_text("# A\n\nquokka in the file\n")
    else:  # an editor's atomic save of the file itself: a new file renamed over it
        write(ws / ".a.md.tmp", "# A\n\nquokka saved\n")
        os.replace(ws / ".a.md.tmp", ws / "a.md")


@pytest.mark.parametrize("case", list(OTHER_NAMES))
def test_a_note_saved_through_one_of_its_names_is_current_under_all(
    make_app: Any, case: str
) -> None:
    """A note with other names (hard links, symlinks to it): the file event names only one of
    them, and the others held the old text in the index until the next reconcile (a seeded
    churn run, seed 7). The checker follows symlinks as memoryd does (`rg -L`)."""
    make, other, how = OTHER_NAMES[case]
    app = started_app(make_app)
    ws = app.cfg.workspace
    write(ws / "a.md", "# A\n\nwombat\n")
    (ws / other).parent.mkdir(parents=True, exist_ok=True)
    target = ws / "a.md" if make is os.link else os.path.relpath(ws / "a.md", (ws / other).parent)
    make(target, ws / other)
    if case.startswith("hard links, three"):
        os.link(ws / "a.md", ws / "b.md")
    settled(app)
    _save(ws, other, how)
    disk = settled(app)
    for word in ("quokka", "wombat"):
        holding = {p for p in disk if word in (ws / p).read_text()}
        assert found_by(app, word) == holding, word
    assert len({p for p in disk if "quokka" in (ws / p).read_text()}) >= 2


def _move_folder_out(ws: Path) -> None:
    (ws / "d").rename(ws.parent / "away")


def _move_folder_out_and_back(ws: Path) -> None:
    _move_folder_out(ws)
    wait_for(lambda: "link.md" not in in_index(app_of[ws]))
    (ws.parent / "away").rename(ws / "d")


TARGET_GONE: dict[str, tuple[Callable[[Path], None], bool]] = {
    # what happens to the file a symlinked note leads to; is the symlink a note after it
    "the file deleted": (lambda ws: (ws / "d" / "a.md").unlink(), False),
    "the file renamed": (lambda ws: (ws / "d" / "a.md").rename(ws / "d" / "b.md"), False),
    "its folder moved out": (_move_folder_out, False),
    "its folder moved out and back": (_move_folder_out_and_back, True),
    "the file deleted and made again": (
        lambda ws: ((ws / "d" / "a.md").unlink(), write(ws / "d" / "a.md", "# A\n\nquokka\n")),
        True,
    ),
}
app_of: dict[Path, Any] = {}


@pytest.mark.parametrize("case", list(TARGET_GONE))
def test_a_symlinked_note_follows_its_file_away_and_back(make_app: Any, case: str) -> None:
    """A symlink inside the workspace to a note: when the note's file goes, the symlink leads
    nowhere and is no note (its document stayed, found by the old text); when it comes back,
    the symlink is a note again. The events name the file, never the symlink."""
    change, linked = TARGET_GONE[case]
    app = started_app(make_app)
    ws = app.cfg.workspace
    app_of[ws] = app
    write(ws / "d" / "a.md", "# A\n\nwombat\n")
    os.symlink("d/a.md", ws / "link.md")
    settled(app)
    change(ws)
    disk = settled(app)
    assert ("link.md" in disk) == linked
    for word in ("wombat", "quokka"):
        holding = {p for p in disk if word in (ws / p).read_text()}
        assert found_by(app, word) == holding, word


def _renamed_and_back(ws: Path) -> None:
    (ws / "d" / "a.md").rename(ws / "d" / "b.md")
    wait_for(lambda: "link.md" not in in_index(app_of[ws]))
    (ws / "d" / "b.md").rename(ws / "d" / "a.md")


def _folder_renamed_and_back(ws: Path) -> None:
    (ws / "d").rename(ws / "e")
    wait_for(lambda: "link.md" not in in_index(app_of[ws]))
    (ws / "e").rename(ws / "d")


def _moved_in_from_another_note(ws: Path) -> None:
    write(ws / "other.md", "# A\n\nquokka\n")
    wait_for(lambda: "other.md" in in_index(app_of[ws]))
    (ws / "d").mkdir(exist_ok=True)
    (ws / "other.md").rename(ws / "d" / "a.md")


TARGET_BACK: dict[str, tuple[bool, Callable[[Path], None]]] = {
    # (is the symlink's target there when the daemon's first walk sees it, how it comes back)
    "renamed and renamed back": (True, _renamed_and_back),
    "its folder renamed and renamed back": (True, _folder_renamed_and_back),
    "the symlink made while the file is away, the file written": (
        True,
        lambda ws: (
            (ws / "d" / "a.md").unlink(),
            wait_for(lambda: "d/a.md" not in in_index(app_of[ws])),
            os.symlink("d/a.md", ws / "link2.md"),
            write(ws / "d" / "a.md", "# A\n\nquokka\n"),
        ),
    ),
    "seen dangling at start, its folder made (mkdir) and the file written": (
        False,
        lambda ws: write(ws / "d" / "a.md", "# A\n\nquokka\n"),
    ),
    "seen dangling at start, the file written into its folder (a checkout)": (
        False,
        lambda ws: ((ws / "d").mkdir(), write(ws / "d" / "a.md", "# A\n\nquokka\n")),
    ),
    "seen dangling at start, another note moved to its name": (False, _moved_in_from_another_note),
    "seen dangling at start, its folder made a symlink to another folder": (
        False,
        lambda ws: (write(ws / "e" / "a.md", "# A\n\nquokka\n"), os.symlink("e", ws / "d")),
    ),
    "seen dangling at start, its name made a symlink to another note (a chain)": (
        False,
        lambda ws: (
            write(ws / "real.md", "# Real\n\nquokka\n"),
            wait_for(lambda: "real.md" in in_index(app_of[ws])),
            (ws / "d").mkdir(),
            os.symlink("../real.md", ws / "d" / "a.md"),
        ),
    ),
}


@pytest.mark.parametrize("case", list(TARGET_BACK))
def test_a_symlink_is_a_note_again_whichever_way_its_file_comes_back(
    make_app: Any, case: str
) -> None:
    """A symlink whose file is missing is no note; it is one again as soon as its file is back,
    whether the file comes back by a rename (mv back), by a folder renamed back, by mkdir and a
    write, by a checkout, or by another note moved to its name; and whether the daemon saw the
    symlink lead somewhere before or only ever saw it dangling (its first walk after a restart).
    The events name the file, never the symlink (stop 37's churn, seed 4 round 11: a restart
    while the file was away, then `git checkout` brought it back; the symlink stayed out of the
    index until the next restart)."""
    there, back = TARGET_BACK[case]
    app = make_app(model=None)
    ws = app.cfg.workspace
    app_of[ws] = app
    if there:
        write(ws / "d" / "a.md", "# A\n\nwombat\n")
    os.symlink("d/a.md", ws / "link.md")
    write(ws / "keep.md", "# Keep\n\nwombat\n")
    app.start(jobs=False)
    assert app.ready.wait(DEADLINE_S)
    wait_for(lambda: app.watcher is not None and app.watcher.alive)
    assert ("link.md" in settled(app)) == there
    back(ws)
    disk = settled(app)
    assert "link.md" in disk
    for word in ("wombat", "quokka"):
        holding = {p for p in disk if word in (ws / p).read_text()}
        assert found_by(app, word) == holding, word


MANY = 1_020  # past the 1,000 symlinks the indexer once kept (stop 37, walkk12), per map
SLOW_S = 180.0  # 2,040 files indexed four times, on a loaded machine


# watchdog 7 warns from its inotify thread when a folder moved out and back gets its old watch
# again (the kernel reuses the descriptor); it keeps one callback, as it says: nothing is missed
@pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")
@pytest.mark.sqlite_only("the symlink maps are the indexer's, in memory; PostgreSQL took 4 min")
def test_many_symlinked_notes_follow_their_files(make_app: Any) -> None:
    """A vault whose notes are symlinked from another folder, more of them than any bound the
    indexer keeps on its symlink maps: every symlinked note follows its file's edit, its file
    going away and its file coming back. The events name the files, never the symlinks."""
    app = make_app(model=None)
    ws = app.cfg.workspace
    for i in range(MANY):
        write(ws / "real" / f"n{i:04}.md", f"# N{i}\n\nwombat\n")
        os.symlink(f"../real/n{i:04}.md", write_dir(ws / "linked") / f"n{i:04}.md")
    app.start(jobs=False)
    assert app.ready.wait(SLOW_S)
    wait_for(lambda: app.watcher is not None and app.watcher.alive)
    assert len(settled(app, SLOW_S)) == 2 * MANY
    for i in range(MANY):  # every file edited through its own name
        (ws / "real" / f"n{i:04}.md").write_text(f"# N{i}\n\nquokka\n")
    settled(app, SLOW_S)
    away = app.cfg.workspace.parent / "away"
    (ws / "real").rename(away)  # the files go: every symlink leads nowhere
    assert settled(app, SLOW_S) == {}
    away.rename(ws / "real")  # and come back
    assert len(settled(app, SLOW_S)) == 2 * MANY


def write_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
