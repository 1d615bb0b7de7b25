"""One daemon per workspace id on a shared database (docs/team.md, section 3: "two machines must
never share one"). A daemon (`memoryd run`) holds a session advisory lock keyed by its workspace
id on one connection for its whole life, the one its change listener then listens on: a second
daemon started with the same id is refused at its start (after waiting up to ENDING_WAIT_S
for a lock whose session is ending), instead of each reconciling the index of that workspace
to its own folder, in turn, without a word. `memoryd store migrate` holds it
for its copy (which writes under the workspace id, and with --replace-notes removes its index).
Apps that only open the store (tests) take no lock, as SQLite's App takes no data_dir lock.

If the connection breaks (the server restarted), the lock goes with it: the listener takes it
again when it reconnects, and logs an error when another daemon holds it by then."""

from __future__ import annotations

import hashlib
import time
from typing import Any

import psycopg

from memoryd.core.errors import AlreadyRunning
from memoryd.core.logsetup import get_logger

log = get_logger("memoryd.store")


def lock_key(workspace_id: str) -> int:
    """A stable 63-bit advisory lock key for a workspace id (apart from the jobs' keys)."""
    digest = hashlib.sha256(f"memoryd:workspace:{workspace_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


# A session's lock goes when its server process exits, a moment after its client closed it: a
# daemon restarted at once (systemctl restart), or a `memoryd store migrate` run again, found
# the lock of its own previous run still held and was refused as a second daemon.
ENDING_WAIT_S = 2.0


def take(con: psycopg.Connection[Any], workspace_id: str) -> bool:
    """Take the workspace's lock on `con` for its session; False when another session holds
    it for longer than a session that is ending would (ENDING_WAIT_S)."""
    deadline = time.monotonic() + ENDING_WAIT_S
    while True:
        row = con.execute("SELECT pg_try_advisory_lock(%s)", [lock_key(workspace_id)]).fetchone()
        if row and row[0]:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def holder(con: psycopg.Connection[Any], workspace_id: str) -> str:
    """Who registered the workspace last (`host:folder`), for the message; "unknown" in a
    database without memoryd's tables yet (a copy's target, refused before it migrates)."""
    if con.execute("SELECT to_regclass('workspaces')").fetchone() in (None, (None,)):
        return "unknown"
    row = con.execute("SELECT label FROM workspaces WHERE id = %s", [workspace_id]).fetchone()
    return str(row[0]) if row else "unknown"


def refuse(con: psycopg.Connection[Any], workspace_id: str) -> AlreadyRunning:
    return AlreadyRunning(
        f"another memoryd uses workspace id {workspace_id!r} in this database (registered by "
        f"{holder(con, workspace_id)}); two daemons must never share one (docs/team.md): give "
        "this one its own store.workspace_id, or stop the other"
    )


def take_again(con: psycopg.Connection[Any], workspace_id: str) -> None:
    """After a reconnect (the lock went with the broken connection): take it on `con`, or say
    that another daemon holds it by now."""
    if not take(con, workspace_id):
        log.error(
            "another memoryd took this workspace id while the server was away; two daemons "
            "must never share one (docs/team.md)",
            workspace_id=workspace_id,
            holder=holder(con, workspace_id),
        )
