"""Typo tolerance: misspelt queries are rewritten to terms the index has, fast, from any thread."""

from __future__ import annotations

import random
import string
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import wait_for
from hypothesis import given, settings
from hypothesis import strategies as st
from work import calls

from memoryd.search.fuzzy import FuzzyMatcher, Vocabulary, common_words, damerau, single_edits
from memoryd.store.db import connect
from memoryd.store.migrations import migrate
from memoryd.store.tokenizer import register

NOTES = [
    "Docker networking: bridge vs host mode",
    "Kubernetes pod scheduling",
    "Postgres replication lag",
    "Firewall rules for ipv6 on port 8443",
]


def add(con: apsw.Connection, *texts: str) -> None:
    for text in texts:
        con.execute(
            "INSERT INTO entries(kind, content, content_hash, type, created_at, updated_at)"
            " VALUES ('memory', ?, ?, 'note', 0, 0)",
            (text, str(hash(text))),
        )


def make_db(texts: Iterable[str], path: Path | str = ":memory:") -> apsw.Connection:
    con = apsw.Connection(str(path))
    register(con)  # as db.connect() does: entries_fts uses the cjk tokenizer
    migrate(con)
    add(con, *texts)
    return con


def found(con: apsw.Connection, match: str) -> list[str]:
    sql = (
        "SELECT e.content FROM entries_fts JOIN entries e ON e.id = entries_fts.rowid"
        " WHERE entries_fts MATCH ? ORDER BY e.id"
    )
    return [r[0] for r in con.execute(sql, (match,))]


@pytest.fixture
def con() -> apsw.Connection:
    return make_db(NOTES)


@pytest.mark.parametrize(
    ("query", "note"),
    [
        ("dokcer netwrking", NOTES[0]),
        ("Dokcer", NOTES[0]),
        ("kuberntes", NOTES[1]),
        ("kubernetse pod", NOTES[1]),
        ("postgress replcation", NOTES[2]),
        ("postgres replcation", NOTES[2]),
        ("firewal", NOTES[3]),
    ],
)
def test_typos_find_their_note(con: apsw.Connection, query: str, note: str) -> None:
    assert found(con, " AND ".join(f'"{t}"' for t in query.split())) == []
    result = FuzzyMatcher().rewrite(con, query.split())
    assert result is not None
    assert found(con, result.match) == [note]


def test_rewrite_result(con: apsw.Connection) -> None:
    result = FuzzyMatcher().rewrite(con, ["dokcer", "netwrking"])
    assert result is not None
    assert result.match == '("dokcer" OR "docker"*) AND ("netwrking" OR "network"*)'
    assert result.corrections == {"dokcer": "docker", "netwrking": "network"}
    assert result.corrected_query == "docker networking"

    result = FuzzyMatcher().rewrite(con, ["postgress", "replcation"])
    assert result is not None
    assert result.corrections == {"postgress": "postgr", "replcation": "replic"}
    assert result.corrected_query == "postgres replication"  # the edited words, not the stems


def test_a_word_cut_short_is_read_as_a_prefix_too(con: apsw.Connection) -> None:
    """ "retro" is one edit from "retry" and the start of "retrospective": both are asked for
    (stop 39: the typo reading alone put the retry note above the retrospective, where keyword
    search, `ftsquery.prefix_match`, finds the retrospective)."""
    add(con, "Sprint retrospective on Friday", "Retry the upload twice")
    result = FuzzyMatcher().rewrite(con, ["retro"])
    assert result is not None
    assert '"retro"*' in result.match and '"retri"*' in result.match
    assert set(found(con, result.match)) == {
        "Sprint retrospective on Friday",
        "Retry the upload twice",
    }
    # a typo that starts no word gets no prefix alternatives
    result = FuzzyMatcher().rewrite(con, ["dokcer"])
    assert result is not None and result.match == '("dokcer" OR "docker"*)'


def test_a_stemmed_typo_needs_no_rewrite(con: apsw.Connection) -> None:
    # "kubernets" and "kubernetes" share the stem "kubernet": keyword search finds it already
    assert found(con, '"kubernets"') == [NOTES[1]]
    assert FuzzyMatcher().rewrite(con, ["kubernets"]) is None


@pytest.mark.parametrize(
    "terms",
    [
        ["docker", "networking"],
        ["kubernetes", "pod"],
        ["zzqxv"],
        ["zzqxv", "qqqqqqq"],
        ["docker", "zzqxv"],  # nothing to correct: an unknown term alone is not a rewrite
        ["hst"],  # under 4 characters
        ["ipv4"],  # has a digit: ipv4 is not a typo of ipv6
        ["8444"],
        [],
    ],
)
def test_nothing_to_correct(con: apsw.Connection, terms: list[str]) -> None:
    assert FuzzyMatcher().rewrite(con, terms) is None


