"""Every file and folder memoryd creates has the mode of its kind, whatever the umask:

- memoryd's own (the data dir and all in it: the store, its WAL and SHM, the lock, jobs.json,
  web.json with the page's token, checkpoints; the socket and its folder; the log file and its
  folder; an export): owner-only, never a group or other bit, under umask 000 as under 022;
- the workspace's (a note written through the API, its new folders, the daily log's folder and
  files): as an editor makes them, 0666 / 0777 less the umask, which the daemon narrows to at
  least 022 (0644 / 0755 under 000 or 022, 0600 / 0700 under 077).

Before, the daily log's files were 0600 whatever the umask, unlike every other note."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for

pytestmark = pytest.mark.backends  # SQLite and PostgreSQL (tests/conftest.py)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_every_file_we_create_has_the_mode_of_its_kind(
    umask: int, daemon_factory: Any, tmp_path: Path, backend: str
) -> None:
    log_file = tmp_path / "logs" / "memoryd.log"
    export = tmp_path / "out" / "export.jsonl"
    export.parent.mkdir()
    old = os.umask(umask)  # the daemon and memoryctl inherit it
    try:
        d = daemon_factory(
            logging={"file": str(log_file)},
            data_dir=str(tmp_path / "a" / "data"),
            web={"enabled": True},
        )
        data = Path(d.cfg["data_dir"])
        assert d.ctl("add", "the file modes memory").returncode == 0
        wrote = d.ctl("note", "write", "new/folder/n.md", "# N\n")
        assert wrote.returncode == 0, wrote.stderr
        out = d.ctl("export", "-o", str(export))
        assert out.returncode == 0, out.stderr
        if backend == "sqlite":  # PostgreSQL refuses checkpoints and snapshots (docs/team.md)
            made = d.ctl("checkpoint", "create", "modes")
            assert made.returncode == 0, made.stderr
            snap = d.ctl("jobs", "run", "snapshot")
            assert snap.returncode == 0, snap.stdout + snap.stderr
        wait_for(lambda: list((d.workspace / "daily").glob("*.md")), timeout=30)
        wait_for(lambda: (data / "web.json").exists() and log_file.exists(), timeout=30)
        assert json.loads((data / "web.json").read_text())["token"]
        # memoryd's own: owner-only, whatever the umask (looked at while it runs: the WAL, the
        # socket and web.json go at the stop)
        own = [data, d.socket, d.socket.parent, log_file, log_file.parent, export]
        own += [p for p in data.rglob("*") if not p.is_symlink()]
        assert data / "web.json" in own and data / "memoryd.lock" in own
        if backend == "sqlite":
            assert data / "memoryd.db-wal" in own and list((data / "checkpoints").iterdir())
            assert len([p for p in own if "snapshot" in p.name]) >= 1, own
        loose = [f"{p} {_mode(p):04o}" for p in own if _mode(p) & 0o077]
        assert loose == []
        # the workspace's: as an editor's, the umask narrowed to at least 022
        effective = umask | 0o022
        notes = [d.workspace / "new" / "folder" / "n.md", *(d.workspace / "daily").glob("*.md")]
        folders = [d.workspace / "new", d.workspace / "new" / "folder", d.workspace / "daily"]
        assert {p.name: _mode(p) for p in notes} == {p.name: 0o666 & ~effective for p in notes}
        assert {p.name: _mode(p) for p in folders} == {p.name: 0o777 & ~effective for p in folders}
    finally:
        os.umask(old)
