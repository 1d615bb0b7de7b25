"""Which lines of a note are markdown: the one place every reader asks (the chunker's headings,
note titles, inline tags, links, entities' titles, edit_note's sections). Pure functions.

- Fenced code (``` and ~~~, longer fences, in block quotes and callouts, in list items: under
  the item at any indent from its content column, or on the item's line, `- ```sh`): `fenced`,
  one reader for the chunker (a code block is never split at its blank lines) and for
  headings, titles, tags, links and entities. "```x```" is a code span, no fence.
- What Obsidian hides or does not read as markdown: `%%comments%%` and `<!-- comments -->`
  (inline or over several lines), `$$math$$` blocks and `$inline math$` (a `$` with no white
  space after it up to the next `$` on its line with no white space before it: `$5 #budget`
  is a price and a tag; headings keep inline math in their titles). `readable` blanks them
  (offsets kept),
  so a `# line` in a comment or a math block is no heading, and a `#word` or `[[link]]` there is
  no tag or link; their text stays in the chunks (it is searchable, as rg finds it). A `%%`,
  `<!--` or `$$` with no closing one after it is text; `$$` that does not open its line closes
  on that line or is text. Comment marks inside code (`%%` in a code span) are code.
- Headings (`headings`): ATX (`## Title ##`) and setext (`Title` over `===` or `---`), none
  in a front-matter block that opens the text (one whose YAML does not parse, kept as text,
  too), read from that text: `# Title %%draft%%` is the heading "Title". A `---` under a list
  item, a quote or a line indented as code is a thematic break, not a heading (CommonMark).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

# a fence: 3 or more backticks (whose info string holds no backtick: "```x```" is a code span)
# or tildes
_ANY_FENCE = re.compile(r"^([ \t]*)(?:(`{3,})(?=[^`]*$)|(~{3,}))")
_QUOTE = re.compile(r"^ {0,3}> ?")
_ATX_OPEN = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_TICKS = re.compile(r"`+")
_HIDDEN = re.compile(r"%%|<!--|-->|\$\$")
_CLOSES = {"%%": "%%", "<!--": "-->", "$$": "$$"}
# a line that cannot be the text of a setext heading: a list item, a quote, indented code
_NOT_PARAGRAPH = re.compile(r"^(?: {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)| {0,3}>| {4}|\t)")
# a line an indented code block may hold: 4 columns in
_MAYBE_INDENTED = re.compile(r"^(?: {4}|\t| {0,3}\t)", re.M)
# a line that may be a heading (C-speed look before the lines are read one by one)
_MAYBE_HEADING = re.compile(r"^ {0,3}(?:#{1,6}(?:[ \t]|$)|=+[ \t]*$|-+[ \t]*$)", re.M)


# What a #tag is made of, for every reader of tags (obsidian.inline_tags, the entities'): up
# to white space, ASCII punctuation but `-`, `_` and `/`, or Unicode punctuation (Obsidian:
# "#idea…", "#tag’s", "#会议，明天" are the tags idea, tag, 会议). The zero-width joiners an emoji
# or a Persian word holds stay in the tag.
TAG_BODY = (
    "[^\\s#!\"$%&'()*+,.:;<=>?@\\[\\\\\\]^`{|}~\u00a1\u00ab\u00bb\u00bf"
    "\u2000-\u200b\u200e-\u206f\u2e00-\u2e7f\u3000-\u303f"
    "\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]+"
)


def _unquoted(line: str, depth: int | None = None) -> tuple[int, str]:
    """(how many block quote markers `>` open the line, the rest); with `depth`, strip at
    most that many."""
    n = 0
    while depth is None or n < depth:
        m = _QUOTE.match(line)
        if m is None:
            break
        line = line[m.end() :]
        n += 1
    return n, line


def _indent(line: str) -> int:
    """The columns of white space a line opens with (a tab to the next multiple of 4)."""
    return _columns(line, 0)


_ITEM = re.compile(r"(?:[-+*]|\d{1,9}[.)])(?=[ \t]|$)")  # a list marker, where its indent ends
_OPENS_BLOCK = re.compile(r"[ \t]*(?:#|>|`{3}|~{3}|(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$))")


def _columns(text: str, col: int) -> int:
    """The column reached after the white space that opens `text`, from column `col`."""
    for ch in text:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


def _item(inner: str, col: int) -> tuple[int, str] | None:
    """(the content column, the text after the marker) of a list item line whose marker starts
    at column `col`, else None. A marker followed by 5 or more columns of space, or by nothing,
    has its content one column after it (CommonMark: the rest is indented code)."""
    start = len(inner) - len(inner.lstrip(" \t"))
    m = _ITEM.match(inner, start)
    if m is None:
        return None
    rest = inner[m.end() :]
    after = col + (m.end() - start)
    content = _columns(rest, after)
    body = rest.lstrip(" \t")
    if not body or content - after > 4:
        content = after + 1
    return content, body


def _kinds(lines: Iterable[str]) -> Iterator[str | None]:
    """What code each line belongs to, as CommonMark reads lists and quotes: "fence" (a fenced
    code block, its fences included: one that opens at most 3 columns in, in a block quote or a
    callout too, or in a list item, on the item's own line (`- ```sh`) or under it at any
    indent from the item's content column; it closes at its closing fence, where the quote
    ends, or at a line less indented than the item's content: the item ended), "indented" (an
    indented code block: 4 columns in, after a blank line, outside a list), else None."""
    fence: str | None = None
    depth = 0  # the block quote depth of the open fence
    base = 0  # the content column of the list item the open fence is in (0: none)
    items: list[int] = []  # the content columns of the open list items, innermost last
    quoted = 0  # the quote depth of the line before
    blank = True  # the line before was blank (or began the text)
    indented = False  # the line before was in an indented code block
    for line in lines:
        if fence is not None:
            n, inner = _unquoted(line, depth) if depth else (0, line)
            col = _indent(inner)
            if n == depth and (col >= base or not inner.strip()):
                m = _ANY_FENCE.match(inner)
                mark = (m.group(2) or m.group(3)) if m else ""
                if (base or col <= 3) and mark[:1] == fence[0] and len(mark) >= len(fence):
                    fence = None
                yield "fence"
                continue
            fence = None  # the quote or the list item ended, and the code block with it
        depth, inner = _unquoted(line) if line.lstrip(" ").startswith(">") else (0, line)
        if depth != quoted:
            items, quoted = [], depth
        if not inner.strip():
            blank = True
            yield None
            continue
        col = _indent(inner)
        if col >= 4 and not items and (blank or indented):
            blank, indented = False, True
            yield "indented"
            continue
        if items and col < items[-1] and (blank or _OPENS_BLOCK.match(inner)):
            items = [c for c in items if c <= col]  # the items this line is not inside ended
        blank = indented = False
        rest, at = inner, col
        while (item := _item(rest, at)) is not None:  # `- 1. ```sh`: items in items
            items = [c for c in items if c <= at] + [item[0]]
            rest, at = item[1], item[0]
        if rest is not inner:  # a list item's line: a fence right after its marker opens
            m = _ANY_FENCE.match(rest)
            fence_at = at if m else -1
        else:
            m = _ANY_FENCE.match(inner)
            fence_at = col if m and (col <= 3 or (items and col >= items[-1])) else -1
        if m is not None and fence_at >= 0:
            fence, base = m.group(2) or m.group(3), (items[-1] if items else 0)
            yield "fence"
        else:
            yield None


def fenced(lines: Iterable[str]) -> Iterator[tuple[str, bool]]:
    """Each line, with whether it belongs to a fenced code block, its fences included (`_kinds`:
    at most 3 columns in, in a block quote or a callout, in a list item): where the chunker
    keeps code whole and headings, titles, tags, links and entities read no text."""
    lines = list(lines)
    if not any("```" in x or "~~~" in x for x in lines):
        return ((line, False) for line in lines)
    return ((line, kind == "fence") for line, kind in zip(lines, _kinds(lines), strict=True))


def _all_kinds(lines: Sequence[str]) -> list[str | None]:
    """`_kinds` as a list, read only where a line could open a fence or indented code."""
    if any("```" in x or "~~~" in x for x in lines) or _MAYBE_INDENTED.search("\n".join(lines)):
        return list(_kinds(lines))
    return [None] * len(lines)


def code_lines(lines: Sequence[str]) -> list[bool]:
    """Whether each line is code of any kind (`fenced`, or an indented code block: `_kinds`):
    the lines entities read no name, tag or link in."""
    return [kind is not None for kind in _all_kinds(lines)]


def mask_spans(line: str) -> str:
    """Blank `code spans` in one line: a run of N backticks up to the next run of exactly N.
    Linear time (the next run of each length is found once), whatever the line holds."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(line)]
    following: list[int | None] = [None] * len(runs)
    last: dict[int, int] = {}
    for i in range(len(runs) - 1, -1, -1):
        n = runs[i][1] - runs[i][0]
        following[i] = last.get(n)
        last[n] = i
    chars = list(line)
    i = 0
    while i < len(runs):
        j = following[i]
        if j is None:
            i += 1
            continue
        start, end = runs[i][0], runs[j][1]
        chars[start:end] = " " * (end - start)
        i = j + 1
    return "".join(chars)


