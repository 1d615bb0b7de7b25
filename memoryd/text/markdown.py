"""Markdown: YAML front matter and heading-aware chunking. Pure functions, no I/O.

Chunking: each section (a heading and the text up to the next heading) is one chunk when it fits
`max_tokens`; a longer section is split at blank lines, then at line ends, then between words,
each piece after the first starting with about `overlap_tokens` of the previous piece's tail.
Lines inside fenced code blocks, comments and math blocks are never headings (mdblocks: the
headings every reader finds, setext ones too). Text before the first heading is a section with
an empty heading path. Line numbers are 1-based and refer to the original file.

A heading is never a chunk by itself: it stays with the text under it (also when a long section
is split), and headings with no text of their own join the next text. The daily log's own
heading is blanked before chunking (DailyLog.preprocess).

Hostile input is cheap: front matter over 64 KiB or with YAML aliases is refused (the body is
still chunked), and `max_chunks` stops chunking early.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from memoryd.core.timeutil import in_range, parse_iso
from memoryd.text.clip import _inside
from memoryd.text.frontyaml import Refused as _Refused
from memoryd.text.frontyaml import load_node as _load_yaml
from memoryd.text.frontyaml import values_text as _values_text
from memoryd.text.mdblocks import atx_heading as atx_heading
from memoryd.text.mdblocks import fenced as fenced
from memoryd.text.mdblocks import headings
from memoryd.text.scripts import WIDE_CLASS

_WORD = re.compile(r"\S+")
MAX_FRONT_MATTER_BYTES = 65536


@dataclass(frozen=True)
class FrontMatter:
    tags: tuple[str, ...] = ()
    type: str | None = None
    importance: int | None = None
    expires_at: float | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    aliases: tuple[str, ...] = ()
    title: str | None = None
    created_at: float | None = None  # `created` or `date`: the note's creation time
    updated_at: float | None = None  # `updated` or `modified`
    values: str = ""  # its other values as written, for the keyword index (frontyaml.values_text)


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


# Characters tokenizers spend about one token (often more) on each, where a run of them would
# count as a single "word" below: CJK, Thai, Lao, Khmer, Myanmar (text/scripts.py).
_WIDE = re.compile(f"[{WIDE_CLASS}]")


def estimate_tokens(text: str) -> int:
    """About the number of tokens of a text: for prose 1.3 per word, or 1 per 4 chars for text
    with long unbroken runs (code, URLs), whichever is larger; plus one per character of a
    script written without spaces (CJK, Thai, Lao, Khmer, Myanmar: text/scripts.py WIDE_CLASS,
    combining marks included)."""
    cjk = 0
    if not text.isascii():
        text, cjk = _WIDE.subn(" ", text)  # (one pass: the count and the text without them)
    words = len(_WORD.findall(text))
    return math.ceil(max(words * 1.3, len(text.strip()) / 4 if cjk else len(text) / 4) + cjk)


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


def nfc(text: str) -> str:
    """Text with its letters composed (NFC): a name written decomposed ("Zoe" + U+0308, as some
    macOS apps, PDFs and keyboards write it) is one word, not cut at the combining mark. Free
    for text that is NFC already (the check is a C loop; ASCII passes at once)."""
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def _tags(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        items: list[Any] = re.split(r"[,\s]+", value)
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return ()
    out: list[str] = []
    for item in items:
        if item is None or isinstance(item, bool | list | dict):
            continue  # an empty item (`- `), yes/no, a nested list: no tag, not "none"
        tag = nfc(str(item)).strip().lstrip("#").lower()
        if tag and tag not in out:
            out.append(tag)
    return tuple(out)


def _timestamp(value: Any) -> float | None:
    """A front-matter date as unix seconds, as the API reads one (timeutil.parse_iso: naive =
    UTC, a bare date is its midnight UTC), brought into 1970..9999 (a note dated 1900 is dated
    1970-01-01, as the API shows and filters it); None for anything else (a number, a date
    that does not exist, text)."""
    if isinstance(value, datetime):
        try:
            ts = (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
        except (OverflowError, ValueError):  # before year 1 once its offset is applied
            return None
    elif isinstance(value, date):
        ts = datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()
    elif isinstance(value, str):
        parsed = parse_iso(value)
        if parsed is None:
            return None
        ts = parsed
    else:
        return None
    return in_range(ts)


def parse_front_matter(
    text: str, *, max_bytes: int = MAX_FRONT_MATTER_BYTES
) -> tuple[FrontMatter, str, int]:
    """(front matter, body, number of the body's first line). Never raises.

    Front matter larger than `max_bytes` or using YAML aliases is refused (an error is set and
    its lines are left out of the body); YAML that does not parse is taken as body text."""
    lines = text.split("\n", 1) if text else [""]
    if lines[0].strip() != "---":
        return FrontMatter(), text, 1
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return FrontMatter(), text, 1
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return FrontMatter(error="front matter is not closed with '---'"), text, 1
    body, first = "\n".join(lines[end + 1 :]), end + 2
    if sum(len(line) + 1 for line in lines[1:end]) > max_bytes:
        return FrontMatter(error=f"front matter larger than {max_bytes} bytes"), body, first
    import yaml

    try:
        data, node = _load_yaml("\n".join(lines[1:end]))
    except _Refused as exc:
        return FrontMatter(error=str(exc)), body, first
    except yaml.YAMLError as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
        return FrontMatter(error=f"invalid YAML: {first_line}"), text, 1
    except (RecursionError, MemoryError, ValueError, TypeError, OverflowError) as exc:
        return FrontMatter(error=f"front matter refused ({_why(exc)})"), body, first
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return FrontMatter(error="front matter is not a mapping"), text, 1
    try:
        fm = _front_matter(data, node)
    except (RecursionError, MemoryError, ValueError, TypeError, OverflowError) as exc:
        return FrontMatter(error=f"front matter refused ({_why(exc)})"), body, first
    return fm, body, first


def _why(exc: BaseException) -> str:
    """An exception as a log reason: its kind and the first line of its message, cut short."""
    first = str(exc).splitlines()[0][:120] if str(exc) else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


# keys whose values are searchable already: tags (the tags column), aliases (above the first
# chunk's text), the title (the heading path's root, or notehead.props)
_SEARCHABLE = frozenset({"tags", "tag", "aliases", "alias", "title"})


def _front_matter(data: dict[Any, Any], node: Any = None) -> FrontMatter:
    importance = data.get("importance")
    if isinstance(importance, bool) or not isinstance(importance, int) or not 1 <= importance <= 10:
        importance = None
    kind = data.get("type")
    title = data.get("title")
    created = next((data[k] for k in ("created", "date") if data.get(k) is not None), None)
    updated = next((data[k] for k in ("updated", "modified") if data.get(k) is not None), None)
    return FrontMatter(
        tags=_tags(data.get("tags", data.get("tag"))),
        type=str(kind).strip().lower() if isinstance(kind, str) and kind.strip() else None,
        importance=importance,
        expires_at=_timestamp(data.get("expires")),
        raw=_jsonable(data),
        aliases=_aliases(data.get("aliases", data.get("alias"))),
        title=title.strip() if isinstance(title, str) and title.strip() else None,
        created_at=_timestamp(created) if created is not None else None,
        updated_at=_timestamp(updated) if updated is not None else None,
        values=_values_text(node, _SEARCHABLE) if node is not None else "",
    )


def _aliases(value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    out: list[str] = []
    for item in items:
        if isinstance(item, str | int | float) and not isinstance(item, bool):
            text = str(item).strip()
            if text and text not in out:
                out.append(text)
    return tuple(out)


# --- chunking ----------------------------------------------------------------------------------


@dataclass
class _Section:
    path: tuple[str, ...]
    lines: list[tuple[int, str]]  # (line number, text)
    head: int = 0  # how many of the first lines are the heading (1 for ATX, 2 for setext)


def _sections(body: str, first_line: int) -> list[_Section]:
    lines = body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    heads = {i: (level, title, size) for i, level, title, size in headings(lines)}
    sections: list[_Section] = [_Section((), [])]
    stack: list[tuple[int, str]] = []
    skip = 0  # the underline of a setext heading, already in its section
    for i, line in enumerate(lines):
        if skip:
            skip -= 1
            continue
        head = heads.get(i)
        if head is None:
            sections[-1].lines.append((first_line + i, line))
            continue
        level, title, size = head
        stack = [s for s in stack if s[0] < level] + [(level, title)]
        rows = [(first_line + i + k, lines[i + k]) for k in range(size)]
        sections.append(_Section(tuple(t for _, t in stack), rows, size))
        skip = size - 1
    return sections


def _parts(word: str) -> tuple[int, int, int]:
    """A word's share of estimate_tokens: its words, characters, and wide characters (each one
    token: a run of CJK or Thai is one "word" to the spaces but many tokens)."""
    if word.isascii():
        return (1 if word.strip() else 0), len(word), 0
    rest, wide = _WIDE.subn(" ", word)
    return len(rest.split()), len(rest), wide


def _fits(words: int, chars: int, wide: int, max_tokens: int) -> bool:
    return math.ceil(max(words * 1.3, chars / 4) + wide) <= max_tokens


def _cut(word: str, start: int, max_tokens: int) -> int:
    """Where to end the piece of a word too long for a chunk that begins at `start`: the
    longest that fits, not inside a grapheme (a Thai letter keeps its vowel and tone marks).
    Reads at most max_tokens * 4 characters: linear in the word's length overall."""
    window = word[start : start + max_tokens * 4]
    if window.isascii():
        end = start + len(window)
    else:
        lo, hi = 1, len(window)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if _fits(*_parts(window[:mid]), max_tokens):
                lo = mid
            else:
                hi = mid - 1
        end = start + lo
    cut = end
    while start < cut < len(word) and _inside(word, cut):
        cut -= 1
    return cut if cut > start else end


