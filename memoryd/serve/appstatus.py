"""What the daemon reports about itself: `status` (the socket's, memoryctl's, the web page's)
and `stats`, read from a running App (serve/app.py; typed Any here: app.py imports this module)."""

from __future__ import annotations

import os
import time
from typing import Any

from memoryd import __version__
from memoryd.core import installed
from memoryd.core.timeutil import iso
from memoryd.index import fstype
from memoryd.memory import checkpoints
from memoryd.store import entitystage, entries
from memoryd.store import lifecycle as lcstore


def stats(app: Any, namespace: str | None = None) -> dict[str, Any]:
    def q(con: Any) -> dict[str, Any]:
        return {
            **entries.counts(con, namespace),
            "by_type": entries.by_type(con, namespace),
            "by_tier": lcstore.by_tier(con, namespace),
            "namespaces": lcstore.by_namespace(con),
        }

    out = app.store.read(q)
    vec = app.embedder.counts()
    out.update(vectors=vec["done"], pending_vectors=vec["pending"], db_bytes=app.store.size_bytes())
    return out


def store_status(app: Any) -> dict[str, Any]:
    """The `store` section of status: the backend and whether it answers now."""
    out = dict(app.store.info())
    if out.get("down_since") is not None:
        out["down_since"] = iso(out["down_since"])
    return out


def status(app: Any, *, check: bool = False) -> dict[str, Any]:
    from memoryd.core.errors import StoreBusy, StoreUnavailable

    store = store_status(app)
    try:
        counts: dict[str, Any] | None = app.store.read(entries.counts)
        pending: int | None = app.store.read(entitystage.pending)
        vec: dict[str, int | None] = dict(app.embedder.counts())
    except StoreBusy as exc:  # another program's lock: the store answers, writes would wait
        counts, vec, pending = None, {"done": None, "pending": None}, None
        now = iso(time.time())
        store["writes_refused"] = store.get("writes_refused") or {
            "since": now,
            "error": exc.message,
            "last_refused": now,
            "last_worked": None,
            "refusals": 0,
        }
    except StoreUnavailable as exc:  # status still answers: it says the server is gone
        counts, vec, pending = None, {"done": None, "pending": None}, None
        store.update(ok=False, error=store.get("error") or exc.message)
    # null while start-up has yet to start it (status right after READY=1 said "watcher
    # stopped"); false when it died or could not start (watcher_error says why)
    starting = app._bg is not None and app._bg.is_alive() and app.watcher_error is None
    watcher_alive: bool | None = (
        app.watcher.alive if app.watcher is not None else (None if starting else False)
    )
    out: dict[str, Any] = {
        "version": __version__,
        "pid": os.getpid(),
        "started_at": iso(app.started_at),
        "code_replaced": installed.replaced_since(installed.LOADED_AT),  # pip install -U
        "uptime_s": round(time.monotonic() - app._started, 1),
        "workspace": str(app.cfg.workspace),
        "data_dir": str(app.cfg.data_dir),
        "socket": str(app.cfg.socket),
        "config": {
            "file": str(app.cfg.source) if app.cfg.source else None,
            "restart_needed": list(app.restart_needed),
        },
        "db_path": str(app.cfg.db_path),
        "db_bytes": app.store.size_bytes(),
        "counts": counts,
        "store": store,
        "vectors": {
            "done": vec["done"],
            "embedding": app.embedder.running,
            "last_error": app.embedder.last_error,
            "failed": len(app.embedder.failed),
            **(
                app.embedder.progress(pending=vec["pending"])
                if vec["pending"] is not None
                else {"pending": None, "rate_per_s": None, "eta_s": None, "current": None}
            ),
        },
        # notes indexed whose entities are still to be read (store/entitystage.py)
        "entities": {"pending": pending},
        "model": app.model.status(),
        "watcher": {
            "alive": watcher_alive,
            "error": app.workspace_guard.error or app.watcher_error,
            "filesystem": app.watcher.filesystem if app.watcher is not None else None,
            "remote": app.watcher is not None and fstype.remote(app.watcher.filesystem),
            # the folders inotify may not watch (its limits), polled instead; None when none
            "polled": app.watcher.poller.info() if app.watcher is not None else None,
        },
        "index": {
            "initial_reconcile_done": app.ready.is_set(),
            "last_reconcile": _iso_at(app.indexer.last_reconcile),
            "files_indexed": app.indexer.totals.indexed,
            "files_unchanged": app.indexer.totals.unchanged,
            "files_moved": app.indexer.totals.moved,
            "files_deleted": app.indexer.totals.deleted,
            "files_skipped": app.indexer.totals.skipped,
            "skipped": [
                {"path": path, "reason": reason}
                for path, reason in sorted(app.indexer.skipped.items())
            ],
            "progress": app.index_progress,
        },
    }
    # memories stored whose daily log line the system refused: written by themselves later
    log_refused = app.dailylog.refusals.info()
    out["daily_log"] = {
        "waiting": len(app.dailylog.waiting),
        "rewrites": app.dailylog.rewrites_waiting(),
        "refused": log_refused,
    }
    # since the start: connections that waited for a place, were refused, were closed for room
    # (max_connections; the web page's 32), and accept() refused for want of descriptors
    out["connections"] = {name: info() for name, info in sorted(app.doors.items())}
    out["jobs"] = app.jobs.list()
    out["migration_backups"] = checkpoints.migration_backups(app.cfg.data_dir)
    if check and store["ok"]:  # during a reconcile, the files it has not read yet too:
        out["drift"] = {**app.indexer.drift(), "indexing": app.index_progress}
    return out


def _iso_at(rep: dict[str, Any] | None) -> dict[str, Any] | None:
    if rep is None:
        return None
    return {**rep, "at": iso(rep["at"])}
