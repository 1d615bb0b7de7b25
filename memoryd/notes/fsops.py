"""The file-level pieces of the Notes door (memoryd/notes/notes.py): path checks, the flags every
open uses (never through a symlink, never blocking on a FIFO), and reading a note's bytes at the
last moment before a change."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

from memoryd.core import oserrors
from memoryd.core.errors import Conflict, InvalidInput, Refused, describe
from memoryd.core.logsetup import get_logger
from memoryd.core.swap import bytes_now
from memoryd.index.indexer import sha256_bytes
from memoryd.memory.validation import check_str

log = get_logger("memoryd.notes.notes")

MAX_PATH_CHARS = 1024
_SHA = re.compile(r"^[0-9a-f]{64}$")
# Right-to-left/left-to-right marks, embeddings, overrides and isolates: they reorder how a
# name is displayed, so a note listed to a person could pass for another.
_BIDI_CONTROLS = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
DIR_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def check_sha(value: object) -> str | None:
    """None, "" (must not exist) or 64 lowercase hex digits."""
    if value is None:
        return None
    if not isinstance(value, str) or not (value == "" or _SHA.match(value.lower())):
        raise InvalidInput(
            'expected_sha256: expected the 64 hex digits note.read returned (or "" for a note '
            f"that must not exist yet), got {describe(value)}"
        )
    return value.lower()


def check_expected(rel: str, expected: str | None, current: bytes | None) -> None:
    """Conflict when the note's bytes (None: no note) are not the version `expected` names."""
    if expected is None:
        return
    if current is None:
        if expected != "":
            raise Conflict(
                f"{rel} no longer exists (expected sha256 {expected[:12]}…); "
                "read the workspace again",
                data={"path": rel, "current_sha256": None},
            )
        return
    actual = sha256_bytes(current)
    if expected != actual:
        what = "already exists" if expected == "" else "changed since you read it"
        raise Conflict(
            f"{rel} {what} (sha256 is {actual[:12]}…, not {expected[:12] or 'absent'}); "
            "read it again, merge, and retry with the new sha256",
            data={"path": rel, "current_sha256": actual},
        )


def normalize(path: object, what: str = "path") -> str:
    """A clean workspace-relative path ('a/b.md'), or InvalidInput. Pure: no file access."""
    if not isinstance(path, str):
        raise InvalidInput(
            f"{what}: expected a string, got {describe(path)} (a workspace-relative path like "
            "'notes/idea.md')"
        )
    if not path.strip():
        raise InvalidInput(
            f"{what}: must not be empty (a workspace-relative path like 'notes/idea.md')"
        )
    check_str(path, what)  # no NUL, no lone surrogate
    if any(unicodedata.category(ch) == "Cc" for ch in path):
        raise InvalidInput(f"{what}: contains a control character")
    if any(ch in _BIDI_CONTROLS for ch in path):
        raise InvalidInput(
            f"{what}: contains a bidirectional control character (it makes a name display as "
            "another, e.g. 'x\u202egpj.md' shows as 'xdm.jpg')"
        )
    if len(path) > MAX_PATH_CHARS:
        raise InvalidInput(f"{what}: longer than {MAX_PATH_CHARS} characters")
    # "~/x.md" would mean the home folder to a shell; a file named "~draft.md" is a note
    if (
        path.startswith(("/", "\\", "~/", "~\\"))
        or path == "~"
        or re.match(r"^[A-Za-z]:[\\/]", path)
    ):
        raise InvalidInput(
            f"{what}: {describe(path)} is absolute; give a path inside the workspace"
        )
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise InvalidInput(f"{what}: {describe(path)} leaves the workspace ('..' is not allowed)")
    if not parts:
        raise InvalidInput(f"{what}: {describe(path)} names the workspace itself, not a note")
    return "/".join(parts)


def sha_now(dfd: int, name: str) -> str | None:
    data = bytes_now(dfd, name)
    return None if data is None else sha256_bytes(data)


@contextlib.contextmanager
def os_errors(rel: str) -> Iterator[None]:
    """A file system failure (name too long, permission) is the caller's answer, as Refused
    with the system's reason, not an internal error; no room (a full disk, a quota, the file
    size limit) is DiskFull, as for every write (core/oserrors.py). The old note is still in
    place."""
    try:
        yield
    except OSError as exc:
        log.warning("note change failed", path=rel, error=str(exc))
        if exc.errno in oserrors.NO_ROOM:
            raise oserrors.refused(exc, rel) from None
        raise Refused(f"cannot change {rel}: {exc.strerror or exc}") from None


def move_whole(src: str | os.PathLike[str], dst: Path, top: Path) -> None:
    """shutil.move of a note (or folder) to `dst` under `top` (the trash's folder of this
    second), whole or not at all: a copy across file systems that fails (the trash's disk full)
    removes what it copied, and the folders it made that are left empty up to `top`, so no
    empty or cut-short copy is left in the trash; the note stays where it was. Only the copy is
    undone: once it is complete, a failure to remove the source leaves both."""
    import shutil

    try:
        os.rename(src, dst)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    folder = os.path.isdir(src) and not os.path.islink(src)
    try:
        if folder:
            shutil.copytree(src, dst, symlinks=True)
        else:
            shutil.copy2(src, dst, follow_symlinks=False)
    except BaseException:
        if os.path.isdir(dst) and not os.path.islink(dst):
            shutil.rmtree(dst, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(dst)
        here = dst.parent
        while here == top or top in here.parents:  # (another deletion's files keep theirs)
            try:
                os.rmdir(here)
            except OSError:
                break
            here = here.parent
        raise
    if folder:
        shutil.rmtree(src)
    else:
        os.unlink(src)