def _split_words(number: int, line: str, max_tokens: int) -> list[tuple[int, str]]:
    """A single line too long for a chunk: split between words (or characters), in linear
    time (the token estimate is kept as running word, character and wide-character counts)."""
    pieces: list[tuple[int, str]] = []
    current: list[str] = []
    words = chars = wide = 0
    window = max_tokens * 4  # a longer word never fits (each character counts 1/4 at least)
    for word in line.split(" "):
        start = 0
        while len(word) - start > window or not _fits(*_parts(word[start:]), max_tokens):
            end = _cut(word, start, max_tokens)  # one huge token: cut by characters
            if current:
                pieces.append((number, " ".join(current)))
                current, words, chars, wide = [], 0, 0, 0
            pieces.append((number, word[start:end]))
            start = end
        word = word[start:] if start else word
        w, c, k = _parts(word)
        if current and not _fits(words + w, chars + c + 1, wide + k, max_tokens):
            pieces.append((number, " ".join(current)))
            current, words, chars, wide = [], 0, 0, 0
        current.append(word)
        words += w
        wide += k
        chars += c + (1 if len(current) > 1 else 0)
    if current:
        pieces.append((number, " ".join(current)))
    return pieces


def _units(lines: list[tuple[int, str]], max_tokens: int) -> list[list[tuple[int, str]]]:
    """Group a section's lines into paragraphs (fenced blocks kept whole), each <= max_tokens
    where possible; oversized paragraphs become line units, oversized lines word units."""
    paragraphs: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    for (number, line), (_, code) in zip(lines, fenced(t for _, t in lines), strict=True):
        if not code and not line.strip():
            if current:
                paragraphs.append(current)
                current = []
            continue
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


