"""The data leaves and comes back: two stores' answers compared field by field (branch walko13,
stop 38).

    python -m bench.roundtrip [--memories N] [--notes N] [--pg] [--json]

A store's answers are what a person or an agent reads back: `stats` (counts by type, tier and
namespace), every memory as `export` writes it (every field, its history, access log and
triggers), `search` for a list of queries in each mode, `entities` and every entity's page and
`related` walk. `answers(call)` collects them through a JSON-RPC `call(method, params)` (an
App's method table in tests/test_roundtrip.py, a daemon's socket here); `differences(a, b)`
lists every field that differs, by its path (`entity:Caroline Baker.sources[2].line: 8 != 9`).

What is left out, and why: a note's chunk id (a second store numbers its chunks itself: a
source or hit of a note is named by its path and lines instead), `tokens_used` and `took_ms`
(the answer's cost, not its content), and vectors (compared as the vector and hybrid modes'
hits). Memories keep their ids through an import, so a memory's id is compared.

As a bench: a seeded store of N memories (every field set, CJK and NFD text, expired and
pinned ones, triggers, history, access log) beside N notes (titles from file names, aliases,
links by file name) is exported and imported into a second store, SQLite or (`--pg`)
PostgreSQL, that indexed the same notes first (two Apps in this process, keyword only, as the
daemon runs them; the whole file in one request, where memoryctl sends batches). It prints the
seconds each step took, the process's peak memory, how many answers were compared and every
difference (none expected; exit 1 otherwise). With `--pg` search is not compared: each backend
ranks by its own keyword scoring (docs/team.md, section 8), so equal scores and the cut at the
limit fall differently.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

Call = Callable[[str, dict[str, Any]], Any]

QUERIES = (
    "Caroline",
    "billing-svc deploy",
    "PostgreSQL",
    "東京 会議",
    "café",
    "Zoë",
    "on call",
    "ERR_AUTH_2207",
)
MODES = ("keyword",)
# the answer's cost or a store's own numbering, not its content
_NOT_ANSWERS = frozenset(("tokens_used", "took_ms", "explain", "query_id", "indexing"))
_CHUNK_OWN = ("id", "created_at", "updated_at", "last_accessed_at")
# a search's score moves with the clock (recency decays); an answer compared a little later
SCORE_TOLERANCE = 1e-4


def _note_free(value: Any, ids: dict[int, int]) -> Any:
    """An answer without the ids of notes' chunks (each store numbers its own) nor its cost;
    a memory's id through `ids` (renumbered by an import: its id in the store exported)."""
    if isinstance(value, dict):
        out = {k: _note_free(v, ids) for k, v in value.items() if k not in _NOT_ANSWERS}
        if value.get("kind") in ("chunk", "note"):
            # a chunk's id and dates are this store's: when it read the note
            out.update({k: None for k in _CHUNK_OWN if k in out})
        elif isinstance(value.get("id"), int) and value.get("kind", "memory") == "memory":
            out["id"] = ids.get(value["id"], value["id"])
        return out
    if isinstance(value, list):
        return [_note_free(v, ids) for v in value]
    return value


def answers(
    call: Call,
    queries: Iterable[str] = QUERIES,
    *,
    modes: Iterable[str] = MODES,
    entity_top: int = 200,
    search_limit: int = 10,
    renumbered: Iterable[dict[str, int]] = (),
) -> dict[str, Any]:
    """Every answer named in the module's docstring, keyed by what was asked; `renumbered`:
    an import's list of the ids it could not keep ({"from", "to"}), so a memory is compared
    under the id it had in the store it came from."""
    ids = {int(r["to"]): int(r["from"]) for r in renumbered}
    out: dict[str, Any] = {}
    # the store as the expiry job leaves it: the entity methods run that job when an entry has
    # expired (docs/protocol.md, Entities), so without it the first answers' export would hold
    # the expired memories their own entity calls then delete
    call("jobs.run", {"name": "expiry"})
    stats = call("stats", {"namespace": "*"})
    out["stats"] = {k: stats.get(k) for k in ("memories", "documents", "chunks", "by_type")}
    out["stats"].update({k: stats.get(k) for k in ("by_tier", "namespaces")})
    for item in call("export", {"namespace": "*"})["items"]:
        out[f"memory:{item['namespace']}:{item['content_hash'][:16]}"] = _note_free(item, ids)
    for mode in modes:
        for q in queries:
            params = {"query": q, "mode": mode, "limit": search_limit, "namespace": "*"}
            res = call("search", params)
            out[f"search:{mode}:{q}"] = _note_free(res.get("hits", []), ids)
    listed = call("entities", {"top": entity_top})["entities"]
    out["entities"] = _note_free(listed, ids)
    for e in listed:
        name = e["name"]
        page = call("entity", {"name": name, "max_tokens": 100_000})
        out[f"entity:{name}"] = _note_free(page, ids)
        out[f"related:{name}"] = _note_free(call("related", {"name": name, "depth": 2}), ids)
    return out


