"""Two writers on one note, and what a write keeps of the file it replaces (docs/agents.md,
"Two writers" and "What a write keeps of the note"; docs/protocol.md, Whole notes).

Every door that replaces or removes a note's text (note.write, note.append, delete by path; the
MCP tools write_note, edit_note, append_to_note, delete_note on top of them) applies to the
version its caller read or fails with a conflict (-32009) and changes nothing; one that was not
given a version says in its answer what it replaced (`replaced_sha256`). The races are run for
real: a daemon process, two agents (threads) held at a barrier between their read and their
write, and a person's save made between an agent's read and write through a hook on the
bridge."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from memoryd.agents import catalog
from memoryd.agents.tools import Bridge
from memoryd.core import swap
from memoryd.core.errors import Conflict, Refused
from memoryd.index.indexer import sha256_bytes
from memoryd.serve import methods as api
from memoryd.text.decoding import decode

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

TEXT = "# Café notes\n\nThe naïve “quokka” résumé\n"

# every encoding note.read reads, as bytes an editor wrote
ENCODED = {
    "utf-8": TEXT.encode(),
    "utf-8 with a byte order mark": b"\xef\xbb\xbf" + TEXT.encode(),
    "utf-16 le": b"\xff\xfe" + TEXT.encode("utf-16-le"),
    "utf-16 be": b"\xfe\xff" + TEXT.encode("utf-16-be"),
    "utf-32": TEXT.encode("utf-32"),
    "windows-1252": TEXT.encode("cp1252"),
    "crlf": TEXT.replace("\n", "\r\n").encode(),
    "windows-1252 crlf": TEXT.replace("\n", "\r\n").encode("cp1252"),
    "utf-16 crlf": TEXT.replace("\n", "\r\n").encode("utf-16"),
}


def call(app: Any, name: str, **params: Any) -> Any:
    return api.lookup(name, params).fn(app, params)


class HookedBridge(Bridge):
    """The MCP tools' bridge to a real daemon, with `after_read` run once after a note.read
    (between an edit's read and its write: where a person's save or another agent lands)."""

    def __init__(self, socket: str, after_read: Any = None) -> None:
        super().__init__(socket, None, timeout=30)
        self.after_read = after_read

    def call(self, method: str, params: dict[str, Any], keep_null: Any = ()) -> Any:
        out = super().call(method, params, keep_null)
        if method == "note.read" and self.after_read is not None:
            hook, self.after_read = self.after_read, None
            hook()
        return out


@pytest.mark.parametrize("kind", sorted(ENCODED))
def test_a_note_written_back_as_read_is_the_same_file(make_app: Any, kind: str) -> None:
    """A byte order mark, UTF-16/32, Windows-1252 and CRLF survive a read and a write of what
    was read (the MCP edit tools' round trip): on main the write made them UTF-8 without a mark."""
    app = make_app(model=None, dailylog={"enabled": False})
    path = app.cfg.workspace / "n.md"
    path.write_bytes(ENCODED[kind])
    app.indexer.reconcile()
    read = call(app, "note.read", path="n.md")
    out = call(
        app, "note.write", path="n.md", content=read["content"], expected_sha256=read["sha256"]
    )
    assert path.read_bytes() == ENCODED[kind]
    assert out["sha256"] == read["sha256"] == out["replaced_sha256"]
    assert out.get("encoding", "utf-8") == read["encoding"]
    # an edit (bare LF from the agent) keeps them too, and the index reads the new words
    new = read["content"].replace("résumé", "résumé numbat")
    call(app, "note.write", path="n.md", content=new.replace("\r\n", "\n"))
    assert decode(path.read_bytes())[:2] == (new, read["encoding"])
    assert path.read_bytes()[:4] == ENCODED[kind][:4]  # the same byte order mark, or none
    assert call(app, "note.append", path="n.md", content="- ✓ wombat")["path"] == "n.md"
    text, encoding, _ = decode(path.read_bytes())
    eol = "\r\n" if "crlf" in kind else "\n"
    assert (text, encoding) == (new + f"- ✓ wombat{eol}", read["encoding"])


def test_a_character_the_old_encoding_lacks_makes_the_note_utf8_and_says_so(
    make_app: Any,
) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    path = app.cfg.workspace / "n.md"
    path.write_bytes(TEXT.encode("cp1252"))
    app.indexer.reconcile()
    out = call(app, "note.write", path="n.md", content=TEXT + "Привет\n")
    assert path.read_bytes() == (TEXT + "Привет\n").encode() and "encoding" not in out
    # and a note mostly UTF-8 with one stray Latin-1 byte becomes UTF-8 throughout
    path.write_bytes(TEXT.encode().replace("Café".encode(), b"Caf\xe9"))
    call(app, "note.write", path="n.md", content=call(app, "note.read", path="n.md")["content"])
    assert path.read_bytes() == TEXT.encode()


def _write(app: Any) -> None:
    call(app, "note.write", path="ro.md", content="# Ro\n\nchanged\n")


def _append(app: Any) -> None:
    call(app, "note.append", path="ro.md", content="more")


@pytest.mark.parametrize("door", [_write, _append], ids=["note.write", "note.append"])
def test_a_read_only_note_is_refused_not_replaced(make_app: Any, door: Any) -> None:
    """On main the rename replaced a 0444 note (only the folder's permission counts)."""
    app = make_app(model=None, dailylog={"enabled": False})
    path = app.cfg.workspace / "ro.md"
    path.write_text("# Ro\n\nkeep\n")
    path.chmod(0o444)
    with pytest.raises(Refused, match=r"ro.md is read-only \(mode 0444\).*chmod u\+w"):
        door(app)
    assert path.read_text() == "# Ro\n\nkeep\n" and stat.S_IMODE(path.stat().st_mode) == 0o444
    path.chmod(0o644)
    door(app)  # once writable, written
    assert "keep" not in path.read_text() or path.read_text().endswith("more\n")


def test_a_write_keeps_mode_and_extended_attributes_and_names_hard_links(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    path = app.cfg.workspace / "n.md"
    path.write_text("# N\n\nold\n")
    path.chmod(0o640)
    try:
        os.setxattr(path, "user.memoryd-test", b"red")
        xattrs = True
    except (AttributeError, OSError):  # macOS' Python, a file system without them
        xattrs = False
    other = app.cfg.workspace / "elsewhere.md"
    os.link(path, other)
    app.indexer.reconcile()
    out = call(app, "note.write", path="n.md", content="# N\n\nnew\n")
    assert path.read_text() == "# N\n\nnew\n" and stat.S_IMODE(path.stat().st_mode) == 0o640
    if xattrs:
        assert os.getxattr(path, "user.memoryd-test") == b"red"
    assert "1 other name(s) (hard links)" in out["warning"]
    assert other.read_text() == "# N\n\nold\n"  # as after an editor's save by rename
    assert "warning" not in call(app, "note.write", path="n.md", content="# N\n\nagain\n")


def test_delete_by_path_takes_only_the_version_read(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    path = app.cfg.workspace / "n.md"
    path.write_text("# N\n\nread\n")
    read = sha256_bytes(path.read_bytes())
    path.write_text("# N\n\nsaved since\n")
    with pytest.raises(Conflict) as exc:
        call(app, "delete", path="n.md", expected_sha256=read)
    assert exc.value.data["current_sha256"] == sha256_bytes(path.read_bytes())
    assert path.read_text() == "# N\n\nsaved since\n"
    with pytest.raises(Exception, match="expected_sha256: only with path"):
        call(app, "delete", id=1, expected_sha256=read)
    now = sha256_bytes(path.read_bytes())
    assert call(app, "delete", path="n.md", expected_sha256=now)["paths"] in ([], ["n.md"])
    assert not path.exists()


def _edit(b: Bridge) -> tuple[str, Any, bool]:
    args = {"path": "n.md", "action": "replace", "find": "old", "replace": "agent"}
    return catalog.call(b, "edit_note", args)


def _delete(b: Bridge) -> tuple[str, Any, bool]:
    return catalog.call(b, "delete_note", {"path": "n.md"})


@pytest.mark.parametrize("tool", [_edit, _delete], ids=["edit_note", "delete_note"])
def test_a_save_between_an_agents_read_and_write_is_never_overwritten(
    daemon_factory: Any, tool: Any
) -> None:
    """The person saves in their editor (write to a temp, rename: VS Code, vim) after the tool
    read the note and before it writes: a conflict, and the person's text stays. On main
    delete_note moved the newer note to the trash."""
    d = daemon_factory(dailylog={"enabled": False})
    path = Path(d.cfg["workspace"]) / "n.md"
    path.write_text("# N\n\nold words\n")

    def save() -> None:
        tmp = path.with_name("n.md.tmp~")
        tmp.write_text("# N\n\nold words and the person's\n")
        os.replace(tmp, path)

    said, structured, failed = tool(HookedBridge(str(d.socket), after_read=save))
    assert failed and "conflict" in said and structured["error"]["code"] == -32009, said
    assert path.read_text() == "# N\n\nold words and the person's\n"


def test_two_agents_editing_one_note_from_the_same_read(daemon_factory: Any) -> None:
    """Both read, both write (held at a barrier in between): one edit lands, the other is a
    conflict that changed nothing; a retry after reading again lands too. Nothing is lost."""
    d = daemon_factory(dailylog={"enabled": False})
    path = Path(d.cfg["workspace"]) / "n.md"
    path.write_text("# N\n\n## A\n\na\n\n## B\n\nb\n")
    barrier = threading.Barrier(2, timeout=30)
    results: dict[str, tuple[str, Any, bool]] = {}

    def agent(heading: str) -> None:
        b = HookedBridge(str(d.socket), after_read=barrier.wait)
        args = {"path": "n.md", "action": "replace_section", "heading": heading}
        results[heading] = catalog.call(b, "edit_note", {**args, "content": f"{heading} by agent"})

    threads = [threading.Thread(target=agent, args=(h,)) for h in ("A", "B")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    failed = sorted(h for h, r in results.items() if r[2])
    assert len(results) == 2 and len(failed) == 1, results
    assert "conflict" in results[failed[0]][0]
    won = "A" if failed == ["B"] else "B"
    assert f"{won} by agent" in path.read_text()
    assert f"{failed[0]} by agent" not in path.read_text()
    b = Bridge(str(d.socket), None)  # the loser reads again and retries
    retry = {"path": "n.md", "action": "replace_section", "heading": failed[0]}
    assert not catalog.call(b, "edit_note", {**retry, "content": f"{failed[0]} by agent"})[2]
    assert "A by agent" in path.read_text() and "B by agent" in path.read_text()


def test_memoryctl_delete_path_if_sha256(daemon_factory: Any) -> None:
    d = daemon_factory(dailylog={"enabled": False})
    path = Path(d.cfg["workspace"]) / "n.md"
    path.write_text("# N\n\nread\n")
    read = sha256_bytes(path.read_bytes())
    path.write_text("# N\n\nsaved since\n")
    stale = d.ctl("delete", "--path", "n.md", "--if-sha256", read)
    assert stale.returncode not in (0, 2) and "changed since you read it" in stale.stderr
    assert path.read_text() == "# N\n\nsaved since\n"
    assert d.ctl("delete", "--tag", "x", "--if-sha256", read).returncode == 2
    now = sha256_bytes(path.read_bytes())
    assert d.ctl("delete", "--path", "n.md", "--if-sha256", now).returncode == 0
    assert not path.exists()


def test_an_editors_save_by_rename_during_the_swap_is_never_deleted(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vim (backupcopy=no), VS Code's safe save and sync tools rename a new file over the note.
    One that lands after the daemon's last check and before its rename was deleted on main
    (the rename replaced a file nothing had checked, and it had no other name)."""
    app = make_app(model=None, dailylog={"enabled": False})
    path = app.cfg.workspace / "n.md"
    path.write_text("# N\n\nold\n")
    saves: list[str] = []

    def person_saves(text: str) -> None:
        def save() -> None:
            monkeypatch.setattr(swap, "before_swap", None, raising=False)  # once
            tmp = path.with_name(".n.md.swp~")
            tmp.write_text(text)
            os.replace(tmp, path)
            saves.append(text)

        monkeypatch.setattr(swap, "before_swap", save, raising=False)

    read = call(app, "note.read", path="n.md")
    person_saves("# N\n\nold\nthe person's line\n")
    with pytest.raises(Conflict):
        call(
            app, "note.write", path="n.md", content="# N\n\nagent\n", expected_sha256=read["sha256"]
        )
    assert saves and path.read_text() == "# N\n\nold\nthe person's line\n"
    person_saves("# N\n\nold\nthe person's line\nand another\n")
    call(app, "note.append", path="n.md", content="agent line")  # made again on top of it
    assert path.read_text() == "# N\n\nold\nthe person's line\nand another\nagent line\n"
    assert sorted(p.name for p in app.cfg.workspace.iterdir()) == ["n.md"]  # no temp left


def test_agents_appends_while_an_editor_saves_by_rename(make_app: Any) -> None:
    """A person's editor saving by rename (reloading the note first, as Obsidian and vim's
    autoread do) while an agent appends: every append answers (on main some were refused,
    `cannot change n.md: No such file or directory`, when the backup link met the rename),
    and no line the editor saved is lost (on main a rename between the check and the swap was
    deleted). An agent line the editor's own reload-and-save missed is the editor's race."""
    app = make_app(model=None, dailylog={"enabled": False})
    path = app.cfg.workspace / "n.md"
    path.write_text("# N\n")
    stop = threading.Event()
    saved: list[str] = []

    def editor() -> None:
        tmp = path.with_name(".n.md.swp~")
        while not stop.is_set():
            line = f"editor {len(saved)}\n"
            tmp.write_text(path.read_text() + line)
            os.replace(tmp, path)
            saved.append(line)
            stop.wait(0.005)  # a fast typist's saves, not a flood: appends get through too

    thread = threading.Thread(target=editor, daemon=True)
    thread.start()
    try:
        for n in range(100):
            # a note that changed on each of the five tries is a conflict (documented); any
            # other error fails the test
            with contextlib.suppress(Conflict):
                call(app, "note.append", path="n.md", content=f"agent {n}")
    finally:
        stop.set()
        thread.join(timeout=10)
    text = path.read_text()
    assert len(saved) > 20, len(saved)  # the race was run
    assert [line for line in saved if line not in text] == []


def test_a_persons_save_of_the_daily_log_during_a_line_rewrite_is_kept(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Updating or forgetting a memory rewrites its daily log line (read, edit, rename). A person
    saving that day's note in their editor between the read and the rename lost their text on
    main; now the rewrite is made again on top of their save."""
    app = make_app(model=None)
    mid = app.memories.add(content="the cache TTL is 60 s").id
    [path] = [p for p in app.cfg.workspace.rglob("*.md") if "60 s" in p.read_text()]
    saves: list[str] = []

    def person_saves() -> None:
        monkeypatch.setattr(swap, "before_swap", None)  # once
        tmp = path.with_name("." + path.name + ".swp~")
        tmp.write_text(path.read_text() + "- the person's own line\n")
        os.replace(tmp, path)
        saves.append("saved")

    monkeypatch.setattr(swap, "before_swap", person_saves)
    app.memories.update(mid, {"content": "the cache TTL is 90 s"})
    text = path.read_text()
    assert saves and "- the person's own line\n" in text
    assert "the cache TTL is 90 s" in text and "60 s" not in text
    monkeypatch.setattr(swap, "before_swap", person_saves)
    app.memories.delete(mid)  # a forgotten memory's line goes, the person's stays
    text = path.read_text()
    assert text.count("- the person's own line\n") == 2 and "TTL" not in text


@pytest.mark.parametrize("door", ["note.write", "note.append"])
def test_a_symlinked_note_is_refused_naming_its_target(make_app: Any, door: str) -> None:
    """A write through a symlink would replace the link with a file; the refusal names the note
    to write instead (on main: 'the note it points to', which an agent cannot act on)."""
    app = make_app(model=None, dailylog={"enabled": False})
    (app.cfg.workspace / "real").mkdir()
    (app.cfg.workspace / "real" / "target.md").write_text("# T\n")
    (app.cfg.workspace / "link.md").symlink_to("real/target.md")
    with pytest.raises(Refused, match=r"link.md is a symlink to real/target.md; write to real/"):
        call(app, door, path="link.md", content="x")
    assert (app.cfg.workspace / "link.md").is_symlink()
    assert call(app, door, path="real/target.md", content="x")["path"] == "real/target.md"


def test_a_write_without_a_version_names_the_one_it_replaced(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No expected_sha256: whatever is there is replaced, and the answer's replaced_sha256 is
    that version, also when a person saved in the instant before the swap (on main their save
    was deleted and the answer named nothing)."""
    app = make_app(model=None, dailylog={"enabled": False})
    path = app.cfg.workspace / "n.md"
    path.write_text("# N\n\nold\n")
    person = "# N\n\nold\nthe person's line\n"

    def save() -> None:
        monkeypatch.setattr(swap, "before_swap", None)  # once
        tmp = path.with_name(".n.md.swp~")
        tmp.write_text(person)
        os.replace(tmp, path)

    monkeypatch.setattr(swap, "before_swap", save)
    out = call(app, "note.write", path="n.md", content="# N\n\nagent\n")
    assert path.read_text() == "# N\n\nagent\n"
    assert out["replaced_sha256"] == sha256_bytes(person.encode())
