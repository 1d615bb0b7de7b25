"""Obsidian markdown beyond plain markdown (walkr14): what is not markdown text (fenced code,
%%comments%%, <!-- comments -->, $$math$$) holds no heading, tag or link for any reader, and
every reader of headings (the chunker, note titles, the title heading check, entities' title,
edit_note's sections) finds the same ones, setext headings included (mdblocks)."""

from __future__ import annotations

from typing import Any

import pytest

from memoryd.agents import notetools
from memoryd.agents.tools import ToolFailure
from memoryd.notes import vault
from memoryd.store.entries import Filters, list_entries
from memoryd.text import entities, markdown, mdblocks, notehead, obsidian

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

HIDDEN = "# Ada Lovelace\n#hiddentag [[Hidden Link]] and [md](Hidden%20Md.md)"

# each construct wraps HIDDEN (its lines under the construct's prefix); what follows it is read
# as markdown again
WRAPPED = {
    "backtick fence": "```bash\n{}\n```",
    "tilde fence": "~~~\n{}\n~~~",
    "longer fence holding a shorter one": "````md\n```\n{}\n```\n````",
    "fence in a list item": "- step:\n  ```\n  {}\n  ```",
    "fence in a callout": "> [!note] Code\n> ```\n> {}\n> ```",
    "fence in a foldable callout": "> [!tip]- Code\n> ```\n> {}\n> ```",
    "fence under a nested list item": (
        "1. Install:\n    - deps:\n        ```bash\n        {}\n        ```"
    ),
    "fence on a list item's line": "- ```bash\n  {}\n  ```",
    "tilde fence on an ordered item's line": "1. ~~~\n   {}\n   ~~~",
    "fence under a wide ordered marker": "10. Run:\n    ~~~sh\n    {}\n    ~~~",
    "fence under a nested item's line": "- a\n  - ```\n    {}\n    ```",
    "comment block": "%%\n{}\n%%",
    "comment block opened mid-line": "Visible %% hidden from here\n{}\n%%",
    "html comment block": "<!--\n{}\n-->",
    "math block": "$$\n{}\n$$",
}
HIDDEN_INLINE = "#hiddentag [[Hidden Link]] [md](Hidden%20Md.md)"
INLINE = {
    "code span": "Run `{}` now.",
    "inline comment": "Shown %%{}%% shown.",
    "inline html comment": "Shown <!-- {} --> shown.",
    "inline math": "Shown $${}$$ shown.",
    "inline math in single dollars": "Shown $x = {}$ shown.",
    "inline math after a price": "It cost $5, so $x {}$ shown.",
}
INDENTED = {
    "indented code block": "Run this:\n\n    {}\n    make",
    "indented code block with a tab": "Run this:\n\n\t{}",
}
AFTER = "\n\n# Grace Hopper\n\nText #realtag and [[Real Link]].\n"


def _mentions(body: str) -> set[str]:
    return {m.key for m in entities.extract_note(body, "n.md")}


def _check_readers(body: str, *, hidden_heading: bool) -> None:
    chunks = markdown.chunk_markdown(body)
    paths = {p for c in chunks for p in c.heading_path}
    tags = obsidian.inline_tags(body)
    targets = [link.target for link in obsidian.links(body)]
    assert "hiddentag" not in tags and "realtag" in tags
    assert "Hidden Link" not in targets and "Hidden Md.md" not in targets
    assert "Real Link" in targets
    named = _mentions(body)  # entities read tags and links as the index does, and no name
    assert "#hiddentag" not in named and "hidden link" not in named, named
    assert "#realtag" in named and "real link" in named, named
    assert "hiddentag" in "\n".join(c.content for c in chunks)  # its text stays searchable
    if hidden_heading:
        assert paths == {"Grace Hopper"}
        assert obsidian.title(None, body, "n.md") == "Grace Hopper"
        heads = [h[2] for h in mdblocks.headings(body.split("\n"))]
        assert heads == ["Grace Hopper"]
        with pytest.raises(ToolFailure, match="no heading"):
            notetools.find_section(body.splitlines(keepends=True), "Ada Lovelace")
        text = body + "\nGrace Hopper met Ada Lovelace.\n"  # the title names the note's file
        named = [m.key for m in entities.extract_note(text, "n.md") if m.source == "file"]
        assert named == ["grace hopper"]


