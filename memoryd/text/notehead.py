"""What a note's chunks carry besides their text: the note's title as the root of their heading
path when the note writes no level-1 heading (Obsidian shows a note's file name as its title, so
its notes seldom write `# Title`), and its front-matter aliases above the first chunk's text
(markdown.with_aliases). Headings are in the keyword index on both backends, so a note is found
by its title; nothing of this is embedded (a chunk's vector is its text's).

And its other front-matter values (`status: draft`, `project: kestrel`, `author: Ana Lima`:
`props`), which the note's chunks carry into their keyword rows beside the note's tags (a long
value: its first chunk), as rg finds them in the file; not in their text, snippets or vectors
(stop 38, fm13)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import PurePosixPath

from memoryd.text import markdown, mdblocks
from memoryd.text.markdown import Chunk, FrontMatter

# a level-1 heading may be there (C-speed looks; `has_title_heading` then reads the lines)
_MAYBE_ATX = re.compile(r"^ {0,3}#(?:[ \t]|$)", re.M)
_MAYBE_SETEXT = re.compile(r"^ {0,3}=+[ \t]*$", re.M)


def has_title_heading(body: str) -> bool:
    """Whether the body writes a level-1 heading (`# Title`, or `Title` over `===`) outside
    code blocks, comments and math (mdblocks.headings)."""
    atx = _MAYBE_ATX.search(body)
    if not atx and not _MAYBE_SETEXT.search(body):
        return False
    marks = ("```", "~~~", "%%", "<!--", "$$")
    if atx and body[:3] != "---" and not any(mark in body for mark in marks):
        return True  # nothing it could be inside (code, a comment, front matter): a heading
    return any(level == 1 for _, level, _, _ in mdblocks.headings(body.split("\n")))


def title_of(path: str, fm: FrontMatter, body: str) -> str | None:
    """The title a note's chunks are filed under when it writes none: front-matter `title`,
    else the file name without `.md`; None when the note writes its own or the name holds no
    letter (`2026-03-03.md`, `001.md`: a date or a number says nothing a heading would)."""
    if has_title_heading(body):
        return None
    title = fm.title or PurePosixPath(path).stem
    title = " ".join(title.split())
    return title if any(ch.isalpha() for ch in title) else None


def dressed(chunks: list[Chunk], path: str, fm: FrontMatter, body: str, first: int) -> list[Chunk]:
    """The note's chunks with its title as their heading path's root and its aliases above the
    first one's text (when that text starts below the front matter)."""
    title = title_of(path, fm, body)
    if title is not None:
        chunks = [dataclasses.replace(c, heading_path=(title, *c.heading_path)) for c in chunks]
    if fm.aliases and chunks and chunks[0].start_line >= first:  # other names: searchable
        c = chunks[0]
        content = markdown.with_aliases(c.content, fm.aliases)
        chunks[0] = dataclasses.replace(
            c, content=content, content_hash=markdown.sha256_text(content)
        )
    return chunks


# a value longer than this is text (a `description`, a `summary`), not a fact about the note
SHORT_VALUE = 60


def props(path: str, fm: FrontMatter, body: str) -> tuple[str | None, str | None]:
    """The words of the note's front matter that its chunks' keyword rows hold beside its tags:
    its values as written (FrontMatter.values), and its `title` when that is not the heading
    path's root already (the note writes its own `# Title`). (those of every chunk, those of
    the first one too): a short value (`status: draft`, `author: Ana Lima`, a date) is a fact
    about the whole note, as its tags are, and every chunk holds it; a longer one is text, and
    only the first chunk holds it (on every chunk, a `description` put each of its note's chunks
    into the keyword pool of its words: the Obsidian help vault's "Introduction to Bases" left
    the first 10 of its own title). None for none."""
    values = fm.values.split("\n") if fm.values else []
    if fm.title and title_of(path, fm, body) != " ".join(fm.title.split()):
        values.insert(0, fm.title)
    every = [v for v in values if len(v) <= SHORT_VALUE]
    first = [v for v in values if len(v) > SHORT_VALUE]
    return "\n".join(every) or None, "\n".join(first) or None
