"""tests/pgserver.py: a migrated database a test gives back (`release`) is the template's state
again (memoryd's tables, no rows but meta's, every sequence at its start) and is the next
test's; release drops it where emptying fails, which would hide a broken emptying as a slower
suite, so here a drop is a failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

pgserver = pytest.importorskip("pgserver")


def _state(dsn: str) -> tuple[Any, ...]:
    with psycopg.connect(dsn, autocommit=True) as con:
        tables = sorted(r[0] for r in con.execute(pgserver._TABLES))
        rows = {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
        sequences = {}
        for (seq,) in con.execute(
            "SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'"
        ).fetchall():
            sequences[seq] = con.execute(f'SELECT last_value, is_called FROM "{seq}"').fetchone()
        meta = sorted(con.execute("SELECT key, value FROM meta").fetchall())
    return tables, rows, sequences, meta


@pytest.mark.parametrize("log_rows", [0, 1500])  # a few rows deleted; many truncated
def test_a_released_database_is_the_template_again_and_reused(
    make_app: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_rows: int
) -> None:
    from memoryd.serve import methods as api

    def no_drop(dsn: str) -> None:
        raise AssertionError(f"release could not empty {dsn}: dropped")

    monkeypatch.setattr(pgserver, "drop", no_drop)
    dsn = pgserver.fresh_dsn("api", migrated=True)
    template = pgserver._dsn(pgserver.server_uri(), pgserver._state["template"])
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(3):
        (ws / f"n{i}.md").write_text(f"# Note {i}\n\nAlice met Bob in Berlin.\n\n[[n{i + 1}]]\n")
    app = make_app(
        workspace=str(ws),
        data_dir=str(tmp_path / "data"),
        store={"backend": "postgres", "dsn": dsn},
    )
    app.reconcile()
    for i in range(3):
        params = {"content": f"memory {i} about Alice", "tags": ["t"], "triggers": [f"cue {i}"]}
        api.lookup("add", params).fn(app, params)
    make_app.close(app)
    with psycopg.connect(dsn, autocommit=True) as con:
        con.execute(
            "INSERT INTO access_log(ts, query, entry_id, rank)"
            " SELECT 0, 'q', n, 1 FROM generate_series(1, %s) AS n",
            [log_rows],
        )
        con.execute("CREATE TABLE vec_test(id BIGINT)")  # a table a test made: dropped
    written = _state(dsn)
    assert sum(written[1].values()) > len(written[3]) + log_rows  # rows in several tables
    assert any(called for _, called in written[2].values())

    pgserver.release(dsn)

    assert _state(dsn) == _state(template)
    assert pgserver.fresh_dsn("api", migrated=True) == dsn
    pgserver.release(dsn)
