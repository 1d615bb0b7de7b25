"""Markdown: YAML front matter and heading-aware chunking. Pure functions, no I/O.

Chunking: each section (a heading and the text up to the next heading) is one chunk when it fits
`max_tokens`; a longer section is split at blank lines, then at line ends, then between words,
each piece after the first starting with about `overlap_tokens` of the previous piece's tail.
Lines inside fenced code blocks are never headings. Text before the first heading is a section
with an empty heading path. Line numbers are 1-based and refer to the original file.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class FrontMatter:
    tags: tuple[str, ...] = ()
    type: str | None = None
    importance: int | None = None
    expires_at: float | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class Chunk:
    seq: int
    content: str
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    content_hash: str


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def estimate_tokens(text: str) -> int:
    """About the number of WordPiece tokens of English prose: 1.3 per word, or 1 per 4 chars
    for text with long unbroken runs (code, URLs), whichever is larger."""
    words = len(_WORD.findall(text))
    return math.ceil(max(words * 1.3, len(text) / 4))


# --- front matter ------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def _tags(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        items: list[Any] = re.split(r"[,\s]+", value)
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return ()
    out: list[str] = []
    for item in items:
        tag = str(item).strip().lstrip("#").lower()
        if tag and tag not in out:
            out.append(tag)
    return tuple(out)


def _expires(value: Any) -> float | None:
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            return None
        return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()
    return None


def parse_front_matter(text: str) -> tuple[FrontMatter, str, int]:
    """(front matter, body, number of the body's first line). Never raises."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return FrontMatter(), text, 1
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return FrontMatter(error="front matter is not closed with '---'"), text, 1
    import yaml

    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
        return FrontMatter(error=f"invalid YAML: {first}"), text, 1
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return FrontMatter(error="front matter is not a mapping"), text, 1
    importance = data.get("importance")
    if isinstance(importance, bool) or not isinstance(importance, int) or not 1 <= importance <= 10:
        importance = None
    kind = data.get("type")
    fm = FrontMatter(
        tags=_tags(data.get("tags")),
        type=str(kind).strip().lower() if isinstance(kind, str) and kind.strip() else None,
        importance=importance,
        expires_at=_expires(data.get("expires")),
        raw=_jsonable(data),
    )
    return fm, "\n".join(lines[end + 1 :]), end + 2


# --- chunking ----------------------------------------------------------------------------------


@dataclass
class _Section:
    path: tuple[str, ...]
    lines: list[tuple[int, str]]  # (line number, text)


def _sections(body: str, first_line: int) -> list[_Section]:
    lines = body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    sections: list[_Section] = [_Section((), [])]
    stack: list[tuple[int, str]] = []
    fence: str | None = None
    for i, line in enumerate(lines):
        number = first_line + i
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            sections[-1].lines.append((number, line))
            continue
        if m:
            fence = m.group(1)
            sections[-1].lines.append((number, line))
            continue
        h = _ATX.match(line)
        level, title = (len(h.group(1)), (h.group(2) or "").strip()) if h else (0, "")
        if not h and _SETEXT.match(line) and sections[-1].lines:
            prev_no, prev = sections[-1].lines[-1]
            if prev.strip() and not _ATX.match(prev) and len(sections[-1].lines) >= 1:
                # "Title\n====": the previous line becomes the heading of a new section
                level = 1 if line.strip().startswith("=") else 2
                sections[-1].lines.pop()
                stack = [s for s in stack if s[0] < level] + [(level, prev.strip())]
                sections.append(
                    _Section(tuple(t for _, t in stack), [(prev_no, prev), (number, line)])
                )
                continue
        if h:
            stack = [s for s in stack if s[0] < level] + [(level, title)]
            sections.append(_Section(tuple(t for _, t in stack), [(number, line)]))
            continue
        sections[-1].lines.append((number, line))
    return sections


def _split_words(number: int, line: str, max_tokens: int) -> list[tuple[int, str]]:
    """A single line too long for a chunk: split between words (or characters), in linear
    time (the token estimate is kept as running word and character counts)."""
    pieces: list[tuple[int, str]] = []
    current: list[str] = []
    words = chars = 0

    def fits(w: int, c: int) -> bool:
        return math.ceil(max(w * 1.3, c / 4)) <= max_tokens

    for word in line.split(" "):
        while not fits(1, len(word)):  # one huge token: cut by characters
            cut = max_tokens * 4
            if current:
                pieces.append((number, " ".join(current)))
                current, words, chars = [], 0, 0
            pieces.append((number, word[:cut]))
            word = word[cut:]
        added = 1 if word.strip() else 0
        if current and not fits(words + added, chars + len(word) + 1):
            pieces.append((number, " ".join(current)))
            current, words, chars = [], 0, 0
        current.append(word)
        words += added
        chars += len(word) + (1 if len(current) > 1 else 0)
    if current:
        pieces.append((number, " ".join(current)))
    return pieces


def _units(lines: list[tuple[int, str]], max_tokens: int) -> list[list[tuple[int, str]]]:
    """Group a section's lines into paragraphs (fenced blocks kept whole), each <= max_tokens
    where possible; oversized paragraphs become line units, oversized lines word units."""
    paragraphs: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in lines:
        m = _FENCE.match(line)
        if fence is None and not line.strip():
            if current:
                paragraphs.append(current)
                current = []
            continue
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
        current.append((number, line))
    if current:
        paragraphs.append(current)
    units: list[list[tuple[int, str]]] = []
    for para in paragraphs:
        if estimate_tokens("\n".join(t for _, t in para)) <= max_tokens:
            units.append(para)
            continue
        for number, line in para:
            if estimate_tokens(line) <= max_tokens:
                units.append([(number, line)])
            else:
                units.extend([[p] for p in _split_words(number, line, max_tokens)])
    return units


def _text(unit_lines: list[tuple[int, str]]) -> str:
    return "\n".join(t for _, t in unit_lines)


def chunk_markdown(text: str, *, max_tokens: int = 200, overlap_tokens: int = 30) -> list[Chunk]:
    """Chunks of a markdown body (front matter already removed), in order."""
    return _chunk_body(text, 1, max_tokens, overlap_tokens)


def _chunk_body(body: str, first_line: int, max_tokens: int, overlap_tokens: int) -> list[Chunk]:
    chunks: list[Chunk] = []

    def emit(path: tuple[str, ...], parts: list[list[tuple[int, str]]]) -> None:
        flat = [ln for part in parts for ln in part]
        content = "\n\n".join(_text(p) for p in parts).strip()
        if not content:
            return
        chunks.append(
            Chunk(len(chunks), content, path, flat[0][0], flat[-1][0], sha256_text(content))
        )

    for section in _sections(body, first_line):
        if not any(t.strip() for _, t in section.lines):
            continue
        whole = _text(section.lines).strip()
        if estimate_tokens(whole) <= max_tokens:
            stripped = [(n, t) for n, t in section.lines]
            while stripped and not stripped[0][1].strip():
                stripped.pop(0)
            while stripped and not stripped[-1][1].strip():
                stripped.pop()
            emit(section.path, [stripped])
            continue
        units = _units(section.lines, max_tokens)
        piece: list[list[tuple[int, str]]] = []
        size = 0
        for unit in units:
            cost = estimate_tokens(_text(unit))
            if piece and size + cost > max_tokens:
                emit(section.path, piece)
                piece, size = _overlap(piece, overlap_tokens, max_tokens - cost)
            piece.append(unit)
            size += cost
        if piece:
            emit(section.path, piece)
    return chunks


def _overlap(
    piece: list[list[tuple[int, str]]], overlap_tokens: int, room: int
) -> tuple[list[list[tuple[int, str]]], int]:
    """The tail of the previous piece (whole lines) to start the next one with."""
    budget = min(overlap_tokens, max(0, room))
    if budget <= 0:
        return [], 0
    tail: list[tuple[int, str]] = []
    size = 0
    for number, line in reversed([ln for part in piece for ln in part]):
        cost = estimate_tokens(line)
        if size + cost > budget:
            if not tail:  # one long line: carry over its last words instead
                words: list[str] = []
                for word in reversed(line.split()):
                    if estimate_tokens(" ".join([word, *words])) > budget:
                        break
                    words.insert(0, word)
                if words:
                    text = " ".join(words)
                    tail, size = [(number, text)], estimate_tokens(text)
            break
        tail.insert(0, (number, line))
        size += cost
    return ([tail], size) if tail else ([], 0)


def parse_document(
    text: str, *, max_tokens: int = 200, overlap_tokens: int = 30
) -> tuple[FrontMatter, list[Chunk]]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    fm, body, first = parse_front_matter(text)
    return fm, _chunk_body(body, first, max_tokens, overlap_tokens)