def hit_key(hit: dict[str, Any]) -> tuple[Any, ...]:
    """What a search hit is, whatever its rank: a memory's id, a note's path and lines."""
    return (hit.get("kind"), hit.get("id"), hit.get("path"), hit.get("start_line"))


def differences(a: Any, b: Any, path: str = "", limit: int = 50) -> list[str]:
    """Where `b` differs from `a`, one line a field: `path: a != b` (at most `limit`)."""
    out: list[str] = []
    _diff(a, b, path, out, limit)
    return out


def _diff(a: Any, b: Any, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            where = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                out.append(f"{where}: {a.get(k, 'missing')!r} != {b.get(k, 'missing')!r}"[:300])
            else:
                _diff(a[k], b[k], where, out, limit)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{path}[{i}]", out, limit)
    elif a != b and not (
        isinstance(a, float)
        and isinstance(b, float)
        and math.isclose(a, b, abs_tol=SCORE_TOLERANCE)
    ):
        out.append(f"{path}: {a!r} != {b!r}"[:300])


# -- seeded data -------------------------------------------------------------------------------

PEOPLE = ("Caroline Baker", "Melanie Ortiz", "José Núñez", "Zoë Kravitz", "田中太郎")
TOPICS = ("billing-svc", "the cache", "東京の会議", "café menus", "ERR_AUTH_2207", "PostgreSQL")


def seeded_notes(n: int) -> dict[str, str]:
    """n notes (workspace path -> text): people and projects whose titles come from their file
    names, front-matter aliases, wikilinks by file name, CJK and NFD (decomposed) text."""
    notes = {
        "projects/billing-svc.md": "---\naliases: [Billing Service]\npeople: [Caroline Baker]\n"
        "---\n# Billing service\n\nCaroline Baker owns the deploys of billing-svc.\n",
        "people/Melanie Ortiz.md": "Melanie works with [[Caroline Baker]] on [[billing-svc]].\n",
        "日本語/会議メモ.md": "田中さんは「東京プロジェクト」を担当。[[山田太郎]]と一緒に。\n",
        unicodedata.normalize("NFD", "Café Zoë.md"): unicodedata.normalize(
            "NFD", "Zoë met José at the café about Kubernetes.\n"
        ),
    }
    rng = random.Random(11)
    for i in range(max(0, n - len(notes))):
        who, what = rng.choice(PEOPLE), rng.choice(TOPICS)
        notes[f"notes/n{i:05d}.md"] = (
            f"# Note {i}\n\n{who} wrote about {what} on day {i}.\nSee [[billing-svc]].\n"
        )
    return notes


def seeded_memories(n: int, now: float) -> list[dict[str, Any]]:
    """n memories as `import` takes them: every field set on some, expired ones (in the past),
    constitutional (pinned) ones, triggers, CJK and NFD text."""
    rng = random.Random(7)
    out = []
    for i in range(n):
        who, what = rng.choice(PEOPLE), rng.choice(TOPICS)
        text = f"memo {i}: {who} discussed {what}"
        item: dict[str, Any] = {
            "content": unicodedata.normalize("NFD", text) if i % 5 == 0 else text,
            "tags": [f"t{i % 7}", "bulk"],
            "importance": 1 + i % 10,
            "type": ("fact", "decision", "preference")[i % 3],
            "namespace": ("default", "work")[i % 2],
            "created_at": now - 86_400 + i,
            "updated_at": now - 86_400 + i,
            "tier": ("normal", "important", "critical", "constitutional")[i % 4],
            "triggers": [f"ask about {i}"] if i % 10 == 0 else [],
            "source": "meeting" if i % 3 == 0 else None,
            "context": f"context {i}" if i % 4 == 0 else None,
            "confidence": 0.5 + (i % 5) / 10,
            "expires_at": now - 60 if i % 9 == 0 else (now + 86_400 if i % 9 == 1 else None),
            "access_count": i % 4,
            "history": [{"ts": now - 100, "field": "importance", "old": "3", "new": "4"}]
            if i % 6 == 0
            else [],
            "access_log": [{"ts": now - 50, "query": "memo", "rank": 1}] if i % 8 == 0 else [],
        }
        out.append({k: v for k, v in item.items() if v is not None})
    return out


def _app(base: Path, name: str, ws: Path, store: dict[str, Any] | None) -> Any:
    from memoryd.core.config import Config
    from memoryd.index.embed import ModelHolder
    from memoryd.serve.app import App

    data: dict[str, Any] = {
        "workspace": str(ws),
        "data_dir": str(base / name),
        "socket": str(base / f"{name}.sock"),
        "embedding": {"allow_download": False},
        "secrets": {"mode": "off"},
        "logging": {"level": "warning"},
    }
    if store:
        data["store"] = store
    return App(Config.from_dict(data), model=ModelHolder(None, description="keyword only"))


def run(memories: int, notes: int, *, pg: bool = False, dsn: str | None = None) -> dict[str, Any]:
    """Export from one store, import into a second (PostgreSQL with `pg`) beside the same
    notes; the seconds of each step, peak memory and the differences of their answers."""
    import resource
    import shutil
    import tempfile
    import time

    from memoryd.serve import methods as api

    def caller(app: Any) -> Call:
        return lambda method, params: api.lookup(method, params).fn(app, params)

    base = Path(tempfile.mkdtemp(prefix="roundtrip-"))
    server = None
    report: dict[str, Any] = {"memories": memories, "notes": notes, "target": "sqlite"}
    try:
        ws_a, ws_b = base / "ws-a", base / "ws-b"
        for rel, text in seeded_notes(notes).items():
            (ws_a / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws_a / rel).write_text(text, encoding="utf-8")
        src = _app(base, "a", ws_a, None)
        t = time.perf_counter()
        src.indexer.reconcile()
        caller(src)("import", {"items": seeded_memories(memories, time.time())})
        report["source_built_s"] = round(time.perf_counter() - t, 2)
        before = answers(caller(src))
        t = time.perf_counter()
        items = caller(src)("export", {"namespace": "*"})["items"]
        report["export_s"] = round(time.perf_counter() - t, 2)
        store = None
        if pg:
            from bench.pgserver import Server

            server = Server(dsn)
            store = {"backend": "postgres", "dsn": server.fresh("roundtrip")}
            report["target"] = "postgres"
        shutil.copytree(ws_a, ws_b)
        dst = _app(base, "b", ws_b, store)
        dst.indexer.reconcile()
        t = time.perf_counter()
        res = caller(dst)("import", {"items": items})
        report["import_s"] = round(time.perf_counter() - t, 2)
        report["renumbered"] = len(res["renumbered"])
        t = time.perf_counter()
        again = caller(dst)("import", {"items": items})
        report["import_again_s"] = round(time.perf_counter() - t, 2)
        report["imported_again"] = again["imported"]
        after = answers(caller(dst), renumbered=res["renumbered"])
        if pg:  # each backend ranks by its own keyword scoring (docs/team.md, section 8): the
            # order of equal scores and the cut at `limit` differ; the rest must not
            for key in [k for k in before if k.startswith("search:")]:
                before.pop(key), after.pop(key, None)
        report["answers_compared"] = len(before)
        report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        report["differences"] = differences(before, after)
        src.close()
        dst.close()
    finally:
        if server is not None:
            server.close()
        shutil.rmtree(base, ignore_errors=True)
    return report


def main() -> int:  # pragma: no cover - a bench, run by hand
    ap = argparse.ArgumentParser(prog="python -m bench.roundtrip", description=__doc__)
    ap.add_argument("--memories", type=int, default=2000)
    ap.add_argument("--notes", type=int, default=200)
    ap.add_argument("--pg", action="store_true", help="the second daemon on PostgreSQL")
    ap.add_argument("--dsn", default=None, help="a PostgreSQL server (default: an embedded one)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    report = run(args.memories, args.notes, pg=args.pg, dsn=args.dsn)
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else _table(report))
    return 1 if report["differences"] else 0


def _table(report: dict[str, Any]) -> str:  # pragma: no cover
    lines = [f"{k:>28}  {v}" for k, v in report.items() if k != "differences"]
    lines.append(f"{'differences':>28}  {len(report['differences'])}")
    lines.extend(f"  {d}" for d in report["differences"])
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
