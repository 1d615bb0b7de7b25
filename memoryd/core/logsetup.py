"""Logging with structlog: JSON lines off a terminal (journald, launchd logs), console on one.

Every line goes through structlog's renderer, whoever wrote it: memoryd's own loggers; the
standard library's `logging` (apscheduler, watchdog, psycopg's pool, huggingface_hub) through
a ProcessorFormatter; loguru (fastembed) through a sink that hands each record to structlog;
`warnings` (captured into logging); and the exceptions Python reports itself (uncaught in a
thread, ignored in a `__del__`), with their traceback in the line. So
`journalctl --user -u memoryd -o cat | jq .` reads every line.

A line that repeats (the same logger, level and event, more than RATE_LIMIT times within
RATE_WINDOW_S seconds: a pool retrying a lost server dozens of times a second) is dropped after
the first RATE_LIMIT; the next one let through after the window carries `repeated: N`, the
number dropped, or, when none comes, a line of the kind with only that count
(`report_dropped`, which the daemon calls every 30 s). A warning or error that recurs at a slower
pace (a failure each second or each minute for as long as PostgreSQL is down: the pool's
reconnection attempts, a job failing at each run, each batch of file changes refused) is let
through REPEAT_LIMIT times per REPEAT_WINDOW_S (10 minutes) per kind and file (its `path`), then
counted the same way: a line per kind every 10 minutes, not thousands an hour.

No line carries a credential's value: every string of a line (its event, fields, traceback)
goes through the redactor the daemon registers (`set_redactor`, the secret guard's known kinds:
`[REDACTED:kind]`), whoever wrote the line.

configure() may be called again (SIGHUP): loggers already handed out follow the new level,
because the level is checked by a processor reading module state, not baked into the logger.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any, TextIO, cast

import structlog

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
RATE_LIMIT = 5  # lines of one kind let through per window
RATE_WINDOW_S = 1.0
REPEAT_LIMIT = 10  # warnings and errors of one kind let through per REPEAT_WINDOW_S
REPEAT_WINDOW_S = 600.0
_state: dict[str, Any] = {"level": logging.INFO, "name": "info", "stream": None, "json": None}
_redactor: list[Callable[[str], str]] = []  # set_redactor's function (core imports no text/)


def set_redactor(redact: Callable[[str], str] | None) -> None:
    """The function every string of every line goes through before it is written (the daemon
    and the CLI register the secret guard's `redact_known`); None: none."""
    _redactor[:] = [redact] if redact is not None else []


def _redacted(value: Any, redact: Callable[[str], str], depth: int = 0) -> Any:
    if isinstance(value, str):
        return redact(value) if value else value
    if isinstance(value, BaseException):  # error=exc: its message is text like any other
        return redact(str(value))
    if depth < 3 and isinstance(value, list | tuple):
        return [_redacted(v, redact, depth + 1) for v in value]
    if depth < 3 and isinstance(value, dict):
        return {k: _redacted(v, redact, depth + 1) for k, v in value.items()}
    return value


def _redact(logger: Any, method: str, event: MutableMapping[str, Any]) -> Any:
    """Every string of the line through the registered redactor (after the traceback became
    the `exception` string, before rendering)."""
    if not _redactor:
        return event
    redact = _redactor[0]
    for key in list(event):
        if not key.startswith("_"):  # _record, _from_structlog: the stdlib's own objects
            event[key] = _redacted(event[key], redact)
    return event


Kind = tuple[str, str, str, str]  # logger, level, event, path ("" for a line about no file)
_LOUD = frozenset({"warning", "error", "critical", "exception"})


class RateLimiter:
    """Counts lines in fixed windows: `allow` says whether a line goes out, and how many of its
    kind were dropped since the last one that did. Two limits: `limit` lines of a kind (logger,
    level, event) per `window` (a burst), and, for warnings and errors, `repeat_limit` lines of
    a kind about one file (or none) per `repeat_window` (a failure that recurs every few
    seconds for an hour: a pool retrying a server that is down, a job failing at each run)."""

    def __init__(
        self,
        limit: int = RATE_LIMIT,
        window: float = RATE_WINDOW_S,
        clock: Any = time.monotonic,
        repeat_limit: int = REPEAT_LIMIT,
        repeat_window: float = REPEAT_WINDOW_S,
    ) -> None:
        self.limit, self.window, self.clock = limit, window, clock
        self.repeat_limit, self.repeat_window = repeat_limit, repeat_window
        self._seen: dict[Kind, list[float]] = {}  # kind -> [start, count, dropped]
        self._repeats: dict[Kind, list[float]] = {}
        self._shown: dict[tuple[str, str, str], str] = {}  # a library's line as it read
        self._lock = threading.Lock()

    def allow(
        self, logger: str, level: str, event: str, path: str = "", shown: str = ""
    ) -> tuple[bool, int]:
        """`event` is what makes the kind (a library's message before its arguments);
        `shown`, the line as written, which a count line of the kind repeats."""
        now = self.clock()
        with self._lock:
            if shown:
                if len(self._shown) > 4096:
                    self._shown.clear()
                self._shown[(logger, level, event[:200])] = shown[:1000]
            burst = (logger, level, event[:200], "")
            allowed, dropped = self._count(self._seen, burst, now, self.limit, self.window)
            if not allowed or level not in _LOUD:
                return allowed, dropped
            kind = (logger, level, event[:200], path[:300])
            table, limit, window = self._repeats, self.repeat_limit, self.repeat_window
            allowed, earlier = self._count(table, kind, now, limit, window)
            if not allowed:  # the burst's count it carried goes on with this one
                table[kind][2] += dropped
                return False, 0
            return True, dropped + earlier

    @staticmethod
    def _count(
        table: dict[Kind, list[float]], kind: Kind, now: float, limit: int, window: float
    ) -> tuple[bool, int]:
        entry = table.get(kind)
        if entry is None or now - entry[0] >= window:
            dropped = int(entry[2]) if entry is not None else 0
            table[kind] = [now, 1, 0]
            if len(table) > 4096:  # forget old kinds (a bounded table)
                for old in [k for k, v in table.items() if now - v[0] >= window]:
                    del table[old]
            return True, dropped
        entry[1] += 1
        if entry[1] <= limit:
            return True, 0
        entry[2] += 1
        return False, 0

    def shown(self, logger: str, level: str, event: str) -> str:
        """The last line of a kind as it was written (a library's, its arguments in place)."""
        with self._lock:
            return self._shown.get((logger, level, event[:200]), event)

    def close_windows(self) -> None:
        """End every window that dropped lines now (the daemon stops: its counts are said)."""
        with self._lock:
            for table in (self._seen, self._repeats):
                for entry in table.values():
                    if entry[2]:
                        entry[0] = float("-inf")

    def unreported(self) -> list[Kind]:
        """The kinds whose window is over with lines dropped that no later line has counted:
        a burst that ended (the steps of a migration, the files a first scan skipped) was
        dropped without a trace, since the count rides on the next line of its kind."""
        now = self.clock()
        with self._lock:
            kinds = {
                key: None
                for table, window in (
                    (self._seen, self.window),
                    (self._repeats, self.repeat_window),
                )
                for key, (start, _count, dropped) in table.items()
                if dropped and now - start >= window
            }
        return list(kinds)


_limiter = RateLimiter()


def _filter_level(
    logger: Any, method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    level = LEVELS.get(method, logging.INFO) if method != "exception" else logging.ERROR
    if method == "critical":
        level = logging.CRITICAL
    if level < _state["level"]:
        raise structlog.DropEvent
    return event


def _rate_limit(logger: Any, method: str, event: MutableMapping[str, Any]) -> Any:
    name = str(event.get("logger_name") or event.get("logger") or "")
    path = event.get("path")
    where = path if isinstance(path, str) else ""
    kind = event.pop("_kind", None) or str(event.get("event"))  # (report_dropped's line)
    allowed, dropped = _limiter.allow(name, method, kind, where)
    if not allowed:
        raise structlog.DropEvent
    if dropped:
        event["repeated"] = dropped
    return event


class _StdlibRateLimit(logging.Filter):
    """The same rate limit for lines from the standard library's logging."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = str(record.msg)
            shown = record.getMessage() if record.args else ""
        except Exception:
            message = shown = ""
        level = record.levelname.lower()
        allowed, dropped = _limiter.allow(record.name, level, message, shown=shown)
        if dropped:
            record.repeated = dropped
        return allowed


def _stdlib_extras(logger: Any, method: str, event: MutableMapping[str, Any]) -> Any:
    """A foreign line names its logger as memoryd's own do (`logger_name`)."""
    record = event.get("_record")
    if record is not None:
        event["logger_name"] = record.name
        if getattr(record, "repeated", None):
            event["repeated"] = record.repeated
    return event


def colors(stream: Any, env: Mapping[str, str] | None = None) -> bool:
    """Whether the terminal log is in colour, by memoryctl's rule (ctl/output.use_color): never
    with NO_COLOR, always with FORCE_COLOR, else on a terminal whose TERM is set and not dumb
    (TERM unset or dumb showed the escapes as text)."""
    env = os.environ if env is None else env
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    term = env.get("TERM") or "dumb"
    return bool(hasattr(stream, "isatty") and stream.isatty()) and term != "dumb"


def configure(
    level: str = "info",
    fmt: str = "auto",
    file: str | Path | None = None,
    stream: TextIO | None = None,
) -> None:
    name = level.lower()
    if name not in LEVELS:
        raise ValueError(f"unknown log level {level!r}")
    _state["level"], _state["name"] = LEVELS[name], name
    _state["args"] = (level, fmt, file) if stream is None else None
    old = _state.get("file_stream")
    if stream is None:
        if file:
            if old is None or old.name != str(file) or _moved(old):
                _private_dirs(Path(file).parent)
                stream = open(  # noqa: SIM115
                    file, "a", buffering=1, encoding="utf-8", opener=_private_opener
                )
                _state["file_stream"] = stream
            else:
                stream = old
        else:
            stream = sys.stderr
    tty = hasattr(stream, "isatty") and stream.isatty()
    as_json = fmt == "json" or (fmt == "auto" and not tty)
    _state["json"], _state["stream"] = as_json, stream
    quiet = cast(TextIO, QuietStream(stream))  # a failed write costs the line, not the caller
    if as_json:  # progress bars (model downloads) are not log lines: none in a JSON log
        os.environ.setdefault("TQDM_DISABLE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if as_json
        else structlog.dev.ConsoleRenderer(colors=colors(stream))
    )
    shared: list[Any] = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[
            _filter_level,
            _rate_limit,
            structlog.contextvars.merge_contextvars,
            *shared,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,  # the traceback as text, to be redacted
            _redact,
            renderer,
        ],
        # one write per line (PrintLogger's print() wrote the text, then the newline: another
        # thread's line landed between them, two JSON objects on one line)
        logger_factory=structlog.WriteLoggerFactory(file=quiet),
        cache_logger_on_first_use=False,
    )
    # stdlib loggers (apscheduler, watchdog, psycopg, huggingface_hub, warnings) go to the same
    # stream through the same renderer, warnings and up
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_memoryd", False):
            root.removeHandler(h)
    handler = logging.StreamHandler(quiet)
    handler._memoryd = True  # type: ignore[attr-defined]
    handler.addFilter(_StdlibRateLimit())
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                _stdlib_extras,
                *shared,
                structlog.processors.format_exc_info,
                _redact,
            ],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root.addHandler(handler)
    root.setLevel(max(logging.WARNING, LEVELS[name]))
    logging.captureWarnings(True)
    _route_loguru()
    _route_uncaught()
    if old is not None and old is not stream:  # a SIGHUP moved the log elsewhere
        if _state.get("file_stream") is old:
            del _state["file_stream"]
        old.close()


