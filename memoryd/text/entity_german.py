"""German text for entity extraction: German capitalises every noun, so on a German line a lone
capitalised word is no sign of a name (text/entity_names.py reads these). Which lines are German
(their grammar words), and the German first names that are a sign of one."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache

from memoryd.text import entity_cues as cues
from memoryd.text.entity_cues import words
from memoryd.text.entity_spans import canonical_key


@cache
def first_names() -> frozenset[str]:
    """First names common in German-speaking countries (memoryd/data/first-names-de.txt),
    lower-cased: a sign of a name on a German line, where every noun is capitalised."""
    return frozenset(w for x in cues.data_lines("first-names-de.txt") for w in x.split())


@cache
def places() -> frozenset[str]:
    """Places as German writes them (memoryd/data/places-de.txt: München, Österreich, Wien),
    lower-cased: a sign of a name on a German line."""
    return frozenset(cues.data_lines("places-de.txt"))


# German's grammar words (articles, pronouns, prepositions, conjunctions, auxiliaries) that
# English prose does not use. A line with several of them, more than English ones, is German,
# where every noun is capitalised ("Der Server startet nach dem Update nicht"): there a lone
# capitalised word is no sign of a name.
GERMAN_GRAMMAR = words(
    "der die das den dem des und ist nicht mit für auf wir ich sie ein eine einen einem einer "
    "zu von im bei nach über wird werden haben sind auch noch nur schon sich dass oder aber "
    "wenn weil kann muss müssen wurde kein keine diese dieser dieses uns unsere unser ihre zum "
    "zur vom beim durch gegen ohne hat hatte sollte damit jetzt"
)
ENGLISH_GRAMMAR = words(
    "the of and to is in it that for on with as was are be this we you not but or at by from "
    "have has an they he she will would can there which their been were our its"
)


_GERMAN_GATE = (" der ", " die ", " das ", " und ", " ist ", " nicht ", " ich ", " wir ", " mit ")
_LOWER_WORD = re.compile(r"[a-zäöüß]+").findall


def _grammar(line: str) -> tuple[int, int, int]:
    """The line's German grammar words (distinct, all) and English ones."""
    found = _LOWER_WORD(line.lower())
    de = [w for w in found if w in GERMAN_GRAMMAR]
    return len(set(de)), len(de), sum(w in ENGLISH_GRAMMAR for w in found)


def english(line: str) -> bool:
    """The line reads as English: two English grammar words or more, more than German ones."""
    _, de, en = _grammar(line)
    return en >= 2 and en > de


def german(line: str) -> bool:
    """The line is German prose: at least two distinct German grammar words, more than the
    English ones (a German name or a quoted phrase in an English line is not enough)."""
    if not any(g in line for g in _GERMAN_GATE):  # German prose has them in lower case
        return False
    distinct, de, en = _grammar(line)
    return distinct >= 2 and de > en


def german_lines(lines: Sequence[tuple[int, str]], text: str) -> Callable[[int], bool]:
    """Which lines are German (german()): in a text of two German lines or more that are at
    least half its prose lines (six words or more), also its headings, table rows and short
    lines, which have too few grammar words to tell ("## Datenbank Migration"), but not a line
    that reads as English. `text`: the lines joined (one look for German words in all)."""
    if not any(g in text for g in _GERMAN_GATE):
        return _none
    said = [german(line) for _, line in lines]
    count = sum(said)
    if count < 2 or 2 * count < sum(line.count(" ") >= 5 for _, line in lines):
        return said.__getitem__
    return lambda i: said[i] or not english(lines[i][1])


def listed(key: str) -> bool:
    """A lower-cased word on a shipped list of first names (English or German), systems or
    places (English or German): on a German line, a sign of a name."""
    return (
        key in cues.first_names()[0]
        or key in first_names()
        or key in cues.systems()[0]
        or key in cues.places()
        or key in places()
    )


def noun(w: str, known: set[str]) -> bool:
    """A capitalised word of a German line that may be any noun: written as a word is (not
    PostgreSQL, not ERP), on no shipped list (`listed`), nor named elsewhere in the text (a
    link, front matter, a full name written mid-sentence before it)."""
    if not (w.isalpha() and w[1:].islower()):
        return False
    k = w.lower()
    return not (listed(k) or k in known or (not w.isascii() and canonical_key(w) in known))


def first_name(w: str) -> bool:
    return w.lower() in cues.first_names()[0] or w.lower() in first_names()


def full_name(words: list[str]) -> bool:
    """Words a German line capitalises that tell a name's words mid-sentence elsewhere: a first
    name and more ("Thomas Müller" makes a later "Müller" a name); nouns tell nothing."""
    return len(words) > 1 and first_name(words[0])


def trim(words: list[str], known: set[str]) -> list[str]:
    """The words of a name found on a German line without the nouns beside it: "Kunde Siemens"
    is Siemens, "Kunde Thomas Müller" Thomas Müller, "Grafana Alert" Grafana ("Thomas Müller"
    and "Deutsche Bahn" stay whole); a lone noun is no name ("Der Server", "die Datenbank")."""
    if len(words) > 1 and any(listed(w.lower()) for w in words):
        words = list(words)
        while len(words) > 1 and noun(words[0], known):
            words.pop(0)
        if not first_name(words[0]):
            while len(words) > 1 and noun(words[-1], known):
                words.pop()
    return [] if len(words) == 1 and noun(words[0], known) else words


def _none(i: int) -> bool:
    return False
