"""Front matter and heading-aware chunking."""

from __future__ import annotations

import time

from memoryd.markdown import chunk_markdown, estimate_tokens, parse_document, parse_front_matter


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

    def timed(text: str) -> float:
        t = time.perf_counter()
        chunk_markdown(text)
        return time.perf_counter() - t

    small, big = doc(100), doc(400)
    assert chunk_markdown(small) == chunk_markdown(small)
    timed(small)  # warm up
    ratio = timed(big) / max(timed(small), 1e-6)
    assert ratio < 8, f"4x the input took {ratio:.1f}x the time: chunking is not linear"
