"""The web page walked as its user and as what else runs on the machine (branch web19): a
sign-in link's `next` that could write a header, every refusal of an /api/ route in the API's
error shape, two pages on one machine (a browser sends a cookie to every port of a host), and
web.json deleted or exposed under a running page."""

from __future__ import annotations

import http.cookiejar
import json
import os
import socket
import stat
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from webclient import WebHarness

from memoryd.core.errors import Refused


@pytest.fixture
def web(make_app: Any) -> Iterator[WebHarness]:
    app = make_app(model=None)
    first = app.memories.add(content="Redis runs on port 6380", tags=["redis"], type="fact")
    h = WebHarness(app)
    h.mem = first.id  # type: ignore[attr-defined]
    yield h
    h.close()


def raw_get(web: WebHarness, target: str) -> bytes:
    """One request as bytes on the wire, the whole answer as bytes (no client to tidy it)."""
    with socket.create_connection(("127.0.0.1", web.port), timeout=10) as s:
        s.sendall(
            f"GET {target} HTTP/1.1\r\nHost: {web.host}\r\nConnection: close\r\n\r\n".encode()
        )
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


# --- a sign-in link's next page -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("nxt", "location"),
    [
        ("/x\r\nSet-Cookie: evil=1", "/x%0D%0ASet-Cookie:%20evil=1"),
        ("/note?path=ünï cødé.md", "/note?path=%C3%BCn%C3%AF%20c%C3%B8d%C3%A9.md"),
        ("/note?path=a%20b.md#Some heading", "/note?path=a%20b.md#Some%20heading"),
        # a browser drops a tab from a URL: main's "/\t/evil.example" was //evil.example
        ("/\t/evil.example", "/%09/evil.example"),
    ],
    ids=["line-break", "unicode", "space", "tab"],
)
def test_a_sign_in_links_next_page_cannot_write_a_header(
    web: WebHarness, nxt: str, location: str
) -> None:
    """`next` is not signed: a line break in it wrote a header of its own (main: a second
    Set-Cookie), a tab made it another site's address, and a character past latin-1 failed the
    answer after the link was spent (main: the connection closed with nothing said, the
    one-time link gone)."""
    answer = raw_get(web, web.login_url(page=nxt))
    head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    assert head[0] == "HTTP/1.1 303 See Other", answer[:200]
    assert f"Location: {location}" in head
    cookies = [line for line in head if line.lower().startswith("set-cookie:")]
    assert len(cookies) == 1 and cookies[0].startswith(f"Set-Cookie: {web.cookie_name}=")


# --- every refusal of an /api/ route is an API error ---------------------------------------------


@pytest.mark.parametrize(
    ("why", "status"),
    [("host", 421), ("site", 403), ("session", 401), ("origin", 403), ("csrf", 403)],
)
def test_every_refusal_of_an_api_route_is_a_json_error_with_its_code(
    web: WebHarness, why: str, status: int
) -> None:
    """docs/web.md: every error of an /api/ route is {"error": {"code", "message"}}; main
    answered a foreign Host, another site or another origin in plain text, and no session or
    a wrong CSRF token with no code."""
    web.sign_in()
    method, path, body = "POST", "/api/memory/validate", {"id": web.mem, "useful": True}
    kw: dict[str, Any] = {}
    if why == "host":
        kw["host"] = "evil.example"
    elif why == "site":
        kw["headers"] = {"Sec-Fetch-Site": "cross-site"}
    elif why == "session":
        kw["session"] = False
    elif why == "origin":
        kw["headers"] = {"Origin": "http://evil.example"}
    else:
        kw["headers"] = {"X-CSRF-Token": "wrong"}
    ans = web.request(method, path, body, **kw)
    assert ans.status == status
    assert ans.headers["content-type"].startswith("application/json")
    error = ans.json()["error"]
    assert error["code"] == Refused.code and error["message"]
    assert web.app.memories.get(web.mem)["validation_count"] == 0
    if why == "session":
        assert "memoryctl open" in error["message"]


# --- two pages on one machine --------------------------------------------------------------------


def signed_in_opener(jar: http.cookiejar.CookieJar) -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))


def test_two_pages_on_one_machine_keep_their_own_sessions(make_app: Any, tmp_path: Path) -> None:
    """A browser keeps one cookie per host and name, whatever the port: main named every
    page's cookie memoryd_session, so signing in to a second daemon's page (or to a page
    restarted on another port) signed the first one's tabs out. The cookie jar here is the
    standard library's, which keeps cookies as a browser does."""
    one = WebHarness(make_app(model=None))
    other_app = make_app(
        model=None,
        workspace=str(tmp_path / "ws2"),
        data_dir=str(tmp_path / "data2"),
        socket=str(tmp_path / "s2.sock"),
    )
    two = WebHarness(other_app)
    try:
        jar = http.cookiejar.CookieJar()
        browser = signed_in_opener(jar)
        for page in (one, two):
            url = f"http://127.0.0.1:{page.port}{page.login_url(page='/api/trash')}"
            with browser.open(url, timeout=10) as resp:  # the 303 is followed
                assert resp.status == 200
        assert {c.name for c in jar} == {one.cookie_name, two.cookie_name}
        for page in (one, two):
            with browser.open(f"http://127.0.0.1:{page.port}/api/trash", timeout=10) as resp:
                assert resp.status == 200 and json.loads(resp.read()) == {"items": []}
    finally:
        two.close()
        one.close()


