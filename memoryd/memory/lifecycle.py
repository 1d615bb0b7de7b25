"""Memory lifecycle: tiers, trigger phrases, feedback, history, session start, pruning.

Functions over a store connection (the caller picks the transaction), plus the in-memory
TriggerIndex that answers match_triggers in microseconds with thousands of phrases.
"""

from __future__ import annotations

import json
import re
import threading
import time
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

from memoryd.core.errors import Conflict, InvalidInput, NotFound
from memoryd.core.timeutil import iso, parse_time
from memoryd.store import entries
from memoryd.store import lifecycle as lcstore
from memoryd.store.protocol import Connection
from memoryd.text import secretguard
from memoryd.text.markdown import estimate_tokens

TIERS = ("constitutional", "critical", "important", "normal", "temporary", "deprecated")
HISTORY_FIELDS = ("content", "tier", "importance", "tags", "type", "confidence", "triggers")
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def check_tier(value: object) -> str:
    if not isinstance(value, str) or value.strip().lower() not in TIERS:
        raise InvalidInput(f"tier: expected one of {', '.join(TIERS)}")
    return value.strip().lower()


def normalise_phrase(text: str) -> str:
    """Case, accents and punctuation folded: "Save-Context!" -> "save context"."""
    folded = unicodedata.normalize("NFKD", text.lower())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    return " ".join(_NON_WORD.sub(" ", folded).split())


def check_triggers(value: object) -> list[str]:
    if isinstance(value, str):
        value = [p for p in value.split(",")]
    if not isinstance(value, list | tuple) or not all(isinstance(p, str) for p in value):
        raise InvalidInput("triggers: expected a list of phrases or 'a,b'")
    phrases = []
    for p in value:
        phrase = " ".join(p.split())
        if not phrase:
            continue
        if len(phrase) > 200 or not normalise_phrase(phrase):
            raise InvalidInput("triggers: a phrase is empty of words or over 200 characters")
        if phrase not in phrases:
            phrases.append(phrase)
    if len(phrases) > 50:
        raise InvalidInput("triggers: at most 50 phrases per memory")
    return phrases


def set_triggers(con: Connection, entry_id: int, phrases: Sequence[str]) -> None:
    lcstore.set_triggers(con, entry_id, [(p, normalise_phrase(p)) for p in phrases])


class TriggerIndex:
    """Phrases by their first word; a prompt is scanned once, word by word."""

    def __init__(self, max_age: float | None = None) -> None:
        self._lock = threading.Lock()
        self._lock_gen = threading.Lock()
        self._by_first: dict[str, list[tuple[tuple[str, ...], int]]] = {}
        # invalidate() bumps the generation; the index is stale until built at the current one
        # (an invalidation during a build, e.g. from another daemon's change, is not lost)
        self._generation = 1
        self._built: tuple[int, float] = (0, 0.0)
        # max_age (shared database): rebuilt at least this often, in case a change from
        # another daemon was read just before its snapshot
        self.max_age = max_age

    def invalidate(self) -> None:
        with self._lock_gen:
            self._generation += 1

    def _stale(self) -> bool:
        generation, at = self._built
        if generation != self._generation:
            return True
        return self.max_age is not None and time.monotonic() - at > self.max_age

    def _build(self, con: Connection) -> None:
        generation = self._generation
        by_first: dict[str, list[tuple[tuple[str, ...], int]]] = {}
        for entry_id, norm in lcstore.trigger_norms(con):
            words = tuple(norm.split())
            if words:
                by_first.setdefault(words[0], []).append((words, int(entry_id)))
        self._by_first, self._built = by_first, (generation, time.monotonic())

    def match(self, con: Connection, prompt: str) -> dict[int, list[str]]:
        """entry id -> the phrases (normalised) that occur in the prompt."""
        if self._stale():
            with self._lock:
                if self._stale():
                    self._build(con)
        words = normalise_phrase(prompt).split()
        found: dict[int, list[str]] = {}
        for i, word in enumerate(words):
            for phrase, entry_id in self._by_first.get(word, ()):
                if tuple(words[i : i + len(phrase)]) == phrase:
                    hits = found.setdefault(entry_id, [])
                    text = " ".join(phrase)
                    if text not in hits:
                        hits.append(text)
        return found


def record_history(
    con: Connection, entry_id: int, before: dict[str, Any], after: dict[str, Any], now: float
) -> list[str]:
    """Keep old and new values of every tracked field that changed; returns the fields."""
    changed = []
    for name in HISTORY_FIELDS:
        if name in after and before.get(name) != after.get(name):
            lcstore.add_history(
                con,
                entry_id,
                now,
                name,
                json.dumps(redacted(before.get(name))),
                json.dumps(redacted(after.get(name))),
            )
            changed.append(name)
    return changed


