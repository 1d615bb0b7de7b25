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
inside fenced code; `inline code` yields its identifiers only. CJK names only where marked:
wikilinks, front matter, 「」【】《》 or quotes around them, or an honorific after them (田中さん).

Types: person, system (projects, products, organisations), place, identifier, tag, other; votes
from where a mention came (front-matter field, @mention, tag, code shape) and from the words
around it (honorifics, "said", "the X service", "X 3.12", "moved to X", "New ...", "... Street",
CamelCase), summed over the text; no vote means other.

Canonical key: NFKC, Latin diacritics folded, case folded, possessive and surrounding
punctuation stripped, white space collapsed; tags keep their "#". A wikilink alias or a note
alias maps to its target's key.
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
from memoryd.text.entity_spans import (
    HAS_CJK,
    POSSESSIVE,
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
from memoryd.text.markdown import FrontMatter, atx_heading, fenced, parse_front_matter


@dataclass(frozen=True)
class Mention:
    """One occurrence of an entity: `key` and `name`/`type` are the entity's (canonical, the
    same for every mention of it in one extraction); `surface` is the text as written."""

    key: str
    name: str
    type: str
    line: int
    surface: str
    source: str  # wikilink alias front_matter title tag mention name code host url email quoted


@dataclass(frozen=True)
class Entity:
    key: str
    name: str
    type: str
    aliases: tuple[str, ...]  # the other surface forms, as written
    lines: tuple[int, ...]


# --- capitalised names -------------------------------------------------------------------------

_HAS_DIGIT = re.compile(r"\d").search
_PERSONAL = cues.PRONOUNS | cues.KIN
_FIELD = re.compile(r"^\W*([A-Za-z_]+)\s*::?\s")
# A capitalised word not glued to a word before it. The first character is matched twice: by a
# set re can scan for quickly (a superset), then by the exact class, looking behind; the same
# matches as r"(?<![\w'’-])[^\W\d_a-z]..." in a third of the time.
_CAPWORD = re.compile(
    r"[A-Z\u00aa\u00b5\u00ba\u00c0-\U0010ffff](?<=[^\W\d_a-z])(?<![\w'’-].)"
    r"[\w]*(?:['’\-][^\W_]+)*['’]?"
)
_WORD_RX = r"[^\W\d_][\w]*(?:['’\-][^\W_]+)*['’]?"
_WORD = re.compile(_WORD_RX)
_LETTER = re.compile(r"[^\W\d_]").search  # a word starts at every letter no word has taken
_LETTER_AT = re.compile(r"[^\W\d_]").match
_PAIRS = re.compile(rf"({_WORD_RX})([\W\d_]*)").findall  # the words, each with the gap after
# What follows a run: the gap to the next word (everything but letters), and up to three words
# (what islice(_WORD.finditer(line, end), 3) finds, in one match).
_AFTER = re.compile(
    rf"([\W\d_]*)(?:({_WORD_RX})(?:[\W\d_]*({_WORD_RX})(?:[\W\d_]*({_WORD_RX}))?)?)?"
).match
_LINE = attrgetter("line")
_INITIAL_GAP = frozenset('.!?:;"“”‘([{>|*•…—–')


@dataclass(slots=True)
class _Run:
    line: int
    words: list[str]
    initial: bool  # the first word starts a sentence, a line or a heading
    before: tuple[str, ...]  # up to two words before, lower-cased
    after: str  # the word after, lower-cased
    after_gap: str  # what stands between the run and that word
    honorific: bool
    all_initial: bool  # a heading or a table row: every word is like sentence-initial
    field_type: str | None  # the line starts "Attendees:" or another field that types names
    window: tuple[str, ...]  # the three words after, lower-cased


def _word_key(w: str) -> str:
    return POSSESSIVE.sub("", w).lower() if "'" in w or "’" in w else w.lower()


def _nameword(w: str) -> bool:
    if not w[0].isupper():
        return False
    k = _word_key(w)
    if k in cues.STOP or k in cues.HONORIFICS or (k[-1:] == "s" and k[:-1] in cues.STOP):
        return False
    return not (w.isupper() and (len(k) < 2 or k in cues.common_words()))


_NAMEWORDS: dict[str, bool] = {}  # _nameword's answers: the same words come back line after line


def _namewords(line: str) -> list[tuple[int, int, str]]:
    """(start, end, word) of the capitalised words of `line` that can be part of a name."""
    if line.islower():  # no upper-case letter: no name (a third of the lines of notes)
        return []
    caps = []
    known = _NAMEWORDS
    for m in _CAPWORD.finditer(line):
        w = m.group()
        ok = known.get(w)
        if ok is None:
            if len(known) >= 65536:
                known.clear()
            ok = known[w] = _nameword(w)
        if ok:
            caps.append((m.start(), m.end(), w))
    return caps


def _runs(line: str, n: int) -> list[_Run]:
    caps = _namewords(line)
    if not caps:
        return []
    all_initial = ("#" in line[:4] and atx_heading(line) is not None) or line.lstrip().startswith(
        "|"
    )
    field = _FIELD.match(line) if ":" in line else None
    field_type = cues.LINE_FIELDS.get(field.group(1).lower()) if field else None
    runs: list[_Run] = []
    honorifics, connectors, initial_gap = cues.HONORIFICS, cues.CONNECTORS, _INITIAL_GAP
    pairs, letter, letter_at = _PAIRS, _LETTER, _LETTER_AT
    i, ncaps = 0, len(caps)
    while i < ncaps:
        j = i + 1
        while j < ncaps and j - i < 4:
            between = line[caps[j - 1][1] : caps[j][0]]
            if between != " " and not (
                between[:1] == " " == between[-1:] and between.strip() in connectors
            ):
                break
            j += 1
        s, end = caps[i][0], caps[j - 1][1]
        # up to two words back, most often within 32 characters; a word the window cuts
        # (one starting where the window does) is not one of them. (word, gap after it) pairs:
        # the last gap runs to the run, as no letter stands there.
        lo = s - 32 if s > 32 else 0
        before = pairs(line, lo, s) if s and letter(line, 0, s) else []
        if before and lo and letter_at(line, lo):
            del before[0]
        if len(before) < 2 and lo:
            lo = s - 160 if s > 160 else 0
            before = pairs(line, lo, s)
            if before and lo and letter_at(line, lo):
                del before[0]
        if before:
            last, gap = before[-1]
            prev: tuple[str, ...] = (
                (before[-2][0].lower().rstrip("."), last.lower().rstrip("."))
                if len(before) > 1
                else (last.lower().rstrip("."),)
            )
            honorific = prev[-1] in honorifics and gap.strip() in ("", ".")
            if honorific:
                initial = len(before) > 1 and not initial_gap.isdisjoint(before[-2][1])
            else:
                initial = not initial_gap.isdisjoint(gap) or gap.strip() == "-"
        else:
            prev, honorific, initial = (), False, True
        m = _AFTER(line, end)  # always matches: the gap, then up to three words
        after_gap, w1, w2, w3 = m.groups()
        if w1 is None:
            after, window = "", ()
        else:
            after = w1.lower()
            window = (after,) if w2 is None else (after, w2.lower(), *((w3.lower(),) if w3 else ()))
        runs.append(
            _Run(
                n,
                line[s:end].split(" "),
                initial,
                prev,
                after,
                after_gap,
                honorific,
                all_initial,
                field_type,
                window,
            )
        )
        i = j
    return runs


def _keep(run: _Run, known: set[str]) -> list[str]:
    """The run's words that make a name ([] when none), dropping sentence-initial common words."""
    words = list(run.words)
    common = cues.common_words()
    if run.all_initial:
        if len(words) == 1 and _word_key(words[0]) in common:
            return words if canonical_key(words[0]) in known else []
        while (
            words and _word_key(words[0]) in common and canonical_key(" ".join(words)) not in known
        ):
            words.pop(0)
        while (
            words and _word_key(words[-1]) in common and canonical_key(" ".join(words)) not in known
        ):
            words.pop()
        return words
    if run.initial and not run.honorific and canonical_key(" ".join(words)) not in known:

        def plain(w: str) -> bool:
            k = _word_key(w)
            parts = k.split("-")
            return k in common or len(k) <= 3 or all(p in common or len(p) <= 3 for p in parts)

        if len(words) == 1:
            cue = run.after in cues.PERSON_AFTER or words[0].endswith(("'s", "’s"))
            if plain(words[0]) and not cue:
                return []
        else:  # "Check Grafana" -> Grafana; "Julia Evans", "New York" stay whole
            while len(words) > 1 and plain(words[0]) and not all(plain(w) for w in words[1:]):
                words.pop(0)
    while words and words[0].lower() in cues.CONNECTORS:
        words.pop(0)
    return words


def _speaker(run: _Run) -> bool:
    """'Maya: ...' at the start of a line."""
    return (
        run.initial
        and not run.all_initial
        and run.after_gap.startswith(":")
        and len(run.words) <= 2
    )


_CAMEL_WORDS: dict[str, bool] = {}


def _camel_word(w: str) -> bool:
    """CamelCase inside a word or a hyphened part of it: GitHub, PagerDuty; not Wi-Fi, NASA."""
    ok = _CAMEL_WORDS.get(w)
    if ok is None:
        if len(_CAMEL_WORDS) >= 65536:
            _CAMEL_WORDS.clear()
        ok = _CAMEL_WORDS[w] = any(p[1:] != p[1:].lower() and not p.isupper() for p in w.split("-"))
    return ok


def _run_votes(run: _Run, words: list[str], speakers: set[str]) -> dict[str, float]:
    """The type votes of one run; `speakers` are the names that open two lines or more."""
    v: dict[str, float] = defaultdict(float)  # a plain dict once returned
    first, last = _word_key(words[0]), _word_key(words[-1])
    text = " ".join(words)
    prev = run.before[-1] if run.before else ""
    prev2 = " ".join(run.before)
    after, tight = run.after, run.after_gap == " "
    possessive = words[-1].endswith(("'s", "’s"))
    shouted = text.isupper()  # an acronym is rarely a person
    if run.honorific:
        v[PERSON] += 3
    if after in cues.PERSON_AFTER:
        v[PERSON] += 2
    if words == run.words and _speaker(run) and canonical_key(text) in speakers:
        v[PERSON] += 1.5
    if run.field_type:
        v[run.field_type] += 2
    if not shouted and not _PERSONAL.isdisjoint(run.window):
        v[PERSON] += 1
    if not shouted and prev in cues.PERSON_BEFORE:
        v[PERSON] += 1
    if prev2 in cues.PERSON_BEFORE_2:
        v[PERSON] += 2
    if prev2 in cues.SYSTEM_BEFORE_2:
        v[SYSTEM] += 2
    if possessive:
        v[PERSON] += 0.5
    if tight and after in cues.SYSTEM_AFTER:
        v[SYSTEM] += 2
    if len(words) > 1 and (last in cues.ORG_SUFFIX or first in cues.ORG_PREFIX):
        v[SYSTEM] += 3
    if tight and len(words) == 1 and after in cues.PLACE_AFTER:
        v[PLACE] += 1.5
    if tight and after[:1].isdigit() and cues.VERSION.match(after):
        v[SYSTEM] += 2
    if prev in cues.SYSTEM_BEFORE:
        v[SYSTEM] += 1
    if any(_camel_word(w) for w in words):
        v[SYSTEM] += 1.5
    if _HAS_DIGIT(text):
        v[SYSTEM] += 1
    if any(len(w) > 5 and w.lower().endswith(cues.SYSTEM_SUFFIX) for w in words):
        v[SYSTEM] += 1
    if prev in cues.PLACE_BEFORE and not possessive:  # "at Sam's" is Sam's place
        v[PLACE] += 1
    elif prev == "to" and not possessive:
        v[PLACE] += 0.75
    if prev2 in cues.PLACE_BEFORE_2 or prev in cues.PLACE_BEFORE_2:
        v[PLACE] += 2
    if len(words) > 1 and (first in cues.PLACE_PREFIX or last in cues.PLACE_SUFFIX):
        v[PLACE] += 2
    return dict(v)


def _names(lines: Sequence[tuple[int, str]], out: list[Raw], known: set[str]) -> None:
    runs = [r for n, line in lines for r in _runs(line, n)]
    for r in runs:  # names written mid-sentence tell which sentence-initial words are names
        if not r.initial and not r.all_initial:
            known.add(canonical_key(" ".join(r.words)))
    seen: set[str] = set()
    speakers: set[str] = set()
    for r in runs:  # a chat's speakers open several lines; "Unfreeze: ..." opens one
        if _speaker(r):
            k = canonical_key(" ".join(r.words))
            (speakers if k in seen else seen).add(k)
    known |= speakers
    for r in runs:
        words = _keep(r, known)
        if words and r.field_type and words[0].lower() in cues.LINE_FIELDS:
            words = words[1:]
        if not words:
            continue
        surface = " ".join(words)
        raw = add(out, surface, r.line, "name")
        if raw is not None:
            raw.votes = _run_votes(r, words, speakers)


# --- the whole extraction ----------------------------------------------------------------------


def _scan(body: str, first_line: int, out: list[Raw], known: set[str]) -> None:
    kept: list[tuple[int, str]] = []
    lines = body.split("\n")
    code = [c for _, c in fenced(lines)] if "```" in body or "~~~" in body else None
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
                    line = blank(line, m.start(), m.end())
            line = explicit(line, n, out, known, has)
        kept.append((n, line))
    cjk = [k for k in known if HAS_CJK(k)]
    if cjk:  # a CJK name the front matter or a wikilink gave, wherever the text writes it
        for n, line in kept:
            for k in cjk:
                if k in line:
                    add(out, k, n, "name", key=k)
    _names(kept, out, known)


def _front(
    raw: dict[str, Any], head: list[str], title: str | None, title_line: int, out: list[Raw]
) -> None:
    """Mentions from front matter; `head` is the file's first lines (front matter included);
    the note's title stands on `title_line`."""
    keys: dict[str, int] = {}
    for i, line in enumerate(head):
        m = re.match(r"^([A-Za-z_][\w-]*)\s*:", line)
        if m:
            keys.setdefault(m.group(1).lower(), i)

    def where(field_name: str, value: str) -> int:
        start = keys.get(field_name, 0)
        for i in range(start, len(head)):
            if value in head[i]:
                return i + 1
        return start + 1

    def values(v: Any) -> list[str]:
        items = (
            v if isinstance(v, list) else re.split(r"\s*[,;]\s*", v) if isinstance(v, str) else []
        )
        return [str(x).strip() for x in items[:200] if isinstance(x, str | int) and str(x).strip()]

    note_type = raw.get("type")
    title_key = canonical_key(title) if title else ""
    for item in values(raw.get("aliases", raw.get("alias"))) if title_key else []:
        add(out, item, where("aliases", item), "alias", alias_to=title_key)
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
        for item in values(value):
            inner = WIKI.fullmatch(item.strip('"'))
            text = inner.group(1).partition("|")[0].partition("#")[0] if inner else item
            if kind == TAG:
                tag = text.strip().lstrip("#").lower()
                if tag:
                    add(out, "#" + tag, where(fname, item), "front_matter", TAG, 5.0, key="#" + tag)
            else:
                add(out, text, where(fname, item), "front_matter", kind, 5.0)


_TYPE_ORDER = (PERSON, SYSTEM, PLACE, TAG, IDENTIFIER, OTHER)  # ties go to the first
_NAMED_BY = frozenset(("wikilink", "title", "front_matter"))  # a form from these counts 3


def _best_form(forms: dict[str, int]) -> str:
    """The most frequent form, a capitalised one on a tie, else the first seen."""
    return max(forms.items(), key=lambda kv: (kv[1], kv[0] != kv[0].lower()))[0]


def _resolve(raws: list[Raw]) -> list[Mention]:
    alias = {r.key: r.alias_to for r in raws if r.alias_to and r.alias_to != r.key}
    votes: dict[str, dict[str, float]] = {}
    forms: dict[str, dict[str, int]] = {}
    target_names: dict[str, str] = {}
    first_name: dict[str, str] = {}
    for r in raws:
        key = r.key
        if alias and key in alias:
            key = r.key = alias[key]
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
    raws.sort(key=_LINE)
    return [Mention(r.key, names[r.key], types[r.key], r.line, r.surface, r.source) for r in raws]


def extract(text: str, first_line: int = 1, *, tags: Iterable[str] = ()) -> list[Mention]:
    """The mentions in a memory's text or a note's body (front matter removed) whose first line
    is `first_line`; `tags` (a memory's tags) are mentions on the first line."""
    out: list[Raw] = []
    for t in tags:
        tag = str(t).strip().lstrip("#").lower()
        if tag:
            add(out, "#" + tag, first_line, "tag", TAG, 5.0, key="#" + tag)
    _scan(text, first_line, out, set())
    return _resolve(out)


def extract_note(text: str, path: str = "") -> list[Mention]:
    """The mentions in a whole note file (front matter included), lines counted in the file."""
    fm, body, first = parse_front_matter(text)
    return extract_document(fm, body, first, text, path)


def extract_document(
    fm: FrontMatter, body: str, first: int, text: str, path: str = ""
) -> list[Mention]:
    """extract_note for a file already parsed (parse_front_matter's three values and the file's
    text): what the indexer calls, so front matter is not parsed twice."""
    head = text.split("\n", first - 1)[: first - 1] if first > 1 else []
    title, title_line = fm.title, 1
    if title:
        title_line = next((i + 1 for i, ln in enumerate(head) if ln.startswith("title")), 1)
    else:
        for i, (line, code) in enumerate(fenced(body.split("\n"))):
            h = None if code else atx_heading(line)
            if h and h[0] == 1 and h[1]:
                title, title_line = h[1], first + i
                break
    if not title and path:
        title = display_name(path.rsplit("/", 1)[-1].removesuffix(".md"))
    out: list[Raw] = []
    if head and isinstance(fm.raw, dict):
        _front(fm.raw, head, title, title_line, out)
    known = {r.key for r in out}
    # a person's first name alone is a name too ("Lena" after `people: [Lena Fischer]`)
    known |= {r.key.split(" ")[0] for r in out if " " in r.key and r.votes.get(PERSON)}
    _scan(body, first, out, known)
    return _resolve(out)


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
