"""What a write through the Notes door keeps of the note it replaces (memoryd/notes/notes.py),
as an editor that opened the file would (vim with its defaults: 'fileencoding', 'bomb',
'fileformat' and the permissions kept, extended attributes copied; docs/agents.md, "What a
write keeps of the note"):

- its encoding: a byte order mark (UTF-8, UTF-16, UTF-32) stays, and so does a note written in
  Windows-1252/Latin-1 by an older editor when every character of the new text has a byte
  there (else the note becomes UTF-8, and the answer's `encoding` says so);
- its line ends: a note whose every line ends in CRLF gets CRLF for the new text's bare LFs;
- its mode (notes.py passes it to the temp file) and its extended attributes (Linux's `user.*`
  and the others the daemon may set: a tag, a sync tool's or the desktop's metadata);
- a read-only note is refused (the owner made it so; `chmod u+w` first), never replaced;
- a note with other names (hard links) is replaced under this name only, as every atomic
  write does; the answer's `warning` says the other names keep the old text.

Front matter, its order and comments, and a missing last line end are the caller's: the text
is written as given (read, edit, write back)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from pathlib import Path
from typing import Any

from memoryd.core.errors import Refused
from memoryd.text import decoding

_BARE_LF = re.compile(r"(?<!\r)\n")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _all_crlf(text: str) -> bool:
    """True when the text has line ends and every one is CRLF."""
    return "\n" in text and text.count("\r\n") == text.count("\n")


def _pure_legacy(old: bytes, text: str) -> bool:
    """True when the whole file is Windows-1252 (decoding it so gives what memoryd read), not
    UTF-8 with a stray byte or two, which is better written back as UTF-8 throughout."""
    try:
        return old.decode(decoding.LEGACY) == text
    except UnicodeDecodeError:
        return False


def encode_as(text: str, old: bytes) -> tuple[bytes, str]:
    """(bytes, encoding as note.read names it) of `text` replacing a note that holds `old`: in
    its encoding, with its byte order mark, and with CRLF line ends if all of its were CRLF."""
    old_text, encoding, _ = decoding.decode(old)
    if _all_crlf(old_text):
        text = _BARE_LF.sub("\r\n", text)
    name, mark = decoding.bom(old)
    if mark:
        body = text[1:] if text.startswith("\ufeff") else text  # one mark, not two
        return old[:mark] + body.encode(name), encoding
    if encoding != "utf-8" and _pure_legacy(old, old_text):
        with contextlib.suppress(UnicodeEncodeError):
            return text.encode(decoding.LEGACY), encoding
    return text.encode("utf-8"), "utf-8"


def replacing(
    rel: str, data: bytes, current: tuple[bytes, os.stat_result] | None
) -> tuple[bytes, dict[str, Any]]:
    """(the bytes to write, what the answer adds) for `data` (UTF-8) replacing `current` (the
    note's bytes and stat; None: a new note, written as given): refused when read-only, in its
    encoding, and the answer names the version replaced, the encoding kept, other names."""
    if current is None:
        return data, {}
    check_writable(rel, current[1])
    out, encoding = encode_as(data.decode("utf-8"), current[0])
    said: dict[str, Any] = {"replaced_sha256": hashlib.sha256(current[0]).hexdigest()}
    if encoding != "utf-8":
        said["encoding"] = encoding
    return out, said | other_names(rel, current[1])


def appended(old: bytes, added: bytes) -> bytes:
    """The bytes that put `added` (UTF-8) at the end of a note holding `old`, on a line of its
    own and ending with a line end, in the note's own encoding (a UTF-16 note stays UTF-16,
    a Windows-1252 one stays so when it can) and line ends (CRLF in a CRLF note)."""
    text, encoding, _ = decoding.decode(old)
    more = added.decode("utf-8")
    eol = "\r\n" if _all_crlf(text) else "\n"
    if eol == "\r\n":
        more = _BARE_LF.sub(eol, more)
    sep = eol if text and not text.endswith(("\n", "\r")) else ""
    end = "" if more.endswith("\n") else eol
    if encoding.startswith(("utf-16", "utf-32")):
        return decoding.encode_like(sep + more + end, encoding)
    if encoding != "utf-8" and _pure_legacy(old, text):
        with contextlib.suppress(UnicodeEncodeError):
            return (sep + more + end).encode(decoding.LEGACY)
    return (sep + more + end).encode("utf-8")


def check_writable(rel: str, st: os.stat_result) -> None:
    """Refused for a note nobody may write (`chmod a-w`, as a person protects a file) or that
    this process may not: an atomic rename would replace it all the same, since only the
    folder's permission counts for a rename (and root may write anything)."""
    if not _may_write(st):
        raise Refused(
            f"{rel} is read-only (mode {stat.S_IMODE(st.st_mode):04o}); it was not changed. "
            "Make it writable (chmod u+w) if it should be edited"
        )


def _may_write(st: os.stat_result) -> bool:
    """The permission bits that apply to this process (root: anybody's)."""
    uid = os.geteuid()
    if uid == 0:
        return bool(st.st_mode & 0o222)
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IWUSR)
    if st.st_gid == os.getegid() or st.st_gid in os.getgroups():
        return bool(st.st_mode & stat.S_IWGRP)
    return bool(st.st_mode & stat.S_IWOTH)


def symlinked(rel: str, full: Path, root_real: Path) -> str:
    """The refusal of a write to a note that is a symlink, naming the note it leads to (the
    agent's next call) when that is in the workspace."""
    real = Path(os.path.realpath(full))
    if real.is_relative_to(root_real) and real != root_real:
        target = real.relative_to(root_real).as_posix()
        return f"{rel} is a symlink to {target}; write to {target} instead"
    return f"{rel} is a symlink; write to the note it points to instead"


def other_names(rel: str, st: os.stat_result) -> dict[str, str]:
    """The answer's warning for a note with other names (hard links), which keep the old text."""
    if st.st_nlink <= 1:
        return {}
    return {
        "warning": f"{rel} had {st.st_nlink - 1} other name(s) (hard links); they keep the old "
        "text, as after any editor's save by rename"
    }


def copy_xattrs(dfd: int, src: str, dst: str) -> None:
    """The extended attributes of `src` onto `dst` (both in the folder `dfd`), where the system
    has them; one the system will not set (security.*, a file system without them) is skipped."""
    if not hasattr(os, "listxattr"):
        return  # macOS: the standard library has no xattr calls
    try:
        sfd = os.open(src, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, dir_fd=dfd)
    except OSError:
        return
    try:
        names = os.listxattr(sfd)
        if not names:
            return
        tfd = os.open(dst, os.O_RDONLY | _NOFOLLOW | _CLOEXEC, dir_fd=dfd)
        try:
            for name in names:
                with contextlib.suppress(OSError):
                    os.setxattr(tfd, name, os.getxattr(sfd, name))
        finally:
            os.close(tfd)
    except OSError:
        return
    finally:
        os.close(sfd)
