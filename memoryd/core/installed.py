"""Whether memoryd's files were installed again since a process loaded them.

`pip install -U` (or a `git checkout` under an editable install) replaces the package's files
under a running daemon, which goes on with the code and data it loaded at its start until it
restarts (docs/service.md#upgrading). Until then it is the earlier version: `status` says so
(`code_replaced`), and memoryctl and the MCP bridge add it to an error an older daemon may give
a newer client (an unknown method or param; ctl/installed.py), so the cure, a restart, is named
where the surprise is.
"""

from __future__ import annotations

import os
import time

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOADED_AT = time.time()  # this process's memoryd was loaded (a daemon: at its start)


def installed_at(root: str | None = None) -> float:
    """The newest change time of the package's files (ctime: an install sets it, whatever
    times the archive carried), bytecode caches left out (Python writes them as it imports)."""
    newest = 0.0
    folders = [root or PACKAGE]
    while folders:
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        folders.append(entry.path)
                elif not entry.name.endswith((".pyc", ".tmp")):
                    newest = max(newest, entry.stat(follow_symlinks=False).st_ctime)
            except OSError:
                continue
    return newest


def replaced_since(started: float, root: str | None = None) -> bool:
    """Whether the package's files changed after `started` (unix seconds), a second's slack
    for a start time written in whole seconds."""
    return installed_at(root) > started + 1.0
