"""The web page (issue 22) through a real HTTP client on a real loopback port: every route,
and every refusal (no or wrong token, a reused or stale sign-in link, a foreign Host header, a
request from another site, a write without its CSRF token, another local user)."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from conftest import ROOT, wait_for
from webclient import WebHarness

from memoryd.serve import methods as api
from memoryd.web import auth, peers, routes
from memoryd.web.peers import tcp_peer_uid
from memoryd.web.server import CSP

NOTES = {
    "auth.md": "# Auth\n\nSessions live in Redis. See [[db]] and [[nowhere]].\n\n"
    "<script>alert(1)</script>\n",
    "db.md": "---\ntags: [db]\n---\n# DB\n\nWe chose Postgres. Back to [[auth]].\n",
    "ops/deploy.md": "# Deploy\n\nDeploys go out on Tuesdays; see [[db]].\n",
}


@pytest.fixture
def web(make_app: Any) -> Iterator[WebHarness]:
    app = make_app(model=None)
    for path, text in NOTES.items():
        (app.cfg.workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (app.cfg.workspace / path).write_text(text)
    app.indexer.reconcile()
    first = app.memories.add(content="Redis runs on port 6380", tags=["redis"], type="fact")
    app.memories.add(content="We deploy on Tuesdays", type="decision", namespace="ops")
    h = WebHarness(app)
    h.mem = first.id  # type: ignore[attr-defined]
    yield h
    h.close()


PAGES = [f"/{p}" for p in routes.PAGES]
API_GETS = [path for (method, path) in routes.ROUTES if method == "GET"]
API_POSTS = [path for (method, path) in routes.ROUTES if method == "POST"]


# --- the token and signing in -------------------------------------------------------------------


def test_the_token_file_is_readable_by_its_owner_only(web: WebHarness) -> None:
    path = Path(web.info["state_file"])
    assert path == web.app.cfg.data_dir / auth.STATE_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    state = json.loads(path.read_text())
    assert state["port"] == web.port and state["token"] == web.token
    assert state["host"] == "127.0.0.1" and state["url"] == f"http://127.0.0.1:{web.port}/"


@pytest.mark.parametrize("path", ["/", *PAGES, *API_GETS, "/static/app.css", "/nothing"])
def test_every_get_without_a_token_is_refused(web: WebHarness, path: str) -> None:
    ans = web.request("GET", path, session=False)
    assert ans.status == 401
    assert b"memoryctl open" in ans.body
    assert b"Redis" not in ans.body and b"csrf" not in ans.body


@pytest.mark.parametrize("path", API_POSTS)
def test_every_write_without_a_token_is_refused(web: WebHarness, path: str) -> None:
    ans = web.request("POST", path, {"id": 1}, session=False)
    assert ans.status == 401
    assert (
        web.app.memories.list(api.filters_from({"namespace": "*"}, default_kind="memory"))[1] == 2
    )


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Bearer "},
        {"Authorization": "Basic d3Jvbmc="},
        {"Cookie": "{cookie}=made-up"},
        {"Cookie": "other=1"},
    ],
    ids=["wrong-bearer", "empty-bearer", "basic", "made-up-cookie", "other-cookie"],
)
def test_a_wrong_token_is_refused(web: WebHarness, headers: dict[str, str]) -> None:
    headers = {k: v.replace("{cookie}", web.cookie_name) for k, v in headers.items()}
    ans = web.request("GET", "/api/search?query=redis", headers=headers, session=False)
    assert ans.status == 401
    assert web.request("GET", "/search", headers=headers, session=False).status == 401


def test_the_bearer_token_is_accepted(web: WebHarness) -> None:
    ans = web.request(
        "GET", "/api/search?query=redis", headers={"Authorization": f"Bearer {web.token}"}
    )
    assert ans.status == 200 and ans.json()["hits"]


def test_a_sign_in_link_gives_a_strict_httponly_cookie_and_works_once(web: WebHarness) -> None:
    link = web.login_url(page="/memories")
    first = web.request("GET", link, session=False)
    assert first.status == 303 and first.headers["location"] == "/memories"
    cookie = first.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    again = web.request("GET", link, session=False)
    assert again.status == 401 and "set-cookie" not in again.headers
    sid = cookie.split(";")[0].split("=", 1)[1]
    page = web.request("GET", "/memories", headers={"Cookie": f"{web.cookie_name}={sid}"})
    assert page.status == 200 and b'data-page="memories"' in page.body


@pytest.mark.parametrize("why", ["stale", "future", "wrong-mac", "no-mac"])
def test_a_bad_sign_in_link_is_refused(web: WebHarness, why: str) -> None:
    now = int(time.time())
    if why == "stale":
        link = web.login_url(ts=now - int(auth.LOGIN_TTL_S) - 5)
    elif why == "future":
        link = web.login_url(ts=now + int(auth.LOGIN_TTL_S) + 5)
    elif why == "wrong-mac":
        link = web.login_url().replace("&m=", "&m=0")
    else:
        link = web.login_url().split("&m=")[0]
    ans = web.request("GET", link, session=False)
    assert ans.status == 401 and "set-cookie" not in ans.headers


def test_the_sign_in_link_goes_only_to_a_local_page(web: WebHarness) -> None:
    for target in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
        ans = web.request("GET", web.login_url(page=target), session=False)
        assert ans.status == 303 and ans.headers["location"] == "/search"


# --- where a request comes from ------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:{port}", "127.0.0.1:1", "localhost", "", "127.0.0.2:{port}"],
)
def test_a_foreign_host_header_is_refused_even_signed_in(web: WebHarness, host: str) -> None:
    web.sign_in()
    for path in ("/search", "/api/search?query=redis", "/api/status"):
        ans = web.request("GET", path, host=host.format(port=web.port))
        assert ans.status == 421, (path, host)
        assert b"Redis" not in ans.body


def test_every_loopback_name_is_accepted(web: WebHarness) -> None:
    web.sign_in()
    for name in ("127.0.0.1", "localhost", "[::1]", "LOCALHOST"):
        assert web.request("GET", "/api/trash", host=f"{name}:{web.port}").status == 200


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_a_request_from_another_site_is_refused(web: WebHarness, site: str) -> None:
    web.sign_in()
    assert web.request("GET", "/api/status", headers={"Sec-Fetch-Site": site}).status == 403
    ans = web.request(
        "POST", "/api/memory/delete", {"id": web.mem}, headers={"Sec-Fetch-Site": site}
    )
    assert ans.status == 403
    assert web.app.memories.get(web.mem)["content"] == "Redis runs on port 6380"


@pytest.mark.parametrize("csrf", [None, "", "wrong"])
def test_a_write_without_its_csrf_token_is_refused(web: WebHarness, csrf: str | None) -> None:
    web.sign_in()
    for path, body in [
        ("/api/memory/delete", {"id": web.mem}),
        ("/api/memory/update", {"id": web.mem, "content": "changed"}),
        ("/api/memory/tier", {"id": web.mem, "tier": "critical"}),
        ("/api/memory/validate", {"id": web.mem, "useful": True}),
        ("/api/trash/restore", {"key": 1}),
    ]:
        ans = web.request("POST", path, body, headers={"X-CSRF-Token": csrf})
        assert ans.status == 403, path
    rec = web.app.memories.get(web.mem)
    assert rec["content"] == "Redis runs on port 6380" and rec["tier"] == "normal"
    assert rec["validation_count"] == 0


def test_a_write_from_another_origin_is_refused(web: WebHarness) -> None:
    web.sign_in()
    for origin in ("http://evil.example", f"http://localhost:{web.port + 1}", "null"):
        ans = web.request("POST", "/api/memory/delete", {"id": web.mem}, headers={"Origin": origin})
        assert ans.status == 403
    ok = web.request(
        "POST",
        "/api/memory/validate",
        {"id": web.mem, "useful": True},
        headers={"Origin": f"http://127.0.0.1:{web.port}"},
    )
    assert ok.status == 200


def test_a_connection_from_this_user_is_known_as_ours(web: WebHarness) -> None:
    import socket

    with socket.create_connection(("127.0.0.1", web.port)) as s:
        uid = tcp_peer_uid(("127.0.0.1", web.port), s.getsockname()[:2])
    if uid is None:
        pytest.skip("no /proc/net/tcp here: the token alone guards the page")
    assert uid == os.getuid()


def test_a_reused_port_is_judged_by_its_established_line() -> None:
    """On loopback Linux reuses a port still in TIME_WAIT: that closed socket's line (uid 0)
    comes first in the table, and must not speak for the live connection's owner."""
    head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid"
    local, remote = "0100007F:C350", "0100007F:1F90"
    table = [
        head,
        f"   0: {local} {remote} 06 00000000:00000000 03:00000F2B 00000000     0",
        f"   1: {remote} {local} 01 00000000:00000000 00:00000000 00000000  1000",
        f"   2: {local} {remote} 01 00000000:00000000 00:00000000 00000000 65534",
    ]
    assert peers.owner(table, local, remote) == 65534
    assert peers.owner(table[:2], local, remote) is None  # only the closed one: unknown
    assert peers.owner([head, "garbage", "   3: x"], local, remote) is None


