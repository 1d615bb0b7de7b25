"""The web page's note rendering (static/notemd.js) run in node, as the page runs it on the
vendored markdown-it: Obsidian's links reach the note (and the heading) the daemon resolved,
comments are hidden and a math block holds no heading, as the daemon reads them
(text/mdblocks.py). Skips, saying why, without node (apt-get install nodejs)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parent.parent / "memoryd" / "web" / "static"
NODE = shutil.which("node") or shutil.which("nodejs")

RUN = """
const markdownit = require(process.argv[1] + "/vendor/markdown-it.min.js");
const NM = require(process.argv[1] + "/notemd.js");
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const resolved = new Map(Object.entries(input.resolved));
const md = NM.create(markdownit, resolved, input.path);
process.stdout.write(JSON.stringify({
  html: input.bodies.map((b) => md.render(b)),
  hrefs: input.hrefs.map((h) => NM.localHref(h, resolved)),
}));
"""

RESOLVED = {"Other": "sub/Other.md", "Other.md": "sub/Other.md", "Me": "Me.md"}


def render(bodies: list[str], hrefs: list[str] = ()) -> dict[str, list[str | None]]:
    if NODE is None:
        pytest.skip("no node to run the page's script in (apt-get install nodejs)")
    data = {"resolved": RESOLVED, "path": "Me.md", "bodies": bodies, "hrefs": list(hrefs)}
    out = subprocess.run(
        [NODE, "-e", RUN, str(STATIC)],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, list[str | None]] = json.loads(out.stdout)
    return result


OTHER = "/note?path=sub%2FOther.md"
LINKS = [
    ("[[Other]]", f'href="{OTHER}">Other<'),
    ("[[Other.md]]", f'href="{OTHER}">Other.md<'),
    ("[[Other#Some Heading]]", f'href="{OTHER}#some-heading">Other › Some Heading<'),
    ("[[Other#Part#Sub part|see]]", f'href="{OTHER}#sub-part">see<'),
    ("[[Other#^block-id]]", f'href="{OTHER}">Other › ^block-id<'),
    ("[[#Local Heading]]", 'href="#local-heading">Local Heading<'),
    ("![[Other#Some Heading]]", f'href="{OTHER}#some-heading">⤷ Other › Some Heading<'),
    ("| a | [[Other\\|the other]] |\n|---|---|\n", f'href="{OTHER}">the other<'),
    ("[[Missing#Heading]]", 'class="wikilink missing" title="no such note">Missing › Heading<'),
    ("![[Other|300]]", f'href="{OTHER}">⤷ Other<'),  # an image's width, not its name
    ("![[Other|640x480]]", f'href="{OTHER}">⤷ Other<'),
]


@pytest.mark.parametrize(("body", "shown"), LINKS, ids=[b for b, _ in LINKS])
def test_a_wikilink_of_every_form_reaches_its_note_and_heading(body: str, shown: str) -> None:
    html = render([body])["html"][0]
    assert html is not None and shown in html, html


def test_a_markdown_link_reaches_its_note_and_heading() -> None:
    hrefs = ["Other.md", "Other.md#Some%20Heading", "Other.md#%5Eblock", "Nope.md", "%E0.md"]
    assert render([], hrefs)["hrefs"] == [
        OTHER,
        f"{OTHER}#some-heading",
        OTHER,
        None,
        None,
    ]


HIDDEN = {
    "inline comment": "Shown %%secret%% shown.",
    "block comment": "Shown.\n\n%%\nsecret\n\n# secret heading\n%%\n\nshown.",
    "comment over lines of a paragraph": "Shown %%secret\nstill secret%% shown.",
    "html comment": "Shown <!-- secret --> shown.",
    "html comment block": "Shown.\n\n<!--\n# secret heading\n\nsecret\n-->\n\nshown.",
}


@pytest.mark.parametrize("case", list(HIDDEN))
def test_comments_are_hidden_as_obsidian_hides_them(case: str) -> None:
    html = render([HIDDEN[case]])["html"][0] or ""
    assert "secret" not in html and "<h1" not in html
    assert html.count("hown") == 2


@pytest.mark.parametrize(
    "body",
    ["Type `%%` to comment %% and here.", "I am 100%% sure.", "Open <!-- and never close."],
)
def test_a_comment_mark_in_code_or_never_closed_is_text(body: str) -> None:
    html = render([body])["html"][0] or ""
    assert "comment" in html or "sure" in html or "close" in html
    assert ("and here" in html) is ("and here" in body)


def test_a_math_block_holds_no_heading() -> None:
    html = render(["$$\n# not a heading\nx^2\n$$\n\n# Real"])["html"][0] or ""
    assert "<h1>Real</h1>" in html and html.count("<h1") == 1
    assert "# not a heading" in html


def test_the_note_page_loads_the_renderer_before_its_own_script() -> None:
    from memoryd.web import routes

    page = routes.Shell().render("note", "t").body.decode()
    scripts = [s.split('"')[0] for s in page.split('<script src="/static/')[1:]]
    assert scripts.index("notemd.js") < scripts.index("note.js")
    assert "NoteMarkdown.create" in (STATIC / "note.js").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        ("> [!note] Read this\n> body", 'class="callout callout-note">\n<p><strong>Read this'),
        ("> [!tip]- \n> folded", 'class="callout callout-tip">\n<p><strong>Tip</strong>'),
        ("> plain quote", "<blockquote>\n<p>plain quote"),
    ],
)
def test_a_callout_is_a_box_with_its_title_not_its_mark(body: str, shown: str) -> None:
    html = render([body])["html"][0] or ""
    assert shown in html and "[!" not in html


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        ("- [ ] open\n- [x] done", "<li>☐ open</li>\n<li>☑ done</li>"),
        ("- plain [ ] item", "<li>plain [ ] item</li>"),
        ("A ==key *bit*== here", "A <mark>key <em>bit</em></mark> here"),
        ("a == b and c == d", "<p>a == b and c == d</p>"),
        ("`==code==` and ==x`y==", "<code>==code==</code> and ==x`y==</p>"),
    ],
)
def test_tasks_and_highlights_as_obsidian_shows_them(body: str, shown: str) -> None:
    html = render([body])["html"][0] or ""
    assert shown in html, html


IDS = """
const NM = require(process.argv[1] + "/notemd.js");
const used = new Set();
const { ids, first } = NM.headingIds(
  ["Setup", "Setup", "Setup 1", "Setup", "Links", "Backlinks", "Notes", "Äpfel & Birnen"],
  ["main", "toast", "links", "backlinks", "notes", "note-body"]);
process.stdout.write(JSON.stringify({
  ids, first: Object.fromEntries(first), twice: [NM.slug("A b", used), NM.slug("A b", used)],
}));
"""


def test_heading_ids_are_unique_on_the_page() -> None:
    """main gave a second "Setup" the id `setup-` and a heading "Links" the id of the page's
    own list of links (`links`): two elements of one id, so a link to the second reached the
    first. Now as GitHub and Obsidian number them: setup, setup-1, setup-2, and a heading
    "Setup 1" after the second "Setup" (setup-1, taken) is setup-1-1."""
    if NODE is None:
        pytest.skip("no node to run the page's script in (apt-get install nodejs)")
    out = subprocess.run(
        [NODE, "-e", IDS, str(STATIC)], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["ids"] == [
        "setup",
        "setup-1",
        "setup-1-1",
        "setup-2",
        "links-1",
        "backlinks-1",
        "notes-1",
        "äpfel-birnen",
    ]
    assert len(set(got["ids"])) == len(got["ids"])
    # where a link to #slug goes: the first heading of that slug, not the page's own part
    assert got["first"]["setup"] == "setup" and got["first"]["links"] == "links-1"
    assert got["twice"] == ["a-b", "a-b-1"]
