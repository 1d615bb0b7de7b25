"""The measurements. Each row sets memoryd beside a raw baseline measured in the same run."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tomli_w

from bench.corpus import WORDS, synthetic_vectors, write_workspace

SIZES = {"smoke": 300, "small": 1_000, "medium": 10_000, "large": 100_000}
Row = dict[str, Any]


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def row(
    name: str,
    value: float,
    unit: str,
    *,
    baseline: float | None = None,
    baseline_name: str = "",
    target: str = "",
    met: bool | None = None,
) -> Row:
    ratio = value / baseline if baseline else None
    return {
        "name": name,
        "value": round(value, 3),
        "unit": unit,
        "baseline": None if baseline is None else round(baseline, 3),
        "baseline_name": baseline_name,
        "ratio": None if ratio is None else round(ratio, 3),
        "target": target,
        "met": met,
    }


# embedding.model for every configuration a run makes (`python -m bench quality --model NAME`);
# None: the default resolution (the offline model)
EMBEDDING_MODEL: str | None = None


def make_config(root: Path, **sections: Any) -> Any:
    from memoryd.core.config import Config

    sock_dir = Path(tempfile.mkdtemp(prefix="mdb-", dir="/tmp"))
    atexit.register(shutil.rmtree, sock_dir, ignore_errors=True)  # short: AF_UNIX paths
    if EMBEDDING_MODEL is not None and "embedding" not in sections:
        sections["embedding"] = {"model": EMBEDDING_MODEL}
    data = {
        "workspace": str(root / "ws"),
        "data_dir": str(root / "data"),
        "socket": str(sock_dir / "s.sock"),
        "logging": {"level": "warning"},
        "dailylog": {"enabled": False},
        **sections,
    }
    return Config.from_dict(data)


class StubModel:
    """A 'ready' model whose query vectors are given: latency without query embedding."""

    state = "ready"

    def __init__(self, vec: np.ndarray) -> None:
        self.vec = vec

    def embed_query(self, text: str) -> np.ndarray:
        return self.vec


# --- indexing ----------------------------------------------------------------------------------


def keyword_indexing(root: Path, chunks: int) -> tuple[list[Row], Any]:
    from memoryd.index.embed import ModelHolder
    from memoryd.index.indexer import sha256_bytes
    from memoryd.serve.app import App
    from memoryd.text.markdown import parse_document

    cfg = make_config(root)
    shape = write_workspace(cfg.workspace, chunks)
    files = sorted(cfg.workspace.rglob("*.md"))
    t = time.perf_counter()
    for f in files:  # raw: read, hash and chunk every file, store nothing
        data = f.read_bytes()
        sha256_bytes(data)
        parse_document(data.decode())
    raw = time.perf_counter() - t
    app = App(cfg, model=ModelHolder(None, description="keyword only"))
    t = time.perf_counter()
    app.indexer.reconcile()
    cold = time.perf_counter() - t
    t = time.perf_counter()
    rep = app.indexer.reconcile()
    warm = time.perf_counter() - t
    assert rep.indexed == 0
    n = shape["files"]
    rows = [
        row(
            f"cold indexing, keyword mode ({n} files, {shape['chunks']} chunks)",
            n / cold,
            "files/s",
            baseline=n / raw,
            baseline_name="read+hash+chunk only",
        ),
        row(
            f"reconcile of an unchanged workspace ({n} files)",
            warm,
            "s",
            baseline=raw,
            baseline_name="read+hash+chunk all files",
            target="<= 2 s at 10K files",
            met=warm <= 2.0 if n >= 10_000 else None,
        ),
    ]
    return rows, app


def model_indexing(root: Path, texts: int) -> list[Row]:
    from memoryd.index.embed import load_embedder, resolve_model
    from memoryd.serve.app import App, default_model_holder

    cfg = make_config(root)
    resolved, why = resolve_model(cfg.embedding, cfg.data_dir)
    if resolved is None:
        return [row(f"indexing with the model: skipped ({why})", float("nan"), "")]
    shape = write_workspace(cfg.workspace, texts, seed=3)
    from memoryd.text.markdown import parse_document

    chunk_texts = [
        c.content
        for f in sorted(cfg.workspace.rglob("*.md"))
        for c in parse_document(f.read_text())[1]
    ]
    raw_model = load_embedder(resolved, cache_dir=cfg.data_dir / "models")
    raw_model.embed_batch(chunk_texts[:8])  # warm-up
    t = time.perf_counter()
    for i in range(0, len(chunk_texts), 32):
        raw_model.embed_batch(chunk_texts[i : i + 32])
    raw = time.perf_counter() - t
    del raw_model
    app = App(cfg, model=default_model_holder(cfg))
    app.model.start()
    assert app.model.wait_ready(120), app.model.reason
    app.model.embed_batch(chunk_texts[:8])
    t = time.perf_counter()
    app.indexer.reconcile()
    app.embedder.run()
    pipeline = time.perf_counter() - t
    n = len(set(chunk_texts))
    app.close()
    overhead = pipeline / raw - 1
    return [
        row(
            f"cold indexing with the model ({shape['chunks']} chunks)",
            n / pipeline,
            "chunks/s",
            baseline=n / raw,
            baseline_name="raw fastembed, same chunks",
            target="overhead <= 15%",
            met=overhead <= 0.15,
        )
    ]


# --- query latency ------------------------------------------------------------------------------


def seed_vectors(app: Any, dim: int = 384) -> np.ndarray:
    """Give every chunk a synthetic vector (embedding 100K texts would take hours)."""
    from memoryd.store import vectors

    hashes = app.store.read(
        lambda con: [
            r[0]
            for r in con.execute("SELECT DISTINCT content_hash FROM entries ORDER BY content_hash")
        ]
    )
    vecs = synthetic_vectors(len(hashes), dim)
    model_id = app.store.run_write(
        lambda con: vectors.ensure_model(con, "synthetic/384", "synthetic", dim, 1.0)
    )
    for i in range(0, len(hashes), 5000):
        items = list(zip(hashes[i : i + 5000], vecs[i : i + 5000], strict=True))
        app.store.run_write(lambda con, items=items: vectors.store(con, model_id, items, 1.0))
    app.store.run_write(lambda con: vectors.mark_complete(con, model_id))
    return vecs


def query_latency(app: Any, vecs: np.ndarray, label: str, queries: int = 60) -> list[Row]:
    from memoryd.search.searcher import SearchRequest
    from memoryd.store import vectors

    rng = np.random.default_rng(1)
    words = [" ".join(rng.choice(WORDS, 2)) for _ in range(queries)]
    qvecs = vecs[rng.integers(0, len(vecs), queries)] + 0.05 * rng.normal(
        size=(queries, vecs.shape[1])
    ).astype(np.float32)
    qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
    con = app.store.reader()
    t_fts = []
    for w in words:
        t = time.perf_counter()
        con.execute(
            "SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? ORDER BY rank LIMIT 40",
            (" OR ".join(f'"{x}"' for x in w.split()),),
        ).fetchall()
        t_fts.append(time.perf_counter() - t)
    t_np = []
    for q in qvecs:
        t = time.perf_counter()
        sims = vecs @ q
        np.argpartition(-sims, 40)[:40]
        t_np.append(time.perf_counter() - t)
    model_id = app.store.read(vectors.active_model)[0]
    results: dict[str, list[float]] = {"keyword": [], "vector": [], "hybrid": []}
    recall = []
    for w, q in zip(words, qvecs, strict=True):
        app.searcher.model = StubModel(q)
        for mode in results:
            t = time.perf_counter()
            app.searcher.search(SearchRequest(query=w, mode=mode, record_access=False))
            results[mode].append(time.perf_counter() - t)
        exact = {h for h, _ in app.store.read(lambda con, q=q: vectors.knn(con, model_id, q, 10))}
        fast = {
            h
            for h, _ in app.store.read(
                lambda con, q=q: app.searcher.vector_cache.knn(con, model_id, q.shape[0], q, 10)
            )
        }
        recall.append(len(exact & fast) / 10)
    rows = []
    base = {
        "keyword": (t_fts, "bare FTS5 MATCH"),
        "vector": (t_np, "numpy brute-force KNN"),
        "hybrid": (t_np, "numpy brute-force KNN"),
    }
    for mode, times in results.items():
        b, bname = base[mode]
        p50, p95, p99 = (pct(times, q) * 1000 for q in (50, 95, 99))
        target, met = "", None
        if mode == "hybrid" and "100K" in label:
            target, met = "p50 <= 15 ms, p95 <= 30 ms", p50 <= 15 and p95 <= 30
        rows.append(
            row(
                f"{mode} search p50 ({label}); p95 {p95:.1f} ms, p99 {p99:.1f} ms",
                p50,
                "ms",
                baseline=pct(b, 50) * 1000,
                baseline_name=bname,
                target=target,
                met=met,
            )
        )
    rows.append(
        row(
            f"vector recall@10 vs exact search ({label})",
            float(np.mean(recall)),
            "",
            target=">= 0.98",
            met=float(np.mean(recall)) >= 0.98,
        )
    )
    return rows


def rss_with_model(app: Any, label: str) -> list[Row]:
    """This process holds what a daemon holds at this size: the store, the vector cache (filled
    by the queries above) and, now, the loaded model. Its RSS stands in for the daemon's."""
    from memoryd.serve.app import default_model_holder

    holder = default_model_holder(app.cfg)
    if holder.state == "none":
        return []
    holder.start()
    holder.wait_ready(120)
    holder.embed_query("warm up the model")
    import gc

    gc.collect()
    rss = self_rss_mb()
    return [
        row(
            f"RSS with the model loaded and the vector cache full ({label})",
            rss,
            "MB",
            target="<= 350 MB with the model at 100K chunks",
            met=rss <= 350 if "100K" in label else None,
        )
    ]


