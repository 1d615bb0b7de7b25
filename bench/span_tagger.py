"""A learned span detector for entity extraction, measured and not shipped (issue 20.1,
BENCHMARKS.md "Issue 20.1: span detection"): an averaged perceptron that tags each word of a
line B-/I-/O (person, system, place, other), read left to right, each tag seeing the one before
and the rules' own names (as B-/I- tags) as features. Trained by `python -m bench.train_spans`
on the train splits of public sets; `python -m bench entities --tagger PATH` puts it in place of
the rules' capitalised names (explicit entities, code identifiers, hosts and emails stay
rule-based) by wrapping memoryd.text.entities._names (install()).
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from memoryd.text import entity_cues as cues
from memoryd.text.entity_cues import OTHER, PERSON, PLACE, SYSTEM
from memoryd.text.entity_typer import _shape

TYPES = (PERSON, SYSTEM, PLACE, OTHER)
TAGS = ("O", *(f"{p}-{t}" for t in TYPES for p in ("B", "I")))
TOKEN = re.compile(r"[^\W_]+(?:['’.\-&][^\W_]+)*|\S")
_ENDS = frozenset('.!?:;"“”([{|*•…—–#>-')

Span = tuple[int, int, str, float]  # start, end (characters of the line), type, margin


def tokens(line: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group()) for m in TOKEN.finditer(line)]


def _word_features(w: str) -> list[str]:
    """The features of a word wherever it stands."""
    low = w.lower()
    f = [f"w:{low}", f"sh:{_shape(w)}", f"p3:{low[:3]}", f"s3:{low[-3:]}"]
    if low in cues.first_names()[0]:
        f.append("fn")
    if low in cues.systems()[0]:
        f.append("sys")
    if low in cues.places():
        f.append("pl")
    if low in cues.common_words():
        f.append("cw")
    return f


def _context(words: Sequence[str], i: int) -> list[str]:
    """The features of word i from its neighbours (everything but the tag before)."""
    n = len(words)
    w = words[i]
    prev = words[i - 1].lower() if i else "<s>"
    nxt = words[i + 1].lower() if i + 1 < n else "</s>"
    f = _word_features(w)
    f.append("b")
    f.append(f"pw:{prev}")
    f.append(f"nw:{nxt}")
    f.append(f"psh:{_shape(words[i - 1]) if i else '<s>'}")
    f.append(f"nsh:{_shape(words[i + 1]) if i + 1 < n else '</s>'}")
    f.append(f"pw|w:{prev}|{w.lower()}")
    f.append(f"w|nw:{w.lower()}|{nxt}")
    f.append(f"pp:{words[i - 2].lower() if i > 1 else '<s>'}")
    f.append(f"nn:{words[i + 2].lower() if i + 2 < n else '</s>'}")
    if i == 0 or words[i - 1] in _ENDS:
        f.append("ini")
        f.append(f"ini|sh:{_shape(w)}")
    if i + 1 < n and words[i + 1][:1].isupper():
        f.append("ncap")
    if i and words[i - 1][:1].isupper():
        f.append("pcap")
    return f


def tag_scores(
    get: Callable[[str], Sequence[float] | None], feats: Iterable[str], prev: str, k: int
) -> list[float]:
    """Each tag's score for `feats` after the tag `prev`; an I- tag only continues a span of
    its type."""
    s = [0.0] * k
    for f in feats:
        wf = get(f)
        if wf is not None:
            for c in range(k):
                s[c] += wf[c]
    for c in range(2, k, 2):
        if prev == "O" or prev[2:] != TAGS[c][2:]:
            s[c] = -1e9
    return s


def _rule_features(rule: str, prev: str) -> tuple[str, ...]:
    return (f"r:{rule}", f"r|pt:{rule}|{prev}")


class Tagger:
    """Weights per feature, one per tag of TAGS."""

    def __init__(self, weights: Mapping[str, Sequence[float]]) -> None:
        self.weights = weights
        self.uses_rules = any(k.startswith("r:") for k in weights)

    def tag(
        self, words: Sequence[str], rules: Sequence[str] | None = None
    ) -> tuple[list[int], list[float]]:
        """The tag of each word (its index in TAGS) and its margin over the runner-up; `rules`
        the rules' tag of each word (their names as B-/I- tags), a feature."""
        k = len(TAGS)
        get = self.weights.get
        out: list[int] = []
        margins: list[float] = []
        prev = "O"
        for i in range(len(words)):
            extra = _rule_features(rules[i], prev) if rules is not None else ()
            feats = (*_context(words, i), f"pt:{prev}", f"pt|w:{prev}|{words[i].lower()}", *extra)
            s = tag_scores(get, feats, prev, k)
            best = max(range(k), key=s.__getitem__)
            top = s[best]
            s[best] = -1e18
            out.append(best)
            margins.append(top - max(s))
            prev = TAGS[best]
        return out, margins

    def spans(
        self, line: str, names: Sequence[tuple[int, int, str]] = (), n: int = 0
    ) -> list[Span]:
        """The names of `line` (line number `n`); `names` the rules' (start, end, type) on it."""
        toks = tokens(line)
        if not toks:
            return []
        rules = rule_tags(toks, names) if self.uses_rules else None
        tags, margins = self.tag([t[2] for t in toks], rules)
        out: list[Span] = []
        i, n = 0, len(toks)
        while i < n:
            t = TAGS[tags[i]]
            if t == "O":
                i += 1
                continue
            kind = t[2:]
            j = i + 1
            while j < n and TAGS[tags[j]] == f"I-{kind}":
                j += 1
            out.append((toks[i][0], toks[j - 1][1], kind, min(margins[i:j])))
            i = j
        return out


