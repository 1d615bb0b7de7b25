"""Named checkpoints of the whole store: create, list, restore (while the daemon runs).

Create is an online backup (VACUUM INTO). Restore copies the checkpoint into the live database
through SQLite's backup API on the writer connection, under the writer lock: requests in flight
finish on their snapshot, writes wait, and the index and its vectors come back together because
they live in the same file. Afterwards the workspace is reconciled, so files changed since the
checkpoint are indexed as they are now.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.errors import InvalidInput, NotFound
from memoryd.timeutil import iso

if TYPE_CHECKING:
    from memoryd.app import App

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def folder(app: App) -> Path:
    return app.cfg.data_dir / "checkpoints"


def _path(app: App, name: object) -> Path:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidInput("name: letters, digits, '.', '_' and '-', at most 64 characters")
    return folder(app) / f"{name}.db"


def create(app: App, name: str) -> dict[str, Any]:
    path = _path(app, name)
    if path.exists():
        raise InvalidInput(f"checkpoint {name!r} exists; pick another name or delete it first")
    app.store.backup_to(path)
    return {"name": name, "path": str(path), "bytes": path.stat().st_size}


def list_all(app: App) -> list[dict[str, Any]]:
    out = []
    for p in sorted(folder(app).glob("*.db")):
        st = p.stat()
        out.append({"name": p.stem, "created_at": iso(st.st_mtime), "bytes": st.st_size})
    return out


def restore(app: App, name: str) -> dict[str, Any]:
    path = _path(app, name)
    if not path.is_file():
        raise NotFound(f"no checkpoint named {name!r} (see checkpoint list)")
    app.store.restore_from(path)
    app.after_restore()
    report = app.indexer.reconcile()
    return {"restored": name, "reconcile": report.as_dict()}