OTHER_USER_CLIENT = """
import encodings.idna, http.client, os, sys
os.setgid(65534); os.setuid(65534)
port, token = int(sys.argv[1]), sys.argv[2]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
try:
    c.request("GET", "/api/search?query=redis", headers={"Authorization": "Bearer " + token})
    r = c.getresponse()
    print(r.status, r.read().decode(errors="replace")[:200])
except (ConnectionError, http.client.HTTPException) as exc:
    print("closed", type(exc).__name__)
"""


def test_another_local_user_is_refused(web: WebHarness) -> None:
    """As root the test can be another user (nobody): even holding the token (which it could
    not read from web.json, mode 0600), its connection is refused before it is read."""
    if os.geteuid() != 0 or not Path("/proc/net/tcp").exists():
        pytest.skip("needs root (to run a client as another user) and Linux's /proc/net/tcp")
    out = subprocess.run(
        [sys.executable, "-S", "-c", OTHER_USER_CLIENT, str(web.port), web.token],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(("403", "closed")), out.stdout
    assert "6380" not in out.stdout
    # and this user, with the same token, gets the answer
    ans = web.request(
        "GET", "/api/search?query=redis", headers={"Authorization": f"Bearer {web.token}"}
    )
    assert ans.status == 200


# --- every response ------------------------------------------------------------------------------


def test_every_answer_carries_the_strict_headers(web: WebHarness) -> None:
    web.sign_in()
    for path in ["/search", "/api/status", "/static/app.css", "/nothing", "/login"]:
        ans = web.request("GET", path)
        assert ans.headers["content-security-policy"] == CSP, path
        assert "script-src 'self'" in CSP and "unsafe" not in CSP
        assert ans.headers["x-frame-options"] == "DENY"
        assert ans.headers["x-content-type-options"] == "nosniff"
        assert ans.headers["referrer-policy"] == "no-referrer"
    assert web.request("GET", "/api/status").headers["cache-control"] == "no-store"


def test_pages_are_linkable_shells_with_their_csrf_token(web: WebHarness) -> None:
    web.sign_in()
    for page in routes.PAGES:
        ans = web.request("GET", f"/{page}?query=x&path=a.md")
        assert ans.status == 200 and ans.headers["content-type"].startswith("text/html")
        assert f'data-page="{page}"'.encode() in ans.body
        assert f'content="{web.csrf}"'.encode() in ans.body
        assert f'src="/static/{page}.js"'.encode() in ans.body
        assert b"<script>" not in ans.body  # no inline script: the CSP allows none
    assert web.request("GET", "/").status == 302


def test_every_static_file_is_served_and_nothing_else(web: WebHarness) -> None:
    web.sign_in()
    static = ROOT / "memoryd" / "web" / "static"
    for path in static.rglob("*"):
        if path.suffix in routes.TYPES and path.name != "shell.html":
            url = "/static/" + path.relative_to(static).as_posix()
            ans = web.request("GET", url)
            assert ans.status == 200 and ans.body == path.read_bytes(), url
    for url in (
        "/static/../server.py",
        "/static/%2e%2e/server.py",
        "/static/shell.html",
        "/static/LICENSES/../../auth.py",
        "/etc/passwd",
    ):
        assert web.request("GET", url).status == 404, url


def test_vendored_libraries_are_listed_with_their_licences() -> None:
    static = ROOT / "memoryd" / "web" / "static"
    listing = (static / "LICENSES").read_text()
    for lib in ("markdown-it", "dompurify", "cytoscape"):
        assert lib in listing
        assert (static / "vendor" / f"{lib}.LICENSE.txt").is_file()
    for js in (static / "vendor").glob("*.js"):
        import hashlib

        assert hashlib.sha256(js.read_bytes()).hexdigest() in listing, js.name


@pytest.mark.parametrize(
    "raw, status",
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"DELETE /api/trash HTTP/1.1\r\nHost: x\r\n\r\n", 405),
        (b"GET /search HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        (b"POST /api/trash HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411),
        (b"POST /api/trash HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n", 413),
        (b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n", 431),
    ],
    ids=["garbage", "method", "two-hosts", "chunked", "huge-body", "huge-head"],
)
def test_a_malformed_request_is_answered_and_closed(web: Any, raw: bytes, status: int) -> None:
    import socket

    with socket.create_connection(("127.0.0.1", web.port), timeout=10) as s:
        s.sendall(raw)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    assert data.startswith(f"HTTP/1.1 {status} ".encode()), data[:80]