def rule_tags(
    toks: Sequence[tuple[int, int, str]], names: Sequence[tuple[int, int, str]]
) -> list[str]:
    """B-/I-/O of each token from the rules' names (start, end, type) on its line."""
    out = ["O"] * len(toks)
    for a, b, kind in names:
        inside = [i for i, (ts, te, _) in enumerate(toks) if ts >= a and te <= b]
        if inside and out[inside[0]] == "O":
            out[inside[0]] = f"B-{kind}"
            for i in inside[1:]:
                out[i] = f"I-{kind}"
    return out


def dumps(weights: Mapping[str, Sequence[float]]) -> bytes:
    rows = (f"{k}\t{' '.join(f'{x:.3g}' for x in w)}" for k, w in sorted(weights.items()))
    return gzip.compress(("\n".join(rows) + "\n").encode("utf-8"), mtime=0)


def loads(data: bytes) -> Tagger:
    weights: dict[str, tuple[float, ...]] = {}
    numbers: dict[str, float] = {}
    for row in gzip.decompress(data).decode("utf-8").splitlines():
        k, _, ws = row.rpartition("\t")
        if k:
            weights[k] = tuple(
                numbers.get(x) or numbers.setdefault(x, float(x)) for x in ws.split(" ")
            )
    return Tagger(weights)


VOTE = 2.0  # the tagger's vote for its type, added to the rule votes of the same name
ADD: frozenset[str] = frozenset()  # types it only adds (where no rule name is) instead of replacing
FLOOR = 0.0  # the least margin of an added span's words
_original: list[Any] = []


def install(tagger: Tagger | None) -> None:
    """Put `tagger` in place of the rules' capitalised names (None: the rules again). The
    learned typer is off meanwhile: the tagger types its names."""
    from memoryd.text import entities, entity_typer

    if not _original:
        _original.append(entities._names)
    names = _original[0]
    entity_typer.reset_decider()
    if tagger is None:
        entities._names = names
        return
    if not ADD:
        entity_typer.set_decider(None)

    def wrapped(lines: Any, out: list[Any], known: set[str], code_words: set[str]) -> Any:
        start = len(out)
        pairs = names(lines, out, known, code_words)
        respan(lines, out, start, tagger)
        return pairs

    entities._names = wrapped


def respan(lines: Sequence[tuple[int, str]], out: list[Any], start: int, tagger: Tagger) -> None:
    """Replace the capitalised names the rules added to `out` from `start` on by the tagger's
    spans of `lines` (line number, text with the explicit entities blanked), each voting for
    its type; a rule name the tagger keeps as it is keeps its rule votes."""
    from memoryd.text.entity_spans import add

    rules: dict[int, list[Any]] = {}
    keep: list[Any] = []
    for r in out[start:]:
        if r.source == "name" and r.surface:
            rules.setdefault(r.line, []).append(r)
        if ADD or not (r.source == "name" and r.surface):
            keep.append(r)
    del out[start:]
    out.extend(keep)
    for n, line in lines:
        if line.islower() or line.isspace():
            continue
        found = rules.get(n, ())
        names: list[tuple[int, int, str]] = []
        by_span: dict[tuple[int, int], Any] = {}
        pos = 0
        for r in found:
            a = line.find(r.surface, pos)
            if a < 0:
                a = line.find(r.surface)
            if a < 0:
                continue
            b = a + len(r.surface)
            kind = max(r.votes, key=r.votes.__getitem__) if r.votes else OTHER
            names.append((a, b, kind if kind in TYPES else OTHER))
            by_span[(a, b)] = r
            pos = b
        for a, b, kind, margin in tagger.spans(line, names, n):
            if ADD:
                if kind in ADD and margin >= FLOOR and all(b <= x or a >= y for x, y, _ in names):
                    add(out, line[a:b], n, "name", kind, VOTE)
                continue
            raw = add(out, line[a:b], n, "name", kind, VOTE)
            old = by_span.get((a, b))
            if raw is not None and old is not None:
                for t, w in old.votes.items():
                    raw.votes[t] = raw.votes.get(t, 0.0) + w
