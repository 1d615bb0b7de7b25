"""Search while notes and memories are written (issue 23.1): the soak's write mix against idle,
on the same daemon and the same index, in alternating phases of one run.

    python -m bench writeload [--chunks 10000,100000] [--rounds 3] [--seconds 60]
                              [--profile PREFIX]

Per size: the workspace is indexed and given synthetic vectors under the offline model's identity
(as the soak does), `memoryd run` starts with the model, and then `rounds` times: an idle phase
(searches only, one every 0.25 s: hybrid, keyword, auto and vector in turn, a third of them new
texts so the model embeds queries), then a write phase with the same kind of searches plus the
soak's writes (an `add` every 4th step, a note edited every 10th, a new note every 40th), then a
wait until the daemon is quiet again (nothing pending to embed). Each phase's p95 is over its own
searches; the ratio is write p95 / idle p95 of the same round. It prints one line per round and
a summary, and writes bench/results/<time>-writeload.json. With --profile it records
`py-spy record --native --threads -f raw` of the daemon during each write phase (py-spy must be
installed; it slows the daemon, so use that run for where time goes, not for the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.corpus import WORDS, note
from bench.embedding import prepared_index
from bench.run import Daemon, pct

MODES = ("hybrid", "keyword", "auto", "vector")


def _search(d: Daemon, query: str, mode: str) -> tuple[float, float]:
    t = time.perf_counter()
    res = d.call("search", {"query": query, "mode": mode, "limit": 10})
    if res is None:
        raise RuntimeError(f"search failed: {query!r}")
    return (time.perf_counter() - t) * 1000, float(res.get("took_ms", 0.0))


def _quiet(d: Daemon) -> bool:
    st = d.call("status") or {}
    return st.get("vectors", {}).get("pending") == 0 and not st.get("vectors", {}).get("embedding")


def phase(
    d: Daemon, ws: Path, notes: list[Path], rng: random.Random, seconds: float, writes: bool
) -> dict[str, Any]:
    """Searches every 0.25 s for `seconds`, with the soak's writes between them when `writes`."""
    client: list[float] = []
    server: list[float] = []
    counts = {"adds": 0, "edits": 0, "new_notes": 0}
    step = rng.randrange(1_000_000)
    cpu0, t0 = d.cpu_s(), time.monotonic()
    end = t0 + seconds
    while time.monotonic() < end:
        step += 1
        q = " ".join(rng.sample(WORDS, rng.randint(1, 3))) + ("" if step % 3 else f" r{step}")
        c, s = _search(d, q, MODES[step % 4])
        client.append(c)
        server.append(s)
        if writes:
            if step % 4 == 0:
                d.call("add", {"content": f"load memory {step}: " + " ".join(rng.sample(WORDS, 8))})
                counts["adds"] += 1
            if step % 10 == 0:
                f = rng.choice(notes)
                f.write_text(
                    f.read_text() + f"\n\nEdited {step}: {' '.join(rng.sample(WORDS, 10))}\n"
                )
                counts["edits"] += 1
            if step % 40 == 0:
                (ws / f"load-{step}.md").write_text(note(rng, 200_000 + step, 3))
                counts["new_notes"] += 1
        time.sleep(0.25)
    cpu = (d.cpu_s() - cpu0) / (time.monotonic() - t0)
    return {
        "searches": len(client),
        "daemon_cpu_per_s": round(cpu, 3),  # CPU s per s: the work, less noisy than wall time
        "p50_ms": round(pct(client, 50), 1),
        "p95_ms": round(pct(client, 95), 1),
        "server_p50_ms": round(pct(server, 50), 1),
        "server_p95_ms": round(pct(server, 95), 1),
        **(counts if writes else {}),
    }


