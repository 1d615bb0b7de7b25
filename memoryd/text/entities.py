"""Entities: who and what a note or a memory is about. Pure functions of strings, no model.

`extract(text, first_line)` reads a memory's text or a note body (front matter removed);
`extract_note(text, path)` reads a whole note file, front matter included. Both return one
`Mention` per occurrence, each with the 1-based line it stands on and its entity's canonical
key, name and type, resolved over the whole text given (so index a note as a whole and give each
chunk the mentions inside its line range: `in_lines`).

Explicit entities: `[[target|alias]]` (the alias is a surface form of the target), front-matter
`aliases` (of the note's title), list fields (`people`, `projects`, `places`, `tags`... see
entity_cues.FIELD_TYPES), `#tags`, `@mentions`. Implicit ones: runs of one to four capitalised
words (connectors such as "of" and "van" inside), without the words that are never names, and
without a sentence-initial common word unless the same text names it elsewhere, a person cue
follows ("Caroline said", "Caroline:") or it is possessive; code identifiers (snake_case,
SCREAMING_CASE, camelCase, calls `f()`, kebab-case with a digit or an infrastructure suffix,
letters mixed with digits such as SEV2), hostnames, URL hosts and emails. Nothing is read
inside code (fenced, indented, fenced under a list item: mdblocks.code_lines), %%comments%%,
<!-- comments -->, $$math$$ or $inline math$ (mdblocks.readable: what Obsidian hides names
nothing, as it holds no tag or link); `inline code` yields its identifiers only. CJK names only
where marked: wikilinks, front matter, 「」【】《》 or quotes around them, or an honorific after
them (田中さん) or inside the brackets (「田中さん」 is 田中).

Types: person, system (projects, products, organisations), place, identifier, tag, other; votes
from where a mention came (front-matter field, @mention, tag, code shape) and from the words
around it (honorifics, "said", "the X service", "X 3.12", "moved to X", "New ...", "... Street",
CamelCase, "starts at X", "my Gmail", a code span writing the name as a word, a model number
after a make), summed over the text; no vote means other. Two plain capitalised words with no
vote lean person; of two coordinated names ("X and Y", "X over Y"), one with no vote takes the
other's type. BENCHMARKS.md ("Entities: extraction") measures each cue on three sets.

The first pass (entity_spans.py) finds and blanks everything but capitalised names, line by
line; the second (entity_names.py) reads the names in what is left; _resolve gives each key one
name and one type over the whole text.

Canonical key: NFKC, Latin diacritics folded, case folded, possessive and surrounding
punctuation stripped, white space collapsed; tags keep their "#". A wikilink alias or a note
alias maps to its target's key, and so does the file name of a note that is an entity. A first
name or a surname alone maps to the one full name of a person the same text writes with it
("Caroline's" beside "Caroline Baker"; _part_names). Across notes the store resolves names the
same way, whichever entry was indexed first (memoryd/store/entities.known_as and
adopt_first_names).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import attrgetter
from typing import Any

from memoryd.text import entity_cues as cues
from memoryd.text.entity_cues import IDENTIFIER, OTHER, PERSON, PLACE, SYSTEM, TAG
from memoryd.text.entity_names import names as _names
from memoryd.text.entity_spans import (
    HAS_CJK,
    TICK_B,
    TICKS,
    WIKI,
    Raw,
    add,
    blank,
    canonical_key,
    code_span,
    display_name,
    explicit,
    line_shapes,
)

__all__ = [
    "Entity",
    "Mention",
    "canonical_key",
    "display_name",
    "entities",
    "extract",
    "extract_document",
    "extract_note",
    "in_lines",
]
from memoryd.text.markdown import FrontMatter, atx_heading, nfc, parse_front_matter
from memoryd.text.mdblocks import code_lines, headings, readable
from memoryd.text.secretguard import masked_lines


@dataclass(frozen=True)
class Mention:
    """One occurrence of an entity: `key` and `name`/`type` are the entity's (canonical, the
    same for every mention of it in one extraction); `surface` is the text as written."""

    key: str
    name: str
    type: str
    line: int
    surface: str
    # wikilink alias front_matter title heading file tag mention name code host url email quoted
    source: str


@dataclass(frozen=True)
class Entity:
    key: str
    name: str
    type: str
    aliases: tuple[str, ...]  # the other surface forms, as written
    lines: tuple[int, ...]


# --- the whole extraction ----------------------------------------------------------------------


_CODE_WORD = re.compile(r"[a-z][a-z0-9]{2,}")
# the marker that ends a daily-log line (memory/dailylog.py): a line indexed as text (edited by
# hand, or its memory gone) names no identifier by it
_LOG_MARKER = re.compile(r"<!-- m:\d+:[0-9a-f]{8} -->")
_H1 = re.compile(r"^ {0,3}#(?=[ \t]|$).*", re.MULTILINE)  # what atx_heading reads as level 1
_SETEXT_H1 = re.compile(r"^ {0,3}=+[ \t]*$", re.MULTILINE)
_NOT_TEXT = ("```", "~~~", "%%", "<!--", "$$")  # what mdblocks.headings reads past
_MAYBE_CODE = re.compile(r"```|~~~|^(?: {4}|\t)", re.MULTILINE)  # what code_lines may find


def _scan(body: str, first_line: int, out: list[Raw], known: set[str]) -> list[tuple[str, str]]:
    """Add the mentions of `body` to `out`; return the coordinated names (entity_names.names)."""
    kept: list[tuple[int, str]] = []
    code_words: set[str] = set()
    if "<!-- m:" in body:
        body = _LOG_MARKER.sub(lambda m: " " * len(m.group()), body)
    lines = body.split("\n")
    # code as written: a line that opens with a comment is no indented code once it is blanked
    code = code_lines(lines) if _MAYBE_CODE.search(body) else None
    if "%%" in body or "<!--" in body or "$" in body:  # what Obsidian hides names nothing
        lines = [line for line, _ in readable(lines)]
        body = "\n".join(lines)
    starts = list(accumulate((len(x) + 1 for x in lines[:-1]), initial=0))
    for i, has in enumerate(line_shapes(body, starts)):
        line = lines[i]
        if not line or line.isspace() or (code is not None and code[i]):
            continue
        n = first_line + i
        if has:
            if has & TICK_B and "`" in line:
                for m in TICKS.finditer(line):
                    code_span(m.group(2), n, out)
                    code_words.update(_CODE_WORD.findall(m.group(2)))
                    line = blank(line, m.start(), m.end())
            line = explicit(line, n, out, known, has)
        kept.append((n, line))
    cjk = sorted(k for k in known if HAS_CJK(k))  # sorted: a set's order changes per process
    if cjk:  # a CJK name the front matter or a wikilink gave, wherever the text writes it
        for n, line in kept:
            for k in cjk:
                if k in line:
                    add(out, k, n, "name", key=k)
    return _names(kept, out, known, code_words)


_FM_KEY = re.compile(r"([A-Za-z_][\w-]*)\s*:")
_LIST_SEP = re.compile(r"\s*[,;]\s*")


def _fm_values(v: Any) -> list[str]:
    """A front-matter value as a list of strings: a list, or a string split at , and ;."""
    if isinstance(v, str):
        items: list[Any] = _LIST_SEP.split(v)
    elif isinstance(v, list):
        items = v
    else:
        return []
    out = []
    for x in items[:200]:
        if isinstance(x, str | int) and (sx := str(x).strip()):
            out.append(sx)
    return out


def _front(
    raw: dict[str, Any], head: list[str], title: str | None, title_line: int, out: list[Raw]
) -> None:
    """Mentions from front matter; `head` is the file's first lines (front matter included);
    the note's title stands on `title_line`."""
    keys: dict[str, int] = {}
    for i, line in enumerate(head):
        m = _FM_KEY.match(line)
        if m:
            keys.setdefault(m.group(1).lower(), i)

    def where(field_name: str, value: str) -> int:
        start = keys.get(field_name, 0)
        for i in range(start, len(head)):
            if value in head[i]:
                return i + 1
        return start + 1

    note_type = raw.get("type")
    title_key = canonical_key(title) if title else ""
    for item in _fm_values(raw.get("aliases", raw.get("alias"))) if title_key else []:
        add(out, item, where("aliases", item), "front_matter", alias_to=title_key)
    if (
        title
        and title_key
        and (
            (isinstance(note_type, str) and note_type.lower() in cues.NOTE_TYPES)
            or raw.get("aliases")
            or raw.get("alias")
        )
    ):
        kind = cues.NOTE_TYPES.get(note_type.lower()) if isinstance(note_type, str) else None
        add(out, title, title_line, "title", kind, 5.0)
    for fname, value in raw.items():
        kind = cues.FIELD_TYPES.get(str(fname).lower())
        if kind is None:
            continue
        for item in _fm_values(value):
            inner = WIKI.fullmatch(item.strip('"'))
            text = inner.group(1).partition("|")[0].partition("#")[0] if inner else item
            if kind == TAG:
                tag = text.strip().lstrip("#").lower()
                if tag:
                    add(out, "#" + tag, where(fname, item), "front_matter", TAG, 5.0, key="#" + tag)
            else:
                add(out, text, where(fname, item), "front_matter", kind, 5.0)


