"""The size and time of the socket's answers that list what grows with the user's data (stop 44,
bound20): a hub note 10,000 notes link to, a note of 5,000 links, a memory changed 2,000 times.

    .venv/bin/python -m bench.answer_sizes [--notes 10000] [--links 5000] [--changes 2000]
        [--rounds 5] [--code TREE ...]

Builds one scratch workspace, then for each TREE (a checkout of memoryd; default: the one
imported) starts `memoryd run` from it in keyword mode (bench.obsidian_vault.Daemon), waits for
its first reconcile, changes one memory `--changes` times, and asks over the socket, `--rounds`
times each, with no params but the path or id (what an old caller sends): `backlinks` of the
hub, `links` of the big note, `history` of the memory. Reports each answer's bytes, the items
it holds, its `total` and the median time; and, where the answer pages, the pages and the time
to walk them all with the cursor. Give main's checkout and this branch's in one run: the
figures of a shared machine compare only within a run. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.obsidian_vault import Daemon

ASKED = (("backlinks", "backlinks"), ("links", "links"), ("history", "history"))


def build(ws: Path, notes: int, links: int) -> None:
    (ws / "many").mkdir(parents=True)
    (ws / "hub.md").write_text("# Hub\n\nThe note every other note links to.\n")
    for i in range(notes):
        (ws / "many" / f"n{i:05d}.md").write_text(f"# Note {i}\n\nSee [[hub]] for more.\n")
    body = "".join(f"- [[many/n{i % notes:05d}]]\n" for i in range(links))
    (ws / "big.md").write_text("# Big\n\n" + body)


def timed(d: Daemon, method: str, params: dict[str, Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    res = d.call(method, params)
    return (time.perf_counter() - started) * 1000, res


def walk(d: Daemon, method: str, key: str, params: dict[str, Any]) -> dict[str, Any]:
    """Every page of a list with the cursor: how many, and the time for all."""
    started, pages, items, res = time.perf_counter(), 0, 0, {"next_cursor": None}
    while True:
        res = d.call(method, {**params, **({"cursor": res["next_cursor"]} if pages else {})})
        pages, items = pages + 1, items + len(res[key])
        if not res.get("next_cursor"):
            break
    return {"pages": pages, "items": items, "ms": round((time.perf_counter() - started) * 1000)}


def measure(tree: Path, root: Path, ws: Path, changes: int, rounds: int) -> dict[str, Any]:
    os.environ["PYTHONPATH"] = str(tree)  # the daemon runs this checkout's code
    root.mkdir()
    d = Daemon(root, ws)
    try:
        mid = d.call("add", {"content": "a memory changed often"})["id"]
        for i in range(changes):
            d.call("update", {"id": mid, "content": f"version {i} of a memory changed often"})
        asks = {
            "backlinks": {"path": "hub.md"},
            "links": {"path": "big.md"},
            "history": {"id": mid},
        }
        out: dict[str, Any] = {}
        for method, key in ASKED:
            times, res = [], None
            for _ in range(rounds):
                ms, res = timed(d, method, asks[method])
                times.append(ms)
            assert res is not None, f"{method}: no answer"
            out[method] = {
                "bytes": len(json.dumps(res, ensure_ascii=False).encode()),
                "items": len(res[key]),
                "total": res.get("total"),
                "median_ms": round(statistics.median(times), 1),
            }
            if "next_cursor" in res:
                out[method]["walk"] = walk(d, method, key, asks[method])
        return out
    finally:
        d.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--links", type=int, default=5_000)
    ap.add_argument("--changes", type=int, default=2_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--code", nargs="*", default=None, help="checkouts to run (default: this one)")
    a = ap.parse_args(argv)
    trees = [Path(t).resolve() for t in a.code or [Path(__file__).resolve().parent.parent]]
    tmp = Path(tempfile.mkdtemp(prefix="answer-sizes-"))
    os.chdir(tmp)  # `python -m memoryd` reads the tree on PYTHONPATH, not one in the cwd
    ws = tmp / "ws"
    build(ws, a.notes, a.links)
    out = {
        "notes": a.notes,
        "links": a.links,
        "changes": a.changes,
        "runs": {  # in the order run: a tree given twice is measured twice
            f"{n}:{t}": measure(t, tmp / f"d{n}", ws, a.changes, a.rounds)
            for n, t in enumerate(trees)
        },
    }
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
