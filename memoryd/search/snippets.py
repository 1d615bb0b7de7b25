"""Snippets as safe markdown: FTS5 marks matches with control characters, the text is escaped,
then matches become **bold**, so a highlight can never run into the text's own asterisks."""

from __future__ import annotations

import re

_OPEN, _CLOSE = "\x02", "\x03"  # what FTS5 wraps matches in; turned into ** by render_snippet
_MARKDOWN = re.compile(r"([\\`*_\[\]<>~|])")


def escape_markdown(text: str) -> str:
    """Backslash-escape the characters that could start markdown emphasis, code or links."""
    out = _MARKDOWN.sub(r"\\\1", text)
    return "\\" + out if out.startswith("#") else out


def render_snippet(marked: str) -> str:
    """An FTS5 snippet with \\x02/\\x03 around matches -> one line of markdown: matches in
    **bold**, every markdown character of the text escaped, so a highlight can never run into
    the text's own asterisks (`****Caroline****`)."""
    # Adjacent matches become one highlight (never `**a****b**`).
    text = re.sub(f"{_CLOSE}(\\s*){_OPEN}", r"\1", " ".join(marked.split()))
    out: list[str] = []
    pos = 0
    for m in re.finditer(f"{_OPEN}(.*?){_CLOSE}", text):
        out.append(escape_markdown(text[pos : m.start()].replace(_OPEN, "").replace(_CLOSE, "")))
        inner = m.group(1).strip()
        if inner:
            lead = " " if m.group(1)[:1].isspace() else ""
            trail = " " if m.group(1)[-1:].isspace() else ""
            out.append(f"{lead}**{escape_markdown(inner)}**{trail}")
        elif m.group(1):
            out.append(" ")
        pos = m.end()
    out.append(escape_markdown(text[pos:].replace(_OPEN, "").replace(_CLOSE, "")))
    return re.sub(" {2,}", " ", "".join(out)).strip()


def plain_snippet(content: str, width: int = 160) -> str:
    text = " ".join(content.split())
    text = text if len(text) <= width else text[: width - 1] + "…"
    return escape_markdown(text)
