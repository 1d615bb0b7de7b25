"""Every line `memoryd run` writes off a terminal is one JSON object, whatever happened: a crash
by a fatal signal (faulthandler's dump, logged at the next start), a Ctrl-C while it starts, a
model whose ONNX graph makes onnxruntime's C++ logger write to fd 2. Each test reads the
daemon's stderr line by line with json.loads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, wait_for

from memoryd.core import crashlog

pytestmark = pytest.mark.sqlite_only("what reaches stderr does not depend on the store")


def json_lines(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"not a JSON log line: {line!r}\n{text}") from None
    return out


def test_a_crash_is_one_json_line_at_the_next_start(daemon_factory: Any) -> None:
    d = daemon_factory(logging={"format": "auto", "level": "info"})
    data = Path(d.cfg["data_dir"])
    assert (data / crashlog.FILE_NAME).exists()  # armed, empty, 0600
    assert (data / crashlog.FILE_NAME).stat().st_mode & 0o777 == 0o600
    os.kill(d.proc.pid, signal.SIGSEGV)  # what a C library's bug does
    assert d.proc.wait(30) == -signal.SIGSEGV
    again = daemon_factory(logging={"format": "auto", "level": "info"})
    wait_for(lambda: "previous run crashed" in again.log(), timeout=30)
    assert again.stop() == 0
    lines = json_lines(again.log())
    crashed = [x for x in lines if x["event"] == "the previous run crashed"]
    assert len(crashed) == 1 and crashed[0]["level"] == "error"
    assert "Segmentation fault" in crashed[0]["reason"]
    assert 'File "' in crashed[0]["exception"]  # the Python stacks of its threads
    assert not (data / crashlog.FILE_NAME).exists()  # a clean stop leaves nothing behind


# Loaded by the daemon's Python (PYTHONPATH): Ctrl-C (SIGINT) arrives at one moment of the start,
# before the event loop's handler is in place.
INTERRUPT = """
import os, signal, sys
WHERE = os.environ["INTERRUPT_AT"]
if WHERE == "import":  # while cli.main imports memoryd.ctl
    class Finder:
        def find_spec(self, name, path=None, target=None):
            if name == "memoryd.ctl.fsenv":
                os.kill(os.getpid(), signal.SIGINT)
            return None
    sys.meta_path.insert(0, Finder())
else:
    module, _, name = WHERE.partition(":")
    import importlib
    mod = importlib.import_module(module)
    real = getattr(mod, name)
    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)
    setattr(mod, name, interrupted)