def redacted(value: Any) -> Any:
    """History keeps no credential: redacting a memory must not leave the secret behind."""
    if isinstance(value, str):
        return secretguard.redact(value)
    if isinstance(value, list):
        return [secretguard.redact(v) if isinstance(v, str) else v for v in value]
    return value


def _decoded(value: str | None) -> Any:
    """A stored history value (JSON text); one that is not JSON (written by an older import)
    is shown as the text it is rather than failing the whole `history` call."""
    if value is None:
        return None
    try:
        return json.loads(value)
    except (json.JSONDecodeError, TypeError):
        return value


HISTORY_LIMIT = 100  # a page of a memory's history when the caller names no limit
HISTORY_MAX = 1000  # the most one page holds (each row holds a whole old and new value)


def history(
    con: Connection, entry_id: int, *, limit: int = HISTORY_LIMIT, cursor: object = None
) -> dict[str, Any]:
    """A page of a memory's recorded changes, oldest first: {history, total, has_more,
    next_cursor}; the cursor (the last row's time and id, pagecursor) starts the next page
    after it, so changes recorded between two pages are neither repeated nor skipped."""
    from memoryd.core import pagecursor
    from memoryd.core.timeutil import iso

    after = pagecursor.read_entry_cursor(cursor)
    kind = lcstore.kind_of(con, entry_id)
    if kind is None:
        raise NotFound(f"no entry with id {entry_id}")
    if kind != "memory":
        raise InvalidInput(
            f"entry {entry_id} is a chunk of a workspace file; history is kept for memories"
        )
    rows, total = lcstore.history_page(con, entry_id, after, limit + 1)
    shown = rows[:limit]
    more = len(rows) > limit
    return {
        "history": [
            {"at": iso(ts), "field": f, "old": _decoded(o), "new": _decoded(n)}
            for ts, _, f, o, n in shown
        ],
        "total": total,
        "has_more": more,
        "next_cursor": pagecursor.entry_cursor(*shown[-1][:2]) if more else None,
    }


def validate(
    con: Connection, entry_id: int, useful: bool, now: float, settings: Any
) -> dict[str, Any]:
    """Record one outcome; confidence follows the record: (useful + 1) / (validations + 2).
    `promotion_candidate` is is_promotion_candidate's verdict (settings: [lifecycle])."""
    found = lcstore.feedback(con, entry_id)
    if found is None:
        raise NotFound(f"no entry with id {entry_id}")
    kind, tier, good, total, old_conf = found
    if kind != "memory":
        raise InvalidInput(f"entry {entry_id} is a chunk of a workspace file; validate memories")
    good, total = int(good) + int(useful), int(total) + 1
    confidence = round((good + 1) / (total + 2), 4)
    lcstore.set_feedback(con, entry_id, good, total, confidence)
    record_history(con, entry_id, {"confidence": old_conf}, {"confidence": confidence}, now)
    return {
        "id": entry_id,
        "useful_count": good,
        "validation_count": total,
        "confidence": confidence,
        "promotion_candidate": is_promotion_candidate(tier, good, total, settings),
    }


CANDIDATES_LIMIT = 100  # a page of promotion candidates when the caller names no limit
CANDIDATES_MAX = 1000


def promotion_candidates(
    con: Connection, settings: Any, *, limit: int = CANDIDATES_LIMIT, cursor: object = None
) -> dict[str, Any]:
    """A page of the memories is_promotion_candidate accepts (the same rule as validate's
    flag), most useful first, ties by id: {candidates, total, has_more, next_cursor}; the
    cursor (the last one's useful count and id) starts the next page after it."""
    from memoryd.core import pagecursor

    after = pagecursor.read_count_cursor(cursor)
    found = [
        (useful, i)
        for i, tier, useful, total in lcstore.validated_memories(con)
        if is_promotion_candidate(tier, useful, total, settings)
    ]
    rest = found if after is None else [(u, i) for u, i in found if (-u, i) > (-after[0], after[1])]
    shown = rest[:limit]
    records = entries.get_many(con, [i for _, i in shown])
    more = len(rest) > limit
    return {
        "candidates": [records[i] for _, i in shown if i in records],
        "total": len(found),
        "has_more": more,
        "next_cursor": pagecursor.count_cursor(*shown[-1]) if more else None,
    }


def session_memories(
    con: Connection, namespace: str | None, max_tokens: int, now: float
) -> tuple[list[dict[str, Any]], int, int]:
    """Constitutional memories, most important first, within the token budget.
    Returns (memories, tokens used, how many exist)."""
    ids = lcstore.constitutional_ids(con, namespace, now)
    records = entries.get_many(con, ids)
    chosen, used = [], 0
    for i in ids:
        cost = estimate_tokens(records[i]["content"])
        if used + cost > max_tokens:
            continue  # a shorter one further down may still fit
        chosen.append(records[i])
        used += cost
    return chosen, used, len(ids)


select_ids = lcstore.select_ids
delete_ids = lcstore.delete_ids


