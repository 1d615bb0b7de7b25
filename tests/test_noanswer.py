"""No answer, no hits (issue 11.3): keyword coverage, absent identifiers, CJK queries, queries no
text shares a word with; and an answerable paraphrase still finds its note."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import q, settle

from memoryd.search import ranking
from memoryd.search.answerability import code_names, names
from memoryd.search.ranges import Numbered, names_in_range, numbered
from memoryd.search.ranking import (
    Candidate,
    Scale,
    absent_identifier,
    admitted,
    coverage,
    followers,
    identifier,
    idf,
    order,
    query_units,
    several_chunks,
    steadied,
)
from memoryd.store.entries import Filters

MINILM = ranking.SIMILARITY_SCALE["sentence-transformers/all-MiniLM-L6-v2-int8"]

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


# --- pure parts -----------------------------------------------------------------------------------


def test_query_units_keep_topical_words_phrases_and_cjk_bigrams() -> None:
    assert query_units("How do I fix ERR_CONN_4030?") == ["fix", "err_conn_4030"]
    assert query_units("db-replica-05.eu") == ["db replica 05 eu"]
    # a possessive is its name (chats write "Tom: ..." or "Tom said", rarely "Tom's")
    assert query_units("Who was Tom's manager?") == ["tom", "manager"]
    assert query_units("the Joneses' car") == ["joneses", "car"]
    assert query_units("-draft notes OR ideas") == ["notes", "ideas"]
    assert query_units("ledgerctl freeze --region eu") == ["ledgerctl", "freeze", "region", "eu"]
    assert query_units("停车场在哪里？") == ["停车", "车场"]  # 在哪里: grammar, not topic
    assert query_units("用PostgreSQL数据库迁移") == ["数据", "据库", "库迁", "迁移", "postgresql"]
    assert query_units("用PostgreSQL数据库") == ["用postgresql数据库"]  # short runs: one phrase
    assert query_units("what is it") == []


def test_identifiers_are_letters_and_digits_joined_not_words_or_numbers() -> None:
    for unit in ("err_auth_2207", "db replica 05 eu", "inc 2026 014"):
        assert identifier(unit), unit
    for unit in ("sev1", "42", "ipv6", "marathon", "tom s", "covid 19", "top 10"):
        assert not identifier(unit), unit
    assert absent_identifier({"fix": 0, "err_auth_2207": 0}) == "err_auth_2207"
    assert absent_identifier({"err_auth_2202": 3, "widget": 0}) is None


def test_coverage_weighs_rare_words_most() -> None:
    weights = {"maya": idf(20, 100), "deposit": idf(0, 100)}
    assert idf(0, 100) > idf(20, 100) > idf(90, 100) > 0
    assert coverage(["maya"], weights) < 0.5 < coverage(["deposit"], weights)
    assert coverage(["maya", "deposit", "other"], weights) == pytest.approx(1.0)
    assert coverage([], {}) == 0.0


def test_admission_for_cjk_queries_and_for_queries_no_text_shares_a_word_with() -> None:
    def c(i: int, **kw: Any) -> Candidate:
        return Candidate(id=i, **kw)

    pool = [
        c(1, keyword_rank=1, coverage=0.4, similarity=0.3),  # holds a query word
        c(2, vector_rank=1, coverage=0.0, similarity=0.55),  # close, shares no word
        c(3, vector_rank=2, coverage=0.0, similarity=0.25),  # above `alone` (0.20) only
    ]
    assert [k.id for k in admitted(pool, MINILM)] == [1, 2, 3]
    # MiniLM finds every CJK text alike: a CJK query's hits need a keyword unit
    assert [k.id for k in admitted(pool, MINILM, cjk=True)] == [1]
    # a keyword-pool hit on a question's grammar bigrams only (coverage 0) is no backing
    assert admitted([c(4, keyword_rank=1, coverage=0.0, similarity=0.5)], MINILM, cjk=True) == []
    # no candidate holds a query word, after typo correction: similarity must reach `unkeyed`
    # (a model that sets one; MiniLM does not: see BENCHMARKS.md, "No answer")
    scale = Scale(0.10, 0.90, 0.20, None, 0.30)
    unkeyed = [c(2, vector_rank=1, coverage=0.0, similarity=0.55), pool[2]]
    assert [k.id for k in admitted(unkeyed, scale, corrected=True)] == [2]
    assert [k.id for k in admitted(unkeyed, scale, corrected=False)] == [2, 3]
    assert [k.id for k in admitted(unkeyed, MINILM, corrected=True)] == [2, 3]
    # every model has the constants; an uncalibrated one falls back to its `alone`
    assert ranking.similarity_scale("fake/64").unkeyed is not None
    assert admitted(unkeyed, Scale(0.1, 0.9, 0.5), corrected=True, cjk=True)[0].id == 2


def test_a_vector_neighbour_that_holds_a_word_of_the_question_is_backed_by_it() -> None:
    """Issue 19.2: a word of the question backs a hit in every mode, so vector mode keeps a
    neighbour under the `alone` floor that holds one (the whole-note cosine baseline has no
    floor at all); one that holds none still needs `alone`."""
    held = Candidate(id=1, vector_rank=3, coverage=0.3, similarity=0.12)
    bare = Candidate(id=2, vector_rank=2, coverage=0.0, similarity=0.15)
    assert [k.id for k in admitted([held, bare], MINILM)] == [1]


def test_an_answered_question_lists_its_weaker_neighbours_last_an_unanswered_one_none() -> None:
    """Issue 19.2: once a question has a hit, its other neighbours above the model's floor
    follow every backed hit (the whole-note cosine baseline lists them too), their scores
    capped at the last backed hit's; a question with no hit gets none (issue 19.6: `alone`
    still decides whether it is answered), and neither does a CJK question."""
    held = Candidate(id=1, vector_rank=3, coverage=0.3, similarity=0.12, final=0.02)
    close = Candidate(id=2, vector_rank=1, coverage=0.0, similarity=0.45, final=0.3)
    weak = Candidate(id=3, vector_rank=2, coverage=0.0, similarity=0.15, final=0.03)
    pool = [held, close, weak]
    hits = admitted(pool, MINILM)
    assert [k.id for k in hits] == [1, 2]
    tail = followers(pool, hits)
    assert [k.id for k in tail] == [3] and weak.tail
    assert [k.id for k in order(hits + tail)] == [2, 1, 3]  # 3 outscored 1, and follows it
    assert weak.final == held.final == 0.02
    assert followers([weak], admitted([weak], MINILM)) == []  # nothing answers: nothing listed
    assert followers(pool, hits, cjk=True) == []


def test_a_short_chunk_ranks_by_a_similarity_pulled_toward_its_notes() -> None:
    """Issue 19.2: two lines at the end of a chat match a short question by a few words; a chunk
    shorter than STEADY_CHARS ranks by its similarity pulled toward the length-weighted mean of
    its note's chunks in the pool, in proportion to how short it is. A chunk alone in its note,
    or long enough, keeps its own."""
    short = Candidate(id=1, document_id=7, vector_rank=1, similarity=0.52)
    body = Candidate(id=2, document_id=7, vector_rank=5, similarity=0.40)
    alone = Candidate(id=3, document_id=8, vector_rank=2, similarity=0.50)
    pool = [short, body, alone]
    assert several_chunks(pool) == [1, 2]
    half = ranking.STEADY_CHARS // 2
    steadied(pool, {1: half, 2: 3 * half})
    mean = (0.52 * half + 0.40 * 3 * half) / (4 * half)  # 0.43
    assert short.similarity == pytest.approx(0.5 * 0.52 + 0.5 * mean)
    assert short.components["chunk_similarity"] == 0.52
    assert body.similarity == 0.40 and alone.similarity == 0.50  # long enough; alone


def test_coverage_weighs_the_keyword_part_beside_vectors_only() -> None:
    """Issue 19.2: beside a vector pool, a match on a question's rare words outranks a better
    BM25 on its common words (coverage cubed, a soft "every word first"); with keywords alone
    BM25 ranks as it is (it already weighs the words by IDF)."""
    from memoryd.core.sections import SearchConfig

    s = SearchConfig()
    rare = Candidate(id=1, keyword_rank=2, bm25=-4.0, coverage=0.9, similarity=0.4)
    common = Candidate(id=2, keyword_rank=1, bm25=-5.0, coverage=0.3, similarity=0.4)
    hybrid = {c.id: ranking.relevance(c, s, MINILM, -5.0)[0] for c in (rare, common)}
    assert hybrid[1] > hybrid[2]
    alone = {
        c.id: ranking.relevance(c, s, MINILM, -5.0, coverage_power=0.0)[0] for c in (rare, common)
    }
    assert alone[2] > alone[1]


def test_names_are_capitalised_words_that_no_sentence_start_explains() -> None:
    assert names("How do I migrate a Redis cluster to Valkey?") == ["redis", "valkey"]
    assert names("RabbitMQ to Kafka") == ["rabbitmq", "kafka"]  # inner capital: a name anywhere
    assert names("Valkey notes. What about Terraform?") == ["terraform"]  # sentence starts
    assert names("What was Fatima's time in Lisbon?") == ["fatima", "lisbon"]
    # excluded words, identifiers (evidence.py's), acronyms under four letters, lowercase words
    assert names("-Valkey redis") == []
    assert names("ERR_AUTH_2207 on S3 or db-replica-05.eu") == []
    assert names("What is the SLA for the public API's uptime?") == []
    assert names("how do i migrate to valkey") == []
    assert code_names("compute_fx_rate() and f(x)") == ["compute_fx_rate"]
    assert code_names("ERR_AUTH_2207 db-replica-05.eu covid-19") == ["err_auth_2207"]


# --- through the searcher (fake embedder) -------------------------------------------------------


def _notes(app: Any, files: dict[str, str]) -> None:
    """Write the notes into the app's workspace and index them (a reconcile)."""
    for rel, text in files.items():
        path = app.cfg.workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    app.indexer.reconcile()


