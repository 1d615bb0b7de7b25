"""Red-team cases after issue 10: the same classes of bug (forget means forget, no secret in a
plain-text file, every stored value readable back, memoryd's own files are not notes), reached
by ways the issue did not list."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import DEADLINE_S

from memoryd.core.config import Config
from memoryd.core.errors import ConfigError, InvalidInput, NotFound, Refused
from memoryd.core.oserrors import describe
from memoryd.search.searcher import SearchRequest
from memoryd.serve import methods as api
from memoryd.store import entries

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

GHP = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
AWS = "AKIAIOSFODNN7EXAMPLE"


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


def log_text(app: Any) -> str:
    folder = app.cfg.workspace / app.cfg.dailylog.folder
    return "".join(p.read_text() for p in sorted(folder.rglob("*.md")))


def keyword_paths(app: Any, query: str) -> list[Any]:
    res = app.searcher.search(SearchRequest(query=query, mode="keyword", record_access=False))
    return [h.get("path") or h["kind"] for h in res["hits"]]


# --- forget means forget, whatever the daily log layout ----------------------------------------


@pytest.mark.parametrize("filename", ["%Y/%m/%Y-%m-%d.md", "%Y/%Y-%m-%d.md"])
def test_daily_log_in_sub_folders_forgets_and_rewrites(make_app: Any, filename: str) -> None:
    app = make_app(model=None, dailylog={"filename": filename})
    gone = call(app, "add", content="the locker code is violet")["id"]
    kept = call(app, "add", content="standup moves to ten")["id"]
    pruned = call(app, "add", content="old caching approach", tier="deprecated")["id"]
    assert "locker code" in log_text(app) and "old caching" in log_text(app)
    call(app, "delete", id=gone)
    call(app, "update", id=kept, content=f"standup moves to eleven, key {AWS}", allow_secrets=True)
    call(app, "prune")
    text = log_text(app)
    assert "locker code" not in text and "old caching" not in text and "ten" not in text
    assert "moves to eleven" in text and AWS not in text
    assert pruned not in [i["id"] for i in call(app, "list")["items"]]


def test_a_line_is_forgotten_after_the_filename_setting_changed(make_app: Any) -> None:
    app = make_app(model=None)
    mid = call(app, "add", content="the attic key is under the mat")["id"]
    app.dailylog.settings = app.cfg.dailylog.__class__(
        **{**app.cfg.dailylog.__dict__, "filename": "%Y/%Y-%m-%d.md"}
    )
    call(app, "delete", id=mid)
    assert "attic key" not in log_text(app)


# --- secrets in names --------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["type", "namespace"])
def test_a_credential_as_type_or_namespace_is_refused(make_app: Any, field: str) -> None:
    app = make_app(model=None)
    with pytest.raises(Refused) as err:
        call(app, "add", content="harmless", **{field: GHP})
    assert field in err.value.message and GHP.lower() not in err.value.message.lower()
    mid = call(app, "add", content="harmless")["id"]
    with pytest.raises(Refused):
        call(app, "update", id=mid, **{field: GHP})
    with pytest.raises(Refused):  # a name cannot hold [REDACTED:...]: redact mode refuses too
        app.memories.secrets_mode = "redact"
        call(app, "add", content="harmless two", **{field: GHP})
    with pytest.raises(Refused) as err:
        app.memories.secrets_mode = "refuse"
        call(app, "import", items=[{"content": "imported", field: GHP}])
    assert err.value.data["fields"] == [field]


def test_the_daily_log_line_is_redacted_whole_whatever_the_format_shows(make_app: Any) -> None:
    app = make_app(
        model=None,
        dailylog={"line_format": "- {time} [{type}] ({namespace}) {source} {content}{tags}"},
    )
    call(app, "add", content="deploy note", namespace=GHP, type=GHP, allow_secrets=True)
    text = log_text(app)
    assert "deploy note" in text and GHP.lower() not in text.lower()
    assert text.count("[REDACTED:github_token]") == 2


# --- import: every stored value can be read back, and no secret rides in history ---------------


def test_imported_history_must_be_json_text_and_is_stored_redacted(
    make_app: Any, new_store: Any
) -> None:
    app = make_app(model=None)
    with pytest.raises(InvalidInput) as err:
        call(
            app,
            "import",
            items=[{"content": "plain", "history": [{"ts": 1, "field": "content", "old": "x"}]}],
        )
    assert "line 1" in err.value.message and call(app, "stats")["memories"] == 0
    item = {
        "content": "rotated the key",
        "history": [
            {"ts": 1, "field": "content", "old": json.dumps(f"key {GHP}"), "new": '"rotated"'},
            {"ts": 2, "field": "tags", "old": json.dumps([GHP]), "new": "[]"},
        ],
        "access_log": [{"ts": 3, "query": f"where is {AWS}", "rank": 1}],
    }
    mid = call(app, "import", items=[item])["ids"][0]
    hist = call(app, "history", id=mid)["history"]
    assert [h["old"] for h in hist] == ["key [REDACTED:github_token]", ["[REDACTED:github_token]"]]
    exported = json.dumps(call(app, "export")["items"])
    assert GHP not in exported and AWS not in exported
    # a round trip of what export wrote is unchanged
    again = make_app(model=None, data_dir=str(app.cfg.data_dir) + "-2", store=new_store())
    call(again, "import", items=call(app, "export")["items"])
    assert call(again, "history", id=mid)["history"] == hist


def test_history_with_a_non_json_value_in_the_database_still_answers(
    make_app: Any, new_store: Any
) -> None:
    app = make_app(model=None)
    mid = call(app, "add", content="legacy row")["id"]
    from memoryd.store import lifecycle as lcstore

    with app.store.write() as con:
        lcstore.add_history(con, mid, 1.0, "content", "raw old", None)
    assert call(app, "history", id=mid)["history"][0]["old"] == "raw old"
    again = make_app(model=None, data_dir=str(app.cfg.data_dir) + "-2", store=new_store())
    call(again, "import", items=call(app, "export")["items"])  # exports of such rows import
    assert call(again, "history", id=mid)["history"][0]["old"] == "raw old"


# --- memoryd's own files inside the workspace --------------------------------------------------


def test_data_dir_and_log_file_inside_the_workspace_are_not_notes(
    make_app: Any, tmp_path: Path, backend: str
) -> None:
    ws = tmp_path / "ws"
    app = make_app(
        model=None,
        data_dir=str(ws / "data"),
        indexer={"include": ["**/*"], "skip_hidden": False},
        logging={"file": str(ws / "memoryd-log.md")},
    )
    (ws / "memoryd-log.md").write_text("walrus in the log\n")
    (ws / "note.md").write_text("# Note\n\nthe gnu note\n")
    mid = call(app, "add", content="the walrus memory")["id"]
    if backend == "sqlite":  # a copy of the SQLite file in data/checkpoints
        call(app, "checkpoint.create", name="c1")
    call(app, "delete", id=mid)
    call(app, "delete", path="note.md")  # moved to <data_dir>/trash, inside the workspace
    call(app, "reindex", full=True)
    docs = app.store.read(entries.documents)
    assert not [p for p in docs if p.startswith("data/") or p == "memoryd-log.md"]
    assert keyword_paths(app, "walrus") == [] and keyword_paths(app, "gnu") == []
    for method, params in [
        ("delete", {"path": "data"}),
        ("delete", {"path": "data/memoryd.db"}),
        ("delete", {"path": "memoryd-log.md"}),
        ("note.write", {"path": "data/x.md", "content": "planted"}),
        ("note.read", {"path": "memoryd-log.md"}),
    ]:
        with pytest.raises(InvalidInput):
            call(app, method, **params)
    assert (backend != "sqlite" or app.cfg.db_path.exists()) and not (ws / "data" / "x.md").exists()
    assert call(app, "status", check=True)["drift"]["total"] == 0


def test_data_dir_equal_to_the_workspace_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="data_dir"):
        Config.from_dict({"workspace": str(tmp_path / "w"), "data_dir": str(tmp_path / "w/")})


def test_a_workspace_that_is_a_file_gets_a_one_line_reason(tmp_path: Path) -> None:
    exc = FileExistsError(errno.EEXIST, "File exists", str(tmp_path / "ws"))
    assert "a file is in the way where a folder must be" in describe(exc)


# --- files that are not what their name says ---------------------------------------------------


def _returns_within(fn: Any, seconds: float = 5.0) -> Any:
    """Run fn in a thread; fail (instead of hanging the suite) when it blocks."""
    import threading

    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except Exception as exc:  # handed back to the test
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{fn} blocked for {seconds}s"
    return out


def _today_log(app: Any) -> Path:
    from datetime import datetime

    return app.dailylog.path_for(datetime.now().astimezone())


def test_a_fifo_named_like_a_note_or_a_log_never_blocks(make_app: Any) -> None:
    import os

    from memoryd.index.indexer import FileState

    app = make_app(model=None)
    ws = app.cfg.workspace
    ws.mkdir(parents=True, exist_ok=True)
    os.mkfifo(ws / "pipe.md")
    for method, params in [
        ("note.read", {"path": "pipe.md"}),
        ("note.append", {"path": "pipe.md", "content": "more"}),
        ("note.write", {"path": "pipe.md", "content": "new", "expected_sha256": "0" * 64}),
    ]:
        out = _returns_within(lambda m=method, p=params: call(app, m, **p))
        assert isinstance(out.get("error"), InvalidInput | Refused), (method, out)
    # a FIFO swapped in after the indexer's stat: its read is skipped, not blocked
    out = _returns_within(lambda: app.indexer._read(FileState("pipe.md", ws / "pipe.md", 0, 0)))
    assert "error" in out and "regular" in str(out["error"])
    log = _today_log(app)
    log.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(log)
    out = _returns_within(lambda: call(app, "add", content="the fifo did not stop me"))
    assert out["value"]["stored"] is True
    out = _returns_within(lambda: call(app, "delete", id=out["value"]["id"]))
    assert out["value"]["deleted"] is True


def test_the_daily_log_never_writes_through_a_symlink(make_app: Any, tmp_path: Path) -> None:
    import os

    app = make_app(model=None)
    outside = tmp_path / "outside"
    outside.mkdir()
    rc = outside / "bashrc"
    rc.write_text("# shell start-up\n")
    log = _today_log(app)
    log.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(rc, log)  # a planted symlink under today's log name
    call(app, "add", content="$(touch /tmp/pwned) is just text")
    assert rc.read_text() == "# shell start-up\n"
    os.unlink(log)
    mid = call(app, "add", content="a line to rewrite later")["id"]
    tmp = log.with_name(f".{log.name}.{os.getpid()}.tmp")
    os.symlink(rc, tmp)  # a planted symlink at the rewrite's temp name
    call(app, "delete", id=mid)
    assert rc.read_text() == "# shell start-up\n" and "rewrite later" not in log.read_text()
    # the log folder itself a symlink leading outside: nothing is created there
    for p in sorted(log.parent.iterdir()):
        p.unlink()
    log.parent.rmdir()
    os.symlink(outside, log.parent)
    call(app, "add", content="should not land outside")
    assert sorted(p.name for p in outside.iterdir()) == ["bashrc"]


def test_changing_any_field_the_line_shows_rewrites_it(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"line_format": "- [{type}] {content} ({source})"})
    mid = call(app, "add", content="ship on friday", type="plan", source="standup")["id"]
    call(app, "update", id=mid, type="decision", source="retro")
    text = log_text(app)
    assert "[decision] ship on friday (retro)" in text and "standup" not in text


# --- ids stay small enough for every JSON reader -----------------------------------------------


def test_an_imported_huge_id_is_renumbered_and_later_ids_stay_exact(
    make_app: Any, new_store: Any
) -> None:
    app = make_app(model=None)
    res = call(
        app,
        "import",
        items=[
            {"id": 2**53 - 1, "content": "at the edge of exact"},
            {"id": 2**60, "content": "far past it"},
            {"id": 77, "content": "an ordinary id"},
        ],
    )
    assert res["imported"] == 3 and 77 in res["ids"]
    assert sorted(r["from"] for r in res["renumbered"]) == [2**53 - 1, 2**60]
    later = call(app, "add", content="added afterwards")["id"]
    assert later < 2**32
    # what export writes imports back, ids and all
    again = make_app(model=None, data_dir=str(app.cfg.data_dir) + "-2", store=new_store())
    back = call(again, "import", items=call(app, "export")["items"])
    assert back["renumbered"] == [] and sorted(back["ids"]) == sorted([*res["ids"], later])


# --- checkpoints: list only what can be restored or deleted ------------------------------------


@pytest.mark.sqlite_only("checkpoints copy the SQLite file (PgStore.backup_to refuses)")
def test_checkpoint_list_and_still_in_name_only_regular_files(make_app: Any) -> None:
    import os

    app = make_app(model=None)
    call(app, "checkpoint.create", name="real")
    folder = app.cfg.data_dir / "checkpoints"
    (folder / "adir.db").mkdir()
    os.mkfifo(folder / "pipe.db")
    os.symlink(folder / "missing", folder / "dangling.db")
    os.symlink("loop.db", folder / "loop.db")
    assert [c["name"] for c in call(app, "checkpoint.list")["checkpoints"]] == ["real"]
    mid = call(app, "add", content="a memory to delete")["id"]
    call(app, "checkpoint.create", name="after")
    still_in = call(app, "delete", id=mid)["still_in"]
    assert {c["name"] for c in still_in} <= {"real", "after"} and "after" in str(still_in)


# --- config: the log file is not one of memoryd's own files ------------------------------------


@pytest.mark.parametrize("name", ["memoryd.db", "memoryd.db-wal", "memoryd.lock", "CONFIG"])
def test_a_log_file_that_is_one_of_memoryds_own_files_is_a_config_error(
    tmp_path: Path, name: str
) -> None:
    from memoryd.core.config import load_config

    conf = tmp_path / "c.toml"
    target = conf if name == "CONFIG" else tmp_path / "data" / name
    conf.write_text(
        f'workspace = "{tmp_path / "ws"}"\ndata_dir = "{tmp_path / "data"}"\n'
        f'[logging]\nfile = "{target}"\n'
    )
    with pytest.raises(ConfigError, match=r"logging\.file"):
        load_config(conf, env={})
    conf.write_text(conf.read_text().replace(str(target), str(tmp_path / "data" / "memoryd.log")))
    assert load_config(conf, env={}).logging.file.endswith("memoryd.log")


@pytest.mark.sqlite_only("checkpoints copy the SQLite file (PgStore.backup_to refuses)")
def test_a_restore_takes_the_lines_of_memories_it_took_away(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"filename": "%Y/%Y-%m-%d.md"})
    call(app, "add", content="kept through the restore")
    call(app, "checkpoint.create", name="before")
    gone = call(app, "add", content="added after the checkpoint")["id"]
    (app.cfg.workspace / "daily" / "mine.md").write_text("my own line, no marker\n")
    call(app, "checkpoint.restore", name="before")
    text = log_text(app)
    assert "kept through the restore" in text and "added after" not in text
    assert "my own line" in text
    with pytest.raises(NotFound):
        call(app, "delete", id=gone)


# --- a burst of clients ------------------------------------------------------------------------


def test_a_burst_of_connections_is_queued_not_refused(daemon_factory: Any) -> None:
    import socket

    from tests.conftest import rpc

    somaxconn = Path("/proc/sys/net/core/somaxconn")
    if somaxconn.exists() and int(somaxconn.read_text()) < 400:
        pytest.skip("net.core.somaxconn is below 400 on this machine")
    d = daemon_factory(server={"max_connections": 8})
    socks, refused = [], 0
    try:
        for _ in range(300):  # all at once, before the daemon accepts any
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)  # a timeout makes connect() non-blocking: EAGAIN when queue is full
            try:
                s.connect(str(d.socket))
                socks.append(s)
            except BlockingIOError:
                refused += 1
                s.close()
    finally:
        for s in socks:
            s.close()
    # beyond max_connections each new client evicts an idle one; those being evicted (or gone)
    # do not count, so a client right after the burst never finds the server "full"
    answers = [rpc(d.socket, "ping", timeout=DEADLINE_S) for _ in range(5)]
    assert refused == 0
    assert all(a.get("result", {}).get("pong") for a in answers), answers[:3]


# --- delete path names what it deletes ---------------------------------------------------------


def test_delete_path_of_a_symlink_moves_the_link_not_its_target(make_app: Any) -> None:
    app = make_app(model=None)
    ws = app.cfg.workspace
    (ws / "projects").mkdir(parents=True)
    (ws / "projects" / "plan.md").write_text("# Plan\n\nthe project plan of the aardwolf\n")
    (ws / "alias").symlink_to("projects")
    (ws / "planlink.md").symlink_to("projects/plan.md")
    call(app, "reindex")
    for name in ("alias", "planlink.md"):
        res = call(app, "delete", path=name)
        assert Path(res["trash"]).is_symlink() and not (ws / name).is_symlink()
    assert (ws / "projects" / "plan.md").is_file()
    assert keyword_paths(app, "aardwolf") == ["projects/plan.md"]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("jobs", {"expiry_interval": "99999999999d"}),  # overflowed the scheduler: traceback
        ("jobs", {"checkpoint_interval": "1ms"}),  # a job every millisecond
        ("lifecycle", {"temporary_ttl": "99999999999d"}),
    ],
)
def test_durations_out_of_range_are_config_errors(
    tmp_path: Path, key: str, value: dict[str, str]
) -> None:
    with pytest.raises(ConfigError, match=next(iter(value))):
        Config.from_dict({"workspace": str(tmp_path / "w"), key: value})


@pytest.mark.parametrize("tag", ["", " ", "#", ",", ["a"], 5])
def test_delete_by_an_empty_or_odd_tag_is_invalid_input(make_app: Any, tag: Any) -> None:
    app = make_app(model=None)
    call(app, "add", content="tagged", tags=["a"])
    with pytest.raises(InvalidInput, match="tag"):
        call(app, "delete", tag=tag)
    assert call(app, "stats")["memories"] == 1


def test_connections_being_evicted_do_not_count_against_the_limit(make_app: Any) -> None:
    """A burst: each newcomer evicts the longest-idle connection, and newcomers whose clients
    already left finish at once while the evicted ones are still closing. Counting those made
    the server answer "too many connections (all running a request)" with none running."""
    import dataclasses
    import time

    from memoryd.serve.places import EVICT_AFTER_S, Place
    from memoryd.serve.server import Server

    class Writer:
        def write(self, data: bytes) -> None:
            pass

        def close(self) -> None:
            pass

    app = make_app(model=None)
    server = Server(
        app, dataclasses.replace(app.cfg.server, max_connections=2), app.cfg.data_dir / "x"
    )
    try:
        for key in ("a", "b"):
            conn = server.places.conns[key] = Place(Writer())
            conn.idle_since = time.monotonic() - EVICT_AFTER_S  # silent long enough (res17)
        assert [server.places.make_room() for _ in range(3)] == [True, True, True]
        assert server.places.evicted == 1 and list(server.places.closing) == ["a"]
    finally:
        server._pool.shutdown()


def test_a_line_moved_out_of_the_log_folder_is_forgotten_too(make_app: Any) -> None:
    app = make_app(model=None)
    gone = call(app, "add", content="the archived memory about quetzals")["id"]
    call(app, "add", content="a kept memory about toucans")
    log = _today_log(app)
    archive = app.cfg.workspace / "archive" / log.name  # Obsidian users archive old logs
    archive.parent.mkdir()
    log.rename(archive)
    call(app, "reindex")
    assert keyword_paths(app, "quetzals") == ["memory"]  # still the memory's line: found once
    call(app, "delete", id=gone)
    assert "quetzals" not in archive.read_text() and "toucans" in archive.read_text()
    assert keyword_paths(app, "quetzals") == []


@pytest.mark.parametrize("ending", ["\r", "\r\n"])
def test_forgetting_a_line_keeps_the_rest_of_a_log_with_other_line_endings(
    make_app: Any, ending: str
) -> None:
    app = make_app(model=None)
    first = call(app, "add", content="first memory alpha")["id"]
    last = call(app, "add", content="second memory beta")["id"]
    log = _today_log(app)
    text = log.read_text().replace("\n", ending)
    log.write_bytes(text.replace(ending, f"{ending}my own precious line{ending}", 1).encode())
    call(app, "delete", id=last)  # with CR-only lines this emptied the whole file
    after = log.read_bytes().decode()
    assert "precious" in after and "alpha" in after and "beta" not in after
    assert after.count(ending) == text.count(ending)  # one line gone, one line added
    call(app, "update", id=first, content="first memory gamma")
    after = log.read_bytes().decode()
    assert "gamma" in after and "alpha" not in after and "precious" in after


@pytest.mark.parametrize("path", ["x" * 300, "y" * 300 + "/a.md", "z" * 300 + ".md"])
def test_reindex_of_a_name_too_long_is_not_an_internal_error(make_app: Any, path: str) -> None:
    app = make_app(model=None)
    try:  # nothing there: no -32603
        res = call(app, "reindex", path=path)
    except NotFound as exc:  # a name that is no file (the system refused to look: none)
        assert "no file or folder" in str(exc)
    else:  # one the system refused to read: skipped, with a log line
        assert res["indexed"] == 0 and res["deleted"] == 0 and res["skipped"] == 1


@pytest.mark.parametrize("path", ["nosuch.md", "nosuch", "a/nosuch.md", "~"])
def test_reindex_of_a_path_with_nothing_there_says_so(make_app: Any, path: str) -> None:
    """A mistyped path was an empty success ("indexed 0, unchanged 0, ...", exit 0); one whose
    note was deleted still drops it from the index, and an existing file that is no note is
    skipped, as before."""
    app = make_app(model=None)
    ws = app.cfg.workspace
    (ws / "a").mkdir(parents=True, exist_ok=True)
    (ws / "a" / "gone.md").write_text("# Gone\n\nsoon deleted\n")
    (ws / "a" / "x.txt").write_text("not a note")
    call(app, "reindex")
    with pytest.raises(NotFound, match=f"no file or folder '{path}' in the workspace"):
        call(app, "reindex", path=path)
    (ws / "a" / "gone.md").unlink()
    assert call(app, "reindex", path="a/gone.md")["deleted"] == 1
    assert call(app, "reindex", path="a/x.txt")["indexed"] == 0  # there: no error
    assert call(app, "reindex", path="a")["deleted"] == 0


def test_import_never_reuses_the_id_of_a_deleted_memory_or_chunk(make_app: Any) -> None:
    app = make_app(model=None)
    note = app.cfg.workspace / "staging.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("# Staging\n\nstaging notes about servers\n")
    call(app, "reindex")
    chunk = call(app, "list", kind="chunk")["items"][0]["id"]
    memory = call(app, "add", content="a memory to delete")["id"]
    call(app, "delete", id=memory)
    note.unlink()
    call(app, "reindex")
    res = call(
        app,
        "import",
        items=[
            {"id": chunk, "content": "imported, asking for the old chunk's id"},
            {"id": memory, "content": "imported, asking for the deleted memory's id"},
            {"id": 10_000, "content": "imported with an id never handed out"},
        ],
    )
    assert chunk not in res["ids"] and memory not in res["ids"] and 10_000 in res["ids"]
    assert {r["from"] for r in res["renumbered"]} == {chunk, memory}


@pytest.mark.parametrize(
    "name",
    ["agent-cf6c67c3-4ab9-4910-bc66-fac5073ed398", "project-2026-alpha-team-backend-services"],
)
def test_ordinary_long_names_are_not_taken_for_credentials(make_app: Any, name: str) -> None:
    app = make_app(model=None)
    res = call(app, "add", content="a note for this agent", namespace=name)
    assert res["memory"]["namespace"] == name and not res["warnings"]
