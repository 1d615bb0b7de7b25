"""What `memoryd mcp` reads off stdin before the MCP SDK does, and the protocol errors it says in
words a client's developer can act on (memoryd.agents.mcp serves; this is the wire's edge).

- stdin is read from a private copy of fd 0, fd 0 itself pointed at /dev/null (so no child
  process takes a message off the wire), as the UTF-8 MCP requires: a line holding other
  bytes is refused (-32700 with the line's id, by mcp.AnswerUnparsed) instead of reaching a
  memory or a note with U+FFFD in place of what was written, as the SDK's own reader
  (errors="replace") would let it.
- A request whose id is null, a fraction, true/false, an object or a list cannot be answered
  (no id to answer with): it is logged on stderr and not run (the SDK would take it for a
  notification and drop it without a word).
- The SDK's one sentence for every malformed request, "Invalid request parameters", becomes
  what is wrong: the params that failed and why, or a request sent before `initialize`.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from typing import Any

# an "id" member whose value is not a string or an integer (null, true, 1.5, 2e3, {, [); only
# then is the line parsed here, to see whether it is the message's own id (not a nested one)
_ODD_ID = re.compile(r'"id"\s*:\s*(?:null|true|false|\{|\[|-?\d+(?:\.\d*)?[eE]|-?\d+\.)')
BATCH = (
    "invalid request: a JSON-RPC batch (an array of messages); MCP takes one message a line "
    "(batches were dropped in protocol 2025-06-18): send each request on its own line"
)


def say(text: str) -> None:
    """One line on stderr, for whoever reads the bridge's log; never fatal and never on stdout:
    stderr may be closed (`2>&-`: sys.stderr is None, and print would fall back to stdout, the
    protocol's channel), a pipe its reader closed (EPIPE), or full. The session goes on."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(text + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass


class _Unowned(io.TextIOWrapper):
    """A text layer over stdin's buffer that never closes it (the process still owns fd 0)."""

    def close(self) -> None:
        with contextlib.suppress(ValueError):
            self.detach()


class StdinLines:
    """The lines of stdin for the SDK's reader (`stdio_server(stdin=...)` iterates it): UTF-8
    kept strict by surrogateescape (a byte that is not UTF-8 becomes a lone surrogate, which
    the SDK's parser refuses with `string_unicode`, answered as a parse error), lines ended by
    LF only (a CR before it is JSON white space), a byte order mark before a message dropped
    (as Windows tools write one), blank lines skipped, and requests with an id of the wrong
    type logged and skipped."""

    def __init__(self, buffer: Any = None) -> None:
        import anyio

        raw = claimed_stdin() if buffer is None else buffer
        text = _Unowned(raw, encoding="utf-8", errors="surrogateescape", newline="\n")
        self.file = anyio.wrap_file(text)

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self.file.readline()
            if not line:
                raise StopAsyncIteration
            if line.startswith("\ufeff"):  # a byte order mark (RFC 8259: may be ignored)
                line = line[1:]
            if not line.strip():
                continue  # a blank line is no message (and no error)
            odd = odd_id(line)
            if odd is None:
                return line
            say(
                f"memoryd mcp: invalid request: its id is {odd} (MCP ids are strings or "
                f"integers); not run, and not answered (there is no id to answer with)"
            )


def claimed_stdin() -> Any:
    """The MCP channel's bytes, read from a private copy of fd 0 while fd 0 itself points at
    /dev/null, as the SDK's own reader does: a child process (or a stray read of sys.stdin)
    cannot take a message off the wire. sys.stdin's buffer where that cannot be done."""
    import fcntl
    import os

    try:
        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        return sys.stdin.buffer
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    except OSError:
        os.close(private)
        return sys.stdin.buffer
    return os.fdopen(private, "rb")


def odd_id(line: str) -> str | None:
    """The id of a request (a message with a method) when it is neither a string nor an
    integer, as JSON writes it, else None."""
    if not _ODD_ID.search(line):
        return None
    try:
        message = json.loads(line)
    except ValueError:
        return None  # not JSON: the SDK's parse error says so
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    rid = message["id"]
    if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
        return None
    return json.dumps(rid)[:40]


def batch_ids(value: Any) -> list[int | str]:
    """The request ids in a JSON-RPC batch (an array), each to be told batches are not MCP."""
    if not isinstance(value, list):
        return []
    out: list[int | str] = []
    for item in value:
        rid = item.get("id") if isinstance(item, dict) and "method" in item else None
        if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
            out.append(rid)
    return out


# --- protocol errors said plainly (a server middleware) -----------------------------------------

NOT_INITIALIZED = (
    "{method}: the session is not initialized: send initialize, wait for its answer, then "
    "send notifications/initialized (only ping may come before)"
)


async def plain_errors(ctx: Any, call_next: Any) -> Any:
    """The SDK's errors for a malformed request, said plainly: which params failed and why, or
    that the request came before `initialize`. Tool errors are not touched (they are results
    with isError, made by memoryd.agents.catalog)."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import INVALID_PARAMS
    from pydantic import ValidationError

    try:
        return await call_next(ctx)
    except ValidationError as exc:
        said = "; ".join(_problem(e) for e in _one_per_place(exc.errors())[:3])
        raise MCPError(
            code=INVALID_PARAMS, message=f"invalid params for {ctx.method}: {said}"
        ) from None
    except MCPError as exc:
        error = exc.error
        # the SDK's gate before initialize (its only such MCPError: a params error is raised
        # as a ValidationError, caught above)
        gate = error.message == "Invalid request parameters" and not error.data
        if error.code == INVALID_PARAMS and gate:
            message = NOT_INITIALIZED.format(method=ctx.method)
            raise MCPError(code=INVALID_PARAMS, message=message) from None
        raise


_TYPES = {"str": "a string", "int": "an integer", "float": "a number", "bool": "true or false"}


def _one_per_place(errors: list[Any]) -> list[Any]:
    """One error a place: a value none of a union's types took (a progressToken that is
    neither a string nor an integer) is one error naming them, not one a type."""
    out: dict[tuple[Any, ...], Any] = {}
    for e in errors:
        loc = tuple(e.get("loc", ()))
        if len(loc) > 1 and loc[-1] in _TYPES:
            place = loc[:-1]
            if place in out and "wanted" in out[place]:
                out[place]["wanted"].append(_TYPES[loc[-1]])
                continue
            e = {**e, "loc": place, "wanted": [_TYPES[loc[-1]]]}
            loc = place
        out.setdefault(loc, e)
    for e in out.values():
        if "wanted" in e:
            e["msg"] = "expected " + " or ".join(e["wanted"])
    return list(out.values())


def _problem(error: Any) -> str:
    where = ".".join(str(p) for p in error.get("loc", ()) if p not in ("params",))
    what = error.get("msg", "invalid")
    value = error.get("input")
    shown = "" if error.get("type") == "missing" else f" (got {_short(value)})"
    return f"{where or 'params'}: {what}{shown}"


def _short(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
