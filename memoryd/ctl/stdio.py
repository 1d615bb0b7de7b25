"""Standard output as scripts and terminals treat it: a write that fails is one line and exit
status 1, as for cat and echo (`memoryctl export >/dev/full`: no space left; `>&-`: stdout
closed), never a traceback nor a silent exit 0 with the output lost; a reader that went away
(`| head -1`) ends the command quietly (exit 0, as rg does). Used by memoryctl (imported only
when such a thing happens) and by the `memoryd` command's own subcommands (config, service,
store, --help).

May import: the standard library only (memoryctl's start-up; tests/test_architecture.py).
"""

from __future__ import annotations

import sys

EBADF = 9  # errno.EBADF (errno is not imported at start-up)


class Closed:
    """sys.stdout when it is closed (`>&-`: Python sets it to None, and print() then drops the
    text without a word): a write fails as writing to a closed descriptor does."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        if text:
            raise OSError(EBADF, "standard output is closed")
        return 0

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(EBADF, "standard output is closed")


def output_failed(exc: OSError) -> bool:
    """Whether the OSError being handled is a write to standard output that failed: it is
    closed, or the error is one a write gets (a full disk, an I/O error) and names no file,
    as every error of a file memoryd opens does. (A wrapper around sys.stdout would know for
    sure, but it cost each print a Python call: 2% of `memoryctl status`.)"""
    import errno

    if isinstance(sys.stdout, Closed):
        return True
    writes = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF)
    return exc.filename is None and exc.errno in writes


def quiet_stdout() -> None:
    """After a broken pipe: stdout onto /dev/null, so that Python's own flush at exit does not
    print `Exception ignored ... BrokenPipeError`."""
    import os

    try:  # noqa: SIM105 (contextlib: not imported at start-up)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
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
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="memoryd-escape")


def ascii_escaped(text: str) -> str:
    """Each character that is not ASCII as \\u00e9 (\\U0001f600 beyond the BMP): a TOML or JSON
    string that reads back the same, in any locale."""
    return "".join(
        c if c < "\x80" else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"
        for c in text
    )
