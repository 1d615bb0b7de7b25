"""Symbols are words (stop 42, branch sym18; text/symbolchars.py): an emoji, an arrow, a currency
sign, a check mark is found by keyword search where `rg -i -F -w` finds it, one token a grapheme
(an emoji with its skin tone, variation selector or ZWJ parts, a flag, a keycap), never glued to
the word beside it; the same on SQLite (the `cjk` tokenizer) and PostgreSQL (memoryd_symbols),
through every door of a query: alone, quoted, in a phrase, excluded, with a typo beside it."""

from __future__ import annotations

from typing import Any

import apsw
import pytest
from conftest import indexed_by_older, older_store, settle, with_notes

from memoryd.search.ftsquery import parse_query
from memoryd.search.request import letterless, wordless
from memoryd.search.searcher import SearchRequest
from memoryd.store import tokenizer
from memoryd.store.entries import Filters
from memoryd.text import symbolchars

ZWJ = "\u200d"
FAMILY = f"👨{ZWJ}👩{ZWJ}👧"
NOTES = {
    "launch.md": "# Launch\n\n🚀launch on Friday, then 🎉 party.\n",
    "family.md": f"# Trip\n\nThe {FAMILY} trip to 🇩🇪 Berlin, step 1\ufe0f\u20e3 first.\n",
    "thumbs.md": "# Review\n\nLooks good 👍🏽 and I \u2764\ufe0f it.\n",
    "flow.md": "# Flow\n\nbuild → test → ship; map x→y; error ±3; ∑ of rows.\n",
    "money.md": "# Money\n\nIt costs €5, or 12 £; 20 °C outside; Brand™ ✓ done, ★★★.\n",
    "box.md": "# Box\n\n┌─ box ─┐ drawn with lines.\n",
    "plain.md": "# Plain\n\nA launch without any symbol; build and test and ship. Berlin in May.\n",
}
# every member of the class: (query, the notes that write it: rg -w, or with the word beside it)
MEMBERS = [
    ("🚀", {"launch.md"}),  # glued to a word
    ("🎉", {"launch.md"}),
    (FAMILY, {"family.md"}),  # a ZWJ sequence, one token
    ("🇩🇪", {"family.md"}),  # a flag: two regional indicators
    ("1\ufe0f\u20e3", {"family.md"}),  # a keycap
    ("👍🏽", {"thumbs.md"}),  # a skin tone
    ("👍", {"thumbs.md"}),  # folded as a diacritic is: rg finds 👍 in 👍🏽 too
    ("\u2764\ufe0f", {"thumbs.md"}),  # a variation selector
    ("\u2764", {"thumbs.md"}),
    ("→", {"flow.md"}),  # Sm
    ("±", {"flow.md"}),
    ("∑", {"flow.md"}),
    ("€", {"money.md"}),  # Sc
    ("£", {"money.md"}),
    ("°C", {"money.md"}),  # So beside a letter: the phrase ° c
    ("™", {"money.md"}),
    ("✓", {"money.md"}),  # dingbats
    ("★", {"money.md"}),
    ("─", {"box.md"}),  # box drawing
    ("x→y", {"flow.md"}),  # glued on both sides: the phrase x → y
]