def chunk_markdown(
    text: str,
    *,
    first_line: int = 1,
    max_tokens: int = 200,
    overlap_tokens: int = 30,
    max_chunks: int | None = None,
) -> list[Chunk]:
    """Chunks of a markdown body (front matter already removed), in order. With `max_chunks`,
    chunking stops after max_chunks + 1 chunks (so the caller can tell the file was cut)."""
    return _chunk_body(text, first_line, max_tokens, overlap_tokens, max_chunks)


class _Full(Exception):
    """Enough chunks: stop chunking."""


Lines = list[tuple[int, str]]


def _chunk_body(
    body: str,
    first_line: int,
    max_tokens: int,
    overlap_tokens: int,
    max_chunks: int | None = None,
) -> list[Chunk]:
    """A heading is never a chunk by itself: a section with no text hands its heading on to the
    next section with text (so "# A\n## B\ntext" is one chunk under A > B); only a run of
    headings longer than a chunk, or headings with no text anywhere after them, stand alone."""
    chunks: list[Chunk] = []

    def emit(path: tuple[str, ...], parts: list[Lines]) -> None:
        flat = [ln for part in parts for ln in part]
        content = "\n\n".join(_text(p) for p in parts).strip()
        if not content:
            return
        chunks.append(
            Chunk(len(chunks), content, path, flat[0][0], flat[-1][0], sha256_text(content))
        )
        if max_chunks is not None and len(chunks) > max_chunks:
            raise _Full

    pending: Lines = []  # heading lines waiting for text
    pending_tokens = 0
    pending_path: tuple[str, ...] = ()
    try:
        for section in _sections(body, first_line):
            head, rest = section.lines[: section.head], section.lines[section.head :]
            if not any(t.strip() for _, t in rest):
                if head:
                    cost = estimate_tokens(_text(head)) + 1
                    if pending and pending_tokens + cost > max_tokens:  # a long run of headings
                        emit(pending_path, [pending])
                        pending, pending_tokens = [], 0
                    pending.extend(head)
                    pending_tokens += cost
                    pending_path = section.path
                continue
            headings = {n for n, _ in pending} | {n for n, _ in head}
            _chunk_section(
                section.path, pending + section.lines, headings, max_tokens, overlap_tokens, emit
            )
            pending, pending_tokens = [], 0
        if pending:
            last = chunks[-1] if chunks else None
            extra = _text(pending).strip()
            if last is not None and estimate_tokens(last.content + extra) <= max_tokens:
                content = f"{last.content}\n\n{extra}"
                chunks[-1] = Chunk(
                    last.seq,
                    content,
                    last.heading_path,
                    last.start_line,
                    pending[-1][0],
                    sha256_text(content),
                )
            else:
                emit(pending_path, [pending])
    except _Full:
        pass
    return chunks