def _runbooks(app: Any) -> None:
    _notes(
        app,
        {
            "runbooks/err-auth-2202.md": "# ERR_AUTH_2202\n\nTo fix ERR_AUTH_2202 the client"
            " must refresh its session token.\n",
            "runbooks/networking.md": "# Container networking\n\nContainers talk over a bridge"
            " network by default.\n",
        },
    )


@pytest.mark.parametrize("mode", ["auto", "hybrid", "keyword", "vector"])
def test_a_query_of_nothing_but_an_absent_identifier_returns_no_hits_and_names_the_mode(
    make_app: Any, mode: str
) -> None:
    app = make_app(dailylog={"enabled": False})
    _runbooks(app)
    settle(app)
    res = q(app, "ERR_AUTH_2207?", mode=mode, explain=True)
    assert res["hits"] == [], res["hits"]
    # the mode that answered: with no neighbour above the fake's floor, auto and hybrid say keyword
    assert res["mode"] == mode or (mode in ("auto", "hybrid") and res["mode"] == "keyword")
    assert res["unanswered"] == "no text contains 'err_auth_2207'"
    found = q(app, "How do I fix ERR_AUTH_2202?", mode=mode)["hits"]
    assert [h["path"] for h in found][:1] == ["runbooks/err-auth-2202.md"]