def _tokens(text: str, query: bool = False) -> list[str]:
    """The tokens each at a place of its own (`cjk symbolsapart`, a snippet's table: the
    index colocates a symbol with a word, test_a_symbol_takes_no_place)."""
    con = apsw.Connection(":memory:")
    tokenizer.register(con)
    tok = con.fts5_tokenizer(tokenizer.NAME, list(tokenizer.APART_ARGS))
    flags = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT
    utf8 = text.encode()
    out = []
    for start, end, *words in tok(utf8, flags, None):
        out.append(words[0])
        piece = utf8[start:end].decode()  # on character boundaries, a grapheme whole
        if symbolchars.graphemes(piece):
            assert symbolchars.is_symbol(piece), (text, piece)
    return out


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("🚀 launch", ["🚀", "launch"]),
        ("🚀launch", ["🚀", "launch"]),
        ("launch🚀", ["launch", "🚀"]),
        ("\u2764\ufe0flaunch", ["\u2764", "launch"]),  # the selector is no word's start
        ("👍🏽 ok", ["👍", "ok"]),
        (f"{FAMILY} x", [FAMILY, "x"]),
        ("🇩🇪🇯🇵", ["🇩🇪", "🇯🇵"]),
        ("1\ufe0f\u20e3", ["1\u20e3"]),
        ("°C", ["°", "c"]),
        ("€5 5€", ["€", "5", "5", "€"]),
        ("★★★", ["★", "★", "★"]),
        ("a→b ±3 ∑x ™ ✓ ─┼", ["a", "→", "b", "±", "3", "∑", "x", "™", "✓", "─", "┼"]),
        ("数据🚀库", ["数", "据", "🚀", "库"]),  # (the first token of each position)
        ("bad \ufffd byte", ["bad", "byte"]),  # a replacement character is nothing typed
        ("C++ $HOME x^2 a=b", ["c", "home", "x", "2", "a", "b"]),  # ASCII: separators still
    ],
)
def test_a_symbol_is_a_token_of_its_own(text: str, tokens: list[str]) -> None:
    assert _tokens(text) == tokens
    if not tokenizer.has_cjk(text):  # (a CJK run's query positions are its bigrams)
        assert _tokens(text, query=True) == tokens


def _simple_tokens(text: str) -> list[tuple[Any, ...]]:
    """What `cjk symbols` gives, written the plain way: every grapheme a token, and every token
    the base gives cut at the graphemes it overlaps, its parts outside them tokenized again."""
    con = apsw.Connection(":memory:")
    tokenizer.register(con)
    base = con.fts5_tokenizer(tokenizer.NAME, list(tokenizer.BASE))
    utf8, flags = text.encode(), apsw.FTS5_TOKENIZE_DOCUMENT
    spans, offset, pos = [], 0, 0
    for m in symbolchars.graphemes(text):
        offset += len(text[pos : m.start()].encode())
        spans.append((offset, offset + len(m.group().encode()), symbolchars.key(m.group())))
        offset, pos = spans[-1][1], m.end()
    out = list(spans)
    for t in base(utf8, flags, None):
        inside = [sp for sp in spans if sp[0] < t[1] and sp[1] > t[0]]
        if not inside:
            out.append(t)
            continue
        cut = t[0]
        for a, b, _ in [*inside, (t[1], t[1], "")]:
            if a > cut:
                out += [(cut + x[0], cut + x[1], *x[2:]) for x in base(utf8[cut:a], flags, None)]
            cut = max(cut, b)
    return sorted(out, key=lambda t: t[0])


def test_the_tokenizer_agrees_with_the_plain_way() -> None:
    import random

    pool = ["🚀", "👍", "🏽", "\ufe0f", "\u200d", "🇩", "🇪", "1", "#", "\u20e3", "a", " ", "→"]
    pool += ["\u0338", "€", "é", "数", "据", "\U000e0067", "🏴", "\u0301", "x"]
    rng = random.Random(42)
    con = apsw.Connection(":memory:")
    tokenizer.register(con)
    tok = con.fts5_tokenizer(tokenizer.NAME, list(tokenizer.APART_ARGS))
    for _ in range(3000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(1, 16)))
        got = [tuple(t) for t in tok(text.encode(), apsw.FTS5_TOKENIZE_DOCUMENT, None)]
        assert got == _simple_tokens(text), text


