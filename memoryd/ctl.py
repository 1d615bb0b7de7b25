"""memoryctl: the thin client. Standard library only, so it starts fast.

Each subcommand builds params, sends one JSON-RPC request over the daemon's Unix socket, and
prints the result (readable by default, --json for scripts).

Exit status: 0 ok; 1 the daemon answered with an error, or `status --check` found drift;
2 usage error; 3 the daemon is unreachable.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import socket
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3


def _version() -> str:
    init = Path(__file__).with_name("__init__.py")
    m = re.search(r'__version__\s*=\s*"([^"]+)"', init.read_text(encoding="utf-8"))
    return m.group(1) if m else "unknown"


def default_socket() -> Path:
    if os.environ.get("MEMORYD_SOCKET"):
        return Path(os.environ["MEMORYD_SOCKET"])
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "memoryd" / "memoryd.sock"
    return Path(tempfile.gettempdir()) / f"memoryd-{os.getuid()}" / "memoryd.sock"


class ClientError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class Unreachable(Exception):
    pass


class Client:
    def __init__(self, path: Path, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        hint = "Start it with 'memoryd run' or 'memoryd service install' (or pass --socket)."
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            try:
                sock.connect(str(self.path))
            except FileNotFoundError:
                raise Unreachable(
                    f"memoryd is not running (no socket at {self.path}). {hint}"
                ) from None
            except ConnectionRefusedError:
                raise Unreachable(
                    f"memoryd is not running (stale socket at {self.path}). {hint}"
                ) from None
            except PermissionError:
                raise Unreachable(f"permission denied connecting to {self.path}") from None
            except TimeoutError:
                raise Unreachable(f"timed out connecting to {self.path}") from None
            except OSError as exc:
                if exc.errno == errno.ENAMETOOLONG or isinstance(exc, ValueError):
                    raise Unreachable(f"socket path too long: {self.path}") from None
                raise Unreachable(f"cannot connect to {self.path}: {exc.strerror}") from None
            req = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
            sock.sendall(json.dumps(req).encode("utf-8") + b"\n")
            buf = bytearray()
            try:
                while not buf.endswith(b"\n"):
                    part = sock.recv(1 << 16)
                    if not part:
                        break
                    buf += part
            except TimeoutError:
                raise Unreachable(
                    f"memoryd did not answer {method} within {self.timeout:g}s (--timeout)"
                ) from None
        finally:
            sock.close()
        if not buf:
            raise Unreachable("memoryd closed the connection without answering")
        resp = json.loads(buf)
        if "error" in resp:
            err = resp["error"]
            raise ClientError(err.get("code", -32000), err.get("message", "error"), err.get("data"))
        return resp.get("result")


# --- output ------------------------------------------------------------------------------------


def _bold(text: str) -> str:
    if sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        return re.sub(r"\*\*(.+?)\*\*", "\033[1m\\1\033[0m", text)
    return text


def _where(hit: dict[str, Any]) -> str:
    if hit.get("kind") == "chunk":
        heading = " > ".join(hit.get("heading_path") or [])
        loc = f"{hit.get('path')}:{hit.get('start_line')}-{hit.get('end_line')}"
        return f"{loc}  {heading}".rstrip()
    tags = " ".join(f"#{t}" for t in hit.get("tags") or [])
    return f"memory {hit['id']} [{hit.get('type')}] {tags}".rstrip()


def print_search(result: dict[str, Any]) -> None:
    hits = result.get("hits", [])
    extra = f", corrected to: {result['corrected_query']}" if result.get("corrected_query") else ""
    print(f"{len(hits)} result(s), mode {result.get('mode')}, {result.get('took_ms')} ms{extra}")
    for rank, hit in enumerate(hits, start=1):
        print(f"{rank:>2}. {hit['score']:.3f}  #{hit['id']}  {_where(hit)}")
        snippet = " ".join(str(hit.get("snippet") or hit.get("content", "")).split())
        print(f"    {_bold(snippet)}")
        if hit.get("explain"):
            ex = ", ".join(f"{k}={v}" for k, v in hit["explain"].items() if v is not None)
            print(f"    explain: {ex}")
    if not hits:
        print("no results")


def print_record(rec: dict[str, Any]) -> None:
    for key in (
        "id",
        "kind",
        "type",
        "tags",
        "importance",
        "confidence",
        "namespace",
        "source",
        "context",
        "path",
        "heading_path",
        "start_line",
        "end_line",
        "created_at",
        "updated_at",
        "expires_at",
        "access_count",
        "last_accessed_at",
    ):
        if key in rec and rec[key] not in (None, [], ""):
            value = ", ".join(rec[key]) if isinstance(rec[key], list) else rec[key]
            print(f"{key + ':':<18}{value}")
    print()
    print(rec.get("content", ""))


def print_mapping(data: dict[str, Any], indent: int = 0) -> None:
    for key, value in data.items():
        if isinstance(value, dict):
            print(" " * indent + f"{key}:")
            print_mapping(value, indent + 2)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            print(" " * indent + f"{key}:")
            for item in value:
                print(" " * (indent + 2) + "- " + ", ".join(f"{k}={v}" for k, v in item.items()))
        else:
            print(" " * indent + f"{key + ':':<22}{value}")


# --- commands ----------------------------------------------------------------------------------


def _tags(value: str | None) -> list[str] | None:
    return [t.strip() for t in value.split(",") if t.strip()] if value else None


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None and v is not False}


def _filters(a: argparse.Namespace) -> dict[str, Any]:
    return _drop_none(
        {
            "type": getattr(a, "type", None),
            "tags": _tags(getattr(a, "tags", None)),
            "kind": getattr(a, "kind", None),
            "path": getattr(a, "path", None),
            "source": getattr(a, "source", None),
            "since": getattr(a, "since", None),
            "until": getattr(a, "until", None),
            "min_importance": getattr(a, "min_importance", None),
            "include_expired": getattr(a, "include_expired", False),
            "namespace": getattr(a, "namespace", None),
        }
    )


def cmd_add(c: Client, a: argparse.Namespace) -> int:
    text = sys.stdin.read() if a.text == "-" else a.text
    params = _drop_none(
        {
            "tier": a.tier,
            "triggers": _tags(a.triggers),
            "allow_secrets": a.allow_secrets,
            "skip_near_duplicates": getattr(a, "skip_near_duplicates", False),
            "content": text,
            "type": a.type,
            "tags": _tags(a.tags),
            "importance": a.importance,
            "confidence": a.confidence,
            "source": a.source,
            "context": a.context,
            "ttl": a.ttl,
            "expires_at": a.expires,
            "namespace": a.namespace,
        }
    )
    params["content"] = text
    res = c.call("add", params)
    if a.json:
        return _json(res)
    if not res.get("stored", True):
        print(f"not stored: near duplicate of {res['id']}")
    else:
        print(f"already stored as {res['id']}" if res["duplicate"] else f"added {res['id']}")
    for warning in res.get("warnings") or []:
        print(f"warning: {warning}", file=sys.stderr)
    return EXIT_OK


def cmd_search(c: Client, a: argparse.Namespace) -> int:
    if not a.query and not a.concepts:
        raise SystemExit("memoryctl: search needs a QUERY (or --concepts a,b)")
    params = {
        **({"query": a.query} if a.query else {}),
        **_filters(a),
        **_drop_none(
            {
                "limit": a.limit,
                "mode": a.mode,
                "explain": a.explain,
                "include_constitutional": a.constitutional,
                "max_tokens": a.max_tokens,
                "concepts": _tags(a.concepts) if a.concepts else None,
            }
        ),
    }
    if a.no_decay:
        params["use_decay"] = False
    res = c.call("search", params)
    if a.json:
        return _json(res)
    if "index" in res:
        print(
            f"{res['total']} match(es); full details for {len(res['hits'])} "
            f"({res['tokens_used']} tokens){', more in the index' if res['has_more'] else ''}"
        )
    print_search(res)
    if res.get("has_more"):
        for item in res["index"][len(res["hits"]) :]:
            print(f"    #{item['id']}  {item['summary']}")
    return EXIT_OK


def cmd_get(c: Client, a: argparse.Namespace) -> int:
    res = c.call("get", {"id": a.id})
    return _json(res) if a.json else (print_record(res) or EXIT_OK)


def cmd_list(c: Client, a: argparse.Namespace) -> int:
    res = c.call("list", {**_filters(a), "limit": a.limit, "offset": a.offset})
    if a.json:
        return _json(res)
    for rec in res["items"]:
        first = " ".join(rec["content"].split())[:100]
        print(f"#{rec['id']:<6} {rec['created_at']}  [{rec['type']}]  {first}")
    print(f"({len(res['items'])} of {res['total']})")
    return EXIT_OK


def cmd_update(c: Client, a: argparse.Namespace) -> int:
    params = _drop_none(
        {
            "id": a.id,
            "content": a.content,
            "type": a.type,
            "tags": _tags(a.tags),
            "importance": a.importance,
            "confidence": a.confidence,
            "source": a.source,
            "context": a.context,
            "ttl": a.ttl,
            "expires_at": a.expires,
            "tier": a.tier,
            "triggers": _tags(a.triggers),
            "allow_secrets": a.allow_secrets,
        }
    )
    if a.no_expiry:
        params["expires_at"] = None
    res = c.call("update", params)
    return _json(res) if a.json else (print(f"updated {res['id']}") or EXIT_OK)


def cmd_delete(c: Client, a: argparse.Namespace) -> int:
    selectors = _drop_none({"tag": a.tag, "namespace": a.namespace, "path": a.path})
    if selectors and a.ids:
        raise SystemExit("memoryctl: give IDs or one of --tag/--namespace/--path, not both")
    if selectors or a.dry_run:
        if len(selectors) != 1:
            raise SystemExit(
                "memoryctl: delete needs IDs, or exactly one of --tag/--namespace/--path"
            )
        res = c.call("delete", {**selectors, **({"dry_run": True} if a.dry_run else {})})
        if a.json:
            return _json(res)
        verb = "would delete" if a.dry_run else "deleted"
        listed = res.get("paths") or res.get("ids") or []
        print(f"{verb} {res['deleted']}: {', '.join(map(str, listed)) or '-'}")
        return EXIT_OK
    if not a.ids:
        raise SystemExit("memoryctl: delete needs IDs, or one of --tag/--namespace/--path")
    status = EXIT_OK
    for entry_id in a.ids:
        try:
            res = c.call("delete", {"id": entry_id})
        except ClientError as exc:
            print(f"memoryctl: {exc.message}", file=sys.stderr)
            status = EXIT_ERROR
            continue
        _json(res) if a.json else print(f"deleted {entry_id}")
    return status


def cmd_status(c: Client, a: argparse.Namespace) -> int:
    res = c.call("status", {"check": True} if a.check else {})
    if a.json:
        _json(res)
    else:
        print_mapping({k: v for k, v in res.items() if k != "drift"})
    drift = res.get("drift")
    if drift is not None:
        if not a.json:
            if drift["total"] == 0:
                print("\nno drift: the index matches the workspace")
            else:
                print(f"\ndrift: {drift['total']} problem(s)")
                for key in ("files_missing_from_index", "missing_on_disk", "stale"):
                    for path in drift.get(key, []):
                        print(f"  {key}: {path}")
                if drift.get("orphan_chunks"):
                    print(f"  orphan_chunks: {drift['orphan_chunks']}")
        return EXIT_ERROR if drift["total"] else EXIT_OK
    return EXIT_OK


def _simple(method: str, params: Callable[[argparse.Namespace], dict[str, Any]] = lambda a: {}):
    def run(c: Client, a: argparse.Namespace) -> int:
        res = c.call(method, params(a))
        return _json(res) if a.json else (print_mapping(res) or EXIT_OK)

    return run


def cmd_jobs(c: Client, a: argparse.Namespace) -> int:
    if a.action == "run":
        if not a.name:
            raise SystemExit("memoryctl: jobs run needs a job name (see `memoryctl jobs`)")
        res = c.call("jobs.run", {"name": a.name})
        if a.json:
            return _json(res)
        print_mapping(res)
        return EXIT_ERROR if res.get("error") else EXIT_OK
    res = c.call("jobs")
    if a.json:
        return _json(res)
    print(f"{'job':<14}{'every':>8}  {'last run':<22}{'result':<10}{'next run':<22}")
    for j in res["jobs"]:
        every = f"{j['interval_s']:g}s"
        result = (
            "running"
            if j.get("running")
            else ("error" if j.get("last_error") else ((j.get("last_result") and "ok") or "-"))
        )
        print(
            f"{j['name']:<14}{every:>8}  {j.get('last_run_at') or '-':<22}{result:<10}"
            f"{j.get('next_run_at') or '-':<22}"
        )
        if j.get("last_error"):
            print(f"{'':<14}  last error: {j['last_error']}")
    return EXIT_OK


def cmd_prune(c: Client, a: argparse.Namespace) -> int:
    res = c.call("prune", {"dry_run": True} if a.dry_run else {})
    if a.json:
        return _json(res)
    verb = "would prune" if a.dry_run else "pruned"
    print(f"{verb} {res['pruned']} memories (expired or deprecated)")
    for item in res["items"]:
        print(f"  #{item['id']} [{item['tier']}] {item['summary']}")
    return EXIT_OK


def cmd_session(c: Client, a: argparse.Namespace) -> int:
    res = c.call(
        "session_start", _drop_none({"max_tokens": a.max_tokens, "namespace": a.namespace})
    )
    if a.json:
        return _json(res)
    for m in res["memories"]:
        print(f"- {' '.join(m['content'].split())}  (#{m['id']})")
    more = f", {res['total'] - len(res['memories'])} more over budget" if res["has_more"] else ""
    print(f"({len(res['memories'])} constitutional memories, {res['tokens_used']} tokens{more})")
    return EXIT_OK


def cmd_triggers(c: Client, a: argparse.Namespace) -> int:
    prompt = sys.stdin.read() if a.prompt == "-" else a.prompt
    res = c.call("match_triggers", _drop_none({"prompt": prompt, "namespace": a.namespace}))
    if a.json:
        return _json(res)
    for m in res["memories"]:
        print(f"#{m['id']} ({', '.join(m['matched'])}): {' '.join(m['content'].split())}")
    if not res["memories"]:
        print("no trigger matched")
    return EXIT_OK


def cmd_validate(c: Client, a: argparse.Namespace) -> int:
    res = c.call("validate", {"id": a.id, "useful": not a.not_useful})
    if a.json:
        return _json(res)
    print(
        f"#{res['id']}: {res['useful_count']}/{res['validation_count']} useful, "
        f"confidence {res['confidence']}"
    )
    if res.get("promotion_candidate"):
        print(f"promotion candidate: memoryctl promote {res['id']}")
    return EXIT_OK


def cmd_candidates(c: Client, a: argparse.Namespace) -> int:
    res = c.call("promotion_candidates")
    if a.json:
        return _json(res)
    for m in res["candidates"]:
        print(
            f"#{m['id']} [{m['tier']}] {m['useful_count']}/{m['validation_count']} useful: "
            f"{' '.join(m['content'].split())[:80]}"
        )
    if not res["candidates"]:
        print("no promotion candidates")
    return EXIT_OK


def cmd_history(c: Client, a: argparse.Namespace) -> int:
    res = c.call("history", {"id": a.id})
    if a.json:
        return _json(res)
    for h in res["history"]:
        print(f"{h['at']}  {h['field']}: {json.dumps(h['old'])} -> {json.dumps(h['new'])}")
    if not res["history"]:
        print(f"no changes recorded for #{a.id}")
    return EXIT_OK


def cmd_checkpoint(c: Client, a: argparse.Namespace) -> int:
    if a.action == "list":
        res = c.call("checkpoint.list")
        if a.json:
            return _json(res)
        for cp in res["checkpoints"]:
            print(f"{cp['name']:<24}{cp['created_at']}  {cp['bytes']} bytes")
        return EXIT_OK
    if not a.name:
        raise SystemExit(f"memoryctl: checkpoint {a.action} needs a NAME")
    res = c.call(f"checkpoint.{a.action}", {"name": a.name})
    return _json(res) if a.json else (print_mapping(res) or EXIT_OK)


def cmd_export(c: Client, a: argparse.Namespace) -> int:
    res = c.call("export", _drop_none({"namespace": a.namespace, "vectors": a.vectors}))
    out = open(a.output, "w", encoding="utf-8") if a.output else sys.stdout  # noqa: SIM115
    try:
        for item in res["items"]:
            out.write(json.dumps(item, ensure_ascii=False) + "\n")
    finally:
        if a.output:
            out.close()
            print(f"exported {res['count']} memories to {a.output}", file=sys.stderr)
    return EXIT_OK


def cmd_import(c: Client, a: argparse.Namespace) -> int:
    text = sys.stdin.read() if a.file == "-" else Path(a.file).read_text(encoding="utf-8")
    items = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SystemExit(f"memoryctl: {a.file}:{n}: not JSON ({exc.msg})") from None
    totals = {"imported": 0, "skipped_duplicates": 0, "vectors": 0}
    batch: list[Any] = []
    size = 0

    def flush() -> None:
        nonlocal batch, size
        if batch:
            res = c.call("import", {"items": batch})
            for k in totals:
                totals[k] += res.get(k, 0)
        batch, size = [], 0

    for item in items:  # stay well under the daemon's request size limit
        cost = len(json.dumps(item))
        if batch and size + cost > 256 * 1024:
            flush()
        batch.append(item)
        size += cost
    flush()
    if a.json:
        return _json(totals)
    print(
        f"imported {totals['imported']}, skipped {totals['skipped_duplicates']} already "
        f"stored, {totals['vectors']} vectors"
    )
    return EXIT_OK


def _json(res: Any) -> int:
    print(json.dumps(res, indent=2, ensure_ascii=False))
    return EXIT_OK


# --- parser ------------------------------------------------------------------------------------

EPILOG = """\
examples:
  memoryctl add "We chose Postgres for JSONB" --type decision --tags db,arch
  echo "long text" | memoryctl add - --ttl 7d
  memoryctl search "what database did we pick?"
  memoryctl search deploy --tags ops --mode keyword -n 5 --explain
  memoryctl status --check        # exit 1 when the index drifted from the workspace
  memoryctl --json list --type decision

