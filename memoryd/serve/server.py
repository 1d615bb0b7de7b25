"""The Unix-socket server: newline-delimited JSON-RPC 2.0, owner-only, bounded.

Security: the socket is created 0600 in a 0700 directory we own, and each peer's uid is checked.
Robustness: every malformed, oversized or invalid request gets a JSON-RPC error with a readable
message and the connection (or at worst only that connection) carries on; the daemon never dies
of a request. Work runs in a thread pool so the event loop never blocks on SQLite or the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import socket
import stat
import struct
import sys
import time
from pathlib import Path
from typing import Any, Protocol

from memoryd.core import logsetup, threads
from memoryd.core.errors import AlreadyRunning, MemorydError, TooLarge, Unavailable, describe
from memoryd.core.fsutil import PRIVATE_DIR, make_dirs
from memoryd.core.logsetup import get_logger
from memoryd.serve import methods as api
from memoryd.serve import places, registry
from memoryd.serve.app import App
from memoryd.serve.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_BATCH,
    METHOD_NOT_FOUND,
    ProtocolError,
    batch_error,
    cut_short,
    decode,
    encode,
    error_response,
    leading_id,
)
from memoryd.serve.streams import Connections, drain

log = get_logger("memoryd.serve.server")
# Pending connections the kernel queues before accept(): asyncio would use 100, and a burst of
# clients beyond that gets EAGAIN from connect() at once on a Unix socket (no waiting). The
# kernel caps it at net.core.somaxconn.
BACKLOG = 1024
EVICT_AFTER_S = places.EVICT_AFTER_S  # (serve/places.py)


# A request line carries a note of notes.max_bytes as JSON text: UTF-8 (memoryctl sends it
# unescaped), quotes, backslashes and newlines escaped (2 bytes each), plus the envelope.
NOTE_ENVELOPE_BYTES = 16 * 1024
_ID_HEAD_BYTES = 4096  # of an over-limit line, read to find the id it starts with


def request_limit(max_request_bytes: int, note_max_bytes: int) -> int:
    """The longest request line accepted: server.max_request_bytes, raised so that a note of
    notes.max_bytes can always be written (even one of CJK text, emoji or many newlines)."""
    return max(max_request_bytes, 2 * note_max_bytes + NOTE_ENVELOPE_BYTES)


class ServerSettings(Protocol):
    """Read-only: the frozen config section (memoryd.core.config) satisfies it."""

    @property
    def max_request_bytes(self) -> int: ...

    @property
    def max_connections(self) -> int: ...

    @property
    def idle_timeout_s(self) -> float: ...

    @property
    def first_request_timeout_s(self) -> float: ...

    @property
    def request_timeout_s(self) -> float: ...

    @property
    def shutdown_timeout_s(self) -> float: ...


def peer_uid(sock: socket.socket) -> int | None:
    """The connecting process's uid (SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS)."""
    try:
        if hasattr(socket, "SO_PEERCRED"):
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            return int(struct.unpack("3i", creds)[1])
        if sys.platform == "darwin":
            sol_local, local_peercred = 0, 0x001
            creds = sock.getsockopt(sol_local, local_peercred, 76)
            return int(struct.unpack_from("=Ii", creds)[1])
    except OSError:
        return None
    return None


def check_socket_folder(folder: Path) -> None:
    """Refuse a socket folder that is not a real folder we own, or that others may write to.

    Another user who can create or write the folder could listen there first (and receive our
    clients' requests), so neither is ever "fixed" with a chmod: we say what is wrong instead.
    """
    st = os.lstat(folder)
    if stat.S_ISLNK(st.st_mode):  # another user's link could lead anywhere: never followed
        raise AlreadyRunning(
            f"socket folder {folder} is a symlink (to {os.readlink(folder)}), which memoryd "
            "never follows; set `socket` to a path in the folder it leads to"
        )
    if not stat.S_ISDIR(st.st_mode):
        raise AlreadyRunning(f"socket folder {folder} is not a folder (a file); set `socket`")
    if st.st_uid != os.getuid():
        raise AlreadyRunning(
            f"socket folder {folder} belongs to uid {st.st_uid}, not to you (uid {os.getuid()}); "
            "another user may be listening there: remove it, or set `socket` elsewhere"
        )
    if stat.S_IMODE(st.st_mode) & 0o022:
        raise AlreadyRunning(
            f"socket folder {folder} can be written by others (mode "
            f"{stat.S_IMODE(st.st_mode):04o}); use a private folder (chmod 700) or set `socket`"
        )