def test_closing_the_page_closes_a_connection_that_stopped_reading(web: WebHarness) -> None:
    """A client that asks for more than it reads leaves an answer half-sent in the server's
    buffer. Closing the page closes that socket too, at once: before, close() waited for the
    unsent bytes, and a socket outlived the page's loop (CI's unclosed-transport warning)."""
    import socket

    web.sign_in()
    ask = (
        f"GET /static/vendor/cytoscape.min.js HTTP/1.1\r\nHost: {web.host}\r\n"
        f"Cookie: {web.cookie_name}={web.cookie}\r\n\r\n"
    ).encode()
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", web.port))
        s.sendall(ask * 100)  # 40 MB of answers, pipelined; read none of them
        opened = web.server._conns.open
        wait_for(lambda: any(t.get_write_buffer_size() for t in list(opened)), timeout=10)  # type: ignore[attr-defined]
        started = time.monotonic()
        web.close()
        assert time.monotonic() - started < 10
        assert not opened
        s.settimeout(10)  # the answer ends (aborted: the rest is never sent)
        with contextlib.suppress(ConnectionResetError):
            while s.recv(1 << 20):
                pass


# --- the routes: the same doors as the socket API ------------------------------------------------


def test_search_answers_as_the_socket_api_does(web: WebHarness) -> None:
    web.sign_in()
    got = web.api("GET", "/api/search?query=redis&kind=&tags=")
    direct = api.search(web.app, {"query": "redis", "limit": 20})
    assert [h["id"] for h in got["hits"]] == [h["id"] for h in direct["hits"]]
    assert got["mode"] == direct["mode"] and got["hits"][0]["highlights"]
    only = web.api("GET", "/api/search?query=redis&kind=memory")
    assert {h["kind"] for h in only["hits"]} == {"memory"}
    ns = web.api("GET", "/api/search?query=tuesdays&namespace=ops&kind=memory")
    assert [h["content"] for h in ns["hits"]] == ["We deploy on Tuesdays"]
    bad = web.request("GET", "/api/search?query=x&mode=psychic")
    assert bad.status == 400 and "mode" in bad.json()["error"]["message"]
    assert web.request("GET", "/api/search?query=").status == 400


