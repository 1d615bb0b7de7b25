"""python -m bench.entity_stage [--notes N] [--json]

Issue 20.6, entities as a background stage (store/entitystage.py): a cold keyword-mode index of
N notes (bench entities' corpus, 1,144 notes, repeated under other folders up to N) by an App
whose entity stage runs as the daemon's does (serve/entitywork.py), timed from the start:

- `keyword_s` / `keyword_cpu_s`: until the reconcile returns (every note keyword-searchable);
- `exact_s` / `exact_cpu_s`: until the queue is empty (every entity page exact);
- `one_note_s`: then one more note written and synced (as the watcher does), until its entity
  page is exact (the stage's thread woken by the indexer).

CPU is this process's (every thread). On a tree without the stage (main before it) the entity
rows are written while indexing: `exact` is `keyword`. Run both trees alternated, each in a
fresh process: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

DEADLINE_S = 3600.0


def _pending(app: Any) -> bool:
    try:
        from memoryd.store import entitystage  # noqa: F401
    except ImportError:  # no stage: the rows are written while indexing
        return False
    # one row looked at, not counted: the poll's own CPU stays out of the figures
    return bool(
        app.store.read(lambda con: con.execute("SELECT 1 FROM entity_pending LIMIT 1").fetchall())
    )


def _until_read(app: Any, poll_s: float) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while _pending(app):
        if time.monotonic() > deadline:
            raise TimeoutError("the entity stage did not drain its queue")
        time.sleep(poll_s)


def run(notes: int) -> dict[str, Any]:
    from bench.entities import corpus_notes, written_workspace
    from memoryd.index.embed import ModelHolder
    from memoryd.search import entities
    from memoryd.serve.app import App

    base = corpus_notes()
    items = [(f"c{k}/{p}", t) for k in range(math.ceil(notes / len(base))) for p, t in base][:notes]
    root = Path(tempfile.mkdtemp(prefix="memoryd-bench-stage-"))
    try:
        cfg = written_workspace(items, root)
        app = App(cfg, model=ModelHolder(None, description="keyword only"))
        try:
            work = getattr(app, "entity_work", None)
            if work is not None:
                work.start()
            t, c = time.perf_counter(), time.process_time()
            app.indexer.reconcile()
            keyword = time.perf_counter() - t, time.process_time() - c
            _until_read(app, 0.25)
            exact = time.perf_counter() - t, time.process_time() - c
            path = Path(cfg.workspace) / "zz/new.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("# Visit\n\nZelda Quistgaard came by with the billing-svc plans.\n")
            t = time.perf_counter()
            app.indexer.sync_paths([path])
            _until_read(app, 0.002)
            one = time.perf_counter() - t
            assert entities.page(app.store, "Zelda Quistgaard")["name"] == "Zelda Quistgaard"
        finally:
            app.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "notes": notes,
        "staged": work is not None,
        "keyword_s": round(keyword[0], 2),
        "keyword_cpu_s": round(keyword[1], 2),
        "exact_s": round(exact[0], 2),
        "exact_cpu_s": round(exact[1], 2),
        "one_note_s": round(one, 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.entity_stage", description=__doc__)
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    out = run(a.notes)
    print(json.dumps(out) if a.json else "\n".join(f"{k}: {v}" for k, v in out.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