def test_a_numbered_identifier_is_named_by_a_range_around_its_number() -> None:
    sheet = "| Kafka | kafka-broker-01.eu to 06.eu, kafka-broker-01.us to 03.us |"
    assert numbered("kafka broker 02 us") == Numbered(("kafka", "broker"), "02", ("us",))
    assert numbered("err_auth_2207") is None and numbered("2207") is None
    assert names_in_range(sheet, Numbered(("kafka", "broker"), "02", ("us",)))
    assert names_in_range(sheet, Numbered(("kafka", "broker"), "05", ("eu",)))
    # outside every range, an end of one (the text holds it as written), another region
    assert not names_in_range(sheet, Numbered(("kafka", "broker"), "09", ("eu",)))
    assert not names_in_range(sheet, Numbered(("kafka", "broker"), "03", ("us",)))
    assert not names_in_range(
        sheet.replace("01.us", "01.ca"), Numbered(("kafka", "broker"), "02", ("us",))
    )
    assert names_in_range("web-01..web-12 serve it", Numbered(("web",), "07", ()))
    assert names_in_range("on web-01 through web-12", Numbered(("web",), "07", ()))
    # a list of namesakes is no range
    assert not names_in_range(
        "ERR_AUTH_2202 and ERR_AUTH_2210", Numbered(("err", "auth"), "2207", ())
    )


