"""Disk full: writes answer -32013 (disk full) with nothing half-written, reads keep answering,
a checkpoint leaves no temp file, and writes work again once there is space.

Two variants: a real daemon whose data_dir is a small tmpfs (needs `mount -t tmpfs`, i.e. root
or CAP_SYS_ADMIN; skipped with the reason otherwise), and an in-process one that always runs,
where SQLite itself reports SQLITE_FULL because the file may not grow (max_page_count).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryd.core.errors import DiskFull
from memoryd.serve import methods as api

from .support import mounted_tmpfs

DISK_FULL = -32013


def call(app: Any, method: str, **params: Any) -> Any:
    return api.lookup(method, params).fn(app, params)


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "full", "size=6m,mode=0700") as mnt:
        yield mnt


def _fill(folder: Path, leave: int) -> Path:
    """A filler file that leaves about `leave` bytes free."""
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    filler = folder / "filler.bin"
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave))
    return filler


@pytest.mark.slow
def test_daemon_on_a_full_tmpfs(daemon_factory: Any, small_tmpfs: Path) -> None:
    from tests.conftest import rpc

    d = daemon_factory(data_dir=str(small_tmpfs / "data"))
    first = d.call("add", {"content": "written while there was room"})["id"]
    filler = _fill(small_tmpfs, 64 * 1024)
    codes: list[int] = []
    stored = [first]
    for i in range(400):
        resp = rpc(d.socket, "add", {"content": f"filler {i} {uuid.uuid4()} " + "word " * 1500})
        if "error" in resp:
            codes.append(resp["error"]["code"])
            if len(codes) >= 3:
                break
        else:
            stored.append(resp["result"]["id"])
    assert codes and set(codes) == {DISK_FULL}, codes
    assert d.call("ping")["pong"] is True
    assert d.call("get", {"id": first})["content"] == "written while there was room"
    assert d.call("list", {"limit": 5})["total"] >= 1
    resp = rpc(d.socket, "checkpoint.create", {"name": "full"})
    if "error" in resp:
        assert resp["error"]["code"] == DISK_FULL
    assert list((small_tmpfs / "data" / "checkpoints").glob("*.tmp*")) == []
    filler.unlink()
    again = d.call("add", {"content": "written after space came back"})["id"]
    assert again > max(stored)
    for mid in stored:  # every acknowledged write is still there
        assert d.call("get", {"id": mid})["id"] == mid
    d.stop()
    d.start()
    assert d.call("get", {"id": again})["content"] == "written after space came back"


def test_in_process_sqlite_full(make_app: Any) -> None:
    app = make_app(model=None)
    kept = call(app, "add", content="kept through the full disk")["id"]
    con = app.store._writer
    con.execute(f"PRAGMA max_page_count = {con.execute('PRAGMA page_count').fetchall()[0][0]}")
    with pytest.raises(DiskFull) as err:
        for i in range(1000):
            call(app, "add", content=f"filler {i} " + "word " * 500)
    assert err.value.code == DISK_FULL and "full" in err.value.message
    with pytest.raises(DiskFull):
        call(app, "update", id=kept, content="changed " + "word " * 1500)
    assert call(app, "get", id=kept)["content"] == "kept through the full disk"
    with contextlib.suppress(DiskFull):  # a tiny write: it may fit, else it is DiskFull
        call(app, "used", id=kept)
    con.execute("PRAGMA max_page_count = 1073741823")
    call(app, "add", content="written after space came back")
    assert call(app, "list")["total"] >= 2
