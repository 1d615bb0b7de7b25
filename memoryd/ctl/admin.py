"""The daemon and the workspace: status (and --watch), reindex with progress, jobs, checkpoints,
export/import, notes and links. Same conventions as handlers.py (p_ params, s_ show, r_ run)."""

from __future__ import annotations

import sys
import time

from memoryd.ctl.client import Client, ClientError, Unreachable, UsageError, encode_request
from memoryd.ctl.handlers import given, page_footer, read_text, stdin_text
from memoryd.ctl.output import (
    Progress,
    emit_json,
    flatten,
    index_part,
    one_line,
    print_drift,
    print_jobs,
    print_rows,
    progress_parts,
    status_summary,
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
        print(status_summary(res))
        print()
        index = dict(res.get("index") or {})
        skipped = index.pop("skipped", None) or []
        backups = res.get("migration_backups") or []
        hidden = ("jobs", "drift", "index", "migration_backups")
        details = {k: v for k, v in res.items() if k not in hidden}
        print_rows(flatten({**details, "index": index} if "index" in res else details))
        if skipped:
            print(f"\nskipped files ({len(skipped)}):")
            for item in skipped:
                print(f"  {item.get('path')}: {item.get('reason')}")
        if backups:
            print(
                f"\nmigration backups ({len(backups)}): the store before an upgrade, the way "
                "back to the earlier memoryd (docs/service.md#upgrading); delete once not needed"
            )
            for b in backups:
                print(f"  {b.get('path')}  {b.get('bytes')} bytes  {b.get('created_at')}")
        if res.get("jobs"):
            print("\njobs:")
            print_jobs(res["jobs"], indent="  ")
        if drift is not None:
            print_drift(drift)
    return EXIT_ERROR if drift and drift.get("total") else EXIT_OK


RESTART_WAIT_S = 60.0  # a watch waits this long for a daemon that stopped answering


def watch(c: Client, interval: float, as_json: bool) -> int:
    """Poll `status` until indexing and embedding are done: a bar on a terminal, plain lines
    (or one JSON object per poll with --json) elsewhere. A daemon that stops answering after
    the first poll (`systemctl --user restart`, an upgrade) is waited for, RESTART_WAIT_S."""
    import json

    progress = Progress(sys.stdout, every=0.0)
    gone: float | None = None  # when the daemon stopped answering (a restart, an upgrade)
    answered = False
    while True:
        try:
            res = c.call("status")
        except Unreachable as exc:
            now = time.monotonic()
            if gone is None and answered:  # it answered before: wait for it to be back
                gone = now
                note = f"waiting for memoryd to answer again (up to {RESTART_WAIT_S:g}s): {exc}"
                if as_json:
                    print(json.dumps({"busy": True, "waiting": str(exc)}), flush=True)
                else:
                    progress.update(note)
            if gone is None or now - gone > RESTART_WAIT_S:
                raise
            time.sleep(interval)
            continue
        gone, answered = None, True
        parts, busy = progress_parts(res)
        if not progress.fits("  ".join(parts)):  # an 80-column terminal: no bars, no note
            parts, busy = progress_parts(res, width=0)
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


REINDEX_GOES_ON = "memoryd goes on with the reindex (`memoryctl status --watch` follows it)"


def r_reindex(c: Client, a: Namespace) -> int:
    """The reindex call runs on a thread; meanwhile `status` is polled for index.progress."""
    params = given({"path": a.path, "full": a.full})
    if a.json or a.no_progress:
        try:
            res = c.call("reindex", params)
        except KeyboardInterrupt:
            raise KeyboardInterrupt(REINDEX_GOES_ON) from None
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
    try:
        worker.join(0.5)
        while worker.is_alive():
            try:
                prog = (poller.call("status").get("index") or {}).get("progress")
            except Exception:  # the poll is a courtesy; the reindex answer is what counts
                prog = None
            if isinstance(prog, dict) and prog.get("total"):
                progress.update(index_part("reindex", prog))
            worker.join(1.0)
    except KeyboardInterrupt:  # the daemon reindexes on without this client
        progress.finish()
        raise KeyboardInterrupt(REINDEX_GOES_ON) from None
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
    try:
        res = c.call("jobs.run", {"name": a.name})
    except KeyboardInterrupt:  # the daemon runs the job on without this client
        raise KeyboardInterrupt(
            f"memoryd goes on with the job (`memoryctl jobs` shows how {a.name} ended)"
        ) from None
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
        print(f"{cp['name']}\t{cp['created_at']}\t{cp['bytes']}")
    if not res["checkpoints"]:
        print(f"no {p_kind(a)['kind']}s", file=sys.stderr)
    return EXIT_OK


def p_kind(a: Namespace) -> dict[str, Any]:
    """--snapshot: the copy named is a scheduled snapshot (<data_dir>/snapshots/), not a
    checkpoint; list, restore and delete take it alike."""
    return {"kind": "snapshot" if getattr(a, "snapshot", False) else "checkpoint"}


def p_checkpoint_delete(a: Namespace) -> dict[str, Any]:
    return {"name": a.name, **p_kind(a)}


def s_checkpoint_delete(res: dict[str, Any], a: Namespace) -> int:
    print(f"deleted {res.get('kind', 'checkpoint')} {res.get('deleted', a.name)}")
    return EXIT_OK


def r_export(c: Client, a: Namespace) -> int:
    import json

    res = c.call("export", given({"namespace": a.namespace, "vectors": a.vectors}))
    from memoryd.ctl.output import utf8

    ascii = not a.output and not utf8()  # JSON Lines readable back in any locale
    lines = "".join(json.dumps(item, ensure_ascii=ascii) + "\n" for item in res["items"])
    if not a.output:
        sys.stdout.write(lines)
        return EXIT_OK
    from memoryd.ctl.outfile import write_private  # (only here: every start-up does without)

    write_private(a.output, lines)
    if a.json:  # what was written, as JSON: stdout is never empty under --json
        return emit_json({"count": res["count"], "path": a.output})
    print(f"exported {res['count']} memories to {a.output}", file=sys.stderr)
    return EXIT_OK


IMPORT_BATCH_BYTES = 256 * 1024  # well under the daemon's request size limit (1 MiB by default)
IMPORT_COUNTS = ("imported", "skipped_duplicates", "vectors")


def import_batches(text: str, name: str) -> list[tuple[int, list[Any]]]:
    """The file's items as (first line, items) batches under IMPORT_BATCH_BYTES. A batch holds
    consecutive lines only (a blank line starts a new one), so the daemon's `first_line + index`
    is the item's line in the file."""
    import json

    batches: list[tuple[int, list[Any]]] = []
    size, last = 0, -1
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            # as the daemon's errors name a line (`FILE: line N: ...`); the decoder's own "line 1
            # column 5" counted within this one line, which read as the file's first line
            where = f" at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise UsageError(
                f"{name}: line {n}: not JSON ({msg}{where}); nothing was imported"
            ) from None
        cost = len(encode_request(item))  # as sent: UTF-8
        if not batches or n != last + 1 or size + cost > IMPORT_BATCH_BYTES:
            batches.append((n, []))
            size = 0
        batches[-1][1].append(item)
        size, last = size + cost, n
    return batches


