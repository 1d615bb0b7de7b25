"""The file system a folder is on (Linux: /proc/self/mountinfo), so the daemon can say when its
watcher cannot see every change: on a network or shared file system (NFS, SMB, sshfs, a
Windows drive under WSL, a VM's shared folder) a file changed from another machine or from the
host raises no inotify event here. Those changes are found by the reconcile job instead."""

from __future__ import annotations

import os

# fstypes whose files can change without an event reaching this kernel's inotify
REMOTE = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "9p",  # WSL2's Windows drives, QEMU shares
        "drvfs",  # WSL1's Windows drives
        "virtiofs",
        "vboxsf",
        "prl_fs",
        "afs",
        "ceph",
        "glusterfs",
        "lustre",
        "davfs",
        "fuse.sshfs",
        "fuse.rclone",
        "fuse.s3fs",
        "fuse.gcsfuse",
        "fuse.davfs2",
        "fuse.vmhgfs-fuse",
    }
)
MOUNTINFO = "/proc/self/mountinfo"


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in a path as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def filesystem(path: str, mountinfo: str | None = None) -> str | None:
    """The fstype of the mount that holds `path` (resolved), or None where it cannot be told
    (no /proc: macOS, whose FSEvents see remote changes no better; an unreadable table)."""
    if mountinfo is None:
        try:
            with open(MOUNTINFO, encoding="utf-8", errors="replace") as f:
                mountinfo = f.read()
        except OSError:
            return None
    real = os.path.realpath(path)
    best, best_type = "", None
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, after = left.split(), right.split()
        if not sep or len(fields) < 5 or not after:
            continue
        point = _unescape(fields[4])
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):  # the last of equal ones is on top
            best, best_type = point, after[0]
    return best_type


def remote(fstype: str | None) -> bool:
    return fstype in REMOTE
