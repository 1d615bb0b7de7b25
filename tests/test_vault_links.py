"""Issue 21, Vaults: a name several language folders share resolves to the nearest note (same
folder, then the shortest relative path), an ambiguous `backlinks NAME` says which note it chose
and lists the others, attachments resolve (names kept current by the watcher), a fence inside a
callout is code, and a file made readable again with chmod is indexed at once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

from memoryd.index.watcher import Watcher
from memoryd.notes import vault
from memoryd.text import obsidian
from memoryd.text.obsidian import Link, Resolver, nearest

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

# the shape of the Obsidian help vault: one name in three language folders, attachments
NOTES = {
    "en/Plugins/Canvas.md": "# Canvas\nSee [[Embed files]].\n",
    "en/Linking notes and files/Embed files.md": (
        "# Embed files\nOpen [[Canvas|canvas]] and ![[Engelbart.jpg]] and ![[Canvas.png]]\n"
        "and [[Attachments/guide.pdf]] and ![[nowhere.png]].\n"
        "> [!example] Colors\n> ```css\n> .c { color: #ff0000; } [[Not A Link]]\n> ```\n"
        "> Real text #callout-tag [[Canvas]]\n"
    ),
    "ja/プラグイン/Canvas.md": "# キャンバス\n[[Canvas]] [[埋め込み]] ![[Engelbart.jpg]]\n",
    "ja/埋め込み.md": "# 埋め込み\n",
    "zh/插件/Canvas.md": "# 白板\n[[Canvas]]\n",
}
FILES = [
    "en/Attachments/Engelbart.jpg",
    "en/Attachments/Canvas.png",
    "en/Attachments/guide.pdf",
    "ja/Attachments/Engelbart.jpg",
    ".obsidian/hidden.png",
]


def wiki(target: str) -> Link:
    return Link(target, None, None, 1, False, "wiki")


def test_nearest_is_same_folder_then_shortest_relative_path() -> None:
    paths = ["en/Plugins/Canvas.md", "ja/プラグイン/Canvas.md", "zh/插件/Canvas.md"]
    assert nearest(paths, "en/Linking notes and files/Embed files.md") == "en/Plugins/Canvas.md"
    assert nearest(paths, "ja/プラグイン/Other.md") == "ja/プラグイン/Canvas.md"  # same folder
    assert nearest(paths, "ja/Deep/er/x.md") == "ja/プラグイン/Canvas.md"
    assert nearest(paths, "zh/a.md") == "zh/插件/Canvas.md"
    assert nearest([*paths, "Canvas.md"], "x/y/z.md") == "Canvas.md"  # ../../Canvas.md
    assert nearest(["a/b/c/N.md", "N.md"], "a/b/x.md") == "a/b/c/N.md"  # c/N.md: one step
    assert nearest([], "a.md") is None
    r = Resolver(paths, FILES)
    src = "en/Linking notes and files/Embed files.md"
    assert r.resolve(wiki("Canvas"), src) == "en/Plugins/Canvas.md"
    assert r.resolve(wiki("Engelbart.jpg"), src) == "en/Attachments/Engelbart.jpg"
    assert r.resolve(wiki("Engelbart.jpg"), "ja/x.md") == "ja/Attachments/Engelbart.jpg"
    assert r.resolve(wiki("ja/Attachments/Engelbart.jpg"), src) == "ja/Attachments/Engelbart.jpg"
    assert r.resolve(wiki("Attachments/guide.pdf"), src) == "en/Attachments/guide.pdf"
    assert r.resolve(wiki("engelbart.JPG"), src) == "en/Attachments/Engelbart.jpg"
    assert r.resolve(wiki("Engelbart"), src) is None  # a file's name keeps its extension
    assert r.resolve(wiki("nowhere.png"), src) is None
    # a note wins over a file of the same name
    assert Resolver(["a/x.png.md"], ["a/x.png"]).resolve(wiki("x.png"), "a/n.md") == "a/x.png.md"
    md = Link("../Attachments/guide.pdf", None, None, 1, False, "markdown")
    assert r.resolve(md, src) == "en/Attachments/guide.pdf"


def test_fenced_code_inside_a_callout_or_quote_is_code() -> None:
    body = NOTES["en/Linking notes and files/Embed files.md"]
    assert obsidian.inline_tags(body) == ("callout-tag",)  # no #ff0000
    assert "Not A Link" not in [x.target for x in obsidian.links(body)]
    nested = "> > ~~~\n> > #a [[b]]\n> > ~~~\n> > #c\n"
    assert obsidian.inline_tags(nested) == ("c",)
    # the quote ends, and the fence with it (CommonMark): the next line is text again
    assert obsidian.inline_tags("> ```\n> #in\nout #out\n") == ("out",)
    # a `>` line inside a plain fence is code
    assert obsidian.inline_tags("```\n> #in\n```\n#after\n") == ("after",)


@pytest.fixture
def lang_app(make_app: Any) -> Any:
    app = make_app(model=None)
    ws = app.cfg.workspace
    for rel, text in NOTES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text, encoding="utf-8")
    for rel in FILES:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_bytes(b"\x89PNG not really")
    assert app.indexer.reconcile().errors == []
    return app


def test_links_stay_in_their_language_and_attachments_resolve(lang_app: Any) -> None:
    files = lang_app.indexer.others.snapshot()
    assert set(files) == set(FILES) - {".obsidian/hidden.png"}  # names only, hidden left out
    out = vault.links(lang_app.store, "en/Linking notes and files/Embed files.md", files)
    assert [(x["target"], x["path"]) for x in out["links"]] == [
        ("Canvas", "en/Plugins/Canvas.md"),
        ("Engelbart.jpg", "en/Attachments/Engelbart.jpg"),
        ("Canvas.png", "en/Attachments/Canvas.png"),
        ("Attachments/guide.pdf", "en/Attachments/guide.pdf"),
        ("nowhere.png", None),
        ("Canvas", "en/Plugins/Canvas.md"),
    ]
    assert "others" not in out  # asked by path
    ja = vault.links(lang_app.store, "ja/プラグイン/Canvas.md", files)["links"]
    assert [x["path"] for x in ja] == [
        "ja/プラグイン/Canvas.md",
        "ja/埋め込み.md",
        "ja/Attachments/Engelbart.jpg",
    ]
    # without the file names (an App that never scanned), attachments stay unresolved
    bare = vault.links(lang_app.store, "en/Linking notes and files/Embed files.md")
    assert bare["links"][1]["path"] is None


def test_backlinks_of_a_shared_name_say_which_note_and_list_the_others(lang_app: Any) -> None:
    files = lang_app.indexer.others.snapshot()
    # a bare name is read as a link in the vault's root would be: the shortest path
    back = vault.backlinks(lang_app.store, "Canvas", files)
    assert back["path"] == "zh/插件/Canvas.md"
    assert sorted(back["others"]) == ["en/Plugins/Canvas.md", "ja/プラグイン/Canvas.md"]
    assert [b["path"] for b in back["backlinks"]] == ["zh/插件/Canvas.md"]
    en = vault.backlinks(lang_app.store, "en/Plugins/Canvas.md", files)
    assert [b["path"] for b in en["backlinks"]] == [
        "en/Linking notes and files/Embed files.md",
        "en/Linking notes and files/Embed files.md",
    ]
    ja = vault.backlinks(lang_app.store, "ja/プラグイン/Canvas.md", files)
    assert "others" not in ja
    assert [b["path"] for b in ja["backlinks"]] == ["ja/プラグイン/Canvas.md"]
    img = vault.backlinks(lang_app.store, "Engelbart.jpg", files)
    assert img["path"] == "en/Attachments/Engelbart.jpg"
    assert img["others"] == ["ja/Attachments/Engelbart.jpg"]
    assert [b["path"] for b in img["backlinks"]] == ["en/Linking notes and files/Embed files.md"]


def test_callout_code_gives_no_tag_over_the_index(lang_app: Any) -> None:
    from memoryd.store.entries import Filters, list_entries

    def tagged(tag: str) -> set[str]:
        f = Filters(kind="chunk", tags=(tag,))
        rows = lang_app.store.read(lambda con: list_entries(con, f, now=0, limit=50, offset=0)[0])
        return {r["path"] for r in rows}

    assert tagged("ff0000") == set()
    assert tagged("callout-tag") == {"en/Linking notes and files/Embed files.md"}


def test_attachment_names_follow_the_watcher(daemon_factory: Any, config_dict: dict) -> None:
    ws = Path(config_dict["workspace"])
    for rel, text in NOTES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text, encoding="utf-8")
    d = daemon_factory()
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"], timeout=30)
    src = "en/Linking notes and files/Embed files.md"

    def target(name: str) -> str | None:
        links = d.call("links", {"path": src})["links"]
        return next(x["path"] for x in links if x["target"] == name)

    assert target("Engelbart.jpg") is None
    (ws / "en" / "Attachments").mkdir()
    (ws / "en" / "Attachments" / "Engelbart.jpg").write_bytes(b"jpg")
    wait_for(lambda: target("Engelbart.jpg") == "en/Attachments/Engelbart.jpg", timeout=15)
    # a folder of attachments moved in at once, renamed files, a folder moved within

    def guide() -> str | None:
        from conftest import rpc

        return rpc(d.socket, "backlinks", {"path": "guide.pdf"}).get("result", {}).get("path")

    assert guide() is None
    (ws / "tmp-move").mkdir()
    (ws / "tmp-move" / "guide.pdf").write_bytes(b"pdf")
    os.rename(ws / "tmp-move", ws / "en" / "Attachments2")
    wait_for(lambda: guide() == "en/Attachments2/guide.pdf", timeout=15)
    (ws / "en" / "Attachments" / "Engelbart.jpg").rename(ws / "en" / "Attachments" / "E.jpg")
    wait_for(lambda: target("Engelbart.jpg") is None, timeout=15)
    os.rename(ws / "en" / "Attachments2", ws / "en" / "Attachments" / "sub")
    wait_for(lambda: guide() == "en/Attachments/sub/guide.pdf", timeout=15)
    (ws / "en" / "Attachments" / "sub" / "guide.pdf").unlink()
    wait_for(lambda: guide() is None, timeout=15)
    res = d.ctl("backlinks", "Canvas")
    assert res.returncode == 0, res.stderr
    assert "showing zh/插件/Canvas.md" in res.stderr and "en/Plugins/Canvas.md" in res.stderr


def test_watcher_delivers_a_chmod_without_content_change(tmp_path: Path) -> None:
    seen: list[Path] = []
    note = tmp_path / "a.md"
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "b.md").write_text("b")
    note.write_text("a")
    w = Watcher(tmp_path, seen.extend, debounce=0.1)
    w.start()
    try:
        mtime = note.stat().st_mtime_ns
        note.chmod(0o600)
        wait_for(lambda: note in seen, timeout=5)
        assert note.stat().st_mtime_ns == mtime  # the attribute event alone brought it
        folder.chmod(0o700)  # a folder made readable again: walked like one that appeared
        wait_for(lambda: folder / "b.md" in seen, timeout=5)
    finally:
        w.stop()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_a_file_made_readable_is_indexed_at_once(daemon_factory: Any, config_dict: dict) -> None:
    ws = Path(config_dict["workspace"])
    note = ws / "locked.md"
    note.write_text("# Locked\nzebracorn inside\n")
    note.chmod(0)
    d = daemon_factory()
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"], timeout=30)
    found = lambda: d.call("search", {"query": "zebracorn", "mode": "keyword"})["hits"]  # noqa: E731
    assert found() == []
    note.chmod(0o644)
    wait_for(found, timeout=10)