exit status: 0 ok; 1 the daemon answered with an error (or status --check found drift);
2 usage error; 3 memoryd is unreachable.
The socket is --socket, else $MEMORYD_SOCKET, else $XDG_RUNTIME_DIR/memoryd/memoryd.sock.
"""


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--socket",
        type=Path,
        default=argparse.SUPPRESS,
        help="daemon socket (default: $MEMORYD_SOCKET or the standard path)",
    )
    common.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print the raw result as JSON",
    )
    common.add_argument(
        "--timeout",
        type=float,
        default=argparse.SUPPRESS,
        help="seconds to wait for an answer (default 30; 600 for reindex/jobs)",
    )
    p = argparse.ArgumentParser(
        prog="memoryctl",
        parents=[common],
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Query and feed a running memoryd.",
    )
    p.add_argument("--version", action="version", version=f"memoryctl {_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def cmd(name: str, fn: Callable[..., int], helptext: str, aliases: list[str] | None = None):
        sp = sub.add_parser(
            name, parents=[common], help=helptext, description=helptext, aliases=aliases or []
        )
        sp.set_defaults(func=fn)
        return sp

    def filters(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--type", help="only this type (comma separated for several)")
        sp.add_argument("--tags", help="only entries with all of these tags (a,b)")
        sp.add_argument(
            "--kind", choices=["memory", "chunk", "all"], help="memories or file chunks"
        )
        sp.add_argument("--path", help="only chunks of files under this workspace path")
        sp.add_argument("--source", help="only this source")
        sp.add_argument("--since", help="created at or after (ISO date)")
        sp.add_argument("--until", help="created before (ISO date)")
        sp.add_argument("--min-importance", type=int, dest="min_importance")
        sp.add_argument("--include-expired", action="store_true", dest="include_expired")
        sp.add_argument("--namespace", help="only this namespace ('*' for all)")
        sp.add_argument("--tier", help="only these tiers (a,b)")
        sp.add_argument("--include-deprecated", action="store_true", dest="include_deprecated")

    def memory_fields(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--type", help="fact, preference, decision, ... (default fact)")
        sp.add_argument("--tags", help="comma separated tags")
        sp.add_argument("--importance", type=int, help="1-10 (default 5)")
        sp.add_argument("--confidence", type=float, help="0-1 (default 1)")
        sp.add_argument("--source", help="who or what said it")
        sp.add_argument("--context", help="free text context")
        sp.add_argument("--ttl", help="expire after this long: 30m, 12h, 7d")
        sp.add_argument("--expires", help="expire at this time (ISO 8601)")
        sp.add_argument(
            "--tier",
            choices=[
                "constitutional",
                "critical",
                "important",
                "normal",
                "temporary",
                "deprecated",
            ],
        )
        sp.add_argument("--triggers", help="comma separated phrases that recall this memory")
        sp.add_argument(
            "--allow-secrets",
            action="store_true",
            help="store it even if it looks like a credential",
        )

    sp = cmd("add", cmd_add, "store a memory (TEXT, or - to read stdin)")
    sp.add_argument("text", metavar="TEXT")
    memory_fields(sp)
    sp.add_argument("--namespace", help="agent or project namespace")
    sp.add_argument(
        "--skip-near-duplicates",
        action="store_true",
        help="do not store it when a nearly identical memory exists",
    )

    sp = cmd("search", cmd_search, "search memories and notes by keyword and meaning")
    sp.add_argument("query", metavar="QUERY", nargs="?")
    sp.add_argument("--concepts", help="2-5 comma separated concepts that must all match")
    sp.add_argument("--max-tokens", type=int, help="token budget: index of all + top details")
    sp.add_argument(
        "--constitutional", action="store_true", help="put the constitutional memories first"
    )
    sp.add_argument("--no-decay", action="store_true", help="rank without age decay")
    sp.add_argument("-n", "--limit", type=int)
    sp.add_argument("--mode", choices=["auto", "keyword", "vector", "hybrid", "fuzzy"])
    sp.add_argument("--explain", action="store_true", help="show each ranking component")
    filters(sp)

    sp = cmd("get", cmd_get, "show one memory or chunk")
    sp.add_argument("id", type=int)

    sp = cmd("list", cmd_list, "list memories, newest first")
    filters(sp)
    sp.add_argument("-n", "--limit", type=int, default=20)
    sp.add_argument("--offset", type=int, default=0)

    sp = cmd("update", cmd_update, "change a memory")
    sp.add_argument("id", type=int)
    sp.add_argument("--content")
    memory_fields(sp)
    sp.add_argument("--no-expiry", action="store_true", dest="no_expiry", help="never expire")

    sp = cmd(
        "delete",
        cmd_delete,
        "delete memories by id, tag, namespace, or a workspace path",
        aliases=["rm"],
    )
    sp.add_argument("ids", type=int, nargs="*", metavar="ID")
    sp.add_argument("--tag", help="every memory with this tag")
    sp.add_argument("--namespace", help="every memory in this namespace")
    sp.add_argument("--path", help="a workspace file or folder (moved to the trash)")
    sp.add_argument("--dry-run", action="store_true", help="say what would go")
    sp = cmd("prune", cmd_prune, "remove expired and deprecated memories")
    sp.add_argument("--dry-run", action="store_true", help="say what would go")
    sp = cmd("session", cmd_session, "the constitutional memories, within a token budget")
    sp.add_argument("--max-tokens", type=int)
    sp.add_argument("--namespace")
    sp = cmd("triggers", cmd_triggers, "memories whose trigger phrases occur in PROMPT (- = stdin)")
    sp.add_argument("prompt", metavar="PROMPT")
    sp.add_argument("--namespace")
    sp = cmd("validate", cmd_validate, "record that a memory was useful (or --not-useful)")
    sp.add_argument("id", type=int)
    sp.add_argument("--not-useful", action="store_true", dest="not_useful")
    cmd("candidates", cmd_candidates, "memories validated useful often enough to promote")
    sp = cmd(
        "promote",
        _simple("promote", lambda a: {"id": a.id, "tier": a.tier}),
        "raise a memory's tier (default critical)",
    )
    sp.add_argument("id", type=int)
    sp.add_argument("--tier", default="critical")
    sp = cmd("history", cmd_history, "every change of a memory's content, tier, importance, tags")
    sp.add_argument("id", type=int)
    sp = cmd("checkpoint", cmd_checkpoint, "create, list or restore a snapshot of the whole store")
    sp.add_argument("action", choices=["create", "list", "restore"])
    sp.add_argument("name", nargs="?")
    sp = cmd("export", cmd_export, "memories as JSON lines (stdout or -o FILE)")
    sp.add_argument("-o", "--output")
    sp.add_argument("--namespace")
    sp.add_argument("--vectors", action="store_true", help="include the vectors")
    sp = cmd("import", cmd_import, "import JSON lines from FILE (- = stdin); skips duplicates")
    sp.add_argument("file", metavar="FILE")

    sp = cmd(
        "stats",
        _simple("stats", lambda a: _drop_none({"namespace": a.namespace})),
        "counts: memories, files, chunks, vectors",
    )
    sp.add_argument("--namespace")
    sp = cmd("status", cmd_status, "daemon health; --check compares the index with the disk")
    sp.add_argument("--check", action="store_true", help="report drift; exit 1 when there is")
    sp = cmd(
        "reindex",
        _simple("reindex", lambda a: _drop_none({"path": a.path, "full": a.full})),
        "re-scan the workspace (or one path)",
    )
    sp.add_argument("path", nargs="?", metavar="PATH")
    sp.add_argument("--full", action="store_true", help="re-read and re-chunk every file")
    cmd("ping", _simple("ping"), "check that the daemon answers")
    sp = cmd("jobs", cmd_jobs, "list scheduled jobs, or `jobs run NAME` to run one now")
    sp.add_argument("action", nargs="?", choices=["list", "run"], default="list")
    sp.add_argument("name", nargs="?")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    for key, default in (("socket", None), ("json", False), ("timeout", None)):
        if not hasattr(args, key):
            setattr(args, key, default)
    slow = args.command in ("reindex", "jobs", "checkpoint", "export", "import") or (
        args.command == "status" and args.check
    )
    timeout = args.timeout or (600.0 if slow else 30.0)
    client = Client(args.socket or default_socket(), timeout)
    try:
        return int(args.func(client, args) or 0)
    except Unreachable as exc:
        print(f"memoryctl: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except ClientError as exc:
        print(f"memoryctl: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
