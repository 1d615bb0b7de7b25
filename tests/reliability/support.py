"""The reliability suite (issue 10.4): kill -9 cycles, protocol fuzzing, concurrent clients.

A small size runs with the rest of the tests (CI); `MEMORYD_RELIABILITY_SCALE=full` runs the
full size (100 kill cycles, 100k fuzzed messages, 50 clients):

    MEMORYD_RELIABILITY_SCALE=full .venv/bin/python -m pytest -q -s tests/reliability

Each test prints its figures (`-s` shows them); RELIABILITY.md has the last full run.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FULL = os.environ.get("MEMORYD_RELIABILITY_SCALE", "small").lower() == "full"


def size(small: int, full: int) -> int:
    return full if FULL else small


class Conn:
    """One persistent connection: a call, or a batch of calls, one line each way."""

    def __init__(self, path: Path | str, timeout: float = 60) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self.file = self.sock.makefile("rwb")
        self.next_id = 0

    def send_line(self, line: bytes) -> None:
        self.file.write(line + b"\n")
        self.file.flush()

    def read_reply(self) -> Any:
        line = self.file.readline()
        if not line:
            raise ConnectionError("the daemon closed the connection")
        return json.loads(line)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The whole response object (result or error)."""
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
        self.send_line(json.dumps(msg).encode())
        return self.read_reply()

    def batch(self, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        """Responses in the order of `calls` (a batch may answer in any order)."""
        msgs = []
        for method, params in calls:
            self.next_id += 1
            msgs.append({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        self.send_line(json.dumps(msgs).encode())
        by_id = {r["id"]: r for r in self.read_reply()}
        return [by_id[m["id"]] for m in msgs]

    def close(self) -> None:
        try:
            self.file.close()
        finally:
            self.sock.close()

    def __enter__(self) -> Conn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def mounted_tmpfs(mnt: Path, options: str) -> Iterator[Path]:
    """A small tmpfs (`options`: mount's -o) at mnt for the block, unmounted after; the test is
    skipped where none can be mounted (not root)."""
    mnt.mkdir()
    try:
        out = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mnt)],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    if out.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {out.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=20)
