"""Who may use the page, and how a browser proves it.

- The token: 32 random bytes, new at every start of the page, written with the port to
  <data_dir>/web.json (mode 0600, in the 0700 data dir): only the socket's owner can read it.
- A one-time login link: `memoryctl open` reads the token and makes
  /login?n=NONCE&t=UNIX_SECONDS&m=HMAC_SHA256(token, "login:NONCE:UNIX_SECONDS"); it is good
  for LOGIN_TTL_S and once (the token itself never appears in a URL or the browser's history).
- A session: the login answers with a random session id in an HttpOnly, SameSite=Strict
  cookie named for the port (a browser sends a cookie to every port of a host); each
  session has its CSRF token, which the pages send in X-CSRF-Token on every write.
- Scripts (tests, the bench) may send `Authorization: Bearer TOKEN` instead of a cookie.
- Every request: the Host header must name the loopback address and our port (no DNS
  rebinding), and a browser's Sec-Fetch-Site must be same-origin or none (another site, even
  another port of localhost, gets nothing).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.core.fsutil import atomic_write

STATE_FILE = "web.json"
PORT_FILE = "web-port"  # the last port `port = 0` gave, tried first at the next start
LOGIN_TTL_S = 120.0
COOKIE = "memoryd_session"  # and the port: memoryd_session_PORT (Guard.cookie)
CSRF_HEADER = "x-csrf-token"
MAX_SESSIONS = 64
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def login_mac(token: str, nonce: str, ts: int) -> str:
    """The one-time link's signature (memoryd/ctl/admin.py computes the same)."""
    return hmac.new(token.encode(), f"login:{nonce}:{ts}".encode(), hashlib.sha256).hexdigest()


def state_of(*, host: str, port: int, token: str) -> dict[str, Any]:
    """What web.json holds: where the page listens, its token, and which daemon wrote it."""
    shown = f"[{host}]" if ":" in host else host
    return {
        "url": f"http://{shown}:{port}/",
        "host": host,
        "port": port,
        "token": token,
        "pid": os.getpid(),
    }


def write_state(data_dir: Path, *, host: str, port: int, token: str) -> Path:
    """<data_dir>/web.json: where the page listens and its token, readable by the owner only."""
    path = data_dir / STATE_FILE
    state = state_of(host=host, port=port, token=token)
    atomic_write(path, json.dumps(state, indent=2).encode() + b"\n", mode=0o600)
    return path


def state_problem(data_dir: Path, state: dict[str, Any]) -> str | None:
    """What happened to web.json since we wrote `state` in it: "missing" (deleted), "exposed"
    (another mode or owner, or no longer a file: others may have read the token), "changed"
    (other content: it may lead elsewhere), or None."""
    path = data_dir / STATE_FILE
    try:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            return "exposed"
        found = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "missing"
    except (OSError, ValueError):
        return "changed"
    return None if found == state else "changed"


def last_port(data_dir: Path) -> int:
    """The port the page had last (port = 0), so that an open tab and a bookmark lead to it
    again after a restart; 0 if none is known."""
    try:
        text = (data_dir / PORT_FILE).read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return 0
    return int(text) if text.isdigit() and 1024 <= int(text) <= 65535 else 0


def remember_port(data_dir: Path, port: int) -> None:
    with contextlib.suppress(OSError):  # unwritten: the next start takes any port, as before
        atomic_write(data_dir / PORT_FILE, f"{port}\n".encode(), mode=0o600)


def remove_state(data_dir: Path, token: str) -> None:
    """Remove web.json if it is still ours (a newer daemon may have written its own)."""
    path = data_dir / STATE_FILE
    try:
        if json.loads(path.read_text()).get("token") == token:
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


@dataclass
class Session:
    csrf: str
    expires: float


class Guard:
    """The checks every request passes; thread-safe (sessions change on the loop and are read
    from handlers)."""

    def __init__(
        self,
        *,
        port: int,
        session_s: float,
        token: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.token = token or secrets.token_urlsafe(32)
        self.port = port
        # a browser sends a cookie to every port of the host: named for the port, the
        # sessions of two pages on this machine (two daemons, or one restarted on another
        # port) neither overwrite nor stand in for each other
        self.cookie = f"{COOKIE}_{port}"
        self.session_s = session_s
        self.clock = clock
        self._sessions: dict[str, Session] = {}
        self._used: dict[str, float] = {}  # login nonces seen, until they expire anyway
        self._lock = threading.Lock()

    # -- where the request comes from ------------------------------------------------------

    def host_ok(self, host: str | None) -> bool:
        """The Host header names a loopback address and our port, exactly."""
        if not host:
            return False
        return host.lower() in {f"{name}:{self.port}" for name in LOOPBACK_NAMES}

    def origin_ok(self, origin: str | None) -> bool:
        """An Origin header, when a browser sends one, is this page's own."""
        if origin is None:
            return True
        return origin.lower() in {f"http://{n}:{self.port}" for n in LOOPBACK_NAMES}

    @staticmethod
    def fetch_site_ok(value: str | None) -> bool:
        """Sec-Fetch-Site: same-origin (the page itself) or none (typed, or opened by
        memoryctl); same-site (another port of localhost) and cross-site are refused."""
        return value is None or value in ("same-origin", "none")

    # -- logging in ------------------------------------------------------------------------

    def login(self, nonce: str, ts: str, mac: str) -> tuple[str, Session] | None:
        """A new session for a valid, fresh, unused one-time link; None otherwise."""
        if not (nonce and ts.isdigit() and mac) or len(nonce) > 200 or len(mac) > 200:
            return None
        now = self.clock()
        if abs(now - int(ts)) > LOGIN_TTL_S:
            return None
        if not hmac.compare_digest(login_mac(self.token, nonce, int(ts)), mac):
            return None
        with self._lock:
            self._used = {n: t for n, t in self._used.items() if t > now}
            if nonce in self._used:
                return None
            self._used[nonce] = now + 2 * LOGIN_TTL_S
            return self._new_session(now)

    def _new_session(self, now: float) -> tuple[str, Session]:
        self._sessions = {k: s for k, s in self._sessions.items() if s.expires > now}
        while len(self._sessions) >= MAX_SESSIONS:  # the oldest goes
            del self._sessions[min(self._sessions, key=lambda k: self._sessions[k].expires)]
        sid = secrets.token_urlsafe(32)
        session = self._sessions[sid] = Session(secrets.token_urlsafe(24), now + self.session_s)
        return sid, session

    def renew(self) -> None:
        """A new token, and every session made so far ended: the old token may have been read
        by someone else (web.json found readable by others, or replaced)."""
        with self._lock:
            self.token = secrets.token_urlsafe(32)
            self._sessions.clear()

    def session(self, sid: str | None) -> Session | None:
        if not sid:
            return None
        with self._lock:
            s = self._sessions.get(sid)
            if s is None or s.expires <= self.clock():
                return None
            return s

    def bearer_ok(self, authorization: str | None) -> bool:
        if not authorization or not authorization.startswith("Bearer "):
            return False
        return hmac.compare_digest(authorization[len("Bearer ") :].encode(), self.token.encode())

    def logout(self, sid: str | None) -> None:
        with self._lock:
            self._sessions.pop(sid or "", None)


def csrf_ok(session: Session, sent: str | None) -> bool:
    return bool(sent) and hmac.compare_digest(session.csrf.encode(), (sent or "").encode())


def describe_state(state: dict[str, Any]) -> dict[str, Any]:
    """web.json without its token (what the socket method answers)."""
    return {k: v for k, v in state.items() if k != "token"}
