"""The web page's speed (issue 22), beside the socket's own search, on one real daemon.

    python -m bench.web ROOT --build [--chunks 10000]   # once: the corpus + a linked vault
    python -m bench.web ROOT [--rounds 3] [--queries 100]

The workspace is bench/corpus.py's notes (about --chunks chunks) plus graph/: 1,200 notes
linked by wikilinks (each to 3 others, a few hubs), so a note's neighbourhood two links away
holds about a thousand nodes. `memoryd run` serves it (keyword mode: no model, as the other
latency rows at this size); the page is started through the socket (`web.open`) and asked with
the bearer token from web.json over one keep-alive HTTP connection, as a browser would.

Per round, interleaved so the machine's load falls on each alike:
- each page's first byte (its HTML) and its data (the JSON route the page's script asks first:
  search, note, memories, graph, status), p50/p95 over --queries requests;
- search as you type: the prefixes of two-word queries, as the page sends them, through
  /api/search, beside the same searches through the socket (`search` with the same params);
- socket search p95 alone, then while a page polls /api/status every 2 s (the status page) and
  while one types (a search every 120 ms, the page's debounce): the ratio is the cost of an
  open page to the socket's clients.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

from bench import run
from bench.corpus import WORDS, write_workspace

GRAPH_NOTES = 1200


def build(root: Path, chunks: int) -> None:
    ws = root / "ws"
    shape = write_workspace(ws, chunks)
    rng = random.Random(5)
    (ws / "graph").mkdir(parents=True, exist_ok=True)
    for i in range(GRAPH_NOTES):
        # a few hubs (0..9) that many notes link to, and random links among the rest
        targets = {rng.randrange(10)} | {rng.randrange(GRAPH_NOTES) for _ in range(2)}
        links = " ".join(f"[[g-{t:04d}]]" for t in sorted(targets) if t != i)
        (ws / "graph" / f"g-{i:04d}.md").write_text(
            f"# Node {i}\n\n{' '.join(rng.sample(WORDS, 8))}. See {links}.\n"
        )
    print(f"built {shape['files']} notes, {shape['chunks']} chunks, and {GRAPH_NOTES} graph notes")


def pct(values: list[float], q: float) -> float:
    return run.pct(values, q)


class Socket:
    """One persistent connection to the daemon's socket, as memoryd's MCP bridge keeps."""

    def __init__(self, path: Path) -> None:
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(str(path))
        self.f = self.s.makefile("rb")
        self.n = 0

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.n += 1
        req = {"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}
        self.s.sendall(json.dumps(req).encode() + b"\n")
        resp = json.loads(self.f.readline())
        if "error" in resp:
            raise RuntimeError(resp["error"])
        return resp["result"]


class Page:
    """One keep-alive HTTP connection with the bearer token (a signed-in browser tab)."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def get(self, path: str) -> tuple[float, float, int]:
        """(seconds to the first byte, seconds to the whole answer, status); a connection the
        page closed after its idle timeout is opened again, as a browser does."""
        try:
            return self._get(path)
        except (http.client.RemoteDisconnected, ConnectionError):
            self.conn.close()
            return self._get(path)

    def _get(self, path: str) -> tuple[float, float, int]:
        t = time.perf_counter()
        self.conn.request(
            "GET",
            path,
            headers={"Host": f"127.0.0.1:{self.port}", "Authorization": f"Bearer {self.token}"},
        )
        resp = self.conn.getresponse()
        resp.read(1)
        first = time.perf_counter() - t
        resp.read()
        return first, time.perf_counter() - t, resp.status


