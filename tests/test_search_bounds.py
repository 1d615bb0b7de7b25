"""Issue 23.3: the searcher reads signal rows and scores only the candidates whose bounds can
still reach the first `limit` (search/bounds.py); the hits are those of scoring every one."""

from __future__ import annotations

import random
from typing import Any

import pytest
from conftest import q, settle

from memoryd.search import bounds
from memoryd.search.ranking import SIGNAL_SHARE, Candidate, order
from memoryd.store import searchsql


def _final(c: Candidate, rng: random.Random, memory: bool, nudges: float) -> float:
    rel = c.components["relevance"]
    extra = rng.choice([0.0, nudges, rng.uniform(0, nudges)])
    if memory:
        rel *= rng.choice([0.0, 1.0, rng.random()])  # decay
        extra += SIGNAL_SHARE * rng.uniform(-1, 1)  # tier
    return min(1.0, max(0.0, (1 - SIGNAL_SHARE) * rel + extra))


def test_the_first_limit_are_always_among_the_reachable() -> None:
    """Random relevances (many tied, some at the clamps), memories, a tail: ordering only the
    reachable candidates gives the same first `limit` as ordering them all."""
    rng = random.Random(7)
    nudges = SIGNAL_SHARE
    for trial in range(400):
        n = rng.randint(1, 60)
        cands = []
        for i in range(n):
            rel = rng.choice([rng.random(), round(rng.random(), 1), 1.0, 0.0, 1.2])
            c = Candidate(id=i + 1, components={"relevance": rel}, tail=rng.random() < 0.3)
            cands.append(c)
        memories = {c.id for c in cands if rng.random() < 0.1}
        limit = rng.randint(1, 15)
        for c in cands:
            c.final = _final(c, rng, c.id in memories, nudges)
            c.components["updated_at"] = float(rng.randint(0, 3))
        keep = bounds.reachable(cands, memories, limit, nudges)
        assert [c.id for c in keep] == [c.id for c in cands if c in keep]  # the given order
        finals = {c.id: c.final for c in cands}
        everything = [c.id for c in order(list(cands))[:limit]]
        for c in cands:  # order caps the tail's finals: start from the same ones
            c.final = finals[c.id]
        assert [c.id for c in order(list(keep))[:limit]] == everything, trial