def _sheet(app: Any) -> None:
    _notes(
        app,
        {
            "notes/oncall.md": "# On-call sheet\n\n| Kafka | kafka-broker-01.eu to 06.eu,"
            " kafka-broker-01.us to 03.us |\n",
            "notes/disk.md": "# Disk\n\nkafka-broker-04.eu ran out of burst credits in March.\n",
        },
    )


@pytest.mark.parametrize("mode", ["auto", "hybrid", "keyword", "vector"])
def test_an_absent_numbered_identifier_inside_a_written_range_is_answered_by_that_note_alone(
    make_app: Any, mode: str
) -> None:
    """Issue 19.3: "kafka-broker-01.us to 03.us" names kafka-broker-02.us; its namesake
    (kafka-broker-04.eu) does not answer, and a number outside every range answers nothing."""
    app = make_app(dailylog={"enabled": False})
    _sheet(app)
    settle(app)
    res = q(app, "kafka-broker-02.us", mode=mode, explain=True)
    assert [h["path"] for h in res["hits"]] == ["notes/oncall.md"], res["hits"]
    assert "unanswered" not in res and res["absent"] == ["kafka broker 02 us"]
    held = q(app, "kafka-broker-04.eu", mode=mode)["hits"][0]["score"]
    assert 0 < res["hits"][0]["score"] < held  # lowered: the note names it only as a range
    gone = q(app, "kafka-broker-09.eu", mode=mode, explain=True)
    assert gone["hits"] == [] and gone["unanswered"] == "no text contains 'kafka broker 09 eu'"
    if mode == "vector":
        return  # the fake embedder finds the long note below the floor: nothing more to filter
    # a filter restricts the answer, and the score stays what the unfiltered search gave
    _notes(
        app,
        {
            "ops/hosts.md": "# Hosts\n\nEvery host we run, with its owner, its rack and its role"
            " in the platform, as the team keeps it: kafka-broker-01.us to 03.us.\n"
        },
    )
    settle(app)
    every = q(app, "kafka-broker-02.us", mode=mode)["hits"]
    assert {h["path"] for h in every} == {"notes/oncall.md", "ops/hosts.md"}
    only = q(app, "kafka-broker-02.us", mode=mode, filters=Filters(path_prefix="ops"))["hits"]
    assert [(h["path"], h["score"]) for h in only] == [
        (h["path"], h["score"]) for h in every if h["path"] == "ops/hosts.md"
    ]


@pytest.mark.parametrize("mode", ["auto", "hybrid", "keyword"])
def test_an_absent_identifier_beside_present_words_lowers_the_score_not_the_answer(
    make_app: Any, mode: str
) -> None:
    """Issue 19.3: no veto. "fix" is in a note: the answer keeps it, scored lower than the
    same question about the identifier the note does hold."""
    app = make_app(dailylog={"enabled": False})
    _runbooks(app)
    settle(app)
    res = q(app, "How do I fix ERR_AUTH_2207?", mode=mode, explain=True)
    assert [h["path"] for h in res["hits"]][:1] == ["runbooks/err-auth-2202.md"]
    assert "unanswered" not in res and res["absent"] == ["err_auth_2207"]
    held = q(app, "How do I fix ERR_AUTH_2202?", mode=mode)["hits"][0]["score"]
    assert 0 < res["hits"][0]["score"] < held


