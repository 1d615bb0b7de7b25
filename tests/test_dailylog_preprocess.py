"""The daily log's own heading and lines are not chunks (issue 11.6); a person's lines are."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from work import cpu_seconds

from memoryd.memory.dailylog import DailyLog


class Settings:
    enabled = True
    folder = "daily"
    line_format = "- {time} {content}"
    header = "# Memories {date}"


def test_preprocess_blanks_the_header_and_keeps_line_numbers(tmp_path: Any) -> None:
    log = DailyLog(tmp_path, Settings())
    text = "# Memories 2026-11-23\n\nhand written line\n# Memories of summer\n"
    out = log.preprocess("daily/2026-11-23.md", text)
    assert out == "\n\nhand written line\n# Memories of summer\n"
    assert log.preprocess("notes/2026-11-23.md", text) == text  # other files untouched
    Settings.header = "## Log for {date} {time}"
    try:
        assert log.preprocess("daily/x.md", "## Log for 2026-01-02\nrest") == "\nrest"
    finally:
        Settings.header = "# Memories {date}"


def chunk_texts(app: Any) -> list[str]:
    return app.store.read(lambda con: [r[0] for r in con.execute("SELECT content FROM chunks")])


def test_a_daily_log_of_memories_makes_no_chunks(make_app: Any) -> None:
    app = make_app(model=None)
    app.memories.add("we picked postgres as the database")
    app.indexer.reconcile()
    assert chunk_texts(app) == []
    path = app.cfg.workspace / "daily" / f"{datetime.now().astimezone():%Y-%m-%d}.md"
    with path.open("a") as f:
        f.write("- a line a person wrote about sqlite\n")
    app.indexer.reconcile()
    texts = chunk_texts(app)
    assert texts == ["- a line a person wrote about sqlite"]


def test_preprocess_is_linear_on_long_lines(tmp_path: Any) -> None:
    log = DailyLog(tmp_path, Settings())
    line = "a" + " " * 200_000 + "<!-- m:1:abcdef12 --> x"
    # a regular expression's backtracking, which no call count sees: the CPU time of this
    # thread (tests/work.py; a busy machine does not add to it)
    took, out = cpu_seconds(log.preprocess, "daily/x.md", line)
    assert out == line
    assert took < 1, took