_LINE = attrgetter("line")
_KEY = attrgetter("key")
_TYPE_ORDER = (PERSON, SYSTEM, PLACE, TAG, IDENTIFIER, OTHER)  # ties go to the first
# A short acronym is often a common noun (SMS, TV, USB): a coordinated name does not type it.
_ACRONYM = re.compile(r"[A-Z]{1,3}").fullmatch
_PASSED_ON = frozenset((PERSON, SYSTEM, PLACE))  # the types a coordinated name passes on
_NAMED_BY = frozenset(("wikilink", "title", "front_matter"))  # a form from these counts 3


def _best_form(forms: dict[str, int]) -> str:
    """The most frequent form, a capitalised one on a tie, else the first seen."""
    return max(forms.items(), key=lambda kv: (kv[1], kv[0] != kv[0].lower()))[0]


def _pass_types(
    pairs: Sequence[tuple[str, str]],
    alias: dict[str, str],
    names: dict[str, str],
    types: dict[str, str],
) -> None:
    """Of two coordinated names, one no vote typed takes the other's type. (Passing only
    types a full vote gave, not the weak person lean of two plain words, lost person recall on
    WNUT-17 and CrossNER for no precision: lists of people are often names and nothing else.)"""
    for _ in range(2):  # twice: "Kafka, Redis and NATS" passes a type along the list
        for a, b in pairs:
            a, b = alias.get(a, a), alias.get(b, b)
            ta, tb = types.get(a), types.get(b)
            if ta == OTHER and tb in _PASSED_ON and not _ACRONYM(names[a]):
                types[a] = tb
            elif tb == OTHER and ta in _PASSED_ON and not _ACRONYM(names[b]):
                types[b] = ta


