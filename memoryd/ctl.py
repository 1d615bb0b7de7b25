"""memoryctl: the thin client for memoryd. Standard library only, so it starts fast.

Each subcommand builds params, sends one JSON-RPC request over the daemon's Unix socket and
prints the result: readable by default, the raw result with --json.

Exit status: 0 ok; 1 the daemon answered with an error, or `status --check` found drift;
2 usage error; 3 the daemon is unreachable.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import stat
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # `typing` is not free to import; annotations are never evaluated at run time
    from collections.abc import Callable, Mapping
    from typing import Any

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
DEFAULT_TIMEOUT, SLOW_TIMEOUT = 30.0, 600.0
START_HINT = "Start it with 'memoryd run' or 'memoryd service install'."
ELSEWHERE_HINT = "If it listens elsewhere, pass --socket PATH or set MEMORYD_SOCKET."


def version() -> str:
    """The package version, read from __init__.py beside this file (no memoryd import)."""
    try:
        init = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__init__.py")
        with open(init, encoding="utf-8") as f:
            m = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", f.read(), re.MULTILINE)
        if m:
            return m.group(1)
    except OSError:
        pass
    from importlib import metadata

    try:
        return metadata.version("memoryd")
    except metadata.PackageNotFoundError:
        return "unknown"


def socket_path(explicit: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """--socket, else $MEMORYD_SOCKET, else the daemon's default (memoryd.config's rule)."""
    env = os.environ if env is None else env
    chosen = explicit or env.get("MEMORYD_SOCKET")
    if chosen:
        return os.path.expanduser(chosen)
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "memoryd", "memoryd.sock")
    import tempfile  # only on this path: it pulls in random, shutil, ...

    return os.path.join(tempfile.gettempdir(), f"memoryd-{os.getuid()}", "memoryd.sock")


# --- client ------------------------------------------------------------------------------------


class ClientError(Exception):
    """The daemon answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class Unreachable(Exception):
    """No daemon answered on the socket; the message says why and what to do."""


class UsageError(Exception):
    """The arguments are valid one by one but not together (or an input file is unusable)."""


class Client:
    """One request per connection: connect, send one line, read one line."""

    def __init__(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.path = path
        self.timeout = timeout

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """The method's result; raises ClientError (the daemon said no) or Unreachable."""
        request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        with self.connect() as sock:
            try:
                sock.sendall(json.dumps(request).encode("ascii") + b"\n")
                line = _read_line(sock)
            except TimeoutError:
                raise Unreachable(
                    f"memoryd did not answer {method} within {self.timeout:g}s "
                    "(raise it with --timeout)"
                ) from None
            except OSError as exc:
                raise Unreachable(
                    f"lost the connection to memoryd during {method} "
                    f"({exc.strerror or exc}); see the daemon's log"
                ) from None
        if not line.strip():
            raise Unreachable(
                f"memoryd closed the connection without answering {method}; see the daemon's log"
            )
        try:
            response = json.loads(line)
        except ValueError:
            response = None
        if not isinstance(response, dict) or not ("result" in response or "error" in response):
            raise ClientError(-32700, f"memoryd sent an unreadable answer to {method}")
        error = response.get("error")
        if error is not None:
            if not isinstance(error, dict):
                error = {"message": str(error)}
            code = error.get("code")
            raise ClientError(
                code if isinstance(code, int) else -32603,
                str(error.get("message") or "unknown error"),
                error.get("data"),
            )
        return response["result"]

    def connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.path)
        except OSError as exc:
            sock.close()
            raise Unreachable(self._why(exc)) from None
        return sock

    def _why(self, exc: OSError) -> str:
        path = self.path
        if isinstance(exc, FileNotFoundError | NotADirectoryError):
            return f"memoryd is not running (no socket at {path}). {START_HINT} {ELSEWHERE_HINT}"
        if isinstance(exc, ConnectionRefusedError):
            if not _is_socket(path):
                return f"{path} is not a socket. {ELSEWHERE_HINT}"
            return (
                f"memoryd is not running (stale socket at {path}: nothing accepts connections). "
                f"{START_HINT}"
            )
        if isinstance(exc, PermissionError):
            return (
                f"permission denied connecting to {path} (memoryd accepts only the user it runs "
                "as; its socket folder is private)"
            )
        if isinstance(exc, TimeoutError):
            return (
                f"memoryd did not accept the connection on {path} within {self.timeout:g}s "
                "(busy or hung: see the daemon's log, or raise --timeout)"
            )
        if exc.errno is None and "too long" in str(exc):
            return (
                f"socket path too long ({len(path.encode())} bytes; Unix sockets allow about "
                f"104): {path}"
            )
        return f"cannot connect to memoryd at {path}: {exc.strerror or exc}"