# --- web.json under a running page ---------------------------------------------------------------


def test_a_deleted_web_json_is_written_again_by_the_next_open(web: WebHarness) -> None:
    """main: `memoryctl open` said `cannot read .../web.json` until the daemon restarted."""
    web.sign_in()
    state = Path(web.info["state_file"])
    state.unlink()
    again = web.call(web.server.start(web.app))
    assert again["started"] is False and again["state_file"] == str(state)
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert json.loads(state.read_text())["token"] == web.token  # nobody else could read it
    assert web.request("GET", "/api/trash").status == 200  # the session goes on


@pytest.mark.parametrize("how", ["mode", "content", "symlink"])
def test_an_exposed_web_json_gets_a_new_token(web: WebHarness, how: str, tmp_path: Path) -> None:
    """web.json made readable by others, or replaced, under a running page: main kept the
    token (readable by anyone, for the page's lifetime) and `memoryctl open` refused the file
    until the daemon restarted. Now the next open writes a new token, privately, and every
    session made with the old one ends."""
    web.sign_in()
    state = Path(web.info["state_file"])
    old = web.token
    if how == "mode":
        os.chmod(state, 0o644)
    elif how == "content":
        data = json.loads(state.read_text())
        state.write_text(json.dumps({**data, "url": "http://evil.example/"}))
        os.chmod(state, 0o600)
        # the same token: only where it leads changed, and the file is made again
    else:
        elsewhere = tmp_path / "elsewhere.json"
        elsewhere.write_text(state.read_text())
        state.unlink()
        state.symlink_to(elsewhere)
    web.call(web.server.start(web.app))
    st = state.lstat()
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    new = json.loads(state.read_text())
    assert new["url"] == f"http://127.0.0.1:{web.port}/"
    if how == "content":
        assert new["token"] == old
        return
    assert new["token"] != old
    bearer = {"Authorization": f"Bearer {old}"}
    assert web.request("GET", "/api/trash", headers=bearer, session=False).status == 401
    assert web.request("GET", "/api/trash").status == 401  # the session the old token made
    web.token = new["token"]
    web.sign_in()
    assert web.request("GET", "/api/trash").status == 200


# --- a vault of many notes -----------------------------------------------------------------------


