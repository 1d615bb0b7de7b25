"""Front matter and heading-aware chunking."""

from __future__ import annotations

import unicodedata

import pytest
from work import calls, cpu_seconds

from memoryd.text.decoding import decode
from memoryd.text.markdown import (
    chunk_markdown,
    estimate_tokens,
    parse_document,
    parse_front_matter,
)


def test_front_matter_fields_and_line_numbers() -> None:
    text = (
        "---\ntags: [Infra, '#docker', infra]\ntype: Decision\nimportance: 8\n"
        "expires: 2030-01-02\n---\n# Title\n\nBody line\n"
    )
    fm, chunks = parse_document(text)
    assert fm.tags == ("infra", "docker") and fm.type == "decision" and fm.importance == 8
    assert fm.expires_at == 1893542400.0 and fm.error is None
    assert fm.raw["expires"] == "2030-01-02"
    assert chunks[0].start_line == 7 and chunks[0].end_line == 9
    assert chunks[0].heading_path == ("Title",)


def test_bad_front_matter_is_body_with_an_error() -> None:
    for text in ("---\n: [unclosed\n---\nbody\n", "---\n- a list\n---\nbody\n", "---\nno end\n"):
        fm, body, first = parse_front_matter(text)
        assert fm.error and body == text and first == 1
    fm, _, _ = parse_front_matter("---\ntags: a, b c\nimportance: 99\n---\n")
    assert fm.tags == ("a", "b", "c") and fm.importance is None


def test_heading_paths_and_code_fences() -> None:
    text = (
        "intro text\n"
        "# A\n\ntext a\n"
        "## B\n\ntext b\n"
        "```sh\n# not a heading\n```\n"
        "### C\n\ntext c\n"
        "# D\n\ntext d\n"
        "Setext\n------\n\ntext e\n"
    )
    chunks = chunk_markdown(text)
    paths = [c.heading_path for c in chunks]
    assert paths == [(), ("A",), ("A", "B"), ("A", "B", "C"), ("D",), ("D", "Setext")]
    assert "# not a heading" in chunks[2].content
    assert chunks[1].start_line == 2 and chunks[1].content.startswith("# A")


def test_long_sections_split_with_overlap_and_true_line_ranges() -> None:
    paras = [f"Paragraph {i} " + " ".join(f"word{i}x{j}" for j in range(40)) for i in range(12)]
    text = "# Long\n\n" + "\n\n".join(paras) + "\n"
    chunks = chunk_markdown(text, max_tokens=120, overlap_tokens=20)
    assert len(chunks) > 3
    lines = text.split("\n")
    for c in chunks:
        assert estimate_tokens(c.content) <= 120 + 25
        assert c.heading_path == ("Long",)
        first_text = c.content.split("\n")[0]
        assert lines[c.start_line - 1].endswith(first_text)  # overlap may start mid-line
    # every paragraph is somewhere; consecutive pieces share their boundary text
    joined = "\n".join(c.content for c in chunks)
    assert all(p in joined for p in paras)
    assert any(
        chunks[i].content.split("\n")[0] in chunks[i - 1].content for i in range(1, len(chunks))
    )


def test_giant_line_and_empty_inputs() -> None:
    assert chunk_markdown("") == []
    assert chunk_markdown("\n\n  \n") == []
    big = "x " * 3000 + "y" * 5000
    chunks = chunk_markdown(big, max_tokens=100, overlap_tokens=10)
    assert len(chunks) > 10 and all(estimate_tokens(c.content) <= 130 for c in chunks)
    crlf = chunk_markdown("# T\r\n\r\nwindows text\r\n")
    assert crlf[0].content == "# T\n\nwindows text"


def test_deterministic_and_linear() -> None:
    def doc(sections: int) -> str:
        return "".join(
            f"## Section {i}\n\n" + "lorem ipsum dolor sit amet " * 60 + "\n\n"
            for i in range(sections)
        )

    small, big = doc(25), doc(100)
    assert chunk_markdown(small) == chunk_markdown(small)
    # counted, not timed (tests/work.py): the same figures on a busy machine
    small_calls, small_chunks = calls(chunk_markdown, small)
    big_calls, big_chunks = calls(chunk_markdown, big)
    assert len(big_chunks) == 4 * len(small_chunks) > 0
    ratio = big_calls / small_calls
    assert 3.5 < ratio < 4.5, f"4x the input made {ratio:.1f}x the calls: chunking is not linear"