def test_searches_are_recorded_for_the_status_chart(web: WebHarness) -> None:
    web.sign_in()
    for _ in range(3):
        web.api("GET", "/api/search?query=redis")
    status = web.api("GET", "/api/status")
    assert status["searches"]["count"] >= 3
    bucket = status["searches"]["buckets"][-1]
    assert bucket["p95_ms"] >= bucket["p50_ms"] > 0
    assert status["index"]["initial_reconcile_done"] is False  # App.start was never called
    assert {j["name"] for j in status["jobs"]} >= {"expiry", "reconcile"}
    web.app.jobs.run_now("expiry")
    web.app.jobs.run_now("expiry")
    jobs = {j["name"]: j for j in web.api("GET", "/api/status")["jobs"]}
    runs = jobs["expiry"]["recent_runs"]
    assert len(runs) == 2 and runs[-1]["error"] is None and runs[-1]["at"].endswith("Z")
    assert status["stats"]["memories"] == 2


def test_note_route_reads_links_and_backlinks(web: WebHarness) -> None:
    web.sign_in()
    note = web.api("GET", "/api/note?path=auth.md")
    assert note["content"] == NOTES["auth.md"]
    assert {(x["target"], x["path"]) for x in note["links"]} == {("db", "db.md"), ("nowhere", None)}
    assert [b["path"] for b in note["backlinks"]] == ["db.md"]
    assert note["file"] == str(web.app.cfg.workspace / "auth.md") and note["vault"] is None
    (web.app.cfg.workspace / ".obsidian").mkdir()
    assert web.api("GET", "/api/note?path=auth.md")["vault"] == web.app.cfg.workspace.name
    assert web.request("GET", "/api/note?path=missing.md").status == 404
    assert web.request("GET", "/api/note?path=../etc/passwd").status in (400, 404)
    listed = web.api("GET", "/api/notes")
    assert {i["path"] for i in listed["items"]} == set(NOTES)


