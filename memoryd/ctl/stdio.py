"""Standard output as scripts and terminals treat it: a write that fails is one line and exit
status 1, as for cat and echo (`memoryctl export >/dev/full`: no space left; `>&-`: stdout
closed), never a traceback nor a silent exit 0 with the output lost; a reader that went away
(`| head -1`) ends the command quietly (exit 0, as rg does). Used by memoryctl and by the
`memoryd` command's own subcommands (config, service, store, --help).

May import: the standard library only (memoryctl's start-up; tests/test_architecture.py).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EBADF = 9  # errno.EBADF (errno is not imported at start-up)


class OutputError(Exception):
    """Writing to standard output failed (not a closed pipe: that is BrokenPipeError)."""


class Stdout:
    """sys.stdout whose failed writes raise OutputError. A closed stdout (`>&-`: Python sets
    sys.stdout to None, and print() then drops the text without a word) fails as writing to a
    closed descriptor does."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        if self.stream is None:
            if not text:
                return 0
            raise OutputError("standard output is closed")
        try:
            return int(self.stream.write(text))
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc.strerror or str(exc)) from None

    def flush(self) -> None:
        if self.stream is None:
            return
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc.strerror or str(exc)) from None

    def isatty(self) -> bool:
        return self.stream is not None and bool(self.stream.isatty())

    def fileno(self) -> int:
        if self.stream is None:
            raise OSError(EBADF, "standard output is closed")
        return int(self.stream.fileno())

    @property
    def encoding(self) -> str:
        return str(getattr(self.stream, "encoding", None) or "utf-8")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def guard() -> Any:
    """Put Stdout in place of sys.stdout; returns the stream it was, to put back."""
    before = sys.stdout
    if not isinstance(before, Stdout):
        sys.stdout = Stdout(before)
    return before


def finish() -> None:
    """Flush what is still buffered, so that its failure is reported here, not lost at exit."""
    sys.stdout.flush()


def quiet_stdout() -> None:
    """After a broken pipe: stdout onto /dev/null, so that Python's own flush at exit does not
    print `Exception ignored ... BrokenPipeError`."""
    import os

    stream = sys.stdout.stream if isinstance(sys.stdout, Stdout) else sys.stdout
    try:  # noqa: SIM105 (contextlib: not imported at start-up)
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (AttributeError, OSError, ValueError):
        pass


def escape_unencodable() -> None:
    """Text stdout's codec cannot write (LC_ALL=C with PYTHONUTF8=0, PYTHONIOENCODING=ascii)
    as \\u00e9, the escape TOML and JSON strings read back, instead of a UnicodeEncodeError; a
    byte of a path that was not UTF-8 (surrogate-escaped in argv) as that byte. For `memoryd
    config show` (TOML), `config path`, `check`; memoryctl's readable output keeps Python's
    backslashreplace."""
    import codecs

    def escape(exc: UnicodeError) -> tuple[str | bytes, int]:
        assert isinstance(exc, UnicodeEncodeError)
        bad = exc.object[exc.start : exc.end]
        if all("\udc80" <= c <= "\udcff" for c in bad):
            return bytes(ord(c) - 0xDC00 for c in bad), exc.end
        return ascii_escaped(bad), exc.end

    codecs.register_error("memoryd-escape", escape)
    stream = sys.stdout.stream if isinstance(sys.stdout, Stdout) else sys.stdout
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="memoryd-escape")


def ascii_escaped(text: str) -> str:
    """Each character that is not ASCII as \\u00e9 (\\U0001f600 beyond the BMP): a TOML or JSON
    string that reads back the same, in any locale."""
    return "".join(
        c if c < "\x80" else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"
        for c in text
    )


def utf8() -> bool:
    """Whether stdout takes UTF-8 (else JSON is written as ASCII with \\u escapes, which every
    reader decodes, instead of text the locale's codec can only backslash-escape)."""
    encoding = (getattr(sys.stdout, "encoding", None) or "utf-8").lower().replace("-", "")
    return encoding in ("utf8", "utf8sig")