def r_import(c: Client, a: Namespace) -> int:
    """All or nothing across the whole file: every batch is checked with dry_run first, and
    only when all pass are they sent for real. Errors name the file's line."""
    name = a.file
    batches = import_batches(read_text(a.file), name)
    extra = given({"allow_secrets": a.allow_secrets})
    totals: dict[str, Any] = {k: 0 for k in IMPORT_COUNTS}
    renumbered: list[Any] = []
    for dry_run in (True, False):
        for first, items in batches:
            params = {"items": items, "first_line": first, "dry_run": dry_run, **extra}
            try:
                res = c.call("import", params)
            except KeyboardInterrupt:  # Ctrl-C: what is stored, and how to finish
                said = import_interrupted(name, dry_run, totals["imported"])
                raise KeyboardInterrupt(said) from None
            except ClientError as exc:
                done = totals["imported"]
                stored = (
                    f"{done} memories from earlier batches were imported before it"
                    if done
                    else "nothing was imported"
                )
                raise ClientError(exc.code, f"{name}: {exc.message}; {stored}", exc.data) from None
            if not dry_run:
                for key in IMPORT_COUNTS:
                    totals[key] += res.get(key, 0)
                renumbered.extend(res.get("renumbered") or [])
    totals["renumbered"] = renumbered
    if a.json:
        return emit_json(totals)
    print(
        f"imported {totals['imported']}, skipped {totals['skipped_duplicates']} already "
        f"stored, {totals['vectors']} vectors"
    )
    if renumbered:
        print(f"renumbered {len(renumbered)} (their id was taken):")
        for r in renumbered:
            print(f"  {r.get('from')} -> {r.get('to')}")
    return EXIT_OK


def import_interrupted(name: str, dry_run: bool, done: int) -> str:
    if dry_run:  # the checking pass: nothing is stored before every batch passed
        return "nothing was imported"
    return (
        f"{done} memories from earlier batches were imported, the batch being sent may be "
        f"too, the rest not; `memoryctl import {name}` again imports the rest (it skips "
        "memories already stored)"
    )


# --- notes and links ---------------------------------------------------------------------------


def p_path(a: Namespace) -> dict[str, Any]:
    return {"path": a.path}


def s_note_read(res: dict[str, Any], a: Namespace) -> int:
    content = res.get("content") or ""
    sys.stdout.write(content if content.endswith("\n") or not content else content + "\n")
    return EXIT_OK


