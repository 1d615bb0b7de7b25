"""Search on the PostgreSQL backend: every mode, the query syntax, filters, no-answer queries,
typo correction and the workspace scope, against a real server (the `pg_dsn` fixture)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import q, settle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.core.errors import InvalidInput
from memoryd.search.ftsquery import parse_query
from memoryd.store.entries import Filters

NOTES = {
    "ops/deploy.md": "# Deploy\n\nWe deploy the api with blue green releases on Fridays.\n",
    "ops/db.md": "# Database\n\nPostgres replication lag alerts page the on-call engineer.\n",
    "proj/alpha/auth.md": "# Auth\n\nSessions expire after twelve hours; tokens rotate daily.\n",
    "proj/beta/cache.md": "# Cache\n\nRedis keeps hot sessions; eviction is allkeys-lru.\n",
    "zh/db.md": "# 数据\n\n我们的数据库迁移在周五完成，李明负责备份。\n",
    "misc/email.md": "# Mail\n\nThe e-mail relay runs on host smtp-01.\n",
}


ALPHABET = "ab \"*-()^:+.,OR ANDNOT\\'!&|<>é数据🙂\x00\t"


def pg_app(make_app: Any, pg_dsn: str, root: Path | None = None, **kw: Any) -> Any:
    sections: dict[str, Any] = {"store": {"backend": "postgres", "dsn": pg_dsn}}
    if root is not None:
        sections.update(workspace=str(root / "ws"), data_dir=str(root / "data"))
    app = make_app(**kw, **sections)
    for rel, text in NOTES.items():
        p = app.cfg.workspace / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    app.indexer.reconcile()
    return app


def paths(res: dict[str, Any]) -> list[str]:
    return [h.get("path") or f"#{h['id']}" for h in res["hits"]]


def test_every_mode_answers(make_app: Any, pg_dsn: str) -> None:
    app = pg_app(make_app, pg_dsn)
    app.memories.add("Postgres replication is streaming, with one hot standby", tags=["db"])
    settle(app)
    for mode in ("keyword", "vector", "hybrid", "auto"):
        res = q(app, "postgres replication", mode=mode)
        assert res["hits"], mode
        assert res["mode"] in ("keyword", "vector", "hybrid"), res["mode"]
    res = q(app, "replication", mode="keyword", explain=True)
    top = res["hits"][0]
    assert top["explain"]["bm25"] < 0  # lower is better, as FTS5's bm25()
    assert [top["snippet"][a:b].lower() for a, b in top["highlights"]] == ["replication"]


def test_query_syntax(make_app: Any, pg_dsn: str) -> None:
    app = pg_app(make_app, pg_dsn, model=None)
    assert paths(q(app, '"replication lag"')) == ["ops/db.md"]
    assert paths(q(app, '"lag replication"')) == []  # a phrase keeps its order
    assert paths(q(app, "deplo*")) == ["ops/deploy.md"]  # a prefix
    assert sorted(paths(q(app, "redis OR postgres"))) == ["ops/db.md", "proj/beta/cache.md"]
    assert paths(q(app, "sessions -redis")) == ["proj/alpha/auth.md"]
    assert paths(q(app, "sessions NOT redis")) == ["proj/alpha/auth.md"]
    assert paths(q(app, "数据库")) == ["zh/db.md"]  # a CJK word inside a sentence
    assert paths(q(app, "李明")) == ["zh/db.md"]
    assert paths(q(app, "e-mail")) == ["misc/email.md"]
    for hostile in ('"unbalanced', "((a", "NOT", "a OR", "x:*", "'; drop table x; --", "!!&|<->"):
        q(app, hostile)  # answers, never a tsquery syntax error
    assert q(app, "zyxwvut quantum")["hits"] == []  # nothing answers: no hits


def test_cjk(make_app: Any, pg_dsn: str) -> None:
    app = pg_app(make_app, pg_dsn, model=None)
    note = "# 决定\n\n我们决定用PostgreSQL作为主数据库。\n"
    (app.cfg.workspace / "zh" / "pg.md").write_text(note)
    app.indexer.reconcile()
    assert paths(q(app, "用PostgreSQL")) == ["zh/pg.md"]  # a one-character run, then English
    hit = q(app, "李明")["hits"][0]
    marked = [hit["snippet"][a:b] for a, b in hit["highlights"]]
    assert marked == ["李明"], hit  # ts_headline alone cannot mark it
    vocab = app.store.read(app.fuzzy.vocabulary)
    assert {"数据", "库", "李明", "postgresql"} <= set(vocab.docs)
    res = q(app, "数据库 postgrsql", mode="fuzzy")
    assert res["mode"] == "fuzzy" and paths(res)[:1] == ["zh/pg.md"]


def test_near_duplicates_by_words(make_app: Any, pg_dsn: str) -> None:
    # without a model, near duplicates are keyword matches (store/lifecycle keyword_memories)
    app = pg_app(make_app, pg_dsn, model=None)
    kept = app.memories.add("The staging cluster runs on three nodes", namespace="ops")
    app.memories.add("Lunch is at noon", namespace="ops")
    found = app.near_duplicates("the staging cluster runs on three nodes now", "ops")
    assert [d["id"] for d in found] == [kept.id]
    assert app.near_duplicates("the staging cluster runs on three nodes", "other") == []


def test_typo_correction(make_app: Any, pg_dsn: str) -> None:
    app = pg_app(make_app, pg_dsn, model=None)
    res = q(app, "replcation")
    assert paths(res) == ["ops/db.md"]
    assert res["mode"] == "fuzzy" and res["corrected_query"] == "replication"


def test_filters(make_app: Any, pg_dsn: str) -> None:
    app = pg_app(make_app, pg_dsn)
    app.memories.add("Sessions are stored in redis", tags=["cache"], namespace="team")
    app.memories.add("Sessions use signed cookies", tags=["web"])
    settle(app)
    only = q(app, "sessions", filters=Filters(path_prefix="proj/alpha"))
    assert paths(only) == ["proj/alpha/auth.md"]
    team = q(app, "sessions", filters=Filters(namespace="team", kind="memory"))
    assert [h["content"] for h in team["hits"]] == ["Sessions are stored in redis"]
    tagged = q(app, "sessions", filters=Filters(tags=("web",)))
    assert [h["content"] for h in tagged["hits"]] == ["Sessions use signed cookies"]
    # a narrow path filter at limit 100 with a vector pool: only that folder, in every mode
    for mode in ("vector", "hybrid", "auto"):
        res = q(app, "sessions", mode=mode, limit=100, filters=Filters(path_prefix="proj/beta"))
        assert set(paths(res)) <= {"proj/beta/cache.md"}, mode
        assert res["hits"], mode


def test_workspace_scope(make_app: Any, pg_dsn: str, tmp_path: Path) -> None:
    mine = pg_app(make_app, pg_dsn)
    theirs = make_app(
        store={"backend": "postgres", "dsn": pg_dsn},
        workspace=str(tmp_path / "ws2"),
        data_dir=str(tmp_path / "data2"),
    )
    (theirs.cfg.workspace / "ops").mkdir(parents=True)
    (theirs.cfg.workspace / "ops" / "db.md").write_text("# DB\n\nMySQL replication is async.\n")
    theirs.indexer.reconcile()
    theirs.memories.add("Replication monitoring lives in grafana")
    default = q(mine, "replication")
    assert sorted(h["content"][:5] for h in default["hits"]) == ["# Dat", "Repli"]
    assert all("workspace" not in h for h in default["hits"])
    every = q(mine, "replication", workspace="all")
    assert len(every["hits"]) == 3
    foreign = [h for h in every["hits"] if "workspace" in h]
    assert [h["content"] for h in foreign] == ["# DB\n\nMySQL replication is async."]
    assert foreign[0]["workspace"] == theirs.store.settings.workspace_id
    # the vector pool too: the other workspace's note is a neighbour only with "all"
    settle(mine)
    settle(theirs)
    for mode in ("vector", "hybrid"):
        text = "MySQL replication is async"
        own = q(mine, text, mode=mode, limit=100)["hits"]
        assert not any("workspace" in h for h in own), mode
        hits = q(mine, text, mode=mode, limit=100, workspace="all")["hits"]
        assert any("workspace" in h for h in hits), mode
    with pytest.raises(InvalidInput):
        q(mine, "replication", workspace="theirs")


def test_scope_is_accepted_on_sqlite(make_app: Any) -> None:
    app = make_app(model=None)
    app.memories.add("Replication monitoring lives in grafana")
    assert q(app, "replication", workspace="all")["hits"] == q(app, "replication")["hits"]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(alphabet=st.sampled_from(list(ALPHABET)), max_size=60) | st.text(max_size=60))
def test_no_input_raises(make_app: Any, pg_dsn: str, text: str) -> None:
    from memoryd.store.pg import fts, pool

    store = _store(make_app, pg_dsn)
    p = parse_query(text)
    for match in (p.match, p.match_any, text):
        if match is not None:
            store.read(lambda con, m=match: fts.match_count(con, m, 10))
            found = store.read(lambda con, m=match: pool.keyword_pool(con, m, "1 = 1", [], 5))
            ids = [i for i, _, _ in found] or [1]
            store.read(lambda con, m=match, i=ids: fts.snippets(con, m, i, "\x02", "\x03"))


_stores: dict[str, Any] = {}


def _store(make_app: Any, pg_dsn: str) -> Any:
    """One App per test (hypothesis calls the test many times with the same fixtures)."""
    if pg_dsn not in _stores:
        _stores.clear()
        _stores[pg_dsn] = pg_app(make_app, pg_dsn, model=None).store
    return _stores[pg_dsn]


def test_translation_is_parameterised() -> None:
    from memoryd.store.pg import fts

    sql, params = fts.tsquery('"a" AND ("b" OR "c"*) NOT "d"')
    assert sql == (
        "(phraseto_tsquery('english', ?) && ((phraseto_tsquery('english', ?)"
        " || to_tsquery('english', ?)) && !!phraseto_tsquery('english', ?)))"
    )
    assert params == ["a", "b", "c:*", "d"]
    assert [p for _, p in fts.terms('"a" OR "b" NOT "c"')] == [["a"], ["b"]]  # not c
    sql, params = fts.tsquery('"数据库 x"')
    assert "memoryd_cjk_bigrams(?)" in sql and params == ["x", "数据库"]
    assert fts.tsquery('"x\':*|!" NOT')[1] == ["x"]  # only letters and digits reach a tsquery
    assert fts.tsquery('NOT "x"') == ("''::tsquery", [])  # a negation alone matches nothing


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(ALPHABET + "()")), max_size=60) | st.text(max_size=60))
def test_every_parameter_has_its_placeholder(text: str) -> None:
    from memoryd.store.pg import fts

    p = parse_query(text)
    for match in (p.match, p.match_any, text):
        if match is not None:
            sql, params = fts.tsquery(match)
            assert sql.count("?") == len(params)
            for term_sql, term_params in fts.terms(match):
                assert term_sql.count("?") == len(term_params)


def test_quality_command_compares_the_backends(tmp_path: Path, capsys: Any) -> None:
    import pgserver

    from bench import quality

    args = ["--fake", "--queries", "8", "--set", "cjk", "--modes", "keyword,hybrid"]
    args += ["--backend", "postgres", "--dsn", pgserver.server_uri()]
    code = quality.main([*args, "--cache", str(tmp_path / "c"), "--out", str(tmp_path / "o")])
    assert code == 0
    out = capsys.readouterr().out
    assert "nDCG@10, SQLite beside PostgreSQL:" in out
    report = json.loads(next((tmp_path / "o").glob("quality-*.json")).read_text())
    assert report["backend"] == "postgres"
    for mode in ("keyword", "hybrid"):
        pg = report["sets"]["cjk"]["modes"][mode]["ndcg@10"]
        assert pg == pytest.approx(report["sqlite"]["cjk"]["modes"][mode]["ndcg@10"], abs=0.1)


def test_words_with_accents_are_found_in_a_c_locale_database(make_app: Any, tmp_path: Path) -> None:
    """The index splits words by Unicode rules, not by the database's locale: in a database
    created with LC_CTYPE C, PostgreSQL's \\W matches every non-ASCII letter ("café" became
    "caf"), so accented words were never found."""
    import pgserver
    import psycopg

    uri = pgserver.server_uri()
    name = f"clocale_{tmp_path.name[-12:]}".replace("-", "_")
    with psycopg.connect(uri, autocommit=True) as con:
        con.execute(
            f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'"
            " LC_COLLATE 'C' LC_CTYPE 'C'"
        )
    dsn = uri.replace("/postgres?", f"/{name}?", 1)  # server_uri() has no empty password
    try:
        app = make_app(model=None, store={"backend": "postgres", "dsn": dsn})
        note = app.cfg.workspace / "trip.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text("# Reise\n\nDas Café an der Straße öffnet um acht; naïve plans.\n")
        app.indexer.reconcile()
        for query in ("café", "Straße", "öffnet", "naïve"):
            assert paths(q(app, query, mode="keyword")) == ["trip.md"], query
        app.close()
    finally:
        pgserver.drop(dsn)
