"""Entity extraction's fast paths (issue 20.6) give what the plain forms they replace give: each
test holds the plain form and compares, on generated text."""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate

from conftest import texts_of
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.text import entity_spans as spans
from memoryd.text.mdblocks import TAG_BODY

_MIXED_TEXT = texts_of("aAzZqQ09-_ .#\n\t\"'`@/é日", 160)


def _starts(text: str) -> list[int]:
    return list(accumulate((len(x) + 1 for x in text.split("\n")[:-1]), initial=0))


@settings(max_examples=400, deadline=None)
@given(_MIXED_TEXT)
def test_pair_gates_give_the_bits_of_their_patterns(text: str) -> None:
    """line_shapes finds CamelCase and a digit after a letter or "-" as two bytes of classes;
    the patterns it replaced, one match a line, set the same bits."""
    plain = (
        (re.compile(r"[A-Z](?<=[a-z][A-Z]).*"), spans.CAMEL_B),
        (re.compile(r"[0-9](?<=[A-Za-z-][0-9]).*"), spans.DIGIT_B),
    )
    starts = _starts(text)
    want = [0] * len(starts)
    for rx, bit in plain:
        for m in rx.finditer(text):
            want[bisect_right(starts, m.start()) - 1] |= bit
    got = spans.line_shapes(text, starts)
    pair_bits = spans.CAMEL_B | spans.DIGIT_B
    assert [b & pair_bits for b in got] == want


_WORDISH = texts_of("aZ09 '’@#.-_()\t\"“”「」éÉßİǅﬁ", 40)


@settings(max_examples=400, deadline=None)
@given(_WORDISH)
def test_canonical_key_and_display_name_fast_path(name: str) -> None:
    """An ASCII name of letters, digits and spaces skips NFKC, the strips and the possessive:
    the same key and display name as the plain path gives."""
    import unicodedata

    def plain_key(s: str) -> str:
        s = unicodedata.normalize("NFKC", s).strip(spans._STRIP).lstrip("@")
        s = spans.POSSESSIVE.sub("", s).strip(spans._STRIP)
        s = "".join(spans._fold(c) for c in s) if not s.isascii() else s
        return " ".join(s.casefold().split())

    def plain_display(s: str) -> str:
        s = unicodedata.normalize("NFKC", s).strip(spans._STRIP).lstrip("@")
        return " ".join(spans.POSSESSIVE.sub("", s).strip(spans._STRIP).split())

    for s in (name, name.replace("'", " "), "A" + name.strip() + "b"):
        assert spans.canonical_key.__wrapped__(s) == plain_key(s)
        assert spans.display_name.__wrapped__(s) == plain_display(s)


_LINE = texts_of("#aAZz09.-_ \t@/\"'`()jsNETio", 80, lines=False)