def self_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# --- the daemon, end to end ----------------------------------------------------------------------


class Daemon:
    def __init__(self, root: Path, workspace: Path, model: bool) -> None:
        self.sock = Path(tempfile.mkdtemp(prefix="mdb-", dir="/tmp")) / "s.sock"
        atexit.register(shutil.rmtree, self.sock.parent, ignore_errors=True)
        root.mkdir(parents=True, exist_ok=True)
        self.cfg_path = root / "daemon.toml"
        cfg = {
            "workspace": str(workspace),
            "data_dir": str(root / "ddata"),
            "socket": str(self.sock),
            "embedding": {"enabled": model},
            "logging": {"level": "warning"},
            "dailylog": {"enabled": False},
            "indexer": {"debounce_ms": 200},
        }
        self.cfg_path.write_text(tomli_w.dumps(cfg))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", "run", "--config", str(self.cfg_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.wait(lambda: self.call("ping") is not None, 60)

    def call(self, method: str, params: dict | None = None) -> Any:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(600)
                s.connect(str(self.sock))
                s.sendall(
                    json.dumps(
                        {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
                    ).encode()
                    + b"\n"
                )
                return json.loads(s.makefile("rb").readline()).get("result")
        except OSError:
            return None

    @staticmethod
    def wait(pred: Callable[[], Any], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > deadline:
                raise TimeoutError("daemon condition not met")
            time.sleep(0.02)

    def ctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memoryd.ctl", "--socket", str(self.sock), *args],
            capture_output=True,
            text=True,
        )

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)
        shutil.rmtree(self.sock.parent, ignore_errors=True)


