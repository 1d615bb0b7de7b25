"""Keyword search in scripts that are neither English nor CJK (stop 39, walkq14): a word keeps
its combining marks (Hindi, Thai, Arabic, Hebrew...: a piece of a word is not a word), and Thai,
Lao, Khmer and Myanmar, written without spaces, are searched as CJK is (a word inside a sentence
is found where its characters are adjacent, a letter with its marks never cut), on both
backends; migration m016 / v15 gives an older index the same words without embedding again."""

from __future__ import annotations

import unicodedata
from typing import Any

import apsw
import pytest
from conftest import older_store, settle, with_notes
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.search.ftsquery import parse_query
from memoryd.search.searcher import SearchRequest
from memoryd.store import tokenizer

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

NOTES = {
    "thai.md": "# บันทึก\n\nเราใช้ฐานข้อมูลสำหรับเก็บข้อมูลผู้ใช้ทุกวัน ประเทศกินี\n",
    "lao.md": "# ບັນທຶກ\n\nພວກເຮົາໃຊ້ຖານຂໍ້ມູນເພື່ອເກັບຂໍ້ມູນ\n",
    "khmer.md": "# កំណត់ចំណាំ\n\nយើងប្រើមូលដ្ឋានទិន្នន័យសម្រាប់រក្សាទុក\n",
    "myanmar.md": "# မှတ်စု\n\nကျွန်ုပ်တို့သည်ဒေတာဘေ့စ်ကိုအသုံးပြုသည်\n",
    "hindi.md": "# नोट्स\n\nहिन्दी भाषा में कार्यक्रम अच्छा था।\n",
    "arabic.md": "# ملاحظات\n\nمكتبة كبيرة في المدينة.\n",
    "hebrew.md": "# הערות\n\nספרייה גדולה בעיר.\n",
    "tibetan.md": "# ཟིན་ཐོ།\n\nང་ཚོས་གཞི་གྲངས་མཛོད་བེད་སྤྱོད་བྱེད།\n",
    "greek.md": "# Σημειώσεις\n\nΟ ΟΔΥΣΣΕΑΣ ήρθε. Ο Οδυσσέας έφυγε.\n",
    # written decomposed (NFD), as some editors and macOS write it; and the letters NFC never
    # composes back (क़ as U+0958, a CJK compatibility ideograph), as typed
    "nfd.md": unicodedata.normalize("NFD", "# Заметки\n\nМой дом у моря. Ἀθῆναι.\n")
    + "\u0958लम \uf900\n",
    "en.md": "# Running\n\nThe nightly job runs the backup.\n",
}

# a word each note holds, inside a run of its script or between spaces
FOUND = [
    ("ข้อมูล", "thai.md"),  # "data", inside an unspaced sentence, twice
    ("ฐานข้อมูล", "thai.md"),
    ("ຂໍ້ມູນ", "lao.md"),
    ("មូលដ្ឋានទិន្នន័យ", "khmer.md"),  # with coeng (stacked) consonants
    ("ဒေတာဘေ့စ်", "myanmar.md"),
    ("कार्यक्रम", "hindi.md"),  # vowel signs and a virama inside the word
    ("हिन्दी", "hindi.md"),
    ("مكتبة", "arabic.md"),
    ("ספרייה", "hebrew.md"),
    ("གཞི་གྲངས", "tibetan.md"),  # syllables with vowel signs, tsheg between them
    ("οδυσσεας", "greek.md"),  # final sigma: Σ, σ and ς fold alike (PostgreSQL too)
    ("мой", "nfd.md"),  # typed composed, written decomposed
    (unicodedata.normalize("NFD", "мой"), "nfd.md"),
    ("Ἀθῆναι", "nfd.md"),
    ("\u0958लम", "nfd.md"),  # as written (its NFC form is decomposed)
    ("\u0915\u093cलम", "nfd.md"),
    ("\uf900", "nfd.md"),  # as written (its NFC form is U+8C48)
]
# what no note holds as a word, though its letters are there: rg finds none of it
ABSENT = [
    "कि",  # a letter of कार्यक्रम with another vowel sign: was the piece क
    "क",  # the bare letter: was every word that began with it
    "ह",
    "กินข้าว",  # Thai, "eat rice": no note
    "กิน",  # "eat": กินี (Guinea) is กิ นี, not กิ น
    "ข้อมูลลับ",  # "secret data": the note holds ข้อมูล, not this word
    "ใช้ข้อมูลทุกวัน",  # a sentence of words the note holds, not as written
    "ກິນເຂົ້າ",  # Lao, absent
    "ផ្ទះ",  # Khmer "house", absent
    "ကား",  # Myanmar "car", absent
]