def test_empty_index() -> None:
    assert FuzzyMatcher().rewrite(make_db([]), ["dokcer"]) is None


def test_known_terms_stay_unknown_terms_go(con: apsw.Connection) -> None:
    result = FuzzyMatcher().rewrite(con, ["postgres", "zzqxv", "replcation", "postgres"])
    assert result is not None
    assert result.match == '"postgres" AND ("replcation" OR "replic"*)'
    assert result.corrected_query == "postgres replication"
    assert found(con, result.match) == [NOTES[2]]


def test_alternatives_ranked_by_document_frequency() -> None:
    con = make_db(["replace the disk", "replace the fan", "replication lag"])
    result = FuzzyMatcher().rewrite(con, ["replcation"])
    assert result is not None
    assert result.corrections == {"replcation": "replac"}  # same distance, more documents
    assert result.match == '("replcation" OR "replac"* OR "replic"*)'
    result = FuzzyMatcher().rewrite(con, ["replcation", "lag"])
    assert result is not None and found(con, result.match) == ["replication lag"]


def test_prefix_survives_the_stemmer() -> None:
    # the stem "deploy" as a prefix query would be stemmed to "deploi" and miss "deployment"
    con = make_db(["deployment pipeline"])
    result = FuzzyMatcher().rewrite(con, ["deplyment"])
    assert result is not None
    assert result.corrections == {"deplyment": "deploy"}
    assert '"deplo"*' in result.match
    assert found(con, result.match) == ["deployment pipeline"]


def test_min_similarity(con: apsw.Connection) -> None:
    assert FuzzyMatcher(min_similarity=0.4).rewrite(con, ["netwrking"]) is not None
    assert FuzzyMatcher(min_similarity=0.9).rewrite(con, ["netwrking"]) is None


@pytest.mark.parametrize(
    "terms",
    [
        [""],
        ["🐳"],
        ["🐳", "dokcer"],
        ["dokcer🐳"],
        ["\x00", "\ud800", "\uffff"],
        ["a" * 10_000],
        ["don't", "foo_bar", '"', "*", "(", "NEAR", "AND"],
        ["ДОКЕР", "докер", "日本語", "naïve", "ﬁle"],
        ["dokcer"] * 500,
        [None, 3],  # not even strings
    ],
)
def test_odd_input_never_raises(con: apsw.Connection, terms: list) -> None:
    result = FuzzyMatcher().rewrite(con, terms)
    if result is not None:
        found(con, result.match)  # and the MATCH it builds is valid


@pytest.fixture(scope="module")
def shared_con() -> apsw.Connection:
    return make_db(NOTES)


@settings(max_examples=200, deadline=None)
@given(terms=st.lists(st.text(max_size=30), max_size=6))
def test_any_terms_give_none_or_a_valid_match(shared_con: apsw.Connection, terms: list) -> None:
    result = FuzzyMatcher().rewrite(shared_con, terms)
    if result is not None:
        assert result.corrections
        found(shared_con, result.match)


def test_cache_refresh_and_invalidate(con: apsw.Connection) -> None:
    matcher = FuzzyMatcher(refresh_interval=3600)
    assert matcher.rewrite(con, ["terrafrom"]) is None
    add(con, "Terraform state locking")
    assert matcher.rewrite(con, ["terrafrom"]) is None  # the cached vocabulary
    matcher.invalidate()
    result = matcher.rewrite(con, ["terrafrom"])
    assert result is not None and found(con, result.match) == ["Terraform state locking"]

    eager = FuzzyMatcher(refresh_interval=0)
    assert eager.rewrite(con, ["ansibel"]) is None
    add(con, "Ansible inventory")
    assert eager.rewrite(con, ["ansibel"]) is not None