def end_to_end(root: Path, workspace: Path, model: bool, files: int = 20) -> list[Row]:
    d = Daemon(root, workspace, model)
    rows: list[Row] = []
    try:
        d.wait(
            lambda: (d.call("status") or {}).get("index", {}).get("initial_reconcile_done"), 3600
        )
        if model:
            d.wait(lambda: (d.call("status") or {}).get("vectors", {}).get("pending") == 0, 3600)
        rss_indexed = d.rss_mb()
        c0, t0 = d.cpu_s(), time.monotonic()
        time.sleep(3)
        idle_cpu = (d.cpu_s() - c0) / (time.monotonic() - t0)
        lat = []
        for i in range(files):
            token = f"zqx{i}marker{os.getpid()}"
            t = time.perf_counter()
            (workspace / f"bench-save-{i}.md").write_text(f"# Saved\n\n{token} text\n")
            d.wait(
                lambda token=token: json.loads(
                    d.ctl("--json", "search", token, "--mode", "keyword").stdout
                )["hits"],
                30,
            )
            lat.append(time.perf_counter() - t)
        rows.append(
            row(
                "save to searchable p50 (keyword, via memoryctl)",
                pct(lat, 50),
                "s",
                target="p95 <= 1 s",
                met=pct(lat, 95) <= 1.0,
            )
        )
        rows.append(row("save to searchable p95 (keyword, via memoryctl)", pct(lat, 95), "s"))
        ctl_t, rg_t = [], []
        have_rg = shutil.which("rg") is not None
        for i in range(15):
            q = f"{WORDS[i * 3 % len(WORDS)]} {WORDS[i * 7 % len(WORDS)]}"
            t = time.perf_counter()
            d.ctl("search", q)
            ctl_t.append(time.perf_counter() - t)
            if have_rg:
                t = time.perf_counter()
                subprocess.run(
                    ["rg", "-i", "-l", q.split()[0], str(workspace)], capture_output=True
                )
                rg_t.append(time.perf_counter() - t)
        mode = "hybrid" if model else "keyword"
        rows.append(
            row(
                f"memoryctl search end to end p50 ({mode}, incl. process start)",
                pct(ctl_t, 50) * 1000,
                "ms",
                baseline=pct(rg_t, 50) * 1000 if rg_t else None,
                baseline_name="rg -i -l, same workspace" if rg_t else "rg not installed",
                target="<= 60 ms at 10K chunks, faster than rg",
                met=pct(ctl_t, 50) * 1000 <= 60 and (not rg_t or pct(ctl_t, 50) < pct(rg_t, 50)),
            )
        )
        loaded_rss = max(d.rss_mb(), rss_indexed)
        rows.append(
            row(
                f"daemon RSS after indexing ({'model loaded' if model else 'no model'})",
                rss_indexed,
                "MB",
                target="<= 350 MB with the model at 100K chunks",
                met=rss_indexed <= 350 if model else None,
            )
        )
        rows.append(row("daemon RSS under query load", loaded_rss, "MB"))
        rows.append(row("daemon CPU while idle", idle_cpu * 100, "% of a core"))
    finally:
        d.stop()
    return rows