@settings(max_examples=400, deadline=None)
@given(_LINE)
def test_patterns_that_look_behind_after_their_first_character(line: str) -> None:
    """#tags and Node.js-like names: the patterns that open with the character they start with
    match what the plain ones (opening with the look behind) match."""
    plain = {
        "_TAG": r"(?:^|(?<=\s))#(" + TAG_BODY + ")",  # the tags' one grammar (mdblocks)
        "_DOTTED_NAME": r"(?<![\w.])[A-Z][A-Za-z0-9]*\.(?:js|JS|ts|NET|io|IO|ai|py|rb|rs|jl)"
        r"(?!\w|\.\w)",
    }
    for name, pattern in plain.items():
        rx = getattr(spans, name)
        for text in (line, "#" + line, "a.js " + line, line + " #x"):
            want = [(m.span(), m.groups()) for m in re.finditer(pattern, text)]
            assert [(m.span(), m.groups()) for m in rx.finditer(text)] == want


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(
            st.sampled_from(
                [
                    "mysql",
                    "(mysql),",
                    "redis",
                    "redis.",
                    "x.redis",
                    "kafka's",
                    "-mysql",
                    "ok",
                    "Redis",
                    "mysql/pg",
                    "nginx",
                    "c++",
                    "node.js",
                    "é",
                    "\t",
                    "#redis",
                    "a",
                ]
            ),
            max_size=8,
        ).map(" ".join),
        max_size=6,
    )
)
def test_lower_systems_line_by_line(texts: list[str]) -> None:
    """lower_systems reads the lines that hold a word found, one by one: what the plain form
    (one pattern over the joined text, each match's line found by its offset) finds."""
    from memoryd.text import entity_lower as names

    lines = [(10 + i, t) for i, t in enumerate(texts)]
    got: list[spans.Raw] = []
    names.lower_systems(lines, got)
    want: list[spans.Raw] = []
    text = "\n".join(t for _, t in lines)
    found = names._lower_forms().intersection(text.split())
    if found:
        known = names._lower_known()
        starts = _starts(text)
        rx = names._lower_words_rx(tuple(sorted({known[w] for w in found})))
        for m in rx.finditer(text):
            n = lines[bisect_right(starts, m.start()) - 1][0]
            spans.add(want, m.group(), n, "name", "system", 3.0)
    assert got == want


@settings(max_examples=400, deadline=None)
@given(texts_of("AaZzÉéǅ'’-_ \n\n.:#|1MayaTheNew", 160))
def test_line_caps_of_the_whole_text_are_each_lines_words(text: str) -> None:
    """names() finds the capitalised words of every line in one scan of the joined text: the
    words a scan of each line finds, at the same offsets."""
    from memoryd.text import entity_names as names

    def plain(line: str) -> list[tuple[int, int, str]]:
        return [
            (m.start(), m.end(), m.group())
            for m in names._CAPWORD.finditer(line)
            if names._nameword(m.group())
        ]

    want = [(i, c) for i, line in enumerate(text.split("\n")) if (c := plain(line))]
    assert names._line_caps(text) == want


def test_a_mention_made_without_init_is_a_mention() -> None:
    """_resolve makes its mentions without the frozen dataclass's __init__: equal, hashed,
    printed and pickled as Mention(...) is, and still frozen."""
    import dataclasses
    import pickle

    import pytest

    from memoryd.text.entities import Mention, _mention

    args = ("caroline baker", "Caroline Baker", "person", 3, "Caroline's", "name")
    fast, plain = _mention(*args), Mention(*args)
    assert fast == plain and hash(fast) == hash(plain) and repr(fast) == repr(plain)
    assert type(fast) is Mention and vars(fast) == vars(plain)
    assert list(vars(fast)) == list(vars(plain))
    assert pickle.loads(pickle.dumps(fast)) == plain
    assert dataclasses.astuple(fast) == args
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.line = 4  # type: ignore[misc]


_IDENT_LINE = texts_of("aAzZ09-_.@/ ()xX1bQéÉ٣", 60, lines=False)


@settings(max_examples=500, deadline=None)
@given(_IDENT_LINE)
def test_identifier_patterns_match_nothing_before_their_first_run(line: str) -> None:
    """explicit() starts the host, snake_case, camelCase, kebab-case and SEV2 patterns at the
    run that holds their gate's first match: every match they find from the line's start."""
    for rx, start in (
        (spans._HOST, spans._HOST_FROM),
        (spans._SNAKE, spans._SNAKE_FROM),
        (spans._CAMEL, spans._CAMEL_FROM),
        (spans._KEBAB, spans._KEBAB_FROM),
        (spans._MIXED, spans._MIXED_FROM),
    ):
        for text in (line, "x " + line, line + " a-b_c.io", "Q" + line + "d1"):
            at = spans._first_run(text, start)
            want = [(m.span(), m.groups()) for m in rx.finditer(text)]
            got = [(m.span(), m.groups()) for m in rx.finditer(text, at)] if at >= 0 else []
            assert got == want, (rx.pattern, text)
