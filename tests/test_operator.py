"""The operator's door: what a daemon run as a service for months meets between its starts and
reloads (docs/service.md, docs/configuration.md).

- A restart with other chunking settings reads every note again (index/chunking.py), so the
  index holds what a new one would, and one with the same settings reads nothing again.
- A reload (SIGHUP) applies each key it says it applies to the part of the daemon that uses it,
  not only to the configuration object: the typo matcher's threshold, the request limit a
  larger `notes.max_bytes` needs.
- An upgrade's migrations are named in the log, every step of them.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from conftest import rpc, to_toml, wait_for

from memoryd.serve import methods as api

pytestmark = pytest.mark.backends

NOTE = "# Handbook\n\n" + "\n\n".join(
    f"## Part {i}\n\n"
    + " ".join(f"paragraph{i} word{j} about the quokka handbook" for j in range(40))
    for i in range(6)
)


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def chunks(app: Any) -> int:
    return int(call(app, "stats")["chunks"])


def chunk_texts(app: Any) -> list[str]:
    rows = app.store.read(
        lambda con: con.execute(
            "SELECT content FROM entries WHERE kind = 'chunk' ORDER BY content"
        ).fetchall()
    )
    return [r[0] for r in rows]


def test_a_restart_with_other_chunking_reads_every_note_again(
    make_app: Any, new_store: Any, tmp_path: Path
) -> None:
    big = {"chunk_max_tokens": 200, "chunk_overlap_tokens": 30}
    small = {"chunk_max_tokens": 48, "chunk_overlap_tokens": 8}
    app = make_app(model=None, indexer=big)
    (app.cfg.workspace / "handbook.md").write_text(NOTE)
    app.indexer.reconcile()
    before = chunks(app)
    make_app.close(app)

    app = make_app(model=None, indexer=small)  # the restart, with smaller chunks
    report = app.indexer.reconcile()
    assert report.indexed == 1, "the unchanged note was not read again"
    fresh = make_app(
        model=None,
        indexer=small,
        workspace=str(app.cfg.workspace),
        data_dir=str(tmp_path / "fresh"),
        store=new_store(),
        dailylog={"enabled": False},
    )
    fresh.indexer.reconcile()
    assert chunks(app) == chunks(fresh) > before
    assert chunk_texts(app) == chunk_texts(fresh)
    make_app.close(app)

    app = make_app(model=None, indexer=small)  # the same settings again: nothing is read
    report = app.indexer.reconcile()
    assert report.indexed == 0 and report.unchanged >= 1


def _reload(d: Any, **sections: dict[str, Any]) -> None:
    cfg = json.loads(json.dumps(d.cfg))
    for name, values in sections.items():
        cfg.setdefault(name, {}).update(values)
    d.config_path.write_text(to_toml(cfg))
    d.cfg = cfg
    seen = d.log().count("configuration reloaded")
    assert d.proc is not None
    d.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: d.log().count("configuration reloaded") > seen)


def test_reload_reaches_the_typo_matcher(daemon_factory: Any) -> None:
    """search.fuzzy_min_similarity (all of [search] reloads): the matcher takes it too."""
    d = daemon_factory()
    (d.workspace / "net.md").write_text("# Docker\n\nDocker networking uses bridges.\n")
    wait_for(lambda: d.call("search", {"query": "docker", "mode": "keyword"})["hits"])
    # the typo vocabulary is rebuilt in the background after an index change
    wait_for(lambda: d.call("search", {"query": "dokcer netwrking"})["hits"])
    _reload(d, search={"fuzzy_min_similarity": 1.0})
    assert d.call("search", {"query": "dokcer netwrking"})["hits"] == []
    _reload(d, search={"fuzzy_min_similarity": 0.4})
    assert d.call("search", {"query": "dokcer netwrking"})["hits"]


def test_reload_of_notes_max_bytes_raises_the_request_limit(daemon_factory: Any) -> None:
    """notes.max_bytes reloads, and the request limit is raised to fit such a note (docs:
    "raised to fit a note of notes.max_bytes"), for the connections made after the reload."""
    d = daemon_factory(notes={"max_bytes": 1024}, server={"max_request_bytes": 1024})
    text = "# Big\n\n" + "word " * 20_000  # 100 KB
    params = {"path": "big.md", "content": text}
    assert "error" in rpc(d.socket, "note.write", params)
    _reload(d, notes={"max_bytes": 200_000})
    answer = rpc(d.socket, "note.write", params)
    assert "error" not in answer, answer
    assert (d.workspace / "big.md").read_text() == text


@pytest.mark.sqlite_only("the PostgreSQL fixtures hand out databases migrated already")
def test_every_migration_step_is_in_the_log(daemon_factory: Any) -> None:
    from memoryd.store.migrations import MIGRATIONS

    d = daemon_factory(logging={"level": "info", "format": "json"})
    lines = [json.loads(line) for line in d.log().splitlines() if line.startswith("{")]
    done = [line for line in lines if line.get("event") == "schema migrated"]
    assert len(done) == 1, [line.get("event") for line in lines][:20]
    assert done[0]["steps"] == [step.__name__ for step in MIGRATIONS]
    assert (done[0]["from_version"], done[0]["to_version"]) == (0, len(MIGRATIONS))


def test_status_while_starting_does_not_call_the_watcher_stopped(make_app: Any) -> None:
    """READY=1 comes before start-up starts the watcher: `systemctl start` returns and a
    `memoryctl status` then said "needs attention: watcher stopped" of a healthy daemon."""
    import threading

    from memoryd.ctl.output import status_summary

    app = make_app(model=None)
    gate = threading.Event()
    start_watcher = app.start_watcher

    def held() -> None:
        gate.wait(30)
        start_watcher()

    app.start_watcher = held
    app.start(jobs=False)
    try:
        status = app.status()
        assert status["watcher"]["alive"] is None
        assert "watcher stopped" not in status_summary(status)
    finally:
        gate.set()
    wait_for(lambda: app.status()["watcher"]["alive"] is True)


@pytest.mark.parametrize("shared", ["data_dir", "socket", "database"])
def test_a_second_daemon_on_one_data_dir_or_socket_refuses_clearly(
    daemon_factory: Any, tmp_path: Path, short_dir: Path, shared: str, backend: str
) -> None:
    """`database`: the first daemon's memoryd.db hard-linked into the second's own data_dir.
    The lock beside the database did not see it (another folder, another lock file), so the
    second started on the same file with a WAL of its own: two WALs for one database."""
    if shared == "database" and backend != "sqlite":
        pytest.skip("a PostgreSQL database is no file")
    first = daemon_factory()
    other = {
        "data_dir": str(tmp_path / "second-data"),
        "socket": str(short_dir / "second.sock"),
        "workspace": str(tmp_path / "second-ws"),
    }
    if shared == "database":
        os.makedirs(other["data_dir"], mode=0o700)
        os.link(Path(first.cfg["data_dir"]) / "memoryd.db", Path(other["data_dir"]) / "memoryd.db")
    else:
        other[shared] = first.cfg[shared]
    second = daemon_factory(wait=False, **other)
    assert second.proc is not None
    assert second.proc.wait(60) == 1
    assert second.stop() == 1  # (closes its log file)
    fatal = [
        json.loads(line)
        for line in second.log().splitlines()
        if line.startswith("{") and '"fatal"' in line
    ]
    said = {
        "data_dir": "is already using",
        "socket": "is already running on",
        "database": "is already using the database",
    }[shared]
    assert len(fatal) == 1 and said in fatal[0]["error"], second.log()[-2000:]
    assert first.call("ping")["pong"] is True
    if shared == "database":
        assert "2 names (hard links); give this daemon a copy" in fatal[0]["error"]
        assert not (tmp_path / "second-data" / "memoryd.db-wal").exists()
    if shared == "socket":  # refused before a store was made in its own data_dir
        assert not (tmp_path / "second-data" / "memoryd.db").exists()


def test_export_and_import_carry_vectors_before_the_first_backfill_ends(
    make_app: Any, new_store: Any, tmp_path: Path
) -> None:
    """docs/service.md's restore on a new machine: `memoryctl import` into a daemon still
    embedding its notes for the first time (hours on a large workspace). Import stored a vector
    only for a model whose first backfill had finished, so it dropped every one and the daemon
    embedded them all again; export --vectors wrote none from such a store either."""
    app = make_app()
    app.model.start()
    assert app.model.wait_ready(30)
    for text in ("The quokka handbook lives in the wiki", "Quokkas moved north"):
        call(app, "add", content=text)
    app.embedder.run()
    items = call(app, "export", namespace="*", vectors=True)["items"]
    assert all(item.get("vector") for item in items)

    new = make_app(
        workspace=str(tmp_path / "new-ws"),
        data_dir=str(tmp_path / "new-data"),
        store=new_store(),
        dailylog={"enabled": False},
    )
    (new.cfg.workspace / "notes.md").write_text("# Notes\n\nstill waiting for a vector\n")
    new.indexer.reconcile()
    new.model.start()
    assert new.model.wait_ready(30)
    new.embedder.ensure_model()  # the model is known; its first backfill has not run
    answer = call(new, "import", items=items)
    assert answer["imported"] == 2 and answer["vectors"] == 2
    again = call(new, "export", namespace="*", vectors=True)["items"]
    assert sorted(i["vector"] for i in again) == sorted(i["vector"] for i in items)


def test_a_store_older_than_its_daily_log_hands_out_no_id_the_log_names(
    make_app: Any, new_store: Any, tmp_path: Path
) -> None:
    """A snapshot copied into data_dir (docs/service.md's restore on a new machine) is older
    than the workspace's daily log: its sequence handed out again the ids of the memories added
    after the copy, and deleting such a new memory took the old memory's line, the only trace
    left of it, out of the log. (A store without memories, made to import an export into, keeps
    the ids: test_transfer.)"""
    older_store, older_dir = new_store(), str(tmp_path / "restored")
    older = make_app(  # the copy: one memory, from before
        model=None, data_dir=older_dir, store=older_store, workspace=str(tmp_path / "then")
    )
    call(older, "add", content="from the day of the copy")
    make_app.close(older)

    app = make_app(model=None)  # the workspace's log goes on without it
    logged = [call(app, "add", content=text)["id"] for text in ("kept in the log", "logged")]
    log_text = "".join(p.read_text() for p in sorted((app.cfg.workspace / "daily").glob("*.md")))
    make_app.close(app)

    older = make_app(model=None, data_dir=older_dir, store=older_store)  # restored here
    new_id = call(older, "add", content="added after the restore")["id"]
    assert new_id > max(logged)
    call(older, "delete", id=new_id)
    after = "".join(p.read_text() for p in sorted((older.cfg.workspace / "daily").glob("*.md")))
    assert after == log_text


@pytest.mark.sqlite_only("the environment is read before the store is opened")
def test_the_daemon_names_an_environment_variable_it_does_not_read(daemon_factory: Any) -> None:
    d = daemon_factory(extra_env={"MEMORYD_LOG_LEVEL": "debug"})
    lines = [json.loads(line) for line in d.log().splitlines() if line.startswith("{")]
    said = [line for line in lines if line.get("variable") == "MEMORYD_LOG_LEVEL"]
    assert len(said) == 1, d.log()[-2000:]
    assert said[0]["event"] == "an environment variable memoryd does not read; ignored"
    assert said[0]["did_you_mean"] == "MEMORYD_LOGGING_LEVEL"
    assert said[0]["level"] == "warning"
