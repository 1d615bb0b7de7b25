"""Every method, every param, wrong types: a clear -32602 from the param's own check (naming the
param), never -32603 and never the server's fallback for a value that reached SQL unchecked.

Sent through the real socket of a real daemon, each wrong value in turn in place of one param of
a request that is otherwise valid, so the check under test is the one that answers."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import rpc

from memoryd.serve import methods as api

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)

# A valid request for each method (one param replaced at a time); methods not listed: {}.
BASE: dict[str, dict[str, Any]] = {
    "add": {"content": "a memory for the param checks"},
    "get": {"id": 1},
    "used": {"id": 1},
    "update": {"id": 1, "importance": 6},
    "delete": {"id": 999999, "dry_run": True},
    "validate": {"id": 1, "useful": True},
    "promote": {"id": 1, "tier": "important"},
    "history": {"id": 1},
    "checkpoint.create": {"name": "cp"},
    "checkpoint.delete": {"name": "nope", "kind": "checkpoint"},
    "checkpoint.restore": {"name": "nope"},
    "import": {"items": [{"content": "imported"}], "dry_run": True},
    "search": {"query": "memory"},
    "match_triggers": {"prompt": "hello"},
    "jobs.run": {"name": "nope"},
    "links": {"path": "a.md"},
    "backlinks": {"path": "a.md"},
    "note.read": {"path": "a.md"},
    "note.write": {"path": "b.md", "content": "# B\n"},
    "note.append": {"path": "b.md", "content": "more\n"},
    "note.move": {"path": "a.md", "new_path": "c.md"},
    "entity": {"name": "Nobody"},
    "related": {"name": "Nobody"},
    "graph": {"path": "a.md"},
}
WRONG: dict[str, Any] = {
    "list": [{"x": 1}],
    "object": {"a": [1]},
    "nul": "a\x00b",
    "float": 1.5,
    "bool": True,
    # empty and false: a check written `params.get(x) or default` lets them through
    "empty list": [],
    "empty object": {},
    "false": False,
}
# params for which true is a right value, and those where a number is
BOOLS = {
    "allow_secrets",
    "skip_near_duplicates",
    "dry_run",
    "vectors",
    "include_expired",
    "include_deprecated",
    "explain",
    "use_decay",
    "include_constitutional",
    "check",
    "full",
    "useful",
}
NUMBERS = {"confidence", "ttl", "expires_at", "since", "until", "expected_updated_at"}
LISTS = {"tags", "triggers", "items", "type", "tier", "concepts", "entities"}  # [] is right
HUGE = 2**62  # inside the 64-bit range the protocol lets through: a range check must answer


class Conn:
    """Calls that return the whole response (error or result): conftest's rpc."""

    def __init__(self, path: str) -> None:
        self.path = path

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return rpc(self.path, method, params, timeout=60)


def cases() -> list[tuple[str, str]]:
    return [(name, p) for name, m in sorted(api.METHODS.items()) for p in sorted(m.params)]


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One daemon for the module (conftest.module_daemon)."""
    from conftest import module_daemon, wait_for

    with module_daemon(tmp_path_factory, "params", {"a.md": "# A\n\nsee [[B]]\n"}) as d:
        c = Conn(str(d.socket))
        assert "result" in c.call("add", {"content": "memory one"})
        wait_for(lambda: c.call("links", {"path": "a.md"}).get("result") is not None)
        yield c


@pytest.mark.parametrize("value", list(WRONG.values()), ids=list(WRONG))
def test_import_checks_its_flags_with_no_items(conn: Conn, value: Any) -> None:
    for param in ("first_line", "allow_secrets", "dry_run"):
        if isinstance(value, bool) and param != "first_line":
            continue
        error = conn.call("import", {"items": [], param: value}).get("error")
        assert error is not None and error["code"] == -32602 and param in error["message"]


@pytest.mark.parametrize(("method", "param"), cases(), ids=lambda v: str(v))
def test_wrong_types_are_invalid_params_named_by_the_check(
    conn: Conn, method: str, param: str
) -> None:
    for what, value in WRONG.items():
        if (
            (what == "float" and param in NUMBERS)
            or (what in ("bool", "false") and param in BOOLS)
            or (what == "empty list" and param in LISTS)
        ):
            continue  # right there
        params = {**BASE.get(method, {}), param: value}
        resp = conn.call(method, params)
        error = resp.get("error")
        assert error is not None, f"{method} accepted {param}={value!r}: {resp}"
        assert error["code"] in (-32602, -32005), f"{method} {param}={value!r}: {error}"
        assert not error["message"].startswith("invalid params: a value of"), (
            f"{method} {param}={value!r} reached SQL unchecked: {error}"
        )
        if param != "items":  # an item's error names its line and field
            assert param in error["message"], f"{method} {param}={value!r}: {error}"
    error = conn.call(method, {**BASE.get(method, {}), param: 2**64}).get("error")
    assert error is not None and error["code"] == -32602  # refused before any method runs
    params = {**BASE.get(method, {}), param: HUGE}
    resp = conn.call(method, params)
    if "error" in resp:
        assert resp["error"]["code"] not in (-32603,), f"{method} {param}={HUGE}: {resp}"
        assert not resp["error"]["message"].startswith("invalid params: a value of"), resp