# --- hostile input (issue 10) and chunks that stand on their own (issue 11.6) ---------------


def test_a_heading_is_never_a_chunk_by_itself() -> None:
    long_para = " ".join(f"w{i}" for i in range(120))
    text = (
        "# Top\n## Empty\n\n### Deeper\n\nfirst real text\n\n"  # three headings, then text
        f"## Long section\n\n{long_para}\n\n{long_para}\n\n"  # heading before a long paragraph
        "## Tail heading\n"  # a heading at the very end
    )
    chunks = chunk_markdown(text, max_tokens=200, overlap_tokens=0)
    for c in chunks:
        body = [ln for ln in c.content.splitlines() if ln.strip() and not ln.startswith("#")]
        assert body, f"heading-only chunk: {c.content!r}"
    first = chunks[0]
    assert first.heading_path == ("Top", "Empty", "Deeper")
    assert first.content.startswith("# Top\n## Empty") and "first real text" in first.content
    assert first.start_line == 1
    long = [c for c in chunks if c.heading_path == ("Top", "Long section")]
    assert long[0].content.startswith("## Long section\n\nw0 ")
    assert "## Tail heading" in chunks[-1].content


def test_a_file_of_headings_is_a_few_chunks_and_capped() -> None:
    text = "".join(f"## Heading {i}\n" for i in range(20_000))
    chunks = chunk_markdown(text)
    assert 0 < len(chunks) < 2_000  # not 20,000
    assert all(estimate_tokens(c.content) <= 210 for c in chunks)
    capped = chunk_markdown(text, max_chunks=10)
    assert len(capped) == 11  # one more than the cap: the caller sees it was cut
    assert [c.content for c in capped] == [c.content for c in chunks[:11]]


def test_billion_laughs_front_matter_is_refused_fast_and_the_body_kept() -> None:
    levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        levels.append(f"{name}: &{name} [{','.join([f'*{prev}'] * 9)}]")
    text = "---\n" + "\n".join(levels) + "\n---\n# Body\n\nthe real text\n"
    # 9**9 "lol"s if the aliases were expanded; refused, parsing makes about 19,000 calls
    work, (fm, chunks) = calls(parse_document, text)
    assert work < 200_000, work
    assert fm.error and "alias" in fm.error and fm.raw == {}
    assert [c.content for c in chunks] == ["# Body\n\nthe real text"]
    assert chunks[0].start_line == 12


def test_front_matter_size_cap_and_deep_nesting() -> None:
    big = "---\n" + "".join(f"k{i}: {'v' * 60}\n" for i in range(2000)) + "---\nbody text\n"
    fm, body, first = parse_front_matter(big)
    assert fm.error and "larger than" in fm.error and body == "body text\n" and first == 2003
    fm, body, _ = parse_front_matter(big, max_bytes=1 << 20)
    assert fm.error is None and len(fm.raw) == 2000
    deep = "---\nx: " + "[" * 5000 + "]" * 5000 + "\n---\nbody\n"
    fm, body, _ = parse_front_matter(deep)
    assert fm.error and body == "body\n"


def test_decode_byte_order_marks() -> None:
    text = "# Café\n\nnaïve ünïcode 数据库\n"
    for encoding in ("utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-be", "utf-8-sig"):
        bom = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff", "utf-32-be": b"\x00\x00\xfe\xff"}
        data = bom.get(encoding, b"") + text.encode(encoding)
        decoded, _, lossy = decode(data)
        assert decoded == text and not lossy, encoding
    assert decode(text.encode())[0] == text
    # bytes that are not UTF-8 are Windows-1252 (Latin-1), valid UTF-8 around them stays
    decoded, encoding, lossy = decode(b"caf\xe9 \x93quoted\x94 \xc3\xa9t\xc3\xa9 \x81")
    assert decoded == "caf\xe9 \u201cquoted\u201d \xe9t\xe9 \x81"
    assert encoding == "utf-8+windows-1252" and not lossy
    decoded, encoding, lossy = decode(b"\xff\xfe" + "ab".encode("utf-16-le") + b"\x00")
    assert decoded == "ab\ufffd" and encoding == "utf-16-le" and lossy


