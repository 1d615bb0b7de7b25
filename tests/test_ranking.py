"""Ranking you can trust: filters inside the search, no padding, bounded popularity, one result
per note, safe snippets, and the popcount fallback of the vector cache."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import q, settle
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.search import pools as pools_mod
from memoryd.search import searcher as search_mod
from memoryd.search import vecindex
from memoryd.search.ranking import group_by_note, strength
from memoryd.search.snippets import _CLOSE, _OPEN, escape_markdown, render_snippet
from memoryd.search.vecindex import hamming, popcount_rows, popcount_table
from memoryd.store.entries import Filters

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

# --- the vector cache without NumPy 2 ------------------------------------------------------------


def test_popcount_table_matches_bitwise_count_and_a_naive_count() -> None:
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 2**63, size=(200, 6), dtype=np.uint64)
    codes[0] = np.iinfo(np.uint64).max
    codes[1] = 0
    naive = np.array([sum(bin(int(x)).count("1") for x in row) for row in codes])
    assert popcount_table(codes).tolist() == naive.tolist()
    assert popcount_rows(codes).tolist() == naive.tolist()
    assert popcount_table(codes)[0] == 64 * 6 and popcount_table(codes)[1] == 0


@pytest.mark.parametrize("numpy2", [True, False])
def test_hamming_by_columns_matches_rows(monkeypatch: Any, numpy2: bool) -> None:
    if numpy2 and not hasattr(np, "bitwise_count"):
        pytest.skip("NumPy 1.x: no bitwise_count")
    monkeypatch.setattr(vecindex, "_HAS_BITWISE_COUNT", numpy2)
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 2**63, size=(300, 6), dtype=np.uint64)
    query = codes[17]
    expected = popcount_table(codes ^ query)
    got = hamming(np.ascontiguousarray(codes.T), query)
    assert got.tolist() == expected.tolist() and got[17] == 0


def test_vector_cache_works_without_bitwise_count(make_app: Any, monkeypatch: Any) -> None:
    from memoryd.search.vecindex import VectorCache
    from memoryd.store import vectors

    app = make_app(model=None)
    rng = np.random.default_rng(5)
    data = rng.normal(size=(600, 32)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    model_id = app.store.run_write(lambda con: vectors.ensure_model(con, "syn/32", "syn", 32, 1.0))
    items = [(f"h{i}", data[i]) for i in range(len(data))]
    app.store.run_write(lambda con: vectors.store(con, model_id, items, 1.0))
    with_np2 = VectorCache(min_vectors=100)
    expected = app.store.read(lambda con: with_np2.knn(con, model_id, 32, data[7], 5))
    monkeypatch.setattr(vecindex, "_HAS_BITWISE_COUNT", False)
    fallback = VectorCache(min_vectors=100)
    got = app.store.read(lambda con: fallback.knn(con, model_id, 32, data[7], 5))
    assert got[0][0] == "h7" and [h for h, _ in got] == [h for h, _ in expected]


# --- filters restrict the candidates before ranking ----------------------------------------------


def _notes(app: Any, folders: int, per_folder: int) -> None:
    ws = app.cfg.workspace
    for f in range(folders):
        (ws / f"conv-{f}").mkdir(parents=True, exist_ok=True)
        for n in range(per_folder):
            (ws / f"conv-{f}" / f"s{n}.md").write_text(
                f"# Session {n}\n\nCaroline went to the support group on day {n} of month {f}."
                f"\n\n## Later\n\nMelanie painted a lake and talked about pottery {n * f}.\n"
            )
    app.indexer.reconcile()


@pytest.mark.parametrize("mode", ["auto", "hybrid", "vector", "keyword"])
def test_narrow_path_filter_at_limit_100_with_a_vector_pool(make_app: Any, mode: str) -> None:
    app = make_app(dailylog={"enabled": False}, search={"max_limit": 1000})
    _notes(app, folders=12, per_folder=10)
    settle(app)
    query = "When did Caroline go to the support group?"
    flt = Filters(path_prefix="conv-3")
    filtered = q(app, query, mode=mode, limit=100, filters=flt, group="none")
    assert filtered["hits"]
    assert all(h["path"].startswith("conv-3/") for h in filtered["hits"])
    # the same hits, in the same order, as an unfiltered query restricted afterwards
    for group in ("none", "note"):
        filtered = q(app, query, mode=mode, limit=100, filters=flt, group=group)
        everything = q(app, query, mode=mode, limit=1000, group=group)
        restricted = [
            (h["id"], h["score"]) for h in everything["hits"] if h["path"].startswith("conv-3/")
        ]
        assert [(h["id"], h["score"]) for h in filtered["hits"]] == restricted[:100]


def test_namespace_filter_at_limit_1_in_vector_mode_finds_the_memory(
    make_app: Any, monkeypatch: Any
) -> None:
    # A tiny nearest-neighbour ceiling forces the widening loop and its exact-scan fallback.
    monkeypatch.setattr(pools_mod, "KNN_MAX", 8)
    app = make_app(dailylog={"enabled": False})
    for i in range(60):
        app.memories.add(f"probe reading number {i} of the sensor", namespace="other")
    mine = app.memories.add("probe reading of the sensor in my lab", namespace="mine").id
    settle(app)
    res = q(app, "probe reading sensor", mode="vector", limit=1, filters=Filters(namespace="mine"))
    assert [h["id"] for h in res["hits"]] == [mine]


# --- no padding ---------------------------------------------------------------------------------


def test_a_query_with_nothing_relevant_returns_no_hits_and_names_the_mode(make_app: Any) -> None:
    app = make_app(dailylog={"enabled": False})
    app.memories.add("docker networking uses a bridge by default")
    app.memories.add("the quarterly budget review is on tuesday")
    settle(app)
    res = q(app, "zebrafish")
    assert res["hits"] == [] and res["mode"] in ("keyword", "hybrid", "vector")
    res = q(app, "zebrafish", mode="vector")
    assert res["hits"] == [] and res["mode"] == "vector"
    res = q(app, "netwrking", mode="keyword")  # no hit, but a correction to offer
    assert res["hits"] == [] and res["suggestion"] == "networking"


def test_scores_are_between_0_and_1_and_strength_is_bounded() -> None:
    scale = (0.4, 0.8, 0.5)
    assert strength(None, scale) == 0.0
    assert strength(0.2, scale) == 0.0
    assert strength(0.6, scale) == pytest.approx(0.5)
    assert strength(0.99, scale) == 1.0
    c = search_mod.Candidate
    kept = search_mod.admitted(
        [
            c(id=1, keyword_rank=3, similarity=None),  # a keyword match: always a hit
            c(id=2, vector_rank=1, similarity=0.45),  # no keyword, below `alone`: padding
            c(id=3, vector_rank=2, similarity=0.55),  # no keyword, close enough
        ],
        scale,
    )
    assert [k.id for k in kept] == [1, 3]


# --- popularity never beats relevance -----------------------------------------------------------


def test_search_records_no_access(make_app: Any) -> None:
    app = make_app(model=None)
    mid = app.memories.add("frequently wanted fact").id
    q(app, "wanted")
    q(app, "wanted")
    assert app.memories.get(mid, record_access=False)["access_count"] == 0
    n = app.store.read(lambda con: con.execute("SELECT count(*) FROM access_log").fetchall())
    assert n[0][0] == 0


def test_popular_important_memory_never_beats_an_exact_match(make_app: Any) -> None:
    app = make_app(dailylog={"enabled": False})
    exact = app.memories.add("the billing owner is Dana from finance", importance=1).id
    popular = app.memories.add(
        "owner of the coffee machine rota and the office plants", importance=10, tier="critical"
    ).id
    app.store.run_write(
        lambda con: con.execute(
            "UPDATE entries SET access_count = 100000, last_accessed_at = updated_at WHERE id = ?",
            (popular,),
        )
    )
    settle(app)
    for mode in ("auto", "hybrid", "keyword"):
        hits = [h["id"] for h in q(app, "billing owner", mode=mode)["hits"]]
        assert hits[0] == exact, mode
    assert all(0.0 <= h["score"] <= 1.0 for h in q(app, "owner")["hits"])


def test_ties_are_broken_by_relevance_then_recency() -> None:
    c = search_mod.Candidate
    a = c(id=1, final=0.5, components={"relevance": 0.40, "updated_at": 100.0})
    b = c(id=2, final=0.5, components={"relevance": 0.45, "updated_at": 50.0})
    d = c(id=3, final=0.5, components={"relevance": 0.45, "updated_at": 80.0})
    e = c(id=4, final=0.6, components={"relevance": 0.10, "updated_at": 0.0})
    assert [x.id for x in search_mod.order([a, b, d, e])] == [4, 3, 2, 1]


def test_of_hits_the_entity_boost_took_to_its_cap_the_stronger_comes_first() -> None:
    """Two notes that name the query's entity both reach relevance 1 (the boost's cap) and tie
    on every signal; the one the words and the vector backed better was second because its file
    was older (the held-out titles set, "Set up Obsidian Sync"). What the boost took past the
    cap decides before the file's time."""
    from memoryd.search import entityboost

    c = search_mod.Candidate
    weaker = c(id=1, fused=0.88, components={"updated_at": 100.0})
    stronger = c(id=2, fused=0.91, components={"updated_at": 50.0})
    for x in (weaker, stronger):
        entityboost._lift(x, 0.38, 0.4)
        assert x.fused == 1.0 and x.components["relevance"] == 1.0
        x.final = 0.978889
    assert [x.id for x in search_mod.order([weaker, stronger])] == [2, 1]