def test_a_symbol_takes_no_place() -> None:
    """The index's symbols are colocated with a word (FTS5 counts no colocated token in a
    column's size): a text with a symbol ranks as the same text without it, and a phrase
    with a symbol is found where the text writes it, and only there."""
    con = apsw.Connection(":memory:")
    tokenizer.register(con)
    con.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, {tokenizer.OPTION})")
    texts = ["hen party £40 each", "hen party 40 each", "🚀launch on day 🚀 two", "★★★ hotel"]
    texts += ["launch on day two 🚀", "rated ★★ hotel", "x → y", "y → x"]
    con.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(texts))
    bm = dict(con.execute("SELECT rowid, bm25(t) FROM t WHERE t MATCH 'party'").fetchall())
    assert bm[0] == bm[1]

    def found(q: str) -> set[int]:
        return {r for (r,) in con.execute("SELECT rowid FROM t WHERE t MATCH ?", [q])}

    assert found('"🚀 launch"') == {2}  # the text's first symbol, before its first word
    assert found('"day 🚀"') == {2}  # (not "two 🚀")
    assert found('"day 🚀 two"') == {2}
    assert found('"two 🚀"') == {4}
    assert found('"★★★"') == {3} and found('"★★"') == {3, 5} and found('"★★ hotel"') == {3, 5}
    assert found('"★★★ hotel"') == {3} and found('"rated ★"') == {5} and found("★") == {3, 5}
    assert found('"x → y"') == {6} and found('"→ x"') == {7} and found("→") == {6, 7}
    assert found('"£ 40"') == {0} and found('"party £"') == {0}


def test_a_table_made_before_m021_keeps_its_tokens() -> None:
    """`cjk` without `symbols` (a table m021 has not made again) tokenizes as it did: its rows
    are deleted with the tokens they were indexed with."""
    con = apsw.Connection(":memory:")
    tokenizer.register(con)
    old = con.fts5_tokenizer(tokenizer.NAME, list(tokenizer.BASE))
    got = [t[2] for t in old("🚀 launch".encode(), apsw.FTS5_TOKENIZE_DOCUMENT, None)]
    assert got == ["launch"]


def test_the_query_keeps_its_symbols() -> None:
    assert wordless("\ufe0f") and wordless("\u200d") and wordless("...")
    assert not wordless("🚀") and letterless("🚀") and not letterless("1\ufe0f\u20e3")
    parsed = parse_query("🚀launch")
    assert parsed.match == '"🚀 launch"' and parsed.terms == ("🚀", "launch")
    assert parse_query("launch -🚀").excluded == ('"🚀"',)


pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


@pytest.fixture
def app(make_app: Any) -> Any:
    made = with_notes(make_app(), NOTES)
    settle(made)
    return made


def _hits(app: Any, query: str, mode: str = "keyword", kind: str | None = None) -> list[Any]:
    req = SearchRequest(query=query, mode=mode, limit=20, filters=Filters(kind=kind))
    return list(app.searcher.search(req)["hits"])


@pytest.mark.parametrize(("query", "notes"), MEMBERS)
def test_every_symbol_is_found_where_the_notes_write_it(
    app: Any, query: str, notes: set[str]
) -> None:
    for q in (query, f'"{query}"'):
        hits = _hits(app, q, kind="chunk")
        assert {h["path"] for h in hits} == notes, q
    for hit in _hits(app, query, kind="chunk"):  # the highlight holds the whole grapheme
        ranges = hit.get("highlights") or []
        marked = [hit["snippet"][a:b] for a, b in ranges]
        assert any(symbolchars.graphemes(m) for m in marked), (hit["snippet"], marked)
        for g in symbolchars.graphemes(hit["snippet"]):  # never a part of one
            cut = [(a, b) for a, b in ranges if a < g.end() and b > g.start()]
            assert all(a <= g.start() and g.end() <= b for a, b in cut), (g.group(), cut)


def test_the_word_beside_a_symbol_is_a_word(app: Any) -> None:
    """`launch` finds "🚀launch" (rg -w does), `Berlin` the note of 🇩🇪 Berlin."""
    assert {h["path"] for h in _hits(app, "launch", kind="chunk")} == {"launch.md", "plain.md"}
    assert {h["path"] for h in _hits(app, "test", kind="chunk")} == {"flow.md", "plain.md"}


