"""Obsidian vault conventions: inline #tags, [[wikilinks]], links to local notes, note titles,
and resolving a link to a workspace path the way Obsidian does. Pure functions, no I/O.

- Code is never read as tags or links: fenced blocks and `inline code` are masked first, and
  so are what Obsidian hides, %%comments%% and <!-- comments -->, and $$math$$ and $inline
  math$ (mdblocks).
- An inline tag is `#` at the start of a line or after white space, then letters, digits, `_`,
  `-` and `/` (up to white space or punctuation, Unicode's too: mdblocks.TAG_BODY), with at
  least one character that is not a digit (`#123` is not a tag, as in Obsidian). Tags are
  lower-cased; a nested tag `#a/b` also counts as `a`.
- Links: `[[note]]`, `[[note|alias]]`, `[[note#heading]]`, `[[#heading]]` (this note),
  `![[embed]]`, and markdown links `[text](path/to/note.md#heading)` to local `.md` files.
- Resolution: a markdown link is relative to the linking note's folder (then to the
  workspace); a wikilink names a note by path or by file name, case-insensitive, without or
  with `.md`; several notes with that name: the one in the linking note's folder, else the
  one with the shortest relative path from the linking note (so `[[Canvas]]` written in
  `en/...` finds `en/Plugins/Canvas.md`, not `ja/プラグイン/Canvas.md`). A target no note
  answers may name another workspace file, an attachment (`![[Engelbart.jpg]]`), by path or
  by file name with its extension, chosen the same way.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote

from memoryd.text.markdown import nfc
from memoryd.text.mdblocks import TAG_BODY, headings, readable

_TAG = re.compile(r"(?:^|(?<=\s))#(" + TAG_BODY + ")")
_WIKI = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_MD_LINK = re.compile(
    r"(!?)\[([^\[\]\n]*)\]\(\s*(?:<([^<>\n]+)>|([^()<>\[\]\s]+))(?:\s+\"[^\"\n]*\")?\s*\)"
)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


@dataclass(frozen=True)
class Link:
    target: str  # as written, without #heading and |alias ("" for a link inside this note)
    heading: str | None
    alias: str | None
    line: int  # 1-based line in the file
    embed: bool
    kind: str  # "wiki" | "markdown"

    @property
    def key(self) -> str:
        """The lower-cased file name without .md: what the target can resolve to by name."""
        return note_key(self.target) if self.target else ""


def fold(text: str) -> str:
    """How names and paths are compared: lower-cased and composed (NFC), so a link written
    decomposed (NFD: "Cafe" + U+0301) finds "Café.md" and a file named decomposed (as macOS
    names them) is found by a link typed composed."""
    return nfc(text).lower()


def note_key(path: str) -> str:
    """'Folder/My Note.md' -> 'my note'."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if name.lower().endswith(".md"):
        name = name[:-3]
    return fold(name.strip())


def mask_code(body: str) -> str:
    """The body with what is not markdown text blanked, lines and offsets kept: fenced code
    blocks and code spans, %%comments%%, <!-- comments -->, $$math$$ and $inline math$
    (mdblocks.readable)."""
    return "\n".join("" if code else line for line, code in readable(body.split("\n"), spans=True))


def _valid_tag(tag: str) -> bool:
    return any(not ch.isdigit() for ch in tag.replace("/", ""))


def expand_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Lower-cased and unique, in order, then the parents nested tags imply (a/b/c: a, a/b)."""
    out: list[str] = []
    for tag in tags:
        t = "/".join(p for p in nfc(tag).strip().lstrip("#").lower().split("/") if p)
        if t and t not in out:
            out.append(t)
    for tag in list(out):
        parts = tag.split("/")
        for n in range(1, len(parts)):
            parent = "/".join(parts[:n])
            if parent not in out:
                out.append(parent)
    return tuple(out)


def inline_tags(body: str, masked: str | None = None) -> tuple[str, ...]:
    """The #tags written in the text (not in code), lower-cased, unique, in order."""
    text = mask_code(body) if masked is None else masked
    out: list[str] = []
    for m in _TAG.finditer(text):
        tag = m.group(1).strip("/").lower()
        if tag and _valid_tag(tag) and tag not in out:
            out.append(tag)
    return tuple(out)


