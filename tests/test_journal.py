"""The journal (issue 21): every log line is JSON off a terminal whoever wrote it (memoryd,
the standard library's logging, loguru, warnings), a repeating line is rate-limited, and a
failed embedding model names the fix."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, wait_for

from memoryd.core import logsetup
from memoryd.core.logsetup import RATE_LIMIT, RateLimiter

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

# Loaded by every Python started with this folder on PYTHONPATH: once memoryd has configured its
# logging, each library memoryd runs writes through its own API, as it would at run time.
SITECUSTOMIZE = """
import time
import memoryd.core.logsetup as _logsetup

_configure = _logsetup.configure


def configure(*args, **kwargs):
    _configure(*args, **kwargs)
    if getattr(configure, "done", False):
        return
    configure.done = True
    import logging
    import warnings

    from loguru import logger

    logging.getLogger("apscheduler.scheduler").warning(
        "Execution of job %r skipped: maximum number of running instances reached (%d)",
        "reconcile", 1,
    )
    for _ in range(200):  # a PostgreSQL outage: the pool retries many times a second
        logging.getLogger("psycopg.pool").warning("error connecting in 'pool-1': refused")
    logging.getLogger("watchdog.observers.inotify_buffer").error("inotify watch limit reached")
    logging.getLogger().error("a plain root logger line")
    warnings.warn("something is deprecated", UserWarning)
    logger.warning("fastembed: the model download failed, retrying")
    import threading

    def crash():
        raise RuntimeError("a thread crashed")

    t = threading.Thread(target=crash, name="crasher")
    t.start()
    t.join()

    class Odd:
        def __del__(self):
            raise ValueError("a __del__ failed")

    Odd()
    time.sleep(1.1)  # past the rate limit's window: the next line says how many were dropped
    logging.getLogger("psycopg.pool").warning("error connecting in 'pool-1': refused")


