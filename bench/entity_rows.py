"""python -m bench.entity_rows [--rounds R]

Issue 20.6: where the entity rows' CPU goes at index time. Cold keyword-mode indexing of the
notes of `python -m bench entities` (every corpus in bench/data), SQLite, three ways per round
as `--bare` has them (`none`: no extraction, no rows; `extract`: extraction, no rows; `full`),
with the CPU (process_time) of the steps that write the rows summed over the notes:
entityclaims.index_note (all of a note's rows) and inside it entities.known_as (its names
resolved through the store), entities._store (mentions, pairs, counts), entities._entities
(the entities made and counted), entitytypes.added; entityclaims.held_by_note (runs in every
variant), the commits; and the statements the writer ran (apsw's profile hook, every one
counted, a trigger's inside its statement). Nested steps are inside their callers' figures.
See BENCHMARKS.md, "Issue 20.6: the entity rows' cost at index time".
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.entities import corpus_notes, written_workspace

STEPS = (
    ("memoryd.store.entityclaims", "index_pending"),  # (the stage's, index_note before it)
    ("memoryd.store.entityclaims", "held_by_note"),
    ("memoryd.store.entities", "known_as"),
    ("memoryd.store.entities", "_store"),
    ("memoryd.store.entities", "_entities"),
    ("memoryd.store.entitytypes", "added"),
    ("memoryd.store.sqlite", "SqliteStore._commit"),
)


def _timed(acc: dict[str, float], label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*a: Any, **k: Any) -> Any:
        t = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            acc[label] += time.process_time() - t

    return run


def one(notes: list[tuple[str, str]], variant: str) -> dict[str, Any]:
    """One cold indexing as `variant`: its CPU, the steps' CPU and the statements run."""
    import importlib

    from memoryd.index import indexer
    from memoryd.index.embed import ModelHolder
    from memoryd.serve.app import App
    from memoryd.store import entities, entitystage

    acc: dict[str, float] = collections.defaultdict(float)
    saved: list[tuple[Any, str, Any]] = []
    for mod_name, name in STEPS:
        owner: Any = importlib.import_module(mod_name)
        attr = name
        if "." in name:
            cls, attr = name.split(".")
            owner = getattr(owner, cls)
        saved.append((owner, attr, getattr(owner, attr)))
        setattr(owner, attr, _timed(acc, name.split(".")[-1], getattr(owner, attr)))
    saved += [(indexer, "entities_later", indexer.entities_later)]
    if variant == "none":  # no queue row: neither extraction nor rows
        indexer.entities_later = lambda *a, **k: None  # type: ignore[assignment]
    if variant in ("none", "extract"):
        saved.append((entities, "index_document", entities.index_document))
        entities.index_document = lambda *a, **k: 0  # type: ignore[assignment]
    statements = collections.Counter[str]()
    root = Path(tempfile.mkdtemp(prefix="memoryd-bench-rows-"))
    try:
        cfg = written_workspace(notes, root)
        app = App(cfg, model=ModelHolder(None, description="keyword only"))
        app.store._writer.set_profile(lambda sql, _ns: statements.update((sql.split()[0],)))
        cpu = time.process_time()
        app.indexer.reconcile()
        entitystage.store_caught_up(app.store)  # the notes' entities (store/entitystage.py)
        cpu = time.process_time() - cpu
        app.close()
    finally:
        for owner, attr, fn in reversed(saved):
            setattr(owner, attr, fn)
        shutil.rmtree(root, ignore_errors=True)
    return {
        "cpu": round(cpu, 3),
        "steps": {k: round(v, 3) for k, v in acc.items()},
        "statements": sum(statements.values()),
        "by_verb": dict(statements),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.entity_rows", description=__doc__)
    p.add_argument("--rounds", type=int, default=1)
    a = p.parse_args(argv)
    notes = corpus_notes()
    out: dict[str, Any] = {"load": [os.getloadavg()[0]], "rounds": []}
    for _ in range(a.rounds):
        out["rounds"].append({v: one(notes, v) for v in ("none", "extract", "full")})
    out["load"].append(os.getloadavg()[0])
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