# --- notes, not fragments -----------------------------------------------------------------------


def test_one_result_per_note_with_its_other_sections(make_app: Any) -> None:
    app = make_app(model=None)
    ws = app.cfg.workspace
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "kafka.md").write_text(
        "# Kafka\n\n## Brokers\n\nkafka brokers run on three hosts\n\n"
        "## Topics\n\nkafka topics are partitioned\n\n## Consumers\n\nkafka consumer lag alert\n"
    )
    (ws / "other.md").write_text("# Other\n\nwe also tried kafka once\n")
    app.indexer.reconcile()
    res = q(app, "kafka consumer lag")
    paths = [h["path"] for h in res["hits"]]
    assert paths == ["kafka.md", "other.md"] or paths == ["kafka.md"]
    top = res["hits"][0]
    assert top["heading_path"][-1] == "Consumers" and top["start_line"] >= 1
    assert {"Brokers", "Topics"} <= {s["heading_path"][-1] for s in top["sections"]}
    assert all(s["start_line"] and s["end_line"] for s in top["sections"])
    raw = q(app, "kafka consumer lag", group="none")
    assert [h["path"] for h in raw["hits"]].count("kafka.md") >= 3
    assert "sections" not in raw["hits"][0]


def test_group_by_note_ranks_a_note_by_its_best_chunk() -> None:
    c = search_mod.Candidate
    chunks = [
        c(id=1, document_id=10, keyword_rank=1),
        c(id=2, document_id=10, keyword_rank=2, vector_rank=3, similarity=0.5),
        c(id=3, document_id=20, keyword_rank=3, vector_rank=1, similarity=0.9),
        c(id=4, document_id=None, vector_rank=2, similarity=0.7),
    ]
    notes = {n.group_key: n for n in group_by_note(chunks)}
    assert notes[("doc", 10)].keyword_rank == 1 and notes[("doc", 10)].vector_rank == 3
    assert notes[("doc", 20)].keyword_rank == 2 and notes[("doc", 20)].vector_rank == 1
    assert notes[("entry", 4)].vector_rank == 2 and notes[("entry", 4)].keyword_rank is None


