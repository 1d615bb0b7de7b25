"""`memoryctl open`: start the daemon's web page if it is not running (socket method
`web.open`), read its token from <data_dir>/web.json (only the socket's owner can read it),
and open a one-time sign-in link in the browser (standard library only)."""

from __future__ import annotations

import stat
import sys
import time

from memoryd.ctl import fsenv
from memoryd.ctl.client import Client, ClientError, loads
from memoryd.ctl.output import emit_json

# hashlib, hmac, secrets, urllib.parse and webbrowser are imported when `open` runs: table.py
# imports this module for every command, and urllib.parse alone brings in `re`

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from typing import Any

PAGES = ("search", "memories", "graph", "entities", "status", "note")


def login_mac(token: str, nonce: str, ts: int) -> str:
    """The link's signature: the same rule as memoryd/web/auth.py login_mac."""
    import hashlib
    import hmac

    return hmac.new(token.encode(), f"login:{nonce}:{ts}".encode(), hashlib.sha256).hexdigest()


def read_state(path: str) -> dict[str, Any]:
    """web.json, if it is ours and private (a file others could write might send the browser
    elsewhere)."""
    try:
        st = fsenv.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != fsenv.getuid() or st.st_mode & 0o077:
            raise ClientError(-32006, f"{path} is not a private file of yours; not using it")
        with open(path, encoding="utf-8") as f:
            state = loads(f.read())
    except OSError as exc:
        raise ClientError(-32003, f"cannot read {path}: {exc.strerror}") from None
    if not isinstance(state, dict) or not isinstance(state.get("token"), str):
        raise ClientError(-32003, f"{path} holds no token")
    return state


def login_url(state: dict[str, Any], page: str = "/search") -> str:
    import secrets
    from urllib.parse import urlencode

    nonce, ts = secrets.token_urlsafe(16), int(time.time())
    query = urlencode(
        {"n": nonce, "t": ts, "m": login_mac(state["token"], nonce, ts), "next": page}
    )
    return f"{state['url'].rstrip('/')}/login?{query}"


def r_open(c: Client, a: Namespace) -> int:
    import webbrowser
    from urllib.parse import urlencode

    info = c.call("web.open")
    state = read_state(info["state_file"])
    page = "/" + (a.page or "search")
    if a.page in ("note", "graph") and a.path:
        page += "?" + urlencode({"path": a.path})
    elif a.page == "entities" and a.path:
        page += "?" + urlencode({"name": a.path})
    url = login_url(state, page)
    if a.json:
        return emit_json({**info, "login_url": url})
    print(f"memoryd web page: {state['url']} (this sign-in link works once, for 2 minutes):")
    print(url)
    if not a.no_browser:
        try:
            opened = webbrowser.open(url)
        except Exception:  # no browser: the printed link is enough
            opened = False
        if not opened:
            print("(no browser found here: open the link above yourself)", file=sys.stderr)
    return 0
