"""No thread to be had (stop 42, branch res18): the user's RLIMIT_NPROC (shared with every
process and thread of the user) or a container's pids.max makes every thread start fail with
`RuntimeError: can't start new thread`. A request that needed one was answered "internal error"
(-32603, a traceback in the log each time); a pool's work whose thread did not start stayed
queued and ran later for nobody. Now every pool goes on with the threads it has, refuses the
work only when it has none (-32003, retry, the limit to raise), and the daemon stays up.

Without root the limit cannot be reached on purpose (and root ignores RLIMIT_NPROC), so the
thread start is made to fail: in process, and in a `memoryd run` subprocess through a
sitecustomize on PYTHONPATH that refuses threads while a flag file exists."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import rpc, wait_for

from memoryd.core import threads
from memoryd.core.errors import Unavailable

pytestmark = pytest.mark.backends

REFUSE = 'raise RuntimeError("can\'t start new thread")'
# the function Thread.start calls to start the OS thread: Python 3.13 replaced
# `_start_new_thread(fn, args)` with `_start_joinable_thread(fn, handle=, daemon=)`
START = (
    "_start_joinable_thread"
    if hasattr(threading, "_start_joinable_thread")
    else "_start_new_thread"
)
# in a subprocess: a failed sitecustomize is one line on stderr and the daemon starts with threads,
# so it leaves FLAG.hooked and FLAG.refused behind for the test to see that it refused
SITECUSTOMIZE = f"""
import os, threading
_flag = os.environ["NO_THREADS_FLAG"]
_real = getattr(threading, {START!r})
def _start(*args, **kwargs):
    if os.path.exists(_flag):
        open(_flag + ".refused", "a").close()
        {REFUSE}
    return _real(*args, **kwargs)
setattr(threading, {START!r}, _start)
open(_flag + ".hooked", "a").close()
"""


def refuse_threads(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Thread starts fail while the flag is set (in this process)."""
    real = getattr(threading, START)
    flag = [True]

    def start(*args: Any, **kwargs: Any) -> Any:
        if flag[0]:
            raise RuntimeError("can't start new thread")
        return real(*args, **kwargs)

    monkeypatch.setattr(threading, START, start)
    return flag


def test_a_pool_goes_on_with_its_threads_and_refuses_only_without_any(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ran: list[str] = []
    empty = threads.Pool(2, thread_name_prefix="t-empty")
    busy = threads.Pool(4, thread_name_prefix="t-busy")
    try:
        assert busy.submit(ran.append, "first").result(10) is None  # one thread now
        flag = refuse_threads(monkeypatch)
        # the threads it has run the work (no new one could start)
        futures = [busy.submit(ran.append, f"w{i}") for i in range(5)]
        assert [f.result(10) for f in futures] == [None] * 5
        with pytest.raises(Unavailable, match="limit on threads"):
            empty.submit(ran.append, "ghost")  # none at all: refused, not queued
        flag[0] = False
        assert empty.submit(ran.append, "later").result(10) is None
        assert "ghost" not in ran and "later" in ran  # the refused work never ran after all
    finally:
        empty.shutdown()
        busy.shutdown()
    plain = ThreadPoolExecutor(1)  # what every pool was: the refused work ran later for nobody
    try:
        flag = refuse_threads(monkeypatch)
        with pytest.raises(RuntimeError):
            plain.submit(ran.append, "plain ghost")
        flag[0] = False
        plain.submit(ran.append, "plain later").result(10)
        assert "plain ghost" in ran
    finally:
        plain.shutdown()


def test_a_daemon_without_threads_answers_every_request_and_stays_up(
    daemon_factory: Any, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    flag = tmp_path / "no-threads"
    env = {
        "NO_THREADS_FLAG": str(flag),
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }
    d = daemon_factory(extra_env=env)
    wait_for(lambda: d.call("status")["index"]["initial_reconcile_done"])
    assert Path(f"{flag}.hooked").exists(), d.log()  # the daemon's thread starts can be refused
    flag.touch()
    answers: list[Any] = []

    def ask(i: int) -> None:
        method = ("add", {"content": f"added while no thread could start {i}"})
        answers.append(rpc(d.socket, *(method if i % 2 else ("search", {"query": "thread"}))))

    askers = [threading.Thread(target=ask, args=(i,)) for i in range(8)]
    for t in askers:
        t.start()
    for t in askers:
        t.join(60)
    assert len(answers) == 8
    for a in answers:  # each answered: done by a thread the pool had, or refused clearly
        assert "result" in a or (
            a["error"]["code"] == Unavailable.code and "limit on threads" in a["error"]["message"]
        ), a
    os.kill(d.proc.pid, signal.SIGHUP)  # a reload needs a thread of the loop's pool
    wait_for(lambda: "reload" in d.log())
    assert Path(f"{flag}.refused").exists()  # some thread start was refused, and it went on
    assert d.call("ping")["pong"]
    flag.unlink()
    added = sum(1 for a in answers if "result" in a and "id" in a["result"])
    time.sleep(0.5)  # bounded: nothing refused runs later (a ghost add would show here)
    stats = d.call("stats")
    assert stats["memories"] == added
    assert d.call("search", {"query": "thread"}) is not None  # works again
    lines = [json.loads(x) for x in d.log().splitlines() if x.startswith("{")]
    internal = [x for x in lines if "internal error" in str(x.get("error", ""))]
    assert not internal, internal
    assert d.proc.poll() is None


def test_the_web_page_without_threads_answers_503_with_the_fix(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webclient import WebHarness

    from memoryd.serve import methods  # noqa: F401  (the methods' table, as the daemon has it)

    h = WebHarness(make_app(model=None))
    try:
        h.sign_in()
        flag = refuse_threads(monkeypatch)  # the page's pool has no thread yet
        ans = h.request("GET", "/api/status")
        assert ans.status == 503, (ans.status, ans.text)
        assert ans.json()["error"]["code"] == Unavailable.code
        assert "limit on threads" in ans.json()["error"]["message"]
        flag[0] = False
        assert h.api("GET", "/api/status")["version"]
    finally:
        h.close()


@pytest.mark.sqlite_only("the SQLite store's retry timers")
def test_a_retry_timer_without_a_thread_is_asked_for_again_later(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refused write's retry (or a blocked checkpoint's) starts a timer thread: without one
    the write's own answer stands, and the next refusal asks for the timer again (the name was
    kept as 'waiting' for ever)."""
    app = make_app(model=None)
    store = app.store
    flag = refuse_threads(monkeypatch)
    store._later("busy", 0.01, lambda: None)  # no raise: logged
    assert "busy" not in store._timers
    flag[0] = False
    fired = threading.Event()
    store._later("busy", 0.01, fired.set)
    assert fired.wait(10)
