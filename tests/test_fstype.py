"""index/fstype.py: which file system a workspace is on, read from mountinfo, and whether its
changes from elsewhere can raise no events here (the watcher then says so)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from memoryd.index import fstype

MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:35 / /home/ana/notes rw,relatime shared:20 - nfs4 srv:/export/notes rw,vers=4.2
41 22 0:36 / /mnt/c rw,noatime - 9p drvfs rw,dirsync,aname=drvfs
42 22 0:37 / /home/ana/My\\040Vault rw - fuse.sshfs ana@box:/vault rw,user_id=1000
43 40 0:38 / /home/ana/notes/local rw - tmpfs tmpfs rw
44 22 0:39 / /home/ana/notes2 rw - ext4 /dev/sdb1 rw
"""


@pytest.mark.parametrize(
    ("path", "expected", "is_remote"),
    [
        ("/home/ana/notes", "nfs4", True),
        ("/home/ana/notes/daily/x.md", "nfs4", True),
        ("/home/ana/notes/local/a", "tmpfs", False),  # a mount inside a mount: the inner one
        ("/home/ana/notes2", "ext4", False),  # a prefix of the text is not a parent folder
        ("/mnt/c/Users/ana/vault", "9p", True),  # WSL's Windows drive
        ("/home/ana/My Vault/inbox", "fuse.sshfs", True),  # an escaped space
        ("/srv", "ext4", False),
    ],
)
def test_the_mount_holding_a_path_gives_its_type(
    path: str, expected: str, is_remote: bool, monkeypatch: Any
) -> None:
    monkeypatch.setattr(os.path, "realpath", lambda p: p)
    got = fstype.filesystem(path, MOUNTINFO)
    assert got == expected
    assert fstype.remote(got) is is_remote


def test_a_table_it_cannot_read_tells_nothing(monkeypatch: Any) -> None:
    monkeypatch.setattr(fstype, "MOUNTINFO", "/nonexistent/mountinfo")
    assert fstype.filesystem("/") is None
    assert fstype.remote(None) is False
    assert fstype.filesystem("/", "garbage line\n\n - \n") is None


@pytest.mark.skipif(not os.path.exists(fstype.MOUNTINFO), reason="Linux only")
def test_the_daemon_says_what_its_workspace_is_on(make_app: Any) -> None:
    from conftest import wait_for

    app = make_app(model=None)
    app.start(jobs=False)
    wait_for(app.ready.is_set)
    watcher = app.status()["watcher"]
    assert watcher["filesystem"] == fstype.filesystem(str(Path(app.cfg.workspace)))
    assert watcher["filesystem"] and watcher["remote"] is False  # tmp dirs are local