def _read_line(sock: socket.socket) -> bytes:
    buf = bytearray()
    while True:
        part = sock.recv(1 << 16)
        if not part:
            return bytes(buf)
        buf += part
        if b"\n" in part:
            return bytes(buf[: buf.index(b"\n")])


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


# --- output ------------------------------------------------------------------------------------


def emit_json(result: Any) -> int:
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return EXIT_OK


def use_color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def highlight(text: str, color: bool) -> str:
    """Bold the **matched** terms on a terminal; elsewhere leave the markers as they are."""
    return re.sub(r"\*\*(.+?)\*\*", "\033[1m\\1\033[0m", text) if color else text


def text(value: Any) -> str:
    """One value as readable text."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
        return ", ".join(map(str, value)) or "-"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def one_line(value: Any, width: int = 0) -> str:
    line = " ".join(str(value or "").split())
    return line[: width - 1] + "…" if width and len(line) > width else line


def flatten(data: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Nested dicts as dotted keys: {"model": {"state": "ready"}} -> [("model.state", "ready")]."""
    rows: list[tuple[str, str]] = []
    for key, value in data.items():
        if isinstance(value, dict) and value:
            rows += flatten(value, f"{prefix}{key}.")
        else:
            rows.append((f"{prefix}{key}", text(value)))
    return rows


def print_rows(rows: list[tuple[str, str]], indent: str = "") -> None:
    """Aligned `key: value` lines."""
    width = max((len(k) for k, _ in rows), default=0) + 1
    for key, value in rows:
        print(f"{indent}{key + ':':<{width}} {value}")


def location(entry: dict[str, Any]) -> str:
    """`chunk  path:1-9  Heading > Sub` or `memory  [type]  #tag`."""
    if entry.get("kind") == "chunk":
        where = f"{entry.get('path')}:{entry.get('start_line')}-{entry.get('end_line')}"
        heading = " > ".join(entry.get("heading_path") or [])
        return f"chunk  {where}  {heading}".rstrip()
    tags = " ".join(f"#{t}" for t in entry.get("tags") or [])
    return f"memory  [{entry.get('type')}]  {tags}".rstrip()


def print_search(result: dict[str, Any]) -> None:
    hits = result.get("hits") or []
    header = f"mode {result.get('mode')}, {len(hits)} hit(s), {result.get('took_ms')} ms"
    if result.get("corrected_query"):
        header += f", searched for: {result['corrected_query']}"
    print(header)
    color = use_color()
    for rank, hit in enumerate(hits, start=1):
        score = "pinned" if hit.get("score") is None else f"{hit['score']:.3f}"
        print(f"{rank:>2}. {score}  #{hit['id']}  {location(hit)}")
        print(f"    {highlight(one_line(hit.get('snippet') or hit.get('content')), color)}")
        if hit.get("secrets"):
            print(f"    warning: looks like a secret ({text(hit['secrets'])})")
        if hit.get("explain"):
            parts = (f"{k}={text(v)}" for k, v in hit["explain"].items() if v is not None)
            print(f"    explain: {', '.join(parts)}")
    if not hits:
        print("no results")


RECORD_FIELDS = (
    "id",
    "kind",
    "type",
    "tier",
    "tags",
    "importance",
    "confidence",
    "namespace",
    "source",
    "context",
    "path",
    "start_line",
    "end_line",
    "heading_path",
    "triggers",
    "created_at",
    "updated_at",
    "expires_at",
    "access_count",
    "last_accessed_at",
)


def print_record(rec: dict[str, Any]) -> None:
    rows = []
    for key in RECORD_FIELDS:
        value = rec.get(key)
        if value in (None, [], ""):
            continue
        rows.append((key, " > ".join(value) if key == "heading_path" else text(value)))
    print_rows(rows)
    print()
    print(rec.get("content", ""))