def test_a_stale_vocabulary_is_rebuilt_in_the_background(con: apsw.Connection) -> None:
    """With a read function (the daemon's store.read) a query never rebuilds: it goes on with
    the snapshot it has while one background thread rebuilds, at most once per min_rebuild_s."""
    builds: list[str] = []

    def read(fn: Any) -> Any:
        builds.append(threading.current_thread().name)
        return fn(con)

    matcher = FuzzyMatcher(read=read, min_rebuild_s=0)
    assert matcher.rewrite(con, ["terrafrom"]) is None  # the first build, on this thread
    add(con, "Terraform state locking")
    matcher.invalidate()
    assert matcher.rewrite(con, ["terrafrom"]) is None  # the old snapshot, at once
    wait_for(lambda: builds and matcher._fresh(matcher._vocab))
    assert builds and all(name.startswith("memoryd-fuzzy") for name in builds)
    result = matcher.rewrite(con, ["terrafrom"])
    assert result is not None and found(con, result.match) == ["Terraform state locking"]
    slow = FuzzyMatcher(read=read, min_rebuild_s=3600)
    slow.rewrite(con, ["terrafrom"])
    slow.invalidate()
    before = len(builds)
    for _ in range(3):
        slow.rewrite(con, ["terrafrom"])
        slow.invalidate()
    slow.close()
    matcher.close()
    assert len(builds) == before + 1  # one rebuild in the interval, however many changes


def test_reader_connections_and_threads(tmp_path: Path, no_leaked_threads: None) -> None:
    path = tmp_path / "memoryd.db"
    writer, _ = connect(path, writer=True)
    migrate(writer)
    add(writer, *NOTES)
    matcher = FuzzyMatcher()
    errors: list[BaseException] = []
    results: list[str | None] = []
    lock = threading.Lock()

    def reader() -> None:
        con, _ = connect(path, writer=False)  # query_only: no DDL, not even in temp
        try:
            for _ in range(30):
                result = matcher.rewrite(con, ["postgress", "replcation"])
                with lock:
                    results.append(found(con, result.match)[0] if result else None)
        except BaseException as exc:
            errors.append(exc)
        finally:
            con.close()

    threads = [threading.Thread(target=reader) for _ in range(6)]
    for t in threads:
        t.start()
    for _ in range(20):
        matcher.invalidate()
        time.sleep(0.002)
    for t in threads:
        t.join()
    writer.close()
    assert not errors
    assert results == [NOTES[2]] * 180


def test_without_the_vocab_table() -> None:
    # a database whose schema lacks entries_vocab: a temp table stands in, where one may be made
    con = make_db(NOTES)
    con.execute("DROP TABLE entries_vocab")
    result = FuzzyMatcher().rewrite(con, ["dokcer"])
    assert result is not None and found(con, result.match) == [NOTES[0]]

    ro = make_db(NOTES)
    ro.execute("DROP TABLE entries_vocab")
    ro.execute("PRAGMA query_only = ON")
    assert FuzzyMatcher().rewrite(ro, ["dokcer"]) is None  # no vocabulary, no exception


def test_damerau() -> None:
    assert damerau("dokcer", "docker") == 1
    assert damerau("netwrk", "network") == 1
    assert damerau("docker", "docker") == 0
    assert damerau("ca", "abc") == 3  # optimal string alignment: no edits inside a transposition
    assert damerau("abcdef", "uvwxyz") == 3  # capped at limit + 1
    assert damerau("", "abc", limit=5) == 3
    rng = random.Random(3)
    for _ in range(2000):  # the early exit never changes an answer within the limit
        a, b = ("".join(rng.choices("abc", k=rng.randint(0, 7))) for _ in range(2))
        assert damerau(a, b, 2) == min(damerau(a, b, 99), 3)


def test_deletion_index_misses_nothing() -> None:
    # brute force over a crowded vocabulary (5 letters, so many neighbours; lengths past PREFIX)
    rng = random.Random(5)
    words = {"".join(rng.choices("abcde", k=rng.randint(3, 12))) for _ in range(400)}
    vocab = Vocabulary.build((w, 1) for w in words)
    for _ in range(80):
        word = rng.choice(sorted(words))
        for _ in range(rng.randint(1, 2)):
            i = rng.randrange(len(word))
            word = rng.choice(
                [
                    word[:i] + word[i + 1 :],
                    word[:i] + rng.choice("abcde") + word[i:],
                    word[:i] + rng.choice("abcde") + word[i + 1 :],
                    word[:i] + word[i + 1 : i + 2] + word[i] + word[i + 2 :],
                ]
            )
        for limit in (1, 2):
            expected = {w: d for w in words if (d := damerau(word, w, limit)) <= limit}
            assert dict(vocab.near(word, limit)) == expected, (word, limit)


