"""spaCy's named-entity recogniser beside memoryd's rule extractor, measured for issue 20.1 and
not shipped (BENCHMARKS.md, "Issue 20.1: spaCy's small English pipeline beside the rules").

spaCy is no dependency of memoryd: `load(model)` imports it. `ents_of_lines(nlp, docs)` runs
the model over the lines of many texts and gives each text its names as (line, surface, memoryd
type); `combine(mentions, ents, mode)` merges them with the rules' mentions of the same text
afterwards; `Voter` votes inside the extraction instead (`voting(voter)` puts it there: after
the rules' names of a text, before their types are resolved). spaCy's labels map onto
memoryd's types as the benchmark maps the public sets' labels: PERSON -> person; ORG,
PRODUCT -> system; GPE, LOC, FAC -> place; NORP, EVENT, WORK_OF_ART, LAW, LANGUAGE -> other;
numbers and dates are no names.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from memoryd.text.entity_cues import OTHER, PERSON, PLACE, SYSTEM
from memoryd.text.entity_spans import canonical_key, display_name

LABELS: dict[str, str] = {
    "PERSON": PERSON,
    "ORG": SYSTEM,
    "PRODUCT": SYSTEM,
    "GPE": PLACE,
    "LOC": PLACE,
    "FAC": PLACE,
    "NORP": OTHER,
    "EVENT": OTHER,
    "WORK_OF_ART": OTHER,
    "LAW": OTHER,
    "LANGUAGE": OTHER,
}
# the rules' mentions spaCy may re-type: names read from the text, not fields, tags or code
_RETYPED = frozenset(("name", "quoted", "wikilink", "alias", "mention"))
_NAMED = frozenset((PERSON, SYSTEM, PLACE, OTHER))

Ent = tuple[int, str, str]  # line, surface, memoryd type


def load(model: str = "en_core_web_sm") -> Any:
    """The model's recogniser alone. en_core_web_sm's NER has a tok2vec of its own, so the
    shared tok2vec, the tagger, parser and lemmatizer are not loaded: the names it finds on
    1,592 lines of the public sets are the same without the shared tok2vec, at 0.78x the CPU
    (without the parser one line of them differs: its sentence bounds end a name)."""
    try:
        import spacy
    except ImportError as e:  # no dependency of memoryd's: installed beside it to measure it
        raise SystemExit(
            "spaCy is not installed: `pip install --target DIR spacy` and the model, then"
            " PYTHONPATH=DIR (BENCHMARKS.md, issue 20.1, branch ner8)"
        ) from e

    rest = ["tok2vec", "tagger", "parser", "senter", "lemmatizer", "attribute_ruler"]
    nlp = spacy.load(model, exclude=rest)
    for name in [n for n in nlp.pipe_names if n != "ner"]:
        nlp.remove_pipe(name)
    return nlp


def ents_of_lines(
    nlp: Any, docs: Sequence[Sequence[tuple[int, str]]], batch_size: int = 256
) -> list[list[Ent]]:
    """Each text's (line, surface, type), its lines given as (line number, text)."""
    flat = [(d, n, t) for d, lines in enumerate(docs) for n, t in lines if t.strip()]
    out: list[list[Ent]] = [[] for _ in docs]
    texts = (t for _d, _n, t in flat)
    for (d, n, _t), doc in zip(flat, nlp.pipe(texts, batch_size=batch_size), strict=True):
        for e in doc.ents:
            kind = LABELS.get(e.label_)
            if kind is not None:
                out[d].append((n, span_text(e.text), kind))
    return out


def span_text(text: str) -> str:
    """A name's words without a leading lower-case "the" (OntoNotes labels "the Beatles", the
    public sets and memoryd "Beatles")."""
    return text[4:] if text.startswith("the ") else text


MODES = (
    "agree",
    "veto",
    "veto+promote",
    "veto-maj",
    "veto-maj+promote",
    "promote",
    "typed",
    "typed+add",
    "agree+add",
    "spans",
)


def _words(key: str) -> str:
    return f" {key} "


def _match(line_ents: list[tuple[str, str]], skey: str) -> list[str]:
    """The types of the spaCy names on a line that are the mention's surface, or hold it or
    are held by it as whole words."""
    exact = [t for k, t in line_ents if k == skey]
    if exact:
        return exact
    w = _words(skey)
    return [t for k, t in line_ents if w in _words(k) or _words(k) in w]