def print_jobs(jobs: list[dict[str, Any]], indent: str = "") -> None:
    print(f"{indent}{'job':<14}{'every':>8}  {'last run':<22}{'result':<9}{'next run'}")
    for j in jobs:
        every = "-" if j.get("interval_s") is None else f"{j['interval_s']:g}s"
        if j.get("running"):
            result = "running"
        elif j.get("last_error"):
            result = "error"
        else:
            result = "ok" if j.get("last_run_at") else "-"
        print(
            f"{indent}{j['name']:<14}{every:>8}  {j.get('last_run_at') or '-':<22}{result:<9}"
            f"{j.get('next_run_at') or '-'}"
        )
        if j.get("last_error"):
            print(f"{indent}{'':<14}  last error: {j['last_error']}")


# --- params ------------------------------------------------------------------------------------


def split_list(value: str | None) -> list[str] | None:
    """'a, b,c' -> ['a', 'b', 'c']."""
    return [t.strip() for t in value.split(",") if t.strip()] if value else None


def time_value(value: str | None) -> str | float | None:
    """An ISO 8601 time as given, or unix seconds as a number."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return value


def given(params: dict[str, Any]) -> dict[str, Any]:
    """Only the params the user gave (None: not given; False: a flag that is off)."""
    return {k: v for k, v in params.items() if v is not None and v is not False}


def filter_params(a: argparse.Namespace) -> dict[str, Any]:
    return given(
        {
            "kind": a.kind,
            "type": a.type,
            "tags": split_list(a.tags),
            "source": a.source,
            "path": a.path,
            "since": time_value(a.since),
            "until": time_value(a.until),
            "min_importance": a.min_importance,
            "include_expired": a.include_expired,
            "namespace": a.namespace,
            "tier": a.tier,
            "include_deprecated": a.include_deprecated,
        }
    )


def memory_params(a: argparse.Namespace) -> dict[str, Any]:
    """The fields `add` and `update` share."""
    return given(
        {
            "type": a.type,
            "tags": split_list(a.tags),
            "importance": a.importance,
            "confidence": a.confidence,
            "source": a.source,
            "context": a.context,
            "ttl": a.ttl,
            "expires_at": time_value(a.expires),
            "tier": a.tier,
            "triggers": split_list(a.triggers),
            "allow_secrets": a.allow_secrets,
        }
    )


def read_text(name: str) -> str:
    """A file's text, or stdin's for '-'."""
    if name == "-":
        return sys.stdin.read()
    try:
        with open(name, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {name}: {getattr(exc, 'strerror', None) or exc}") from None


# --- commands: build params, call, print -------------------------------------------------------


def cmd_ping(c: Client, a: argparse.Namespace) -> int:
    res = c.call("ping")
    if a.json:
        return emit_json(res)
    print(f"memoryd {res.get('version')} is answering on {c.path}")
    return EXIT_OK


def cmd_add(c: Client, a: argparse.Namespace) -> int:
    content = sys.stdin.read() if a.text == "-" else a.text
    params = {
        "content": content,
        **memory_params(a),
        **given({"namespace": a.namespace, "skip_near_duplicates": a.skip_near_duplicates}),
    }
    res = c.call("add", params)
    if a.json:
        return emit_json(res)
    if res.get("stored", True) is False:
        print(f"not stored: near duplicate of {res['id']}")
    elif res.get("duplicate"):
        print(f"already stored as {res['id']}")
    else:
        print(f"added {res['id']}")
    for warning in res.get("warnings") or []:
        print(f"warning: {warning}", file=sys.stderr)
    return EXIT_OK


def cmd_search(c: Client, a: argparse.Namespace) -> int:
    if not a.query and not a.concepts:
        raise UsageError("search needs a QUERY (or --concepts a,b)")
    params = {
        **given({"query": a.query}),
        **filter_params(a),
        **given(
            {
                "limit": a.limit,
                "mode": a.mode,
                "explain": a.explain,
                "concepts": split_list(a.concepts),
                "max_tokens": a.max_tokens,
                "include_constitutional": a.constitutional,
            }
        ),
    }
    if a.no_decay:
        params["use_decay"] = False
    res = c.call("search", params)
    if a.json:
        return emit_json(res)
    if "index" in res:
        more = ", more in the index below" if res.get("has_more") else ""
        print(
            f"{res['total']} match(es); full details for {len(res['hits'])} "
            f"({res['tokens_used']} tokens){more}"
        )
    print_search(res)
    if res.get("has_more"):
        for item in res["index"][len(res["hits"]) :]:
            print(f"    #{item['id']}  {item['summary']}")
    return EXIT_OK


def cmd_get(c: Client, a: argparse.Namespace) -> int:
    res = c.call("get", {"id": a.id})
    if a.json:
        return emit_json(res)
    print_record(res)
    return EXIT_OK


def cmd_list(c: Client, a: argparse.Namespace) -> int:
    res = c.call("list", {**filter_params(a), "limit": a.limit, "offset": a.offset})
    if a.json:
        return emit_json(res)
    items = res.get("items") or []
    for rec in items:
        print(f"#{rec['id']:<6} {rec.get('created_at')}  {location(rec)}")
        print(f"        {one_line(rec.get('content'), 100)}")
    if not items:
        print("nothing found")
    shown = a.offset + len(items)
    more = f"; next page: --offset {shown}" if shown < res["total"] else ""
    print(f"({len(items)} shown of {res['total']}{more})")
    return EXIT_OK


def cmd_update(c: Client, a: argparse.Namespace) -> int:
    params = {"id": a.id, **given({"content": a.content}), **memory_params(a)}
    if a.no_expiry:
        params["expires_at"] = None
    res = c.call("update", params)
    if a.json:
        return emit_json(res)
    print(f"updated {res['id']}")
    return EXIT_OK


def cmd_delete(c: Client, a: argparse.Namespace) -> int:
    selectors = given({"tag": a.tag, "namespace": a.namespace, "path": a.path})
    if len(selectors) + bool(a.ids) != 1:
        raise UsageError("delete needs IDs, or exactly one of --tag, --namespace, --path")
    if selectors:
        res = c.call("delete", {**selectors, **given({"dry_run": a.dry_run})})
        if a.json:
            return emit_json(res)
        listed = res.get("paths") or res.get("ids") or []
        verb = "would delete" if a.dry_run else "deleted"
        print(f"{verb} {res['deleted']}: {', '.join(map(str, listed)) or '-'}")
        if res.get("trash") and res.get("paths") and not a.dry_run:
            print(f"moved to {res['trash']}")
        return EXIT_OK
    status, results = EXIT_OK, []
    for entry_id in a.ids:
        try:
            res = c.call("delete", {"id": entry_id, **given({"dry_run": a.dry_run})})
        except ClientError as exc:
            print(f"memoryctl: {exc.message}", file=sys.stderr)
            status = EXIT_ERROR
            continue
        results.append(res)
        if not a.json:
            print(f"{'would delete' if a.dry_run else 'deleted'} {entry_id}")
    if a.json:
        emit_json(results[0] if len(a.ids) == 1 and results else results)
    return status


def cmd_stats(c: Client, a: argparse.Namespace) -> int:
    res = c.call("stats", given({"namespace": a.namespace}))
    if a.json:
        return emit_json(res)
    print_rows(flatten(res))
    return EXIT_OK


def cmd_status(c: Client, a: argparse.Namespace) -> int:
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


def print_drift(drift: dict[str, Any]) -> None:
    if not drift.get("total"):
        print("\nno drift: the index matches the workspace")
        return
    print(f"\ndrift: {drift['total']} problem(s) (fix with: memoryctl reindex)")
    for key in ("files_missing_from_index", "stale", "missing_on_disk"):
        for path in drift.get(key) or []:
            print(f"  {key}: {path}")
    if drift.get("orphan_chunks"):
        print(f"  orphan_chunks: {drift['orphan_chunks']}")


def cmd_reindex(c: Client, a: argparse.Namespace) -> int:
    res = c.call("reindex", given({"path": a.path, "full": a.full}))
    if a.json:
        return emit_json(res)
    counts = ("indexed", "unchanged", "deleted", "moved", "skipped")
    print(", ".join(f"{k} {res.get(k, 0)}" for k in counts) + f" in {res.get('took_ms')} ms")
    for error in res.get("errors") or []:
        print(f"  error: {error}")
    return EXIT_OK


def cmd_jobs(c: Client, a: argparse.Namespace) -> int:
    res = c.call("jobs")
    if a.json:
        return emit_json(res)
    print_jobs(res.get("jobs") or [])
    return EXIT_OK


def cmd_jobs_run(c: Client, a: argparse.Namespace) -> int:
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


def cmd_prune(c: Client, a: argparse.Namespace) -> int:
    res = c.call("prune", given({"dry_run": a.dry_run}))
    if a.json:
        return emit_json(res)
    verb = "would prune" if a.dry_run else "pruned"
    print(f"{verb} {res['pruned']} memories (expired or deprecated)")
    for item in res.get("items") or []:
        print(f"  #{item['id']} [{item['tier']}] {item['summary']}")
    return EXIT_OK


def cmd_session(c: Client, a: argparse.Namespace) -> int:
    res = c.call("session_start", given({"max_tokens": a.max_tokens, "namespace": a.namespace}))
    if a.json:
        return emit_json(res)
    for m in res["memories"]:
        print(f"- {one_line(m['content'])}  (#{m['id']})")
    more = f", {res['total'] - len(res['memories'])} more over budget" if res["has_more"] else ""
    print(f"({len(res['memories'])} constitutional memories, {res['tokens_used']} tokens{more})")
    return EXIT_OK


def cmd_triggers(c: Client, a: argparse.Namespace) -> int:
    prompt = sys.stdin.read() if a.prompt == "-" else a.prompt
    res = c.call("match_triggers", given({"prompt": prompt, "namespace": a.namespace}))
    if a.json:
        return emit_json(res)
    for m in res["memories"]:
        print(f"#{m['id']} ({', '.join(m['matched'])}): {one_line(m['content'])}")
    if not res["memories"]:
        print("no trigger matched")
    return EXIT_OK


def cmd_validate(c: Client, a: argparse.Namespace) -> int:
    res = c.call("validate", {"id": a.id, "useful": not a.not_useful})
    if a.json:
        return emit_json(res)
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
        return emit_json(res)
    for m in res["candidates"]:
        print(
            f"#{m['id']} [{m['tier']}] {m['useful_count']}/{m['validation_count']} useful: "
            f"{one_line(m['content'], 80)}"
        )
    if not res["candidates"]:
        print("no promotion candidates")
    return EXIT_OK


def cmd_promote(c: Client, a: argparse.Namespace) -> int:
    res = c.call("promote", {"id": a.id, "tier": a.tier})
    if a.json:
        return emit_json(res)
    print(f"#{res['id']} is now {res.get('tier', a.tier)}")
    return EXIT_OK


def cmd_history(c: Client, a: argparse.Namespace) -> int:
    res = c.call("history", {"id": a.id})
    if a.json:
        return emit_json(res)
    for h in res["history"]:
        print(f"{h['at']}  {h['field']}: {json.dumps(h['old'])} -> {json.dumps(h['new'])}")
    if not res["history"]:
        print(f"no changes recorded for #{a.id}")
    return EXIT_OK


def cmd_checkpoint_list(c: Client, a: argparse.Namespace) -> int:
    res = c.call("checkpoint.list")
    if a.json:
        return emit_json(res)
    for cp in res["checkpoints"]:
        print(f"{cp['name']:<24}{cp['created_at']}  {cp['bytes']} bytes")
    if not res["checkpoints"]:
        print("no checkpoints")
    return EXIT_OK


def cmd_checkpoint(c: Client, a: argparse.Namespace) -> int:
    """checkpoint create NAME / checkpoint restore NAME."""
    res = c.call(f"checkpoint.{a.action}", {"name": a.name})
    if a.json:
        return emit_json(res)
    print_rows(flatten(res))
    return EXIT_OK


def cmd_export(c: Client, a: argparse.Namespace) -> int:
    res = c.call("export", given({"namespace": a.namespace, "vectors": a.vectors}))
    lines = "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in res["items"])
    if not a.output:
        sys.stdout.write(lines)
        return EXIT_OK
    try:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(lines)
    except OSError as exc:
        raise UsageError(f"cannot write {a.output}: {exc.strerror or exc}") from None
    print(f"exported {res['count']} memories to {a.output}", file=sys.stderr)
    return EXIT_OK


IMPORT_BATCH_BYTES = 256 * 1024  # well under the daemon's request size limit (1 MiB by default)


def cmd_import(c: Client, a: argparse.Namespace) -> int:
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


# --- parser ------------------------------------------------------------------------------------

EPILOG = """\
examples:
  memoryctl add "We chose Postgres for JSONB" --type decision --tags db,arch
  echo "long text" | memoryctl add - --ttl 7d
  memoryctl search "what database did we pick?"
  memoryctl search deploy --tags ops --mode keyword -n 5 --explain
  memoryctl --json list --type decision
  memoryctl status --check        # exit 1 when the index drifted from the workspace
  memoryctl jobs run reconcile

