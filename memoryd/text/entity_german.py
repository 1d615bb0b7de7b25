"""German text for entity extraction: German capitalises every noun, so on a German line a lone
capitalised word is no sign of a name (text/entity_names.py reads these). Which lines are German
(their grammar words), and the German first names that are a sign of one."""

from __future__ import annotations

import importlib.resources
import re
from collections.abc import Callable, Sequence
from functools import cache

from memoryd.text.entity_cues import words


@cache
def first_names() -> frozenset[str]:
    """First names common in German-speaking countries (memoryd/data/first-names-de.txt),
    lower-cased: a sign of a name on a German line, where every noun is capitalised."""
    data = importlib.resources.files("memoryd").joinpath("data", "first-names-de.txt")
    lines = data.read_text(encoding="utf-8").splitlines()
    return frozenset(w for x in lines if not x.startswith("#") for w in x.split())


# German's grammar words (articles, pronouns, prepositions, conjunctions, auxiliaries) that
# English prose does not use. A line with several of them, more than English ones, is German,
# where every noun is capitalised ("Der Server startet nach dem Update nicht"): there a lone
# capitalised word is no sign of a name.
GERMAN_GRAMMAR = words(
    "der die das den dem des und ist nicht mit für auf wir ich sie ein eine einen einem einer "
    "zu von im bei nach über wird werden haben sind auch noch nur schon sich dass oder aber "
    "wenn weil kann muss müssen wurde kein keine diese dieser dieses uns unsere unser ihre zum "
    "zur vom beim durch gegen ohne hatte sollte damit jetzt"
)
ENGLISH_GRAMMAR = words(
    "the of and to is in it that for on with as was are be this we you not but or at by from "
    "have has an they he she will would can there which their been were our its"
)


def english(line: str) -> bool:
    """The line reads as English: two English grammar words or more, more than German ones."""
    found = _LOWER_WORD(line.lower())
    en = sum(w in ENGLISH_GRAMMAR for w in found)
    return en >= 2 and en > sum(w in GERMAN_GRAMMAR for w in found)


_GERMAN_GATE = (" der ", " die ", " das ", " und ", " ist ", " nicht ", " ich ", " wir ", " mit ")
_LOWER_WORD = re.compile(r"[a-zäöüß]+").findall


def german(line: str) -> bool:
    """The line is German prose: at least two distinct German grammar words, more than the
    English ones (a German name or a quoted phrase in an English line is not enough)."""
    if not any(g in line for g in _GERMAN_GATE):  # German prose has them in lower case
        return False
    found = _LOWER_WORD(line.lower())
    de = {w for w in found if w in GERMAN_GRAMMAR}
    return len(de) >= 2 and sum(w in GERMAN_GRAMMAR for w in found) > sum(
        w in ENGLISH_GRAMMAR for w in found
    )


def german_lines(lines: Sequence[tuple[int, str]], text: str) -> Callable[[int], bool]:
    """Which lines are German (german()): in a text of two German lines or more that are at
    least half its prose lines (six words or more), also its headings, table rows and short
    lines, which have too few grammar words to tell ("## Datenbank Migration"), but not a line
    that reads as English. `text`: the lines joined (one look for German words in all)."""
    if not any(g in text for g in _GERMAN_GATE):
        return _NONE
    said = [german(line) for _, line in lines]
    count = sum(said)
    if count < 2 or 2 * count < sum(line.count(" ") >= 5 for _, line in lines):
        return said.__getitem__
    return lambda i: said[i] or not english(lines[i][1])


def _none(i: int) -> bool:
    return False


_NONE = _none
