"""Logging with structlog: JSON lines off a terminal (journald, launchd logs), console on one.

configure() may be called again (SIGHUP): loggers already handed out follow the new level,
because the level is checked by a processor reading module state, not baked into the logger.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, TextIO

import structlog

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
_state: dict[str, Any] = {"level": logging.INFO, "name": "info", "stream": None}


def _filter_level(
    logger: Any, method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    level = LEVELS.get(method, logging.INFO) if method != "exception" else logging.ERROR
    if method == "critical":
        level = logging.CRITICAL
    if level < _state["level"]:
        raise structlog.DropEvent
    return event


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
    old = _state.get("file_stream")
    if stream is None:
        if file:
            if old is None or old.name != str(file):
                Path(file).parent.mkdir(parents=True, exist_ok=True)
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
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if as_json
        else structlog.dev.ConsoleRenderer(colors=tty)
    )
    structlog.configure(
        processors=[
            _filter_level,
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info
            if as_json
            else structlog.processors.StackInfoRenderer(),
            renderer,
        ],
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )
    # stdlib loggers (apscheduler, watchdog) go to the same stream, warnings and up
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_memoryd", False):
            root.removeHandler(h)
    handler = logging.StreamHandler(stream)
    handler._memoryd = True  # type: ignore[attr-defined]
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(max(logging.WARNING, LEVELS[name]))
    if old is not None and old is not stream:  # a SIGHUP moved the log elsewhere
        if _state.get("file_stream") is old:
            del _state["file_stream"]
        old.close()


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
    _state.update(level=logging.INFO, name="info", stream=None)


def get_logger(name: str) -> Any:
    return structlog.get_logger(logger_name=name)
