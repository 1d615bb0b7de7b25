"""The daily log's files, as files: opened only when regular (never through a symlink, never a
FIFO), read and written in their own encoding and line ends, replaced atomically, and appended
to all or nothing (a line the disk cut short is taken back: memory/dailylog.py)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
from pathlib import Path

from memoryd.core.fsutil import atomic_write, write_all
from memoryd.core.logsetup import get_logger
from memoryd.core.swap import guarded_write
from memoryd.text import decoding

log = get_logger("memoryd.memory.dailylog")

LINE_ENDS = re.compile(r"(\r\n|\r|\n)")

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def open_regular(path: Path, flags: int, mode: int = 0o600) -> int:
    """A descriptor of a regular file at `path`, never through a final symlink and never
    blocking (a FIFO planted under a log file's name would hang an open without O_NONBLOCK);
    OSError for anything else."""
    fd = os.open(path, flags | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC, mode)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path) -> tuple[str, str, bytes]:
    """(text, encoding, bytes) of a log file: UTF-16/32 as its byte order mark says (a person
    saved it so: the markers are found all the same), else UTF-8 with every other byte kept as
    it is, so a rewrite gives back the bytes it did not change."""
    fd = open_regular(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    encoding, start = decoding.bom(data)
    if encoding == "utf-8":  # a UTF-8 byte order mark stays in the text (U+FEFF), as it was
        return data.decode("utf-8", errors="surrogateescape"), encoding, data
    try:
        return data[start:].decode(encoding), encoding, data
    except UnicodeDecodeError as exc:  # rewriting it would spoil it further: left as it is
        raise OSError(errno.EILSEQ, f"not valid {encoding}", str(path)) from exc


def replace_text(
    path: Path, text: str, encoding: str = "utf-8", based_on: bytes | None = None
) -> None:
    """fsutil.atomic_write of the text in the file's encoding (with its byte order mark);
    keeps the file's mode. With `based_on` (the bytes the text was made from), only over those:
    a person's save since (their editor, by rename or in place) raises swap.Changed and stays."""
    mode = path.stat().st_mode & 0o777
    if encoding == "utf-8":
        data = text.encode("utf-8", errors="surrogateescape")
    else:
        data = ("\ufeff" + text).encode(encoding)
    if based_on is None:
        atomic_write(path, data, mode)
    else:
        guarded_write(path, data, mode, based_on)


def ending(head: bytes, tail: bytes, size: int) -> tuple[str, str, str]:
    """(encoding, separator, line end) for a line added to a file of `size` bytes that starts
    with `head` and ends with `tail` (a few KiB, a few bytes): in the file's encoding (a UTF-16
    file stays UTF-16), with its line end (CRLF after CRLF, CR after a lone CR: the last line's,
    else the first line's), after a line end of its own when the last line has none (as many
    editors save): otherwise the memory's line would join the person's last line, and
    deleting the memory would take their text with it."""
    encoding, mark = decoding.bom(head)

    def ends(s: str) -> bool:
        return tail.endswith(s.encode(encoding))

    if ends("\n") or ends("\r"):
        return encoding, "", "\r\n" if ends("\r\n") else "\r" if ends("\r") else "\n"
    first = LINE_ENDS.search(head[mark:].decode(encoding, errors="ignore"))
    eol = first.group() if first else "\n"
    return encoding, "" if size <= mark else eol, eol


# A daily log file is a note of the workspace: made as an editor makes one, 0666 less the umask
# (0644 under the usual 022; the daemon narrows any umask to at least 022), like a new note
# (notes/notes.py) and unlike memoryd's own files (data_dir, the log, the socket: 0600)
NOTE_MODE = 0o666


def append_line(path: Path, line: str, header: str) -> None:
    """Append `line` to the log file at `path` (made NOTE_MODE if missing) in the file's encoding
    and line ends (`ending`); an empty file (or one holding only a byte order mark) gets
    `header` and a blank line first. All or nothing: a write the system cuts short (a full
    disk, the file size limit) is taken back, so no half line is left for the next line to
    join; the OSError is raised."""
    fd = open_regular(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, NOTE_MODE)
    try:
        size = os.fstat(fd).st_size
        head, tail = os.pread(fd, 4096, 0), os.pread(fd, 8, max(0, size - 8))
        encoding, sep, eol = ending(head, tail, size)
        if size <= decoding.bom(head)[1]:  # empty, or only a byte order mark
            line = f"{header}{eol}{eol}{line}"
        try:
            write_all(fd, decoding.encode_like(sep + line + eol, encoding))
        except OSError:
            with contextlib.suppress(OSError):
                if os.fstat(fd).st_size > size:
                    os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def save_ids(
    path: Path, ids: list[int], rewrite: list[int], renumber: dict[int, int] | None = None
) -> None:
    """The ids of the memories whose daily log lines wait, of those whose rewrite (a delete,
    an update) waits, and the renumbering (old id -> new) an import's rewrite waits for, kept
    in `path` for the next start (removed when there are none). The same disk may be full: a
    failure is logged, they wait in memory still."""
    moved = sorted((renumber or {}).items())
    try:
        if not ids and not rewrite and not moved:
            path.unlink(missing_ok=True)
        else:
            data = {"ids": ids, "rewrite": rewrite, "renumber": moved}
            atomic_write(path, json.dumps(data).encode(), 0o600)
    except OSError as exc:
        log.warning("daily log lines waiting not saved", error=str(exc))


def _ints(items: object) -> list[int]:
    return (
        [i for i in items if isinstance(i, int) and not isinstance(i, bool)]
        if isinstance(items, list)
        else []
    )


def load_ids(path: Path | None) -> tuple[list[int], list[int], dict[int, int]]:
    """save_ids' lists (empty when there is no such file, or it cannot be read)."""
    if path is None or not path.is_file():
        return [], [], {}
    try:
        data = json.loads(path.read_text())
        ids, rewrite, renumber = data["ids"], data.get("rewrite", []), data.get("renumber", [])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning("daily log lines waiting not read", error=str(exc))
        return [], [], {}
    found, redo = _ints(ids), _ints(rewrite)
    pairs = [p for p in renumber if isinstance(p, list)] if isinstance(renumber, list) else []
    moved = {p[0]: p[1] for p in map(_ints, pairs) if len(p) == 2}
    log.info(
        "daily log lines waiting from before the restart",
        lines=len(found),
        redo=len(redo),
        renumber=len(moved),
    )
    return found, redo, moved


def siblings(path: Path) -> list[Path]:
    """The .md files beside `path` whose names hold its stem: the copies sync tools and file
    managers make (Dropbox's `2026-11-26 (conflicted copy).md`, Syncthing's
    `2026-11-26.sync-conflict-20261126-101500-ABCDEFG.md`, `2026-11-26 (1).md`, iCloud's
    `2026-11-26 2.md`, Windows' `2026-11-26 - Copy.md`, `Copy of 2026-11-26.md`), without
    reading every file of the folder."""
    try:
        names = sorted(os.listdir(path.parent))
    except OSError:
        return []
    return [
        path.parent / n for n in names if n != path.name and path.stem in n and n.endswith(".md")
    ]


def relpath(path: Path, root: Path) -> str:
    """`path` under `root` as a workspace path (posix), else as it is."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)
