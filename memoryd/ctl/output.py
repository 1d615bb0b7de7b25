"""Readable output: values as text, aligned rows, search hits, records, jobs, progress bars."""

from __future__ import annotations

import sys
import time
import unicodedata

from memoryd.ctl import fsenv

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

EXIT_OK = 0
MAX_QUERY_TERMS = 64  # memoryd.search.ftsquery.MAX_TERMS (not imported: memoryctl's start-up)


def emit_json(result: Any) -> int:
    import json  # only here: importing json costs more than a whole search

    # text as it is where stdout takes UTF-8; elsewhere (LC_ALL=C with PYTHONUTF8=0,
    # PYTHONIOENCODING=ascii) \u escapes: valid JSON still, not the codec's \xe9
    print(json.dumps(result, indent=2, ensure_ascii=not utf8()))
    return EXIT_OK


def utf8() -> bool:
    """Whether stdout takes UTF-8 (else JSON is written as ASCII with \\u escapes, which every
    reader decodes, instead of text the locale's codec can only backslash-escape)."""
    encoding = (getattr(sys.stdout, "encoding", None) or "utf-8").lower().replace("-", "")
    return encoding in ("utf8", "utf8sig")


def use_color() -> bool:
    """Bold on a terminal that can show it: never with NO_COLOR (no-color.org), always with
    FORCE_COLOR (a pager that reads escapes, `| less -R`), else where `escapes` says."""
    env = fsenv.environ()
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    return escapes(sys.stdout)


def escapes(stream: Any) -> bool:
    """Whether this stream shows terminal escapes (bold; a progress line redrawn in place with
    \r and erase-line): a terminal whose TERM names one, not TERM=dumb (Emacs' shell, some CI
    logs) nor TERM unset or empty (`env -i`, cron, a service's pty), which show escapes as they
    are; as git reads TERM. The daemon's terminal log follows the same rule (core/logsetup)."""
    term = fsenv.environ().get("TERM") or "dumb"
    return bool(stream.isatty()) and term != "dumb"


def redraws(stream: Any) -> bool:
    """Whether a progress line is redrawn in place on this stream (`escapes`)."""
    return escapes(stream)