_logsetup.configure = configure
"""


def _json_lines(text: str) -> list[dict[str, Any]]:
    lines = [line for line in text.splitlines() if line.strip()]
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"not a JSON log line: {line!r}") from None
    return out


@pytest.mark.sqlite_only("the libraries' log lines do not depend on the store")
def test_every_log_line_is_json_whoever_wrote_it(daemon_factory: Any, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH") or str(ROOT)])
    # format "auto" and stderr to a file (not a terminal): JSON, as under systemd
    d = daemon_factory(logging={"format": "auto", "level": "info"}, extra_env={"PYTHONPATH": path})
    wait_for(lambda: "inotify watch limit" in d.log(), timeout=30)
    wait_for(lambda: '"repeated"' in d.log(), timeout=30)
    d.stop()
    lines = _json_lines(d.log())
    by_logger: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        by_logger.setdefault(str(line.get("logger_name")), []).append(line)
    assert "maximum number of running instances" in by_logger["apscheduler.scheduler"][0]["event"]
    assert by_logger["watchdog.observers.inotify_buffer"][0]["level"] == "error"
    assert by_logger["root"][0]["event"] == "a plain root logger line"
    assert "something is deprecated" in by_logger["py.warnings"][0]["event"]
    loguru = [x for x in lines if "fastembed: the model download failed" in str(x.get("event"))]
    assert len(loguru) == 1 and loguru[0]["level"] == "warning"
    pool = by_logger["psycopg.pool"]  # 201 lines written: the limit, then one with the count
    assert len(pool) == RATE_LIMIT + 1
    assert pool[-1]["repeated"] == 200 - RATE_LIMIT
    assert all("timestamp" in x and "level" in x for x in lines)
    # what Python reports itself: one line each, the traceback inside
    crashed = [x for x in lines if x["event"] == "uncaught exception in a thread"]
    assert crashed[0]["thread"] == "crasher" and "a thread crashed" in crashed[0]["exception"]
    ignored = [x for x in lines if x["event"] == "exception ignored"]
    assert "a __del__ failed" in ignored[0]["exception"]


def test_the_rate_limiter_counts_what_it_drops() -> None:
    now = [100.0]
    limiter = RateLimiter(limit=3, window=1.0, clock=lambda: now[0])
    results = [limiter.allow("psycopg.pool", "warning", "refused") for _ in range(10)]
    assert results == [(True, 0)] * 3 + [(False, 0)] * 7
    assert limiter.allow("other", "warning", "refused") == (True, 0)  # kinds counted apart
    now[0] += 1.5
    assert limiter.allow("psycopg.pool", "warning", "refused") == (True, 7)
    assert limiter.allow("psycopg.pool", "warning", "refused") == (True, 0)


def test_stdlib_and_loguru_lines_render_as_json_in_process(tmp_path: Path) -> None:
    import io
    import logging
    import warnings

    from loguru import logger

    stream = io.StringIO()  # not a terminal: JSON
    logsetup.configure("info", "auto", stream=stream)
    logging.getLogger("apscheduler.executors.default").warning("Run time of job %s missed", "x")
    logger.error("from loguru")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("careful", RuntimeWarning, stacklevel=1)
    logsetup.get_logger("memoryd.test").info("ours", n=1)
    lines = _json_lines(stream.getvalue())
    events = [x["event"] for x in lines]
    assert events[0] == "Run time of job x missed" and events[1] == "from loguru"
    assert "careful" in events[2] and events[3] == "ours"
    assert lines[0]["logger_name"] == "apscheduler.executors.default"


@pytest.mark.sqlite_only("the model does not depend on the store")
def test_a_failed_model_names_the_fix(daemon_factory: Any, tmp_path: Path) -> None:
    pytest.importorskip("fastembed")
    broken = tmp_path / "model"
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not an onnx model")
    (broken / "tokenizer.json").write_text("{}")
    d = daemon_factory(model=True, embedding={"model_path": str(broken), "allow_download": False})
    model = wait_for(
        lambda: (m := d.call("status")["model"])["state"] == "failed" and m, timeout=60
    )
    # the fix names the folder set (a copy not finished?), not "set embedding.model_path",
    # which is set, nor an install that the folder would still win over
    assert f"check the folder embedding.model_path {broken}" in model["reason"]
    assert "a copy not finished?" in model["reason"] and "restart" in model["reason"]
    assert "pip install" not in model["reason"]
    d.stop()
    failed = [x for x in _json_lines(d.log()) if x.get("event", "").startswith("embedding model")]
    assert any(str(broken) in x.get("fix", "") for x in failed), failed


def test_enabled_says_which_lines_are_written(tmp_path: Path) -> None:
    """logsetup.enabled (the server checks it before its per-request debug line, issue 23.3)
    agrees with what the level filter writes, at every configured level."""
    import io

    for level in ("debug", "info", "warning", "error"):
        stream = io.StringIO()
        logsetup.configure(level, "json", stream=stream)
        log = logsetup.get_logger("memoryd.test")
        for name in ("debug", "info", "warning", "error"):
            getattr(log, name)("line", level=name)
        written = {x["level"] for x in _json_lines(stream.getvalue())}
        assert written == {n for n in ("debug", "info", "warning", "error") if logsetup.enabled(n)}
        assert logsetup.enabled(level)


def test_a_burst_that_ended_is_counted_without_a_later_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The repeat limit's count rode on the next line of the kind: a burst that ended (a new
    store's migration steps, the odd files a first scan skips) lost its lines past the fifth
    without a trace. The daemon reports such counts every 30 s (logsetup.report_dropped)."""
    import io

    now = [100.0]
    monkeypatch.setattr(logsetup, "_limiter", RateLimiter(clock=lambda: now[0]))
    stream = io.StringIO()
    logsetup.configure("info", "json", stream=stream)
    log = logsetup.get_logger("memoryd.index.indexer")
    for i in range(12):
        log.warning("skipped", path=f"odd-{i}.md")
    assert logsetup.report_dropped() == 0  # its second is not over: a later line may count it
    now[0] += 1.5
    assert logsetup.report_dropped() == 1
    assert logsetup.report_dropped() == 0
    lines = _json_lines(stream.getvalue())
    assert len(lines) == RATE_LIMIT + 1
    assert lines[-1]["event"] == "skipped" and lines[-1]["repeated"] == 12 - RATE_LIMIT
    assert lines[-1]["dropped_only"] is True and lines[-1]["level"] == "warning"
    assert lines[-1]["logger_name"] == "memoryd.index.indexer"
