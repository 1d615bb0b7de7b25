"""Indexing-time cost of the cjk FTS5 tokenizer against the built-in one it wraps.

    PYTHONPATH=. .venv/bin/python script/bench_tokenizer.py          # ~1 minute

1. FTS5 inserts only: 10K chunks of the bench corpus (English-like, ~270 characters), the same
   joined by four (~1.1 KB), and the short ones with a CJK line appended to every chunk.
2. Cold keyword indexing of a ~10K-chunk workspace through App (read, chunk, store, FTS).
Times are CPU seconds (process_time), the best of several runs: the wall clock on a shared
machine is mostly other people's work.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from pathlib import Path

import apsw

from bench.corpus import note, write_workspace
from bench.run import make_config
from memoryd.store import tokenizer
from memoryd.text.markdown import parse_document

BUILTIN = tokenizer.BASE_OPTION
CJK = tokenizer.TOKENIZE
CJK_LINE = (
    "我们决定用PostgreSQL作为主数据库，李明负责迁移，周六晚上停机两小时。"
    "明日の勉強会は渋谷で開催します。데이터베이스를 사용합니다."
)


def fts_inserts(tokenize: str, docs: list[str]) -> float:
    con = apsw.Connection(":memory:")
    tokenizer.register(con)
    con.execute(f'CREATE VIRTUAL TABLE t USING fts5(c, tokenize="{tokenize}")')
    started = time.process_time()
    with con:
        for d in docs:
            con.execute("INSERT INTO t VALUES (?)", (d,))
    return time.process_time() - started


def cold_index(tokenize: str, workspace: Path, root: Path) -> float:
    from memoryd.index.embed import ModelHolder
    from memoryd.serve.app import App

    tokenizer.OPTION = f'tokenize = "{tokenize}"'  # the tokenize option migration m016 writes
    try:
        cfg = make_config(root)
        shutil.copytree(workspace, cfg.workspace)
        app = App(cfg, model=ModelHolder(None, description="keyword only"))
        started = time.process_time()
        app.indexer.reconcile()
        took = time.process_time() - started
        app.close()
    finally:
        tokenizer.OPTION = f'tokenize = "{CJK}"'
    return took


def main() -> None:
    rng = random.Random(1)
    chunks: list[str] = []
    i = 0
    while len(chunks) < 10_000:
        chunks += [c.content for c in parse_document(note(rng, i, 4))[1]]
        i += 1
    chunks = chunks[:10_000]
    long = ["\n".join(chunks[k : k + 4]) for k in range(0, len(chunks), 4)] * 4
    sets = {
        "10K chunks, English (~270 chars)": chunks,
        "10K chunks, English (~1.1 KB)": long,
        "10K chunks, ~270 chars + a CJK line": [c + "\n" + CJK_LINE for c in chunks],
    }
    print("FTS5 inserts only, CPU s (best of 5)")
    for label, docs in sets.items():
        a = min(fts_inserts(BUILTIN, docs) for _ in range(5))
        b = min(fts_inserts(CJK, docs) for _ in range(5))
        print(f"  {label:40} built-in {a:.2f}  cjk {b:.2f}  x{b / a:.2f}")
    base = Path(tempfile.mkdtemp(prefix="tokbench-"))
    try:
        shape = write_workspace(base / "ws", 10_000)
        runs: dict[str, list[float]] = {BUILTIN: [], CJK: []}
        for k in range(3):
            for tok in runs:
                runs[tok].append(cold_index(tok, base / "ws", base / f"run{k}{len(tok)}"))
        a, b = min(runs[BUILTIN]), min(runs[CJK])
        print(f"cold keyword indexing, {shape['files']} files / {shape['chunks']} chunks, CPU s")
        print(f"  built-in {a:.2f}  cjk {b:.2f}  x{b / a:.2f}")
    finally:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
