"""HTTP/1.1 over asyncio streams, as little of it as the page needs: one request at a time per
connection (keep-alive), Content-Length bodies only (no chunked uploads), bounded head and body.
Anything else is answered 400/411/413/431 and the connection closed."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from memoryd.serve import protocol

MAX_HEAD = 16 * 1024
MAX_HEADERS = 100
MAX_BODY = 1024 * 1024
METHODS = frozenset({"GET", "HEAD", "POST"})
# what a Location keeps as written: a URL's own punctuation, and the %XX it already has;
# anything else (a space, a line break, a character past ASCII) goes out as %XX
LOCATION_SAFE = "/?&=#%+:@!$'()*,;~-._"


class BadRequest(Exception):
    """The request cannot be read; answered with `status` and the connection closed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Request:
    method: str
    target: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""
    peer: tuple[str, int] | None = None
    version: str = "HTTP/1.1"

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def cookie(self, name: str) -> str | None:
        for part in (self.header("cookie") or "").split(";"):
            key, _, value = part.strip().partition("=")
            if key == name:
                return value
        return None

    def json(self) -> Any:
        """The body read by the socket's own rule (serve/protocol.decode): UTF-8, no NaN or
        1e999, no lone surrogate, at most MAX_DEPTH levels deep (main's json.loads answered
        a body nested 100,000 deep with a RecursionError: 500, logged as a bug)."""
        if not self.body:
            return {}
        try:
            return protocol.decode(self.body)
        except protocol.ProtocolError as exc:
            raise BadRequest(400, f"the body is not JSON the API takes: {exc.message}") from None

    @property
    def keep_alive(self) -> bool:
        """HTTP/1.1 keeps the connection unless told `close`; HTTP/1.0 closes it unless told
        `keep-alive` (its clients read the answer to the end of the connection: kept open,
        they waited IDLE_TIMEOUT_S for it, holding one of the page's places)."""
        words = {w.strip() for w in (self.header("connection") or "").lower().split(",")}
        if self.version == "HTTP/1.0":
            return "keep-alive" in words
        return "close" not in words


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def json(cls, data: Any, status: int = 200) -> Response:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return cls(status, text.encode(), "application/json; charset=utf-8")

    @classmethod
    def text(cls, status: int, message: str) -> Response:
        return cls(status, (message + "\n").encode())

    @classmethod
    def redirect(cls, location: str, status: int = 303) -> Response:
        """A redirect to `location`, percent-encoded (it may come from the request: a line
        break in it would end the header, a character past latin-1 could not be sent)."""
        return cls(status, b"", headers=[("Location", quote(location, safe=LOCATION_SAFE))])


async def read_request(reader: asyncio.StreamReader, max_body: int = MAX_BODY) -> Request | None:
    """The next request, or None when the client closed between requests."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise BadRequest(400, "the request ended before its headers did") from None
    except asyncio.LimitOverrunError:
        raise BadRequest(431, f"request head larger than {MAX_HEAD} bytes") from None
    if len(head) > MAX_HEAD:
        raise BadRequest(431, f"request head larger than {MAX_HEAD} bytes")
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover (latin-1 decodes every byte)
        raise BadRequest(400, "undecodable request head") from None
    lines = text.split("\r\n")[:-2]
    if not lines:
        raise BadRequest(400, "empty request")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(400, "malformed request line")
    method, target, version = parts
    if method not in METHODS:
        raise BadRequest(405, f"method {method[:20]} not allowed")
    if len(lines) - 1 > MAX_HEADERS:
        raise BadRequest(431, "too many headers")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip() or any(c in name for c in " \t"):
            raise BadRequest(400, "malformed header line")
        key = name.lower()
        if key in headers and key in ("host", "content-length", "cookie", "authorization"):
            raise BadRequest(400, f"header {name} given twice")
        headers[key] = value.strip()
    if "transfer-encoding" in headers:
        raise BadRequest(411, "chunked bodies are not accepted; send Content-Length")
    length = headers.get("content-length", "0")
    if not length.isdigit():
        raise BadRequest(400, "bad Content-Length")
    if int(length) > max_body:
        raise BadRequest(413, f"body larger than {max_body} bytes")
    body = await reader.readexactly(int(length)) if int(length) else b""
    if not target.startswith("/"):
        raise BadRequest(400, "the request target must be a path")
    split = urlsplit(target)
    try:
        query = dict(parse_qsl(split.query, keep_blank_values=True, strict_parsing=False))
    except ValueError:
        raise BadRequest(400, "bad query string") from None
    return Request(method, target, unquote(split.path), query, headers, body, version=version)


def encode(resp: Response, *, keep_alive: bool, head_only: bool = False) -> bytes:
    try:
        reason = HTTPStatus(resp.status).phrase
    except ValueError:
        reason = "Status"
    lines = [f"HTTP/1.1 {resp.status} {reason}"]
    lines.append(f"Content-Type: {resp.content_type}")
    lines.append(f"Content-Length: {len(resp.body)}")
    for k, v in resp.headers:
        if any(c in v for c in "\r\n\0"):  # never a header (or a body) of the client's making
            raise ValueError(f"header {k} holds a line break: {v!r}")
        lines.append(f"{k}: {v}")
    lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head if head_only else head + resp.body
