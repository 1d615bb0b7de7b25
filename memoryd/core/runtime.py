"""Where the daemon listens by default, the rule memoryctl follows too (ctl/client.py keeps a
stdlib copy; tests/test_ctl.py checks both agree).

$XDG_RUNTIME_DIR/memoryd/memoryd.sock; without XDG_RUNTIME_DIR (or with a relative one, which
the XDG specification says to ignore, as every XDG variable here: `xdg`),
<temp dir>/memoryd-<uid>/ — unless that name is taken by a folder we cannot trust (another
user made it first, it is a symlink or a file, or others can write to it): then
<default data dir>/run/memoryd.sock, a folder only we can create, so another user cannot keep
the daemon from starting.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from memoryd.core.errors import ConfigError

# SIGHUPs that came before the daemon serves: `memoryd run` notes them from its first line
# (cli.main), since the default action would end the process while it imports and opens the
# store, and so does the daemon's own handler until READY=1; it reloads once it serves
# (serve/daemon.py)
early_hups: list[int] = []


def note_hup(signum: int, frame: object) -> None:
    early_hups.append(signum)


def xdg(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """$XDG_<name> when it is an absolute path, else None (unset): the XDG Base Directory
    specification says a relative value is invalid and is ignored (`XDG_DATA_HOME=data` would
    otherwise put the store in whatever folder the daemon was started from). Every reader of
    an XDG variable goes through here (ctl/client.py keeps a stdlib copy, `_xdg`)."""
    env = os.environ if env is None else env
    value = env.get(name)
    return value if value and os.path.isabs(value) else None


def home(setting: str, env: Mapping[str, str] | None = None) -> str:
    """The user's home folder, for a path `setting` that starts with `~`: $HOME when it is an
    absolute path; else (unset, empty or relative) the password database's entry for this uid,
    as Python's expanduser does when HOME is unset; else a configuration error naming the
    setting. Python left `~` as it was when neither gave a home (a uid with no passwd entry, in
    a container): the store went to `./~/.local/share/memoryd` under the working folder; and
    `HOME=` (empty) made it `/.local/share/memoryd`. ctl/fsenv.py keeps memoryctl's copy."""
    env = os.environ if env is None else env
    value = env.get("HOME") or ""
    if os.path.isabs(value):
        return value
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        pass
    said = f"HOME is {'set to ' + repr(value) if value else 'not set'}"
    instead = ""
    if setting.replace(".", "_").isidentifier() and setting.islower():  # workspace, logging.file
        instead = f", or set {setting} (MEMORYD_{setting.upper().replace('.', '_')}) to one"
    raise ConfigError(
        f"{setting}: cannot tell where ~ is: {said} and user {os.getuid()} has no entry in the "
        f"password database; set HOME to your home folder (an absolute path){instead}"
    )


def expand_home(path: str, setting: str, env: Mapping[str, str] | None = None) -> str:
    """`path` with a leading `~` or `~/` as the home folder (`home`); `~user/` as Python reads
    it; anything else as given. Every path memoryd reads goes through here."""
    if path == "~" or path.startswith("~/"):
        return home(setting, env).rstrip("/") + path[1:] or "/"
    return os.path.expanduser(path) if path.startswith("~") else path


def home_or_absolute(value: str) -> bool:
    """Whether a path setting that must be inside the workspace names the home folder or an
    absolute path (`~/journal`; `~draft` is a folder's name, unless a user's)."""
    return value.split("/")[0] == "~" or os.path.isabs(os.path.expanduser(value))


def default_workspace(env: Mapping[str, str] | None = None) -> Path:
    return Path(expand_home("~/memoryd", "workspace", env))


def default_data_dir(env: Mapping[str, str] | None = None) -> Path:
    base = xdg("XDG_DATA_HOME", env) or expand_home("~/.local/share", "data_dir", env)
    return Path(base) / "memoryd"


def untrusted_folder(folder: Path) -> str | None:
    """Why a socket folder that exists cannot be ours, or None (missing or fine)."""
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder (a symlink or a file)"
    if st.st_uid != os.getuid():
        return f"it belongs to uid {st.st_uid}"
    if stat.S_IMODE(st.st_mode) & 0o022:
        return f"others can write to it (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def temp_socket_path() -> Path:
    return Path(tempfile.gettempdir()) / f"memoryd-{os.getuid()}" / "memoryd.sock"


def fallback_socket_path(env: Mapping[str, str] | None = None) -> Path:
    return default_data_dir(env) / "run" / "memoryd.sock"


def default_socket_path(env: Mapping[str, str] | None = None) -> Path:
    runtime = xdg("XDG_RUNTIME_DIR", env)
    if runtime:
        return Path(runtime) / "memoryd" / "memoryd.sock"
    temp = temp_socket_path()
    if untrusted_folder(temp.parent) is not None:
        return fallback_socket_path(env)
    return temp


def home_default_note(setting: str | None, value: object) -> str | None:
    """For a start refused on a path that is its setting's default under the home folder (HOME
    pointing at a missing or read-only folder): the note that says so, as the user did not
    write that path anywhere; else None."""
    if setting not in DEFAULT_PATHS:
        return None
    try:
        default, home_folder = DEFAULT_PATHS[setting](), home(setting)
    except ConfigError:
        return None
    if value != default or not str(default).startswith(home_folder.rstrip("/") + "/"):
        return None
    return (
        f"{setting} is its default, under HOME={home_folder}: set HOME to your home folder, or "
        f"set {setting} (MEMORYD_{setting.upper()}) to a folder of yours"
    )


# each top-level path setting's default, computed only when the setting is not given
DEFAULT_PATHS = {
    "workspace": default_workspace,
    "data_dir": default_data_dir,
    "socket": default_socket_path,
}