def test_graph_route_is_the_graph_method(web: WebHarness) -> None:
    web.sign_in()
    g = web.api("GET", "/api/graph?path=db.md&depth=1")
    assert g == api.METHODS["graph"].fn(web.app, {"path": "db.md", "depth": 1})
    assert g["center"] == "db.md"
    assert {n["id"] for n in g["nodes"]} == {"db.md", "auth.md", "ops/deploy.md"}
    assert {(e["source"], e["target"]) for e in g["edges"]} == {
        ("db.md", "auth.md"),
        ("auth.md", "db.md"),
        ("ops/deploy.md", "db.md"),
    }
    two = web.api("GET", "/api/graph?path=db.md&depth=2")
    assert {n["id"]: n["kind"] for n in two["nodes"]}["?nowhere"] == "missing"
    small = web.api("GET", "/api/graph?path=db.md&limit=2")
    assert len(small["nodes"]) == 2 and small["truncated"] is True
    assert web.request("GET", "/api/graph?path=db.md&depth=9").status == 400


def test_memories_timeline_filters_and_facets(web: WebHarness) -> None:
    web.sign_in()
    default = web.api("GET", "/api/memories")
    assert [m["content"] for m in default["items"]] == ["Redis runs on port 6380"]
    every = web.api("GET", "/api/memories?namespace=*")
    assert every["total"] == 2
    assert web.api("GET", "/api/memories?namespace=*&type=decision")["total"] == 1
    assert web.api("GET", "/api/memories?tags=redis")["total"] == 1
    assert web.api("GET", "/api/memories?tier=critical")["total"] == 0
    facets = web.api("GET", "/api/facets")
    assert facets["namespaces"] == {"default": 1, "ops": 1}
    one = web.api("GET", f"/api/memory?id={web.mem}")
    assert one["content"] == "Redis runs on port 6380"


def test_edit_validate_tier_delete_and_undo(web: WebHarness) -> None:
    web.sign_in()
    mid = web.api("GET", "/api/memories")["items"][0]["id"]
    upd = web.api(
        "POST",
        "/api/memory/update",
        {"id": mid, "content": "Redis runs on 6381", "tags": ["redis", "ops"]},
    )
    assert upd["content"] == "Redis runs on 6381"
    assert sorted(upd["tags"]) == ["ops", "redis"]
    assert web.app.memories.get(mid)["content"] == "Redis runs on 6381"
    val = web.api("POST", "/api/memory/validate", {"id": mid, "useful": True})
    assert val["useful_count"] == 1 and val["validation_count"] == 1
    tier = web.api("POST", "/api/memory/tier", {"id": mid, "tier": "critical"})
    assert tier["tier"] == "critical"
    assert web.request("POST", "/api/memory/tier", {"id": mid, "tier": "legendary"}).status == 400
    history = api.history(web.app, {"id": mid})["history"]
    assert {h["field"] for h in history} >= {"content", "tier", "confidence"}
    gone = web.api("POST", "/api/memory/delete", {"id": mid})
    assert gone["deleted"] is True and gone["trash_key"] >= 1
    assert web.request("GET", f"/api/memory?id={mid}").status == 404
    trash = web.api("GET", "/api/trash")["items"]
    assert trash[0]["memory"]["content"] == "Redis runs on 6381"
    back = web.api("POST", "/api/trash/restore", {"key": gone["trash_key"]})
    assert back["imported"] == 1
    restored = web.app.memories.list(api.filters_from({"tags": "redis"}, default_kind="memory"))[0]
    assert [(m["content"], m["tier"]) for m in restored] == [("Redis runs on 6381", "critical")]
    assert web.api("GET", "/api/trash")["items"] == []
    assert web.request("POST", "/api/trash/restore", {"key": gone["trash_key"]}).status == 404


