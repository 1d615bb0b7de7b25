"""A WebServer on a real loopback port for tests and the bench: its own event loop on a
thread, an App from the caller, and a small HTTP client that signs in the way a browser does."""

from __future__ import annotations

import asyncio
import http.client
import json
import secrets
import threading
import time
from typing import Any
from urllib.parse import urlencode

from memoryd.web import auth
from memoryd.web.server import WebServer


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode()


class WebHarness:
    def __init__(self, app: Any, **settings: Any) -> None:
        from dataclasses import replace

        self.app = app
        self.server = WebServer(replace(app.cfg.web, **settings), app.cfg.data_dir)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="web-test-loop")
        self.thread.start()
        try:
            self.info = self.call(self.server.start(app))
        except BaseException:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()
            raise
        self.port: int = self.info["port"]
        self.host = f"127.0.0.1:{self.port}"
        guard = self.server.guard
        assert guard is not None
        self.token = guard.token
        self.cookie_name = guard.cookie
        self.cookie: str | None = None
        self.csrf: str | None = None

    def call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.call(self.server.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        session: bool = True,
        host: str | None = None,
        raw: bytes | None = None,
    ) -> Answer:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.skip_host = True  # type: ignore[attr-defined]
        hdrs = {"Host": host if host is not None else self.host}
        if session and self.cookie:
            hdrs["Cookie"] = f"{self.cookie_name}={self.cookie}"
        if session and self.csrf and method == "POST":
            hdrs["X-CSRF-Token"] = self.csrf
        hdrs.update(headers or {})
        hdrs = {k: v for k, v in hdrs.items() if v is not None}
        data = json.dumps(body).encode() if body is not None else raw
        if data is not None:
            hdrs["Content-Type"] = "application/json"
            hdrs["Content-Length"] = str(len(data))
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for k, v in hdrs.items():
                conn.putheader(k, v)
            conn.endheaders(data)
            resp = conn.getresponse()
            return Answer(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        finally:
            conn.close()

    def login_url(self, *, ts: int | None = None, nonce: str | None = None, page: str = "/") -> str:
        ts = int(time.time()) if ts is None else ts
        nonce = nonce or secrets.token_urlsafe(16)
        mac = auth.login_mac(self.token, nonce, ts)
        return "/login?" + urlencode({"n": nonce, "t": ts, "m": mac, "next": page})

    def sign_in(self) -> Answer:
        """Follow a one-time link as a browser does: keep the cookie, read the CSRF token."""
        ans = self.request("GET", self.login_url(), session=False)
        assert ans.status == 303, ans.text
        self.cookie = ans.headers["set-cookie"].split(";")[0].split("=", 1)[1]
        page = self.request("GET", "/search")
        marker = 'name="csrf-token" content="'
        self.csrf = page.text.split(marker, 1)[1].split('"', 1)[0]
        return ans

    def api(self, method: str, path: str, body: Any = None) -> Any:
        ans = self.request(method, path, body)
        assert ans.status == 200, (ans.status, ans.text)
        return ans.json()