def _spy(d: Daemon, out: str, seconds: float) -> subprocess.Popen[bytes] | None:
    exe = Path(sys.executable).parent / "py-spy"
    if not exe.exists():
        return None
    cmd = [str(exe), "record", "-p", str(d.proc.pid), "--threads", "--native", "-r", "100"]
    cmd += ["-f", "raw", "-o", out, "-d", str(int(seconds))]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_size(
    root: Path,
    chunks: int,
    rounds: int,
    seconds: float,
    profile: str | None,
    template: Path | None = None,
) -> dict[str, Any]:
    ws, shape, texts = prepared_index(root, chunks, template)
    d = Daemon(root, ws, model=True)
    rng = random.Random(7)
    notes = sorted(ws.rglob("*.md"))
    out: list[dict[str, Any]] = []
    try:
        d.wait(lambda: (d.call("status") or {}).get("model", {}).get("state") == "ready", 300)
        d.wait(lambda: (d.call("status") or {}).get("index", {}).get("initial_reconcile_done"), 900)
        d.wait(lambda: _quiet(d), 300)
        for _ in range(12):  # warm-up: every mode, the query path's caches
            _search(d, " ".join(rng.sample(WORDS, 2)), MODES[_ % 4])
        for r in range(1, rounds + 1):
            load = os.getloadavg()[0]
            idle = phase(d, ws, notes, rng, seconds, writes=False)
            spy = _spy(d, f"{profile}-{chunks}-r{r}.txt", seconds) if profile else None
            busy = phase(d, ws, notes, rng, seconds, writes=True)
            if spy is not None:
                spy.wait(60)
            ratio = round(busy["p95_ms"] / idle["p95_ms"], 2)
            rec = {
                "round": r,
                "load_avg": round(load, 1),
                "idle": idle,
                "write": busy,
                "ratio_p95": ratio,
                "ratio_p50": round(busy["p50_ms"] / idle["p50_ms"], 2),
                "rss_mb": round(d.rss_mb(), 1),
            }
            out.append(rec)
            print(json.dumps({"chunks": chunks, **rec}), flush=True)
            d.wait(lambda: _quiet(d), 600)
            time.sleep(2)  # the watcher's debounce and the last index pass
            d.wait(lambda: _quiet(d), 600)
    finally:
        d.stop()
    return {"chunks": texts, "files": shape["files"], "rounds": out}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench writeload", description=__doc__)
    p.add_argument("--chunks", default="10000,100000", help="comma-separated sizes")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=60, help="length of each phase")
    p.add_argument("--profile", default=None, help="py-spy raw output prefix")
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    p.add_argument(
        "--template", type=Path, default=None, help="keep (or reuse) the built index here"
    )
    args = p.parse_args(argv)
    from memoryd.core import logsetup

    logsetup.configure("warning")
    results = []
    for size in (int(s) for s in args.chunks.split(",")):
        root = Path(tempfile.mkdtemp(prefix="memoryd-wl-"))
        try:
            results.append(
                run_size(root, size, args.rounds, args.seconds, args.profile, args.template)
            )
        finally:
            shutil.rmtree(root, ignore_errors=True)
    print(
        "\nsize      round  load  idle p50/p95 ms   write p50/p95 ms   ratio p95  met (<= 1.5x)"
        "  daemon CPU/s idle, write"
    )
    for res in results:
        for r in res["rounds"]:
            i, w = r["idle"], r["write"]
            print(
                f"{res['chunks']:>8}  {r['round']:>5}  {r['load_avg']:>4}  "
                f"{i['p50_ms']:>6} / {i['p95_ms']:<6}   {w['p50_ms']:>6} / {w['p95_ms']:<6}   "
                f"{r['ratio_p95']:>6}     {'met' if r['ratio_p95'] <= 1.5 else 'MISSED':<6}"
                f"        {i['daemon_cpu_per_s']}, {w['daemon_cpu_per_s']}"
            )
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{time.strftime('%Y%m%dT%H%M%S')}-writeload.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"written to {path}")
    return 0 if all(r["ratio_p95"] <= 1.5 for res in results for r in res["rounds"]) else 1