def test_work_does_not_grow_with_the_vocabulary() -> None:
    """Fast at 100K terms: counted, not timed (tests/work.py), so a busy machine cannot fail it;
    the wall-clock targets (build < 10 s, rewrite median < 0.2 s) are `python -m bench
    targets`. A rewrite looks corrections up (deletion keys), it does not scan the vocabulary:
    ten times the terms, not more calls; building is linear in the terms."""
    rng = random.Random(42)
    words: set[str] = set()
    while len(words) < 100_000:
        words.add("".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 12))))
    ordered = sorted(words)

    def db(vocabulary: list[str]) -> apsw.Connection:
        con = make_db([])
        with con:
            for i in range(0, len(vocabulary), 200):
                add(con, " ".join(vocabulary[i : i + 200]))
        return con

    tenth = ordered[::10]
    small, big = db(tenth), db(ordered)
    terms = [w for w in tenth if len(w) >= 7]  # in both vocabularies

    def typo(word: str) -> str:
        i = rng.randrange(len(word) - 1)
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]

    queries = [[typo(rng.choice(terms)) for _ in range(3)] for _ in range(30)]
    work = {}
    for name, con in (("small", small), ("big", big)):
        matcher = FuzzyMatcher()
        vocab = matcher.vocabulary(con)
        assert vocab is not None and len(vocab.docs) > (95_000 if name == "big" else 9_500)
        work[name] = 0
        for query in queries:
            count, result = calls(matcher.rewrite, con, query)
            assert result is not None, query
            work[name] += count
    assert work["big"] < 2 * work["small"], work  # a scan would be about 10x

    builds = {}
    for size in (2_000, 8_000):
        con = db(ordered[:: 100_000 // size])
        builds[size], vocab = calls(FuzzyMatcher().vocabulary, con)
        assert vocab is not None and len(vocab.docs) >= size * 0.95
    assert builds[8_000] < 5 * builds[2_000], builds  # 4x the terms, about 4x the work


# --- correctly spelled words are never rewritten (issue 11.7) -----------------------------------


def test_the_common_word_list() -> None:
    words = common_words()
    assert 30_000 < len(words) < 45_000
    assert all(w.isascii() and w.isalpha() and w.islower() and len(w) >= 4 for w in words)
    assert {"charge", "billing", "change", "networking", "running", "london"} <= words
    # typos and the misspellings a web frequency list picks up are not on it
    assert not {"dokcer", "netwrking", "kuberntes", "replcation", "recieve", "definately"} & words


def test_a_correctly_spelled_word_is_not_rewritten() -> None:
    con = make_db(["We need to change the deploy process", "Billing runs on Stripe"])
    # "charge" is in no note, "change" is one edit away: still not a typo
    assert FuzzyMatcher().rewrite(con, ["charge", "billing"]) is None
    assert FuzzyMatcher().rewrite(con, ["charge"]) is None
    # a real typo next to it is still corrected, and the common word left out
    result = FuzzyMatcher().rewrite(con, ["charge", "strpie"])
    assert result is not None and result.corrections == {"strpie": "stripe"}
    assert found(con, result.match) == ["Billing runs on Stripe"]
    # without the list, the old behaviour: charge -> change
    result = FuzzyMatcher(common=frozenset()).rewrite(con, ["charge"])
    assert result is not None and result.corrected_query == "change"


def test_readme_example_is_still_corrected(con: apsw.Connection) -> None:
    result = FuzzyMatcher().rewrite(con, ["dokcer", "netwrking"])
    assert result is not None and result.corrected_query == "docker networking"
    assert found(con, result.match) == [NOTES[0]]


_SAMPLE = sorted(common_words())[::37]


@settings(max_examples=150, deadline=None)
@given(word=st.sampled_from(_SAMPLE), seed=st.integers(0, 2**16))
def test_common_words_are_never_rewritten(word: str, seed: int) -> None:
    """Whatever near neighbours the index holds, a word on the list is never replaced."""
    rng = random.Random(seed)
    neighbours = [w for w in single_edits(word) if w.isalpha() and w != word]
    notes = [" ".join(rng.sample(neighbours, min(5, len(neighbours)))), "unrelated filler text"]
    con = make_db(notes)
    result = FuzzyMatcher().rewrite(con, [word])
    if result is not None:  # only when the index has the word itself under another form
        assert word not in result.corrections


def test_search_does_not_rewrite_a_correct_question(make_app: Any) -> None:
    from memoryd.search.searcher import SearchRequest

    app = make_app(model=None)
    app.memories.add("We need to change the deploy process before friday")
    app.memories.add("docker networking uses a bridge by default")
    res = app.searcher.search(SearchRequest(query="who is in charge of billing?"))
    assert res["mode"] != "fuzzy" and "corrected_query" not in res and res["hits"] == []
    res = app.searcher.search(SearchRequest(query="dokcer netwrking"))
    assert res["mode"] == "fuzzy" and res["corrected_query"] == "docker networking"
    assert "docker" in res["hits"][0]["content"]
