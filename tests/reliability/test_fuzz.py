"""Protocol fuzzing against a real daemon: whatever arrives on the socket, the daemon answers
each line with JSON-RPC (an error or a result) and stays up.

Messages: random JSON values; requests for every real method with random values for its real
param names and stray ones (wrong types, huge integers, lone surrogates, deep nesting); batches
of 0 to 150; nesting to 5,000 levels; bytes that are not UTF-8. After each message a `ping` with
a fresh id follows on the same connection, so a message that gets no answer (a notification)
is told apart from one that is never answered: every line read must be a JSON-RPC response,
and the ping's answer must come.
"""

from __future__ import annotations

import collections
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.serve import methods as api

from .support import Conn, size

pytestmark = pytest.mark.slow

MESSAGES = size(2_000, 100_000)
PER_EXAMPLE = 20
# methods that would only make the run long or wipe what the other examples use
SKIP = {"checkpoint.restore", "checkpoint.create", "reindex", "export", "jobs.run"}
METHODS = sorted(set(api.METHODS) - SKIP)

text = st.text(
    alphabet=st.characters(codec=None, categories=["L", "N", "P", "Zs", "Cc", "Cs", "So"]),
    max_size=30,
)
numbers = (
    st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([2**63, 2**63 - 1, -(2**63) - 1, 10**30, 1e15, 1e18, 1e300, -0.0])
)
scalars = st.none() | st.booleans() | numbers | text
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=12,
)
ids = st.integers(min_value=-(2**40), max_value=2**40) | text | st.none() | st.booleans()


@st.composite
def requests(draw: Any) -> Any:
    method = draw(st.sampled_from(METHODS) | text)
    names = sorted(api.METHODS[method].params) if method in api.METHODS else []
    params = {
        name: draw(values) for name in draw(st.lists(st.sampled_from(names), unique=True))
    } if names else {}  # fmt: skip
    if draw(st.booleans()):
        params.update(draw(st.dictionaries(text, values, max_size=2)))
    msg: dict[str, Any] = {
        "jsonrpc": draw(st.sampled_from(["2.0", "2.0", "1.0"])),
        "method": method,
    }
    msg["params"] = params if draw(st.integers(0, 9)) else draw(values)
    if draw(st.integers(0, 9)):
        msg["id"] = draw(ids)
    return msg


def deep(depth: int, opener: str) -> bytes:
    closer = {"[": "]", '{"a":': "}"}[opener]
    return (opener * depth + "1" + closer * depth).encode()


lines = st.one_of(
    requests().map(lambda m: json.dumps(m).encode()),
    st.lists(requests(), max_size=150).map(lambda b: json.dumps(b).encode()),
    values.map(lambda v: json.dumps(v).encode()),
    st.builds(deep, st.integers(1, 5_000), st.sampled_from(["[", '{"a":'])),
    st.binary(max_size=200).map(lambda b: b.replace(b"\n", b" ")),
)


def is_response(reply: Any) -> bool:
    if isinstance(reply, list):
        return bool(reply) and all(is_response(r) for r in reply)
    return (
        isinstance(reply, dict)
        and reply.get("jsonrpc") == "2.0"
        and "id" in reply
        and (("result" in reply) ^ ("error" in reply))
    )


def test_the_daemon_answers_every_line_and_stays_up(daemon_factory: Any) -> None:
    d = daemon_factory()
    (d.workspace / "a.md").write_text("# A\n\nsome text to find\n")
    stats: collections.Counter[str] = collections.Counter()
    conn = [Conn(d.socket, timeout=60)]
    ping_id = [0]

    @settings(
        max_examples=MESSAGES // PER_EXAMPLE,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.lists(lines, min_size=PER_EXAMPLE, max_size=PER_EXAMPLE))
    def fuzz(batch: list[bytes]) -> None:
        c = conn[0]
        for line in batch:
            stats["messages"] += 1
            c.send_line(line.strip() or b"{}")
            ping_id[0] += 1
            marker = f"ping-{ping_id[0]}"
            c.send_line(json.dumps({"jsonrpc": "2.0", "id": marker, "method": "ping"}).encode())
            while True:
                reply = c.read_reply()
                assert is_response(reply), (line[:200], reply)
                if isinstance(reply, dict) and reply["id"] == marker:
                    assert reply["result"]["pong"] is True
                    break
                for r in reply if isinstance(reply, list) else [reply]:
                    code = r.get("error", {}).get("code") if "error" in r else "result"
                    stats[str(code)] += 1

    try:
        fuzz()
    finally:
        conn[0].close()
    assert d.proc.poll() is None, "the daemon died"
    assert d.call("ping")["pong"] is True
    print(f"\nfuzz: {stats.pop('messages')} messages; answers by code: {dict(stats.most_common())}")
