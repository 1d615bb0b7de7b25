"""User query syntax -> FTS5: supported forms work, nothing raises."""

from __future__ import annotations

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.search.ftsquery import (
    MAX_TERMS,
    parse_query,
    prefix_match,
    quote_term,
    unit_term,
)
from memoryd.store import tokenizer


def fts_table() -> apsw.Connection:
    """The index's own tokenizer (cjk over porter unicode61), as entries_fts has it."""
    c = apsw.Connection(":memory:")
    tokenizer.register(c)
    c.execute(f"create virtual table t using fts5(content, heading_path, tags, {tokenizer.OPTION})")
    return c


@pytest.fixture(scope="module")
def con() -> apsw.Connection:
    c = fts_table()
    for text in [
        "deploy checklist friday",
        "checklist deploy order",
        "café au lait",
        "docker networking guide",
        "e-mail from bob",
        "kubernetes deployment",
        "我们的数据库很慢，李明负责",
        "Lena: the leaving party is at the Crown",
        "ledgerctl freeze the writers in the eu region",
    ]:
        c.execute("insert into t(content) values (?)", (text,))
    return c


def rows(con: apsw.Connection, query: str) -> list[str]:
    match = parse_query(query).match
    if match is None:
        return []
    return sorted(r[0] for r in con.execute("select content from t where t match ?", (match,)))


def test_forms(con: apsw.Connection) -> None:
    assert rows(con, '"deploy checklist"') == ["deploy checklist friday"]
    assert rows(con, "deploy checklist") == ["checklist deploy order", "deploy checklist friday"]
    assert rows(con, "deploy*") == [
        "checklist deploy order",
        "deploy checklist friday",
        "kubernetes deployment",
    ]
    assert rows(con, "friday OR order") == ["checklist deploy order", "deploy checklist friday"]
    assert rows(con, "checklist -friday") == ["checklist deploy order"]
    assert rows(con, "checklist NOT friday") == ["checklist deploy order"]
    assert rows(con, "cafe") == ["café au lait"]
    assert rows(con, "network") == ["docker networking guide"]
    assert rows(con, "e-mail") == ["e-mail from bob"]
    assert rows(con, "networking:guide") == ["docker networking guide"]  # no column filter
    assert parse_query("-only -negations").match is None
    assert parse_query("   ").match is None
    assert quote_term('say "hi"') == '"say ""hi"""'


def test_possessives_and_command_line_options(con: apsw.Connection) -> None:
    """Issue 19.2: "Lena's" asks about Lena (a chat writes "Lena: ..."), and `--region` is an
    option of a command line, its word asked about, not excluded."""
    assert rows(con, "Lena's party") == ["Lena: the leaving party is at the Crown"]
    assert parse_query("Lena's").match == '"Lena"'
    assert rows(con, "ledgerctl freeze --region eu") == [
        "ledgerctl freeze the writers in the eu region"
    ]
    assert parse_query("deploy --dry-run").negated == ()
    assert parse_query("deploy -friday").negated == ("friday",)


@pytest.mark.parametrize(
    ("query", "negated", "found"),
    [
        ("ledgerctl `freeze -eu`", (), True),  # an option in code: its word asked about
        ("`ledgerctl freeze` -region", ("region",), False),  # outside the code: an exclusion
        ('`freeze "eu"` ledgerctl', (), True),  # quotes in code: the code's own
        ("`ledgerctl NOT freeze`", (), False),  # an operator in code: a word (no row has it)
        ("`ledgerctl OR nothing` freeze", (), False),  # no OR inside code: all words needed
        ("unbalanced ` ledgerctl -freeze", ("freeze",), False),  # a lone backtick: no code
    ],
)
def test_code_spans_are_plain_words(
    con: apsw.Connection, query: str, negated: tuple[str, ...], found: bool
) -> None:
    """A question quoting a command ("Can I use `go build -cover`?") excluded `cover`, the very
    word it asks about: inside backticks, dashes, quotes and operators are the code's own."""
    assert parse_query(query).negated == negated
    assert (rows(con, query) == ["ledgerctl freeze the writers in the eu region"]) is found


@pytest.mark.parametrize(
    ("query", "match"),
    [
        ("https://example.com/docs/api", '"https example com docs api"'),  # a URL
        ("http://intranet.local:8080/wiki", '"http intranet local 8080 wiki"'),
        ("14:30", '"14 30"'),  # a time
        ("fe80::1ff:fe23", '"fe80 1ff fe23"'),  # an IPv6 address
        ("C:\\Users\\jane", '"C Users jane"'),  # a Windows path
        ("title:draft", '"title draft"'),  # a column filter: plain text, its words together
        ("Ctrl+Shift+P", '"Ctrl Shift P"'),  # a key chord
        ("a+b=c", '"a b c"'),
        ("x^2", '"x 2"'),
        ("foo.bar()", '"foo bar"'),  # as `.`, `-`, `/` and `_` always did
        ("src/app/main.py", '"src app main py"'),
        ("Note: deploy", '"Note" AND "deploy"'),  # at a token's edge: nothing to join
        ("+1 deploy", '"1" AND "deploy"'),
        ("C++", '"C"'),  # symbols the index does not hold (BENCHMARKS.md: left)
        ("deploy :: ^ + :)", '"deploy"'),
        ("f(x)", '"f" AND "x"'),  # brackets separate: a call's arguments go apart
    ],
)
def test_inner_punctuation_keeps_a_tokens_words_together(query: str, match: str) -> None:
    """`:`, `+` and `^` inside a token join its words as `.`, `-` and `/` do (a phrase, as the
    tokenizer reads the text): `14:30` or `title:draft` asked for each of their words
    anywhere, and found every note with a 14 in it."""
    assert parse_query(query).match == match


