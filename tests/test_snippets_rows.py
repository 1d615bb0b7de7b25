"""Snippets made from the hits' own rows (store/rowsnippets.py, issue 23.3) are FTS5's snippets of
`entries_fts`, row by row: the same text, the same marks, the same passage of a long text, for
every kind of expression search sends (words, phrases, prefixes, CJK bigrams) and those it could
(NEAR, NOT, column filters, a match in the heading or tags only)."""

from __future__ import annotations

import json
from typing import Any

from memoryd.store import entries, rowsnippets, searchrows, searchsql
from memoryd.store.entries import NewMemory, insert_memory

_LONG = (
    "# Runbook\n\n## Deploy\n\n"
    "Before anything else, read the whole page. The staging cluster takes a while to warm up, "
    "and the cache must be cold when the first replica starts. Then deploy the service with the "
    "checklist below. If the rollback plan fails, page the on-call person. "
    "A deploy at night needs two people. The database migration goes first, the deploy second, "
    "and the rollback plan is written before either. 数据库的迁移先做, 然后部署服务。\n\n"
    "## Afterwards\n\nWatch the latency budget for an hour; a replica that lags is drained.\n"
)


def _rows(app: Any) -> list[int]:
    ws = app.cfg.workspace
    (ws / "runbook.md").write_text(_LONG)
    for i in range(12):
        filler = " ".join(f"w{(i * 5 + j) % 17}" for j in range(40))
        (ws / f"n{i:02d}.md").write_text(
            f"# Note {i}\n\n{filler}. The deploy checklist is long. {filler} rollback {i}.\n"
        )
    (ws / "tags.md").write_text("---\ntags: [deploy, 数据]\n---\n# Heading deploy\n\nNothing.\n")
    app.indexer.reconcile()
    with app.store.write() as con:
        insert_memory(
            con,
            NewMemory(
                content="Remember: the deploy waits for the rollback plan.",
                content_hash="m1",
                type="fact",
                tags=("rollback",),
            ),
            1.0,
        )
    return app.store.read(
        lambda con: [int(r[0]) for r in con.execute("SELECT id FROM entries ORDER BY id")]
    )


def test_snippets_from_the_rows_are_those_of_entries_fts(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    ids = _rows(app)
    assert len(ids) > 15

    def both(con: Any, match: str) -> tuple[dict[int, str], dict[int, str]]:
        looked_up = {
            int(i): str(s)
            for i, s in con.execute(
                "SELECT rowid, snippet(entries_fts, 0, '\x02', '\x03', '…', 24) FROM entries_fts"
                " WHERE entries_fts MATCH ? AND rowid IN (SELECT value FROM json_each(?))",
                [match, json.dumps(ids)],
            )
        }
        return looked_up, searchsql.snippets(con, match, ids, "\x02", "\x03")

    for match in (
        '"deploy"',
        '"deploy" OR "rollback"',
        '"deploy" AND "rollback"',
        '"rollback plan" OR "cache"',
        '"deplo"* OR "rollb"*',
        '"w3" OR "w11" OR "latency"',
        'NEAR("deploy" "rollback", 5)',
        '"deploy" NOT "cache"',
        'heading_path : "deploy"',
        '{heading_path tags} : "deploy"',
        '"数据库"',
        '"数据" OR "deploy"',
        '^"the"',
        '"nothing here"',
    ):
        looked_up, made = app.store.read(lambda con, m=match: both(con, m))
        assert made == looked_up, match
        if match in ('"deploy"', '"deploy" OR "rollback"', '"数据库"'):
            assert any("\x02" in s for s in made.values()), match
            assert any("…" in s for s in made.values()), match  # a passage of a long text


def test_snippets_of_no_row_or_gone_rows(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    ids = _rows(app)
    gone = max(ids) + 1000
    got = app.store.read(
        lambda con: (
            searchsql.snippets(con, '"deploy"', [], "<", ">"),
            searchsql.snippets(con, '"deploy"', [gone], "<", ">"),
            rowsnippets.snippets(con, '"deploy"', [ids[0], gone], "<", ">"),
        )
    )
    assert got[0] == {} and got[1] == {}
    assert set(got[2]) <= {ids[0]}
    # the private table is left empty (its rows live in a transaction rolled back)
    assert rowsnippets._shadow().execute("SELECT count(*) FROM rows_fts").fetchall() == [(0,)]


_MATCHES = (
    '"deploy"',
    '"deploy" OR "rollback"',
    '"rollback plan" OR "cache"',
    '"deplo"* OR "rollb"*',
    'NEAR("deploy" "rollback", 5)',
    '{heading_path tags} : "deploy"',
    '"数据库"',
    '"数据" OR "deploy"',
)


def test_rows_without_cjk_take_the_plain_table_with_the_same_snippets(make_app: Any) -> None:
    """A row alone, with an expression, both without a CJK character, is snipped in the table
    tokenized by the tokenizer `cjk` wraps (no Python call per column): the same snippets as
    `entries_fts` gives, row by row; with a CJK character anywhere, the `cjk` table."""
    app = make_app(model=None, dailylog={"enabled": False})
    ids = _rows(app)

    def check(con: Any) -> set[bool]:
        paths = set()
        for entry_id in ids:
            row = con.execute(
                "SELECT id, content, heading_path, tags FROM entries WHERE id = ?", [entry_id]
            ).fetchall()
            for match in _MATCHES:
                looked_up = {
                    int(i): str(s)
                    for i, s in con.execute(
                        "SELECT rowid, snippet(entries_fts, 0, '\x02', '\x03', '…', 24)"
                        " FROM entries_fts WHERE entries_fts MATCH ? AND rowid = ?",
                        [match, entry_id],
                    )
                }
                assert rowsnippets.snippets_of(row, match, "\x02", "\x03") == looked_up, match
                paths.add(rowsnippets._has_cjk(row, match))
        return paths

    assert app.store.read(check) == {True, False}  # both tables were asked
    for plain in (True, False):
        shadow = rowsnippets._shadow(plain=plain)
        assert shadow.execute("SELECT count(*) FROM rows_fts").fetchall() == [(0,)]


def test_hit_rows_are_the_records_snippets_and_section_lines(make_app: Any) -> None:
    """searchrows.hit_rows (SQLite) reads each record once for the record and its snippets, and
    of the other sections only what hits.fill_sections asks: the same as entries.get_many."""
    app = make_app(model=None, dailylog={"enabled": False})
    ids = _rows(app)
    top, more = ids[:6], ids[6:]

    def read(con: Any) -> None:
        by_match = {'"deploy" OR "rollback"': top[:4], '"数据库" OR "w3"': top[4:]}
        records, snippets, lines = searchrows.hit_rows(con, top, by_match, more, ("\x02", "\x03"))
        assert records == entries.get_many(con, top)
        expected: dict[int, str] = {}
        for match, matched in by_match.items():
            expected.update(searchsql.snippets(con, match, matched, "\x02", "\x03"))
        assert snippets == expected and snippets
        full = entries.get_many(con, more)
        assert lines is not None and set(lines) == set(full)
        for i, rec in full.items():
            for key in ("heading_path", "start_line", "end_line"):
                assert lines[i][key] == rec.get(key), (i, key)
        assert searchrows.hit_rows(con, top, {}, [], ("<", ">"))[2] is None

    app.store.read(read)