def _person_like(v: dict[str, float] | None) -> bool:
    """No vote, or person the strongest."""
    if not v:
        return True
    p = v.get(PERSON, 0.0)
    return p > 0 and p >= max(v.values())


def _part_names(
    names: dict[str, str], types: dict[str, str], votes: dict[str, dict[str, float]]
) -> dict[str, str]:
    """A one-word name that is the first or the last word of exactly one full name of two or
    three words in the same text ("Caroline's", "Baker" beside "Caroline Baker"): its key ->
    the full name's key. Both must read as a person (the full name typed person, or untyped
    and the word typed person), and neither typed anything else ("York" beside "New York",
    "Google" beside "Google Cloud" stay apart); a word two full names share stays alone."""
    full: dict[str, list[str]] = {}
    for key, t in types.items():
        if " " not in key or (t != PERSON and t != OTHER) or not _person_like(votes.get(key)):
            continue
        ws = key.split(" ")
        if 2 <= len(ws) <= 3 and names[key][:1].isupper():
            for w in {ws[0], ws[-1]}:
                if len(w) > 1 and w.replace("-", "").isalpha():  # "Jean-Luc" too
                    full.setdefault(w, []).append(key)
    out: dict[str, str] = {}
    for w, keys in full.items():
        wt = types.get(w)
        if len(keys) != 1 or wt is None or (wt != PERSON and wt != OTHER):
            continue
        if not _person_like(votes.get(w)) or (wt == OTHER and types[keys[0]] == OTHER):
            continue  # neither says person: "Tate" beside "Tate Modern"
        out[w] = keys[0]
    for key in out.values():
        types[key] = PERSON
    return out