def test_obsidian_front_matter_fields() -> None:
    fm, _, _ = parse_front_matter(
        "---\ntitle: The Title\naliases: [K8s, kube]\ncreated: 2024-03-05\n---\n"
    )
    assert fm.title == "The Title" and fm.aliases == ("K8s", "kube")
    assert fm.created_at == 1709596800.0
    fm, _, _ = parse_front_matter("---\nalias: one\ndate: 2024-03-05T10:00:00+01:00\n---\n")
    assert fm.aliases == ("one",) and fm.created_at == 1709629200.0
    fm, _, _ = parse_front_matter("---\ndate: not a date\naliases: 5\n---\n")
    assert fm.created_at is None and fm.aliases == ()


def test_heading_lines_parse_in_linear_time() -> None:
    from memoryd.text.markdown import atx_heading

    work = {}
    for k in (4_000, 40_000):
        work[k], (_, chunks) = calls(parse_document, "# x" + " " * k + "y\n\ntext\n")
        assert chunks[0].heading_path == ("x" + " " * k + "y",)
        assert max(estimate_tokens(c.content) for c in chunks) <= 200  # a huge heading is cut
    assert work[40_000] < 12 * work[4_000], work  # 10x the spaces, about 10x the calls
    # a regex took 160 s at 4,000 spaces, inside one call the counts cannot see: CPU time of
    # this thread (a busy machine does not add to it), measured at about 0.05 s
    took, _ = cpu_seconds(parse_document, "# x" + " " * 4_000 + "y\n\ntext\n")
    assert took < 2, took
    cases = {
        "# A": (1, "A"),
        "## A ##": (2, "A"),
        "   ### C  #  ": (3, "C"),
        "# A#": (1, "A#"),
        "#": (1, ""),
        "#\tT": (1, "T"),
        "#A": None,
        "####### x": None,
        "    # code": None,
    }
    for line, expected in cases.items():
        assert atx_heading(line) == expected, line


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ("date: 2024-02-30", "2024-02-30"),  # a typo in a date
        ("created: 2024-13-01", "2024-13-01"),
        ("updated: 0000-01-01", "0000-01-01"),
        ("due: 2024-01-01T25:00:00", "2024-01-01T25:00:00"),
        ("expires: 2024-02-30", "2024-02-30"),
        ("n: !!int abc", "abc"),
        ("n: !!float abc", "abc"),
        ("n: !!timestamp 2024-02-30", "2024-02-30"),
        ("n: !!binary 'not base64!'", "not base64!"),
        ("n: !custom thing", "thing"),  # a tag of another tool's
        ("n: !custom [a, b]", ["a", "b"]),
        ("n: !!python/object:os.system {}", {}),
    ],
)
def test_a_value_yaml_cannot_make_is_its_text_and_costs_nothing_else(
    line: str, value: object
) -> None:
    """One odd value (a date that does not exist, a tag of another tool) no longer makes the
    whole front matter ignored: the note keeps its tags, aliases and title."""
    fm, body, first = parse_front_matter(
        f"---\ntitle: Plan\ntags: [infra]\naliases: [P1]\n{line}\n---\nbody\n"
    )
    assert fm.error is None
    assert fm.tags == ("infra",) and fm.aliases == ("P1",) and fm.title == "Plan"
    assert list(fm.raw.values())[-1] == value
    assert body == "body\n" and first == 7


@pytest.mark.parametrize(
    ("field", "value", "tags", "aliases"),
    [
        ("tags", "[infra, null, ops]", ("infra", "ops"), ()),
        ("tags", "\n  - infra\n  -\n  - ops", ("infra", "ops"), ()),  # an empty item
        ("tags", "[infra, [nested], {k: v}, yes]", ("infra",), ()),
        ("tags", "[infra, 2024]", ("infra", "2024"), ()),
        ("tags", "infra, ops", ("infra", "ops"), ()),
        ("aliases", "[P1, null, [x], {k: v}, true]", (), ("P1",)),
        ("aliases", "\n  - P1\n  -\n  - P2", (), ("P1", "P2")),
    ],
)
def test_every_list_field_keeps_its_text_items_only(
    field: str, value: str, tags: tuple[str, ...], aliases: tuple[str, ...]
) -> None:
    """An empty item (`- `, which Obsidian's property editor can leave), yes/no or a nested
    list is no tag or alias: a null item was the tag `none`, a list the tag `['x']`."""
    fm, _, _ = parse_front_matter(f"---\n{field}: {value}\n---\nbody\n")
    assert fm.error is None and fm.tags == tags and fm.aliases == aliases


