"""Chinese, Japanese and Korean keyword search: the cjk tokenizer, its migration, and search."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest
from conftest import wait_for
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.search.ftsquery import parse_query
from memoryd.search.searcher import SearchRequest
from memoryd.store import SqliteStore, tokenizer
from memoryd.store.db import connect
from memoryd.store.migrations import MIGRATIONS, m004_cjk_tokenizer, migrate

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

NOTES = {
    "zh.md": "# 决定\n\n我们决定用PostgreSQL作为主数据库。李明负责迁移，周六晚上停机两小时。\n",
    "ja.md": "# 予定\n\n明日の勉強会は渋谷で開催します。テーマはKubernetesの運用です。\n",
    "ko.md": "# 회의\n\n데이터베이스를 새 서버로 옮깁니다.\n",
    "en.md": "# Running\n\nThe nightly job runs the backup and we keep running it weekly.\n",
}


def q(app: Any, query: str, **kw: Any) -> dict[str, Any]:
    return app.searcher.search(SearchRequest(query=query, **kw))


def paths(res: dict[str, Any]) -> list[str]:
    return [h.get("path") for h in res["hits"]]


@pytest.fixture
def app(make_app: Any, tmp_path: Path) -> Any:
    a = make_app(model=None)
    ws = tmp_path / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    for name, text in NOTES.items():
        (ws / name).write_text(text, encoding="utf-8")
    a.indexer.reconcile()
    return a


def tokens(text: str, flags: int = apsw.FTS5_TOKENIZE_DOCUMENT) -> list[tuple[Any, ...]]:
    con = apsw.Connection(":memory:")
    tokenizer.register(con)
    return list(
        con.fts5_tokenizer(tokenizer.NAME, list(tokenizer.BASE))(text.encode(), flags, None)
    )


# --- the tokenizer ------------------------------------------------------------------------------


def test_cjk_runs_become_positions_with_bigrams() -> None:
    assert tokens("用PostgreSQL数据库") == [
        (0, 3, "用"),
        (3, 13, "postgresql"),
        (13, 16, "数", "数据"),
        (16, 19, "据", "据库"),
        (19, 22, "库"),
    ]
    assert tokens("数据库", apsw.FTS5_TOKENIZE_QUERY) == [
        (0, 3, "数据"),
        (3, 6, "据库"),
        (6, 9, "库"),
    ]
    assert tokens("a李b") == [(0, 1, "a"), (1, 4, "李"), (4, 5, "b")]


@pytest.mark.parametrize(
    "text", ["Running dogs, cafés and naïve e-mail", "résumé — “quoted” ünïcödé ÆØÅ", ""]
)
def test_text_without_cjk_is_the_builtin_tokenizers(text: str) -> None:
    con = apsw.Connection(":memory:")
    tokenizer.register(con)
    base = con.fts5_tokenizer(tokenizer.BASE[0], list(tokenizer.BASE[1:]))
    for flags in (apsw.FTS5_TOKENIZE_DOCUMENT, apsw.FTS5_TOKENIZE_QUERY):
        assert tokens(text, flags) == list(base(text.encode(), flags, None))


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=60)
    | st.text(
        alphabet=st.sampled_from(list("数据库李明停机渋谷勉強会のテ데이터 aZé1.、。ー々")),
        max_size=60,
    )
)
def test_any_text_tokenizes_on_character_boundaries(text: str) -> None:
    utf8 = text.encode("utf-8", "surrogatepass")
    con = apsw.Connection(":memory:")
    tokenizer.register(con)
    tok = con.fts5_tokenizer(tokenizer.NAME, list(tokenizer.BASE))
    for flags in (apsw.FTS5_TOKENIZE_DOCUMENT, apsw.FTS5_TOKENIZE_QUERY, apsw.FTS5_TOKENIZE_AUX):
        last = 0
        for start, end, *toks in tok(utf8, flags, None):
            assert last <= start < end <= len(utf8)
            utf8[start:end].decode("utf-8")  # whole characters: valid UTF-8 boundaries
            assert toks and all(toks)
            last = start


def test_invalid_utf8_does_not_raise() -> None:
    con = apsw.Connection(":memory:")
    tokenizer.register(con)
    tok = con.fts5_tokenizer(tokenizer.NAME, list(tokenizer.BASE))
    for data in (b"\xe6\x95", b"\xff\xfe\xe6\x95\xb0\xe6", "数据".encode() + b"\x80abc"):
        tok(data, apsw.FTS5_TOKENIZE_DOCUMENT, None)


# --- search -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "note"),
    [
        ("数据库", "zh.md"),  # a three-character word inside a sentence
        ("李明", "zh.md"),
        ("停机", "zh.md"),
        ("渋谷", "ja.md"),  # kanji before a kana particle
        ("勉強会", "ja.md"),
        ("テーマ", "ja.md"),  # katakana with the long vowel mark
        ("데이터베이스", "ko.md"),  # Hangul with a particle attached
        ("李明 PostgreSQL", "zh.md"),  # mixed English and CJK, in the note and in the query
        ("用PostgreSQL", "zh.md"),  # a query run cut where the note's is not
        ("Kubernetes 運用", "ja.md"),
        ('"李明负责迁移"', "zh.md"),
    ],
)
def test_keyword_search_finds_cjk_words(app: Any, query: str, note: str) -> None:
    res = q(app, query, mode="keyword")
    assert res["mode"] == "keyword"
    assert paths(res)[:1] == [note], res["hits"]


def test_cjk_word_not_in_notes_finds_nothing(app: Any) -> None:
    assert q(app, "仓库", mode="keyword")["hits"] == []  # shares 库, not the word
    assert q(app, "据数", mode="keyword")["hits"] == []  # both characters, not in this order
    assert q(app, "東京", mode="keyword")["hits"] == []


def test_an_absent_cjk_word_is_not_matched_as_scattered_bigrams(app: Any) -> None:
    """Issue 19.7: a word matches where its characters are adjacent. Each of these words has
    its bigrams or characters in a note, but not together: 0 keyword hits, in every mode."""
    for word in ("数据仓库", "负责数据", "渋谷運用", "ボールト"):
        parsed = parse_query(word)
        assert parsed.match_any is None, word  # a word: never offered bigram by bigram
        for mode in ("keyword", "auto"):
            assert q(app, word, mode=mode)["hits"] == [], (word, mode)


def test_a_cjk_question_finds_its_note_through_its_bigrams(app: Any) -> None:
    parsed = parse_query("李明负责什么")  # "what is Li Ming responsible for?"
    assert parsed.match == '"李明负责什么"'
    assert parsed.match_any is not None and '"李明"' in parsed.match_any
    assert paths(q(app, "李明负责什么", mode="keyword"))[:1] == ["zh.md"]


def test_english_search_is_unchanged(app: Any) -> None:
    assert paths(q(app, "running", mode="keyword")) == ["en.md"]
    assert paths(q(app, "run", mode="keyword")) == ["en.md"]  # stemming still works
    assert paths(q(app, "postgresql", mode="keyword")) == ["zh.md"]


@pytest.mark.parametrize("query", ["数据库", "李明", "渋谷", "勉強会", "데이터베이스"])
def test_highlights_land_on_character_boundaries(app: Any, query: str) -> None:
    hit = q(app, query, mode="keyword")["hits"][0]
    snippet = hit["snippet"]
    assert [snippet[a:b] for a, b in hit["highlights"]] == [query], snippet
    # ranges between characters, nothing cut (a snippet is one line of plain text)
    for piece in snippet.split("…"):
        assert " ".join(piece.split()) in " ".join(hit["content"].split())


def test_fuzzy_vocabulary_reads_the_cjk_index(app: Any) -> None:
    vocab = app.store.read(app.fuzzy.vocabulary)
    assert {"数据", "库", "李明", "run"} <= set(vocab.docs)
    # a misspelt English word next to a CJK word: the CJK word is kept, the typo corrected
    res = q(app, "李明 postgrsql", mode="fuzzy")
    assert res["mode"] == "fuzzy" and paths(res)[:1] == ["zh.md"]


# --- the schema ---------------------------------------------------------------------------------


def test_m004_rebuilds_an_existing_index(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    con, _ = connect(path, writer=True)
    version = MIGRATIONS.index(m004_cjk_tokenizer)  # a database from before m004
    con.execute("PRAGMA foreign_keys = OFF")  # as migrate() runs the steps
    for step in MIGRATIONS[:version]:
        step(con)
    con.execute(f"PRAGMA user_version = {version}")
    con.execute("PRAGMA foreign_keys = ON")
    con.execute(
        "INSERT INTO entries(kind, content, content_hash, type, created_at, updated_at)"
        " VALUES ('memory', '我们的数据库很慢', 'h', 'note', 0, 0)"
    )
    sql = "SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?"
    assert con.execute(sql, ('"数据库"',)).fetchall() == []  # unicode61: one token per run
    migrate(con, path)
    assert con.execute(sql, ('"数据库"',)).fetchall() == [(1,)]
    ddl = con.execute("SELECT sql FROM sqlite_master WHERE name = 'entries_fts'").fetchall()[0][0]
    assert tokenizer.OPTION in ddl and "content = 'entries'" in ddl
    con.execute("INSERT INTO entries_fts(entries_fts) VALUES ('integrity-check')")
    # the triggers still feed the new table
    con.execute("UPDATE entries SET content = '停机两小时' WHERE id = 1")
    assert con.execute(sql, ('"停机"',)).fetchall() == [(1,)]
    assert con.execute(sql, ('"数据库"',)).fetchall() == []
    con.close()


def test_a_connection_without_the_tokenizer_fails_clearly_and_changes_nothing(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "m.db")
    with store.write() as con:
        con.execute(
            "INSERT INTO entries(kind, content, content_hash, type, created_at, updated_at)"
            " VALUES ('memory', '李明负责迁移', 'h', 'note', 0, 0)"
        )
    store.close()
    raw = apsw.Connection(str(tmp_path / "m.db"))  # not through db.connect()
    assert raw.execute("SELECT count(*) FROM entries").fetchall() == [(1,)]  # plain tables work
    for sql in (
        "SELECT rowid FROM entries_fts WHERE entries_fts MATCH 'x'",
        "INSERT INTO entries(kind, content, content_hash, type, created_at, updated_at)"
        " VALUES ('memory', 'more', 'h2', 'note', 0, 0)",
        "DELETE FROM entries",
    ):
        with pytest.raises(apsw.SQLError, match="no such tokenizer: cjk"):
            raw.execute(sql)
    raw.close()
    store = SqliteStore(tmp_path / "m.db")
    try:
        with store.write() as con:
            con.execute("INSERT INTO entries_fts(entries_fts) VALUES ('integrity-check')")
        assert store.read(lambda c: c.execute("SELECT count(*) FROM entries").fetchall()) == [(1,)]
        hits = store.read(
            lambda c: c.execute(
                "SELECT rowid FROM entries_fts WHERE entries_fts MATCH '\"李明\"'"
            ).fetchall()
        )
        assert hits == [(1,)]
    finally:
        store.close()


def test_migration_needs_the_tokenizer(tmp_path: Path) -> None:
    from memoryd.core.errors import StoreError

    con = apsw.Connection(str(tmp_path / "x.db"))
    with pytest.raises(StoreError, match="cjk"):
        migrate(con)
    version = con.execute("PRAGMA user_version").fetchall()[0][0]
    assert version == MIGRATIONS.index(m004_cjk_tokenizer)
    con.close()


# --- the daemon ---------------------------------------------------------------------------------


def test_memoryctl_search_finds_cjk_words_through_the_daemon(daemon_factory: Any) -> None:
    d = daemon_factory()
    for name, text in NOTES.items():
        (d.workspace / name).write_text(text, encoding="utf-8")

    def found(query: str) -> list[str]:
        out = d.ctl("--json", "search", query, "--mode", "keyword")
        hits = json.loads(out.stdout)["hits"]
        assert out.returncode == (0 if hits else 1), out.stderr  # exit 1: no results (yet)
        return [h.get("path") for h in hits]

    wait_for(lambda: found("数据库") == ["zh.md"], timeout=10)
    for query, note in [
        ("李明", "zh.md"),
        ("停机", "zh.md"),
        ("渋谷", "ja.md"),
        ("勉強会", "ja.md"),
    ]:
        assert found(query) == [note]
    assert d.stop() == 0