def test_a_joined_token_is_not_found_where_its_words_are_apart() -> None:
    c = fts_table()
    for text in ["the title:draft key", "the title of a draft", "at 14:30", "room 14 of 30"]:
        c.execute("insert into t(content) values (?)", (text,))
    assert rows(c, "title:draft") == ["the title:draft key"]
    assert rows(c, "14:30") == ["at 14:30"]


def test_a_date_is_found_inside_a_date_time() -> None:
    """`2026-03-05` in a log stamped `2026-03-05T10:00:00Z`, which the tokenizer reads as
    `2026 03 05t10 00 00z`: the date's last number may go on (unit_term); a version does not."""
    c = fts_table()
    for text in ["at 2026-03-05T10:00:00Z GET", "v2.3.10 released", "on 2026-03-05 we met"]:
        c.execute("insert into t(content) values (?)", (text,))
    assert rows(c, "2026-03-05") == ["at 2026-03-05T10:00:00Z GET", "on 2026-03-05 we met"]
    assert rows(c, "2026/03/05") == rows(c, "2026-03-05")
    assert rows(c, "v2.3.1") == []
    assert unit_term("2026 03 05") == '"2026 03 05"*' and unit_term("2 3 1") == '"2 3 1"'


def test_words_past_the_term_limit_are_counted() -> None:
    """A pasted page is matched by its first MAX_TERMS words and phrases; the rest are counted
    (the answer's `terms_ignored`), operators not."""
    words = [f"w{i}" for i in range(MAX_TERMS + 7)]
    assert parse_query(" ".join(words)).ignored == 7
    assert parse_query(" ".join(words[:MAX_TERMS]) + " OR AND -- ... x").ignored == 1
    assert parse_query("deploy monitoring").ignored == 0


def test_cjk_words_and_questions(con: apsw.Connection) -> None:
    assert rows(con, "数据库") == ["我们的数据库很慢，李明负责"]
    assert rows(con, "李明 -friday") == ["我们的数据库很慢，李明负责"]
    assert rows(con, "据数") == []
    p = parse_query("李明负责什么")  # a whole question, no spaces: no note has it verbatim
    assert p.match == '"李明负责什么"' and p.terms == ("李明负责什么",)
    # its bigrams, less those with a grammatical character (什么 "what")
    assert p.match_any == '"李明负责什么" OR "李明" OR "明负" OR "负责"'
    assert (
        parse_query("大阪のホテルはどこ").match_any
        == '"大阪のホテルはどこ" OR "大阪" OR "ホテ" OR "テル"'
    )
    assert parse_query("数据库").match_any is None  # three characters: most often one word
    assert parse_query('"李明负责什么"').match_any is None  # quoted: the phrase only


def test_terms_and_any_match() -> None:
    p = parse_query('What "did we" decide -about')
    assert p.terms == ("what", "did", "we", "decide") and p.negated == ("about",)
    assert p.match_any is not None and "decide" in p.match_any and "what" not in p.match_any
    assert parse_query("auth decision owner").match_any == '"auth" OR "decision" OR "owner"'
    assert parse_query("what is it").match_any is None  # stop words only: strict query only


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("ab \"*-()^:+.,OR ANDNOTNEAR\\'é🙂\x00\t")), max_size=80)
    | st.text(max_size=80)
)
def test_no_input_raises(text: str) -> None:
    c = fts_table()
    c.execute("insert into t(content) values ('a b or and not near 数据库')")
    p = parse_query(text)
    for match in (p.match, p.match_any):
        if match is not None:
            c.execute("select rowid from t where t match ?", (match,)).fetchall()


def test_prefix_match_of_words_no_text_holds(con: apsw.Connection) -> None:
    """Issue 19.2: a query none of whose words a text holds is searched by their prefixes."""
    expr = prefix_match(parse_query("when is the deplo?"))
    assert expr is not None
    found = sorted(r[0] for r in con.execute("select content from t where t match ?", (expr,)))
    assert found == ["checklist deploy order", "deploy checklist friday", "kubernetes deployment"]
    excluded = prefix_match(parse_query("deplo -kubernetes"))
    assert excluded is not None
    assert "kubernetes deployment" not in [
        r[0] for r in con.execute("select content from t where t match ?", (excluded,))
    ]
    # stop words, short words, numbers and CJK words are not searched as prefixes
    assert prefix_match(parse_query("what is the eu")) is None
    assert prefix_match(parse_query("数据 2207")) is None
    assert prefix_match(parse_query('"deplo checklist"')) is None  # a phrase asks for the words