def test_a_no_answer_query_offers_the_typo_correction(make_app: Any) -> None:
    app = make_app(dailylog={"enabled": False})
    _runbooks(app)
    settle(app)
    # the identifier asked about is in no note: 0 hits, and the correction of the typo is
    # offered ("err" is in the index, "4040" is not correctable, "netwrking" -> networking)
    res = q(app, "ERR_NET_4040 netwrking")
    assert res["hits"] == [] and res["mode"] == "keyword"
    assert res["suggestion"] == "err networking"


def _redis(app: Any) -> None:
    _notes(
        app,
        {
            "runbooks/redis.md": "# Redis cluster\n\nTo migrate a Redis cluster, snapshot it and"
            " restore on the new host.\nThen run reconcile_ledger() on the new host.\n"
        },
    )


@pytest.mark.parametrize("mode", ["auto", "hybrid", "keyword"])
def test_a_name_no_note_holds_lowers_the_score_and_alone_returns_no_hits(
    make_app: Any, mode: str
) -> None:
    app = make_app(dailylog={"enabled": False})
    _redis(app)
    settle(app)
    # Valkey is in no note and no common word: alone it answers nothing
    for query, first in (
        ("What about Valkey?", "valkey"),
        ("ERR_NET_4040 and Valkey", "err_net_4040"),
    ):
        res = q(app, query, mode=mode, explain=True)
        assert res["hits"] == [], (query, res["hits"])
        assert res["unanswered"] == f"no text contains {first!r}"
    # beside words the notes hold, it lowers the score and never empties the answer (19.3)
    res = q(app, "How do I migrate a Redis cluster to Valkey?", mode=mode, explain=True)
    assert [h["path"] for h in res["hits"]][:1] == ["runbooks/redis.md"]
    assert res["absent"] == ["valkey"] and "unanswered" not in res
    without = q(app, "How do I migrate a Redis cluster?", mode=mode)["hits"]
    assert res["hits"][0]["score"] < without[0]["score"]
    # the same question without the name, a misspelt name (typo correction finds "redis"), and
    # a name that is a common word the notes may simply not use, are answered in full
    for query in (
        "How do I migrate a Redis cluster?",
        "How do I migrate a Reddis cluster?",
        "How do I migrate the Redis cluster in Frankfurt?",
    ):
        hits = q(app, query, mode=mode)["hits"]
        assert [h["path"] for h in hits][:1] == ["runbooks/redis.md"], query


@pytest.mark.parametrize("mode", ["auto", "keyword"])
def test_a_code_name_no_note_holds_returns_no_hits_alone(make_app: Any, mode: str) -> None:
    app = make_app(dailylog={"enabled": False})
    _redis(app)
    settle(app)
    # no digits, unlike ERR_AUTH_2207, but joined by underscores: a name, and no note has it
    res = q(app, "reconcile_wallets()", mode=mode, explain=True)
    assert res["hits"] == [] and res["unanswered"] == "no text contains 'reconcile_wallets'"
    res = q(app, "reconcile_wallets() on the new host", mode=mode, explain=True)
    assert res["absent"] == ["reconcile_wallets"] and res["hits"]  # "new host" is in a note
    hits = q(app, "reconcile_ledger() on the new host", mode=mode)["hits"]
    assert [h["path"] for h in hits][:1] == ["runbooks/redis.md"]


def test_an_absent_rare_word_does_not_empty_a_question(make_app: Any) -> None:
    """Issue 19.3's example: a claim ending "in Passeriformes" keeps its note."""
    app = make_app(dailylog={"enabled": False})
    _notes(
        app,
        {
            "birds.md": "# Sex determination\n\nSex determination in somatic cells of songbirds"
            " is autonomous.\n",
            "fish.md": "# Zebrafish\n\nZebrafish fins regrow.\n",
        },
    )
    settle(app)
    res = q(app, "sex determination in somatic cells in Passeriformes", explain=True)
    assert [h["path"] for h in res["hits"]][:1] == ["birds.md"]
    assert res["absent"] == ["passeriformes"]


