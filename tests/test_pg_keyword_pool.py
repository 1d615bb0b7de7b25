"""Issue 23.4: PostgreSQL's keyword pool ranked from the rows that can reach it
(store/pg/ftstop.py, schema v5). `memoryd_fts_top` keeps exactly the lexemes whose ts_rank_cd
reaches each tier; a pool answered from them is the pool every match ranked gives (same rows, same
order, ties included), with filters, after writes; an older database gets the index when it
migrates."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from typing import Any

import pytest

from memoryd.store.pg import PgSettings, PgStore, fts, ftstop, pool
from memoryd.store.protocol import Connection

WORDS = ["deploy", "cluster", "invoice", "refund", "shard", "tenant", "backup", "alert", "queue"]
FILLER = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PgStore]:
    s = PgStore(PgSettings(pg_dsn, "ws", "test:ws"))
    yield s
    s.close()


def _text(rng: random.Random) -> str:
    """Short and long texts, each holding one or two of the query words (in about a tenth of
    the texts each, as the bench's common words), often repeated: many equal scores."""
    n = rng.choice((1, 2, 3, 5, 8, 13, 30, 60))
    topical = rng.sample(WORDS, rng.choice((0, 1, 1, 2)))
    pick = (topical or FILLER) if rng.random() < 0.3 else FILLER
    return " ".join([*topical, *(rng.choice(pick) for _ in range(n))][: max(n, len(topical))])


def fill(store: PgStore, n: int, seed: int = 1) -> None:
    """n chunks of notes (titles, headings, tags: every column weight) and a few memories."""
    rng = random.Random(seed)

    def write(con: Connection) -> None:
        docs = []
        for d in range(n // 4 + 1):
            title = rng.choice(WORDS + FILLER)
            docs.append(
                int(
                    con.execute(
                        "INSERT INTO documents(path, sha256, size, mtime, indexed_at)"
                        " VALUES (?, '', 0, 0, 0) RETURNING id",
                        [f"n{d}/{title}.md"],
                    ).fetchall()[0][0]
                )
            )
        for i in range(n):
            text = _text(rng)
            memory = i % 10 == 0
            con.execute(
                "INSERT INTO entries(kind, content, content_hash, type, tags, created_at,"
                " updated_at, document_id, seq, heading_path, importance)"
                " VALUES (?, ?, ?, 'note', ?, 0, 0, ?, ?, ?, ?)",
                [
                    "memory" if memory else "chunk",
                    text,
                    hashlib.sha256(f"{i}:{text}".encode()).hexdigest(),
                    f'["{rng.choice(WORDS)}"]' if rng.random() < 0.3 else "[]",
                    None if memory else rng.choice(docs),
                    None if memory else i,
                    None if memory else " > ".join(rng.sample(WORDS + FILLER, 2)),
                    rng.randint(1, 9),
                ],
            )

    store.run_write(write)


@pytest.mark.parametrize("tier", ftstop.TIERS)
def test_the_index_keeps_the_lexemes_that_rank_high(store: PgStore, tier: float) -> None:
    fill(store, 300)
    top = ftstop.top_sql("e.fts", tier)

    def check(con: Connection) -> tuple[int, int]:
        kept = missed = 0
        for lexeme, r, held in con.execute(
            f"SELECT u.lexeme, ts_rank_cd('{fts.WEIGHTS}'::real[], e.fts,"
            f" to_tsquery('simple', quote_literal(u.lexeme)), {fts.NORMALIZATION}),"
            f" {top} @@ to_tsquery('simple', quote_literal(u.lexeme))"
            " FROM entries e, unnest(e.fts) u"
        ):
            if r >= tier:
                assert held, (lexeme, r)  # a lexeme that ranks high is never left out
                kept += 1
            elif held:  # kept only within the margin below the tier
                assert r >= tier * 0.998, (lexeme, r)
            else:
                missed += 1
        return kept, missed

    kept, below = store.read(check)
    assert kept > 50 and below > 50  # both sides of the threshold are exercised


def _pool(store: PgStore, match: str, where: str, params: list[Any], size: int, fast: bool) -> Any:
    def read(con: Connection) -> Any:
        return pool.keyword_pool(con, match, where, params, size)

    if fast:
        return store.read(read)
    saved = ftstop.pool
    ftstop.pool = lambda *a, **k: None  # type: ignore[assignment]  # every match ranked
    try:
        return store.read(read)
    finally:
        ftstop.pool = saved  # type: ignore[assignment]


@pytest.fixture
def pruning(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The first ranking tried from any number of matches; counts how often it answered."""
    monkeypatch.setattr(ftstop, "MIN_MATCHES", 0)
    monkeypatch.setattr(ftstop, "MATCHES_PER_ROW", 0)
    monkeypatch.setattr(ftstop, "HIGH_TIER_MATCHES", 0)  # both tiers, the higher first
    seen = {"answered": 0, "tried": 0}
    real = ftstop.pool

    def counting(*a: Any, **k: Any) -> Any:
        found = real(*a, **k)
        seen["tried"] += 1
        seen["answered"] += found is not None
        return found

    monkeypatch.setattr(ftstop, "pool", counting)
    return seen


def test_the_pool_is_the_whole_ranking(store: PgStore, pruning: dict[str, int]) -> None:
    fill(store, 400)
    rng = random.Random(5)
    filters = [
        ("TRUE", []),
        ("e.kind = 'chunk'", []),
        ("e.importance >= ?", [5]),
        ("d.path LIKE ?", ["n1%"]),
    ]
    for _ in range(60):
        words = rng.sample(WORDS, rng.choice((2, 2, 3, 4)))
        match = " OR ".join(f'"{w}"' for w in words)
        where, params = rng.choice(filters)
        size = rng.choice((3, 10, 25))
        assert _pool(store, match, where, params, size, True) == _pool(
            store, match, where, params, size, False
        ), (match, where, size)
    assert pruning["answered"] >= 20, pruning  # the first ranking answered most queries


def test_queries_the_bound_does_not_cover_rank_every_match(
    store: PgStore, pruning: dict[str, int]
) -> None:
    fill(store, 200)
    for match in (
        '"deploy"',
        '"deploy cluster" OR "invoice"',
        '"depl"* OR "invoice"',
        '"deploy" AND "invoice"',
        '"deploy" NOT "invoice"',
        '"the" OR "invoice"',
    ):
        assert _pool(store, match, "TRUE", [], 10, True) == _pool(
            store, match, "TRUE", [], 10, False
        )
    assert pruning["answered"] == 0, pruning


def test_a_write_that_outranks_the_pool_is_found(store: PgStore, pruning: dict[str, int]) -> None:
    fill(store, 300)
    match, size = '"invoice" OR "refund"', 30
    before = _pool(store, match, "TRUE", [], size, True)
    assert pruning["answered"] == 1
    # a text of one word, repeated: it holds only one of the terms, and enters the pool
    store.run_write(
        lambda con: con.execute(
            "INSERT INTO entries(kind, content, content_hash, type, created_at, updated_at)"
            " VALUES ('memory', ?, 'h-new', 'note', 0, 0)",
            [" ".join(["invoice"] * 200)],
        )
    )
    after = _pool(store, match, "TRUE", [], size, True)
    assert after == _pool(store, match, "TRUE", [], size, False)
    new = store.read(
        lambda con: con.execute("SELECT id FROM entries WHERE content_hash = 'h-new'").fetchall()
    )
    assert new[0][0] in [i for i, _, _ in after]
    assert new[0][0] not in [i for i, _, _ in before]
    assert pruning["answered"] == 2


def _indexes(store: PgStore) -> set[str]:
    return {
        str(r[0])
        for r in store.read(
            lambda con: con.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'all_entries'"
                " AND indexname LIKE 'entries_fts_top%'"
            ).fetchall()
        )
    }


# what v5's first version made (one index, r >= 0.3); v6 replaces it with the tiers
_FIRST_V5 = """
CREATE FUNCTION memoryd_fts_top(v tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$ SELECT v $fn$;
CREATE INDEX entries_fts_top ON all_entries USING gin(memoryd_fts_top(fts));
"""


@pytest.mark.parametrize("start", ["v4", "first v5"])
def test_an_older_database_gets_the_indexes_when_it_migrates(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch, start: str
) -> None:
    from memoryd.store.pg import schema

    old = schema.MIGRATIONS[: schema.MIGRATIONS.index(schema._v5_fts_top)]
    if start == "first v5":

        def first_v5(cur: Any) -> None:
            cur.execute(_FIRST_V5)
            cur.execute(fts.DF_SCHEMA)

        old = [*old, first_v5]
    monkeypatch.setattr(schema, "MIGRATIONS", old)
    s = PgStore(PgSettings(pg_dsn, "ws", "test:ws"))
    fill(s, 200)
    assert _indexes(s) == ({"entries_fts_top"} if start == "first v5" else set())
    s.close()
    monkeypatch.undo()
    monkeypatch.setattr(ftstop, "MIN_MATCHES", 0)
    monkeypatch.setattr(ftstop, "MATCHES_PER_ROW", 0)
    s = PgStore(PgSettings(pg_dsn, "ws", "test:ws"))
    try:
        version = s.read(
            lambda con: con.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchall()[0][0]
        )
        assert version == str(len(schema.MIGRATIONS))
        assert _indexes(s) == {f"entries_fts_top{round(t * 100)}" for t in ftstop.TIERS}
        match = '"deploy" OR "cluster"'
        assert _pool(s, match, "TRUE", [], 5, True) == _pool(s, match, "TRUE", [], 5, False)
    finally:
        s.close()


def test_a_remembered_document_frequency_follows_a_write(store: PgStore) -> None:
    """The df memo (shared by the keyword pool and the evidence) is checked against N even
    when N was read earlier in the same transaction (entry_count first, as the evidence
    asks)."""
    fill(store, 20)

    def counts(con: Connection) -> tuple[int, int]:
        return fts.entry_count(con), fts.match_count(con, '"zebra"', 10_000)

    n, df = store.read(counts)
    assert df == 0
    store.run_write(
        lambda con: con.execute(
            "INSERT INTO entries(kind, content, content_hash, type, created_at, updated_at)"
            " VALUES ('memory', 'a zebra', 'h-zebra', 'note', 0, 0)"
        )
    )
    assert store.read(counts) == (n + 1, 1)
