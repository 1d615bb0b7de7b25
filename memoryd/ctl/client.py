"""Talking to the daemon: where its socket is, whether it can be trusted, one request per call.

Before sending anything, the client checks that the socket's folder is a folder the user owns
that no one else can write to, and after connecting, that the process listening runs as the
same uid (SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS and the BSDs). Otherwise another user
who made the folder first (with XDG_RUNTIME_DIR unset the default is under /tmp) would receive
every request, memories included.
"""

from __future__ import annotations

import _socket  # the C module: `socket` costs its enums and `selectors` at every start
import stat
import sys

from memoryd.ctl import fsenv

TYPE_CHECKING = False
if TYPE_CHECKING:  # `typing` is not free to import; annotations are never evaluated at run time
    from collections.abc import Mapping
    from typing import Any

DEFAULT_TIMEOUT, SLOW_TIMEOUT = 30.0, 600.0
START_HINT = "Start it with 'memoryd run' or 'memoryd service install'."
ELSEWHERE_HINT = "If it listens elsewhere, pass --socket PATH or set MEMORYD_SOCKET."


# --- JSON without `import json` ---------------------------------------------------------------
# The json package compiles regular expressions (and imports re, enum, ...) when imported: more
# than the whole search at 10K chunks. Its C accelerator does the real work; call it directly
# and fall back to json wherever that would differ (errors, a Python without _json).


class _ScanContext:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {
        "NaN": float("nan"),
        "Infinity": float("inf"),
        "-Infinity": float("-inf"),
    }.__getitem__


def dumps(obj: Any, *, ascii: bool = True) -> str:
    """json.dumps(obj) (compact separators; ASCII, or with ascii=False text as it is)."""
    try:
        import _json

        encode = _json.make_encoder(
            None,
            _not_serializable,
            _json.encode_basestring_ascii if ascii else _json.encode_basestring,
            None,
            ":",
            ",",
            False,
            False,
            True,
        )
        return "".join(encode(obj, 0))
    except ImportError:
        import json

        return json.dumps(obj, separators=(",", ":"), ensure_ascii=ascii)