def links(body: str, first_line: int = 1, masked: str | None = None) -> list[Link]:
    """Links to notes in the text (not in code), in order."""
    text = mask_code(body) if masked is None else masked
    found: list[Link] = []
    for i, line in enumerate(text.split("\n")):
        if "[" not in line:
            continue
        number = first_line + i
        for m in _WIKI.finditer(line):
            inner = m.group(2).replace("\\|", "|")
            target, _, alias = inner.partition("|")
            target, _, heading = target.partition("#")
            found.append(
                Link(
                    target.strip(),
                    heading.strip() or None,
                    alias.strip() or None,
                    number,
                    bool(m.group(1)),
                    "wiki",
                )
            )
        for m in _MD_LINK.finditer(_WIKI.sub(lambda w: " " * len(w.group(0)), line)):
            url = (m.group(3) or m.group(4) or "").strip()
            if not url or url.startswith(("#", "/")) or _SCHEME.match(url):
                continue
            target, _, heading = url.partition("#")
            target = unquote(target)
            if not target.lower().endswith(".md"):
                continue
            found.append(
                Link(
                    target,
                    unquote(heading).strip() or None,
                    m.group(2).strip() or None,
                    number,
                    bool(m.group(1)),
                    "markdown",
                )
            )
    return found


def title(front_title: str | None, body: str, path: str) -> str:
    """The note's title: front matter `title`, else its first level-1 heading (`# Title` or
    `Title` over `===`), else its file name without .md."""
    if front_title:
        return front_title
    for _, level, text, _ in headings(body.split("\n")):
        if level == 1 and text:
            return text
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


class Resolver:
    """Resolves link targets against the workspace's note paths and, for attachments
    (`![[diagram.png]]`, `[[paper.pdf]]`), its other files (built once per request)."""

    def __init__(self, paths: Iterable[str], files: Iterable[str] = ()) -> None:
        self.paths = set(paths)
        self._lower = {fold(p): p for p in sorted(self.paths)}
        self._by_key: dict[str, list[str]] = {}
        for p in sorted(self.paths):
            self._by_key.setdefault(note_key(p), []).append(p)
        # other files, by lower-cased path and by lower-cased file name (extension kept)
        self._files_lower: dict[str, str] = {}
        self._files_by_name: dict[str, list[str]] = {}
        for f in sorted(set(files) - self.paths):
            self._files_lower.setdefault(fold(f), f)
            self._files_by_name.setdefault(fold(f.rsplit("/", 1)[-1]), []).append(f)

    def candidates(self, link: Link) -> list[str]:
        """Every note (else file) a [[wikilink]] written by name could mean, by path."""
        target = link.target.strip().lstrip("/")
        if not target or target.startswith(("./", "../")):
            return []
        with_ext = target if target.lower().endswith(".md") else target + ".md"
        found = self._by_key.get(note_key(with_ext), [])
        if "/" in target:  # a partial path: it must be the end of the note's path
            suffix = "/" + fold(with_ext)
            found = [p for p in found if ("/" + fold(p)).endswith(suffix)]
        if found:
            return found
        files = self._files_by_name.get(fold(target.rsplit("/", 1)[-1]), [])
        if "/" in target:
            suffix = "/" + fold(target)
            files = [f for f in files if ("/" + fold(f)).endswith(suffix)]
        return files

    def resolve(self, link: Link, source: str) -> str | None:
        if not link.target:
            return source  # [[#heading]]: a place in this note
        folder = posixpath.dirname(source)
        if link.kind == "markdown":
            for base in (folder, ""):
                candidate = posixpath.normpath(posixpath.join(base, link.target))
                if candidate.startswith("../") or candidate == "..":
                    continue
                found = self._exact(candidate)
                if found is not None:
                    return found
            return None
        target = link.target.strip().lstrip("/")
        if target.startswith(("./", "../")):
            # Obsidian's "relative path to file" link format: [[../folder/Note]]
            candidate = posixpath.normpath(posixpath.join(folder, target))
            if candidate.startswith("../") or candidate == "..":
                return None
            return self._exact(candidate, note_first=True)
        exact = self._exact(posixpath.normpath(target), note_first=True)
        if exact is not None:
            return exact
        return nearest(self.candidates(link), source)

    def _exact(self, path: str, *, note_first: bool = False) -> str | None:
        """The note (or file) at this path, case-insensitive; with note_first, `path` may
        leave out a note's .md ([[folder/Note]])."""
        lower = fold(path)
        if note_first and not lower.endswith(".md") and lower + ".md" in self._lower:
            return self._lower[lower + ".md"]
        return self._lower.get(lower) or self._files_lower.get(lower)


def nearest(candidates: Iterable[str], source: str) -> str | None:
    """Of the paths a link could mean, the one Obsidian picks: in the linking note's folder,
    else the one with the shortest relative path from it (fewest steps, then fewest
    characters, then by name), so a link in en/ stays in en/ when en/ has the note."""
    folder = posixpath.dirname(source)
    here = folder.split("/") if folder else []

    def distance(path: str) -> tuple[bool, int, int, str]:
        there = path.split("/")
        common = 0
        while common < min(len(here), len(there) - 1) and here[common] == there[common]:
            common += 1
        rel = [".."] * (len(here) - common) + there[common:]  # the relative path, as parts
        steps = len(rel) - 1
        return (posixpath.dirname(path) != folder, steps, len("/".join(rel)), path)

    return min(candidates, key=distance, default=None)