def matching(
    con: Connection, index: TriggerIndex, prompt: str, namespace: str | None, now: float
) -> list[dict[str, Any]]:
    """Memories whose trigger phrases occur in the prompt (of one namespace, or all), not
    expired at `now` (as search, list and session_start leave them out until the expiry job
    deletes them)."""
    found = index.match(con, prompt)
    for gone in lcstore.expired_among(con, list(found), now):
        del found[gone]
    records = entries.get_many(con, list(found))
    return [
        {**records[i], "matched": found[i]}
        for i in found
        if i in records
        and (not namespace or namespace == "*" or records[i]["namespace"] == namespace)
    ]


# Tiers a memory is not promoted from: it is promoted already, or on its way out.
NOT_PROMOTED_FROM = frozenset({"constitutional", "critical", "deprecated"})


def is_promotion_candidate(tier: str, useful: int, total: int, settings: Any) -> bool:
    """The one promotion rule (validate's flag and the promotion_candidates list both ask it):
    not promoted already (critical, constitutional) nor deprecated, useful at least
    `promotion_min_useful` times and in at least `promotion_min_ratio` of its validations."""
    if tier in NOT_PROMOTED_FROM:
        return False
    return bool(
        useful >= settings.promotion_min_useful and useful >= settings.promotion_min_ratio * total
    )


def tier_decay(tier: str, last_used: float, now: float, lc: Any) -> float:
    """The one decay rule (the searcher ranks memories by it): how much of its relevance a
    memory keeps with age: halves every half-life of its tier, never below decay_floor;
    constitutional memories never decay."""
    if tier == "constitutional" or lc is None:
        return 1.0
    half_life = getattr(lc, f"half_life_days_{tier}", lc.half_life_days_normal)
    age_days = max(0.0, (now - last_used) / 86400)
    return max(lc.decay_floor, 0.5 ** (age_days / half_life))


def summary(text: str, width: int = 100) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


# Internal fields a reader of a budgeted answer has no use for: they only cost tokens.
_NOT_IN_DETAILS = ("content_hash", "sha256", "vector_model")


def compact(hit: dict[str, Any]) -> dict[str, Any]:
    """A hit as a "full detail" under a token budget: without empty values (null, [], "", {})
    and without hashes."""
    return {
        k: v
        for k, v in hit.items()
        if k not in _NOT_IN_DETAILS and v is not None and v != [] and v != "" and v != {}
    }


def budgeted(
    hits: list[dict[str, Any]], max_tokens: int, cost: Callable[[dict[str, Any]], int] | None = None
) -> dict[str, Any]:
    """An index of every hit (id + one-line summary) and full details for the top hits that fit.

    The index itself counts against the budget; full hits are added in rank order while they fit.
    """
    measure = cost or (lambda h: estimate_tokens(json.dumps(h, ensure_ascii=False)))
    index = [{"id": h["id"], "score": h["score"], "summary": summary(h["content"])} for h in hits]
    used = sum(estimate_tokens(i["summary"]) + 4 for i in index)
    details = []
    for hit in map(compact, hits):
        c = measure(hit)
        if used + c > max_tokens:
            break
        details.append(hit)
        used += c
    return {
        "index": index,
        "hits": details,
        "tokens_used": used,
        "total": len(hits),
        "has_more": len(details) < len(hits),
    }


def expected_at(value: object) -> str | None:
    """An `expected_updated_at` as records show an updated_at (to the second), or None."""
    return None if value is None else iso(parse_time(value, what="expected_updated_at"))


def held(
    con: Connection, entry_id: int, now: float, expected: str | None, what: str, lock: bool = True
) -> tuple[float, dict[str, Any] | None]:
    """(the time to stamp a change with, the record) of a memory about to change, its row held
    until the transaction ends (store.lifecycle.lock_entry); Conflict when `expected` is not
    its updated_at: someone changed it since the caller read it, and nothing is `what`.
    `lock` False: a look only (a dry run's, in a read-only transaction)."""
    stamp = lcstore.lock_entry(con, entry_id, now) if lock else now
    rec = entries.get(con, entry_id)
    if expected is not None and rec is not None and (at := rec["updated_at"]) != expected:
        raise Conflict(
            f"memory {entry_id} changed since you read it (updated_at is {at}, not {expected}); "
            f"nothing was {what}. Get it again, merge, and retry",
            data={"id": entry_id, "current_updated_at": at},
        )
    return stamp, rec


def note_sections(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A note's sections (heading, heading path, first and last line) from its chunks in order:
    the chunks of one section are one (get by path lists them)."""
    out: list[dict[str, Any]] = []
    for c in chunks:
        hp = c["heading_path"] or []
        heading = hp[-1] if hp else None
        if out and out[-1]["heading_path"] == hp:
            out[-1]["end_line"] = c["end_line"]
            continue
        out.append(
            {
                "heading": heading,
                "heading_path": hp,
                "start_line": c["start_line"],
                "end_line": c["end_line"],
            }
        )
    return out
