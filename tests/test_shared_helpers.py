"""Helpers that replaced copies made by parallel branches: one fenced-code scanner (chunker, tags,
links, titles), one workspace-path resolver (delete path, reindex path), one note-path check
(notes API, links, backlinks), one describer of a refused write on the daemon's side (and
memoryctl's standard-library copy held to its cases)."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memoryd.core.errors import InvalidInput, TooLarge
from memoryd.notes import vault
from memoryd.serve import methods as api
from memoryd.text import obsidian
from memoryd.text.markdown import chunk_markdown, fenced


def call(app: Any, name: str, **params: Any) -> Any:
    return api.lookup(name, params).fn(app, params)


def test_fenced_marks_code_blocks_and_their_fences() -> None:
    lines = ["a", "```py", "#x [[y]]", "~~~", "```", "b", "~~~~", "c", "~~~", "d"]
    assert [code for _, code in fenced(lines)] == [
        False,
        True,
        True,
        True,  # a ~~~ inside a ``` block does not close it
        True,
        False,
        True,
        True,
        True,  # shorter than the opening fence: still inside
        True,
    ]
    assert [line for line, _ in fenced(lines)] == lines


def test_the_chunker_and_the_vault_agree_on_code_blocks() -> None:
    body = "# T\n\n```\n# not a heading #nottag [[nolink]]\n\nstill code\n```\n\n#tag [[link]]\n"
    chunks = chunk_markdown(body)
    assert [c.heading_path for c in chunks] == [("T",)]
    assert "still code" in chunks[0].content
    assert obsidian.inline_tags(body) == ("tag",)
    assert [x.target for x in obsidian.links(body)] == ["link"]
    assert obsidian.title(None, "```\n# Code\n```\n# Real\n", "x.md") == "Real"


def test_workspace_paths_resolve_in_one_place(make_app: Any, tmp_path: Path) -> None:
    app = make_app(model=None)
    ws = app.cfg.workspace
    (ws / "d").mkdir()
    (ws / "d" / "n.md").write_text("# N\n")
    os.symlink("loop", ws / "loop")
    assert app.indexer.resolve_path(" d/n.md ") == ("d/n.md", (ws / "d" / "n.md").resolve())
    assert app.indexer.resolve_path(".", root_ok=True)[0] == "."
    for bad, match in [
        (".", "outside the workspace"),
        ("../x.md", "outside the workspace"),
        ("loop", "cannot resolve"),
        ("", "path: must not be empty"),
        (["d"], "expected a string"),
        ("a\x00b", "NUL"),
    ]:
        with pytest.raises(InvalidInput, match=match):
            app.indexer.resolve_path(bad)
    with pytest.raises(TooLarge):
        app.indexer.resolve_path("x" * 5000)
    # both doors use it: delete by path and reindex by path
    for name, params in [("delete", {"path": "../x.md"}), ("reindex", {"path": "../x.md"})]:
        with pytest.raises(InvalidInput, match="outside the workspace"):
            call(app, name, **params)
    assert call(app, "reindex", path="d/n.md")["indexed"] == 1
    assert call(app, "delete", path="d", dry_run=True)["paths"] == ["d/n.md"]


def test_links_take_the_notes_api_path_rules(make_app: Any) -> None:
    app = make_app(model=None)
    app.notes.write("~draft.md", "# Draft\n\n[[Home]]\n")  # a note, not the home folder
    app.notes.write("Home.md", "# Home\n")
    assert vault.backlinks(app.store, "Home")["backlinks"][0]["path"] == "~draft.md"
    assert vault.links(app.store, "/~draft.md")["path"] == "~draft.md"
    assert vault.links(app.store, "./~draft")["path"] == "~draft.md"
    for bad in ("../Home.md", "Ho\x07me", "~/Home.md", "a\x00"):
        with pytest.raises(InvalidInput):
            vault.links(app.store, bad)


# Every describer of a refused write knows the same errnos: the daemon's (core/oserrors.describe,
# `memoryd run`'s last word and every write path's message) and memoryctl's standard-library
# copy (ctl/outfile.refused_output, `export -o FILE`): (errno, the words both say; None: neither
# has a case for it, both say their fallback).
REFUSALS = [
    (errno.ENOSPC, "df -i"),
    (errno.EDQUOT, "free some space"),
    (errno.EFBIG, "ulimit -f"),
    (errno.EROFS, "remount"),
    (errno.EACCES, "write permission"),
    (errno.EPERM, "write permission"),
    (errno.EMFILE, "ulimit -n"),
    (errno.ENFILE, "ulimit -n"),
    (errno.EIO, "dmesg"),
    (errno.EEXIST, "a file is in the way"),
    (errno.ENOTDIR, "a file is in the way"),
    (errno.EISDIR, "it is a folder"),
    (errno.ENOENT, None),
    (errno.EINVAL, None),
]


def _describers() -> list[tuple[Callable[[OSError], str], str]]:
    """Each describer, with the fix it says for an errno it has no case for."""
    from memoryd.core import oserrors
    from memoryd.ctl.outfile import refused_output

    def ctl(exc: OSError) -> str:
        return refused_output(exc, "/x/out.json")

    unknown = OSError(0, "odd")
    return [
        (oserrors.describe, oserrors.describe(unknown).split("; ", 1)[1]),
        (ctl, ctl(unknown).split("; ", 1)[1]),
    ]


@pytest.mark.parametrize(("code", "words"), REFUSALS, ids=[errno.errorcode[c] for c, _ in REFUSALS])
@pytest.mark.parametrize("which", [0, 1], ids=["oserrors", "memoryctl"])
def test_every_describer_of_a_refusal_knows_the_same_cases(
    code: int, words: str | None, which: int
) -> None:
    describe, fallback = _describers()[which]
    said = describe(OSError(code, os.strerror(code), "/x/out.json"))
    assert "/x/out.json" in said and os.strerror(code) in said
    if words is None:
        assert said.endswith(fallback), said
    else:
        assert words in said.lower() and not said.endswith(fallback), said


@pytest.mark.parametrize("which", [0, 1], ids=["oserrors", "memoryctl"])
def test_no_describer_has_a_case_the_table_lacks(which: int) -> None:
    """A case added to one describer and not to the table (and so to the other) fails here."""
    describe, fallback = _describers()[which]
    known = {c for c, words in REFUSALS if words is not None}
    for code in errno.errorcode:
        said = describe(OSError(code, os.strerror(code), "/x/out.json"))
        assert said.endswith(fallback) or code in known, errno.errorcode[code]