def highlight(text: str, color: bool, ranges: Any = None) -> str:
    """Bold the matched [start, end) ranges of a snippet on a terminal; elsewhere, or without
    ranges, the plain text as it is."""
    if not color or not isinstance(ranges, list):
        return text
    out: list[str] = []
    pos = 0
    for r in sorted(r for r in ranges if isinstance(r, list) and len(r) == 2):
        start, end = int(r[0]), int(r[1])
        if start < pos or end > len(text) or start >= end:
            continue
        out += [text[pos:start], "\033[1m", text[start:end], "\033[0m"]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def text(value: Any) -> str:
    """One value as readable text."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
        return ", ".join(map(str, value)) or "-"
    if isinstance(value, dict | list):
        import json

        return json.dumps(value, ensure_ascii=False)
    return str(value)


def one_line(value: Any, width: int = 0) -> str:
    return clip(" ".join(str(value or "").split()), width)


# memoryd/text/clip.py's, as written there (memoryctl imports nothing of memoryd's packages)
def _inside_grapheme(text: str, i: int) -> bool:
    """Whether a cut before text[i] falls inside a grapheme."""
    ch, prev = text[i], text[i - 1]
    o = ord(ch)
    if ch == "\u200d" or prev == "\u200d" or unicodedata.category(ch) in ("Mn", "Mc", "Me"):
        return True
    if 0xFE00 <= o <= 0xFE0F or 0x1F3FB <= o <= 0x1F3FF or 0xE0020 <= o <= 0xE007F:
        return True  # variation selectors, skin tones, a tag flag's tags
    if unicodedata.combining(prev) == 9 and unicodedata.category(ch) == "Lo":
        return True  # a virama stacks the next letter (क्ष)
    if 0x1F1E6 <= o <= 0x1F1FF:  # a regional indicator: flags pair them from the run's start
        run = 0
        while i - run - 1 >= 0 and 0x1F1E6 <= ord(text[i - run - 1]) <= 0x1F1FF:
            run += 1
        return run % 2 == 1
    return False


def clip(text: str, width: int) -> str:
    """text, or its start and "…" within `width` characters, cut between graphemes."""
    if width <= 0 or len(text) <= width:
        return text
    cut = width - 1
    while 0 < cut < len(text) and _inside_grapheme(text, cut):
        cut -= 1
    return text[:cut] + "…"  # ("…" alone: no grapheme fits)


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


def location(entry: dict[str, Any], sep: str = "  ") -> str:
    """`chunk  path:1-9  Heading > Sub` or `memory  [type]  #tag`."""
    if entry.get("kind") == "chunk":
        where = f"{entry.get('path')}:{entry.get('start_line')}-{entry.get('end_line')}"
        heading = " > ".join(entry.get("heading_path") or [])
        return f"chunk{sep}{where}{sep}{heading}".rstrip()
    tags = " ".join(f"#{t}" for t in entry.get("tags") or [])
    return f"memory{sep}[{entry.get('type')}]{sep}{tags}".rstrip()


def pending_note(result: dict[str, Any]) -> str | None:
    """Say so when an answer was keyword-only, in all or in part: vectors still being made."""
    state = result.get("model_state")
    if state == "failed":
        return (
            "note: keyword results only: the embedding model failed to load "
            "(`memoryctl status` says why)"
        )
    if state:
        return (
            f"note: keyword results only: the embedding model is {state} "
            "(`memoryctl status` shows when it is ready)"
        )
    pending = result.get("pending_vectors") or 0
    if pending > 0 and result.get("mode") == "keyword":
        return (
            f"note: keyword results only for now: {pending} text(s) are still being embedded "
            "(`memoryctl status --watch` shows the progress)"
        )
    if pending > 0 and result.get("mode") == "vector":  # (no keyword answers vector mode)
        return (
            f"note: {pending} text(s) not embedded yet: not found by meaning until they are "
            "(`memoryctl status --watch` shows the progress)"
        )
    if pending > 0:  # vectors answered for the others, as the MCP search tool says too
        return (
            f"note: {pending} text(s) not embedded yet: found by keywords only for now "
            "(`memoryctl status --watch` shows the progress)"
        )
    return None


def entities_note(result: dict[str, Any]) -> str | None:  # the entities yet to be read
    n = result.get("entities_pending")
    return f"note: {n} note(s) indexed just now still wait for their entities" if n else None


def indexing_note(result: dict[str, Any]) -> str | None:
    """Say so while the daemon's first index reads the workspace: notes not read yet are not
    in an answer from the index (search, links, entities...)."""
    prog = result.get("indexing")
    if not isinstance(prog, dict):
        return None
    read = f"{prog.get('done', 0)}/{prog['total']} files read" if prog.get("total") else "listing"
    return (
        f"note: the workspace is still being indexed ({read}): notes not read yet are not in "
        "this answer (`memoryctl status --watch` shows the progress)"
    )


def search_notes(result: dict[str, Any]) -> list[str]:
    """What an answer says beside its hits, for stderr (stdout: the hits, or -l's paths): keyword
    results only, entities pending, a typo's correction (`suggestion`), why nothing answers
    (--explain), the words of a long query left out, how many more hits (as `rg -l` lists)."""
    notes = [n for n in [pending_note(result), entities_note(result)] if n]
    if result.get("suggestion"):  # nothing answers; a typo's correction might
        notes.append(f"did you mean: {result['suggestion']}?")
    if result.get("unanswered"):  # with --explain: why nothing answers
        notes.append(f"why nothing: {result['unanswered']}")
    ignored = result.get("terms_ignored")
    if ignored:
        notes.append(
            f"note: the keyword search used the query's first {MAX_QUERY_TERMS} words and "
            f"phrases; {ignored} more were left out"
        )
    more = result.get("more")
    if more:
        shown = result.get("total", len(result.get("hits") or []))  # a budget's summaries too
        notes.append(f"({shown} shown; at least {more} more: raise -n, up to 100, or narrow it)")
    return notes


def mentions(n: Any) -> str:
    """'1 mention', '443 mentions'."""
    return f"{n} mention" if n == 1 else f"{n} mentions"


def print_entity_hits(result: dict[str, Any]) -> None:
    """`search --kind entity`: one entity a line, best match first."""
    hits = result.get("hits") or []
    print(f"mode entity, {len(hits)} hit(s)")
    for hit in hits:
        print(
            f"  {hit.get('score')}  {hit.get('name')} ({hit.get('type')}, "
            f"{mentions(hit.get('mentions'))})"
        )


def print_search(result: dict[str, Any]) -> None:
    """The hits; under a token budget (`index` in the answer) the hits given in full, then
    the rest of the index as one-line summaries, with one header that adds up."""
    hits = result.get("hits") or []
    index = result.get("index")
    if index is None:
        header = f"mode {result.get('mode')}, {len(hits)} hit(s), {result.get('took_ms')} ms"
    else:
        total = result.get("total", len(index))
        rest = total - len(hits)
        header = (
            f"mode {result.get('mode')}, {total} hit(s): {len(hits)} in full"
            + (f", {rest} as summaries" if rest else "")
            + f" ({result.get('tokens_used')} tokens), {result.get('took_ms')} ms"
        )
    if result.get("corrected_query"):
        header += f", searched for: {result['corrected_query']}"
    print(header)
    color = use_color()
    for rank, hit in enumerate(hits, start=1):
        score = "pinned" if hit.get("score") is None else f"{hit['score']:.3f}"
        where = location(hit) + (f"  [{hit['workspace']}]" if hit.get("workspace") else "")
        print(f"{rank:>2}. {score}  #{hit['id']}  {where}")
        if hit.get("snippet"):
            print(f"    {one_line(highlight(hit['snippet'], color, hit.get('highlights')))}")
        else:
            print(f"    {one_line(hit.get('content'))}")
        for section in hit.get("sections") or []:
            heading = " > ".join(section.get("heading_path") or []) or "(top)"
            print(f"    also: {heading}  l.{section.get('start_line')}-{section.get('end_line')}")
        if hit.get("secrets"):
            print(f"    warning: looks like a secret ({text(hit['secrets'])})")
        if hit.get("explain"):
            parts = (f"{k}={text(v)}" for k, v in hit["explain"].items() if v is not None)
            print(f"    explain: {', '.join(parts)}")
    shown = {h.get("id") for h in hits}
    for rank, item in enumerate(index or [], start=1):
        if item.get("id") not in shown:
            print(f"{rank:>2}. {text(item.get('score'))[:5]}  #{item['id']}  {item.get('summary')}")
    if not hits and not index:
        print("no results")
    for name in result.get("unknown_entities") or []:
        print(f"no entity named {name!r} (memoryctl entities lists them)", file=sys.stderr)


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


def attention(res: dict[str, Any]) -> list[str]:
    """What in a `status` answer a user must act on, each as one short sentence. The web page's
    status (memoryd/web/static/status.js, `attention`) says the same words: a test holds the
    two to one table of conditions (tests/test_status_doors.py)."""
    store = res.get("store") or {}
    model = res.get("model") or {}
    index = res.get("index") or {}
    skipped = index.get("skipped") or []
    problems = []
    if store.get("recovered"):  # removed: a restart alone would make an empty store
        problems.append(
            f"database file removed under the daemon: stop it, move {store['recovered']} "
            "back, start it"
        )
    elif store.get("moved_to"):  # a folder renamed: a restart alone makes an empty store
        problems.append(
            f"database file moved under the daemon to {store['moved_to']}: move it back, restart it"
        )
    elif store.get("ok") is False and store.get("backend") == "sqlite":
        problems.append("database file replaced under the daemon: restart it")
    elif store.get("ok") is False:
        problems.append("store unreachable")
    refused = store.get("writes_refused")
    if refused:  # a full disk (or quota, read-only...): reads go on
        last, worked = refused.get("last_refused") or "", refused.get("last_worked") or ""
        if worked and worked >= last:  # a nearly full disk: some writes work, some do not
            when = f" at {last[11:19]}, working since {worked[11:19]}"
        else:
            when = ""
        problems.append(f"writes refused{when}: {refused.get('error')}")
    if store.get("checkpoint_blocked"):  # another program's transaction: the WAL grows
        problems.append(f"checkpoint blocked: {store['checkpoint_blocked'].get('error')}")
    daily = res.get("daily_log") or {}
    if daily.get("waiting"):
        problems.append(f"{daily['waiting']} daily log line(s) waiting for the disk")
    elif daily.get("rewrites"):  # a delete's, an update's or an import's rewrite, refused
        problems.append("daily log changes waiting for the disk")
    if store.get("schema_newer"):
        problems.append("a newer memoryd upgraded the shared database: upgrade this one")
    watcher = res.get("watcher") or {}
    if "workspace folder is missing" in (watcher.get("error") or ""):
        problems.append("workspace folder missing (index kept)")
    elif watcher.get("alive") is False:
        problems.append("watcher stopped")
    polled = watcher.get("polled")
    if polled:  # an inotify limit: those folders are polled, not watched
        problems.append(
            f"{polled['folders']} folder(s) polled every {polled['every_s']:g} s, not watched "
            f"({polled['limit']} reached): {polled['raise']}"
        )
    if model.get("state") == "failed":
        problems.append("embedding model failed")
    elif model.get("state") == "none" and not str(model.get("reason") or "").startswith(
        "embedding.enabled is false"  # (embedding off by choice: keyword search is the point)
    ):  # the model configured cannot be had: a package to install (model.reason says which)
        problems.append("no embedding model: keyword search only")
    if skipped:
        problems.append(f"{len(skipped)} file(s) skipped")
    if res.get("code_replaced"):
        problems.append("memoryd was installed again since it started: restart it")
    restart = (res.get("config") or {}).get("restart_needed") or []
    if restart:
        problems.append(f"restart to apply {', '.join(restart)}")
    jobs = res.get("jobs") or []
    failed = [str(j.get("name")) for j in jobs if isinstance(j, dict) and j.get("last_error")]
    if failed:  # (quick_check: the database is damaged; snapshot: no backup is being made)
        problems.append(f"job failed: {', '.join(failed)}")
    if res.get("drift") and res["drift"].get("total") and not res["drift"].get("indexing"):
        problems.append(f"drift {res['drift']['total']}")  # (while indexing: print_drift)
    return problems


def status_summary(res: dict[str, Any]) -> str:
    """`status` in one line: health first (what needs attention), then the counts."""
    counts = res.get("counts") or {}
    model = res.get("model") or {}
    index = res.get("index") or {}
    vectors = res.get("vectors") or {}
    problems = attention(res)
    health = "needs attention: " + ", ".join(problems) if problems else "ok"
    parts = [
        f"memoryd {res.get('version')}: {health}",
        f"{text(counts.get('documents'))} notes, {text(counts.get('chunks'))} chunks, "
        f"{text(counts.get('memories'))} memories",
        f"model {text(model.get('state'))}",
    ]
    if "done" in vectors:
        pending = _count(vectors.get("pending")) + _count(vectors.get("embedding"))
        parts.append(f"vectors {text(vectors.get('done'))} done, {pending} pending")
    if index.get("initial_reconcile_done") is False:
        prog = index.get("progress")
        if isinstance(prog, dict) and prog.get("total"):  # how far, and how long still
            eta = f", eta {duration(prog['eta_s'])}" if prog.get("eta_s") is not None else ""
            parts.append(f"first scan running ({prog.get('done', 0)}/{prog['total']} files{eta})")
        else:
            parts.append("first scan running")
    if res.get("uptime_s") is not None:
        parts.append(f"up {duration(res['uptime_s'])}")
    return "; ".join(parts)


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


def print_drift(drift: dict[str, Any]) -> None:
    if not drift.get("total"):
        print("\nno drift: the index matches the workspace")
        return
    prog = drift.get("indexing")
    if isinstance(prog, dict):  # a reconcile is reading the workspace: not a problem yet
        print(
            f"\ndrift: {drift['total']} difference(s) while the workspace is being indexed "
            f"({prog.get('done', 0)}/{prog.get('total', 0)} files read): check again once "
            "`memoryctl status --watch` says idle"
        )
    else:
        print(f"\ndrift: {drift['total']} problem(s) (fix with: memoryctl reindex)")
    for key in ("files_missing_from_index", "stale", "missing_on_disk"):
        for path in drift.get(key) or []:
            print(f"  {key}: {path}")
    if drift.get("orphan_chunks"):
        print(f"  orphan_chunks: {drift['orphan_chunks']}")


# --- progress ----------------------------------------------------------------------------------


def duration(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return "?"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


def bar(done: int, total: int, width: int = 24) -> str:
    """`[######------------------]  25.0%`; width 0: `25.0%` alone."""
    frac = min(max(done / total, 0.0), 1.0) if total > 0 else 1.0
    if width <= 0:
        return f"{frac * 100:.1f}%"
    filled = int(frac * width)
    return "[" + "#" * filled + "-" * (width - filled) + f"] {frac * 100:5.1f}%"


MODEL_WORKING = ("ready", "loading")  # other states (none, failed, ...) make no vectors


def progress_parts(status: dict[str, Any], width: int = 24) -> tuple[list[str], bool]:
    """The progress of a `status` answer as short parts, and whether work is still going on
    (that will end by itself: vectors pending without a model to make them are not work).
    width 0: compact, for a terminal too narrow for the bars (no bars, rates of files, note)."""
    parts, busy = [], False
    index = status.get("index") or {}
    prog = index.get("progress")
    if isinstance(prog, dict) and prog.get("total"):
        busy = True
        parts.append(index_part("index", prog, width))
    elif index.get("initial_reconcile_done") is False:
        busy = True
        parts.append("index: first scan of the workspace running")
    vectors = status.get("vectors") or {}
    if isinstance(vectors, dict) and "pending" in vectors:
        done = _count(vectors.get("done"))
        waiting = _count(vectors.get("pending")) + _count(vectors.get("embedding"))
        total = done + waiting
        model = (status.get("model") or {}).get("state")
        if waiting and model not in MODEL_WORKING and model is not None:
            parts.append(f"vectors {done} done, {waiting} pending (model {model}: keyword only)")
        elif waiting:
            busy = True
            part = f"vectors {bar(done, total, width)} {done}/{total}"
            if vectors.get("rate_per_s"):
                part += f"  {vectors['rate_per_s']:.1f}/s"
            if vectors.get("eta_s") is not None:
                # while a scan still finds texts, the time left for those found so far is a floor
                more = ">" if index.get("initial_reconcile_done") is False else ""
                part += f"  eta {more}{duration(vectors['eta_s'])}"
            if vectors.get("current") and width:
                part += f"  {one_line(vectors['current'], 40)}"
            parts.append(part)
        else:
            parts.append(f"vectors {done} done")
        if vectors.get("last_error"):
            parts.append(f"last error: {one_line(vectors['last_error'], 60)}")
    return parts, busy


def index_part(label: str, prog: dict[str, Any], width: int = 24) -> str:
    """`index [###---] 12.5% 100/800 files  92.4/s  eta 7s`: a reconcile's progress (status's
    index.progress), with its rate and time left as the vectors' part has them."""
    done, total = prog.get("done", 0), prog["total"]
    part = f"{label} {bar(done, total, width)} {done}/{total}" + (" files" if width else "")
    if prog.get("rate_per_s") and width:
        part += f"  {prog['rate_per_s']:.1f}/s"
    if prog.get("eta_s") is not None:
        part += f"  eta {duration(prog['eta_s'])}"
    return part


