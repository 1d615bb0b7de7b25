"""A workspace that churns, judged against the disk and rg (branch walke11, stop 36).

python -m bench.churn [--seed N] [--rounds R] [--per-round K] [--model none|real] [--pg]
                      [--ops vim,git_checkout,...] [--dir DIR] [--memories]

Runs a real daemon (`memoryd run`, keyword mode unless --model real; SQLite, or a PostgreSQL of
tests/pgserver.py with --pg) on a workspace of its own, and each round applies K seeded changes
of the kinds editors, git and sync tools make (bench/churn_ops.py: vim, emacs, JetBrains, VS
Code and atomic saves, truncate-then-write, git checkout/reset/clean, conflict copies,
.stversions, folder renames and moves, case-only renames, a file replaced by a folder, hard
links, mtime going backwards, 1,000 files at once, 50 saves a second, changes while the daemon
is stopped or starting, symlinks to notes). After each round it waits for the events to settle
and checks, with a deadline, that the index equals the disk: every `*.md` file `rg -L --files`
lists (symlinks followed, as memoryd does) is indexed once with its bytes' SHA-256, nothing else
is, no row is left without its note, and a keyword search for a sample of the unique words
planted in the notes finds exactly the files `rg -L -l` finds. A failing round prints the changes
made and the differences, then restarts the daemon (its reconcile repairs them) and goes on; the
same seed replays the same changes (their timing is the machine's).

--memories (branch walkj12, stop 37) turns the daily log on and adds memories to the churn:
added, updated and deleted through the socket, their log lines edited by hand (an atomic save),
the log's last line saved without a line end, a conflict copy of the log, a log moved, renamed
or copied out of the log folder (branch log13, stop 38), and every other op reaching the log
files as any note. The checks then also say: every memory added and not deleted is stored, and
no deleted one is (nothing acknowledged is lost, nothing forgotten comes back); a delete leaves
its line in no file of the log folder, nor in a log moved out of it in an earlier round; a
memory's token finds the memory; and a token finds the files where it stands outside the
daemon's own lines (a line of a stored memory whose marker still matches it is the memory's,
left out of the index wherever the file is).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.churn_ops import MEMORY_OPS, MEMORY_WEIGHTS, OPS, TOKEN, WEIGHTS, Churn

# a daily log line's marker (memoryd/memory/dailylog.py, written again here: the checker does
# not take the rule from the code it checks)
MARKER = re.compile(r"<!-- m:(\d+):([0-9a-f]{8}) -->\s*$")
ROOT = Path(__file__).resolve().parents[1]


def rpc(sock: Path, method: str, params: dict | None = None, timeout: float = 60) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(sock))
        s.sendall(
            json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
            ).encode()
            + b"\n"
        )
        buf = b""
        while not buf.endswith(b"\n"):
            part = s.recv(1 << 20)
            if not part:
                break
            buf += part
    return json.loads(buf)


class Daemon:
    def __init__(
        self, base: Path, model: str, dsn: str = "", debounce: int = 500, dailylog: bool = False
    ) -> None:
        self.dsn = dsn
        self.base = base
        self.ws = base / "ws"
        self.data = base / "data"
        self.sock = base / "s.sock"
        self.cfg = base / "config.toml"
        self.model = model
        self.cfg.write_text(
            f'workspace = "{self.ws}"\ndata_dir = "{self.data}"\nsocket = "{self.sock}"\n'
            f"[indexer]\ndebounce_ms = {debounce}\n"
            f"[embedding]\nenabled = {str(model != 'none').lower()}\nallow_download = false\n"
            f'[logging]\nlevel = "info"\nformat = "json"\nfile = "{base / "daemon.log"}"\n'
            f"[dailylog]\nenabled = {str(dailylog).lower()}\n"
            '[jobs]\nreconcile_interval = "7d"\n'
            + (f'[store]\nbackend = "postgres"\ndsn = "{dsn}"\n' if dsn else "")
        )
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
        env.update(
            PYTHONPATH=str(ROOT),
            HOME=str(self.base / "home"),
            XDG_RUNTIME_DIR=str(self.base / "run"),
        )
        (self.base / "home").mkdir(exist_ok=True)
        (self.base / "run").mkdir(exist_ok=True, mode=0o700)
        with open(self.base / "stdout.log", "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "memoryd", "run", "--config", str(self.cfg)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
            )
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"daemon died: {(self.base / 'stdout.log').read_text()[-3000:]}")
            try:
                st = rpc(self.sock, "status", timeout=5)["result"]
                if st["index"]["initial_reconcile_done"]:
                    return
            except (OSError, KeyError, ValueError):
                pass
            time.sleep(0.1)
        raise SystemExit("daemon did not start")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)

    def call(self, method: str, params: dict | None = None) -> dict:
        return rpc(self.sock, method, params)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


# --- the checker ---------------------------------------------------------------------------------


def disk_notes(ws: Path) -> dict[str, str]:
    """rg's view: every *.md regular file not under a hidden part, path -> sha256."""
    out = subprocess.run(
        ["rg", "-L", "--files", "--no-ignore", "-g", "*.md", "."],
        cwd=ws,
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    found = {}
    for line in out:
        if not line:
            continue
        rel = line[2:] if line.startswith("./") else line
        if _hidden(rel):
            continue
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            found[rel] = hashlib.sha256((ws / rel).read_bytes()).hexdigest()
    return found


def _hidden(rel: str) -> bool:
    """A path under a dot folder: rg's `-g '*.md'` overrides its hidden rule for a dot folder
    whose name ends in `.md` (`.x.md/`, a note turned into a folder, then hidden), and lists
    the files in it; memoryd skips them, as its docs say."""
    return any(part.startswith(".") for part in rel.split("/"))


def index_docs(db: Path, dsn: str = "") -> dict[str, str]:
    if dsn:
        import psycopg

        with psycopg.connect(dsn) as con:
            return dict(con.execute("SELECT path, sha256 FROM all_documents").fetchall())
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return dict(con.execute("SELECT path, sha256 FROM documents"))
    finally:
        con.close()


def rows_consistent(db: Path) -> list[str]:
    """The rows that must go together do (a daily log of the daemon's own lines alone has no
    chunks: not counted, in the log folder or, holding the daemon's markers, elsewhere)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    out = []
    try:
        chunks = "SELECT document_id FROM entries WHERE kind = 'chunk'"
        marked = con.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'log_marks'"
        ).fetchone()[0]
        logs = " AND id NOT IN (SELECT document_id FROM log_marks)" if marked else ""
        checks = {
            "chunks without a document": f"SELECT count(*) FROM ({chunks}) "
            "WHERE document_id NOT IN (SELECT id FROM documents)",
            "documents without chunks (non-empty)": "SELECT count(*) FROM documents "
            f"WHERE size > 0 AND id NOT IN ({chunks} AND document_id IS NOT NULL)"
            " AND path NOT LIKE 'daily/%'" + logs,
            "links without a document": "SELECT count(*) FROM links "
            "WHERE document_id NOT IN (SELECT id FROM documents)",
            "mentions without an entry": "SELECT count(*) FROM mentions "
            "WHERE entry_id NOT IN (SELECT id FROM entries)",
        }
        for what, sql in checks.items():
            n = con.execute(sql).fetchone()[0]
            if n:
                out.append(f"{what}: {n}")
    finally:
        con.close()
    return out


def tokens_on_disk(
    ws: Path, notes: dict[str, str], stored: set[int] | None = None
) -> dict[str, set[str]]:
    """token -> the files holding it; with `stored` (memory ids), not counting the daemon's own
    lines of those memories, in the log folder or in a log moved out of it (the index leaves
    them out wherever they are)."""
    where: dict[str, set[str]] = {}
    for rel in notes:
        try:
            text = (ws / rel).read_text(errors="replace")
        except OSError:
            continue
        if stored is not None and "<!-- m:" in text:
            text = "\n".join(ln for ln in re.split(r"\r\n|\r|\n", text) if not _owned(ln, stored))
        for t in set(TOKEN.findall(text)):
            where.setdefault(t, set()).add(rel)
    return where


def _owned(line: str, stored: set[int]) -> bool:
    """The daemon's own line of a stored memory: its marker's hash is that of the text."""
    m = MARKER.search(line) if "<!-- m:" in line else None
    if m is None or int(m.group(1)) not in stored:
        return False
    return hashlib.sha256(line[: m.start()].strip().encode()).hexdigest()[:8] == m.group(2)


def check_memories(
    d: Daemon, c: Churn, sample: int, rng: random.Random
) -> tuple[list[str], set[int]]:
    """The memories' checks of --memories; (problems, the ids stored)."""
    problems = list(c.problems)  # what the round's ops saw at once (cleared per round)
    r = d.call("list", {"limit": 1000, "namespace": "*"})
    if "error" in r:
        return [*problems, f"list: {r['error']}"], set()
    stored = {m["id"] for m in r["result"]["items"]}
    for mid in sorted(set(c.memories) - stored):
        problems.append(f"memory {mid} ({c.memories[mid]}) lost")
    for mid in sorted(stored & set(c.forgotten)):
        problems.append(f"deleted memory {mid} is back")
    alive = sorted(c.memories.items())
    rng.shuffle(alive)
    for mid, tok in alive[:sample]:
        r = d.call("search", {"query": tok, "kind": "memory", "mode": "keyword"})
        ids = {h["id"] for h in (r.get("result") or {}).get("hits", [])}
        if ids != {mid}:
            problems.append(f"search {tok} for memory {mid}: {sorted(ids) or r.get('error')}")
    return problems, stored


def search_paths(sock: Path, token: str) -> set[str]:
    r = rpc(sock, "search", {"query": token, "limit": 100, "kind": "chunk", "mode": "keyword"})
    if "error" in r:
        return {f"<error {r['error']}>"}
    return {h.get("path") for h in r["result"]["hits"]}


def compare(d: Daemon, sample: int, rng: random.Random, c: Churn | None = None) -> list[str]:
    disk = disk_notes(d.ws)
    idx = index_docs(d.data / "memoryd.db", d.dsn)
    problems = []
    for p in sorted(set(disk) - set(idx)):
        problems.append(f"missing from index: {p}")
    for p in sorted(set(idx) - set(disk)):
        problems.append(f"indexed but not on disk: {p}")
    for p in sorted(set(disk) & set(idx)):
        if disk[p] != idx[p]:
            problems.append(f"stale: {p}")
    if problems:
        return problems
    if not d.dsn:
        problems += rows_consistent(d.data / "memoryd.db")
    if problems:
        return problems
    stored = None
    if c is not None:
        problems, stored = check_memories(d, c, sample, rng)
        if problems:
            return problems
    where = tokens_on_disk(d.ws, disk, stored)
    toks = list(where)
    rng.shuffle(toks)
    for t in toks[:sample]:
        got = search_paths(d.sock, t)
        rg = subprocess.run(
            ["rg", "-L", "-l", "--no-ignore", "-g", "*.md", t, "."],
            cwd=d.ws,
            capture_output=True,
            text=True,
        ).stdout
        want = {x[2:] for x in rg.split("\n") if x and not _hidden(x[2:])}
        if not where[t] <= want or (stored is None and want != where[t]):
            problems.append(f"checker disagrees with rg for {t}: {sorted(want ^ where[t])}")
        if got != where[t]:
            problems.append(f"search {t}: index {sorted(got)} on disk {sorted(where[t])}")
    return problems


def settle(
    d: Daemon,
    rng: random.Random,
    sample: int = 40,
    deadline_s: float = 20,
    c: Churn | None = None,
) -> list[str]:
    """Let events settle (debounce 0.5 + max_wait), then compare until equal or the deadline."""
    time.sleep(1.6)
    deadline = time.monotonic() + deadline_s
    while True:
        probs = compare(d, sample, rng, c)
        if not probs or time.monotonic() > deadline:
            return probs
        time.sleep(1.0)


def main() -> int:
    ap = argparse.ArgumentParser(description="churn a daemon's workspace; check index == disk")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--model", choices=("none", "real"), default="none")
    ap.add_argument("--ops", default="")
    ap.add_argument("--per-round", type=int, default=4)
    ap.add_argument("--dir", default="", help="where the workspace and data go (a temp dir)")
    ap.add_argument("--pg", action="store_true")
    ap.add_argument("--memories", action="store_true", help="memories and their daily log too")
    ap.add_argument(
        "--deadline",
        type=float,
        default=60.0,
        help="seconds a round's changes may take to be indexed (PostgreSQL on a loaded machine "
        "took over 20 s for 1,400 files)",
    )
    a = ap.parse_args()
    known = OPS + MEMORY_OPS if a.memories else OPS
    weights = {**WEIGHTS, **MEMORY_WEIGHTS} if a.memories else WEIGHTS
    ops = a.ops.split(",") if a.ops else known
    unknown = sorted(set(ops) - set(known))
    if unknown:
        ap.error(f"--ops: unknown {', '.join(unknown)} (known: {', '.join(known)})")
    base = Path(a.dir or tempfile.mkdtemp(prefix="churn-")) / f"s{a.seed}"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    (base / "ws").mkdir()
    rng = random.Random(a.seed)
    dsn = ""
    if a.pg:
        sys.path.insert(0, str(ROOT / "tests"))
        import pgserver

        dsn = pgserver.fresh_dsn("churn", migrated=True)
    d = Daemon(base, a.model, dsn=dsn, dailylog=a.memories)
    c = Churn(d, rng)
    mem = c if a.memories else None
    for _ in range(30):
        c.op_create()
    print(f"seed {a.seed}: workspace {d.ws}, daemon log {base / 'daemon.log'}", flush=True)
    fails = 0
    try:
        d.start()
        probs = settle(d, rng, deadline_s=a.deadline, c=mem)
        print(f"seed {a.seed} start: {len(probs)} problems", flush=True)
        for r in range(a.rounds):
            c.log.clear()
            c.problems.clear()
            c.settled_out = set(c.moved_out)  # indexed by the last round's settle
            chosen = rng.choices(ops, weights=[weights.get(o, 1.0) for o in ops], k=a.per_round)
            for o in chosen:
                getattr(c, "op_" + o)()
            if not d.alive():
                print("DAEMON DIED", flush=True)
                break
            probs = settle(d, rng, deadline_s=a.deadline, c=mem)
            status = "ok" if not probs else f"FAIL {len(probs)}"
            print(f"seed {a.seed} round {r}: {status} after {c.log}", flush=True)
            for p in probs[:15]:
                print("   ", p, flush=True)
            if probs:
                fails += 1
                # resync for the next round: a restart's reconcile
                d.stop()
                d.start()
                c.problems.clear()  # seen by the ops; a restart cannot undo them
                if settle(d, rng, deadline_s=a.deadline, c=mem):
                    print("    still wrong after a restart", flush=True)
    finally:
        d.stop()
    print(f"seed {a.seed}: {fails} failing rounds of {a.rounds}", flush=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