"""


@pytest.mark.parametrize(
    "where",
    ["import", "memoryd.core.config:load_config", "memoryd.core.fsutil:acquire_lock"],
)
def test_ctrl_c_while_starting_is_one_json_line(
    where: str, tmp_path: Path, config_dict: dict[str, Any]
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(INTERRUPT)
    cfg = tmp_path / "c.toml"
    keys = ("workspace", "data_dir", "socket")
    cfg.write_text("".join(f"{k} = {json.dumps(config_dict[k])}\n" for k in keys))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env |= {"INTERRUPT_AT": where, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "run", "--config", str(cfg)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # not a shell's SIG_IGN
    )
    assert done.returncode == 130, done.stderr
    lines = json_lines(done.stderr)
    assert [x["event"] for x in lines][-1:] == ["interrupted while starting"]
    assert lines[-1]["signal"] == "SIGINT"


def _with_unused_initializer(model: bytes) -> bytes:
    """The model with one more initializer that no node uses (ModelProto.graph given twice is
    merged by protobuf): onnxruntime warns "Removing initializer 'unused'" on fd 2 when it
    loads it, as it does for many exported models."""
    from memoryd.index import onnxgraph as g

    tensor = g._encode([(1, 0, 1), (2, 0, 1), (8, 2, b"unused")]) + b"\x25\x00\x00\x80\x3f"
    return model + g._encode([(g._MODEL_GRAPH, 2, g._encode([(g._GRAPH_INITIALIZER, 2, tensor)]))])


@pytest.mark.model
def test_onnxruntime_writes_nothing_past_the_json_log(daemon_factory: Any, tmp_path: Path) -> None:
    from memoryd.index.embed import assemble_offline_dir, offline_files

    found = offline_files()
    if found is None:
        pytest.skip("the offline model is not installed")
    onnx, tokenizer = found
    noisy = tmp_path / "noisy.onnx"
    noisy.write_bytes(_with_unused_initializer(onnx.read_bytes()))
    folder = assemble_offline_dir(tmp_path / "model", noisy, tokenizer)
    d = daemon_factory(
        model=True,
        embedding={"model_path": str(folder)},
        logging={"format": "auto", "level": "debug"},
    )
    wait_for(lambda: "embedding model ready" in d.log(), timeout=120)
    assert d.stop() == 0
    lines = json_lines(d.log())
    ready = [x for x in lines if x["event"] == "embedding model ready"]
    assert ready, lines
    assert "@model#" in ready[0]["model"], ready  # embedding.model_path's model, its fingerprint


def test_lines_written_at_once_from_many_threads_stay_whole(tmp_path: Path) -> None:
    """memoryd's own lines and the libraries' (two loggers, two locks) on one unbuffered stderr
    (the unit's PYTHONUNBUFFERED=1): a line was written as two pieces (print's text, then its
    newline), so another thread's line landed between them, two JSON objects on one line."""
    import io
    import logging
    import threading

    from memoryd.core import logsetup

    path = tmp_path / "stderr.txt"
    raw = open(path, "wb", buffering=0)  # noqa: SIM115
    stream = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    logsetup.configure("info", "json", stream=stream)
    logsetup._limiter.limit = logsetup._limiter.repeat_limit = 10**9  # every line written
    own, lib = logsetup.get_logger("memoryd.test"), logging.getLogger("psycopg.pool")
    start = threading.Barrier(6)

    def write(i: int) -> None:
        start.wait()
        for n in range(600):
            if i % 2:
                own.warning("own line", n=n)
            else:
                lib.warning("library line %d", n)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stream.close()
    lines = json_lines(path.read_text())
    assert len(lines) == 6 * 600


