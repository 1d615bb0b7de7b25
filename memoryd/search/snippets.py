"""Snippets as plain text with the matches' character ranges (issue 19.8): FTS5 marks matches
with control characters; the text is returned as it is written (`[[deploy]]`, `#`, `**` stay
literal: no markdown escaping), and the marks become `highlights`, [start, end) offsets into
the snippet that a client may render (memoryctl bolds them on a terminal)."""

from __future__ import annotations

import re

from memoryd.text.clip import clip

_OPEN, _CLOSE = "\x02", "\x03"  # what FTS5 wraps matches in; turned into ranges by render_snippet
_MARKDOWN = re.compile(r"([\\`*_\[\]<>~|])")
# render_snippet's patterns, compiled once (it runs for every hit: issue 23.3)
_TOUCHING = re.compile(f"{_CLOSE}(\\s*){_OPEN}")  # one match ending where the next begins
_SPACES = re.compile(" {2,}")
_MARKS = re.compile(f"([{_OPEN}{_CLOSE}])")


def escape_markdown(text: str) -> str:
    """Backslash-escape the characters that could start markdown emphasis, code or links (for a
    client that wants to show a snippet as markdown; search itself returns plain text)."""
    out = _MARKDOWN.sub(r"\\\1", text)
    return "\\" + out if out.startswith("#") else out


def render_snippet(marked: str) -> tuple[str, list[list[int]]]:
    """An FTS5 snippet with \\x02/\\x03 around matches -> one line of plain text and the
    [start, end) character ranges of its matches (adjacent matches are one range; a range never
    starts or ends on a space and is never empty)."""
    text = _TOUCHING.sub(r"\1", " ".join(marked.split()))
    text = _SPACES.sub(" ", text)
    out: list[str] = []
    ranges: list[list[int]] = []
    size = 0
    inside = False
    last = ""
    for part in _MARKS.split(text):
        if part in (_OPEN, _CLOSE):
            inside = part == _OPEN
            continue
        if not part:
            continue
        if last == " ":
            part = part.lstrip(" ")
            if not part:
                continue
        if inside and part.strip():
            lead = len(part) - len(part.lstrip(" "))
            start = size + lead
            ranges.append([start, start + len(part.strip(" "))])
        out.append(part)
        size += len(part)
        last = part[-1]
    line = "".join(out)
    strip = len(line) - len(line.lstrip(" "))
    line = line.strip(" ")
    ranges = [[s - strip, e - strip] for s, e in ranges if e - strip <= len(line)]
    return line, ranges


def plain_snippet(content: str, width: int = 160) -> str:
    return clip(" ".join(content.split()), width)  # between graphemes
