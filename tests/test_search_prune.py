"""Issue 23.3: an any-word keyword pool read from the rows that hold every word
(store/ftsprune.py) is the pool ranked whole: the same rows in the same order, ties included,
before and after writes."""

from __future__ import annotations

import random
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from memoryd.search.ftsquery import parse_query
from memoryd.store import ftsprune, searchsql
from memoryd.store.entries import Filters, filter_sql
from memoryd.store.sqlite import SqliteStore

WORDS = ["deploy", "rollback", "budget", "invoice", "cluster", "kafka"]
FILLER = [f"w{i}" for i in range(40)]
QUERIES = ["deploy rollback", "budget invoice kafka", "cluster deploy", "kafka"]


def _add(store: SqliteStore, texts: list[str]) -> None:
    with store.write() as con:
        for i, text in enumerate(texts):
            con.execute(
                "INSERT INTO entries(kind, namespace, content, content_hash, type, created_at,"
                " updated_at) VALUES ('memory', ?, ?, ?, 'fact', 0, 0)",
                ["b" if i % 3 == 0 else "default", text, f"h{hash(text)}-{random.random()}"],
            )


def _texts(n: int, seed: int) -> list[str]:
    """Texts of filler words holding each of WORDS at most once (each with a chance of 0.4);
    many alike (the same words, the same length: ties in bm25)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [w for w in WORDS if rng.random() < 0.4] + rng.choices(
            FILLER, k=rng.randint(10, 21)
        )
        rng.shuffle(words)
        out.append(" ".join(words))
    return out


@pytest.fixture
def store(tmp_path: Path, monkeypatch: Any) -> Any:
    monkeypatch.setattr(ftsprune, "PRUNE_MIN", 0)
    monkeypatch.setattr(ftsprune, "FILL_AFTER", 0.0)
    s = SqliteStore(tmp_path / "m.db")
    _add(s, _texts(3000, 1))
    yield s
    s.close()


def _pools(
    store: SqliteStore, size: int, pruned: bool, monkeypatch: Any, filters: Filters | None = None
) -> dict[str, Any]:
    """Each query's keyword pool; with `pruned`, after the phrases' bounds are learned."""
    monkeypatch.setattr(ftsprune, "PRUNE_MIN", 0 if pruned else 10**12)
    where, params = filter_sql(filters or Filters(), time.time())
    futures: list[Future[Any]] = []
    out: dict[str, Any] = {}
    with ThreadPoolExecutor(1) as pool:

        def beside(fn: Any) -> Future[Any]:
            futures.append(pool.submit(store.read, fn))
            return futures[-1]

        for query in QUERIES:
            parsed = parse_query(query)
            match = parsed.match_any or parsed.match
            assert match is not None

            def one(con: Any, match: str = match) -> Any:
                return searchsql.keyword_pool(con, match, where, params, size, beside=beside)

            store.read(one)  # learns the bounds on the search thread
            for fut in futures:
                fut.result(timeout=30)
            out[query] = store.read(one)
    return out


def test_the_pool_from_the_rows_holding_every_word_is_the_pool_ranked_whole(
    store: SqliteStore, monkeypatch: Any
) -> None:
    path = str(store.path)
    for size in (5, 30):
        used = ftsprune.counts(path)[0]
        assert _pools(store, size, True, monkeypatch) == _pools(store, size, False, monkeypatch)
        assert ftsprune.counts(path)[0] > used  # the all-words rows answered some of them


def test_a_filter_that_drops_ranked_rows_gives_the_same_pool(
    store: SqliteStore, monkeypatch: Any
) -> None:
    """A filter checked on the ranked rows (a namespace: a third of these memories) keeps the
    same answer whether the first ranking came from the rows holding every word or not, and
    falls back to every match the same way when it leaves too few."""
    for size in (5, 60):
        f = Filters(namespace="b")
        pruned = _pools(store, size, True, monkeypatch, f)
        assert pruned == _pools(store, size, False, monkeypatch, f)


def test_a_write_forgets_the_bounds(store: SqliteStore, monkeypatch: Any) -> None:
    """A text written after the bounds were learned may outrank the rows holding every word
    (two of three words, many times, in a short text): the pool still ranks it."""
    _pools(store, 5, True, monkeypatch)
    used = ftsprune.counts(str(store.path))[0]
    _add(store, ["budget budget budget budget invoice invoice invoice invoice"])
    pruned = _pools(store, 5, True, monkeypatch)
    assert pruned == _pools(store, 5, False, monkeypatch)
    assert ftsprune.counts(str(store.path))[0] > used  # the bounds were learned again
    new = store.read(lambda con: con.execute("SELECT max(id) FROM entries").fetchone()[0])
    assert new in {i for i, _, _ in pruned["budget invoice kafka"]}


def test_only_any_word_expressions_of_a_few_phrases_are_pruned() -> None:
    assert ftsprune.units('"a" OR "b"') == ['"a"', '"b"']
    assert ftsprune.units('"a ""b" OR "c"* OR "d e"') == ['"a ""b"', '"c"*', '"d e"']
    for match in ('"a"', '"a" AND "b"', '("a" OR "b") NOT "c"', '("a"* OR "b"*) OR "c"'):
        assert ftsprune.units(match) is None
    assert ftsprune.units(" OR ".join(['"a"'] * (ftsprune.MAX_UNITS + 1))) is None


def test_bounds_learned_at_start_up_prune_the_first_search(
    store: SqliteStore, monkeypatch: Any
) -> None:
    """`learn` (the daemon's start-up) knows the common words' bounds before any search: the
    first search of them is answered from the rows holding every word, with no search thread."""
    assert store.read(ftsprune.learn) >= len(WORDS)
    where, params = filter_sql(Filters(), time.time())
    used = ftsprune.counts(str(store.path))[0]
    for query in ("deploy rollback", "cluster deploy"):
        match = parse_query(query).match_any
        assert match is not None
        pruned = store.read(lambda con, m=match: searchsql.keyword_pool(con, m, where, params, 5))
        monkeypatch.setattr(ftsprune, "PRUNE_MIN", 10**12)
        whole = store.read(lambda con, m=match: searchsql.keyword_pool(con, m, where, params, 5))
        monkeypatch.setattr(ftsprune, "PRUNE_MIN", 0)
        assert pruned == whole
    assert ftsprune.counts(str(store.path))[0] == used + 2


def test_a_word_that_alone_outranks_the_rows_holding_both(
    store: SqliteStore, monkeypatch: Any
) -> None:
    """Short texts repeating a rare word outrank the rows holding it and a common one: its rows
    without the other are ranked too (`_one_sided`), and the pool is still the pool ranked
    whole."""
    import sys

    rng = random.Random(2)
    _add(store, ["zebra " * 6] * 30)  # short, one word repeated: more than "zebra deploy" scores
    texts = [["zebra", "deploy", *rng.choices(FILLER, k=rng.randint(8, 40))] for _ in range(300)]
    _add(store, [" ".join(t) for t in texts])
    answered: list[bool] = []
    one_sided = ftsprune._one_sided

    def counted(*args: Any) -> Any:
        found = one_sided(*args)
        answered.append(found is not None)
        return found

    monkeypatch.setattr(ftsprune, "_one_sided", counted)
    monkeypatch.setattr(sys.modules[__name__], "QUERIES", ["zebra deploy", "deploy zebra"])
    for size in (5, 40):
        assert _pools(store, size, True, monkeypatch) == _pools(store, size, False, monkeypatch)
    assert any(answered)
