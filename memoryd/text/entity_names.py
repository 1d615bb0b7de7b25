"""Entity extraction, second pass (memoryd/text/entities.py has the whole): capitalised names.
Runs of one to four capitalised words in the lines the first pass (entity_spans.py) left, the
words around each run, which runs make a name (sentence-initial common words dropped), and the
type votes each gets from its neighbours. Pure functions of strings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memoryd.text import entity_cues as cues
from memoryd.text import entity_german, entity_typer
from memoryd.text.entity_cues import PERSON, PLACE, SYSTEM
from memoryd.text.entity_lower import lower_systems
from memoryd.text.entity_spans import POSSESSIVE, Raw, add, canonical_key
from memoryd.text.entity_typer import NONE, ask, decider
from memoryd.text.markdown import atx_heading

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
_LETTER_AT = re.compile(r"[^\W\d_]").match
_PAIRS = re.compile(rf"({_WORD_RX})([\W\d_]*)").findall  # the words, each with the gap after
# What follows a run: the gap to the next word (everything but letters), and up to three words
# (what islice(_WORD.finditer(line, end), 3) finds, in one match).
_AFTER = re.compile(
    rf"([\W\d_]*)(?:({_WORD_RX})(?:[\W\d_]*({_WORD_RX})(?:[\W\d_]*({_WORD_RX}))?)?)?"
).match
_INITIAL = re.compile(r"[A-Z]\.").fullmatch
_INITIALS = re.compile(r" (?:[A-Z]\. ){1,2}").fullmatch
_CLOSE_QUOTE = {' "': '" ', " “": "” "}
_OPEN_QUOTE = frozenset(_CLOSE_QUOTE)
_QUOTES = ('"', "“")
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
    tail: str = ""  # what stands between the run and the next run of its line, if any
    nouns: bool = False  # a German line: every noun capitalised, a lone capital no name's sign


def _word_key(w: str) -> str:
    return POSSESSIVE.sub("", w).lower() if "'" in w or "’" in w else w.lower()


def _word_canonical(w: str) -> str:
    """canonical_key of one word; a plain ASCII word is only lower-cased."""
    return w.lower() if w.isascii() and w.isalpha() else canonical_key(w)


def _nameword(w: str) -> bool:
    if not w[0].isupper():
        return False
    k = _word_key(w)
    if k in cues.STOP or k in cues.HONORIFICS or (k[-1:] == "s" and k[:-1] in cues.STOP):
        return False
    if (cues.interjection(k) and not w.isupper()) or _contraction(k):  # not HMM, the model
        return False
    return not (w.isupper() and (len(k) < 2 or k in cues.common_words()))


_CONTRACTED = ("ll", "ve", "re", "m", "d", "t")


def _contraction(k: str) -> bool:
    """A pronoun or a verb contracted, with either apostrophe: "We'll", "I’ve", "They’re",
    "Didn’t"."""
    head, apostrophe, tail = k.replace("’", "'").partition("'")
    if not apostrophe or tail not in _CONTRACTED:
        return False
    return head in cues.STOP or (tail == "t" and head.endswith("n") and head[:-1] in cues.STOP)


_NAMEWORDS: dict[str, bool] = {}  # _nameword's answers: the same words come back line after line


def clear_caches() -> None:
    """Forget the word tests' answers (the benchmark starts each pass cold)."""
    _NAMEWORDS.clear()
    _CAMEL_WORDS.clear()
    entity_typer.clear_caches()