def test_every_door_of_a_query_reads_its_symbols(app: Any) -> None:
    def paths(q: str) -> set[str]:
        return {h["path"] for h in _hits(app, q, kind="chunk")}

    assert paths("launch -🚀") == {"plain.md"}  # excluded
    assert paths("launch NOT 🚀") == {"plain.md"}
    assert paths('"🚀launch on"') == {"launch.md"}  # a phrase with a symbol
    assert paths("🎉 OR ★") == {"launch.md", "money.md"}
    assert paths("🚀 party") == {"launch.md"}
    # the typo tier corrects the word and keeps the symbol (never "corrected", never dropped)
    fuzzy = app.searcher.search(SearchRequest(query="🚀 lanch", mode="fuzzy", limit=20))
    assert {h["path"] for h in fuzzy["hits"]} == {"launch.md"}
    # symbols alone: keywords answer, no vector neighbours pad the answer
    for mode in ("auto", "hybrid"):
        assert {h["path"] for h in _hits(app, "🚀", mode=mode)} == {"launch.md"}
    assert _hits(app, "🚀", mode="vector") == []
    for q in ("\ufe0f", "\u200d", "🦄"):  # no symbol, or one no note writes: nothing
        for mode in ("auto", "keyword", "hybrid", "fuzzy", "vector"):
            assert _hits(app, q, mode=mode) == [], (q, mode)
    why = lambda q: app.searcher.search(SearchRequest(query=q, explain=True)).get("unanswered")  # noqa: E731
    assert why("🦄") == "no text contains '🦄'"
    assert why("\ufe0f") == "the query has no letter, digit or symbol to search for"
    assert why("🚀") is None


def test_the_backends_write_the_same_words(app: Any, backend: str) -> None:
    """PostgreSQL writes each symbol as the word Python does (symbolchars.spelled), so its
    index and its queries agree; SQLite's `cjk` tokens are their keys."""
    texts = [t for t in NOTES.values()] + ["🚀🎉", "a\u20e3", "x\ufffd", "🏽", "#\ufe0f\u20e3"]
    if backend != "postgres":
        for text in texts:
            want = [symbolchars.key(m.group()) for m in symbolchars.graphemes(text)]
            assert [t for t in _tokens(text) if symbolchars.is_symbol(t)] == want
        return
    for text in texts:
        got = app.store.read(lambda con, t=text: con.execute("SELECT memoryd_symbols(?)", [t]))
        assert str(got.fetchone()[0]).split() == symbolchars.spelled(text).split(), text


def test_an_older_store_finds_its_symbols_after_the_upgrade(
    make_app: Any, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, backend: str
) -> None:
    """m021 / v19 make the keyword rows again: the notes indexed before are found by their
    symbols, without being read or embedded again."""
    store = older_store(
        monkeypatch, request, backend, "m021_symbols_as_words", "_v19_symbols_as_words"
    )
    indexed_by_older(make_app, store, NOTES)
    old = make_app(**store)
    assert _hits(old, "🚀") == []  # (the older index: no symbol is a word)
    old.close()
    monkeypatch.undo()
    new = make_app(**store)
    assert new.indexer.reconcile().indexed == 0  # nothing read again
    for query, notes in MEMBERS:
        assert {h["path"] for h in _hits(new, query, kind="chunk")} == notes, query
    assert {h["path"] for h in _hits(new, "launch", kind="chunk")} == {"launch.md", "plain.md"}
    settle(new)
    assert new.model.fake.seen == []  # nothing embedded again


def test_a_tag_of_symbols_is_found_by_them(make_app: Any) -> None:
    """Obsidian takes emoji and other symbols in tags (`#🚀`, `tags: [✓]`): the tag is found
    by its symbol, with or without `#`, and filters as written."""
    notes = {
        "fm.md": "---\ntags: [🚀, done✓]\n---\n# Front\n\nNothing else here.\n",
        "inline.md": "# Inline\n\nA line with the tag #★ only.\n",
        "other.md": "# Other\n\nA line about rockets and stars.\n",
    }
    app = with_notes(make_app(), notes)
    settle(app)
    assert {h["path"] for h in _hits(app, "#🚀")} == {"fm.md"}
    assert {h["path"] for h in _hits(app, "🚀")} == {"fm.md"}
    assert {h["path"] for h in _hits(app, "✓")} == {"fm.md"}  # a tag's words: done, ✓
    assert {h["path"] for h in _hits(app, "#★")} == {"inline.md"}
    req = SearchRequest(query="nothing", mode="keyword", filters=Filters(tags=("🚀",)))
    assert {h["path"] for h in app.searcher.search(req)["hits"]} == {"fm.md"}