exit status:
  0  ok
  1  the daemon answered with an error, or `status --check` found drift
  2  usage error (bad arguments, or an input file that cannot be read)
  3  memoryd is unreachable: no socket, stale socket, permission denied, or timeout

The socket is --socket, else $MEMORYD_SOCKET, else $XDG_RUNTIME_DIR/memoryd/memoryd.sock
(<temp dir>/memoryd-<uid>/memoryd.sock when XDG_RUNTIME_DIR is unset).
Run `memoryctl COMMAND --help` for a command's options.
"""

TIERS = ("constitutional", "critical", "important", "normal", "temporary", "deprecated")


def _positive(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 1e6:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value!r}")
    return seconds


def _common_options() -> argparse.ArgumentParser:
    """--socket, --json, --timeout: accepted before or after the command (SUPPRESS keeps a
    value given before the command from being reset by the subcommand's default)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--socket",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="the daemon's socket (default: $MEMORYD_SOCKET, else the standard path)",
    )
    common.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print the raw result as JSON (for scripts)",
    )
    common.add_argument(
        "--timeout",
        type=_positive,
        default=argparse.SUPPRESS,
        metavar="S",
        help="seconds to wait for the answer (default 30; 600 for reindex, jobs run, "
        "status --check, checkpoint, export, import)",
    )
    return common