@pytest.mark.parametrize("construct", list(WRAPPED))
def test_a_block_that_is_not_markdown_text_holds_no_heading_tag_or_link(construct: str) -> None:
    wrap = WRAPPED[construct]
    prefix = wrap[wrap.index("{}") - wrap[: wrap.index("{}")][::-1].index("\n") : wrap.index("{}")]
    _check_readers(wrap.format(HIDDEN.replace("\n", "\n" + prefix)) + AFTER, hidden_heading=True)


@pytest.mark.parametrize("construct", list(INLINE))
def test_an_inline_part_that_is_not_markdown_text_holds_no_tag_or_link(construct: str) -> None:
    _check_readers(INLINE[construct].format(HIDDEN_INLINE) + AFTER, hidden_heading=False)


@pytest.mark.parametrize("construct", list(INDENTED))
def test_an_indented_code_block_holds_no_tag_or_link(construct: str) -> None:
    _check_readers(INDENTED[construct].format(HIDDEN_INLINE) + AFTER, hidden_heading=False)


@pytest.mark.parametrize(
    "body",
    [
        "- item\n\n    #kept [[Kept]] (the item's second paragraph)",
        "- item\n    - nested #kept [[Kept]]",
        "1. step\n   more\n\n    #kept [[Kept]]",
        "Text\n    #kept [[Kept]] (a paragraph's lazy line)",
    ],
)
def test_an_indented_line_in_a_list_or_paragraph_is_text(body: str) -> None:
    assert obsidian.inline_tags(body) == ("kept",)
    assert [link.target for link in obsidian.links(body)] == ["Kept"]


def test_a_list_items_fence_left_open_ends_with_the_item() -> None:
    body = "- step\n    ```\n    #code\n# After\n\n#kept [[Kept]]\n"
    assert obsidian.inline_tags(body) == ("kept",)
    assert [c.heading_path for c in markdown.chunk_markdown(body)][-1] == ("After",)


LIST_FENCES = {
    "under a dash item": "- step:\n  ```sh\n{}\n  ```\n- next step",
    "under an ordered item": "1. step:\n   ~~~\n{}\n   ~~~\n2. next step",
    "under a wide ordered marker": "10. step:\n    ```sh\n{}\n    ```\n11. next step",
    "under a nested item": "- a\n  - b:\n    ```sh\n{}\n    ```\n  - next step",
    "on the item's line": "- ```sh\n{}\n  ```\n- next step",
}


@pytest.mark.parametrize("where", list(LIST_FENCES))
def test_the_chunker_keeps_a_list_items_fence_whole(where: str) -> None:
    """The chunker reads fences as every other reader does: a long section is split between
    paragraphs, never at a blank line inside a list item's code block."""
    indent = " " * (4 if "wide" in where or "nested" in where else 3 if "ordered" in where else 2)
    lines = ["make deps", "", "# build it", "make all", "", "make install"]
    code = "\n".join(f"{indent}{line}" if line else "" for line in lines)
    body = "# Setup\n\n" + "Words to fill the section. " * 6 + "\n\n"
    body += LIST_FENCES[where].format(code) + "\n\nMore words after the list. " * 3 + "\n"
    chunks = markdown.chunk_markdown(body, max_tokens=60, overlap_tokens=0)
    holding = [c for c in chunks if "make deps" in c.content or "make install" in c.content]
    assert len(holding) == 1 and "# build it" in holding[0].content, [c.content for c in chunks]
    assert {p for c in chunks for p in c.heading_path} == {"Setup"}