def _hidden(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each comment and math part of a text whose code is blanked. Linear:
    the next closing mark of each kind is found once for every mark."""
    marks = [(m.start(), m.group()) for m in _HIDDEN.finditer(text)]
    after: list[dict[str, int]] = [{}] * len(marks)  # the next mark of each kind after each
    seen: dict[str, int] = {}
    for i in range(len(marks) - 1, -1, -1):
        after[i] = dict(seen)
        seen[marks[i][1]] = i
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(marks):
        start, mark = marks[i]
        close = _CLOSES.get(mark)
        j = after[i].get(close) if close else None
        if j is None:  # never closed: text
            i += 1
            continue
        end = marks[j][0] + len(marks[j][1])
        if mark == "$$" and "\n" in text[start:end]:
            line_start = text.rfind("\n", 0, start) + 1
            if _unquoted(text[line_start:start])[1].strip():  # mid-line `$$` over lines: text
                i += 1
                continue
        out.append((start, end))
        i = j + 1
    return out


_DOLLAR = re.compile(r"(?<![\\$])\$(?!\$)")  # a `$` alone, not escaped


def _inline_math(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each `$inline math$` of a text whose code, comments and math blocks
    are blanked: a `$` with no white space after it up to the next `$` on its line with no
    white space before it (Obsidian's rule: `$5 #budget` and `$5 and $6` are text). Linear: the
    next closing `$` of each is found once."""
    marks = [m.start() for m in _DOLLAR.finditer(text)]
    closer: list[int | None] = [None] * len(marks)  # the next `$` that may close, after each
    last: int | None = None
    for i in range(len(marks) - 1, -1, -1):
        closer[i] = last
        if marks[i] > 0 and not text[marks[i] - 1].isspace():
            last = i
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(marks):
        start, j = marks[i], closer[i]
        if start + 1 < len(text) and not text[start + 1].isspace() and j is not None:
            end = marks[j] + 1
            if text.find("\n", start, end) < 0:  # on one line
                out.append((start, end))
                i = j + 1
                continue
        i += 1
    return out


def _blank(text: str, regions: Iterable[tuple[int, int]]) -> str:
    """The text with each (start, end) region blanked, line breaks and offsets kept."""
    parts: list[str] = []
    at = 0
    for start, end in sorted(regions):
        start = max(start, at)
        if start >= end:
            continue
        parts.append(text[at:start])
        parts.append("".join("\n" if ch == "\n" else " " for ch in text[start:end]))
        at = end
    parts.append(text[at:])
    return "".join(parts)


def readable(
    lines: Sequence[str], *, spans: bool = False, math: bool = True
) -> list[tuple[str, bool]]:
    """Each line as markdown reads it, with whether it belongs to a fenced code block (`fenced`;
    a code line is given as it is): comments and math blanked (`$$blocks$$`, and with `math`
    `$inline math$` too), offsets kept; with `spans`, code spans and all the code `_kinds`
    finds too (what tags and links are read from)."""
    marks = ("%%", "<!--", "$") if math else ("%%", "<!--", "$$")
    if not spans and not any(mark in x for x in lines for mark in marks):
        return list(fenced(lines))  # nothing hidden: the lines as they are
    every = _all_kinds(lines)
    flags = [kind == "fence" for kind in every]
    kinds = [kind is not None for kind in every]
    masked = [
        " " * len(line) if kind else mask_spans(line) if "`" in line else line
        for line, kind in zip(lines, kinds, strict=True)
    ]
    text = "\n".join(masked)
    regions = _hidden(text) if ("%%" in text or "<!--" in text or "$$" in text) else []
    if math and "$" in text:
        regions += _inline_math(_blank(text, regions) if regions else text)
    if regions:
        out = _blank(text if spans else "\n".join(lines), regions).split("\n")
    else:
        out = masked if spans else list(lines)
    if not spans:  # code only `_code` sees: its text (no heading starts 4 columns in)
        each = zip(lines, out, kinds, flags, strict=True)
        out = [line if kind and not code else seen for line, seen, kind, code in each]
    rows = zip(lines, out, flags, strict=True)
    return [(line if code else seen, code) for line, seen, code in rows]


def atx_heading(line: str) -> tuple[int, str] | None:
    """(level, title) of an ATX heading line ("## Title ##"), else None. Plain string work: a
    regex with a lazy title before optional trailing space and #s backtracks cubically on a
    line of many spaces (4,000 spaces took 160 s)."""
    m = _ATX_OPEN.match(line)
    if m is None:
        return None
    title = line[m.end() :].strip(" \t")
    bare = title.rstrip("#")
    if bare != title and (not bare or bare[-1] in " \t"):  # a closing sequence of #s
        title = bare.rstrip(" \t")
    return len(m.group(1)), title


def front_matter_lines(lines: Sequence[str]) -> int:
    """How many lines a front-matter block opens the text with (`---` to `---` or `...`), its
    YAML valid or not (Obsidian shows one that does not parse as properties too), else 0: no
    `# comment` in it is a heading, its closing `---` no setext underline."""
    if not lines or lines[0].strip() != "---":
        return 0
    return next((i + 1 for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), 0)


def headings(lines: Sequence[str]) -> list[tuple[int, int, str, int]]:
    """(line index, level, title, lines it takes: 1 for ATX, 2 for setext) of every heading,
    in order, as `readable` reads the lines (`$inline math$` stays in a title, as Obsidian shows
    it; whether a line can be a paragraph's is read from the line as written: a comment that
    opens a line does not make it indented code)."""
    if not _MAYBE_HEADING.search("\n".join(lines)):
        return []
    out: list[tuple[int, int, str, int]] = []
    top = front_matter_lines(lines)
    para, para_text = -1, ""  # the line an underline would make a heading ("": none)
    prose: bool | None = None  # its block is a paragraph (not a list or a quote); None: no block
    for i, (line, code) in enumerate(readable(lines, math=False)):
        if code or not line.strip() or i < top:
            para_text, prose = "", None
            continue
        h = atx_heading(line)
        if h is not None:
            out.append((i, h[0], h[1], 1))
            para_text, prose = "", None
            continue
        if para_text and _SETEXT.match(line):
            out.append((para, 1 if line.strip()[0] == "=" else 2, para_text.strip(), 2))
            para_text, prose = "", None
            continue
        written = _NOT_PARAGRAPH.match(lines[i]) is None
        if prose is None:
            prose = written
        para, para_text = (i, line) if prose and written else (-1, "")
    return out