def test_pending_vectors_are_reported(make_app: Any) -> None:
    from conftest import wait_for

    app = make_app(dailylog={"enabled": False})
    app.memories.add("waiting for its vector")
    app.model.start()
    assert app.model.wait_ready(10)
    wait_for(lambda: q(app, "waiting").get("pending_vectors") == 1)
    app.embedder.run()
    wait_for(lambda: "pending_vectors" not in q(app, "waiting"))
    assert "pending_vectors" not in q(app, "waiting", mode="keyword")


def test_group_must_be_known(make_app: Any) -> None:
    from memoryd.core.errors import InvalidInput

    app = make_app(model=None)
    with pytest.raises(InvalidInput):
        q(app, "x", group="chunks")


# --- snippets are plain text with match ranges (issue 19.8) -------------------------------------


def test_a_snippet_keeps_its_text_and_marks_the_match(make_app: Any) -> None:
    app = make_app(model=None)
    app.memories.add("yesterday **Caroline** went to the support group, see [[deploy]] #ops")
    hit = q(app, "caroline")["hits"][0]
    assert hit["snippet"] == "yesterday **Caroline** went to the support group, see [[deploy]] #ops"
    ((start, end),) = hit["highlights"]
    assert hit["snippet"][start:end] == "Caroline"
    assert q(app, "deploy")["hits"][0]["snippet"].count("[[deploy]]") == 1  # no \\[\\[


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(alphabet="ab *_`#[]<>~|\\\n", max_size=8),
            st.booleans(),
        ),
        max_size=12,
    )
)
def test_rendered_snippets_are_the_text_with_valid_ranges(parts: list[tuple[str, bool]]) -> None:
    marked = "".join(f"{_OPEN}{t}{_CLOSE}" if hit else t for t, hit in parts)
    text, ranges = render_snippet(marked)
    assert text == " ".join("".join(t for t, _ in parts).split())  # the text, nothing escaped
    pos = 0
    for start, end in ranges:  # in order, apart, non-empty, never on a space at either end
        assert pos <= start < end <= len(text)
        assert not text[start].isspace() and not text[end - 1].isspace()
        pos = end
    # the ranges hold exactly the matched characters (adjacent matches are one range)
    matched = "".join("".join(t for t, hit in parts if hit).split())
    assert "".join("".join(text[s:e] for s, e in ranges).split()) == matched