# A type's least lead over the runner-up, unless its own votes reach SURE: less leaves the name
# `other`. A person needs more than a lean or a close call ("the Boston Bruins played": two plain
# words and a verb a team does too), but a speaker cue with a first name is enough ("Georgia
# said", 2.5 against the place list's 2). The same per mention (PER_MENTION: lead, own votes):
# weak cues do not add up over an article that names a team or a shop again and again.
# Chosen on the dev splits (issue 20.1, BENCHMARKS.md "Issue 20.1: span detection").
MARGIN: dict[str, float] = {PERSON: 1.5}
SURE = 2.5
PER_MENTION: tuple[float, float] | None = (1.0, 1.5)


def _resolve(raws: list[Raw], pairs: Sequence[tuple[str, str]] = ()) -> list[Mention]:
    """One name and one type per key. A `hint` raw only votes (for a key something else
    mentions); of two coordinated names (`pairs`), one that no vote typed takes the other's."""
    if any(r.source == "hint" for r in raws):
        hints = [r for r in raws if r.source == "hint"]
        raws = [r for r in raws if r.source != "hint"]
    else:
        hints = []
    alias = {r.key: r.alias_to for r in raws if r.alias_to and r.alias_to != r.key}
    votes: dict[str, dict[str, float]] = {}
    forms: dict[str, dict[str, int]] = {}
    target_names: dict[str, str] = {}
    first_name: dict[str, str] = {}
    for r in (*raws, *hints) if hints else raws:
        key = r.key
        if alias and key in alias:
            key = r.key = alias[key]
        if r.source == "hint":
            hv = votes.setdefault(key, {})
            for kind, w in r.votes.items():
                hv[kind] = hv.get(kind, 0.0) + w
            continue
        if r.votes:
            v = votes.get(key)
            if v is None:
                votes[key] = dict(r.votes)
            else:
                for kind, w in r.votes.items():
                    v[kind] = v.get(kind, 0.0) + w
        if key not in first_name:
            first_name[key] = r.name
        if r.alias_to is None:
            f = forms.get(key)
            if f is None:
                f = forms[key] = {}
            f[r.name] = f.get(r.name, 0) + (3 if r.source in _NAMED_BY else 1)
        if r.source == "wikilink" or r.source == "title":
            target_names.setdefault(key, r.name)
    names: dict[str, str] = {}
    types: dict[str, str] = {}
    for key, name in first_name.items():
        f = forms.get(key)
        if key in target_names:
            names[key] = target_names[key]
        elif f:
            names[key] = next(iter(f)) if len(f) == 1 else _best_form(f)
        else:
            names[key] = name
        v = votes.get(key)
        if not v:
            types[key] = OTHER
        elif len(v) == 1:
            ((kind, w),) = v.items()
            types[key] = kind if w > 0 else OTHER
        else:
            best = max(_TYPE_ORDER, key=lambda k: v.get(k, 0.0))
            types[key] = best if v.get(best, 0.0) > 0 else OTHER
        if MARGIN and types[key] in MARGIN and v:
            top = v.get(types[key], 0.0)
            rest = max((w for k, w in v.items() if k != types[key]), default=0.0)
            lead = top - max(rest, 0.0)
            per = sum(forms.get(key, {}).values()) or 1
            if (lead < MARGIN[types[key]] and top < SURE) or (
                PER_MENTION and lead / per < PER_MENTION[0] and top / per < PER_MENTION[1]
            ):
                types[key] = OTHER
    if pairs:
        _pass_types(pairs, alias, names, types)
    parts = _part_names(names, types, votes)
    if parts:
        for r in raws:
            full = parts.get(r.key)
            if full is not None:
                r.key = full
    raws.sort(key=_LINE)
    return [_mention(r.key, names[r.key], types[r.key], r.line, r.surface, r.source) for r in raws]


_new = object.__new__
_set = object.__setattr__


def _mention(key: str, name: str, type_: str, line: int, surface: str, source: str) -> Mention:
    """Mention(...) without the frozen dataclass's __init__ (a guarded setattr per field): the
    same fields in the same instance dict, in half the time (a note's every mention is one)."""
    m = _new(Mention)
    _set(
        m,
        "__dict__",
        {
            "key": key,
            "name": name,
            "type": type_,
            "line": line,
            "surface": surface,
            "source": source,
        },
    )
    return m


