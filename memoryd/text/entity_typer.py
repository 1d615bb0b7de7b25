"""A learned span typer for entity extraction (memoryd/text/entity_names.py proposes the spans):
an averaged perceptron over cheap features of a capitalised name and its neighbours decides
person, system, place, other or not a name. Pure Python, no model download: the weights ship in
memoryd/data/entity-typer.tsv.gz (trained by `python -m bench.train_typer` on the train splits
of public sets; memoryd/data/README.md gives their sources and licences).

The rule votes (entity_names._run_votes) are features too, so the typer learns when to trust
them; it only re-types what the rules proposed and drops what it reads as no name.
"""

from __future__ import annotations

import gzip
import importlib.resources
from collections.abc import Mapping, Sequence
from functools import cache
from math import inf
from typing import Protocol

from memoryd.text import entity_cues as cues
from memoryd.text.entity_cues import OTHER, PERSON, PLACE, SYSTEM
from memoryd.text.entity_spans import POSSESSIVE

NONE = "none"
CLASSES = (PERSON, SYSTEM, PLACE, OTHER, NONE)
WEIGHTS = "entity-typer.tsv.gz"


class Decider(Protocol):
    def decide(self, feats: list[str], key: str, line: int) -> tuple[str, float] | None:
        """(class, vote to add), (`none`, 0) to drop the name, or None to keep the rule votes."""


def _key(w: str) -> str:
    return POSSESSIVE.sub("", w).lower() if "'" in w or "’" in w else w.lower()


_SHAPE = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    "X" * 26 + "x" * 26 + "d" * 10,
)


def _shape(w: str) -> str:
    """'GitHub' -> 'XxXx', 'SEV2' -> 'Xd', 'Jean-Luc' -> 'Xx-Xx' (runs collapsed)."""
    s = w.translate(_SHAPE)
    out = [s[0]] if s else []
    for c in s[1:]:
        if c != out[-1]:
            out.append(c)
    return "".join(out[:6])


_NAME_FEATURES: dict[tuple[str, ...], list[str]] = {}  # _name_features' answers


def clear_caches() -> None:
    _NAME_FEATURES.clear()
    _NAME_ROWS.clear()
    _VOTE_FEATURES.clear()


def _name_features(words: tuple[str, ...]) -> list[str]:
    """The features of the name itself (the same wherever it stands), remembered: a name comes
    back line after line."""
    f = _NAME_FEATURES.get(words)
    if f is not None:
        return f
    keys = [_key(w) for w in words]
    first, last = keys[0], keys[-1]
    text = " ".join(keys)
    names, worded = cues.first_names()
    n = len(words)
    f = [
        "b",
        f"n{n}",
        f"f:{first}",
        f"l:{last}",
        f"s3:{last[-3:]}",
        f"sh:{_shape(words[0])}",
        f"ls:{_shape(words[-1])}" if n > 1 else "ls:-",
    ]
    if n > 2:
        f.extend(f"w:{k}" for k in keys[1:-1])
    if words[-1].endswith(("'s", "’s")):
        f.append("poss")
    if first in names:
        f.append("fn")
    elif first in worded:
        f.append("fnw")
    if n > 1 and last in names:
        f.append("lfn")
    if text in cues.systems()[0]:
        f.append("sys")
    if text in cues.places():
        f.append("pl")
    common = cues.common_words()
    if first in common:
        f.append("cw")
    if n > 1 and last in common:
        f.append("lcw")
    if len(_NAME_FEATURES) >= 16384:
        _NAME_FEATURES.clear()
    _NAME_FEATURES[words] = f
    return f


def features(
    words: Sequence[str],
    before: Sequence[str],
    after: str,
    after_gap: str,
    window: Sequence[str],
    initial: bool,
    all_initial: bool,
    honorific: bool,
    votes: Mapping[str, float],
) -> list[str]:
    """The features of one proposed name: its words, shape and list memberships, the words
    around it and the rule votes."""
    f = _name_features(tuple(words))
    return [
        *f,
        *context_features(
            f, before, after, after_gap, window, initial, all_initial, honorific, votes
        ),
    ]