@pytest.fixture
def app(make_app: Any) -> Any:
    return with_notes(make_app(), NOTES)


def paths(app: Any, query: str, mode: str = "keyword") -> list[str]:
    res = app.searcher.search(SearchRequest(query=query, mode=mode, limit=20))
    return [h.get("path") for h in res["hits"]]


@pytest.mark.parametrize(("query", "note"), FOUND)
def test_a_word_is_found_inside_its_script(app: Any, query: str, note: str) -> None:
    assert paths(app, query) == [note]
    assert paths(app, f'"{query}"') == [note]  # quoted: the same phrase
    assert note in paths(app, query, mode="auto")


@pytest.mark.parametrize("query", ABSENT)
def test_a_word_no_note_holds_finds_nothing(app: Any, query: str) -> None:
    """No false hit: a piece of a marked word is not that word, and a Thai (Lao, Khmer,
    Myanmar) word or sentence is never searched bigram by bigram."""
    assert parse_query(query).match_any is None
    for mode in ("keyword", "auto"):
        assert paths(app, query, mode=mode) == [], mode


@pytest.mark.parametrize("query", ["ข้อมูล", "มูล", "कार्यक्रम", "ဒေတာ", "Οδυσσέας", "ήρθε"])
def test_highlights_never_cut_a_letter_from_its_marks(app: Any, query: str) -> None:
    res = app.searcher.search(SearchRequest(query=query, mode="keyword", limit=5))
    assert res["hits"] and all(h["highlights"] for h in res["hits"]), res["hits"]
    for hit in res["hits"]:
        snippet = hit["snippet"]
        for a, b in hit["highlights"]:
            assert snippet[a:b] == query, snippet
            # the next character is not a mark of the last highlighted letter
            assert b == len(snippet) or not unicodedata.category(snippet[b]).startswith("M")


def test_english_and_cjk_are_unchanged(app: Any) -> None:
    assert paths(app, "run") == ["en.md"]
    assert paths(app, "backup*") == ["en.md"]


# the step that brought the scripts' words (SQLite, PostgreSQL), and the later one that reads
# every note again for its names' types (m019 / v17: not the scripts step's doing)
BEFORE_THE_SCRIPTS = ("m016_marks_and_unspaced_scripts", "_v15_marks_and_unspaced_scripts")
BEFORE_THE_NOTES_READ_AGAIN = ("m019_types_read_from_the_notes", "_v17_types_read_from_the_notes")