def prepare_socket_path(path: Path) -> None:
    """Create the socket's folder 0700 if missing (never chmod one that exists), check it, and
    clear a stale socket; refuse a live one."""
    parent = path.parent
    make_dirs(parent.parent, PRIVATE_DIR)
    try:
        parent.mkdir(mode=0o700)
    except FileExistsError:
        pass
    else:
        os.chmod(parent, 0o700)  # ours, just made: a umask without owner bits must not stop us
    check_socket_folder(parent)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise AlreadyRunning(f"{path} exists and is not a socket; remove it or set `socket`")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except OSError as exc:
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
            log.info("removed stale socket", path=str(path))
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return
        raise AlreadyRunning(f"cannot check socket {path}: {exc}") from exc
    finally:
        probe.close()
    raise AlreadyRunning(f"memoryd is already running on {path}")


def bind_socket(path: Path) -> socket.socket:
    prepare_socket_path(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # born 0600: no window in which others could connect
    try:
        sock.bind(str(path))
    except OSError as exc:  # a full inode table, a read-only folder: name the socket's path
        sock.close()
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(BACKLOG)
    return sock


class Server:
    """Idle connections cannot lock others out: a connection that sends nothing is closed after
    `first_request_timeout_s` (then `idle_timeout_s` between requests), and at
    `max_connections` a new client makes room by closing the connection idle the longest (silent
    for EVICT_AFTER_S at least); while none is, the new one waits, up to
    `first_request_timeout_s`, for one to be, then it is refused (-32003, retry)."""

    def __init__(
        self,
        app: App,
        settings: ServerSettings,
        path: Path,
        *,
        sock: socket.socket | None = None,
        workers: int = 4,
    ) -> None:
        self.app = app
        self.settings = settings
        self.path = path
        self._inherited = sock
        self._owns_path = sock is None
        self._server: asyncio.base_events.Server | None = None
        self._socket_ino: int | None = None  # the socket file we made (relisten_if_removed)
        self._problem_said = False  # a lasting socket problem is logged once
        self._pool = threads.Pool(max_workers=workers, thread_name_prefix="memoryd-rpc")
        # max_connections, one rule with the web page's (serve/places.py); status tells of it
        self.places = places.Places(
            lambda: self.settings.max_connections,
            lambda: self.settings.first_request_timeout_s,
            _close_idle,
        )
        self._inflight = 0
        self._stopping = False  # close() began: a request cut short is answered so
        self._idle = asyncio.Event()
        self._idle.set()
        notes = getattr(getattr(app, "cfg", None), "notes", None)
        self.limit = request_limit(
            settings.max_request_bytes, getattr(notes, "max_bytes", settings.max_request_bytes)
        )
        self._streams = Connections(self._handle, self.limit + 1)
        self.requests_total = 0
        self.errors_total = 0

    @property
    def owns_path(self) -> bool:
        """False under socket activation: the socket file is the service manager's."""
        return self._owns_path

    def apply(self, settings: ServerSettings, note_max_bytes: int) -> None:
        """Reloaded settings (SIGHUP): the timeouts, and the request limit raised to fit a note
        of the new notes.max_bytes, for the connections accepted from now on."""
        self.settings = settings
        self.limit = request_limit(settings.max_request_bytes, note_max_bytes)
        self._streams.limit = self.limit + 1

    async def start(self) -> None:
        sock = self._inherited if self._inherited is not None else bind_socket(self.path)
        await self._listen(sock)
        log.info("listening", socket=str(self.path), inherited=not self._owns_path)
        doors = getattr(self.app, "doors", None)
        if isinstance(doors, dict):  # status: what the limits did since the start
            doors["socket"] = self.places.info
            accepts = getattr(asyncio.get_running_loop(), "accept_info", None)
            if accepts is not None:
                doors["accept"] = accepts

    async def _listen(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        if self._owns_path:
            self._socket_ino = os.lstat(self.path).st_ino
        self._server = await asyncio.get_running_loop().create_unix_server(
            self._streams.protocol, sock=sock, backlog=BACKLOG
        )

    async def relisten_if_removed(self) -> bool:
        """A socket file removed under us (a temp-folder cleaner: macOS clears its temp folders
        of files untouched for days, systemd-tmpfiles ages /tmp) left the daemon running and
        unreachable: listen again at the same path (its folder checked and made again as at
        start-up). Only a path that is gone is taken back; anything else there is left alone."""
        if not self._owns_path or self._server is None:
            return False
        try:
            ino: int | None = os.lstat(self.path).st_ino
        except FileNotFoundError:
            ino = None
        except OSError:  # something else in the way (a file where the folder was)
            ino = -1
        if ino is not None:
            if ino != self._socket_ino and not self._problem_said:
                self._problem_said = True
                log.warning(
                    "another file took the socket's path; it is left alone", socket=str(self.path)
                )
            return False
        old = self._server
        try:
            sock = bind_socket(self.path)
        except (OSError, MemorydError) as exc:
            if not self._problem_said:  # said once, not every 30 s
                self._problem_said = True
                log.error("the socket file was removed and cannot be made again", error=str(exc))
            return False
        self._problem_said = False
        await self._listen(sock)
        await self._streams.stop_accepting(old)  # its file is gone: no client can reach it
        log.warning("the socket file was removed; listening again", socket=str(self.path))
        return True

    async def close(self) -> None:
        """Stop accepting, let requests in flight finish (bounded), close connections."""
        self._stopping = True
        if self._server is not None:
            await self._streams.stop_accepting(self._server)
        try:
            await asyncio.wait_for(self._idle.wait(), self.settings.shutdown_timeout_s)
        except TimeoutError:
            log.warning("requests still running at shutdown", inflight=self._inflight)
            # answered "cut short" below; their threads are waited for (_pool.shutdown): a
            # `reindex` of the workspace ran to its end first, past the service manager's stop
            # timeout on a large one (SIGKILL), before App.close told the indexer to stop
            self.app.stop_work()
        await self._streams.shutdown()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._owns_path:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    # -- connections --------------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        try:
            sock = writer.get_extra_info("socket")
            uid = peer_uid(sock) if sock is not None else None
            if uid is not None and uid != os.getuid():
                log.warning("refused connection from another user", uid=uid)
                await self._send(writer, error_response(None, INVALID_REQUEST, "permission denied"))
                return
            conn = await self.places.take(task, writer)
            if conn is None:
                limit = self.settings.max_connections
                await self._send(
                    writer,
                    error_response(
                        None,
                        Unavailable.code,
                        f"too many connections ({limit}, all running a request); retry shortly",
                    ),
                )
                return
            await self._serve(reader, writer, conn)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("connection failed")
        finally:
            self.places.leave(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: places.Place
    ) -> None:
        limit = self.limit
        while True:
            timeout = (
                self.settings.idle_timeout_s
                if conn.served
                else min(self.settings.first_request_timeout_s, self.settings.idle_timeout_s)
            )
            try:
                # readuntil, not readline: over the limit it leaves the line in the buffer,
                # so the answer can carry the id the line starts with
                async with asyncio.timeout(timeout):  # no task of its own (as wait_for's)
                    line = await reader.readuntil(b"\n")
            except TimeoutError:
                return
            except asyncio.IncompleteReadError as exc:
                line = exc.partial  # the peer closed: the last line has no newline
            except (ValueError, asyncio.LimitOverrunError):
                # The line is over the limit: say so, then drop the connection (the rest of the
                # oversized line cannot be told apart from the next request).
                head = await reader.read(_ID_HEAD_BYTES)
                await self._send(
                    writer,
                    error_response(
                        leading_id(head),
                        TooLarge.code,
                        f"request larger than {limit} bytes (the server's limit: "
                        "server.max_request_bytes, raised to fit a note of notes.max_bytes)",
                    ),
                )
                return
            if not line:
                return
            if not line.strip():
                continue
            self.places.busy(conn)
            sending = False
            try:
                response = await self._dispatch_line(line)
                if response is not None:
                    sending = True
                    await self._send(writer, response)
            except asyncio.CancelledError:  # the stop's deadline passed: say so, then go
                waited = self.settings.shutdown_timeout_s
                cut = None if sending else cut_short(line, waited, Unavailable.code)
                if self._stopping and cut is not None:
                    writer.write(encode(cut))  # sent as the handler closes its writer
                raise
            finally:
                self.places.idle(conn)

    async def _send(self, writer: asyncio.StreamWriter, payload: Any) -> None:
        """A client that takes none of its answer for request_timeout_s is dropped."""
        writer.write(encode(payload))
        await drain(writer, self.settings.request_timeout_s)

    # -- requests -----------------------------------------------------------------------------

    async def _dispatch_line(self, line: bytes) -> Any:
        """The answer to one line (None for notifications only). Never raises."""
        try:
            try:
                msg = decode(line)
            except ProtocolError as exc:
                self.errors_total += 1
                return exc.response()
            if isinstance(msg, list):
                if not msg:
                    return error_response(None, INVALID_REQUEST, "empty batch")
                if len(msg) > MAX_BATCH:
                    self.errors_total += 1
                    return batch_error(len(msg)).response()
                replies = [r for r in [await self._dispatch(m) for m in msg] if r is not None]
                return replies or None
            return await self._dispatch(msg)
        except Exception as exc:  # a bug: answer, log, carry on
            self.errors_total += 1
            log.exception("request failed before dispatch")
            return error_response(None, INTERNAL_ERROR, f"internal error: {type(exc).__name__}")

    async def _dispatch(self, msg: Any) -> dict[str, Any] | None:
        self.requests_total += 1
        if not isinstance(msg, dict):
            return error_response(None, INVALID_REQUEST, "a request must be a JSON object")
        req_id = msg.get("id")
        notification = "id" not in msg
        if not (req_id is None or isinstance(req_id, str | int)) or isinstance(req_id, bool):
            return error_response(
                None, INVALID_REQUEST, f"id must be a string or an integer, got {describe(req_id)}"
            )
        if msg.get("jsonrpc") != "2.0":
            return error_response(req_id, INVALID_REQUEST, 'jsonrpc must be "2.0"')
        name = msg.get("method")
        if not isinstance(name, str):
            return error_response(req_id, INVALID_REQUEST, "method must be a string")
        params = msg.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return error_response(req_id, INVALID_PARAMS, "params must be an object")
        try:
            method = api.lookup(name, params)
        except KeyError:
            names = ", ".join(sorted(api.METHODS))
            return error_response(
                req_id, METHOD_NOT_FOUND, f"unknown method {describe(name)} ({names})"
            )
        except MemorydError as exc:
            return error_response(req_id, exc.code, exc.message, exc.data)
        started = time.perf_counter()
        self._inflight += 1
        self._idle.clear()
        try:
            fut = asyncio.get_running_loop().run_in_executor(
                self._pool, method.fn, self.app, params
            )
            async with asyncio.timeout(None if method.slow else self.settings.request_timeout_s):
                result = await fut
        except MemorydError as exc:
            self.errors_total += 1
            return None if notification else error_response(req_id, exc.code, exc.message, exc.data)
        except TimeoutError:  # the method goes on in its thread: say so, here and in the log
            self.errors_total += 1
            limit = self.settings.request_timeout_s
            log.warning("request timed out; it goes on", method=name, timeout_s=limit)
            return error_response(
                req_id,
                INTERNAL_ERROR,
                f"{name} timed out: it did not finish within server.request_timeout_s "
                f"({limit:g} s) and goes on in the daemon, so it may still complete (the log "
                "says when it does)",
            )
        except Exception as exc:
            self.errors_total += 1
            code, message, what = registry.unexpected(exc, name)
            if code in (INTERNAL_ERROR, INVALID_PARAMS):  # a bug, or a check that is missing
                log.exception(f"request {what}", method=name)
            else:
                log.error(f"request {what}", method=name, error=message)
            if notification and code not in (INTERNAL_ERROR, INVALID_PARAMS):
                return None
            return error_response(req_id, code, message)
        finally:
            self._inflight -= 1
            if self._inflight == 0:
                self._idle.set()
        if logsetup.enabled("debug"):
            ms = round((time.perf_counter() - started) * 1000, 2)
            log.debug("request", method=name, ms=ms)
        if notification:
            return None
        return {"jsonrpc": "2.0", "id": req_id, "result": result}


def _close_idle(place: places.Place) -> None:
    """A connection closed to make room at max_connections hears why."""
    place.writer.write(
        encode(
            error_response(
                None,
                Unavailable.code,
                "connection closed: idle while the server was at max_connections",
            )
        )
    )
    place.writer.close()