_HOOKS: dict[str, Any] = {"thread": threading.excepthook, "unraisable": sys.unraisablehook}


def _uncaught_in_thread(args: Any) -> None:
    if args.exc_type is SystemExit:
        return
    get_logger("memoryd").error(
        "uncaught exception in a thread",
        thread=getattr(args.thread, "name", None),
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
    )


def _unraisable(u: Any) -> None:
    try:
        where = u.err_msg or f"Exception ignored in: {u.object!r}"
    except Exception:
        where = "Exception ignored"
    get_logger("memoryd").error(
        "exception ignored",
        where=where[:300],
        exc_info=(u.exc_type, u.exc_value, u.exc_traceback),
    )


def _route_uncaught() -> None:
    """What Python itself reports on stderr, an exception no code caught in a thread (a
    watcher's, a pool's) or one it had to ignore (in a __del__), goes through the renderer as
    one line with its traceback, not as a bare traceback among the JSON lines."""
    if threading.excepthook is not _uncaught_in_thread:
        _HOOKS["thread"] = threading.excepthook  # reset() puts them back
    if sys.unraisablehook is not _unraisable:
        _HOOKS["unraisable"] = sys.unraisablehook
    threading.excepthook = _uncaught_in_thread
    sys.unraisablehook = _unraisable