# Every script written without spaces costs about a token a character (text/scripts.py): a run of
# it is one "word" to the spaces, so counting words undercounted Thai, Lao, Khmer and Myanmar
# (and a long unspaced CJK or Thai line was cut at 4 characters a token).
UNSPACED = {
    "chinese": "我们用数据库存储所有的笔记和记忆" * 40,
    "thai": "ระบบจัดเก็บความจำทำงานบนเครื่องของคุณ" * 40,
    "lao": "ລະບົບເກັບຄວາມຈຳເຮັດວຽກຢູ່ໃນເຄື່ອງ" * 40,
    "khmer": "ប្រព័ន្ធរក្សាទុកការចងចាំដំណើរការលើម៉ាស៊ីន" * 40,
    "myanmar": "မှတ်ဉာဏ်သိုလှောင်စနစ်သည်သင့်ကွန်ပျူတာပေါ်တွင်အလုပ်လုပ်သည်" * 40,
}


@pytest.mark.parametrize("script", sorted(UNSPACED))
def test_unspaced_scripts_cost_a_token_a_character(script: str) -> None:
    text = UNSPACED[script]
    assert estimate_tokens(text) >= len(text)
    mixed = f"see {text[:30]} and more words here"
    assert estimate_tokens(mixed) >= 30 + 5


@pytest.mark.parametrize("script", sorted(UNSPACED))
@pytest.mark.parametrize("spaced", [False, True])
def test_unspaced_lines_are_chunked_within_the_budget(script: str, spaced: bool) -> None:
    line = UNSPACED[script]
    if spaced:  # words of a few characters, as a sentence with some spaces
        line = " ".join(line[i : i + 7] for i in range(0, len(line), 7))
    chunks = chunk_markdown(f"# h\n\n{line}\n", max_tokens=100, overlap_tokens=10)
    assert len(chunks) > 1
    assert all(estimate_tokens(c.content) <= 100 + 10 + 4 for c in chunks), [
        estimate_tokens(c.content) for c in chunks
    ]
    body = "".join(c.content.removeprefix("# h\n").replace(" ", "") for c in chunks)
    assert set(line.replace(" ", "")) <= set(body)
    for c in chunks if not spaced else []:  # never a mark without its letter at a cut
        assert not unicodedata.category(c.content.split("\n")[-1][0]).startswith("M")


def test_a_budget_counts_thai_as_it_counts_chinese() -> None:
    """The budgets (search max_tokens, session_start, entity pages, MCP answers) measure with
    estimate_tokens: 150 characters of Thai do not fit in 100 tokens, as 150 of Chinese do not."""
    from memoryd.memory.lifecycle import budgeted

    for script in ("thai", "chinese"):
        hit = {"id": 1, "score": 1.0, "content": UNSPACED[script][:150], "path": None}
        assert budgeted([hit], 100)["hits"] == [], script
        assert len(budgeted([hit], 1000)["hits"]) == 1


@pytest.mark.parametrize("char", ["記", "กิ"])
def test_a_giant_unspaced_line_is_chunked_in_linear_time(char: str) -> None:
    """A 1 MiB note of one CJK or Thai run (notes.max_bytes): each cut reads a window of the
    line, not the rest of it (rest-of-line reads made it quadratic: 97 s a note)."""
    cpu = {}
    for n in (20_000, 80_000):
        cpu[n], chunks = cpu_seconds(chunk_markdown, char * (n // len(char)), max_tokens=200)
        assert all(estimate_tokens(c.content) <= 200 for c in chunks)
    assert cpu[80_000] < 8 * cpu[20_000] + 0.05, cpu  # 4x the text, not 16x the time