def test_an_older_index_gets_the_new_words_without_embedding_again(
    make_app: Any, backend: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    store = older_store(monkeypatch, request, backend, *BEFORE_THE_SCRIPTS)
    old = with_notes(make_app(**store), NOTES)
    settle(old)
    if backend == "sqlite":  # (PostgreSQL's queries are split in Python: today's words)
        assert paths(old, "कि") == ["hindi.md"]  # the bug: a piece found the word
        assert paths(old, "ข้อมูล") == []  # a word inside a Thai sentence: never found
    old.close()
    monkeypatch.undo()
    older_store(monkeypatch, request, backend, *BEFORE_THE_NOTES_READ_AGAIN)
    new = make_app(**store)  # the same store, migrated
    seen = len(new.model.fake.seen)
    assert paths(new, "कि") == []
    assert paths(new, "ข้อมูล") == ["thai.md"]
    assert paths(new, "run") == ["en.md"]
    assert new.indexer.reconcile().unchanged == len(NOTES)  # nothing read again
    settle(new)
    assert len(new.model.fake.seen) == seen  # nothing embedded again


# --- the tokenizer (SQLite) ---------------------------------------------------------------------


def _tokens(text: str, flags: int = apsw.FTS5_TOKENIZE_DOCUMENT) -> list[tuple[Any, ...]]:
    con = apsw.Connection(":memory:")
    tokenizer.register(con)
    return list(
        con.fts5_tokenizer(tokenizer.NAME, list(tokenizer.BASE))(text.encode(), flags, None)
    )


@pytest.mark.sqlite_only(reason="the SQLite tokenizer itself")
def test_a_letter_keeps_its_marks_and_stacked_letters() -> None:
    assert tokenizer.units("ข้อมูล") == ["ข้", "อ", "มู", "ล"]
    assert tokenizer.units("ន្ន") == ["ន្ន"]  # Khmer coeng: the letter stacked under it
    assert tokenizer.units("数据库") == ["数", "据", "库"]  # CJK: code points, as before
    assert [t[2:] for t in _tokens("कार्यक्रम cafe\u0301")] == [("कार्यक्रम",), ("cafe",)]


@pytest.mark.sqlite_only(reason="the SQLite tokenizer itself")
@settings(max_examples=150, deadline=None)
@given(
    st.one_of(  # one script a text (a mark of one on a letter of another is no grapheme)
        st.text(alphabet=st.sampled_from(list("กขคงจฐนมลอเแใไ่้๊็ิีุูัำ a.")), max_size=40),
        st.text(alphabet=st.sampled_from(list("ँंःािीुूेैोौ्कखगरवँ़ a.")), max_size=40),
        st.text(alphabet=st.sampled_from(list("កខគងមយរលសអ្ាិីុូេែៃោៅំះ a.")), max_size=40),
    )
)
def test_token_offsets_never_cut_a_letter_from_its_marks(text: str) -> None:
    data = text.encode()
    for flags in (apsw.FTS5_TOKENIZE_DOCUMENT, apsw.FTS5_TOKENIZE_QUERY):
        for start, end, *_ in _tokens(text, flags):
            piece = data[start:end].decode()  # on character boundaries
            after = data[end:].decode()
            assert not after or not unicodedata.category(after[0]).startswith("M"), (text, piece)


# --- entities (text alone) ----------------------------------------------------------------------

ENTITY_TEXTS = [
    # a capitalised common word opening a sentence, in a script with no list of common words
    ("Ёлка стоит в зале. Мы ели ёжиков.", set()),
    ("Сегодня мы обсудили бюджет.", set()),
    ("Σήμερα συζητήσαμε τον προϋπολογισμό.", set()),
    # a name: two words, mid-sentence, or one word the text also writes mid-sentence
    ("Ο Νίκος Παπαδόπουλος ήρθε.", {"Νίκος Παπαδόπουλος"}),
    ("Νίκος agreed. Later we met Νίκος again.", {"Νίκος"}),
    ("Вчера пришёл Дмитрий Иванов.", {"Дмитрий Иванов"}),
    # scripts without case: no name is read from capitals, nothing raises
    ("محمد عبد الله وصل إلى القاهرة. राहुल शर्मा आए। สมชาย ใจดี มา ข้อมูล", set()),
]


@pytest.mark.sqlite_only(reason="entities read from text alone")
@pytest.mark.parametrize(("text", "names"), ENTITY_TEXTS)
def test_no_entity_from_a_common_word_opening_a_sentence(text: str, names: set[str]) -> None:
    from memoryd.text.entities import extract

    assert {m.name for m in extract(text)} == names


# --- headings and tags in any script ------------------------------------------------------------

HEADED = {
    "h/thai.md": "# ฐานข้อมูลลูกค้า\n\nbody one\n",
    "h/cjk.md": "# 数据库迁移\n\nbody two\n",
    "h/greek.md": "# Σχέδιο Αθήνα\n\nbody three\n",
    "h/tagged.md": "---\ntags: [café, проект]\n---\nbody four\n",
    "h/ascii.md": "# Kestrel roadmap\n\nbody five\n",
    "h/Дорожная карта.md": "body six, no heading: the file name is the title\n",
}


@pytest.mark.parametrize(
    ("query", "note"),
    [
        ("ลูกค้า", "h/thai.md"),  # a heading's word (and a title's: the file name's on PG)
        ("数据库", "h/cjk.md"),
        ("Αθήνα", "h/greek.md"),
        ("проект", "h/tagged.md"),  # a tag's word
        ("kestrel", "h/ascii.md"),
        ("карта", "h/Дорожная карта.md"),  # a title: no heading in the text
    ],
)
def test_a_heading_or_tag_in_any_script_is_found(make_app: Any, query: str, note: str) -> None:
    """Headings and tags were stored as JSON with \\u escapes, which the keyword index read as
    words ("u0e10u0e32"): no heading or tag but an ASCII one was ever found by its words."""
    app = with_notes(make_app(), HEADED)
    assert paths(app, query) == [note]


def test_an_older_store_with_escaped_headings_finds_them_after_the_upgrade(
    make_app: Any, backend: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    import json

    from memoryd.store import tables

    store = older_store(monkeypatch, request, backend, *BEFORE_THE_SCRIPTS)
    monkeypatch.setattr(tables, "json_list", lambda items: json.dumps(list(items)))  # as then
    old = with_notes(make_app(**store), HEADED)
    settle(old)
    assert paths(old, "проект") == []  # the bug: a tag written "\\u043f..."
    old.close()
    monkeypatch.undo()
    older_store(monkeypatch, request, backend, *BEFORE_THE_NOTES_READ_AGAIN)
    new = make_app(**store)  # migrated
    assert paths(new, "ลูกค้า") == ["h/thai.md"]
    assert paths(new, "проект") == ["h/tagged.md"]
    assert paths(new, "Αθήνα") == ["h/greek.md"]
    assert paths(new, "карта") == ["h/Дорожная карта.md"]
    rec = new.searcher.search(SearchRequest(query="ลูกค้า", mode="keyword"))["hits"][0]
    assert rec["heading_path"] == ["ฐานข้อมูลลูกค้า"]
    assert new.indexer.reconcile().unchanged == len(HEADED)


# --- text cut to a width (snippets without a match, memoryctl's lines, MCP's lines) -------------

CUTS = [
    "ข้อมูลผู้ใช้",  # Thai letters with vowel and tone marks
    "कार्यक्रम क्षत्रिय",  # Devanagari signs and viramas (a conjunct stays whole)
    unicodedata.normalize("NFD", "résumé café"),  # a decomposed accent stays on its letter
    "family 👨\u200d👩\u200d👧 photo 👍🏽 ok",  # ZWJ sequence and skin tone
    "flags 🇯🇵🇫🇷🇩🇪 end",  # regional indicator pairs
    "שָׁלוֹם לְכֻלָּם",  # Hebrew niqqud
]


def _clips() -> list[Any]:
    from memoryd.ctl.output import clip as ctl_clip
    from memoryd.text.clip import clip

    return [clip, ctl_clip]


@pytest.mark.sqlite_only(reason="text alone")
@pytest.mark.parametrize("which", [0, 1], ids=["text.clip", "memoryctl"])
@pytest.mark.parametrize("text", CUTS)
def test_text_is_cut_between_graphemes(text: str, which: int) -> None:
    clip = _clips()[which]
    for width in range(2, len(text) + 2):
        out = clip(text, width)
        assert len(out) <= max(width, 2)
        if out == text:
            continue
        kept = out[:-1]
        assert out.endswith("…") and text.startswith(kept)
        rest = text[len(kept) :]
        # what was left out does not start with a piece of the last grapheme kept
        assert not unicodedata.category(rest[0]).startswith("M"), (width, out)
        assert "\u200d" not in (rest[0], kept[-1:]), (width, out)
        assert not 0x1F3FB <= ord(rest[0]) <= 0x1F3FF, (width, out)
        flags = sum(0x1F1E6 <= ord(c) <= 0x1F1FF for c in kept)
        assert flags % 2 == 0, (width, out)
        assert kept[-1:] != "\u094d", (width, out)  # no virama left hanging


@pytest.mark.sqlite_only(reason="text alone")
def test_the_doors_cut_between_graphemes() -> None:
    from memoryd.agents.formats import _one_line
    from memoryd.ctl.output import one_line
    from memoryd.search.snippets import plain_snippet

    text = "ก" * 152 + "ข้อมูล" * 10  # a cut at 159 characters falls on a tone mark
    for out in (plain_snippet(text), one_line(text, 160), _one_line(text, 160)):
        assert out.endswith("…") and text.startswith(out[:-1])
        assert not unicodedata.category(text[len(out) - 1]).startswith("M"), out[-4:]