def combine(mentions: Sequence[Any], ents: Sequence[Ent], mode: str) -> list[Any]:
    """The rules' mentions with spaCy's names merged in, per `mode`:

    - `agree`: a person only where spaCy calls some mention of it a person (else other);
    - `typed`: spaCy's type (the most frequent over the entity's mentions it names) where it
      names the entity, the rules' elsewhere;
    - `typed+add`: and spaCy's names the rules did not find;
    - `agree+add`: `agree`, and spaCy's persons the rules did not find;
    - `veto`: a person spaCy names but never a person is other (`veto-maj`: a person less than
      half the times it names it); `+promote`: and an `other` spaCy mostly calls a person is
      one (`promote` alone: that only);
    - `spans`: the rules' capitalised names only where spaCy finds a name there, typed by the
      rules (spaCy's type where the rules say other), and spaCy's names the rules did not find.
    """
    by_line: dict[int, list[tuple[str, str]]] = {}
    for ln, surface, kind in ents:
        k = canonical_key(display_name(surface))
        if k:
            by_line.setdefault(ln, []).append((k, kind))
    said: dict[str, Counter[str]] = {}
    fixed: set[str] = set()
    matched: set[tuple[int, str]] = set()
    for m in mentions:
        if m.type not in _NAMED:
            continue
        if m.source not in _RETYPED:
            fixed.add(m.key)
            continue
        skey = canonical_key(display_name(m.surface)) if m.surface else m.key
        got = _match(by_line.get(m.line, []), skey)
        c = said.setdefault(m.key, Counter())
        c.update(got)
        if got:
            w = _words(skey)
            for k, _t in by_line.get(m.line, []):
                if k == skey or w in _words(k) or _words(k) in w:
                    matched.add((m.line, k))
    new_type: dict[str, str] = {}
    drop: set[str] = set()
    for key, c in said.items():
        if key in fixed:
            continue
        old = next(m.type for m in mentions if m.key == key)
        if mode.startswith("agree"):
            if old == PERSON and c[PERSON] == 0:
                new_type[key] = OTHER
        elif mode.startswith("veto"):
            # a person spaCy names but never a person (veto-maj: less than half the time)
            share = 0.5 if mode.startswith("veto-maj") else 1e-9
            if old == PERSON and c and c[PERSON] < share * c.total():
                new_type[key] = OTHER
            if "promote" in mode and old == OTHER and c and c.most_common(1)[0][0] == PERSON:
                new_type[key] = PERSON
        elif mode == "promote":
            if old == OTHER and c and c.most_common(1)[0][0] == PERSON:
                new_type[key] = PERSON
        elif mode.startswith("typed"):
            if c:
                new_type[key] = c.most_common(1)[0][0]
        elif mode == "spans":
            if not c:
                drop.add(key)
            elif old == OTHER:
                new_type[key] = c.most_common(1)[0][0]
    out = []
    for m in mentions:
        if m.key in drop and m.source == "name":
            continue
        t = new_type.get(m.key)
        out.append(replace(m, type=t) if t is not None and t != m.type else m)
    if mode.endswith("+add") or mode == "spans":
        known = {m.key for m in mentions}
        Mention = type(mentions[0]) if mentions else None
        for ln, surface, kind in ents:
            name = display_name(surface)
            k = canonical_key(name)
            if not k or (ln, k) in matched or k in known:
                continue
            if mode == "agree+add" and kind != PERSON:
                continue
            if Mention is None:
                from memoryd.text.entities import Mention as Mention_

                Mention = Mention_
            out.append(Mention(k, name, kind, ln, surface, "spacy"))
    out.sort(key=lambda m: m.line)
    return out


BATCH = 32  # lines per model call: larger batches hold far more memory (300 MB at 256)


@contextmanager
def voting(voter: Voter) -> Iterator[None]:
    """Extraction (memoryd.text.entities) with `voter` reading each text's lines after the
    rules' names: it wraps the extractor's name pass, no change to memoryd."""
    from memoryd.text import entities

    names = entities._names

    def with_votes(lines: Any, out: list[Any], known: set[str], code_words: set[str]) -> Any:
        pairs = names(lines, out, known, code_words)
        voter(lines, out)
        return pairs

    entities._names = with_votes
    try:
        yield
    finally:
        entities._names = names


class Voter:
    """spaCy reads the lines the rules read; a name
    it finds that is a rule name of the same line (the same words, or one holding the other)
    votes its type for that name's entity (`match`, weight per type); a name no rule found
    becomes a mention when its type is in `add` (with that vote)."""

    def __init__(
        self,
        nlp: Any,
        match: dict[str, float],
        add: dict[str, float] | None = None,
        unconfirmed: float = 0.0,
    ) -> None:
        self.nlp = nlp
        self.match = match
        self.add = add or {}
        self.unconfirmed = unconfirmed

    def __call__(self, lines: list[tuple[int, str]], out: list[Any], /) -> None:
        from memoryd.text.entity_spans import Raw, hint

        lines = [(n, t) for n, t in lines if t.strip() and not t.islower()]
        if not lines:
            return
        names: dict[int, list[tuple[str, str]]] = {}
        for r in out:
            if r.source in _RETYPED and r.surface:
                names.setdefault(r.line, []).append((canonical_key(r.name), r.key))
        confirmed: set[tuple[int, str]] = set()
        docs = self.nlp.pipe((t for _n, t in lines), batch_size=BATCH)
        for (n, _t), doc in zip(lines, docs, strict=True):
            for e in doc.ents:
                kind = LABELS.get(e.label_)
                if kind is None:
                    continue
                surface = span_text(e.text)
                name = display_name(surface)
                k = canonical_key(name)
                if not k:
                    continue
                w = _words(k)
                hit = [
                    key
                    for sk, key in names.get(n, ())
                    if sk == k or _words(sk) in w or w in _words(sk)
                ]
                if hit:
                    if kind == PERSON:
                        confirmed.update((n, key) for key in hit)
                    vote = self.match.get(kind, 0.0)
                    if vote:
                        for key in dict.fromkeys(hit):
                            hint(out, key, n, kind, vote)
                elif kind in self.add:
                    out.append(Raw(k, surface, name, n, "spacy", {kind: self.add[kind]}))
        if self.unconfirmed:
            for n, pairs in names.items():
                for _sk, key in pairs:
                    if (n, key) not in confirmed:
                        hint(out, key, n, PERSON, self.unconfirmed)