def test_a_backtick_run_with_backticks_after_it_is_a_code_span_not_a_fence() -> None:
    body = "Run ```make``` first.\n```make``` again #kept\n\n# After\n\n[[Kept]]\n"
    assert obsidian.inline_tags(body) == ("kept",)
    assert [h[2] for h in mdblocks.headings(body.split("\n"))] == ["After"]
    assert [link.target for link in obsidian.links(body)] == ["Kept"]


@pytest.mark.parametrize(
    ("body", "tags"),
    [
        ("$5 #budget", ("budget",)),  # a price, then a tag
        ("Ana paid $5 #budget, Bo $6 #food", ("budget", "food")),  # a space before each `$`
        ("It costs $ 5 #budget$", ("budget",)),  # a space after the opening `$`
        ("Escaped \\$x #kept\\$", ("kept",)),
        ("`$x` #kept $y", ("kept",)),  # a `$` in code opens nothing
    ],
)
def test_a_dollar_that_opens_no_math_hides_nothing(body: str, tags: tuple[str, ...]) -> None:
    assert obsidian.inline_tags(body) == tags
    assert {m.key for m in entities.extract_note(body, "n.md") if m.key.startswith("#")} == {
        f"#{t}" for t in tags
    }


def test_a_line_that_opens_with_a_comment_or_math_is_read_after_it() -> None:
    """The hidden part is blanked, and the line is still the text it was, not indented code."""
    body = "%% draft %% Grace Hopper wrote #kept\n$$x$$ and [[Kept]]\n\n%%c%% Launch Plan\n===\n"
    assert obsidian.inline_tags(body) == ("kept",)
    assert "grace hopper" in _mentions(body) and "#kept" in _mentions(body)
    assert [h[2] for h in mdblocks.headings(body.split("\n"))] == ["Launch Plan"]


def test_a_heading_keeps_its_inline_math() -> None:
    body = "# Cost $O(n)$ of a scan\n\nText.\n"
    assert markdown.chunk_markdown(body)[0].heading_path == ("Cost $O(n)$ of a scan",)
    assert obsidian.title(None, body, "n.md") == "Cost $O(n)$ of a scan"


@pytest.mark.parametrize(
    "body",
    [
        "I am 100%% sure\n# Real\n#kept [[Kept]]",  # a %% never closed: text
        "Type `%%` to comment.\n# Real\n#kept [[Kept]]\n\nAnd %% here.",  # %% in code: code
        "<!-- never closed\n# Real\n#kept [[Kept]]",
        "It cost $$ over\n# Real\n#kept [[Kept]]\n\nand $$ more",  # mid-line $$ over lines
    ],
)
def test_an_unclosed_or_quoted_mark_hides_nothing(body: str) -> None:
    assert obsidian.title(None, body, "n.md") == "Real"
    assert "kept" in obsidian.inline_tags(body)
    assert [link.target for link in obsidian.links(body)] == ["Kept"]


def test_a_heading_with_a_comment_is_named_without_it() -> None:
    body = "# Plan %%draft, ask Bo%%\n\nText.\n\n## Steps <!-- todo -->\n\nMore.\n"
    assert [c.heading_path for c in markdown.chunk_markdown(body, max_tokens=8)] == [
        ("Plan",),
        ("Plan", "Steps"),
    ]
    assert obsidian.title(None, body, "n.md") == "Plan"


SETEXT = {
    "setext level 1": ("Launch Plan\n===========\n\nText.\n", "Launch Plan", 1),
    "setext level 2": ("Intro.\n\nLaunch Plan\n-----------\n\nText.\n", "Launch Plan", 2),
    "atx with closing hashes": ("## Launch Plan ##\n\nText.\n", "Launch Plan", 2),
}