def context_features(
    name: list[str],
    before: Sequence[str],
    after: str,
    after_gap: str,
    window: Sequence[str],
    initial: bool,
    all_initial: bool,
    honorific: bool,
    votes: Mapping[str, float],
) -> list[str]:
    """The features of where a name stands (`name`: its own, from _name_features): the words
    around it, the sentence or heading start, the rule votes. features() is the two lists."""
    first = name[2][2:]
    prev = before[-1] if before else "<s>"
    gap = after_gap.strip()[:2] or ("_" if after_gap else "$")
    f = [
        f"p:{prev}",
        f"a:{after}" if after else "a:$",
        f"g:{gap}",
        f"pw:{prev}|{first}",
    ]
    if len(before) > 1:
        f.append(f"pp:{before[0]} {prev}")
    if len(window) > 1:
        f.append(f"a2:{window[0]} {window[1]}")
    if initial:
        f.append("ini")
        f.append(f"ini:{first}")
    if all_initial:
        f.append("head")
    if honorific:
        f.append("hon")
    f.extend(_vote_features(votes))
    return f


_VOTE_FEATURES: dict[tuple[tuple[str, float], ...], tuple[str, ...]] = {}  # their answers


def _vote_features(votes: Mapping[str, float]) -> tuple[str, ...]:
    """The rule votes as features, remembered per votes (in their order: a few hundred kinds)."""
    key = tuple(votes.items())
    f = _VOTE_FEATURES.get(key)
    if f is None:
        if votes:
            best = max(votes, key=votes.__getitem__)
            f = (
                f"vt:{best}",
                *(f"v:{t}{min(int(w * 2), 6)}" for t, w in votes.items() if w > 0),
            )
        else:
            f = ("v0",)
        if len(_VOTE_FEATURES) >= 4096:
            _VOTE_FEATURES.clear()
        _VOTE_FEATURES[key] = f
    return f


class Typer:
    """Weights per feature, one per class of CLASSES."""

    def __init__(
        self,
        weights: dict[str, tuple[float, ...]],
        drop: float = 3.0,
        scale: float = 0.5,
        cap: float = 3.0,
        floor: float = 2.0,
    ) -> None:
        self.weights = weights
        self.drop, self.scale, self.cap, self.floor = drop, scale, cap, floor

    def rows(self, feats: Sequence[str]) -> list[tuple[float, ...]]:
        """The weights of the features that have some, in the features' order."""
        return [w for w in map(self.weights.get, feats) if w is not None]

    def scores(self, feats: list[str]) -> list[float]:
        return _sums(self.rows(feats))

    def decide(self, feats: list[str], key: str = "", line: int = 0) -> tuple[str, float]:
        """(`none`, 0) when `none` leads the best type by more than `drop`; else the best
        type and its vote: its lead over the runner-up (`none` included) times `scale`, at most
        `cap`, so a close call leaves the rules to decide."""
        return self._decision(self.scores(feats))

    def decide_name(
        self, words: tuple[str, ...], name: list[str], context: list[str]
    ) -> tuple[str, float]:
        """decide(name + context) (name = _name_features(words)), with the weights of the
        name's own features looked up once per name and remembered: the same rows in the same
        order, so the same sums and the same answer (exact for any weights: the rows are
        this typer's)."""
        if _NAME_ROWS_OF[0] is not self:
            _NAME_ROWS.clear()
            _NAME_ROWS_OF[0] = self
        rows = _NAME_ROWS.get(words)
        if rows is None:
            if len(_NAME_ROWS) >= 16384:
                _NAME_ROWS.clear()
            rows = _NAME_ROWS[words] = self.rows(name)
        return self._decision(_sums(rows + self.rows(context)))

    def _decision(self, s: list[float]) -> tuple[str, float]:
        best, top = 0, s[0]  # the first of the best four types, as max() would pick
        for i in (1, 2, 3):
            if s[i] > top:
                best, top = i, s[i]
        if s[4] - top > self.drop:
            return NONE, 0.0
        s[best] = -inf
        lead = top - max(s)
        if lead < self.floor:
            return CLASSES[best], 0.0
        return CLASSES[best], min(self.cap, lead * self.scale)