def _line_caps(text: str) -> list[tuple[int, list[tuple[int, int, str]]]]:
    """The capitalised words that can be part of a name, (start, end, word) in their line, of
    every line of `text` ("\n"-separated) that has some, as (line index, words): one scan of the
    whole text (a word never spans a line end, and a line's first
    character looks behind at "\n" as at nothing), the offsets made the line's."""
    out: list[tuple[int, list[tuple[int, int, str]]]] = []
    known = _NAMEWORDS
    count, rfind = text.count, text.rfind
    i = line_start = seen = 0
    current: list[tuple[int, int, str]] | None = None
    for m in _CAPWORD.finditer(text):
        w = m.group()
        ok = known.get(w)
        if ok is None:
            if len(known) >= 65536:
                known.clear()
            ok = known[w] = _nameword(w)
        if not ok:
            continue
        s = m.start()
        k = count("\n", seen, s)
        seen = s
        if k or current is None:
            i += k
            line_start = rfind("\n", 0, s) + 1
            current = []
            out.append((i, current))
        current.append((s - line_start, m.end() - line_start, w))
    return out


def _runs(line: str, n: int, caps: list[tuple[int, int, str]], nouns: bool) -> list[_Run]:
    """The runs of capitalised words of a line; `caps` its words that can be part of a name
    (_line_caps); `nouns`: the line is German (_german_lines)."""
    if not caps:
        return []
    heading = "#" in line[:4] and atx_heading(line) is not None
    all_initial = heading or line.lstrip().startswith("|")
    field = _FIELD.match(line) if ":" in line else None
    field_type = cues.LINE_FIELDS.get(field.group(1).lower()) if field else None
    runs: list[_Run] = []
    honorifics, initial_gap = cues.HONORIFICS, _INITIAL_GAP
    connectors = cues.GERMAN_CONNECTORS if nouns else cues.CONNECTORS  # der, den: articles
    pairs, letter_at = _PAIRS, _LETTER_AT
    i, ncaps = 0, len(caps)
    while i < ncaps:
        j = i + 1
        while j < ncaps and j - i < 4:
            between = line[caps[j - 1][1] : caps[j][0]]
            if (
                between != " "
                and not (between[:1] == " " == between[-1:] and between.strip() in connectors)
                and not _INITIALS(between)  # a middle initial: "George F. Hauser"
            ):
                if (  # a nickname in quotes: William "Buckshot" May
                    between in _OPEN_QUOTE
                    and j + 1 < ncaps
                    and j - i < 3
                    and line[caps[j][1] : caps[j + 1][0]] == _CLOSE_QUOTE[between]
                ):
                    j += 2
                    continue
                break
            j += 1
        s, end = caps[i][0], caps[j - 1][1]
        # up to two words back, most often within 32 characters; a word the window cuts
        # (one starting where the window does) is not one of them. (word, gap after it) pairs:
        # the last gap runs to the run, as no letter stands there.
        lo = s - 32 if s > 32 else 0
        before = pairs(line, lo, s) if s else []  # none when no letter stands before
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
        after_gap, w1, w2, w3 = m.groups() if m else (line[end:], None, None, None)
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
                line[end : caps[j][0]] if j < ncaps else "",
                nouns,
            )
        )
        i = j
    return runs


def _keep(run: _Run, known: set[str]) -> list[str]:
    """The run's words that make a name ([] when none), dropping sentence-initial common words
    and, on a German line, a lone noun ("Der Server startet", "über die Datenbank")."""
    words = _kept(run, known)
    return entity_german.trim(words, known) if run.nouns and not run.honorific else words


