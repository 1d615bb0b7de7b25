"""python -m bench [--size smoke|small|medium|large] [--no-model] [--skip-daemon]
python -m bench quality [--set NAME] [--modes keyword,vector,hybrid,auto] [--json]
                        [--backend postgres [--dsn DSN]]   (beside SQLite; bench/quality.py)
python -m bench embedding | reads | bursts | soak --minutes N (bench/embedding.py)
python -m bench writeload [--chunks 10000,100000] [--rounds 3]  (bench/writeload.py)
python -m bench entities [--json] [--misses]  (entity extraction: quality, speed; bench/entities.py)
python -m bench targets   (the wall-clock targets the unit tests no longer assert; bench/targets.py)
python -m bench.secretscan --against OTHER/secretguard.py  (the secret guard's scan beside another
                          checkout's; bench/secretscan.py)
python -m bench.churn --seed N --rounds R [--pg] [--model real]  (a churning workspace against
                          the disk and rg, with a real daemon; bench/churn.py)
python -m bench.roundtrip --memories N --notes N [--pg]  (an export imported into a second store
                          beside the same notes: every answer compared; bench/roundtrip.py)
python -m bench.editors [--seconds S] [--rounds R]  (an editor's saves and an agent's appends on
                          one note, with a real daemon; bench/editors.py)
python -m bench.daemon_start --against OTHER_CHECKOUT  (the CPU of a `memoryd run`'s imports and
                          arguments, beside another checkout's; bench/daemon_start.py)

Prints a table and writes bench/results/<time>.json. See BENCHMARKS.md for the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import quality, run


def machine() -> dict[str, Any]:
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        platform.processor(),
    )
    mem = next(
        (
            int(ln.split()[1]) // 1024
            for ln in Path("/proc/meminfo").read_text().splitlines()
            if ln.startswith("MemTotal")
        ),
        0,
    )
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory_mb": mem,
        "python": platform.python_version(),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["quality"]:
        return quality.main(argv[1:])
    if argv[:1] == ["entities"]:
        from bench import entities

        return entities.main(argv[1:])
    if argv[:1] == ["targets"]:
        from bench import targets

        return targets.main(argv[1:])
    if argv[:1] == ["writeload"]:
        from bench import writeload

        return writeload.main(argv[1:])
    if argv[:1] in (["embedding"], ["soak"], ["reads"], ["bursts"]):
        from bench import embedding

        return embedding.main(argv)
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--size", choices=list(run.SIZES), default="small")
    p.add_argument("--no-model", action="store_true", help="skip rows that need the real model")
    p.add_argument("--skip-daemon", action="store_true", help="skip the end-to-end rows")
    p.add_argument(
        "--daemon-keyword",
        action="store_true",
        help="run the end-to-end rows in keyword mode (embedding a large workspace "
        "with the real model takes about 25 chunks/s)",
    )
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = p.parse_args(argv)
    from memoryd.core import logsetup

    logsetup.configure("warning")
    result = run_all(
        args.size,
        model=not args.no_model,
        daemon=not args.skip_daemon,
        daemon_model=not (args.no_model or args.daemon_keyword),
    )
    print_table(result)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{time.strftime('%Y%m%dT%H%M%S')}-{args.size}.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"\nwritten to {path}")
    return 0


def run_all(
    size: str, *, model: bool = True, daemon: bool = True, daemon_model: bool | None = None
) -> dict[str, Any]:
    chunks = run.SIZES[size]
    root = Path(tempfile.mkdtemp(prefix="memoryd-bench-"))
    rows: list[dict[str, Any]] = []
    try:
        idx_rows, app = run.keyword_indexing(root / "kw", chunks)
        rows += idx_rows
        vecs = run.seed_vectors(app)
        label = f"{chunks // 1000}K chunks" if chunks >= 1000 else f"{chunks} chunks"
        rows += run.query_latency(app, vecs, label)
        del vecs  # the baseline's float32 matrix is not part of what a daemon holds
        if model:
            rows += run.rss_with_model(app, label)
        workspace = app.cfg.workspace
        app.close()
        if model:
            rows += run.model_indexing(root / "model", min(chunks, 300))
        if daemon:
            e2e_model = model if daemon_model is None else daemon_model
            rows += run.end_to_end(root / "e2e", workspace, model=e2e_model)
        q = quality.evaluate(quality_app(root / "quality", model))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "size": size,
        "machine": machine(),
        "rows": rows,
        "quality": q,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def quality_app(root: Path, model: bool) -> Any:
    from memoryd.index.embed import FakeEmbedder, ModelHolder
    from memoryd.serve.app import App, default_model_holder

    cfg = run.make_config(root)
    holder = (
        default_model_holder(cfg)
        if model
        else ModelHolder(lambda: FakeEmbedder(), description="fake")
    )
    return App(cfg, model=holder)


def print_table(result: dict[str, Any]) -> None:
    m = result["machine"]
    print(
        f"memoryd benchmark, size {result['size']}: {m['cpus']} cpus, {m['cpu']}, "
        f"{m['memory_mb']} MB, Python {m['python']}\n"
    )
    print(f"{'measurement':<78}{'value':>12}  {'baseline':>10}  {'ratio':>7}  target")
    for r in result["rows"]:
        base = "" if r["baseline"] is None else f"{r['baseline']:.3f}"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}"
        met = {True: "met", False: "MISSED", None: ""}[r["met"]]
        print(
            f"{r['name'][:78]:<78}{r['value']:>10.3f} {r['unit'][:6]:<6}{base:>10}  "
            f"{ratio:>7}  {r['target']} {met}"
        )
        if r["baseline_name"]:
            print(f"{'':<4}baseline: {r['baseline_name']}")
    print("\nretrieval quality (notes-qa):")
    for mode, s in result["quality"].items():
        print(
            f"  {mode:<8} nDCG@10 {s['ndcg@10']:.3f}  Recall@10 {s['recall@10']:.3f}  "
            f"MRR@10 {s['mrr@10']:.3f}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