def test_a_query_no_text_holds_as_typed_finds_the_words_it_cuts_short(make_app: Any) -> None:
    """Issue 19.2: "retro" is in no note; with keywords alone its prefix finds the
    retrospectives; a query with a word some note holds as typed is not widened, nor is one
    beside a vector pool (the neighbours answer there)."""
    app = make_app(dailylog={"enabled": False})
    _notes(
        app,
        {
            "cadence.md": "# Meeting cadence\n\nSprint planning is every second Monday;"
            " retrospectives are on the Friday before.\n",
            "retry.md": "# Retries\n\nThe client retries three times.\n",
        },
    )
    settle(app)
    res = q(app, "when is the retro", mode="keyword")
    assert "cadence.md" in [h["path"] for h in res["hits"]]
    assert q(app, "when is the retro", mode="hybrid")["hits"] == []
    # "client" is in a note as typed: nothing is widened, so "retro" finds nothing more
    assert [h["path"] for h in q(app, "client retro", mode="keyword")["hits"]] == ["retry.md"]


def test_coverage_is_explained_per_hit(make_app: Any) -> None:
    app = make_app(dailylog={"enabled": False})
    _runbooks(app)
    settle(app)
    hits = q(app, "session token refresh", explain=True)["hits"]
    assert hits[0]["path"] == "runbooks/err-auth-2202.md"
    assert hits[0]["explain"]["coverage"] == pytest.approx(1.0)


# --- the real model ---------------------------------------------------------------------------


@pytest.mark.model
def test_real_model_no_answer_and_an_answerable_paraphrase(make_app: Any) -> None:
    app = make_app(model="real", dailylog={"enabled": False})
    _runbooks(app)
    for text in [
        "Maya viewed a flat in Walthamstow but there was mould behind the wardrobe.",
        "Tom signed up for the Lisbon marathon in October.",
        "The quarterly budget review is on Tuesday.",
    ]:
        app.memories.add(text)
    app.start()
    assert app.model.wait_ready(60), app.model.reason
    settle(app)
    # nothing in the notes is about any of these: no padding with the nearest neighbours
    for query in ("banana bread recipe", "zebrafish", "ERR_AUTH_2207"):
        res = q(app, query)
        assert res["hits"] == [], (query, res["hits"])
        assert res["mode"] in ("keyword", "vector", "hybrid", "fuzzy")
    # an answerable paraphrase that shares no word with its note still finds it
    res = q(app, "What was wrong with the apartment she looked at?")
    assert "mould" in res["hits"][0]["content"]
    res = q(app, "which race is Tom running?")
    assert "marathon" in res["hits"][0]["content"]


def test_query_units_remembered_are_a_fresh_list_each_time() -> None:
    """query_units keeps the last queries' units (issue 23.3): a caller that changes the list
    it got changes nothing for the next caller."""
    first = query_units("deploy the rollback plan")
    first.append("changed")
    assert query_units("deploy the rollback plan") == ["deploy", "rollback", "plan"]


@pytest.mark.parametrize(
    ("query", "units"),
    [
        ("10.9.9.9", {"10 9 9 9"}),  # an address
        ("nobody@example.com", {"nobody example com"}),
        ("https://nothing.example/x", {"https nothing example x"}),
        ("what lives in (src/lib/none.rs)?", {"src lib none rs"}),  # in a sentence
        ("Ctrl+Alt+Q", {"ctrl alt q"}),
        ("title:nothing", {"title nothing"}),
        ("2031-01-01", {"2031 01 01"}),  # numbers in three parts
        ("#release-train", {"release train"}),  # a tag, a mention
        ("@nobody", {"nobody"}),
        ("e-mail", set()),  # prose: a note may write "email"
        ("state-of-the-art", set()),
        ("covid-19", set()),
        ("deadc0de", set()),
        ("deploy -10.9.9.9", set()),  # excluded, not asked about
    ],
)
def test_literals_are_exact_strings_no_prose_writes(query: str, units: set[str]) -> None:
    """A literal no text holds answers nothing, as an identifier does (answerability.py)."""
    from memoryd.search.answerability import literal_units

    assert literal_units(query) == units