def _note_content(a: Namespace) -> str:
    """The note's text: TEXT, --file or stdin. Empty text from a file or stdin is refused (a
    pipeline whose first command failed would otherwise empty the note); TEXT given as `""`
    is taken as meant."""
    if a.file is not None:
        if a.text is not None:
            raise UsageError("give the text or --file, not both")
        text, source = read_text(a.file, lenient=True), a.file
    elif a.text in (None, "-"):
        text, source = stdin_text(), "stdin"
    else:
        return str(a.text)
    if not text.strip():
        raise UsageError(f'{source} was empty: nothing written (to empty a note, give "" as TEXT)')
    return text


def p_note_write(a: Namespace) -> dict[str, Any]:
    return {
        "path": a.path,
        "content": _note_content(a),
        **given({"expected_sha256": a.if_sha256, "allow_secrets": a.allow_secrets}),
    }


def s_note_write(res: dict[str, Any], a: Namespace) -> int:
    verb = "created" if res.get("created") else "wrote"
    print(f"{verb} {res['path']} (sha256 {str(res.get('sha256'))[:12]})")
    if res.get("warning"):
        print(f"note: {res['warning']}")
    return EXIT_OK


def s_note_append(res: dict[str, Any], a: Namespace) -> int:
    print(f"appended to {res['path']} (sha256 {str(res.get('sha256'))[:12]})")
    if res.get("warning"):
        print(f"note: {res['warning']}")
    return EXIT_OK


def p_note_list(a: Namespace) -> dict[str, Any]:
    return given({"path": a.path, "limit": a.limit, "offset": a.offset, "cursor": a.cursor})


def s_note_list(res: dict[str, Any], a: Namespace) -> int:
    """One note a line, tab-separated (paths hold spaces): path, bytes, mtime, title, tags."""
    items = res.get("items") or []
    for item in items:
        tags = " ".join(f"#{t}" for t in item.get("tags") or [])
        title = one_line(item.get("title"), 60)
        print(f"{item['path']}\t{item.get('size')}\t{item.get('mtime')}\t{title}\t{tags}")
    if not items:
        print("no notes", file=sys.stderr)
    page_footer(res, a.offset or 0)
    return EXIT_OK


def p_note_move(a: Namespace) -> dict[str, Any]:
    return {"path": a.path, "new_path": a.new_path, **given({"expected_sha256": a.if_sha256})}


def s_note_move(res: dict[str, Any], a: Namespace) -> int:
    print(f"moved {res['path']} -> {res['new_path']}")
    return EXIT_OK


def as_written(link: dict[str, Any]) -> str:
    """A link the way the note has it: [[target#heading|alias]], [alias](target), ![[embed]];
    a markdown link's path decoded, in <> when it holds a space (`[a](<My note.md>)`), so the
    line still works pasted into a note."""
    target = (link.get("target") or "") + (f"#{link['heading']}" if link.get("heading") else "")
    alias = link.get("alias")
    if link.get("kind") == "markdown":  # a path with spaces in <>, as markdown needs it
        text = f"[{alias or ''}]({f'<{target}>' if any(c in target for c in ' ()') else target})"
    else:
        text = f"[[{target}{'|' + alias if alias else ''}]]"
    return "!" + text if link.get("embed") else text


def p_link_page(a: Namespace) -> dict[str, Any]:
    return {"path": a.path, **given({"limit": a.limit, "cursor": a.cursor})}


def more_links(res: dict[str, Any], key: str) -> None:
    """A page that is not the last: `(500 shown of 10000; next page: --cursor C)` on stderr
    (a whole list says nothing more, as before pages)."""
    if res.get("has_more"):
        page_footer(res, 0, key)


def s_links(res: dict[str, Any], a: Namespace) -> int:
    say_others(res, a.path)
    links = res.get("links") or []
    for link in links:
        where = link.get("path") or "(unresolved)"
        if link.get("path") and link.get("heading"):
            where += f"#{link['heading']}"
        print(f"l.{link.get('line')}  {as_written(link)} -> {where}")
    if not links:
        print(f"{res.get('path', a.path)} links to nothing", file=sys.stderr)
    more_links(res, "links")
    return EXIT_OK


def say_others(res: dict[str, Any], asked: object) -> None:
    """A name several notes share: which one answered, and the others (on stderr)."""
    if res.get("others"):
        print(
            f"{asked!s} names {len(res['others']) + 1} notes: showing {res.get('path')};"
            f" the others: {', '.join(res['others'])}",
            file=sys.stderr,
        )


def s_backlinks(res: dict[str, Any], a: Namespace) -> int:
    say_others(res, a.path)
    links = res.get("backlinks") or []
    for link in links:
        heading = f"#{link['heading']}" if link.get("heading") else ""
        alias = f"  as {link['alias']!r}" if link.get("alias") else ""
        print(f"{link.get('path')}:{link.get('line')}  -> {heading or '(note)'}{alias}")
    if not links:
        print(f"nothing links to {res.get('path', a.path)}", file=sys.stderr)
    more_links(res, "backlinks")
    return EXIT_OK