def encode_request(obj: Any) -> bytes:
    """A request as UTF-8 JSON (a CJK character costs 3 bytes, not the 6 of a \\u escape).
    An argument made of bytes that are not UTF-8 (Python surrogate-escapes them in sys.argv) is
    read as the daemon reads a note's (ctl/textin.py: `café` typed in a Latin-1 terminal
    is `café`); other text that is not valid Unicode (a lone surrogate) is sent escaped, for the
    daemon to refuse."""
    try:
        return dumps(obj, ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        pass
    from memoryd.ctl.textin import repair

    def fixed(value: Any) -> Any:
        if isinstance(value, str):
            return repair(value)
        if isinstance(value, list):
            return [fixed(v) for v in value]
        if isinstance(value, dict):
            return {k: fixed(v) for k, v in value.items()}
        return value

    obj = fixed(obj)
    try:
        return dumps(obj, ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return dumps(obj).encode("ascii")


def _not_serializable(obj: Any) -> Any:
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def loads(text: str) -> Any:
    """json.loads(text); ValueError when it is not JSON."""
    try:
        import _json

        # typeshed types make_scanner's argument as a JSONDecoder; the C scanner reads only
        # the attributes _ScanContext has (what json.decoder passes when it is itself)
        scan = _json.make_scanner(_ScanContext())  # type: ignore[arg-type]
        value, end = scan(text, _skip_ws(text, 0))
        if _skip_ws(text, end) == len(text):
            return value
    except (ImportError, StopIteration, ValueError, RecursionError):
        pass
    import json  # the slow path gives the real error (or handles what the scanner could not)

    return json.loads(text)


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\n\r":
        i += 1
    return i


# Where the daemon's default socket is when the login session's XDG_RUNTIME_DIR is not passed
# down. MCP clients start servers with a minimal environment (the MCP SDKs keep only HOME,
# LOGNAME, PATH, SHELL, TERM and USER), so `memoryd mcp` does not see the XDG_RUNTIME_DIR (or,
# on macOS, the TMPDIR) the daemon was started with, and would look in /tmp instead.
LOGIN_RUNTIME_BASE = "/run/user"


def login_socket_paths(env: Mapping[str, str] | None = None) -> list[str]:
    """The default socket path under the login session's runtime folder when the environment
    lost it: /run/user/UID (systemd-logind; the folder must be ours) on Linux, the per-user
    temp folder (getconf DARWIN_USER_TEMP_DIR) on macOS."""
    env = fsenv.environ() if env is None else env
    out: list[str] = []
    if not _xdg("XDG_RUNTIME_DIR", env):
        runtime = fsenv.join(LOGIN_RUNTIME_BASE, str(fsenv.getuid()))
        try:
            st = fsenv.stat(runtime)
        except OSError:
            st = None
        if st is not None and st.st_uid == fsenv.getuid():
            out.append(fsenv.join(runtime, "memoryd", "memoryd.sock"))
    if sys.platform == "darwin" and not env.get("TMPDIR"):
        import subprocess

        try:
            tmp = subprocess.run(
                ["/usr/bin/getconf", "DARWIN_USER_TEMP_DIR"],
                capture_output=True,
                text=True,
                timeout=5,
                check=True,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            tmp = ""
        if tmp:
            out.append(fsenv.join(tmp, f"memoryd-{fsenv.getuid()}", "memoryd.sock"))
    return out


def socket_path(explicit: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """--socket, else $MEMORYD_SOCKET, else the daemon's default (memoryd.core.runtime's rule:
    with XDG_RUNTIME_DIR unset, <temp>/memoryd-<uid>/, or <data dir>/run/ when another user
    took that name first)."""
    env = fsenv.environ() if env is None else env
    if explicit:
        return given_path(explicit, env)  # relative: to the working directory, as any argument
    chosen = env.get("MEMORYD_SOCKET")
    if chosen:
        path = given_path(chosen, env)
        # relative: to the configuration file's folder, as the daemon reads the same variable
        return path if path.startswith("/") else fsenv.join(_config_folder(env), path)
    runtime = _xdg("XDG_RUNTIME_DIR", env)
    if runtime:
        return fsenv.join(runtime, "memoryd", "memoryd.sock")
    folder = fsenv.join(temp_dir(), f"memoryd-{fsenv.getuid()}")
    if _foreign(folder):  # taken by someone else: the daemon listens in its fallback folder
        data = _xdg("XDG_DATA_HOME", env) or fsenv.expanduser("~/.local/share")
        return fsenv.join(data, "memoryd", "run", "memoryd.sock")
    return fsenv.join(folder, "memoryd.sock")


def given_path(path: str, env: Mapping[str, str]) -> str:
    """A socket path as given (--socket, $MEMORYD_SOCKET) read as the daemon reads its path
    settings (memoryd.core.config._path), so both find one socket from one spelling: $VARS and
    ${VARS} expanded ($$ for a literal $; a variable that is not set, or a `$` that starts none,
    leaves the text as written, which the error then shows), then `~`; a trailing slash and
    `.` parts dropped. An MCP client's `env` or `args` and a unit's Environment= line are not
    expanded by a shell."""
    if "$" in path:
        path = _expand_vars(path, env)
    path = fsenv.expanduser(path)
    # as pathlib reads it: empty and `.` parts dropped (`./a//b/` is `a/b`), `..` kept
    parts = [p for p in path.split("/") if p not in ("", ".")]
    return ("/" if path.startswith("/") else "") + "/".join(parts) or path


_NAME_CHARS = frozenset("_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _expand_vars(text: str, env: Mapping[str, str]) -> str:
    """string.Template(text).substitute(env) without importing string (and re): the text as
    written when a name is not set or a `$` starts no name."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] != "$":
            out.append(text[i])
            i += 1
            continue
        if text.startswith("$$", i):
            out.append("$")
            i += 2
            continue
        braced = text.startswith("${", i)
        start = i + 2 if braced else i + 1
        end = start
        while end < len(text) and text[end] in _NAME_CHARS:
            end += 1
        name = text[start:end]
        if not name or name[0].isdigit() or (braced and not text.startswith("}", end)):
            return text
        if name not in env:
            return text
        out.append(env[name])
        i = end + 1 if braced else end
    return "".join(out)


def _config_folder(env: Mapping[str, str]) -> str:
    """The folder of the configuration file the daemon reads with this environment
    (memoryd.core.config.find_config_file: $MEMORYD_CONFIG, else
    $XDG_CONFIG_HOME/memoryd/config.toml when it exists), else the working directory."""
    given = env.get("MEMORYD_CONFIG")
    if given:
        found = fsenv.abspath(fsenv.expanduser(_expand_vars(given, env)))
    else:
        base = _xdg("XDG_CONFIG_HOME", env) or fsenv.expanduser("~/.config")
        found = fsenv.join(base, "memoryd", "config.toml")
        try:
            if not stat.S_ISREG(fsenv.stat(found).st_mode):
                return fsenv.abspath(".")
        except OSError:
            return fsenv.abspath(".")
    return fsenv.dirname(found)


def _xdg(name: str, env: Mapping[str, str]) -> str | None:
    """memoryd.core.runtime.xdg: $name when it is an absolute path, else None (the XDG
    specification says a relative value is ignored)."""
    value = env.get(name)
    return value if value and value.startswith("/") else None


def temp_dir() -> str:
    """tempfile.gettempdir() without importing tempfile, which imports random, shutil and more
    (twice the rest of memoryctl's start-up): the first of $TMPDIR, $TEMP, $TMP, /tmp, /var/tmp
    and /usr/tmp that is a folder we may write to, as tempfile's first that takes a test file.
    tempfile itself answers when it is imported already (its answer may be set) or none fits."""
    if "tempfile" not in sys.modules:
        env = fsenv.environ()  # tempfile reads os.environ, whatever env socket_path was given
        names = [env.get(name) for name in ("TMPDIR", "TEMP", "TMP")]
        for folder in [*(name for name in names if name), "/tmp", "/var/tmp", "/usr/tmp"]:
            folder = folder if folder == "." else fsenv.abspath(folder)
            if fsenv.writable_dir(folder):
                return folder
    import tempfile

    return tempfile.gettempdir()


def _foreign(folder: str) -> bool:
    """memoryd.core.runtime.untrusted_folder's test: a folder that exists and is not a private
    folder of ours (a symlink, a file, another user's, or writable by others)."""
    try:
        st = fsenv.lstat(folder)
    except OSError:
        return False
    return (
        not stat.S_ISDIR(st.st_mode)
        or st.st_uid != fsenv.getuid()
        or bool(stat.S_IMODE(st.st_mode) & 0o022)
    )


def resolve_socket(explicit: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """socket_path(); when that is only the default and nothing is there, the default under the
    login session's runtime folder if a daemon listens there (a shell without XDG_RUNTIME_DIR:
    `sudo -u`, `su`, cron, ssh without pam_systemd)."""
    env = fsenv.environ() if env is None else env
    path = socket_path(explicit, env)
    if explicit or env.get("MEMORYD_SOCKET") or fsenv.exists(path):
        return path
    return next((p for p in login_socket_paths(env) if fsenv.exists(p)), path)


class ClientError(Exception):
    """The daemon answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    @property
    def exit_status(self) -> int:
        """2 when the daemon refused an argument (-32602: out of range, unknown, wrong form), a
        usage error as one memoryctl catches itself; else 1."""
        return 2 if self.code == -32602 else 1


class Unreachable(Exception):
    """No daemon answered on the socket (or none we trust); the message says why and what to do."""


class UsageError(Exception):
    """The arguments are valid one by one but not together (or an input file is unusable)."""


class Refused(Exception):
    """The system refused a file memoryctl writes (a full disk, a read-only folder): exit 1, as
    a refused standard output is."""


def untrusted_folder(path: str) -> str | None:
    """Why the socket's folder cannot be trusted, or None. A missing folder is left to connect()."""
    folder = fsenv.dirname(fsenv.abspath(path))
    try:
        st = fsenv.stat(folder)
    except OSError:
        return None
    if st.st_uid != fsenv.getuid():
        return (
            f"refusing the socket folder {folder}: it belongs to uid {st.st_uid}, not to you "
            f"(uid {fsenv.getuid()}), so another user may be listening there. Remove it (the "
            "daemon makes its own) or pass --socket PATH"
        )
    if stat.S_IMODE(st.st_mode) & 0o022:
        return (
            f"refusing the socket folder {folder}: others can write to it (mode "
            f"{stat.S_IMODE(st.st_mode):04o}), so anyone could put a socket there. Use a private "
            "folder (chmod 700) or pass --socket PATH"
        )
    return None


def peer_uid(sock: _socket.socket) -> int | None:
    """The uid of the process at the other end, where the platform can tell."""
    try:
        if hasattr(_socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
            creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
            return int.from_bytes(creds[4:8], sys.byteorder)
        if sys.platform == "darwin" or "bsd" in sys.platform:
            # LOCAL_PEERCRED (getpeereid's source): struct xucred {u_int version; uid_t uid; ...}
            creds = sock.getsockopt(0, 0x001, 76)
            return int.from_bytes(creds[4:8], sys.byteorder)
    except OSError:
        return None
    return None


class Client:
    """One request per connection: connect, check the peer, send one line, read one line."""

    def __init__(self, path: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.path = path
        self.timeout = timeout

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """The method's result; raises ClientError (the daemon said no) or Unreachable."""
        request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        data = encode_request(request) + b"\n"
        sock = self.connect()
        try:
            try:  # noqa: SIM105 (contextlib costs an import)
                sock.sendall(data)
            except OSError:
                pass  # the daemon may have answered (and hung up) already: read that answer
            line = _read_line(sock)
        except TimeoutError:
            raise Unreachable(
                f"memoryd did not answer {method} within {self.timeout:g}s "
                "(raise it with --timeout)"
            ) from None
        except OSError:
            line = b""
        finally:
            sock.close()
        if not line.strip():
            raise Unreachable(
                f"memoryd closed the connection without answering {method} (it may be stopping, "
                "or overloaded); try again, and see the daemon's log if it persists"
            )
        try:
            response = loads(line.decode("utf-8"))
        except (ValueError, RecursionError):
            response = None
        if not isinstance(response, dict) or not ("result" in response or "error" in response):
            raise ClientError(-32700, f"memoryd sent an unreadable answer to {method}")
        error = response.get("error")
        if error is not None:
            if not isinstance(error, dict):
                error = {"message": str(error)}
            code = error.get("code")
            message = str(error.get("message") or "unknown error")
            if code in (-32601, -32602) and method != "status":  # what an older daemon says
                message += self._older_daemon()
            raise ClientError(code if isinstance(code, int) else -32603, message, error.get("data"))
        return response["result"]

    def _older_daemon(self) -> str:
        """A note for an error an older daemon may give a newer client (an unknown method or
        param): when the daemon started before this memoryd was installed, it still runs the
        earlier version (ctl/installed.py)."""
        try:
            status = Client(self.path, min(self.timeout, 5.0)).call("status")
            from memoryd.ctl import installed

            if not (isinstance(status, dict) and installed.daemon_older(status)):
                return ""
        except Exception:  # only a note: the error itself is what counts
            return ""
        return (
            "; the daemon runs an earlier memoryd than this one (it started before memoryd "
            f"was installed again): {installed.RESTART_HINT}"
        )

    def connect(self) -> _socket.socket:
        why = untrusted_folder(self.path)
        if why:
            raise Unreachable(why)
        sock = self._connect_retrying()
        uid = peer_uid(sock)
        if uid is not None and uid != fsenv.getuid():
            sock.close()
            raise Unreachable(
                f"refusing to talk to {self.path}: the process listening there runs as uid {uid}, "
                f"not as you (uid {fsenv.getuid()}); another user may have taken the socket"
            )
        return sock

    def _connect_retrying(self) -> _socket.socket:
        """Connect; a full listen backlog (EAGAIN: a burst of clients) is retried with a growing
        pause until the timeout, as a TCP client's SYN would be."""
        import time  # builtin module: no file to load

        deadline = time.monotonic() + self.timeout
        pause = 0.005
        while True:
            sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            try:
                sock.connect(self.path)
                return sock
            except BlockingIOError as exc:
                sock.close()
                if time.monotonic() + pause > deadline:
                    raise Unreachable(self._why(exc)) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.2)
            except OSError as exc:
                sock.close()
                raise Unreachable(self._why(exc)) from None

    def _why(self, exc: OSError) -> str:
        path = self.path
        if isinstance(exc, FileNotFoundError | NotADirectoryError):
            return f"memoryd is not running (no socket at {path}). {START_HINT} {ELSEWHERE_HINT}"
        if isinstance(exc, ConnectionRefusedError):
            if not _is_socket(path):
                # (no daemon was named before it: "it" would have nothing to stand for)
                hint = ELSEWHERE_HINT.replace("If it listens", "If memoryd listens", 1)
                return f"{path} is not a socket. {hint}"
            return (
                f"memoryd is not running (stale socket at {path}: nothing accepts connections). "
                f"{START_HINT}"
            )
        if isinstance(exc, PermissionError):
            return (
                f"permission denied connecting to {path} (memoryd accepts only the user it runs "
                "as; its socket folder is private)"
            )
        if isinstance(exc, TimeoutError):
            return (
                f"memoryd did not accept the connection on {path} within {self.timeout:g}s "
                "(busy or hung: see the daemon's log, or raise --timeout)"
            )
        if exc.errno is None and "too long" in str(exc):
            return (
                f"socket path too long ({len(path.encode())} bytes; Unix sockets allow about "
                f"104): {path}"
            )
        if isinstance(exc, BlockingIOError):
            return (
                f"memoryd at {path} accepted no connection within {self.timeout:g}s: its queue "
                "of new connections stayed full (a burst of clients); try again"
            )
        return f"cannot connect to memoryd at {path}: {exc.strerror or exc}"


def _read_line(sock: _socket.socket) -> bytes:
    buf = bytearray()
    while True:
        part = sock.recv(1 << 16)
        if not part:
            return bytes(buf)
        buf += part
        if b"\n" in part:
            return bytes(buf[: buf.index(b"\n")])


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(fsenv.stat(path).st_mode)
    except OSError:
        return False


def version() -> str:
    """The package version, read from memoryd/__init__.py (no import of memoryd's modules)."""
    import re

    try:
        init = fsenv.join(fsenv.dirname(fsenv.dirname(fsenv.abspath(__file__))), "__init__.py")
        with open(init, encoding="utf-8") as f:
            m = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", f.read(), re.MULTILINE)
        if m:
            return m.group(1)
    except OSError:
        pass
    from importlib import metadata

    try:
        return metadata.version("memoryd")
    except metadata.PackageNotFoundError:
        return "unknown"