def test_a_chunk_cannot_be_deleted_or_edited_here(web: WebHarness) -> None:
    web.sign_in()
    chunk = api.search(web.app, {"query": "postgres", "kind": "chunk"})["hits"][0]["id"]
    assert web.request("POST", "/api/memory/delete", {"id": chunk}).status == 400
    assert web.request("POST", "/api/memory/update", {"id": chunk, "content": "x"}).status == 400
    assert web.request("POST", "/api/memory/update", {"id": web.mem, "bogus": 1}).status == 400
    assert web.request("POST", "/api/memory/update", "not an object").status == 400


def test_sign_out_ends_the_session(web: WebHarness) -> None:
    web.sign_in()
    assert web.request("POST", "/logout").status == 303
    assert web.request("GET", "/api/status").status == 401


# --- the daemon: memoryctl open, [web] enabled --------------------------------------------------


def test_memoryctl_open_starts_the_page_and_signs_in(daemon_factory: Any) -> None:
    import http.client

    d = daemon_factory()
    state = d.cfg["data_dir"] + "/web.json"
    assert not Path(state).exists()  # off by default
    out = d.ctl("--json", "open", "memories")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["started"] is True and info["state_file"] == state
    assert "token" not in info
    assert stat.S_IMODE(Path(state).stat().st_mode) == 0o600
    url = info["login_url"]
    assert url.startswith(f"http://127.0.0.1:{info['port']}/login?")
    assert json.loads(Path(state).read_text())["token"] not in url

    conn = http.client.HTTPConnection("127.0.0.1", info["port"], timeout=10)
    conn.request("GET", url.split(str(info["port"]), 1)[1])
    resp = conn.getresponse()
    resp.read()
    assert resp.status == 303 and resp.getheader("Location") == "/memories"
    cookie = resp.getheader("Set-Cookie").split(";")[0]
    conn.request("GET", "/api/memories", headers={"Cookie": cookie})
    resp = conn.getresponse()
    assert resp.status == 200 and json.loads(resp.read())["total"] == 0
    conn.close()

    again = json.loads(d.ctl("--json", "open").stdout)
    assert again["started"] is False and again["port"] == info["port"]
    assert d.stop() == 0
    assert not Path(state).exists()


