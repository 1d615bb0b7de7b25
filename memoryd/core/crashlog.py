"""A crash's traceback (faulthandler), kept for the log.

A fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT: a C library's bug, an abort) ends the
process without a word from Python, so the log stopped mid-sentence and the journal said only
"code=dumped". faulthandler writes every thread's Python stack at that moment, but as plain
text, from a signal handler that can neither format JSON nor take a lock. So, when the log is
JSON lines, faulthandler writes into DATA_DIR/crash.log (0600), and the next start, before
anything else, logs what it holds as one JSON line (`"event": "the previous run crashed"`, the
dump in `exception`), then empties it: under systemd (Restart=on-failure) or launchd
(KeepAlive) that is two seconds later. On a terminal (the console format), it writes to stderr
at once, where a person reads it.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import sys
from pathlib import Path
from typing import TextIO

from memoryd.core import logsetup

FILE_NAME = "crash.log"
MAX_CHARS = 20_000  # every thread's stack: a few KB; the tail if a dump ran on

log = logsetup.get_logger("memoryd.crash")


def _private(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o600)


def report_previous(path: Path) -> bool:
    """Log the dump a crash left in `path` as one JSON line (True when there was one)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:  # none (the first start, or a clean stop), or unreadable: nothing to say
        return False
    if not text.strip():
        return False
    first = next((line for line in text.splitlines() if line.strip()), "")
    log.error(
        "the previous run crashed",
        reason=first[:300],  # "Fatal Python error: Segmentation fault"
        exception=text[-MAX_CHARS:],
        file=str(path),
    )
    return True


def enable(data_dir: Path) -> TextIO | None:
    """Report the previous run's crash, then arm faulthandler for this one: into
    DATA_DIR/crash.log when the log is JSON lines, else onto stderr. Returns the file to hand
    to `disable` (None when faulthandler writes to stderr or the file cannot be made)."""
    path = data_dir / FILE_NAME
    report_previous(path)
    if not logsetup.renders_json():
        if sys.stderr is not None:
            with contextlib.suppress(OSError, ValueError, AttributeError, RuntimeError):
                faulthandler.enable(file=sys.stderr, all_threads=True)
        return None
    try:
        stream = open(path, "w", encoding="utf-8", opener=_private)  # noqa: SIM115 (kept open)
        faulthandler.enable(file=stream, all_threads=True)
    except OSError as exc:
        log.warning("a crash's traceback will not be kept", file=str(path), error=str(exc))
        return None
    return stream


def disable(stream: TextIO | None) -> None:
    """A clean stop: faulthandler off, and the (empty) crash file removed."""
    with contextlib.suppress(RuntimeError):
        faulthandler.disable()
    if stream is None:
        return
    with contextlib.suppress(OSError, ValueError):
        empty = os.fstat(stream.fileno()).st_size == 0
        stream.close()
        if empty:
            os.unlink(stream.name)


RUNNING = "memoryd.running"


def mark_running(data_dir: Path) -> float | None:
    """When the previous run was last seen running (its start, then touch_running's every half
    minute), if it ended without a clean stop (kill -9, a power cut, a crash: its
    DATA_DIR/memoryd.running is still there), else None; then this run's mark."""
    path = data_dir / RUNNING
    try:
        since: float | None = path.stat().st_mtime
    except OSError:
        since = None
    try:
        fd = _private(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        log.warning("cannot mark this run as running", file=str(path), error=str(exc))
    return since


def touch_running(data_dir: Path) -> None:
    """This run is still running (the mark's time is now)."""
    with contextlib.suppress(OSError):
        os.utime(data_dir / RUNNING)


def unmark_running(data_dir: Path) -> None:
    """A clean stop: the mark goes."""
    with contextlib.suppress(OSError):
        (data_dir / RUNNING).unlink()
