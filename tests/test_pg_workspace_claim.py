"""docs/team.md: two machines must never share a workspace id. A second `memoryd run` with the
id of a running daemon on the same database is refused at start (exit 1, saying who holds it),
instead of both reconciling that workspace's index to their own folders in turn; the id is
held again after the server restarts, and free once its daemon stops."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for


@pytest.fixture
def private_pg() -> Any:
    import pgserver

    with pgserver.PrivateServer() as server:
        yield server


def _daemon(factory: Any, base: Path, dsn: str, note: str, wait: bool = True) -> Any:
    ws = base / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / note).write_text(f"# {note}\n\nthe note {note} of {base.name}\n")
    return factory(
        wait=wait,
        workspace=str(ws),
        data_dir=str(base / "data"),
        socket=str(base / "s.sock"),
        dailylog={"enabled": False},
        store={"backend": "postgres", "dsn": dsn, "workspace_id": "shared-id"},
    )


def _paths(d: Any) -> list[str]:
    return sorted(n["path"] for n in d.call("note.list", {})["items"])


def _refused(d: Any) -> str:
    assert d.proc is not None
    wait_for(lambda: d.proc.poll() is not None, timeout=30)
    assert d.stop() == 1, d.log()  # closes its log file too
    return d.log()


def test_a_second_daemon_with_a_running_daemons_workspace_id_is_refused(
    daemon_factory: Any, pg_dsn: str, tmp_path: Path
) -> None:
    first = _daemon(daemon_factory, tmp_path / "alice", pg_dsn, "a.md")
    wait_for(lambda: _paths(first) == ["a.md"], timeout=30)
    second = _daemon(daemon_factory, tmp_path / "bob", pg_dsn, "b.md", wait=False)
    log = _refused(second)
    assert "another memoryd uses workspace id 'shared-id'" in log
    assert str(tmp_path / "alice" / "ws") in log  # who holds it
    assert "Traceback" not in log
    assert _paths(first) == ["a.md"]  # the running daemon's index is untouched
    first.stop()
    # free once its daemon stops: a rebuilt machine takes the old notes over (docs/team.md)
    third = _daemon(daemon_factory, tmp_path / "bob", pg_dsn, "b.md")
    wait_for(lambda: _paths(third) == ["b.md"], timeout=30)


def test_the_workspace_id_is_held_again_after_the_server_restarts(
    daemon_factory: Any, private_pg: Any, tmp_path: Path
) -> None:
    first = _daemon(daemon_factory, tmp_path / "alice", private_pg.dsn(), "a.md")
    wait_for(lambda: first.call("status")["store"]["listening"] is True, timeout=30)
    private_pg.stop()
    private_pg.start()
    wait_for(lambda: first.call("status")["store"]["ok"] is True, timeout=30)
    wait_for(lambda: first.call("status")["store"]["listening"] is True, timeout=30)
    second = _daemon(daemon_factory, tmp_path / "bob", private_pg.dsn(), "b.md", wait=False)
    assert "another memoryd uses workspace id 'shared-id'" in _refused(second)
    assert _paths(first) == ["a.md"]


def test_a_lock_whose_session_is_ending_is_taken_once_it_goes(pg_dsn: str) -> None:
    """A session's advisory lock goes when its server process exits, a moment after its client
    closed: a daemon restarted at once, or `memoryd store migrate` run again, found its own
    previous run's lock still held and was refused as a second daemon (CI: "relation
    workspaces does not exist" from the refusal's message, on a copy's empty target)."""
    import threading

    import psycopg

    from memoryd.store.pg import claim

    first = psycopg.connect(pg_dsn, autocommit=True)
    assert claim.take(first, "ending-id")
    timer = threading.Timer(0.3, first.close)  # ends while the next one asks
    timer.start()
    try:
        with psycopg.connect(pg_dsn, autocommit=True) as second:
            assert claim.take(second, "ending-id")
            # an empty database (no memoryd tables): who holds it is "unknown", not an error
            assert claim.holder(second, "ending-id") == "unknown"
    finally:
        timer.join()
        first.close()
