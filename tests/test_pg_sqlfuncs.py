"""store/pg/sqlfuncs.nonword_class, the characters that split words in PostgreSQL's index: a
million characters asked one by one, seconds of CPU, which every migration of a new database
paid twice (schema v1 and v15), is made once per process and kept."""

from __future__ import annotations

import re

from memoryd.store import tokenizer
from memoryd.store.pg import sqlfuncs


def test_the_nonword_class_is_made_once_and_holds_what_is_no_word() -> None:
    made = sqlfuncs.nonword_class(True)  # (made by this worker's template already, mostly)
    assert sqlfuncs.nonword_class(True) is made
    word, nonword = re.compile(tokenizer.WORD), re.compile(f"[{made}]")
    for text in (" ", ".", "_", "-", "\u00a0", "\u3000", "\U0001f600"):
        assert word.match(text) is None and nonword.match(text)
    for text in ("a", "é", "Σ", "用", "\u0301", "\u0e31", "7"):  # a combining mark, a Thai vowel
        assert word.match(text) and nonword.match(text) is None