def test_clamps_written_out_are_min_and_max() -> None:
    """bounds._cut and ranking.scorer write min(1, max(0, x)) out as the value it returns
    (issue 23.3): the same cut and the same scores as with the calls, at the clamps, signed
    zeros, infinities and NaN included."""
    import dataclasses
    import itertools
    import math

    from memoryd.core.sections import SearchConfig
    from memoryd.search.ranking import DEFAULT_SCALE, scorer

    def clamp(x: float) -> float:
        return min(1.0, max(0.0, x))

    def cut(part: list[Candidate], k: int, nudges: float) -> set[int]:  # bounds._cut as it was
        lows = [clamp((1 - SIGNAL_SHARE) * c.components.get("relevance", 0.0)) for c in part]
        highs = [
            clamp((1 - SIGNAL_SHARE) * c.components.get("relevance", 0.0) + nudges) for c in part
        ]
        if len(part) <= k:
            return {id(c) for c in part}
        bar = sorted(lows, reverse=True)[k - 1] - bounds.MARGIN
        return {id(c) for c, hi in zip(part, highs, strict=True) if hi >= bar}

    odd = [0.0, -0.0, 1.0, 1.0000001, -1e-300, 0.5, 2.0, -2.0, math.inf, -math.inf, math.nan]
    rng = random.Random(3)
    for trial in range(300):
        part = [
            Candidate(id=i, components={"relevance": rng.choice([*odd, rng.random()])})
            for i in range(rng.randint(1, 30))
        ]
        k, nudges = rng.randint(1, 12), rng.choice([0.0, 0.05, SIGNAL_SHARE])
        assert bounds._cut(part, set(), k, nudges) == cut(part, k, nudges), trial

    def same(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
        return all(
            (x == y and math.copysign(1, x) == math.copysign(1, y)) or (x != x and y != y)
            for x, y in zip(a, b, strict=True)
        )

    for fusion in ("weighted", "rrf"):
        s = dataclasses.replace(SearchConfig(), fusion=fusion)
        score = scorer(s, DEFAULT_SCALE, 0.5)
        floor, top = DEFAULT_SCALE[0], DEFAULT_SCALE[1]
        for sim, bm25, best in itertools.product(
            [None, *odd], [None, -3.0, -1.0, 0.5], [None, -2.0]
        ):
            c = Candidate(id=1, similarity=sim, bm25=bm25, keyword_rank=2, vector_rank=3)
            got = score(c, best)
            partial = 1.0
            kw = 0.0 if bm25 is None or not best else min(1.0, bm25 / best)
            strong = 0.0 if sim is None else clamp((sim - floor) / (top - floor))
            if fusion == "rrf":
                k = s.rrf_k
                kw = (k + 1) / (k + 2)
                strong *= (k + 1) / (k + 3)
            total = s.keyword_weight + s.vector_weight
            kpart = s.keyword_weight / total * kw * partial
            vpart = s.vector_weight / total * strong
            assert same(got, (kpart + vpart, kpart, vpart)), (fusion, sim, bm25, best)


def test_no_bound_with_a_negative_weight() -> None:
    class S:
        importance_weight, recency_weight, frequency_weight = 0.1, -0.1, 0.05

    assert bounds.nudge_max(S()) is None  # type: ignore[arg-type]


def _notes_and_memories(app: Any) -> None:
    rng = random.Random(3)
    words = ["deploy", "rollback", "budget", "kafka", "cluster", "invoice", "retro", "queue"]
    for i in range(60):
        text = " ".join(rng.choices(words, k=rng.randint(3, 12)))
        (app.cfg.workspace / f"n{i:02d}.md").write_text(f"# Note {i}\n\n{text}\n\n## B\n\n{text}\n")
    app.indexer.reconcile()
    for _ in range(40):
        text = " ".join(rng.choices(words, k=rng.randint(2, 8)))
        app.memories.add(text, importance=rng.randint(1, 10))
    settle(app)
    for i in range(20):
        q(app, words[i % len(words)], limit=3)  # access counts on some memories


def test_rows_the_keyword_pool_read_are_the_rows(make_app: Any) -> None:
    """The signal columns the keyword pool hands over (searchsql.Seen) are the rows' own, and
    the signal summary and rows made partly from them are those read from the table."""
    app = make_app(dailylog={"enabled": False})
    _notes_and_memories(app)
    if app.store.backend != "sqlite":
        pytest.skip("the summary is SQLite's")

    def check(con: Any) -> None:
        seen: searchsql.Seen = {}
        found = searchsql.keyword_pool(con, '"kafka" OR "queue"', "1 = 1", [], 30, seen=seen)
        assert {i for i, _, _ in found} <= set(seen)
        assert searchsql.signal_rows(con, seen, seen) == searchsql.signal_rows(con, seen)
        every = [int(r[0]) for r in con.execute("SELECT id FROM entries ORDER BY id")]
        ids = [*every[::3], max(every) + 7]  # some seen, some not, memories, one gone
        backed, tail = ids[: len(ids) // 2], ids[len(ids) // 2 :]
        with_seen = searchsql.signal_summary(con, backed, tail, seen)
        assert with_seen == searchsql.signal_summary(con, backed, tail)
        assert with_seen is not None and with_seen[2]  # memories among them
        known = [i for i in ids if i in seen]
        assert known and searchsql.signal_summary(con, known, [], seen) == (
            searchsql.signal_summary(con, known, [])
        )
        assert searchsql.signal_rows(con, ids, seen) == searchsql.signal_rows(con, ids)

    app.store.read(check)


def _hits(res: dict[str, Any]) -> list[Any]:
    return [(h["id"], h["score"], h.get("sections"), h.get("explain")) for h in res["hits"]]


@pytest.mark.parametrize("group", ["note", "none"])
def test_hits_are_those_of_scoring_every_candidate(
    make_app: Any, monkeypatch: Any, group: str
) -> None:
    """Notes and memories (importance, tiers, access counts): every mode and limit answers the
    same with the bounds as with every candidate scored."""
    app = make_app(dailylog={"enabled": False})
    _notes_and_memories(app)
    app.searcher.clock = lambda: 2e9  # the memories' decay
    requests = [
        (query, mode, limit)
        for query in ("deploy rollback", "kafka", "budget invoice queue", "retro cluster")
        for mode in ("auto", "keyword", "vector", "hybrid")
        for limit in (1, 3, 10)
    ]

    def answers() -> list[Any]:
        return [
            _hits(q(app, query, mode=mode, limit=limit, group=group, explain=True))
            for query, mode, limit in requests
        ]

    read: list[int] = []
    real = bounds.reachable

    def counted(*args: Any) -> list[Candidate]:
        kept = real(*args)
        read.append(len(args[0]) - len(kept))
        return kept

    monkeypatch.setattr(bounds, "reachable", counted)
    bounded = answers()
    assert sum(read) > 0, "some candidates were never read"
    # the same without the keyword pool's rows handed over (searchsql.Seen)
    summary, rows = searchsql.signal_summary, searchsql.signal_rows
    handed: list[int] = []

    def summary_read(con: Any, backed: Any, tail: Any, seen: Any = None) -> Any:
        handed.append(len(seen or ()))
        return summary(con, backed, tail)

    monkeypatch.setattr(searchsql, "signal_summary", summary_read)
    monkeypatch.setattr(searchsql, "signal_rows", lambda con, ids, seen=None: rows(con, ids))
    assert answers() == bounded
    assert app.store.backend != "sqlite" or max(handed) > 0
    monkeypatch.setattr(bounds, "nudge_max", lambda s: None)  # every candidate scored
    assert answers() == bounded
