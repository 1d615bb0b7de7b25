"""A person's editor and an agent on one note at once (branch write17, stop 41).

python -m bench.editors [--seconds S] [--rounds R] [--dir DIR]

Runs a real daemon (`memoryd run`, keyword mode, SQLite; bench/churn.py's Daemon) of this
checkout. For each save pattern an editor uses, a thread plays the person: it reloads the note
(as Obsidian and vim's autoread do) and saves it with one more line of its own every 20 ms,
while the agent sends `note.append` in a loop for S seconds (4). The patterns: `rename` (a temp
written and renamed over the note: vim backupcopy=no, VS Code's safe save, JetBrains, sync
tools), `trunc` (truncate and write in place: vim backupcopy=yes, Obsidian, VS Code's default),
`obsidian` (trunc, plus `.obsidian/workspace.json` written each time) and `vimswap` (rename,
with vim's `.NOTE.swp` and `4913` probe beside it).

Per pattern it prints: appends answered, errors by code, the editor's saves, the editor lines
missing from the final note (memoryd's fault: a save deleted by the daemon's swap), the agent
lines missing (the editor's own race: a line appended between its reload and its save, which
vim would warn about), and whether the index ends with the note's bytes (within 15 s).
Compare checkouts by running this module from each (`cd OTHER && python -m bench.editors`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bench.churn import Daemon, index_docs


def rename_save(p: Path, text: str) -> None:
    tmp = p.with_name(f".{p.name}.swp~")
    tmp.write_text(text)
    os.replace(tmp, p)


def trunc_save(p: Path, text: str) -> None:
    fd = os.open(p, os.O_WRONLY | os.O_TRUNC | os.O_CREAT, 0o644)
    time.sleep(0.003)  # the truncated file is seen for a moment, as after a slow write
    os.write(fd, text.encode())
    os.close(fd)


def obsidian_save(p: Path, text: str) -> None:
    (p.parent / ".obsidian").mkdir(exist_ok=True)
    (p.parent / ".obsidian" / "workspace.json").write_text(json.dumps({"t": time.time()}))
    trunc_save(p, text)


def vim_save(p: Path, text: str) -> None:
    p.with_name(f".{p.name}.swp").write_bytes(b"b0VIM 9.0" + os.urandom(100))
    probe = p.with_name("4913")
    probe.touch()
    probe.unlink()
    rename_save(p, text)


PATTERNS: dict[str, Callable[[Path, str], None]] = {
    "rename": rename_save,
    "trunc": trunc_save,
    "obsidian": obsidian_save,
    "vimswap": vim_save,
}


def one(d: Daemon, name: str, save: Callable[[Path, str], None], seconds: float) -> dict:
    rel = f"ed-{name}.md"
    path = d.ws / rel
    path.write_text(f"# {name}\n")
    time.sleep(1)
    stop = threading.Event()
    saved: list[str] = []

    def editor() -> None:
        while not stop.is_set():
            line = f"editor {name} {len(saved)}\n"
            save(path, path.read_text() + line)
            saved.append(line)
            stop.wait(0.02)

    thread = threading.Thread(target=editor)
    thread.start()
    ok, errors = 0, {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        r = d.call("note.append", {"path": rel, "content": f"agent {name} {ok}"})
        if "error" in r:
            errors[r["error"]["code"]] = errors.get(r["error"]["code"], 0) + 1
        else:
            ok += 1
    stop.set()
    thread.join()
    final = path.read_bytes()
    sha = hashlib.sha256(final).hexdigest()
    settle = time.monotonic() + 15
    while time.monotonic() < settle and index_docs(d.data / "memoryd.db").get(rel) != sha:
        time.sleep(0.1)
    text = final.decode()
    return {
        "pattern": name,
        "appends": ok,
        "errors": errors,
        "editor_saves": len(saved),
        "editor_lines_lost": sum(line not in text for line in saved),
        "agent_lines_lost": sum(f"agent {name} {i}\n" not in text for i in range(ok)),
        "index_right": index_docs(d.data / "memoryd.db").get(rel) == sha,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    base = Path(args.dir or tempfile.mkdtemp(prefix="memoryd-editors-"))
    for r in range(args.rounds):
        (base / f"round{r}" / "ws").mkdir(parents=True)
        d = Daemon(base / f"round{r}", "none")
        d.start()
        try:
            load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
            print(f"round {r + 1}, load {load}")
            for name, save in PATTERNS.items():
                print(json.dumps(one(d, name, save, args.seconds)))
        finally:
            d.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
