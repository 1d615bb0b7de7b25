"""Two writers on one memory (docs/protocol.md, `update`): an update that carries the
`updated_at` its caller read (`expected_updated_at`: the socket, the MCP `update` tool, the web
page's edit form) applies to that version only, else a conflict (-32009) that changes nothing;
every change shows another `updated_at`, so two changes within one second are told apart.
Raced for real: two clients of a daemon process held at a barrier between read and write."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from webclient import WebHarness

from memoryd.agents import catalog
from memoryd.agents.tools import Bridge
from memoryd.core.errors import Conflict, InvalidInput, NotFound
from memoryd.serve import methods as api  # (also the method table the web page calls)

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def call(app: Any, name: str, **params: Any) -> Any:
    return api.lookup(name, params).fn(app, params)


def test_an_update_from_a_stale_read_is_a_conflict(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    mid = app.memories.add(content="deploys go out on Tuesdays", tags=["ops"]).id
    read = app.memories.get(mid)
    first = app.memories.update(
        mid, {"tags": ["ops", "a"], "expected_updated_at": read["updated_at"]}
    )
    # within the same second: still another updated_at (on main both showed the same one)
    assert first["updated_at"] != read["updated_at"]
    with pytest.raises(Conflict, match=f"memory {mid} changed since you read it") as exc:
        app.memories.update(mid, {"tags": ["ops", "b"], "expected_updated_at": read["updated_at"]})
    assert exc.value.data == {"id": mid, "current_updated_at": first["updated_at"]}
    assert app.memories.get(mid)["tags"] == ["ops", "a"]  # nothing of the stale one
    again = app.memories.update(
        mid, {"tags": ["ops", "a", "b"], "expected_updated_at": first["updated_at"]}
    )
    assert again["tags"] == ["ops", "a", "b"] and again["updated_at"] != first["updated_at"]
    app.memories.delete(mid)
    with pytest.raises(NotFound):  # forgotten meanwhile: said as such
        app.memories.update(mid, {"content": "x", "expected_updated_at": again["updated_at"]})


def test_two_agents_updating_one_memory_from_the_same_read(daemon_factory: Any) -> None:
    d = daemon_factory(dailylog={"enabled": False})
    mid = d.call("add", {"content": "the cache TTL is 60 s", "tags": ["cache"]})["id"]
    barrier = threading.Barrier(2, timeout=30)
    said: dict[str, tuple[str, Any, bool]] = {}

    def agent(tag: str) -> None:
        b = Bridge(str(d.socket), None, timeout=30)
        read = b.call("get", {"id": mid})
        barrier.wait()  # both have read; both write now
        args = {"id": mid, "tags": [*read["tags"], tag], "expected_updated_at": read["updated_at"]}
        said[tag] = catalog.call(b, "update", args)

    threads = [threading.Thread(target=agent, args=(t,)) for t in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    failed = [t for t, r in said.items() if r[2]]
    assert len(said) == 2 and len(failed) == 1, said
    text = said[failed[0]][0]
    assert "conflict, code -32009" in text and "Get the memory again (get)" in text
    won = "b" if failed == ["a"] else "a"
    assert d.call("get", {"id": mid})["tags"] == ["cache", won]


def test_the_web_form_saves_only_over_the_version_it_showed(make_app: Any) -> None:
    app = make_app(model=None, dailylog={"enabled": False})
    mid = app.memories.add(content="Redis runs on port 6380").id
    shown = app.memories.get(mid)
    app.memories.update(mid, {"content": "Redis runs on port 6381"})  # an agent, meanwhile
    h = WebHarness(app)
    try:
        h.sign_in()
        body = {"id": mid, "content": "Redis: 6380", "expected_updated_at": shown["updated_at"]}
        ans = h.request("POST", "/api/memory/update", body)
        assert ans.status == 409 and b"changed since you read it" in ans.body
        assert app.memories.get(mid)["content"] == "Redis runs on port 6381"
        now = app.memories.get(mid)["updated_at"]
        ok = h.request("POST", "/api/memory/update", {**body, "expected_updated_at": now})
        assert ok.status == 200 and app.memories.get(mid)["content"] == "Redis: 6380"
    finally:
        h.close()


def test_memoryctl_update_if_updated(daemon_factory: Any) -> None:
    d = daemon_factory(dailylog={"enabled": False})
    mid = d.call("add", {"content": "the cache TTL is 60 s"})["id"]
    read = d.call("get", {"id": mid})["updated_at"]
    d.call("update", {"id": mid, "tags": ["cache"]})  # someone else, meanwhile
    stale = d.ctl("update", str(mid), "--content", "TTL 90 s", "--if-updated", read)
    assert stale.returncode == 1 and "changed since you read it" in stale.stderr, stale
    assert d.call("get", {"id": mid})["content"] == "the cache TTL is 60 s"
    now = d.call("get", {"id": mid})["updated_at"]
    assert d.ctl("update", str(mid), "--content", "TTL 90 s", "--if-updated", now).returncode == 0
    assert d.call("get", {"id": mid})["content"] == "TTL 90 s"


def test_forget_takes_only_the_version_read(make_app: Any) -> None:
    """Forgetting a memory another agent changed since: a conflict, nothing deleted (the socket
    `delete` by id, the MCP forget tool, the web page's Delete)."""
    app = make_app(model=None, dailylog={"enabled": False})
    mid = app.memories.add(content="the cache TTL is 60 s").id
    read = app.memories.get(mid)["updated_at"]
    now = app.memories.update(mid, {"content": "the cache TTL is 90 s"})["updated_at"]
    for dry_run in (True, False):
        with pytest.raises(Conflict, match="nothing was deleted") as exc:
            call(app, "delete", id=mid, expected_updated_at=read, dry_run=dry_run)
        assert exc.value.data == {"id": mid, "current_updated_at": now}
    assert app.memories.get(mid)["content"] == "the cache TTL is 90 s"
    with pytest.raises(InvalidInput, match="expected_updated_at: only with id"):
        call(app, "delete", tag="x", expected_updated_at=now)
    assert call(app, "delete", id=mid, expected_updated_at=now)["deleted"] is True
    with pytest.raises(NotFound):
        app.memories.get(mid)
    h = WebHarness(app)  # the web page's Delete sends the version it shows
    try:
        h.sign_in()
        other = app.memories.add(content="deploys on Tuesdays").id
        shown = app.memories.get(other)["updated_at"]
        app.memories.update(other, {"tags": ["ops"]})
        ans = h.request("POST", "/api/memory/delete", {"id": other, "expected_updated_at": shown})
        assert ans.status == 409 and app.memories.get(other)["tags"] == ["ops"]
    finally:
        h.close()