@pytest.mark.parametrize("case", list(SETEXT))
def test_every_heading_reader_reads_setext_and_atx_alike(case: str) -> None:
    body, name, level = SETEXT[case]
    assert [(h[2], h[1]) for h in mdblocks.headings(body.split("\n"))] == [(name, level)]
    assert markdown.chunk_markdown(body)[-1].heading_path == (name,)
    lines = body.splitlines(keepends=True)
    start, under, _ = notetools.find_section(lines, name)
    assert "Launch Plan" in lines[start]
    assert notehead.has_title_heading(body) is (level == 1)
    assert (obsidian.title(None, body, "n.md") == name) is (level == 1)
    for action in ("insert_after", "replace_section"):  # the heading stays whole
        edited, _ = notetools.edit(body, {"action": action, "heading": name, "content": "Added."})
        assert edited.split("\n")[start:under] == body.split("\n")[start:under]
        assert edited.split("\n")[under : under + 2] in (["Added.", ""], ["", "Added."])
        heads = [(h[2], h[1]) for h in mdblocks.headings(edited.split("\n"))]
        assert heads == [(name, level)]


@pytest.mark.parametrize(
    "body",
    [
        "- [ ] a task\n---\nText.\n",  # a thematic break under a list item
        "- item\n  continued\n---\nText.\n",  # under a list item's continuation line
        "> a quote\n---\nText.\n",
        "    indented code\n---\nText.\n",
        "# Title\n===\n",  # an underline under a heading
    ],
)
def test_a_rule_under_a_list_quote_or_code_is_no_heading(body: str) -> None:
    heads = [h[2] for h in mdblocks.headings(body.split("\n"))]
    assert heads in ([], ["Title"])
    assert {p for c in markdown.chunk_markdown(body) for p in c.heading_path} == set(heads)


def test_edit_note_reads_no_heading_in_the_front_matter() -> None:
    text = "---\n# set by the template\nstatus: draft\n---\n# Notes\n\nText.\n"
    with pytest.raises(ToolFailure, match="no heading 'set by the template'"):
        notetools.find_section(text.splitlines(keepends=True), "set by the template")
    edited, _ = notetools.edit(
        text, {"action": "insert_after", "heading": "Notes", "content": "More."}
    )
    assert edited.endswith("# Notes\nMore.\n\nText.\n")


NOTE = (
    "---\ntags: [kept]\n---\n%%\n# Draft title\nTODO #hiddentag [[Hidden]]\n%%\n"
    "<!-- [[Also Hidden]] #alsohidden -->\n$$\n# not a heading\n$$\n"
    "# Visible\n\nLinks to [[Target]] #shown.\n"
)


def test_the_index_keeps_no_tag_or_link_from_comments_or_math(make_app: Any) -> None:
    app = make_app(model=None)
    (app.cfg.workspace / "Target.md").write_text("# Target\n\nHere.\n")
    (app.cfg.workspace / "Note.md").write_text(NOTE)
    assert app.indexer.reconcile().errors == []

    def tagged(tag: str) -> set[str]:
        f = Filters(kind="chunk", tags=(tag,))
        rows = app.store.read(lambda con: list_entries(con, f, now=0, limit=50, offset=0)[0])
        return {r["path"] for r in rows}

    assert tagged("shown") == tagged("kept") == {"Note.md"}
    assert tagged("hiddentag") == tagged("alsohidden") == set()
    out = vault.links(app.store, "Note.md")["links"]
    assert [(x["target"], x["path"]) for x in out] == [("Target", "Target.md")]
    rows = app.store.read(
        lambda con: list_entries(con, Filters(kind="chunk"), now=0, limit=50, offset=0)[0]
    )
    heads = {tuple(r["heading_path"]) for r in rows if r["path"] == "Note.md"}
    assert all("Draft title" not in h and "not a heading" not in h for h in heads), heads
    assert ("Visible",) in heads