def _kept(run: _Run, known: set[str]) -> list[str]:
    words = list(run.words)
    if not (run.initial or run.all_initial):  # mid-sentence: the run is a name as it is
        while words and words[0].lower() in cues.CONNECTORS:
            words.pop(0)
        return words
    names, _worded, systems, places, common = _lists()
    lowered = " ".join(words).lower()
    if lowered in systems or (lowered in places and lowered not in cues.PLACE_WORDS):
        return words  # "Kafka can replace cron", "Lisbon was warm": a known name opens it
    if (
        len(words) <= 3
        and (
            _word_key(words[0]) in names
            or (run.nouns and _word_key(words[0]) in entity_german.first_names())
        )
        and not _starter(words[0])  # another language's opener: "Dann" (German "then")
        and (len(words) == 1 or all(w[1:].islower() and w.isalpha() for w in words))
    ):
        return words  # "# Caroline Baker", "Caroline left early.": a first name opens it
    if run.all_initial:

        def worded(w: str) -> bool:
            return _word_key(w) in common or _starter(w)

        if len(words) == 1 and worded(words[0]):
            return words if canonical_key(words[0]) in known else []
        while words and worded(words[0]) and canonical_key(" ".join(words)) not in known:
            words.pop(0)
        while words and worded(words[-1]) and canonical_key(" ".join(words)) not in known:
            words.pop()
        return words
    if run.initial and not run.honorific and canonical_key(" ".join(words)) not in known:

        def plain(w: str) -> bool:  # a first name is no plain word: "Later Ana Lima"
            if _starter(w):  # "Heute", "Donc", "Pero"
                return True
            k = _word_key(w)
            if k in names or (not k.isascii() and canonical_key(k) in names):  # Zoë, Noé
                return False
            parts = k.split("-")
            if len(parts) > 1 and parts[0] in names and w.istitle():  # Jean-Luc, Mary-Kate
                return False
            latin = k[:1] <= "\u024f" or "\u1e00" <= k[:1] <= "\u1eff"  # Greek, Cyrillic: no list
            return not latin or k in common or all(p in common or len(p) <= 3 for p in parts)

        if len(words) == 1:
            # "Melanie's", "Cheney's back", not "Life's too short": 's is "is" before those words
            cue = run.after in cues.PERSON_AFTER or (
                words[0].endswith(("'s", "’s")) and run.window[:1] not in _IS_BEFORE
            )
            if plain(words[0]) and not cue:
                return []
        else:  # "Check Grafana" -> Grafana; "Julia Evans", "New York" stay whole
            while len(words) > 1 and (
                _word_key(words[0]) in cues.LEADING
                or (plain(words[0]) and not all(plain(w) for w in words[1:]))
            ):
                words.pop(0)
    while words and words[0].lower() in cues.CONNECTORS:
        words.pop(0)
    return words


# A plain word opening a sentence with 's before one of these is "it is", not its owner: "Life's
# too short", "Nature's amazing", "Everything's been fine".
_IS_BEFORE = {
    (w,)
    for w in cues.words(
        "a an the too so not been all just really very pretty such gonna going got getting "
        "always never still only like about what more better good great hard tough short "
        "crazy funny amazing awesome wild weird tricky fine ok okay over here there"
    )
}