_LOGURU_LEVELS = {
    "TRACE": "debug",
    "DEBUG": "debug",
    "INFO": "info",
    "SUCCESS": "info",
    "WARNING": "warning",
    "ERROR": "error",
    "CRITICAL": "critical",
}


def _loguru_sink(message: Any) -> None:
    record = message.record
    method = _LOGURU_LEVELS.get(record["level"].name, "info")
    logger = structlog.get_logger(logger_name=record.get("name") or "loguru")
    fields: dict[str, Any] = {}
    if record.get("exception") is not None:
        exc = record["exception"]
        fields["exc_info"] = (exc.type, exc.value, exc.traceback)
    getattr(logger, method)(str(record["message"]), **fields)


def _route_loguru() -> None:
    """loguru (fastembed's logger) writes its own text format to stderr by default: replace its
    handlers with one that hands each record to structlog. Only when something imported it."""
    loguru: Any = sys.modules.get("loguru")
    if loguru is None:
        try:
            import loguru
        except ImportError:
            return
    try:
        loguru.logger.remove()
        loguru.logger.add(_loguru_sink, level="DEBUG" if _state["name"] == "debug" else "INFO")
    except Exception:
        return


_WRITE_LOCK = threading.Lock()


class QuietStream:
    """The log's stream, whose write errors are swallowed (and counted): a log reader that went
    away (the terminal closed, a pipe whose reader exited: EPIPE, EIO) or a full disk made every
    line raise in whatever logged it, so an `add` was stored and not answered, and the watcher
    and the model loader died of their own log lines."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self.dropped = 0

    def write(self, text: str) -> int:
        if self.inner is None:  # started with stderr closed (`memoryd run 2>&-`): was the
            self.dropped += 1  # daemon's death, silent, at its first log line
            return len(text)
        try:
            with _WRITE_LOCK:  # structlog's lines and the standard library's hold locks of
                return self.inner.write(text)  # their own: one line at a time, whole
        except (OSError, ValueError):  # ValueError: the stream was closed
            self.dropped += 1
            return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _moved(stream: TextIO) -> bool:
    """Whether the log file's name no longer leads to the open file (logrotate, newsyslog or a
    person moved or deleted it): the lines would go on into the rotated file, or nowhere."""
    try:
        on_disk, open_ = os.stat(stream.name), os.fstat(stream.fileno())
    except (OSError, ValueError):
        return True
    return (on_disk.st_dev, on_disk.st_ino) != (open_.st_dev, open_.st_ino)


def report_dropped(everything: bool = False) -> int:
    """Write, for each kind of line the repeat limit dropped in a burst that has ended, one line
    of that kind carrying `repeated: N` (as the next line of the kind would have), marked
    `dropped_only`. The daemon calls it every 30 s, and before it stops with `everything` (the
    counts of windows not over yet too). Returns the lines."""
    if everything:
        _limiter.close_windows()
    kinds = _limiter.unreported()
    for logger_name, level, event, path in kinds:
        logger = structlog.get_logger().bind(logger_name=logger_name)
        fields: dict[str, Any] = {"path": path} if path else {}
        getattr(logger, level if level in LEVELS or level == "critical" else "info")(
            _limiter.shown(logger_name, level, event), _kind=event, dropped_only=True, **fields
        )
    return len(kinds)


def reopen_if_moved() -> bool:
    """Open the log file again at its name when it was rotated away (the daemon looks every
    30 s, and at SIGHUP); True when it did."""
    old, args = _state.get("file_stream"), _state.get("args")
    if old is None or args is None or not _moved(old):
        return False
    configure(*args)
    get_logger("memoryd.logsetup").info("log file reopened after it was moved", file=old.name)
    return True


def _private_dirs(folder: Path) -> None:
    """The log folder (and parents we create) 0700, whatever the umask."""
    missing = []
    here = folder
    while not here.exists():
        missing.append(here)
        here = here.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(path, 0o700)


def _private_opener(path: str, flags: int) -> int:
    """Log files are 0600: they name files, queries and errors. One left 0644 by an older
    version is narrowed too (when it is ours)."""
    fd = os.open(path, flags, 0o600)
    st = os.fstat(fd)
    if st.st_uid == os.getuid() and st.st_mode & 0o077:
        os.fchmod(fd, 0o600)
    return fd


def reset() -> None:
    """Back to structlog's defaults (print to stdout, every level), as before `configure`:
    tests call this so one test's configuration never leaks into the next."""
    structlog.reset_defaults()
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_memoryd", False):
            root.removeHandler(h)
    logging.captureWarnings(False)
    threading.excepthook = _HOOKS["thread"]
    sys.unraisablehook = _HOOKS["unraisable"]
    _state.update(level=logging.INFO, name="info", stream=None, json=None, args=None)
    _redactor.clear()
    global _limiter
    _limiter = RateLimiter()


def get_logger(name: str) -> Any:
    return structlog.get_logger(logger_name=name)


def enabled(level: str) -> bool:
    """Whether a line of this level is written (`_filter_level`): a path run for every request
    checks before it logs, since a line dropped still costs ~15 us (the lazy logger is bound
    again for each line, and the processors run until the filter drops it)."""
    return LEVELS[level] >= _state["level"]


def renders_json() -> bool | None:
    """Whether configure() made the log JSON lines (None before it ran): `memoryd run` then
    says why it stops as one of them, so a log reader (journald, jq) never meets a plain line."""
    return _state["json"]


def writes_stderr() -> bool:
    """Whether the configured log goes to stderr (not to a `[logging] file`)."""
    return _state["stream"] is sys.stderr
