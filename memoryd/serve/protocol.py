"""JSON-RPC 2.0 framing rules, pure: decode a line, check its shape, build answers.

Everything a client can get wrong at the protocol layer is answered here with a JSON-RPC error,
never an exception that reaches the connection: a line that is not UTF-8 or not JSON (-32700),
JSON nested deeper than MAX_DEPTH or a batch over MAX_BATCH (-32600), a lone surrogate in an id
or a method name (-32600) or anywhere in params (-32602), an integer params value outside
SQLite's 64-bit range (-32602). NaN and infinities are not JSON and are refused while parsing.
Whenever the request's id can be read (the value decoded, or a line too deep to decode that
starts like a request), the error answer carries it, so a client can match it to its request.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
MAX_BATCH = 100
MAX_DEPTH = 32  # the deepest real request (import items with tags) is about 6 levels
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
# A lone surrogate can only come from a \uD800-\uDFFF escape: strict UTF-8 decoding refuses the
# raw bytes. Lines without such an escape skip the surrogate check.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# The id of a line that cannot be decoded whole (nesting too deep): read only from a plain
# object opening, `{"jsonrpc": "2.0", "id": 7, ...` (keys before it are jsonrpc/method).
_LEADING_ID = re.compile(
    rb'\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]{0,200}"\s*,)*\s*"id"\s*:\s*'
    rb'(-?\d{1,18}|"[^"\\]{0,200}")\s*[,}]'
)


class ProtocolError(Exception):
    """A request that cannot be served as sent; carries its JSON-RPC code."""

    def __init__(self, code: int, message: str, req_id: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.req_id = code, message, req_id

    def response(self) -> dict[str, Any]:
        return error_response(self.req_id, self.code, self.message)


def error_response(req_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": req_id, "error": err}


def cut_short(line: bytes, waited_s: float, code: int) -> dict[str, Any] | None:
    """The answer to a request the daemon's stop cut short (it ran past
    server.shutdown_timeout_s): said, not a connection closed without a word, since the
    client cannot tell that from an overload. None for a notification or a line that is not
    one request."""
    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(msg, dict) or "id" not in msg:
        return None
    method = msg.get("method")
    name = method if isinstance(method, str) else "the request"
    return error_response(
        msg["id"] if isinstance(msg["id"], str | int) else None,
        code,
        f"memoryd is stopping: {name} did not finish within server.shutdown_timeout_s "
        f"({waited_s:g}s) and was cut short; what it did is kept, and it may have finished: "
        "run it again once memoryd is back",
    )


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:24]} is out of range")
    return value


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode(line: bytes) -> Any:
    """The JSON value on one line; ProtocolError (-32700/-32600) when it cannot be read."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(PARSE_ERROR, f"parse error: not UTF-8 (byte {exc.start})") from None
    try:
        msg = json.loads(text, parse_float=_finite, parse_constant=_not_json)
    except RecursionError:
        raise ProtocolError(INVALID_REQUEST, too_deep(), leading_id(line)) from None
    except json.JSONDecodeError as exc:
        raise ProtocolError(PARSE_ERROR, f"parse error: {exc}", leading_id(line)) from None
    except (ValueError, UnicodeError) as exc:  # huge integer literals, NaN, 1e999, ...
        raise ProtocolError(PARSE_ERROR, f"parse error: {exc}", leading_id(line)) from None
    problem = _check(msg, surrogates=bool(_SURROGATE_ESCAPE.search(line)))
    if problem is not None:
        problem.req_id = readable_id(msg)
        raise problem
    return msg


def readable_id(msg: Any) -> Any:
    """The id of a decoded request when it is a valid one (string or integer), else None."""
    if not isinstance(msg, dict):
        return None
    req_id = msg.get("id")
    if isinstance(req_id, bool) or not isinstance(req_id, str | int):
        return None
    if isinstance(req_id, str) and not _valid_text(req_id):
        return None
    return req_id


def leading_id(line: bytes) -> Any:
    """The id at the start of a line that could not be decoded whole, or None."""
    m = _LEADING_ID.match(line)
    if m is None:
        return None
    try:
        value = json.loads(m.group(1))
    except ValueError:
        return None
    return value if isinstance(value, str | int) and _valid_text(str(value)) else None


def too_deep() -> str:
    return f"invalid request: JSON nested deeper than {MAX_DEPTH} levels"


def _where(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            safe = part.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
            out += f".{safe}" if out else safe
    return out or "the request"


def _valid_text(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check(msg: Any, *, surrogates: bool) -> ProtocolError | None:
    """Walk the decoded value once (iteratively): depth, lone surrogates, integer range."""
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(msg, 1, ())]
    while stack:
        value, depth, path = stack.pop()
        if depth > MAX_DEPTH:
            return ProtocolError(INVALID_REQUEST, too_deep())
        in_params = _in_params(msg, path)
        code = INVALID_PARAMS if in_params else INVALID_REQUEST
        if isinstance(value, dict):
            for key, item in value.items():
                if surrogates and not _valid_text(key):
                    where = _where((*path, key))
                    return ProtocolError(
                        code, f"{where}: a name is not valid Unicode (lone surrogate)"
                    )
                stack.append((item, depth + 1, (*path, key)))
        elif isinstance(value, list):
            stack.extend((item, depth + 1, (*path, i)) for i, item in enumerate(value))
        elif isinstance(value, str):
            if surrogates and not _valid_text(value):
                return ProtocolError(
                    code, f"{_where(path)}: text is not valid Unicode (lone surrogate)"
                )
        elif (
            isinstance(value, int)
            and not isinstance(value, bool)
            and in_params
            and not INT_MIN <= value <= INT_MAX
        ):
            return ProtocolError(
                code, f"{_where(path)}: integer out of range (at most 64-bit signed)"
            )
    return None


def _in_params(msg: Any, path: tuple[Any, ...]) -> bool:
    """Is this path inside a request's params (of the request, or of a batch member)?"""
    if isinstance(msg, list):
        return len(path) >= 2 and path[1] == "params"
    return len(path) >= 1 and path[0] == "params"


def batch_error(size: int) -> ProtocolError:
    return ProtocolError(
        INVALID_REQUEST,
        f"invalid request: a batch of {size} requests is over the limit of {MAX_BATCH}; "
        "send smaller batches",
    )


def encode(payload: Any) -> bytes:
    """One answer line. Text that cannot be UTF-8 (a lone surrogate) is sent \\u-escaped."""
    try:
        data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        data = json.dumps(payload, ensure_ascii=True, default=str).encode("ascii")
    except ValueError:  # a NaN or infinity somewhere in a result: not JSON
        data = json.dumps(
            error_response(
                payload.get("id") if isinstance(payload, dict) else None,
                INTERNAL_ERROR,
                "internal error: the answer could not be encoded as JSON",
            )
        ).encode()
    return data + b"\n"