@pytest.mark.backends
def test_a_hub_notes_backlinks_are_bounded_and_counted(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A note's own links are bounded by its size; its backlinks only by the vault: main's
    note route answered all of them (a hub of 10,000 notes: 770 kB, 10,000 rows to draw)."""
    from memoryd.web import actions

    monkeypatch.setattr(actions, "BACKLINKS_SHOWN", 5, raising=False)
    app = make_app(model=None)
    ws = app.cfg.workspace
    (ws / "hub.md").write_text("# Hub\n")
    for i in range(8):
        (ws / f"n{i}.md").write_text(f"# N{i}\n\nsee [[hub]]\n")
    app.indexer.reconcile()
    web = WebHarness(app)
    try:
        web.sign_in()
        note = web.api("GET", "/api/note?path=hub.md")
        assert note["backlinks_total"] == 8
        assert [b["path"] for b in note["backlinks"]] == [f"n{i}.md" for i in range(5)]
        # "Show more": the next page after the cursor the note came with (main had none)
        more = web.api(
            "GET",
            "/api/backlinks?" + urlencode({"path": "hub.md", "cursor": note["backlinks_cursor"]}),
        )
        assert [b["path"] for b in more["backlinks"]] == [f"n{i}.md" for i in range(5, 8)]
        assert (more["total"], more["next_cursor"]) == (8, None)
        small = web.api("GET", "/api/note?path=n0.md")
        assert small["backlinks_total"] == 0 and small["links"][0]["path"] == "hub.md"
    finally:
        web.close()


def test_the_page_fills_the_method_table_it_calls() -> None:
    """actions.py calls every route through registry.lookup, but on main only the socket
    server's import of serve/methods.py filled the table: a WebServer alone (the bench's, or
    this file's tests run by themselves) answered every note route `internal error:
    'note.read'`."""
    code = (
        "from memoryd.web import server\n"
        "from memoryd.serve.registry import METHODS\n"
        "missing = {'note.read', 'links', 'backlinks', 'graph', 'search', 'list'} - set(METHODS)\n"
        "assert not missing, missing\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --- a body no JSON-RPC client could send ----------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested deeper than"),
        (b'{"id": 1, "importance": NaN}', "NaN is not valid JSON"),
        (b'{"id": 1, "importance": 1e999}', "out of range"),
        (b'{"id": 1, "content": "a", "x": ' + b"[" * 40 + b"]" * 40 + b"}", "nested deeper"),
    ],
    ids=["deep", "nan", "infinite", "deep-in-an-object"],
)
def test_a_body_is_read_by_the_sockets_rule(web: WebHarness, raw: bytes, words: str) -> None:
    """The socket reads a request with serve/protocol.decode; the page read its body with
    json.loads: nested 100,000 deep it raised RecursionError (main: 500, logged as a bug),
    and NaN or 1e999 went on to the method as floats."""
    web.sign_in()
    ans = web.request("POST", "/api/memory/update", raw=raw)
    assert ans.status == 400, ans.text
    error = ans.json()["error"]
    assert error["code"] == -32600 and words in error["message"]
    assert web.app.memories.get(web.mem)["content"] == "Redis runs on port 6380"


def test_a_link_from_before_a_restart_says_so(web: WebHarness) -> None:
    """A link made with the token of an earlier start of the page: main said `used already,
    has expired or is wrong`, none of which the user did."""
    link = web.login_url()
    web.token = "an earlier start's token"
    ans = web.request("GET", web.login_url(), session=False)
    assert ans.status == 401 and "before the daemon restarted" in ans.text
    assert "memoryctl open" in ans.text
    assert web.request("GET", link, session=False).status == 303


def test_a_sign_in_link_followed_from_a_site_says_how_to_use_it(web: WebHarness) -> None:
    """A link clicked in a web mail or a web terminal comes with Sec-Fetch-Site: cross-site
    and is refused, rightly; main said only `refused: a request from another site`. The link
    is not spent by the refusal: pasted into the address bar it still signs in."""
    link = web.login_url(page="/status")
    ans = web.request("GET", link, headers={"Sec-Fetch-Site": "cross-site"}, session=False)
    assert ans.status == 403 and "paste it into the address bar" in ans.text
    typed = web.request("GET", link, headers={"Sec-Fetch-Site": "none"}, session=False)
    assert typed.status == 303 and typed.headers["location"] == "/status"


@pytest.mark.parametrize(
    ("version", "connection", "kept"),
    [
        ("HTTP/1.0", None, False),
        ("HTTP/1.0", "keep-alive", True),
        ("HTTP/1.1", None, True),
        ("HTTP/1.1", "close", False),
        ("HTTP/1.1", "TE, close", False),
    ],
)
def test_a_connection_is_kept_only_as_its_version_says(
    web: WebHarness, version: str, connection: str | None, kept: bool
) -> None:
    """An HTTP/1.0 client (curl -0, simple tools) reads an answer to the end of the
    connection: main kept it open (`Connection: keep-alive`) and the client waited 60 s,
    holding one of the page's 32 places."""
    head = f"GET /api/trash {version}\r\nHost: {web.host}\r\nAuthorization: Bearer {web.token}\r\n"
    if connection:
        head += f"Connection: {connection}\r\n"
    with socket.create_connection(("127.0.0.1", web.port), timeout=10) as s:
        s.sendall((head + "\r\n").encode())
        s.settimeout(3)
        got = b""
        closed = False
        try:
            while chunk := s.recv(65536):
                got += chunk
            closed = True
        except TimeoutError:
            pass
    assert got.startswith(b"HTTP/1.1 200 ") and got.endswith(b'{"items":[]}')
    assert (b"Connection: close" in got) is not kept
    assert closed is not kept


# --- a restart -----------------------------------------------------------------------------------


def test_port_0_gives_the_page_its_last_port_again(make_app: Any) -> None:
    """With `port = 0` main took a new port at every start: a tab open across a daemon
    restart, and every bookmark (docs/web.md: each page is a link of its own), led nowhere.
    Now the page tries its last port first; taken meanwhile, it takes any, as before."""
    app = make_app(model=None)
    first = WebHarness(app)
    port = first.port
    first.close()
    again = WebHarness(app)
    try:
        assert again.port == port
        again.sign_in()
        assert again.request("GET", "/api/trash").status == 200
    finally:
        again.close()
    with socket.socket() as squatter:  # another program took it while the daemon was down
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        moved = WebHarness(app)
        try:
            assert moved.port != port
            moved.sign_in()
            assert moved.request("GET", "/api/trash").status == 200
        finally:
            moved.close()
    assert (app.cfg.data_dir / "web-port").read_text().strip() == str(moved.port)
