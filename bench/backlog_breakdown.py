"""Where search time goes while a backlog is embedded (issue 12.1): one daemon, idle then busy.

    PYTHONPATH=. .venv/bin/python -m bench.backlog_breakdown [PROFILE_PREFIX]

Per phase (idle over 40 notes, then while 1,200 new chunks are embedded, then idle again over
the same 1,240 notes once they are) it measures hybrid searches with a new
query (query embedding + both pools), the same queries again (cached vector: pools only) and
keyword searches (keyword pool only), client time and the server's took_ms. With a prefix it also
records `py-spy record --native --threads -f raw` of the daemon (py-spy slows the daemon a lot:
use the profile for where time goes, not for the figures). Prints one JSON line.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.corpus import write_workspace
from bench.embedding import _queries
from bench.run import Daemon, pct


def _q(d: Daemon, text: str, mode: str = "hybrid") -> tuple[float, float]:
    t = time.perf_counter()
    r = d.call("search", {"query": text, "mode": mode, "limit": 10})
    return (time.perf_counter() - t) * 1000, r["took_ms"]


def _spy(d: Daemon, out: str, seconds: int) -> subprocess.Popen[bytes]:
    cmd = [str(Path(sys.executable).parent / "py-spy"), "record", "-p", str(d.proc.pid)]
    cmd += ["--threads", "--native", "-r", "250", "-f", "raw", "-o", out, "-d", str(seconds)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main(prof: str = "") -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="memoryd-breakdown-"))
    ws = root / "ws"
    write_workspace(ws, 40, seed=21)
    d = Daemon(root, ws, model=True)
    try:
        d.wait(lambda: (d.call("status") or {}).get("model", {}).get("state") == "ready", 300)
        d.wait(lambda: (d.call("status") or {}).get("vectors", {}).get("pending") == 0, 600)
        for t in _queries(3, 1):
            _q(d, t)
        idle = [_q(d, t) for t in _queries(40, 2)]
        idle_c = [_q(d, t) for t in _queries(40, 2)]
        idle_k = [_q(d, t, "keyword") for t in _queries(40, 4)]
        idle_paced = []  # paced as the busy phase is: caches cool down between queries
        for t in _queries(40, 6):
            idle_paced.append(_q(d, t))
            time.sleep(0.1)
        write_workspace(ws / "backlog", 1200, seed=22)
        d.wait(lambda: (d.call("status") or {}).get("vectors", {}).get("pending", 0) > 200, 120)
        d.wait(lambda: (d.call("status") or {}).get("vectors", {}).get("embedding"), 60)
        spy = _spy(d, prof + "-busy.txt", 10) if prof else None
        busy, busy_c, busy_k = [], [], []
        for t in _queries(40, 3):
            busy.append(_q(d, t))
            time.sleep(0.1)
        for t, t2 in zip(_queries(40, 2), _queries(40, 5), strict=True):
            busy_c.append(_q(d, t))
            time.sleep(0.1)
            busy_k.append(_q(d, t2, "keyword"))
            time.sleep(0.1)
        if spy is not None:
            spy.wait()
        st = (d.call("status") or {}).get("vectors", {})
        # the same index once the backlog is embedded: 1,240 notes, not the 40 of "idle"
        d.wait(lambda: (d.call("status") or {}).get("vectors", {}).get("pending") == 0, 600)
        after, after_c, after_k = [], [], []
        for t, t2 in zip(_queries(40, 8), _queries(40, 9), strict=True):
            after.append(_q(d, t))
            time.sleep(0.1)
            after_c.append(_q(d, t))
            time.sleep(0.1)
            after_k.append(_q(d, t2, "keyword"))
            time.sleep(0.1)
    finally:
        d.stop()
        shutil.rmtree(root, ignore_errors=True)

    def c(xs: list[tuple[float, float]], i: int, k: int) -> float:
        return round(pct([x[i] for x in xs], k), 2)

    return {
        "hybrid_new_client_p50_p95": [
            c(idle, 0, 50),
            c(idle, 0, 95),
            c(busy, 0, 50),
            c(busy, 0, 95),
        ],
        "ratio_p95": round(pct([x[0] for x in busy], 95) / pct([x[0] for x in idle], 95), 2),
        "hybrid_new_paced_idle_client": [c(idle_paced, 0, 50), c(idle_paced, 0, 95)],
        "hybrid_new_server": [c(idle, 1, 50), c(idle, 1, 95), c(busy, 1, 50), c(busy, 1, 95)],
        "hybrid_cached_server": [
            c(idle_c, 1, 50),
            c(idle_c, 1, 95),
            c(busy_c, 1, 50),
            c(busy_c, 1, 95),
        ],
        "keyword_server": [c(idle_k, 1, 50), c(idle_k, 1, 95), c(busy_k, 1, 50), c(busy_k, 1, 95)],
        "after_hybrid_new_client": [c(after, 0, 50), c(after, 0, 95)],
        "ratio_p95_vs_after": round(
            pct([x[0] for x in busy], 95) / pct([x[0] for x in after], 95), 2
        ),
        "after_hybrid_new_server": [c(after, 1, 50), c(after, 1, 95)],
        "after_hybrid_cached_server": [c(after_c, 1, 50), c(after_c, 1, 95)],
        "after_keyword_server": [c(after_k, 1, 50), c(after_k, 1, 95)],
        "pending_after": st.get("pending"),
        "rate_per_s": st.get("rate_per_s"),
    }


if __name__ == "__main__":
    from memoryd.core import logsetup

    logsetup.configure("warning")
    print(json.dumps(main(sys.argv[1] if len(sys.argv) > 1 else "")))