def _chunk_section(
    path: tuple[str, ...],
    lines: Lines,
    headings: set[int],
    max_tokens: int,
    overlap_tokens: int,
    emit: Callable[[tuple[str, ...], list[Lines]], None],
) -> None:
    whole = _text(lines).strip()
    if estimate_tokens(whole) <= max_tokens:
        stripped = list(lines)
        while stripped and not stripped[0][1].strip():
            stripped.pop(0)
        while stripped and not stripped[-1][1].strip():
            stripped.pop()
        emit(path, [stripped])
        return
    piece: list[Lines] = []
    size = 0
    for unit in _units(lines, max_tokens):
        cost = estimate_tokens(_text(unit))
        # headings wait for the text under them, unless they alone fill half a chunk
        held = size <= max_tokens // 2 and all(n in headings for part in piece for n, _ in part)
        if piece and size + cost > max_tokens and not held:
            emit(path, piece)
            piece, size = _overlap(piece, overlap_tokens, max_tokens - cost)
        piece.append(unit)
        size += cost
    if piece:
        emit(path, piece)


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


_DATE_NAME = re.compile(r"(\d{4})-(\d{2})-(\d{2})\.(?:md|markdown|txt)", re.IGNORECASE)


def date_of_name(path: str) -> float | None:
    """The date a note's file name is (a daily note: `journal/2026-03-03.md`), as a timestamp at
    midnight UTC, as a front-matter `date: 2026-03-03` gives; None for any other name (and for
    a date that does not exist, 2026-02-30, or year 0)."""
    m = _DATE_NAME.fullmatch(path.rsplit("/", 1)[-1])
    if m is None:
        return None
    try:
        return in_range(datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=UTC).timestamp())
    except ValueError:  # 2026-02-30
        return None


ALIASES_LINE = "aliases: "


def with_aliases(content: str, aliases: Sequence[str]) -> str:
    """A note's first chunk with its front-matter aliases above its text, so the note is found
    by its other names; those two lines stand on no line of the file (aliases_lines)."""
    return f"{ALIASES_LINE}{', '.join(aliases)}\n\n{content}"


def aliases_lines(content: str, start_line: int) -> int:
    """How many lines at the top of a chunk's content `with_aliases` wrote (0 or 2): a note's
    chunk that starts below front matter (`start_line` > 1) and opens with them."""
    if start_line > 1 and content.startswith(ALIASES_LINE):
        head = content.split("\n", 2)
        if len(head) == 3 and head[1] == "":
            return 2
    return 0


def parse_document(
    text: str,
    *,
    max_tokens: int = 200,
    overlap_tokens: int = 30,
    max_chunks: int | None = None,
) -> tuple[FrontMatter, list[Chunk]]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    fm, body, first = parse_front_matter(text)
    return fm, _chunk_body(body, first, max_tokens, overlap_tokens, max_chunks)