def extract(text: str, first_line: int = 1, *, tags: Iterable[str] = ()) -> list[Mention]:
    """The mentions in a memory's text or a note's body (front matter removed) whose first line
    is `first_line`; `tags` (a memory's tags) are mentions on the first line."""
    text = nfc(text)
    out: list[Raw] = []
    for t in tags:
        tag = nfc(str(t)).strip().lstrip("#").lower()
        if tag:
            add(out, "#" + tag, first_line, "tag", TAG, 5.0, key="#" + tag)
    pairs = _scan(text, first_line, out, set())
    return _resolve(out, pairs)


def extract_note(text: str, path: str = "") -> list[Mention]:
    """The mentions in a whole note file (front matter included), lines counted in the file."""
    fm, body, first = parse_front_matter(text)
    return extract_document(fm, body, first, text, path)


def extract_document(
    fm: FrontMatter, body: str, first: int, text: str, path: str = "", guard: bool = True
) -> list[Mention]:
    """extract_note for a file already parsed (parse_front_matter's three values and the file's
    text): what the indexer calls, so front matter is not parsed twice. With `guard`, a
    credential the note holds (`DB_PASSWORD=hunter2`, `api_key: sk-...`) is no name: the lines
    where a name found may be one are read by the secret guard (secretguard.masked_lines), and
    when it blanks any, the note is read again with them blanked, as a memory is."""
    if (composed := nfc(text)) is not text:  # rare: parsed again from the NFC text
        text = composed
        fm, body, first = parse_front_matter(text)
    head = text.split("\n", first - 1)[: first - 1] if first > 1 else []
    title, title_line = fm.title, 1
    if title:
        title_line = next((i + 1 for i, ln in enumerate(head) if ln.startswith("title")), 1)
    elif any(mark in body for mark in _NOT_TEXT) or _SETEXT_H1.search(body):
        for i, level, text, _ in headings(body.split("\n")):
            if level == 1 and text:
                title, title_line = text, first + i
                break
    else:  # no code, comment, math or setext heading: only the lines that open like an H1
        for m in _H1.finditer(body):
            h = atx_heading(m.group())
            if h and h[0] == 1 and h[1]:
                title, title_line = h[1], first + body.count("\n", 0, m.start())
                break
    heading = canonical_key(title) if title and not fm.title else ""
    if not title and path:
        title = display_name(path.rsplit("/", 1)[-1].removesuffix(".md"))
    out: list[Raw] = []
    if head and isinstance(fm.raw, dict):
        _front(fm.raw, head, title, title_line, out)
    known = {r.key for r in out}
    # a person's first name alone is a name too ("Lena" after `people: [Lena Fischer]`)
    known |= {r.key.split(" ")[0] for r in out if " " in r.key and r.votes.get(PERSON)}
    pairs = _scan(body, first, out, known)
    stem = path.rsplit("/", 1)[-1].removesuffix(".md") if path else ""
    if stem and title and stem != title:  # the file name of a note titled so: another form
        title_key, stem_key = canonical_key(title), canonical_key(stem)
        if stem_key and stem_key != title_key and title_key in map(_KEY, out):
            add(out, stem, title_line, "file", alias_to=title_key)
    found = _resolve(out, pairs)
    if heading:  # the `# Title` names what the note is about: a declaration (store/firstnames)
        for i, x in enumerate(found):
            if x.line == title_line and x.key == heading and x.source == "name":
                found[i] = _mention(x.key, x.name, x.type, x.line, x.surface, "heading")
    if guard and (masked := masked_lines(text, found)):
        lines = text.split("\n")
        for number, line in masked.items():
            lines[number - 1] = line
        text = "\n".join(lines)
        return extract_document(*parse_front_matter(text), text, path, guard=False)
    return found


def in_lines(mentions: Iterable[Mention], start: int, end: int) -> list[Mention]:
    """The mentions on lines start..end (a chunk's range)."""
    return [m for m in mentions if start <= m.line <= end]


def entities(mentions: Iterable[Mention]) -> list[Entity]:
    """One Entity per key, most mentioned first."""
    groups: dict[str, list[Mention]] = defaultdict(list)
    for m in mentions:
        groups[m.key].append(m)
    out = []
    for key, ms in groups.items():
        name = ms[0].name
        forms = sorted({display_name(m.surface) for m in ms} - {name, ""})
        lines = tuple(sorted({m.line for m in ms}))
        out.append(Entity(key, name, ms[0].type, tuple(forms), lines))
    return sorted(out, key=lambda e: (-len(e.lines), e.key))
