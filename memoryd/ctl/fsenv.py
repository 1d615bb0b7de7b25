"""The environment and the few path and file calls memoryctl makes, without `import os`.

bin/memoryctl runs Python without `site`, and then `os` is the largest import of a command:
it builds os.environ on collections.abc (6.4 of about 50 million instructions at start-up).
These come straight from `posix` instead, with os.path's own rules. Once os is imported anyway
(in a test, in the daemon's process, under `site`), os.environ answers, so that its changes
count. Standard library only, as the rest of memoryd.ctl.
"""

from __future__ import annotations

import posix  # memoryctl talks over a Unix socket: POSIX only
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

getuid = posix.getuid
stat = posix.stat
lstat = posix.lstat
_decoded: dict[str, str] | None = None


def environ() -> Mapping[str, str]:
    """os.environ, or when os is not imported the same, decoded from posix's bytes."""
    global _decoded
    os = sys.modules.get("os")
    if os is not None:
        return os.environ
    if _decoded is None:
        enc = sys.getfilesystemencoding()
        _decoded = {
            k.decode(enc, "surrogateescape"): v.decode(enc, "surrogateescape")
            for k, v in posix.environ.items()
        }
    return _decoded


def exists(path: str) -> bool:
    try:
        posix.stat(path)
    except (OSError, ValueError):
        return False
    return True


def is_dir(path: str) -> bool:
    try:
        return posix.stat(path).st_mode & 0o170000 == 0o040000
    except (OSError, ValueError):
        return False


def writable_dir(path: str) -> bool:
    """A folder we may create files in (access(2) with W_OK and X_OK)."""
    return is_dir(path) and posix.access(path, posix.W_OK | posix.X_OK)


def join(first: str, *parts: str) -> str:
    """os.path.join (POSIX)."""
    path = first
    for part in parts:
        if part.startswith("/"):
            path = part
        elif not path or path.endswith("/"):
            path += part
        else:
            path += "/" + part
    return path


def dirname(path: str) -> str:
    """os.path.dirname (POSIX)."""
    head = path[: path.rfind("/") + 1]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head


def abspath(path: str) -> str:
    """os.path.abspath (POSIX): joined to the current folder, then normalised."""
    if not path.startswith("/"):
        path = join(posix.getcwd(), path)
    return normpath(path)


def normpath(path: str) -> str:
    """os.path.normpath (POSIX)."""
    if not path:
        return "."
    initial = 1 if path.startswith("/") else 0
    if initial and path.startswith("//") and not path.startswith("///"):
        initial = 2  # POSIX leaves the meaning of exactly two leading slashes to the system
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part != ".." or (not initial and not parts) or (parts and parts[-1] == ".."):
            parts.append(part)
        elif parts:
            parts.pop()
    joined = "/" * initial + "/".join(parts)
    return joined or "."


def expanduser(path: str) -> str:
    """`~` as the daemon reads it (memoryd.core.runtime.home): $HOME when it is an absolute
    path, else (unset, empty or relative) the password database's entry; with neither, the path
    as given (the daemon refuses it; here it is a path that is not found). `~user` as
    os.path.expanduser reads it. os only for a path that starts with `~`."""
    if not path.startswith("~"):
        return path
    import os

    if path != "~" and not path.startswith("~/"):
        return os.path.expanduser(path)
    home = os.environ.get("HOME") or ""
    if not os.path.isabs(home):  # `HOME=` made ~/.config `/.config`
        import pwd

        try:
            home = pwd.getpwuid(os.getuid()).pw_dir
        except KeyError:
            return path
    return home.rstrip("/") + path[1:] or "/"


def terminal_columns(fd: int = 1) -> int:
    """os.get_terminal_size(fd).columns (OSError when fd is not a terminal)."""
    return posix.get_terminal_size(fd).columns