def _filter_options(sp: argparse.ArgumentParser) -> None:
    g = sp.add_argument_group("filters")
    g.add_argument("--kind", choices=["memory", "chunk", "all"], help="memories or file chunks")
    g.add_argument("--type", help="only this type (a,b for several)")
    g.add_argument("--tags", help="only entries carrying all of these tags (a,b)")
    g.add_argument("--source", help="only this source")
    g.add_argument("--path", metavar="PREFIX", help="only chunks of files under this path")
    g.add_argument("--since", metavar="DATE", help="created at or after (ISO 8601 or unix time)")
    g.add_argument("--until", metavar="DATE", help="created before (ISO 8601 or unix time)")
    g.add_argument("--min-importance", type=int, metavar="N", help="importance at least N")
    g.add_argument("--include-expired", action="store_true", help="expired memories too")
    g.add_argument("--namespace", metavar="NS", help="only this namespace ('*' for all)")
    g.add_argument("--tier", help="only these tiers (a,b)")
    g.add_argument("--include-deprecated", action="store_true", help="deprecated memories too")


def _memory_options(sp: argparse.ArgumentParser, *, update: bool = False) -> None:
    sp.add_argument("--type", help="fact, preference, decision, ... (default fact)")
    sp.add_argument("--tags", help="comma separated tags" + (" (replaces them)" if update else ""))
    sp.add_argument("--importance", type=int, metavar="N", help="1-10 (default 5)")
    sp.add_argument("--confidence", type=float, metavar="F", help="0-1 (default 1)")
    sp.add_argument("--source", help="who or what said it")
    sp.add_argument("--context", help="free text context")
    expiry = sp.add_mutually_exclusive_group()
    expiry.add_argument("--ttl", help="expire after this long: 30m, 12h, 7d, or seconds")
    expiry.add_argument("--expires", metavar="TIME", help="expire at (ISO 8601 or unix time)")
    if update:
        expiry.add_argument("--no-expiry", action="store_true", help="never expire")
    sp.add_argument("--tier", choices=TIERS, help="lifecycle tier (default normal)")
    sp.add_argument("--triggers", help="comma separated phrases that recall this memory")
    sp.add_argument(
        "--allow-secrets", action="store_true", help="store it even if it looks like a credential"
    )


