"""The JSON-RPC method registry: the table every method registers itself in, the check of a
request's param names and strings, and the small param readers the method modules share.

methods.py and methods_notes.py register into METHODS; server.py looks methods up here through
methods.py (which imports every method module, so the table is whole once it is imported)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memoryd.core import oserrors, threads
from memoryd.core.errors import InvalidInput, NotFound, check_int, describe
from memoryd.memory.memories import check_name
from memoryd.memory.validation import check_str

if TYPE_CHECKING:
    from memoryd.serve.app import App

Handler = Callable[["App", dict[str, Any]], Any]
INVALID_PARAMS, INTERNAL_ERROR = -32602, -32603  # as serve/protocol.py names them


@dataclass(frozen=True)
class Method:
    fn: Handler
    params: frozenset[str]
    slow: bool = False  # runs long (reindex, jobs): no request timeout
    own_check: frozenset[str] = frozenset()  # params the library checks item by item
    required: tuple[str, ...] = ()  # params a request must give (docs/protocol.md: `name`*)


METHODS: dict[str, Method] = {}


def method(
    name: str,
    params: set[str] | frozenset[str] = frozenset(),
    *,
    slow: bool = False,
    own_check: frozenset[str] = frozenset(),
    from_index: bool = False,
    required: tuple[str, ...] = (),
) -> Callable[[Handler], Handler]:
    """Register a method. from_index: it answers from the notes' index, so while the first
    index since the start still reads the workspace its answer says so (`indexing`).
    required: the params a request must give (one message for any left out: `missing`)."""

    def register(fn: Handler) -> Callable[[App, dict[str, Any]], Any]:
        handler = partial_while_indexing(fn) if from_index else fn
        METHODS[name] = Method(handler, frozenset(params), slow, own_check, required)
        return fn

    return register


def partial_while_indexing(fn: Handler) -> Handler:
    """The handler, its dict answer carrying `indexing: {done, total}` (files read and to read;
    total 0 while they are listed) until the first index since the start is done: the notes
    not read yet are not in it."""

    def answer(app: App, params: dict[str, Any]) -> Any:
        try:
            found = fn(app, params)
        except NotFound as exc:  # no such note or entity: perhaps not read yet
            if app.ready.is_set():
                raise
            prog = app.index_progress or {}
            read = (
                f" ({prog.get('done', 0)}/{prog['total']} files read)" if prog.get("total") else ""
            )
            raise NotFound(
                f"{exc.message}; the workspace is still being indexed{read}: notes not read yet "
                "are not known",
                data=exc.data,
            ) from None
        if isinstance(found, dict) and not app.ready.is_set():
            prog = app.index_progress or {}
            found["indexing"] = {"done": prog.get("done", 0), "total": prog.get("total", 0)}
        return found

    return answer


def lookup(name: str, params: dict[str, Any]) -> Method:
    """The method and checked param names; raises KeyError for an unknown method."""
    m = METHODS[name]
    unknown = set(params) - m.params
    if unknown:
        allowed = ", ".join(sorted(m.params)) or "none"
        shown = ", ".join(sorted(describe(k) for k in unknown))
        raise InvalidInput(f"{name}: unknown param {shown} (accepted: {allowed})")
    for param in m.required:
        if param not in params:
            raise InvalidInput(missing(param))
    check_strings({k: v for k, v in params.items() if k not in m.own_check})
    return m


WANTED = {"id": "an integer of at least 1", "useful": "true or false", "items": "a list"}


def missing(param: str) -> str:
    """A required param left out, as the MCP tools' own check says it (agents/argcheck.py):
    `id: expected an integer of at least 1, got nothing (it is required)`. A param given as
    null is a wrong value, and its method says so (`got null`)."""
    return f"{param}: expected {WANTED.get(param, 'a string')}, got nothing (it is required)"


def check_strings(params: dict[str, Any]) -> None:
    """No string anywhere in the params (keys included, at any depth) may carry a NUL or a lone
    surrogate: SQLite, the file system and UTF-8 output cannot take them. Iterative, so deep
    nesting cannot overflow the stack."""
    stack: list[tuple[str, Any]] = [(k, v) for k, v in params.items()]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            check_str(value, where)
        elif isinstance(value, dict):
            for k, v in value.items():
                check_str(k, where)
                stack.append((where, v))
        elif isinstance(value, list):
            stack.extend((where, v) for v in value)


def unexpected(exc: Exception, name: str) -> tuple[int, str, str]:
    """What a failure no method turned into a MemorydError answers on every door (the socket,
    the web page's routes): (code, message, what to log). The system's refusal (a full disk,
    a read-only folder) is its client error; a value of the wrong type that reached SQL is the
    caller's mistake (-32602; the traceback shows the missing check); anything else is a bug
    (-32603)."""
    if (err := oserrors.client_error(exc)) is not None:
        return err.code, err.message, "refused by the system"
    if threads.is_thread_limit(exc):  # a library's thread (core/threads.py): retry
        err = threads.refused("a thread")
        return err.code, err.message, "refused by the system"
    if isinstance(exc, TypeError) and str(exc).startswith("Bad binding argument type"):
        said = f"invalid params: a value of {name} has the wrong type"
        return INVALID_PARAMS, said, "failed on an unchecked value type"
    return INTERNAL_ERROR, f"internal error: {exc}", "failed"


def param_bool(params: dict[str, Any], key: str) -> bool:
    value = params.get(key, False)
    if not isinstance(value, bool):
        raise InvalidInput(f"{key}: expected true or false, got {describe(value)}")
    return value


def param_int(
    params: dict[str, Any], key: str, default: int, low: int, high: int | None = None
) -> int:
    """An integer param from `low` to `high`, `default` when it is not given; null is refused
    (it is not "not given"), with the one message of every integer param (int_expected)."""
    return check_int(params.get(key, default), key, low, high)


def param_namespace(params: dict[str, Any]) -> str | None:
    """The namespace param: None (not given), "*" (every namespace) or a checked name."""
    ns = params.get("namespace")
    return ns if ns is None or ns == "*" else check_name(ns, "namespace")