def test_a_failure_that_recurs_is_counted_not_written_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A warning or error repeating every few seconds for as long as its cause lasts (a pool
    reconnecting to a PostgreSQL server that is down, a job failing at each run) was a line per
    try, ~30,000 an hour, the burst limit (5 a second) never reached: now REPEAT_LIMIT lines a
    kind (and file) per REPEAT_WINDOW_S, then the count. Info lines are not limited so."""
    import io
    import logging

    from memoryd.core import logsetup
    from memoryd.core.logsetup import REPEAT_LIMIT, REPEAT_WINDOW_S, RateLimiter

    now = [100.0]
    monkeypatch.setattr(logsetup, "_limiter", RateLimiter(clock=lambda: now[0]))
    stream = io.StringIO()
    logsetup.configure("info", "json", stream=stream)
    jobs, pool = logsetup.get_logger("memoryd.serve.jobs"), logging.getLogger("psycopg.pool")
    hour = 3600
    for second in range(0, hour, 2):  # a try every 2 s for an hour
        now[0] = 100.0 + second
        jobs.error("job failed", job="expiry", error="StoreUnavailable: unreachable")
        pool.warning("reconnection attempt in pool %r failed after %s sec", "memoryd", second)
        jobs.warning("skipped", path=f"odd-{second % 3}.md")  # three files: three kinds
        jobs.info("job done", job="backfill")
        logsetup.report_dropped()
    now[0] += REPEAT_WINDOW_S  # the cause is over: the last window's count is said too
    logsetup.report_dropped()
    lines = json_lines(stream.getvalue())

    def said(kind: list[dict[str, Any]]) -> int:
        return sum((not x.get("dropped_only")) + x.get("repeated", 0) for x in kind)

    tries = hour // 2
    windows = hour / REPEAT_WINDOW_S
    for logger_name, event in (("memoryd.serve.jobs", "job failed"), ("psycopg.pool", "recon")):
        kind = [x for x in lines if x["logger_name"] == logger_name and event in x["event"]]
        assert len(kind) <= windows * (REPEAT_LIMIT + 1), len(kind)
        assert said(kind) == tries  # every try written or counted
    skipped = [x for x in lines if x["event"] == "skipped"]
    assert {x["path"] for x in skipped} == {"odd-0.md", "odd-1.md", "odd-2.md"}
    assert len(skipped) <= 3 * windows * (REPEAT_LIMIT + 1)
    assert said(skipped) == tries
    assert len([x for x in lines if x["event"] == "job done"]) == tries


def test_a_job_that_works_again_says_so_once() -> None:
    """A job failing at each run is counted (above); the run that works again says how many
    runs failed, once, so a reader sees the end of the failure without counting lines."""
    import io
    from types import SimpleNamespace

    from memoryd.core import logsetup
    from memoryd.serve.jobs import Jobs

    stream = io.StringIO()
    logsetup.configure("info", "json", stream=stream)
    down = [True]

    def flaky() -> dict[str, Any]:
        if down[0]:
            raise RuntimeError("the store is away")
        return {"ok": 1}

    settings = SimpleNamespace(expiry_interval=300.0)
    jobs = Jobs({"flaky": (flaky, "expiry_interval")}, settings=lambda: settings)
    for _ in range(3):
        assert jobs.run_now("flaky")["error"]
    down[0] = False
    for _ in range(2):
        assert jobs.run_now("flaky")["error"] is None
    lines = json_lines(stream.getvalue())
    again = [x for x in lines if x["event"] == "job works again"]
    assert [(x["job"], x["failed_runs"], x["level"]) for x in again] == [("flaky", 3, "info")]
    assert [x["event"] for x in lines].count("job failed") == 3


def test_the_counts_are_said_when_the_daemon_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from memoryd.core import logsetup
    from memoryd.core.logsetup import REPEAT_LIMIT, RateLimiter

    now = [100.0]
    monkeypatch.setattr(logsetup, "_limiter", RateLimiter(clock=lambda: now[0]))
    stream = io.StringIO()
    logsetup.configure("info", "json", stream=stream)
    log = logsetup.get_logger("memoryd.serve.app")
    for second in range(40):  # a failure each second, the window (10 minutes) not over
        now[0] = 100.0 + second
        log.error("a batch of file changes was not applied", error="StoreUnavailable")
    assert logsetup.report_dropped() == 0
    assert logsetup.report_dropped(everything=True) == 1  # the daemon stops
    lines = json_lines(stream.getvalue())
    assert len(lines) == REPEAT_LIMIT + 1
    assert lines[-1]["repeated"] == 40 - REPEAT_LIMIT and lines[-1]["dropped_only"] is True


def test_a_count_line_reads_as_the_lines_it_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A library's lines are counted by their message before its arguments; the count line
    showed that template ("error connecting in %r: %s"), not a line as the library wrote it."""
    import io
    import logging

    from memoryd.core import logsetup
    from memoryd.core.logsetup import REPEAT_LIMIT, RateLimiter

    now = [100.0]
    monkeypatch.setattr(logsetup, "_limiter", RateLimiter(clock=lambda: now[0]))
    stream = io.StringIO()
    logsetup.configure("info", "json", stream=stream)
    pool = logging.getLogger("psycopg.pool")
    for second in range(30):
        now[0] = 100.0 + second
        pool.warning("error connecting in %r: %s", "memoryd", "connection refused")
    assert logsetup.report_dropped(everything=True) == 1
    last = json_lines(stream.getvalue())[-1]
    assert last["event"] == "error connecting in 'memoryd': connection refused"
    assert last["repeated"] == 30 - REPEAT_LIMIT and last["logger_name"] == "psycopg.pool"