def test_escape_markdown_escapes_a_leading_hash() -> None:
    assert escape_markdown("# not a heading") == "\\# not a heading"
    assert escape_markdown("a*b_c") == "a\\*b\\_c"


# --- over the socket -----------------------------------------------------------------------------


def test_search_over_the_socket_groups_notes_and_validates_group(daemon_factory: Any) -> None:
    d = daemon_factory()
    (d.workspace / "kafka.md").write_text(
        "# Kafka\n\n## Brokers\n\nkafka brokers on three hosts\n\n## Lag\n\nkafka consumer lag\n"
    )
    from conftest import rpc, wait_for

    wait_for(lambda: d.call("search", {"query": "kafka"})["hits"], timeout=20)
    notes = d.call("search", {"query": "kafka"})
    assert len(notes["hits"]) == 1 and notes["hits"][0]["sections"]
    assert 0.0 < notes["hits"][0]["score"] <= 1.0
    chunks = d.call("search", {"query": "kafka", "group": "none"})
    assert len(chunks["hits"]) >= 2
    assert d.call("search", {"query": "zebrafish"})["hits"] == []
    bad = rpc(d.socket, "search", {"query": "kafka", "group": "pages"})
    assert bad["error"]["code"] == -32602


def test_memoryctl_bolds_the_match_ranges_on_a_terminal_only() -> None:
    from memoryd.ctl.output import highlight

    snip, ranges = render_snippet(f"yesterday **{_OPEN}Caroline{_CLOSE}** went a_b")
    assert highlight(snip, True, ranges) == "yesterday **\033[1mCaroline\033[0m** went a_b"
    assert highlight(snip, False, ranges) == snip == "yesterday **Caroline** went a_b"
    assert highlight(snip, True, None) == snip  # an answer without ranges is shown as it is


def test_note_hits_flag_secrets_every_time(make_app: Any) -> None:
    app = make_app(model=None)
    ws = app.cfg.workspace
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "keys.md").write_text("# Keys\n\nthe deploy key is AKIAABCDEFGHIJKLMNOP for now\n")
    (ws / "plain.md").write_text("# Plain\n\nthe deploy key lives in the vault\n")
    app.indexer.reconcile()
    for _ in range(2):  # the second answer comes from the remembered scan
        hits = {h["path"]: h for h in q(app, "deploy key")["hits"]}
        assert hits["keys.md"]["secrets"] == ["aws_access_key"]
        assert "secrets" not in hits["plain.md"]