def test_an_upgrade_reads_every_note_again_with_this_reader(make_app: Any) -> None:
    """index/chunking.py's READER: notes indexed by a release that read markdown otherwise
    (their record has no `reader`, or an older one) are read again at the first start, once."""
    import json

    from memoryd.index import chunking
    from memoryd.store import entries

    app = make_app(model=None)
    (app.cfg.workspace / "Note.md").write_text(NOTE)
    assert app.indexer.reconcile().indexed == 1
    old = {k: v for k, v in chunking.record(app.cfg.indexer).items() if k != "reader"}
    key = chunking.meta_key(app.store)
    app.store.run_write(lambda con: entries.set_meta(con, key, json.dumps(old)))
    make_app.close(app)

    app = make_app(model=None)  # the upgrade
    assert app.indexer.reconcile().indexed == 1
    make_app.close(app)
    app = make_app(model=None)  # and the next start: nothing to read
    report = app.indexer.reconcile()
    assert report.indexed == 0 and report.unchanged == 1


def test_an_entitys_line_of_text_that_opens_with_a_tag_is_no_heading() -> None:
    """search/entities.py shows the line of text before a heading: `#ops Kestrel shipped` is a
    tag and text (mdblocks.atx_heading), not a heading as `## Kestrel plan` is."""
    from memoryd.search import entities as entity_search

    content = "## Kestrel plan\n#ops Kestrel shipped on Monday.\n"
    got = entity_search._line(content, 1, [(1, "Kestrel"), (2, "Kestrel")], False)
    assert got == (2, "#ops Kestrel shipped on Monday.")


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("[text](<My note.md>)", "[text](<My note.md>)"),
        ("[text](My%20note.md#Next%20steps)", "[text](<My note.md#Next steps>)"),
        ("[text](notes/plan.md)", "[text](notes/plan.md)"),
        ("[[My note#Next steps|see]]", "[[My note#Next steps|see]]"),
    ],
)
def test_memoryctl_links_shows_a_link_that_works_pasted_back(written: str, shown: str) -> None:
    from memoryd.ctl.admin import as_written

    (link,) = obsidian.links(written)
    row = {k: getattr(link, k) for k in ("target", "heading", "alias", "embed", "kind")}
    assert as_written(row) == shown
    assert [x.target for x in obsidian.links(shown)] == [link.target]


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ("An #idea… for later", "idea"),
        ("the #kestrel’s launch", "kestrel"),
        ("#travel—then home", "travel"),
        ("会议 #会议，明天开", "会议"),
        ("見て #タグ。次", "タグ"),
        ("hoy #fiesta¡ ya", "fiesta"),
        ("#family👨‍👩‍👧 photo", "family👨‍👩‍👧"),
        ("#a/b-c_d done", "a/b-c_d"),
    ],
)
def test_a_tag_ends_at_unicode_punctuation_for_every_tag_reader(text: str, tag: str) -> None:
    assert obsidian.inline_tags(text) == (tag,)
    assert [m.key for m in entities.extract_note(text) if m.type == "tag"] == ["#" + tag]


@pytest.mark.parametrize(
    "front",
    [
        "---\ntitle: Kickoff: the plan\n# set by the template\ntags: x\n---\n",  # YAML error
        "---\n# set by the template\nstatus: draft\n---\n",  # valid YAML
        "---\njust text, not a mapping\n# set by the template\n---\n",
    ],
)
def test_no_reader_takes_a_front_matter_line_for_a_heading(front: str) -> None:
    text = front + "Body text about kestrels.\n"
    fm, chunks = markdown.parse_document(text)
    assert [c.heading_path for c in chunks] in ([()], [(), ()]), chunks
    _, body, _ = markdown.parse_front_matter(text)
    assert notehead.title_of("Kickoff.md", fm, body) == (fm.title or "Kickoff")
    with pytest.raises(ToolFailure, match="no heading"):
        notetools.find_section(text.splitlines(keepends=True), "set by the template")
    assert not [m for m in entities.extract_note(text, "Kickoff.md") if m.key == "tags: x"]