def _count(value: Any) -> int:
    """A count from status (`embedding` was a flag before it became a count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class Progress:
    """One line redrawn in place on a terminal; elsewhere a plain line when the text changes,
    at most every `every` seconds (logs and pipes get a readable record, not a flood)."""

    def __init__(self, stream: TextIO, *, tty: bool | None = None, every: float = 2.0) -> None:
        self.stream = stream
        self.tty = redraws(stream) if tty is None else tty
        self.every = every
        self._last = ""
        self._last_at = 0.0
        self._drawn = False

    def fits(self, line: str) -> bool:
        """Whether the line shows whole (always, but on a terminal narrower than it)."""
        return not self.tty or len(line) < _columns(self.stream)

    def update(self, line: str) -> None:
        if self.tty:
            cols = _columns(self.stream)
            self.stream.write("\r\033[K" + line[: cols - 1])
            self.stream.flush()
            self._drawn = True
            return
        now = time.monotonic()
        if line != self._last and now - self._last_at >= self.every:
            print(line, file=self.stream, flush=True)
            self._last, self._last_at = line, now

    def finish(self, line: str | None = None) -> None:
        if self.tty:
            if self._drawn:
                self.stream.write("\r\033[K")
            if line is not None:
                self.stream.write(line + "\n")
            self.stream.flush()
        elif line is not None and line != self._last:
            print(line, file=self.stream, flush=True)
        self._drawn = False


def _columns(stream: Any) -> int:
    """$COLUMNS when set (as `shutil.get_terminal_size` reads it), else the width of the
    stream's terminal, else 80."""
    try:
        cols = int(fsenv.environ().get("COLUMNS") or 0)
    except ValueError:
        cols = 0
    if cols > 0:
        return cols
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):  # not a file (a test's capture): stdout's
        fd = 1
    try:
        return fsenv.terminal_columns(fd)
    except OSError:
        return 80