def test_web_enabled_starts_with_the_daemon_on_the_configured_port(daemon_factory: Any) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    d = daemon_factory(web={"enabled": True, "port": port})
    state = Path(d.cfg["data_dir"]) / "web.json"
    wait_for(state.exists, timeout=10)
    assert json.loads(state.read_text())["port"] == port
    with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
        c.sendall(f"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        assert c.recv(100).startswith(b"HTTP/1.1 401 ")


def test_the_search_log_keeps_one_day_in_ten_minute_buckets() -> None:
    from memoryd.serve.searchlog import BUCKET_S, DAY_S, SAMPLES_PER_BUCKET, SearchLog

    now = [1_800_000_000.0]
    log = SearchLog(lambda: now[0])
    for ms in range(1, 101):
        log.record(float(ms))
    first = log.series()
    assert first["count"] == 100 and len(first["buckets"]) == 1
    b = first["buckets"][0]
    assert (b["p50_ms"], b["p95_ms"], b["max_ms"], b["mean_ms"]) == (51.0, 96.0, 100.0, 50.5)
    for _ in range(3 * SAMPLES_PER_BUCKET):  # a busy bucket keeps a bounded sample
        log.record(5.0)
    assert log.series()["buckets"][0]["count"] == 100 + 3 * SAMPLES_PER_BUCKET
    now[0] += BUCKET_S
    log.record(7.0)
    assert [x["count"] for x in log.series()["buckets"]] == [100 + 3 * SAMPLES_PER_BUCKET, 1]
    now[0] += DAY_S
    log.record(9.0)
    assert [x["count"] for x in log.series()["buckets"]] == [1]


def test_a_busy_port_is_said_plainly(make_app: Any) -> None:
    import socket

    from memoryd.core.errors import Unavailable

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        app = make_app(model=None)
        with pytest.raises(Unavailable, match=f"port {busy}"):
            WebHarness(app, port=busy)


def test_entity_routes_are_the_entity_methods(web: WebHarness) -> None:
    web.sign_in()
    listed = web.api("GET", "/api/entities?top=50")
    assert listed == api.METHODS["entities"].fn(web.app, {"top": 50})
    first = web.api("GET", "/api/entities?top=2")  # the list pages by cursor here too (ent17)
    following = web.api("GET", f"/api/entities?top=2&cursor={quote(first['next_cursor'])}")
    assert first["entities"] + following["entities"] == listed["entities"][:4]
    picked = web.api("GET", "/api/related?name=redis&type=system&max_tokens=200")
    assert picked["name"].lower() == "redis" and picked.get("tokens_used", 0) <= 200
    assert "redis" in {e["name"].lower() for e in listed["entities"]}
    page = web.api("GET", "/api/entity?name=redis&relations=5&max_tokens=2000")
    assert page == api.METHODS["entity"].fn(
        web.app, {"name": "redis", "relations": 5, "max_tokens": 2000}
    )
    assert {s["kind"] for s in page["sources"]} == {"note", "memory"}
    assert "auth.md" in {s.get("path") for s in page["sources"]}
    related = web.api("GET", "/api/related?name=redis&depth=2&top=5")
    assert related == api.METHODS["related"].fn(web.app, {"name": "redis", "depth": 2, "top": 5})
    assert related["nodes"][0]["name"] == page["name"]
    for bad, status in [
        ("/api/entity?name=", 400),
        ("/api/entity?name=nobody-mentions-this", 404),
        ("/api/entity?name=redis&relations=many", 400),
        ("/api/entities?type=planet", 400),
        ("/api/entities?top=0", 400),
        ("/api/related?name=redis&depth=9", 400),
    ]:
        assert web.request("GET", bad).status == status, bad
    # a misspelt name: the page links the names it comes close to (ent17)
    missing = web.request("GET", "/api/entity?name=rediss")
    assert missing.status == 404
    near = missing.json()["error"]["data"]["suggestions"]
    assert "redis" in {s["name"].lower() for s in near}, near


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("GET", "/api/nothing", None, 404),
        ("POST", "/api/nothing", {}, 404),
        ("POST", "/api/search", {}, 405),
        ("GET", "/api/memory/update", None, 405),
        ("POST", "/api/memory/update", "not json", 400),
        ("POST", "/api/memory/update", [1, 2], 400),
        ("GET", "/api/search?query=x&mode=bogus", None, 400),
        ("GET", "/api/memory?id=99999", None, 404),
    ],
)
def test_every_api_error_is_a_json_error_object(
    web: WebHarness, method: str, path: str, body: Any, status: int
) -> None:
    """A script reading the API gets {"error": {"code", "message"}} for every refusal: an
    unknown route and a wrong method were plain text ("not here"), a body that is not JSON had
    no code."""
    web.sign_in()
    if body == "not json":
        ans = web.request(method, path, headers={"Content-Type": "application/json"}, raw=b"x")
    else:
        ans = web.request(method, path, body)
    assert ans.status == status
    error = ans.json()["error"]
    assert isinstance(error["code"], int) and error["message"]


@pytest.mark.parametrize("word", ["maybe", "2", "tru", "%20"])
def test_a_boolean_query_param_that_is_neither_true_nor_false_is_refused(
    web: WebHarness, word: str
) -> None:
    """`explain=maybe` was read as false without a word; every boolean param of a route now
    takes 1/true/yes/on or 0/false/no/off and refuses the rest."""
    web.sign_in()
    for param in ("explain", "include_deprecated", "include_expired"):
        ans = web.request("GET", f"/api/search?query=redis&{param}={word}")
        if word != "%20":
            assert ans.status == 400 and param in ans.json()["error"]["message"]
        else:
            assert ans.status == 200  # an empty value counts as not given
    assert web.request("GET", "/api/search?query=redis&explain=Yes").status == 200
