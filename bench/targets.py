"""Wall-clock targets that used to be asserted by unit tests (issue 18).

    .venv/bin/python -m bench targets

A unit test that asserts how long something took fails when the machine is busy, so the tests
now count work instead (tests/work.py) and the speed targets themselves are measured here, on a
machine that is otherwise idle. Each row: the target, the figure, met or missed; the exit code
is 1 when a target is missed.

| target                                                    | was asserted by                 |
| chunking 4x the text takes < 8x the time                  | test_markdown                   |
| fuzzy vocabulary of 100K terms built < 10 s               | test_fuzzy (speed at 100K)      |
| fuzzy 3-term rewrite at 100K terms, median < 0.2 s        | test_fuzzy (speed at 100K)      |
| match_triggers, 6,000 phrases, 200-word prompt < 50 ms    | test_lifecycle                  |
| a note written is searchable (in process) < 1 s           | test_notes                      |
The daemon-level ones (a saved note searchable within 2 s; MCP write_note then search within
~1 s) are rows of `python -m bench` ("save to searchable") and `python -m bench bursts`, and
`python -m bench.mcp_latency`.
"""

from __future__ import annotations

import random
import shutil
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Row = tuple[str, str, bool]


def best_of(n: int, fn: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(n):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def chunking() -> list[Row]:
    from memoryd.text.markdown import chunk_markdown

    def doc(sections: int) -> str:
        return "".join(
            f"## Section {i}\n\n" + "lorem ipsum dolor sit amet " * 60 + "\n\n"
            for i in range(sections)
        )

    small, big = doc(100), doc(400)
    best_of(1, lambda: chunk_markdown(small))  # warm up
    ratio = best_of(3, lambda: chunk_markdown(big)) / best_of(3, lambda: chunk_markdown(small))
    return [("chunking 4x the text < 8x the time", f"{ratio:.1f}x", ratio < 8)]


def fuzzy() -> list[Row]:
    import apsw

    from memoryd.search.fuzzy import FuzzyMatcher
    from memoryd.store.migrations import migrate
    from memoryd.store.tokenizer import register

    rng = random.Random(42)
    words: set[str] = set()
    while len(words) < 100_000:
        words.add("".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 12))))
    ordered = sorted(words)
    con = apsw.Connection(":memory:")
    register(con)  # as memoryd.store.db.connect() does
    migrate(con)
    with con:
        for i in range(0, len(ordered), 200):
            con.execute(
                "INSERT INTO entries(kind, content, content_hash, type, created_at, updated_at)"
                " VALUES ('memory', ?, ?, 'note', 0, 0)",
                (" ".join(ordered[i : i + 200]), str(i)),
            )
    terms = [r[0] for r in con.execute("SELECT term FROM entries_vocab WHERE length(term) >= 7")]
    matcher = FuzzyMatcher()
    started = time.perf_counter()
    vocab = matcher.vocabulary(con)
    build = time.perf_counter() - started
    assert vocab is not None

    def typo(word: str) -> str:
        i = rng.randrange(len(word) - 1)
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]

    timings = []
    for _ in range(30):
        query = [typo(rng.choice(terms)) for _ in range(3)]
        started = time.perf_counter()
        matcher.rewrite(con, query)
        timings.append(time.perf_counter() - started)
    median = statistics.median(timings)
    return [
        (
            f"fuzzy vocabulary of {len(vocab.docs):,} terms built < 10 s",
            f"{build:.2f} s",
            build < 10,
        ),
        (
            "fuzzy 3-term rewrite at 100K terms, median < 0.2 s",
            f"{median * 1000:.1f} ms",
            median < 0.2,
        ),
    ]


def app_rows(root: Path) -> list[Row]:
    from bench.run import make_config
    from memoryd.index.embed import ModelHolder
    from memoryd.memory import lifecycle
    from memoryd.search.searcher import SearchRequest
    from memoryd.serve import methods as api
    from memoryd.serve.app import App

    app = App(make_config(root), model=ModelHolder(None, description="no model (bench)"))
    try:
        mid = app.memories.add("Deploy: run migrations first", triggers=["deploy checklist"]).id
        app.store.run_write(
            lambda con: lifecycle.set_triggers(con, mid, ["phrase number 2999", "deploy checklist"])
        )
        with app.store.write() as con:
            for i in range(6000):
                con.execute(
                    "INSERT INTO triggers(entry_id, phrase, norm) VALUES (?, ?, ?)",
                    (mid, f"Phrase {i} x", f"phrase {i} x"),
                )
        app.triggers.invalidate()
        match = api.lookup("match_triggers", {"prompt": "warm up"}).fn
        match(app, {"prompt": "warm up"})
        prompt = "please " * 200 + "phrase 2999 x and the deploy checklist"
        took = best_of(5, lambda: match(app, {"prompt": prompt}))

        text = "---\ntitle: Llama care\n---\n# Feeding\nLlamas eat hay.\n"
        started = time.perf_counter()
        app.notes.write("zoo/llama.md", text)
        hits = app.searcher.search(SearchRequest(query="llamas hay"))["hits"]
        visible = time.perf_counter() - started
        assert [h.get("path") for h in hits] == ["zoo/llama.md"]
    finally:
        app.close()
    return [
        (
            "match_triggers, 6,000 phrases, 200-word prompt < 50 ms",
            f"{took * 1000:.1f} ms",
            took < 0.05,
        ),
        (
            "a note written is searchable (in process) < 1 s",
            f"{visible * 1000:.0f} ms",
            visible < 1,
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    from memoryd.core import logsetup

    logsetup.configure("warning")
    root = Path(tempfile.mkdtemp(prefix="memoryd-targets-"))
    try:
        rows = chunking() + fuzzy() + app_rows(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    width = max(len(r[0]) for r in rows)
    for name, figure, met in rows:
        print(f"{name:<{width}}  {figure:>10}  {'met' if met else 'MISSED'}")
    return 0 if all(met for _, _, met in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