def build_parser() -> argparse.ArgumentParser:
    common = _common_options()
    p = argparse.ArgumentParser(
        prog="memoryctl",
        parents=[common],
        description="Query and feed a running memoryd.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"memoryctl {version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    def cmd(
        name: str,
        fn: Callable[[Client, argparse.Namespace], int],
        helptext: str,
        *examples: str,
        slow: bool = False,
        parent: Any = sub,
        aliases: tuple[str, ...] = (),
    ) -> argparse.ArgumentParser:
        sp = parent.add_parser(
            name,
            parents=[common],
            help=helptext,
            description=helptext,
            aliases=list(aliases),
            epilog="examples:\n" + "\n".join(f"  {e}" for e in examples) if examples else None,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sp.set_defaults(func=fn, slow=slow)
        return sp

    sp = cmd(
        "add",
        cmd_add,
        "store a memory (TEXT, or - to read it from stdin)",
        'memoryctl add "Deploys go out on Tuesdays" --type fact --tags ops',
        "git log -1 --format=%B | memoryctl add - --source git --ttl 30d",
    )
    sp.add_argument("text", metavar="TEXT")
    _memory_options(sp)
    sp.add_argument("--namespace", metavar="NS", help="agent or project namespace")
    sp.add_argument(
        "--skip-near-duplicates",
        action="store_true",
        help="do not store it when a nearly identical memory exists",
    )

    sp = cmd(
        "search",
        cmd_search,
        "search memories and notes by keyword and meaning",
        'memoryctl search "how do we deploy?"',
        "memoryctl search auth --kind chunk --path projects/api -n 5",
        'memoryctl search "postgres OR mysql" --mode keyword --explain',
        "memoryctl search -- -draft notes      # a query that starts with '-'",
    )
    sp.add_argument("query", metavar="QUERY", nargs="?", help='words, "a phrase", pre*, a OR b')
    sp.add_argument("-n", "--limit", type=int, metavar="N", help="at most N hits")
    sp.add_argument("--mode", choices=["auto", "keyword", "vector", "hybrid", "fuzzy"])
    sp.add_argument("--explain", action="store_true", help="show each ranking component")
    sp.add_argument("--concepts", help="2-5 comma separated concepts that must all match")
    sp.add_argument("--max-tokens", type=int, metavar="N", help="token budget for the details")
    sp.add_argument(
        "--constitutional", action="store_true", help="put the constitutional memories first"
    )
    sp.add_argument("--no-decay", action="store_true", help="rank without age decay")
    _filter_options(sp)

    sp = cmd("get", cmd_get, "show one memory or chunk", "memoryctl get 42")
    sp.add_argument("id", type=int, metavar="ID")

    sp = cmd(
        "list",
        cmd_list,
        "list memories, newest first (--kind all for file chunks too)",
        "memoryctl list --type decision --since 2026-01-01",
        "memoryctl list --kind chunk --path notes -n 50 --offset 50",
    )
    _filter_options(sp)
    sp.add_argument("-n", "--limit", type=int, default=20, metavar="N", help="default 20")
    sp.add_argument("--offset", type=int, default=0, metavar="N", help="skip the first N")

    sp = cmd(
        "update",
        cmd_update,
        "change a memory's content or fields",
        "memoryctl update 42 --importance 8 --tags db,arch",
        "memoryctl update 42 --no-expiry",
    )
    sp.add_argument("id", type=int, metavar="ID")
    sp.add_argument("--content", help="new text")
    _memory_options(sp, update=True)

    sp = cmd(
        "delete",
        cmd_delete,
        "delete memories by id, or by tag, namespace or workspace path",
        "memoryctl rm 41 42",
        "memoryctl delete --tag scratch --dry-run",
        aliases=("rm",),
    )
    sp.add_argument("ids", type=int, nargs="*", metavar="ID")
    sp.add_argument("--tag", help="every memory with this tag")
    sp.add_argument("--namespace", metavar="NS", help="every memory in this namespace")
    sp.add_argument("--path", help="a workspace file or folder (moved to the trash)")
    sp.add_argument("--dry-run", action="store_true", help="only say what would go")

    sp = cmd("stats", cmd_stats, "counts: memories, files, chunks, vectors, by type")
    sp.add_argument("--namespace", metavar="NS", help="count only this namespace's memories")

    sp = cmd(
        "status",
        cmd_status,
        "daemon health; --check compares the index with the files on disk",
        "memoryctl status",
        'memoryctl status --check || echo "index drifted"',
    )
    sp.add_argument("--check", action="store_true", help="list drift; exit 1 when there is any")

    sp = cmd(
        "reindex",
        cmd_reindex,
        "re-scan the workspace (or one file or folder)",
        "memoryctl reindex",
        "memoryctl reindex notes/projects --full",
        slow=True,
    )
    sp.add_argument("path", nargs="?", metavar="PATH", help="workspace-relative file or folder")
    sp.add_argument("--full", action="store_true", help="re-read and re-chunk every file")

    cmd("ping", cmd_ping, "check that the daemon answers")

    sp = cmd(
        "jobs",
        cmd_jobs,
        "scheduled jobs with their last and next run; `jobs run NAME` runs one now",
        "memoryctl jobs",
        "memoryctl jobs run reconcile",
    )
    jobs = sp.add_subparsers(dest="action", metavar="ACTION", title="actions")
    cmd("list", cmd_jobs, "list the jobs (the default)", parent=jobs)
    sp = cmd("run", cmd_jobs_run, "run a job now and wait for it", parent=jobs, slow=True)
    sp.add_argument("name", metavar="NAME")

    sp = cmd("prune", cmd_prune, "remove expired and deprecated memories")
    sp.add_argument("--dry-run", action="store_true", help="only say what would go")
    sp = cmd("session", cmd_session, "the constitutional memories, within a token budget")
    sp.add_argument("--max-tokens", type=int, metavar="N")
    sp.add_argument("--namespace", metavar="NS")
    sp = cmd("triggers", cmd_triggers, "memories whose trigger phrases occur in PROMPT (- = stdin)")
    sp.add_argument("prompt", metavar="PROMPT")
    sp.add_argument("--namespace", metavar="NS")
    sp = cmd("validate", cmd_validate, "record that a memory was useful (or --not-useful)")
    sp.add_argument("id", type=int, metavar="ID")
    sp.add_argument("--not-useful", action="store_true")
    cmd("candidates", cmd_candidates, "memories validated useful often enough to promote")
    sp = cmd("promote", cmd_promote, "raise a memory's tier (default critical)")
    sp.add_argument("id", type=int, metavar="ID")
    sp.add_argument("--tier", choices=TIERS, default="critical")
    sp = cmd("history", cmd_history, "every recorded change of a memory, with old and new values")
    sp.add_argument("id", type=int, metavar="ID")

    sp = cmd(
        "checkpoint",
        cmd_checkpoint_list,
        "create, list or restore a snapshot of the whole store",
        "memoryctl checkpoint create before-cleanup",
        "memoryctl checkpoint restore before-cleanup",
    )
    checkpoint = sp.add_subparsers(dest="action", metavar="ACTION", title="actions")
    for action, helptext in (("create", "snapshot the store"), ("restore", "go back to one")):
        cmd(action, cmd_checkpoint, helptext, parent=checkpoint, slow=True).add_argument(
            "name", metavar="NAME"
        )
    cmd("list", cmd_checkpoint_list, "list the checkpoints (the default)", parent=checkpoint)

    sp = cmd(
        "export",
        cmd_export,
        "memories as JSON lines (stdout or -o FILE)",
        "memoryctl export -o memories.jsonl",
        slow=True,
    )
    sp.add_argument("-o", "--output", metavar="FILE")
    sp.add_argument("--namespace", metavar="NS")
    sp.add_argument("--vectors", action="store_true", help="include the vectors")
    sp = cmd(
        "import",
        cmd_import,
        "import JSON lines from FILE (- = stdin); skips memories already stored",
        "memoryctl import memories.jsonl",
        slow=True,
    )
    sp.add_argument("file", metavar="FILE")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    args.json = getattr(args, "json", False)
    slow = args.slow or getattr(args, "check", False)
    timeout = getattr(args, "timeout", None) or (SLOW_TIMEOUT if slow else DEFAULT_TIMEOUT)
    client = Client(socket_path(getattr(args, "socket", None)), timeout)
    try:
        return args.func(client, args)
    except UsageError as exc:
        print(f"memoryctl: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ClientError as exc:
        print(f"memoryctl: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except Unreachable as exc:
        print(f"memoryctl: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except BrokenPipeError:  # stdout closed early (`memoryctl list | head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