def _sums(rows: list[tuple[float, ...]]) -> list[float]:
    """Each class's weights summed, in the rows' order (summed in C)."""
    return list(map(sum, zip(*rows, strict=True))) if rows else [0.0] * len(CLASSES)


# decide_name's memory: a name's weight rows, for the typer _NAME_ROWS_OF holds (another typer
# starts it afresh; holding it keeps its identity unambiguous)
_NAME_ROWS: dict[tuple[str, ...], list[tuple[float, ...]]] = {}
_NAME_ROWS_OF: list[Typer | None] = [None]


def ask(
    d: Decider,
    words: Sequence[str],
    before: Sequence[str],
    after: str,
    after_gap: str,
    window: Sequence[str],
    initial: bool,
    all_initial: bool,
    honorific: bool,
    votes: Mapping[str, float],
    key: str,
    line: int,
) -> tuple[str, float] | None:
    """d.decide(features(words, ...), key, line); for a Typer, without the name's own features
    looked up again each time it comes back (Typer.decide_name)."""
    t = tuple(words)
    name = _name_features(t)
    context = context_features(
        name, before, after, after_gap, window, initial, all_initial, honorific, votes
    )
    if isinstance(d, Typer):
        return d.decide_name(t, name, context)
    return d.decide([*name, *context], key, line)


def dumps(weights: Mapping[str, Sequence[float]]) -> bytes:
    """The weights as a gzip'd table: `feature<TAB>w1 w2 w3 w4 w5` a line, sorted."""
    rows = (f"{k}\t{' '.join(f'{x:.3g}' for x in w)}" for k, w in sorted(weights.items()))
    return gzip.compress(("\n".join(rows) + "\n").encode("utf-8"), mtime=0)


def loads(data: bytes) -> Typer:
    """The table dumps wrote. Equal numbers (three significant digits: a few thousand distinct
    values) share one float object and equal rows one tuple: 2.5 MB in memory instead of 5.4."""
    weights: dict[str, tuple[float, ...]] = {}
    numbers: dict[str, float] = {}
    rows: dict[str, tuple[float, ...]] = {}
    for row in gzip.decompress(data).decode("utf-8").splitlines():
        k, _, ws = row.rpartition("\t")
        if k:
            w = rows.get(ws)
            if w is None:
                w = rows[ws] = tuple(
                    numbers.get(x) or numbers.setdefault(x, float(x)) for x in ws.split(" ")
                )
            weights[k] = w
    return Typer(weights)


_override: list[Decider | None] = []  # set_decider's: the benchmark and the trainer swap it


@cache
def _shipped() -> Typer | None:
    data = importlib.resources.files("memoryd").joinpath("data", WEIGHTS)
    try:
        return loads(data.read_bytes())
    except FileNotFoundError:
        return None


def preload() -> None:
    """Read the shipped word lists and weights (memoryd/data) now, at the daemon's start: a
    `pip install -U` under a running daemon must not hand it the new version's files at its
    first add (docs/service.md#upgrading)."""
    cues.common_words()
    cues.first_names()
    cues.systems()
    cues.places()
    _shipped()


def decider() -> Decider | None:
    """The typer in use: the shipped one, or what set_decider put in its place."""
    return _override[-1] if _override else _shipped()


def set_decider(d: Decider | None) -> None:
    """Use `d` (None: the rules alone) until reset_decider()."""
    _override.append(d)


def reset_decider() -> None:
    _override.clear()
