"""Search: fusion math, tiers, filters, explain, and the embedding pipeline behind it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

from memoryd.core.errors import InvalidInput
from memoryd.index.embed import FakeEmbedder, ModelHolder
from memoryd.search.ranking import SIGNAL_SHARE, normalise, rrf, weighted
from memoryd.search.searcher import SearchRequest
from memoryd.store.entries import Filters

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def q(app: Any, query: str, **kw: Any) -> dict[str, Any]:
    return app.searcher.search(SearchRequest(query=query, record_access=False, **kw))


def settle(app: Any) -> None:
    """Embed every pending text now (the same run the background worker does)."""
    assert app.model.wait_ready(30), app.model.reason
    app.embedder.run()
    assert app.embedder.counts()["pending"] == 0


def test_rrf_and_weighted_fusion() -> None:
    scores = rrf([[1, 2, 3], [3, 1]], k=60)
    assert scores[1] == pytest.approx(1 / 61 + 1 / 62)
    assert scores[3] == pytest.approx(1 / 63 + 1 / 61)
    assert max(scores, key=scores.get) == 1
    assert normalise({1: -5.0, 2: -1.0}, higher_is_better=False) == {1: 1.0, 2: 0.0}
    w = weighted({1: -5.0, 2: -1.0}, {2: 0.9, 3: 0.1}, 0.5, 0.5)
    assert w == {1: 0.5, 2: 0.5, 3: 0.0}


def test_keyword_search_filters_snippets_and_validation(make_app: Any) -> None:
    app = make_app(model=None)
    app.memories.add("Postgres replication lag alert fired twice", tags=["db"], importance=9)
    app.memories.add("Replication of redis is async", tags=["cache"], type="decision")
    res = q(app, "replication")
    assert res["mode"] == "keyword" and len(res["hits"]) == 2
    top = res["hits"][0]
    assert [top["snippet"][a:b].lower() for a, b in top["highlights"]] == ["replication"]
    assert [h["tags"] for h in q(app, "replication", filters=Filters(tags=("db",)))["hits"]] == [
        ["db"]
    ]
    assert len(q(app, "replication", filters=Filters(types=("decision",)))["hits"]) == 1
    assert len(q(app, "replication", filters=Filters(min_importance=8))["hits"]) == 1
    with pytest.raises(InvalidInput):
        q(app, "x", limit=0)
    with pytest.raises(InvalidInput):
        q(app, "x", mode="psychic")


@pytest.mark.parametrize(
    "nasty",
    [
        '"unbalanced',
        "AND",
        "OR OR",
        "NOT",
        "*",
        "col:umn",
        "NEAR(a b)",
        "a^b",
        "(((",
        "-",
        "🙂",
        "'; DROP TABLE entries; --",
        "\x00\x01",
        "a" * 5000,
    ],
)
def test_no_query_raises_a_syntax_error(make_app: Any, nasty: str) -> None:
    app = make_app(model=None)
    app.memories.add("something to find")
    res = q(app, nasty)
    assert isinstance(res["hits"], list)


def test_query_syntax_phrases_prefix_or_not(make_app: Any) -> None:
    app = make_app(model=None)
    app.memories.add("deploy checklist for friday")
    app.memories.add("checklist deploy order reversed")
    app.memories.add("deployment of kubernetes")
    assert len(q(app, '"deploy checklist"')["hits"]) == 1
    assert len(q(app, "deploy*")["hits"]) == 3
    assert len(q(app, "friday OR reversed")["hits"]) == 2
    assert len(q(app, "checklist -friday")["hits"]) == 1
    assert len(q(app, "checklist NOT friday")["hits"]) == 1


@pytest.mark.parametrize("mode", ["auto", "hybrid", "vector"])
def test_what_a_query_excludes_no_pool_returns(make_app: Any, mode: str) -> None:
    """`-term` was applied by the keyword pool only: the vector pool (and auto's fallback to
    it) still returned the texts holding the excluded word, phrase or prefix."""
    audit = "ledger audit with José from finance"
    close = "the ledger close, finance's month end"
    load = "finance ledger load test of the close"
    app = make_app()
    app.model.start()
    for text in (audit, close, load):
        app.memories.add(text)
    settle(app)
    for query, kept in [
        ("ledger finance -José", [close, load]),
        ('ledger finance -"load test"', [audit, close]),
        ("ledger finance NOT audit* -load", [close]),
    ]:
        got = sorted(h["content"] for h in q(app, query, mode=mode)["hits"])
        assert got == sorted(kept), (query, got)


def test_tiers_hybrid_vector_keyword_fuzzy(make_app: Any) -> None:
    app = make_app()
    app.memories.add("docker networking uses a bridge by default")
    app.memories.add("the cat sat on the mat")
    app.model.start()
    assert app.model.wait_ready(10)
    settle(app)
    assert q(app, "docker bridge")["mode"] == "hybrid"
    # the fake embedder hashes words: "cat mat" shares words with the note but "kitten" doesn't
    res = q(app, "zzz cat mat", mode="vector")
    assert res["mode"] == "vector" and "cat" in res["hits"][0]["content"]
    res = q(app, "dokcer netwrking")
    assert res["mode"] == "fuzzy"
    assert "docker" in res["hits"][0]["content"]
    assert res["corrected_query"]
    assert q(app, "docker", mode="keyword")["mode"] == "keyword"


def test_explain_returns_each_component(make_app: Any) -> None:
    app = make_app()
    app.memories.add("explainable ranking signals", importance=9)
    app.model.start()
    assert app.model.wait_ready(10)
    settle(app)
    hit = q(app, "ranking signals", explain=True)["hits"][0]
    ex = hit["explain"]
    for key in (
        "keyword_rank",
        "bm25",
        "vector_rank",
        "similarity",
        "relevance",
        "importance",
        "recency",
        "frequency",
        "final",
        "mode",
    ):
        assert key in ex
    assert ex["final"] == pytest.approx(hit["score"])
    assert ex["final"] == pytest.approx(
        (1 - SIGNAL_SHARE) * ex["relevance"] + ex["importance"] + ex["recency"] + ex["frequency"],
        abs=1e-5,
    )


def test_importance_breaks_ties(make_app: Any) -> None:
    app = make_app(model=None)
    low = app.memories.add("identical ranking words here", importance=1).id
    high = app.memories.add("identical ranking words there", importance=10).id
    ids = [h["id"] for h in q(app, "identical ranking words")["hits"]]
    assert ids.index(high) < ids.index(low)


def test_edit_reembeds_only_the_changed_chunk_and_moves_reembed_nothing(make_app: Any) -> None:
    app = make_app()
    fake: FakeEmbedder = app.model.fake
    app.model.start()
    assert app.model.wait_ready(10)
    ws = app.cfg.workspace
    ws.mkdir(parents=True, exist_ok=True)
    sections = [f"## Part {i}\n\nparagraph number {i} about topic{i}\n" for i in range(5)]
    (ws / "long.md").write_text("# Long\n\n" + "\n".join(sections))
    app.indexer.reconcile()
    settle(app)
    first = len(fake.seen)
    assert first >= 5
    sections[2] = "## Part 2\n\nparagraph number 2 rewritten entirely\n"
    (ws / "long.md").write_text("# Long\n\n" + "\n".join(sections))
    app.indexer.reconcile()
    settle(app)
    assert len(fake.seen) == first + 1
    assert "rewritten" in fake.seen[-1]
    (ws / "long.md").rename(ws / "renamed.md")
    app.indexer.reconcile()
    settle(app)
    assert len(fake.seen) == first + 1
    text = (ws / "renamed.md").read_text()
    (ws / "renamed.md").unlink()
    app.indexer.reconcile()
    (ws / "restored.md").write_text(text)
    app.indexer.reconcile()
    settle(app)
    assert len(fake.seen) == first + 1  # vectors kept through delete + restore


def test_no_model_then_model_appears_catches_up(make_app: Any) -> None:
    holder = ModelHolder(None, description="no model installed")
    app = make_app(model=holder)
    app.memories.add("keyword mode works without a model")
    app.start()
    assert q(app, "keyword mode")["mode"] == "keyword"
    st = app.status()
    assert st["model"]["state"] == "none" and st["vectors"]["pending"] == 1
    assert "no model" in st["model"]["reason"]
    holder.set_embedder(FakeEmbedder())
    wait_for(lambda: app.embedder.counts()["pending"] == 0)
    settle(app)
    assert q(app, "keyword mode")["mode"] == "hybrid"


def test_model_switch_reembeds_everything_and_never_mixes_dims(make_app: Any) -> None:
    app = make_app(dailylog={"enabled": False})
    app.memories.add("switching models keeps search up")
    app.model.start()
    assert app.model.wait_ready(10)
    settle(app)
    assert q(app, "switching")["mode"] == "hybrid"
    app.close()
    bigger = FakeEmbedder(dim=96, name="fake-big")
    app2 = make_app(
        model=ModelHolder(lambda: bigger, description="bigger fake"), dailylog={"enabled": False}
    )
    assert q(app2, "switching")["mode"] == "keyword"  # old vectors are not used for a new model
    app2.start()
    settle(app2)
    assert len(bigger.seen) == 1
    assert q(app2, "switching")["mode"] == "hybrid"
    dims = app2.store.read(lambda con: con.execute("SELECT key, dim FROM models").fetchall())
    assert dims == [("fake-big/96", 96)]


def test_model_failing_halfway_leaves_texts_pending(make_app: Any) -> None:
    fake = FakeEmbedder()
    fake.fail_after = 3
    app = make_app(
        model=ModelHolder(lambda: fake, description="flaky"), embedding={"batch_size": 2}
    )
    for i in range(6):
        app.memories.add(f"memory number {i}")
    app.model.start()
    assert app.model.wait_ready(10)
    with pytest.raises(RuntimeError):
        app.embedder.run()
    counts = app.embedder.counts()
    assert counts["done"] == 2 and counts["pending"] == 4  # whole batches only
    fake.fail_after = None
    app.embedder.run()
    assert app.embedder.counts()["pending"] == 0


@pytest.mark.model
def test_real_model_finds_meaning_without_shared_words(make_app: Any) -> None:
    app2 = make_app(model="real")
    for text in [
        "the user prefers dark mode in the editor",
        "we decided to use JWT tokens for API authentication",
        "the quarterly budget review is on Tuesday",
        "docker containers talk over a bridge network",
    ]:
        app2.memories.add(text)
    app2.start()
    assert app2.model.wait_ready(60), app2.model.reason
    settle(app2)
    res = q(app2, "dark theme preference")
    assert res["hits"][0]["content"] == "the user prefers dark mode in the editor"
    res = q(app2, "what did we decide about auth?")
    assert "JWT" in res["hits"][0]["content"]
    assert res["mode"] in ("vector", "hybrid")


def test_paths_in_hits(make_app: Any, tmp_path: Path) -> None:
    app = make_app(model=None)
    ws = app.cfg.workspace
    (ws / "proj").mkdir(parents=True)
    (ws / "proj" / "auth.md").write_text("# Auth\n\n## Decision\n\nUse sessions not JWT\n")
    app.indexer.reconcile()
    hit = q(app, "sessions")["hits"][0]
    assert hit["path"] == "proj/auth.md"
    assert hit["heading_path"] == ["Auth", "Decision"]
    assert hit["start_line"] == 1 and hit["end_line"] >= 5
    assert q(app, "sessions", filters=Filters(path_prefix="proj"))["hits"]
    assert not q(app, "sessions", filters=Filters(path_prefix="pro"))["hits"]


def test_questions_match_on_some_terms_and_single_typos_are_corrected(make_app: Any) -> None:
    app = make_app(model=None)
    app.memories.add("Auth decision: sessions in Redis, no JWT")
    app.memories.add("docker networking uses a bridge by default")
    res = q(app, "what did we decide about auth?")
    assert res["mode"] == "keyword" and "Auth decision" in res["hits"][0]["content"]
    # all terms present ranks above some terms present
    app.memories.add("auth what did we decide about it")
    assert q(app, "what did we decide about auth")["hits"][0]["content"].startswith("auth what")
    res = q(app, "dokcer networking")  # the correct word finds it before any correction
    assert res["mode"] == "keyword" and "docker" in res["hits"][0]["content"]
    res = q(app, "what about dokcer?")  # nothing matches the topical word: corrected
    assert res["mode"] == "fuzzy" and "docker" in res["hits"][0]["content"]


@pytest.mark.sqlite_only(
    "VectorCache (SQLite's in-memory index) against sqlite-vec's exact scan; on PostgreSQL "
    "vectors.knn is pgvector's approximate HNSW, and search uses PgVectorIndex"
)
def test_vector_cache_matches_exact_search(make_app: Any) -> None:
    import numpy as np

    from memoryd.search.vecindex import VectorCache
    from memoryd.store import vectors

    app = make_app(model=None)
    rng = np.random.default_rng(7)
    base = rng.normal(size=(50, 96)).astype(np.float32)
    data = base[rng.integers(0, 50, 3000)] + 0.3 * rng.normal(size=(3000, 96)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    model_id = app.store.run_write(lambda con: vectors.ensure_model(con, "syn/96", "syn", 96, 1.0))
    items = [(f"h{i}", data[i]) for i in range(len(data))]
    app.store.run_write(lambda con: vectors.store(con, model_id, items, 1.0))
    cache = VectorCache(min_vectors=1000, rerank=10)
    recalls = []
    for q in data[rng.integers(0, 3000, 20)] + 0.1 * rng.normal(size=(20, 96)).astype(np.float32):
        q = q / np.linalg.norm(q)
        exact = app.store.read(lambda con, q=q: vectors.knn(con, model_id, q, 10))
        fast = app.store.read(lambda con, q=q: cache.knn(con, model_id, 96, q, 10))
        recalls.append(len({h for h, _ in exact} & {h for h, _ in fast}) / 10)
        assert fast[0][1] == pytest.approx(exact[0][1], abs=1e-2)
    assert len(cache) == 3000 and np.mean(recalls) >= 0.95
    more = [(f"new{i}", data[i]) for i in range(5)]
    app.store.run_write(lambda con: vectors.store(con, model_id, more, 2.0))
    app.store.read(lambda con: cache.knn(con, model_id, 96, data[0], 10))
    assert len(cache) == 3005  # new vectors are picked up on the next query


@pytest.mark.sqlite_only("VectorCache is SQLite's in-memory index")
def test_vector_cache_appends_in_place_and_keeps_old_views(make_app: Any) -> None:
    """A few new vectors fill spare rows (no copy of the store per write); a view a reader took
    before stays valid; loading, growth and the re-centring at each doubling give the same
    neighbours as a cache loaded in one go."""
    import numpy as np

    from memoryd.search import vecindex
    from memoryd.search.vecindex import VectorCache
    from memoryd.store import vectors

    app = make_app(model=None)
    rng = np.random.default_rng(3)
    data = rng.normal(size=(2600, 32)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    model_id = app.store.run_write(lambda con: vectors.ensure_model(con, "syn/32", "syn", 32, 1.0))

    def add(lo: int, hi: int) -> None:
        items = [(f"h{i}", data[i]) for i in range(lo, hi)]
        app.store.run_write(lambda con: vectors.store(con, model_id, items, 1.0))

    add(0, 1200)
    cache = VectorCache(min_vectors=500, rerank=10)
    app.store.read(lambda con: cache.knn(con, model_id, 32, data[0], 5))
    buffer = cache._full
    with cache._lock:
        _, old_view, _, n_old = cache._view()
    add(1200, 1210)
    app.store.read(lambda con: cache.knn(con, model_id, 32, data[0], 5))
    assert len(cache) == 1210 and cache._full is buffer  # written into spare rows
    assert n_old == 1200 and np.array_equal(old_view, data[:1200].astype(np.float16))
    old = vecindex.LOAD_ROWS
    vecindex.LOAD_ROWS = 256  # several blocks per load, a regrowth and a re-centring
    try:
        add(1210, 2600)  # past twice the 1,200 the centre was taken over: re-centred
        grown = VectorCache(min_vectors=500, rerank=10)
        for q in data[:40]:
            a = app.store.read(lambda con, q=q: cache.knn(con, model_id, 32, q, 10))
            b = app.store.read(lambda con, q=q: grown.knn(con, model_id, 32, q, 10))
            assert a == b and a[0][0] == f"h{int(np.argmax(data @ q))}"
    finally:
        vecindex.LOAD_ROWS = old
    assert len(cache) == len(grown) == 2600 and cache._full is not buffer
    sims = app.store.read(lambda con: cache.similarities(con, model_id, 32, data[7], {"h7", "x"}))
    assert list(sims) == ["h7"] and sims["h7"] == pytest.approx(1.0, abs=1e-3)


def test_weighted_rrf_items() -> None:
    scores = rrf([[(1, 0.25), 2], [2]], k=60, weights=[1.0, 2.0])
    assert scores[1] == pytest.approx(0.25 / 61)
    assert scores[2] == pytest.approx(1 / 62 + 2 / 61)
