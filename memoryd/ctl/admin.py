"""The daemon and the workspace: status (and --watch), reindex with progress, jobs, checkpoints,
export/import, notes and links. Same conventions as handlers.py (p_ params, s_ show, r_ run)."""

from __future__ import annotations

import os
import sys
import time

from memoryd.ctl.client import Client, UsageError
from memoryd.ctl.handlers import given, read_text
from memoryd.ctl.output import (
    Progress,
    bar,
    emit_json,
    flatten,
    one_line,
    print_drift,
    print_jobs,
    print_rows,
    progress_parts,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from typing import Any

EXIT_OK, EXIT_ERROR = 0, 1


def r_ping(c: Client, a: Namespace) -> int:
    res = c.call("ping")
    if a.json:
        return emit_json(res)
    print(f"memoryd {res.get('version')} is answering on {c.path}")
    return EXIT_OK


# --- status, reindex, jobs ---------------------------------------------------------------------


def r_status(c: Client, a: Namespace) -> int:
    if a.watch:
        if a.check:
            raise UsageError("status: --watch and --check do not go together")
        return watch(c, a.interval, a.json)
    res = c.call("status", given({"check": a.check}))
    drift = res.get("drift")
    if a.json:
        emit_json(res)
    else:
        print_rows(flatten({k: v for k, v in res.items() if k not in ("jobs", "drift")}))
        if res.get("jobs"):
            print("\njobs:")
            print_jobs(res["jobs"], indent="  ")
        if drift is not None:
            print_drift(drift)
    return EXIT_ERROR if drift and drift.get("total") else EXIT_OK


def watch(c: Client, interval: float, as_json: bool) -> int:
    """Poll `status` until indexing and embedding are done: a bar on a terminal, plain lines
    (or one JSON object per poll with --json) elsewhere."""
    import json

    progress = Progress(sys.stdout, every=0.0)
    while True:
        res = c.call("status")
        parts, busy = progress_parts(res)
        if as_json:
            print(
                json.dumps(
                    {"busy": busy, "index": res.get("index"), "vectors": res.get("vectors")}
                ),
                flush=True,
            )
        elif busy:
            progress.update("  ".join(parts))
        if not busy:
            if not as_json:
                progress.finish("idle: " + ("  ".join(parts) or "nothing to do"))
            return EXIT_OK
        time.sleep(interval)


def r_reindex(c: Client, a: Namespace) -> int:
    """The reindex call runs on a thread; meanwhile `status` is polled for index.progress."""
    params = given({"path": a.path, "full": a.full})
    if a.json or a.no_progress:
        res = c.call("reindex", params)
        return emit_json(res) if a.json else s_reindex(res, a)
    import threading

    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = c.call("reindex", params)
        except BaseException as exc:  # re-raised on the main thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="memoryctl-reindex", daemon=True)
    worker.start()
    progress = Progress(sys.stderr)
    poller = Client(c.path, min(c.timeout, 10.0))
    worker.join(0.5)
    while worker.is_alive():
        try:
            prog = (poller.call("status").get("index") or {}).get("progress")
        except Exception:  # the poll is a courtesy; the reindex answer is what counts
            prog = None
        if isinstance(prog, dict) and prog.get("total"):
            progress.update(
                f"reindex {bar(prog.get('done', 0), prog['total'])} "
                f"{prog.get('done', 0)}/{prog['total']} files"
            )
        worker.join(1.0)
    progress.finish()
    if "error" in outcome:
        raise outcome["error"]
    return s_reindex(outcome["result"], a)


def s_reindex(res: dict[str, Any], a: Namespace) -> int:
    counts = ("indexed", "unchanged", "deleted", "moved", "skipped")
    print(", ".join(f"{k} {res.get(k, 0)}" for k in counts) + f" in {res.get('took_ms')} ms")
    for error in res.get("errors") or []:
        print(f"  error: {error}")
    return EXIT_OK


def s_jobs(res: dict[str, Any], a: Namespace) -> int:
    print_jobs(res.get("jobs") or [])
    return EXIT_OK


def p_name(a: Namespace) -> dict[str, Any]:
    return {"name": a.name}


def r_jobs_run(c: Client, a: Namespace) -> int:
    res = c.call("jobs.run", {"name": a.name})
    if a.json:
        emit_json(res)
    elif res.get("error"):
        print(f"job {res['name']} failed after {res.get('duration_ms')} ms: {res['error']}")
    else:
        print(f"job {res['name']} done in {res.get('duration_ms')} ms")
        if isinstance(res.get("result"), dict) and res["result"]:
            print_rows(flatten(res["result"]), indent="  ")
    return EXIT_ERROR if res.get("error") else EXIT_OK


# --- checkpoints, export, import ---------------------------------------------------------------


def s_checkpoints(res: dict[str, Any], a: Namespace) -> int:
    for cp in res["checkpoints"]:
        print(f"{cp['name']:<24}{cp['created_at']}  {cp['bytes']} bytes")
    if not res["checkpoints"]:
        print("no checkpoints")
    return EXIT_OK


def write_private(path: str, data: str) -> None:
    """Write a file only its owner can read (exports hold every memory): 0600, also when it
    existed before with a wider mode."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        with open(fd, "w", encoding="utf-8") as f:
            f.write(data)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def r_export(c: Client, a: Namespace) -> int:
    import json

    res = c.call("export", given({"namespace": a.namespace, "vectors": a.vectors}))
    lines = "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in res["items"])
    if not a.output:
        sys.stdout.write(lines)
        return EXIT_OK
    write_private(a.output, lines)
    print(f"exported {res['count']} memories to {a.output}", file=sys.stderr)
    return EXIT_OK


IMPORT_BATCH_BYTES = 256 * 1024  # well under the daemon's request size limit (1 MiB by default)


def r_import(c: Client, a: Namespace) -> int:
    import json

    items = []
    for n, line in enumerate(read_text(a.file).splitlines(), start=1):
        if line.strip():
            try:
                items.append(json.loads(line))
            except ValueError as exc:
                raise UsageError(f"{a.file}:{n}: not JSON ({exc})") from None
    totals = {"imported": 0, "skipped_duplicates": 0, "vectors": 0}
    batch: list[Any] = []
    size = 0
    for item in [*items, None]:  # None: flush the last batch
        cost = len(json.dumps(item))
        if batch and (item is None or size + cost > IMPORT_BATCH_BYTES):
            res = c.call("import", {"items": batch})
            for key in totals:
                totals[key] += res.get(key, 0)
            batch, size = [], 0
        if item is not None:
            batch.append(item)
            size += cost
    if a.json:
        return emit_json(totals)
    print(
        f"imported {totals['imported']}, skipped {totals['skipped_duplicates']} already "
        f"stored, {totals['vectors']} vectors"
    )
    return EXIT_OK


# --- notes and links ---------------------------------------------------------------------------


def p_path(a: Namespace) -> dict[str, Any]:
    return {"path": a.path}


def s_note_read(res: dict[str, Any], a: Namespace) -> int:
    content = res.get("content") or ""
    sys.stdout.write(content if content.endswith("\n") or not content else content + "\n")
    return EXIT_OK


def _note_content(a: Namespace) -> str:
    if a.file is not None:
        if a.text is not None:
            raise UsageError("give the text or --file, not both")
        return read_text(a.file)
    return sys.stdin.read() if a.text in (None, "-") else a.text


def p_note_write(a: Namespace) -> dict[str, Any]:
    return {
        "path": a.path,
        "content": _note_content(a),
        **given({"expected_sha256": a.if_sha256}),
    }


def s_note_write(res: dict[str, Any], a: Namespace) -> int:
    verb = "created" if res.get("created") else "wrote"
    print(f"{verb} {res['path']} (sha256 {str(res.get('sha256'))[:12]})")
    return EXIT_OK


def s_note_append(res: dict[str, Any], a: Namespace) -> int:
    print(f"appended to {res['path']} (sha256 {str(res.get('sha256'))[:12]})")
    return EXIT_OK


def p_note_list(a: Namespace) -> dict[str, Any]:
    return given({"path": a.path, "limit": a.limit, "offset": a.offset})


def s_note_list(res: dict[str, Any], a: Namespace) -> int:
    items = res.get("items") or []
    for item in items:
        tags = " ".join(f"#{t}" for t in item.get("tags") or [])
        title = one_line(item.get("title"), 60)
        print(
            f"{item['path']}  {item.get('size')} B  {item.get('mtime')}  {title}  {tags}".rstrip()
        )
    if not items:
        print("no notes")
    shown = (a.offset or 0) + len(items)
    total = res.get("total", len(items))
    more = f"; next page: --offset {shown}" if shown < total else ""
    print(f"({len(items)} shown of {total}{more})")
    return EXIT_OK


def p_note_move(a: Namespace) -> dict[str, Any]:
    return {"path": a.path, "new_path": a.new_path, **given({"expected_sha256": a.if_sha256})}


def s_note_move(res: dict[str, Any], a: Namespace) -> int:
    print(f"moved {res['path']} -> {res['new_path']}")
    return EXIT_OK


def s_links(res: dict[str, Any], a: Namespace) -> int:
    links = res.get("links") or []
    for link in links:
        target = link.get("path") or "(unresolved)"
        if link.get("heading"):
            target += f"#{link['heading']}"
        alias = f"  as {link['alias']!r}" if link.get("alias") else ""
        print(f"l.{link.get('line')}  [[{link.get('target')}]] -> {target}{alias}")
    if not links:
        print(f"{res.get('path', a.path)} links to nothing")
    return EXIT_OK


def s_backlinks(res: dict[str, Any], a: Namespace) -> int:
    links = res.get("backlinks") or []
    for link in links:
        heading = f"#{link['heading']}" if link.get("heading") else ""
        alias = f"  as {link['alias']!r}" if link.get("alias") else ""
        print(f"{link.get('path')}:{link.get('line')}  -> {heading or '(note)'}{alias}")
    if not links:
        print(f"nothing links to {res.get('path', a.path)}")
    return EXIT_OK
