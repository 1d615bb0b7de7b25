"""WebServer: the page's HTTP server in the daemon's event loop, started by `[web] enabled`
or the socket method `web.open` (`memoryctl open`), stopped with the daemon.

Every request passes, in order: the peer is this user (Linux, peers.py), the Host header names
the loopback address and our port, Sec-Fetch-Site is same-origin or none, a session cookie
(or the bearer token), and for a write its Origin and CSRF token (auth.py). Route work runs on
a pool of its own (WORKERS threads), never the socket server's."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from memoryd.core import threads
from memoryd.core.config import Config
from memoryd.core.errors import MemorydError, Refused, Unavailable
from memoryd.core.logsetup import get_logger
from memoryd.core.sections import WebConfig
from memoryd.serve import places
from memoryd.serve.app import App
from memoryd.serve.registry import unexpected
from memoryd.serve.streams import Connections, drain
from memoryd.web import actions, auth, routes
from memoryd.web.http import MAX_HEAD, BadRequest, Request, Response, encode, read_request
from memoryd.web.peers import tcp_peer_uid

log = get_logger("memoryd.web")

WORKERS = 2
IDLE_TIMEOUT_S = 60.0
MAX_CONNECTIONS = 32
SIGN_IN = (
    "not signed in (or the daemon restarted since): run `memoryctl open` for a new sign-in link"
)
LINK_FROM_A_SITE = (
    "refused: this sign-in link was followed from another site's page; paste it into the "
    "address bar instead (it is still good, once, for two minutes)"
)
FIRST_REQUEST_S = 10.0  # server.first_request_timeout_s's default, until start() reads it
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    ("Content-Security-Policy", CSP),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
]


class WebServer:
    def __init__(self, settings: WebConfig, data_dir: Path, *, workers: int = WORKERS) -> None:
        self.settings = settings
        self.data_dir = data_dir
        self.workers = workers
        self.guard: auth.Guard | None = None
        self.ctx: actions.Context | None = None
        self.state_file: Path | None = None
        self._server: asyncio.base_events.Server | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._lock = asyncio.Lock()
        self._static = routes.load_static()
        self._shell = routes.Shell()
        self._conns = Connections(self._handle, MAX_HEAD + 1)
        # MAX_CONNECTIONS by the socket's rule (serve/places.py): a new connection waits up to
        # the server's first_request_timeout_s for a place; only a silent one is closed for it
        self._first_request_s = FIRST_REQUEST_S
        self.places = places.Places(
            lambda: MAX_CONNECTIONS, lambda: self._first_request_s, _close_idle
        )
        self.requests_total = 0
        self.refused_total = 0  # another user's connection, another site's request

    @classmethod
    def for_config(cls, cfg: Config) -> WebServer:
        return cls(cfg.web, cfg.data_dir)

    @property
    def port(self) -> int:
        return self.guard.port if self.guard is not None else 0

    @property
    def url(self) -> str:
        host = self.settings.host
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.port}/"

    def info(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "host": self.settings.host,
            "port": self.port,
            "state_file": str(self.state_file),
        }

    async def start(self, app: App) -> dict[str, Any]:
        """Listen (if not already) and write web.json; say where."""
        async with self._lock:
            if self._server is not None:
                self._keep_state()
                return {**self.info(), "started": False}
            server = await self._listen()
            port = int(server.sockets[0].getsockname()[1])
            if self.settings.port == 0:
                auth.remember_port(self.data_dir, port)
            self.guard = auth.Guard(port=port, session_s=self.settings.session_hours * 3600)
            self.ctx = actions.Context(app, actions.Trash())
            server_cfg = getattr(getattr(app, "cfg", None), "server", None)
            self._first_request_s = getattr(server_cfg, "first_request_timeout_s", FIRST_REQUEST_S)
            doors = getattr(app, "doors", None)
            if isinstance(doors, dict):  # status: what the limit did since the start
                doors["web"] = self.places.info
            self._pool = threads.Pool(self.workers, thread_name_prefix="memoryd-web")
            self.state_file = auth.write_state(
                self.data_dir, host=self.settings.host, port=port, token=self.guard.token
            )
            self._server = server
            log.info("web page listening", url=self.url, state_file=str(self.state_file))
            return {**self.info(), "started": True}

    async def _listen(self) -> asyncio.base_events.Server:
        """Listen on [web] port; with port 0 on the port the page had last if it is free (an
        open tab, a bookmark, the browser's cookie for it go on working after a restart),
        else on any."""
        loop = asyncio.get_running_loop()
        wanted = self.settings.port
        last = auth.last_port(self.data_dir) if wanted == 0 else 0
        for port in (last, 0) if last else (wanted,):
            try:
                return await loop.create_server(
                    self._conns.protocol, self.settings.host, port, reuse_address=True
                )
            except OSError as exc:
                if port == last:
                    continue  # taken meanwhile: any port, as port = 0 says
                raise Unavailable(
                    f"the web page cannot listen on {self.settings.host} port "
                    f"{wanted}: {exc.strerror or exc}; set [web] port to a free "
                    "port, or 0 for any"
                ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _keep_state(self) -> None:
        """web.json as start() wrote it, for `memoryctl open` to read: written again if it was
        deleted or changed; with a new token (sessions ended) if others could read it."""
        guard = self.guard
        assert guard is not None
        ours = auth.state_of(host=self.settings.host, port=guard.port, token=guard.token)
        problem = auth.state_problem(self.data_dir, ours)
        if problem is None:
            return
        if problem == "exposed":
            guard.renew()
        log.warning(
            "web.json was changed or removed; written again",
            state_file=str(self.state_file),
            problem=problem,
            new_token=problem == "exposed",
        )
        self.state_file = auth.write_state(
            self.data_dir, host=self.settings.host, port=guard.port, token=guard.token
        )

    async def close(self) -> None:
        """Stop listening and close every connection before returning: no socket of ours
        outlives the page (a half-sent answer to a client that stopped reading included)."""
        async with self._lock:
            if self._server is None:
                return
            await self._conns.stop_accepting(self._server)
            await self._conns.shutdown()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
            if self.guard is not None:
                auth.remove_state(self.data_dir, self.guard.token)
            self._server = None
            log.info("web page stopped")

    # -- connections --------------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        try:
            if not self._same_user(writer):
                self.refused_total += 1
                writer.write(encode(Response.text(403, "refused"), keep_alive=False))
                await drain(writer, IDLE_TIMEOUT_S)
                return
            place = await self.places.take(task, writer)
            if place is None:
                busy = Response.text(
                    503,
                    f"too many connections ({MAX_CONNECTIONS}, all running a request); "
                    "retry shortly",
                )
                busy.headers.append(("Retry-After", "1"))
                writer.write(encode(busy, keep_alive=False))
                await drain(writer, IDLE_TIMEOUT_S)
                return
            while True:
                try:
                    req = await asyncio.wait_for(read_request(reader), IDLE_TIMEOUT_S)
                except BadRequest as exc:
                    writer.write(encode(Response.text(exc.status, exc.message), keep_alive=False))
                    await drain(writer, IDLE_TIMEOUT_S)
                    return
                if req is None:
                    return
                self.places.busy(place)
                resp = await self.respond(req)
                keep = req.keep_alive
                writer.write(encode(resp, keep_alive=keep, head_only=req.method == "HEAD"))
                await drain(writer, IDLE_TIMEOUT_S)
                if not keep:
                    return
                self.places.idle(place)
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("web connection failed")
        finally:
            self.places.leave(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _same_user(self, writer: asyncio.StreamWriter) -> bool:
        """Another local user's connection is refused before it says anything (Linux; the
        token, which only our user can read, guards the rest)."""
        sock = writer.get_extra_info("socket")
        if sock is None:
            return True
        try:
            uid = tcp_peer_uid(sock.getsockname()[:2], sock.getpeername()[:2])
        except OSError:
            return False
        if uid is not None and uid != os.getuid():
            log.warning("refused a web connection from another user", uid=uid)
            return False
        return True

    # -- requests -----------------------------------------------------------------------------

    async def respond(self, req: Request) -> Response:
        self.requests_total += 1
        resp = await self._respond(req)
        if resp.status in (401, 403, 421):
            self.refused_total += 1
        resp.headers.extend(SECURITY_HEADERS)
        if not any(k == "Cache-Control" for k, _ in resp.headers):
            resp.headers.append(("Cache-Control", "no-store"))
        return resp

    async def _respond(self, req: Request) -> Response:
        guard, ctx = self.guard, self.ctx
        assert guard is not None and ctx is not None
        if not guard.host_ok(req.header("host")):
            return refusal(req, 421, "this page answers only at a loopback address")
        if not guard.fetch_site_ok(req.header("sec-fetch-site")):
            if req.path == "/login":  # a link followed from a web mail, a chat, a web terminal
                return refusal(req, 403, LINK_FROM_A_SITE)
            return refusal(req, 403, "refused: a request from another site")
        if req.path == "/login" and req.method == "GET":
            return self._login(req, guard)
        sid = req.cookie(guard.cookie)
        session = guard.session(sid)
        if session is None and not guard.bearer_ok(req.header("authorization")):
            if req.path.startswith("/api/"):
                return refusal(req, 401, SIGN_IN)
            return routes.signed_out()
        if req.method == "POST":
            if not guard.origin_ok(req.header("origin")):
                return refusal(req, 403, "refused: a write from another origin")
            if session is not None and not auth.csrf_ok(session, req.header(auth.CSRF_HEADER)):
                return refusal(req, 403, "refused: missing or wrong CSRF token; reload the page")
        if req.path == "/logout" and req.method == "POST":
            guard.logout(sid)
            return Response.redirect("/login", 303)
        if req.method in ("GET", "HEAD"):
            if req.path == "/":
                return Response.redirect("/search", 302)
            page = req.path.lstrip("/")
            if page in routes.PAGES:
                return self._shell.render(page, session.csrf if session is not None else "")
            static = self._static.get(req.path)
            if static is not None:
                return Response(
                    200, static[0], static[1], [("Cache-Control", "private, max-age=300")]
                )
        route = routes.ROUTES.get(("GET" if req.method == "HEAD" else req.method, req.path))
        if route is None:
            allowed = sorted({m for m, path in routes.ROUTES if path == req.path})
            if not req.path.startswith("/api/"):
                return Response.text(405 if allowed else 404, "not here")
            if not allowed:  # the API answers JSON, a route it does not have too
                return api_error(404, -32601, f"no route {req.path} (docs/web.md)")
            resp = api_error(405, -32601, f"{req.path} takes {' or '.join(allowed)}")
            resp.headers.append(("Allow", ", ".join(allowed)))
            return resp
        loop = asyncio.get_running_loop()
        assert self._pool is not None
        started = time.perf_counter()
        try:
            result = await loop.run_in_executor(self._pool, route.fn, ctx, req)
        except BadRequest as exc:
            return api_error(exc.status, -32600, exc.message)
        except MemorydError as exc:
            return actions.error(exc)
        except Exception as exc:  # answered as the socket answers it (registry.unexpected)
            code, message, what = unexpected(exc, route.path)
            if code in (-32602, -32603):  # a bug, or a check that is missing
                log.exception(f"web request {what}", path=req.path)
            else:
                log.error(f"web request {what}", path=req.path, error=message)
            return api_error(actions.status_of(code), code, message)
        log.debug("web request", path=req.path, ms=round((time.perf_counter() - started) * 1e3, 2))
        return Response.json(result)

    def _login(self, req: Request, guard: auth.Guard) -> Response:
        q = req.query
        made = guard.login(q.get("n", ""), q.get("t", ""), q.get("m", ""))
        if made is None:
            resp = routes.signed_out()
            resp.body = resp.body.replace(
                b"<h1>memoryd</h1>",
                b"<h1>memoryd</h1><p>This sign-in link was used already, has expired, is "
                b"wrong, or was made before the daemon restarted (each start of the page has "
                b"a new token).</p>",
            )
            return resp
        sid, _session = made
        nxt = q.get("next", "/search")
        if not nxt.startswith("/") or nxt.startswith("//") or "\\" in nxt:
            nxt = "/search"
        cookie = (
            f"{guard.cookie}={sid}; HttpOnly; SameSite=Strict; Path=/; "
            f"Max-Age={int(self.settings.session_hours * 3600)}"
        )
        resp = Response.redirect(nxt)
        resp.headers.append(("Set-Cookie", cookie))
        return resp


def api_error(status: int, code: int, message: str) -> Response:
    """An API route's error in the shape of every other: {"error": {"code", "message"}}."""
    return Response.json({"error": {"code": code, "message": message}}, status)


def refusal(req: Request, status: int, message: str) -> Response:
    """A request the guard refuses: for an /api/ route in the shape of every API error (code
    -32006, refused: a script can tell it from a bad param), for a page as plain text."""
    if req.path.startswith("/api/"):
        return api_error(status, Refused.code, message)
    return Response.text(status, message)


def _close_idle(place: places.Place) -> None:
    """A keep-alive connection silent between requests, closed for a newcomer at the limit (a
    browser opens another when it needs one)."""
    place.writer.close()
