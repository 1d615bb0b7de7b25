"""memoryd over a real Obsidian vault: link resolution, attachments, tags from code, and keyword
search beside rg (issue 21).

    .venv/bin/python -m bench.obsidian_vault VAULT [--folders en,zh,ja] [--words canvas,...]

VAULT is a copy of the Obsidian help vault (its en/, zh/ and ja/ folders by default: fetch it,
never commit it). Starts `memoryd run` on it in keyword mode (the memoryd on PYTHONPATH, so an
older checkout can be measured the same way), waits for the first reconcile and, through the
daemon's socket only, counts:

- links written in the notes (from en/ and from all), resolved or not, and the unresolved ones
  whose target names a file that exists in the vault (an attachment counted as broken);
- links that cross language folders (written in en/, resolved into zh/ or ja/), and links to
  attachments that resolve;
- tags that look like CSS colours (#ff0000, #fff): read from code (callout code blocks);
- for each word, the en/ notes `rg -l -i -w WORD` finds and the en/ notes memoryd's keyword
  search finds (one result per note), and how many both find.

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

WORDS = "canvas,hotkey,callout,frontmatter,backlink,bookmark,workspace,graph"
COLOUR = re.compile(r"^(?=.*[a-f])[0-9a-f]{3}(?:[0-9a-f]{3})?$")


class Daemon:
    def __init__(self, root: Path, workspace: Path) -> None:
        self.sock = Path(tempfile.mkdtemp(prefix="mdv-", dir="/tmp")) / "s.sock"
        cfg = root / "daemon.toml"
        cfg.write_text(
            f'workspace = "{workspace}"\ndata_dir = "{root / "data"}"\nsocket = "{self.sock}"\n'
            '[embedding]\nenabled = false\n[logging]\nlevel = "warning"\n'
            "[dailylog]\nenabled = false\n[search]\nmax_limit = 1000\n"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", "run", "--config", str(cfg)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 900
        while not (self.call("status") or {}).get("index", {}).get("initial_reconcile_done"):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("the daemon did not finish its first reconcile")
            time.sleep(0.2)

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(600)
                s.connect(str(self.sock))
                req = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
                s.sendall(json.dumps(req).encode() + b"\n")
                return json.loads(s.makefile("rb").readline()).get("result")
        except OSError:
            return None

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)


def notes(d: Daemon) -> list[str]:
    out: list[str] = []
    while True:
        page = d.call("note.list", {"limit": 1000, "offset": len(out)}) or {}
        items = page.get("items") or []
        out += [i["path"] for i in items]
        if not items or len(out) >= page.get("total", 0):
            return out


def top(path: str) -> str:
    return path.split("/", 1)[0]


def measure(vault: Path, words: list[str]) -> dict[str, Any]:
    names = {f.lower() for _, _, files in os.walk(vault) for f in files}
    tmp = Path(tempfile.mkdtemp(prefix="obsidian-bench-"))
    d = Daemon(tmp, vault)
    try:
        paths = notes(d)
        links: Counter[str] = Counter()
        for src in paths:
            where = "en" if top(src) == "en" else "other"
            for link in (d.call("links", {"path": src}) or {}).get("links") or []:
                to = link["path"]
                links[f"{where}.total"] += 1
                if to is None:
                    links[f"{where}.unresolved"] += 1
                    name = link["target"].rsplit("/", 1)[-1].lower()
                    if name in names:
                        links[f"{where}.unresolved_but_a_file_exists"] += 1
                    continue
                links[f"{where}.resolved"] += 1
                if top(to) != top(src):
                    links[f"{where}.crossing_language_folders"] += 1
                if not to.lower().endswith(".md"):
                    links[f"{where}.attachments_resolved"] += 1
        tags: Counter[str] = Counter()
        offset = 0
        while True:
            page = d.call("list", {"kind": "chunk", "limit": 500, "offset": offset}) or {}
            items = page.get("items") or []
            for item in items:
                tags.update(set(item.get("tags") or []))
            offset += len(items)
            if not items or offset >= page.get("total", 0):
                break
        colours = sorted(t for t in tags if COLOUR.match(t))
        search: dict[str, Any] = {}
        for word in words:
            rg = subprocess.run(
                ["rg", "-l", "-i", "-w", "--glob", "*.md", word, "en"],
                cwd=vault,
                capture_output=True,
                text=True,
            )
            by_rg = set(rg.stdout.split("\n")) - {""}
            res = d.call(
                "search",
                {"query": word, "mode": "keyword", "kind": "chunk", "path": "en/", "limit": 1000},
            )
            by_memoryd = {h["path"] for h in (res or {}).get("hits") or []}
            search[word] = {
                "rg": len(by_rg),
                "memoryd": len(by_memoryd),
                "both": len(by_rg & by_memoryd),
            }
        return {
            "notes": len(paths),
            "other_files": sum(len(f) for _, _, f in os.walk(vault)) - len(paths),
            "links": dict(sorted(links.items())),
            "distinct_tags": len(tags),
            "colour_tags": colours,
            "search_en": search,
        }
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vault", type=Path)
    ap.add_argument("--words", default=WORDS)
    a = ap.parse_args(argv)
    if shutil.which("rg") is None:
        print("needs rg (ripgrep) on PATH", file=sys.stderr)
        return 2
    out = measure(a.vault.resolve(), [w for w in a.words.split(",") if w])
    print(json.dumps(out, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