def _speaker(run: _Run) -> bool:
    """'Maya: ...' at the start of a line; not a label alone on its line ("**Examples:**")."""
    return (
        run.initial
        and not run.all_initial
        and run.after_gap.startswith(":")
        and len(run.words) <= 2
        and bool(run.window)
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


def _role_after(window: tuple[str, ...]) -> bool:
    """The words after a name and a comma are a role: "CEO of", "the founder"."""
    if not window:
        return False
    if window[0] in ("the", "a", "our", "its", "their") and len(window) > 1:
        return window[1] in cues.ROLES
    return window[0] in cues.ROLES


_POSSESSORS = cues.words("my your his her our their")
_DETERMINERS = cues.words("the a an this that these those my our your their his her its")


def _lists() -> tuple[
    frozenset[str], frozenset[str], frozenset[str], frozenset[str], frozenset[str]
]:
    """The shipped lists _run_votes reads: first names (only names, words too), systems, places,
    common words (each loaded once; this tuple saves a call per list per name)."""
    got = _LISTS
    if not got:
        names, worded = cues.first_names()
        got.extend((names, worded, cues.systems()[0], cues.places(), cues.common_words()))
    return got[0], got[1], got[2], got[3], got[4]


_LISTS: list[frozenset[str]] = []


def _starter(w: str) -> bool:
    """Another language's sentence opener, no name there ("Heute", "Donc"), as it opens one:
    not in capitals ("KEINE BREMSEN" is shouted or a title, as English capitals are read)."""
    return not w.isupper() and _word_key(w) in cues.sentence_starters()


_PERSON_AFTER, _PERSON_AFTER_WEAK, _ROLES = cues.PERSON_AFTER, cues.PERSON_AFTER_WEAK, cues.ROLES
_PERSON_BEFORE, _PERSON_BEFORE_2 = cues.PERSON_BEFORE, cues.PERSON_BEFORE_2
_SYSTEM_BEFORE, _SYSTEM_BEFORE_2, _SYSTEM_AFTER = (
    cues.SYSTEM_BEFORE,
    cues.SYSTEM_BEFORE_2,
    cues.SYSTEM_AFTER,
)
_PLACE_BEFORE, _PLACE_BEFORE_2, _PLACE_AFTER = (
    cues.PLACE_BEFORE,
    cues.PLACE_BEFORE_2,
    cues.PLACE_AFTER,
)
_SYSTEM_SUFFIX = cues.SYSTEM_SUFFIX
_V_VERSION, _VERSION_GAP = cues.V_VERSION.fullmatch, cues.VERSION_GAP.match


def _run_votes(run: _Run, words: list[str], speakers: set[str]) -> dict[str, float]:
    """The type votes of one run; `speakers` are the names that open two lines or more. (Each
    vote adds to its type in the order written here, which is also the order the types enter
    the dict: the typer's features list them so.)"""
    v: dict[str, float] = {}
    get = v.get
    first, last = _word_key(words[0]), _word_key(words[-1])
    n = len(words)
    text = " ".join(words) if n > 1 else words[0]
    before = run.before
    prev = before[-1] if before else ""
    prev2 = " ".join(before) if len(before) > 1 else prev
    after, after_gap = run.after, run.after_gap
    tight = after_gap == " "
    possessive = words[-1].endswith(("'s", "’s"))
    shouted = text.isupper()  # an acronym is rarely a person
    names, worded, systems, places, common = _lists()
    if run.honorific:
        v[PERSON] = get(PERSON, 0.0) + 3
    if run.nouns and first in entity_german.first_names():  # "Klaus sagt": no English cue there
        v[PERSON] = get(PERSON, 0.0) + 2
    elif run.nouns and text.lower() in entity_german.places():  # "Köln", "Österreich"
        v[PLACE] = get(PLACE, 0.0) + 2
    if after in _PERSON_AFTER and ")" not in after_gap:  # not "Caroline (at Ledgerly) said"
        weak = after in _PERSON_AFTER_WEAK or shouted
        v[PERSON] = get(PERSON, 0.0) + (1 if weak else 2)
    if words == run.words and _speaker(run) and canonical_key(text) in speakers:
        v[PERSON] = get(PERSON, 0.0) + 1.5
    if run.field_type:
        v[run.field_type] = get(run.field_type, 0.0) + 2
    if not shouted:
        if not _PERSONAL.isdisjoint(run.window):
            v[PERSON] = get(PERSON, 0.0) + 1
        if prev in _PERSON_BEFORE:
            v[PERSON] = get(PERSON, 0.0) + 1
        if (prev in _ROLES and n > 1) or (after_gap == ", " and _role_after(run.window)):
            # "CEO Ana Souza", "guitarist John Petrucci"; "Ana Souza, CEO of Nimbus", "Ana
            # Souza, the founder"
            v[PERSON] = get(PERSON, 0.0) + 1.5
    if prev2 in _PERSON_BEFORE_2:
        v[PERSON] = get(PERSON, 0.0) + 2
    if prev2 in _SYSTEM_BEFORE_2:
        v[SYSTEM] = get(SYSTEM, 0.0) + 2
    if possessive:
        v[PERSON] = get(PERSON, 0.0) + 0.5
    if tight and after in _SYSTEM_AFTER and not (possessive and first in names):
        v[SYSTEM] = get(SYSTEM, 0.0) + 2  # "the Billing service"; not "Caroline's team"
    lowered = text.lower()
    if possessive:  # "Cuba's" is Cuba
        lowered = POSSESSIVE.sub("", lowered)
    if lowered in systems:
        v[SYSTEM] = get(SYSTEM, 0.0) + 3  # a well-known system: "Kafka", "Visual Studio Code"
    elif lowered in places:
        v[PLACE] = get(PLACE, 0.0) + 2  # a country, a region, a large city: "India", "Lisbon"
    if n > 1:
        if last in cues.ORG_SUFFIX or first in cues.ORG_PREFIX:
            v[SYSTEM] = get(SYSTEM, 0.0) + 3
        elif first not in names:  # not "Frank Church", "Helen Park"
            if last in cues.ORG_SUFFIX_2:
                v[SYSTEM] = get(SYSTEM, 0.0) + 3
            elif last in cues.PLACE_SUFFIX_2:
                v[PLACE] = get(PLACE, 0.0) + 2
    elif tight and after in _PLACE_AFTER:
        v[PLACE] = get(PLACE, 0.0) + 1.5
    if (tight and _V_VERSION(after)) or (after_gap[:1] == " " and _VERSION_GAP(after_gap)):
        v[SYSTEM] = get(SYSTEM, 0.0) + 2
    if prev in _SYSTEM_BEFORE:
        v[SYSTEM] = get(SYSTEM, 0.0) + 1
    if (  # "my Gmail password", "our Lyft": a brand; "her Father" is a title's noun
        prev in _POSSESSORS
        and n == 1
        and not possessive
        and not shouted
        and len(first) > 3  # the common-words list starts at four letters
        and first not in common
    ):
        v[SYSTEM] = get(SYSTEM, 0.0) + 1
    if any(map(_camel_word, words)):
        v[SYSTEM] = get(SYSTEM, 0.0) + 1.5
    if _HAS_DIGIT(text):
        v[SYSTEM] = get(SYSTEM, 0.0) + 1
    for w in words:
        if len(w) > 5 and w.lower().endswith(_SYSTEM_SUFFIX):
            v[SYSTEM] = get(SYSTEM, 0.0) + 1
            break
    if prev in _PLACE_BEFORE and not possessive:  # "at Sam's" is Sam's place
        v[PLACE] = get(PLACE, 0.0) + 1
    elif prev == "to" and not possessive:
        v[PLACE] = get(PLACE, 0.0) + 0.75
    if prev2 in _PLACE_BEFORE_2 or prev in _PLACE_BEFORE_2:
        v[PLACE] = get(PLACE, 0.0) + 2
    if n > 1 and (first in cues.PLACE_PREFIX or last in cues.PLACE_SUFFIX):
        v[PLACE] = get(PLACE, 0.0) + 2
    if 2 <= n <= 3 and not shouted:
        if (
            (first in names or (first in worded and not run.initial))
            and last not in names
            and all((w[1:].islower() and w.isalpha()) or _INITIAL(w) for w in words)
        ):
            v[PERSON] = get(PERSON, 0.0) + 1  # a first name and a surname: "Helen Park"
    elif n == 1 and first in names and not shouted:
        v[PERSON] = get(PERSON, 0.0) + 0.5  # a first name alone: "Lena"
    if (
        not v
        and n == 2
        and prev not in _DETERMINERS
        and all(w[1:].islower() and w.isalpha() for w in words)
        and not (first in common and last in common)
    ):
        v[PERSON] = 0.5
    return v


# A short acronym is as often a common noun (SMS, TV, RRF) as a name: the typer leaves it alone.
_SHORT_ACRONYM = re.compile(r"[A-Z]{2,3}").fullmatch
STRONG = 2.0  # a rule vote this strong types a name without the typer
ASK_EVERY = False  # ask the typer about every name (bench/train_typer.py: every name is an example)

# Between two names that share a type: "Signal over WhatsApp", "Kafka, Redis and NATS".
_COORDINATED = re.compile(
    r"(?:,? (?:and|or|nor|over|vs\.?|versus|and/or|&|instead of|rather than|than) |, | ?/ ?)"
)


def names(
    lines: Sequence[tuple[int, str]], out: list[Raw], known: set[str], code_words: set[str]
) -> list[tuple[str, str]]:
    """Add the names in `lines` to `out`; return the pairs of keys written as coordinated
    names. A name a code span writes as a word (`systemctl stop patroni`) votes system."""
    text = "\n".join(line for _, line in lines)
    lower_systems(lines, out, text)
    named = frozenset(known)  # what front matter and wikilinks name: the typer drops none of it
    german = entity_german.german_lines(lines, text)
    runs = [
        r for i, caps in _line_caps(text) for r in _runs(lines[i][1], lines[i][0], caps, german(i))
    ]
    seen: set[str] = set()
    speakers: set[str] = set()
    for r in runs:
        if r.all_initial:
            continue
        if not r.initial:  # names written mid-sentence tell which sentence-initial words are
            if r.nouns and not entity_german.full_name(r.words):  # German nouns tell nothing
                continue
            known.add(canonical_key(" ".join(r.words)))
            if 1 < len(r.words) < 4:  # "Caroline left." after "Caroline Baker joined"
                known.add(_word_canonical(r.words[0]))
                known.add(_word_canonical(r.words[-1]))
        elif _speaker(r):  # a chat's speakers open several lines; "Unfreeze: ..." opens one
            k = canonical_key(" ".join(r.words))
            (speakers if k in seen else seen).add(k)
    known |= speakers
    pairs: list[tuple[str, str]] = []
    last: tuple[_Run, str] | None = None  # the run before, when kept, and its key
    typer = decider()
    hinted = {x.key for x in out if x.source == "hint"} if typer is not None else set()
    last_strong = False
    for r in runs:
        words = _keep(r, known)
        if words and r.field_type and words[0].lower() in cues.LINE_FIELDS:
            words = words[1:]
        raw = add(out, " ".join(words), r.line, "name") if words else None
        if raw is None:
            last = None
            continue
        plain = words
        if '"' in raw.surface or "“" in raw.surface:  # the cues read a name without its
            # nickname: William "Buckshot" May (_runs joins it)
            plain = [w for w in words if w[:1] not in _QUOTES] or words
        raw.votes = _run_votes(r, plain, speakers)
        if len(plain) < len(words):
            raw.votes[PERSON] = raw.votes.get(PERSON, 0.0) + 2
        if len(words) < len(r.words) and r.words[-len(words) - 1].lower() in cues.PERSON_BEFORE:
            raw.votes[PERSON] = raw.votes.get(PERSON, 0.0) + 1  # "Ask Melanie": addressed
        if code_words and raw.key in code_words:
            raw.votes[SYSTEM] = raw.votes.get(SYSTEM, 0.0) + 2
        strong = max(raw.votes.values(), default=0.0) >= STRONG
        coordinated = last is not None and _COORDINATED.fullmatch(last[0].tail) is not None
        if typer is not None and (
            ASK_EVERY
            or not (
                strong
                or _SHORT_ACRONYM(raw.name)
                or raw.key in hinted  # a cue without a mention: "a Lumix GX80"
                or (coordinated and last_strong)  # it takes its partner's type
            )
        ):
            # no strong rule vote: the learned typer decides (entity_typer.py)
            decided = ask(
                typer, plain, r.before, r.after, r.after_gap, r.window, r.initial,
                r.all_initial, r.honorific, raw.votes, raw.key, raw.line,
            )  # fmt: skip
            if decided is not None:
                if decided[0] == NONE:
                    if not raw.votes and raw.key not in named:  # a rule cue keeps a name
                        out.pop()  # `add` appended it
                        last = None
                        continue
                else:
                    raw.votes[decided[0]] = raw.votes.get(decided[0], 0.0) + decided[1]
        if coordinated and last is not None and last[0].line == r.line:
            pairs.append((last[1], raw.key))
        last, last_strong = (r, raw.key), strong
    return pairs