def typing_queries(n: int, seed: int) -> list[str]:
    """What the page sends while someone types two words: every prefix from 2 characters."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        words = f"{rng.choice(WORDS)} {rng.choice(WORDS)}"
        out.extend(words[:k].strip() for k in range(2, len(words) + 1) if words[k - 1] != " ")
    return out[:n]


def measure(root: Path, rounds: int, queries: int) -> dict[str, Any]:
    d = run.Daemon(root / "daemon", root / "ws", model=False)
    try:
        d.wait(
            lambda: (d.call("status") or {}).get("index", {}).get("initial_reconcile_done"), 3600
        )
        status = d.call("status")
        info = d.call("web.open")
        token = json.loads(Path(info["state_file"]).read_text())["token"]
        sock = Socket(d.sock)
        page = Page(info["port"], token)
        n = len(WORDS)
        memories = [f"{WORDS[i % n]} {WORDS[(i * 7) % n]} memory {i}" for i in range(200)]
        for text in memories:
            sock.call("add", {"content": text, "tags": [WORDS[3]]})
        hub = "graph/g-0001.md"
        graph = json.loads(page_get_body(page, f"/api/graph?path={hub}&depth=3&limit=1000"))
        routes = {
            "search": ("/search", "/api/search?query={q}&limit=20"),
            "note": (f"/note?path={hub}", f"/api/note?path={hub}"),
            "memories": ("/memories", "/api/memories?limit=100"),
            "graph": (f"/graph?path={hub}", f"/api/graph?path={hub}&depth=3&limit=1000"),
            "status": ("/status", "/api/status"),
        }
        res: dict[str, Any] = {
            "chunks": status["counts"]["chunks"],
            "documents": status["counts"]["documents"],
            "graph_nodes": len(graph["nodes"]),
            "graph_edges": len(graph["edges"]),
            "rounds": [],
            "load_before": os.getloadavg(),
        }
        typed = typing_queries(queries, 3)
        enc = [quote_plus(q) for q in typed]
        for r in range(rounds):
            rnd: dict[str, Any] = {"pages": {}}
            for name, (shell, data) in routes.items():
                firsts, datas = [], []
                for i in range(queries if name in ("search", "status") else max(20, queries // 5)):
                    firsts.append(page.get(shell)[0])
                    datas.append(page.get(data.format(q=enc[i % len(enc)]))[1])
                rnd["pages"][name] = {
                    "first_byte_p50_ms": pct(firsts, 50) * 1e3,
                    "first_byte_p95_ms": pct(firsts, 95) * 1e3,
                    "data_p50_ms": pct(datas, 50) * 1e3,
                    "data_p95_ms": pct(datas, 95) * 1e3,
                }
            web_t, sock_t = [], []
            for q, e in zip(typed, enc, strict=True):  # interleaved, query by query
                t = time.perf_counter()
                sock.call("search", {"query": q, "limit": 20})
                sock_t.append(time.perf_counter() - t)
                web_t.append(page.get(f"/api/search?query={e}&limit=20")[1])
            rnd["typing"] = {
                "web_p50_ms": pct(web_t, 50) * 1e3,
                "web_p95_ms": pct(web_t, 95) * 1e3,
                "socket_p50_ms": pct(sock_t, 50) * 1e3,
                "socket_p95_ms": pct(sock_t, 95) * 1e3,
            }
            rnd["socket_under_load"] = socket_while(d, sock, typed, info["port"], token)
            rnd["load"] = os.getloadavg()
            res["rounds"].append(rnd)
            print(json.dumps({"round": r + 1, **rnd}, indent=1))
        return res
    finally:
        d.stop()


def page_get_body(page: Page, path: str) -> bytes:
    page.conn.request(
        "GET",
        path,
        headers={"Host": f"127.0.0.1:{page.port}", "Authorization": f"Bearer {page.token}"},
    )
    return page.conn.getresponse().read()


def socket_while(d: Any, sock: Socket, qs: list[str], port: int, token: str) -> dict[str, Any]:
    """Socket search p95 alone, while a status page polls every 2 s, while someone types."""

    def timed() -> list[float]:
        out = []
        for q in qs:
            t = time.perf_counter()
            sock.call("search", {"query": q, "limit": 20})
            out.append(time.perf_counter() - t)
        return out

    def background(path_of: Any, every: float, stop: threading.Event) -> None:
        p = Page(port, token)
        i = 0
        while not stop.is_set():
            p.get(path_of(i))
            i += 1
            stop.wait(every)

    out: dict[str, Any] = {}
    for name, path_of, every in [
        ("alone", None, 0.0),
        ("status page polling", lambda i: "/api/status", 2.0),
        ("alone again", None, 0.0),
        (
            "someone typing",
            lambda i: f"/api/search?query={quote_plus(qs[i % len(qs)])}&limit=20",
            0.12,
        ),
    ]:
        stop = threading.Event()
        th = None
        if path_of is not None:
            th = threading.Thread(target=background, args=(path_of, every, stop), daemon=True)
            th.start()
        lat = timed()
        stop.set()
        if th is not None:
            th.join(30)
        out[name] = {"p50_ms": pct(lat, 50) * 1e3, "p95_ms": pct(lat, 95) * 1e3}
    base = (out["alone"]["p95_ms"] + out["alone again"]["p95_ms"]) / 2
    out["polling_ratio"] = out["status page polling"]["p95_ms"] / base
    out["typing_ratio"] = out["someone typing"]["p95_ms"] / base
    return out


def screenshot(root: Path, out: Path, nodes: int = 1000) -> dict[str, Any]:
    """The graph page at the hub, `nodes` nodes, in headless Chromium: a PNG and the time the
    page took from navigation to a drawn graph (and Cytoscape's own layout time)."""
    from playwright.sync_api import sync_playwright

    d = run.Daemon(root / "daemon", root / "ws", model=False)
    try:
        d.wait(
            lambda: (d.call("status") or {}).get("index", {}).get("initial_reconcile_done"), 3600
        )
        d.call("web.open")
        link = json.loads(d.ctl("--json", "open", "graph", "graph/g-0001.md").stdout)["login_url"]
        link = link.replace("next=%2Fgraph%3F", f"next=%2Fgraph%3Fdepth%3D3%26limit%3D{nodes}%26")
        with sync_playwright() as p:
            b = p.chromium.launch(
                executable_path=os.environ.get("MEMORYD_CHROMIUM", "/usr/bin/chromium"),
                args=[
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-sync",
                    "--disable-background-networking",
                    "--disable-component-update",
                ],
            )
            page = b.new_page(viewport={"width": 1200, "height": 800})
            t = time.perf_counter()
            page.goto(link)
            page.wait_for_selector("#graph[data-nodes] canvas", timeout=120_000)
            drawn = time.perf_counter() - t
            page.wait_for_timeout(500)
            page.screenshot(path=str(out))
            res = {
                "nodes": int(page.get_attribute("#graph", "data-nodes") or 0),
                "edges": int(page.get_attribute("#graph", "data-edges") or 0),
                "navigation_to_drawn_s": round(drawn, 2),
                "layout_ms": int(page.get_attribute("#graph", "data-draw-ms") or 0),
            }
            b.close()
        print(json.dumps(res))
        return res
    finally:
        d.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.web", description=__doc__)
    p.add_argument("root", type=Path)
    p.add_argument("--build", action="store_true")
    p.add_argument("--chunks", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--out", type=Path)
    p.add_argument("--screenshot", type=Path, help="save the 1,000-node graph page as a PNG")
    a = p.parse_args(argv)
    if a.screenshot:
        screenshot(a.root, a.screenshot)
        return 0
    if a.build:
        build(a.root, a.chunks)
        return 0
    res = measure(a.root, a.rounds, a.queries)
    if a.out:
        a.out.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
