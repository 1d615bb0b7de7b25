"""The daemon's lifecycle: startup -> serve -> shutdown, signals in one place.

Startup order matters: take the lock (one daemon per database), open the store, bind the socket
and tell the service manager READY=1 as soon as queries are answered (keyword search over what
is already indexed); then, in the background, load the model, start the watcher, reconcile the
workspace and embed. SIGTERM/SIGINT drain requests in flight and finish the write in progress
within server.shutdown_timeout_s (a request still running then is answered "cut short"); a second
SIGINT forces exit. SIGHUP reloads the configuration (one while it starts: once it serves).
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import functools
import os
import signal
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from memoryd.core import crashlog, logsetup, oserrors, runtime, threads
from memoryd.core.config import RELOADABLE, Config, diff, doubtful, load_config, unread_env
from memoryd.core.errors import MemorydError
from memoryd.core.fsutil import acquire_lock, hold_database, process_umask
from memoryd.index.fstype import filesystem, remote
from memoryd.serve.app import App
from memoryd.serve.notify import Notifier, listen_fds
from memoryd.serve.server import Server, prepare_socket_path
from memoryd.serve.streams import EventLoop
from memoryd.serve.workspaceguard import prepare_dirs
from memoryd.text.secretguard import redact_known

log = logsetup.get_logger("memoryd.serve.daemon")
PATHS_CHECK_S = 30.0  # how often the socket and log files are looked for


def apply_reloadable(old: Config, new: Config) -> tuple[Config, list[str], list[str]]:
    """The config to run with after SIGHUP: reloadable changes applied, others kept as they were.

    Returns (config, applied keys, keys that need a restart).
    """
    applied, restart = [], []
    sections: dict[str, dict[str, Any]] = {}
    for key, _old_value, new_value in diff(old, new):
        section, _, name = key.partition(".")
        if key in RELOADABLE:
            applied.append(key)
            sections.setdefault(section, {})[name] = new_value
        else:
            restart.append(key)
    cfg = old
    for section, values in sections.items():
        cfg = dataclasses.replace(
            cfg, **{section: dataclasses.replace(getattr(cfg, section), **values)}
        )
    return cfg, applied, restart


def activated_path(sock: socket.socket, cfg: Config) -> Path:
    """The path of the socket the service manager handed over (the config's when it has none
    to tell: an abstract or unnamed socket)."""
    try:
        name = sock.getsockname()
    except OSError:
        return cfg.socket
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    return Path(name) if isinstance(name, str) and name.startswith("/") else cfg.socket


class PageHost(Protocol):
    """Something the daemon serves beside its socket, in its event loop: the web page
    (memoryd.web, which sits above serve and is handed in by cli.py)."""

    async def start(self, app: App) -> dict[str, Any]:
        """Start serving if not already; say where (url, host, port, state_file)."""
        ...

    async def close(self) -> None: ...


class Daemon:
    def __init__(
        self,
        cfg: Config,
        *,
        notifier: Notifier | None = None,
        page: PageHost | None = None,
    ) -> None:
        self.cfg = cfg
        self.notifier = notifier or Notifier()
        self.page = page
        self.app: App | None = None
        self.server: Server | None = None
        self._stop: asyncio.Event | None = None
        self._sigints = 0
        self._serving = False  # READY=1 sent: a SIGHUP reloads at once (before: once serving)
        self._reload_task: asyncio.Task[None] | None = None
        self._db_fd: int | None = None  # the flock on the SQLite database (_hold_database)
        self._unclean_since: float | None = None  # crashlog.mark_running

    def run(self) -> int:
        if not os.environ.get("LISTEN_FDS"):
            # a daemon answering on the socket already: say so before a store is made and
            # migrated in a data_dir of this config's that nothing will use
            prepare_socket_path(self.cfg.socket)
        prepare_dirs(self.cfg)
        lock_fd = acquire_lock(self.cfg.lock_path)
        try:
            self._db_fd = _hold_database(self.cfg)  # None: no database yet (see _main)
        except BaseException:
            os.close(lock_fd)
            raise
        crash = crashlog.enable(self.cfg.data_dir)  # (the data_dir is ours: after the locks)
        self._unclean_since = crashlog.mark_running(self.cfg.data_dir)
        try:
            with asyncio.Runner(loop_factory=EventLoop) as runner:  # accept() at the fd limit
                return runner.run(self._main())
        finally:
            crashlog.disable(crash)
            crashlog.unmark_running(self.cfg.data_dir)
            if self._db_fd is not None:  # after the store closed: SQLite's handles are gone
                os.close(self._db_fd)
            os.close(lock_fd)

    async def _main(self) -> int:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(_loop_error)
        # run_in_executor(None, ...): at the thread limit, the threads it has (core/threads.py)
        loop.set_default_executor(threads.Pool(thread_name_prefix="memoryd-loop"))
        self._stop = asyncio.Event()
        self._install_signals(loop)
        cfg = self.cfg
        log.info(
            "starting",
            workspace=str(cfg.workspace),
            data_dir=str(cfg.data_dir),
            socket=str(cfg.socket),
            config=str(cfg.source) if cfg.source else None,
        )
        inherited = listen_fds()
        if inherited:
            # socket activation: the socket is the service manager's, wherever the config says;
            # status, the log and the workspace's list of memoryd's own files name that one
            cfg = self.cfg = dataclasses.replace(cfg, socket=activated_path(inherited[0], cfg))
        self.app = app = await loop.run_in_executor(
            None, functools.partial(App, cfg, claim_workspace=True)
        )
        if self._db_fd is None:  # a new store: its file exists once App made it
            try:
                self._db_fd = _hold_database(cfg)
            except BaseException:
                await loop.run_in_executor(None, app.close)
                raise
        self.server = Server(app, cfg.server, cfg.socket, sock=inherited[0] if inherited else None)
        try:
            await self.server.start()
        except BaseException:
            await loop.run_in_executor(None, app.close)
            raise
        page = self.page
        if page is not None:
            app.open_page = lambda: asyncio.run_coroutine_threadsafe(page.start(app), loop).result(
                30
            )
            if cfg.web.enabled:
                try:
                    await page.start(app)
                except (OSError, MemorydError) as exc:  # the socket still serves
                    log.error("the web page did not start", error=str(exc))
        app.unclean_since = self._unclean_since
        app.start(progress=self.notifier.status)
        self.notifier.ready("serving; indexing the workspace in the background")
        log.info("ready", socket=str(cfg.socket))
        self._serving = True
        if runtime.early_hups:  # SIGHUP while starting (cli.main's or _on_sighup's): reload now
            runtime.early_hups.clear()
            self._reload_task = loop.create_task(self.reload())
        watchdog = None
        if self.notifier.watchdog_interval:
            watchdog = asyncio.create_task(self._watchdog(self.notifier.watchdog_interval))
        relisten = asyncio.create_task(self._keep_paths(PATHS_CHECK_S))
        try:
            await self._stop.wait()
        finally:
            self.notifier.stopping()
            log.info("stopping")
            relisten.cancel()
            if watchdog is not None:
                watchdog.cancel()
            if page is not None:
                app.open_page = None
                await page.close()
            await self.server.close()
            await loop.run_in_executor(None, app.close)
            self._restore_signals(loop)
            logsetup.report_dropped(everything=True)  # the counts of a failure still going on
            log.info("stopped")
            self.notifier.close()
        return 0

    async def _keep_paths(self, interval: float) -> None:
        # a socket file removed by a temp-folder cleaner is made again (Server.relisten_if_removed),
        # a log file rotated away is opened again at its name, and daily log lines the system
        # refused are tried again
        while True:
            await asyncio.sleep(interval)
            try:
                crashlog.touch_running(self.cfg.data_dir)  # a kill after it: what to look at
                logsetup.report_dropped()
                logsetup.reopen_if_moved()
                if self.server is not None:
                    await self.server.relisten_if_removed()
                log_ = self.app.dailylog if self.app is not None else None
                if log_ is not None and log_.pending:  # room again?
                    await asyncio.get_running_loop().run_in_executor(None, log_.append_waiting)
            except Exception:  # never the end of the daemon
                log.exception("socket or log file check failed")

    async def _watchdog(self, interval: float) -> None:
        # Pinged from the event loop itself: a wedged loop stops pinging and gets restarted.
        while True:
            self.notifier.watchdog()
            await asyncio.sleep(interval)

    # -- signals ------------------------------------------------------------------------------

    def _install_signals(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.add_signal_handler(signal.SIGTERM, self.request_stop, "SIGTERM")
        loop.add_signal_handler(signal.SIGINT, self._on_sigint)
        loop.add_signal_handler(signal.SIGHUP, self._on_sighup, loop)

    def _restore_signals(self, loop: asyncio.AbstractEventLoop) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.remove_signal_handler(sig)
        # stopped: a reload has nothing to apply to, and SIGHUP's default would end the
        # process (killed by a signal, not exit 0) while it closes its log
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def _on_sighup(self, loop: asyncio.AbstractEventLoop) -> None:
        """Reload, once the daemon serves: a SIGHUP while it starts is applied after READY=1
        (the App is built from the configuration read at the start), one while it stops is
        ignored."""
        if self._stop is not None and self._stop.is_set():
            log.info("SIGHUP while stopping: ignored")
        elif not self._serving:
            runtime.early_hups.append(signal.SIGHUP)
            log.info("SIGHUP while starting: the configuration is read again once serving")
        else:
            self._reload_task = loop.create_task(self.reload())

    def _on_sigint(self) -> None:
        self._sigints += 1
        if self._sigints > 1:
            log.warning("second SIGINT: exiting now")
            os._exit(130)
        self.request_stop("SIGINT")

    def request_stop(self, why: str = "request") -> None:
        log.info("shutdown requested", signal=why)
        if self._stop is not None:
            self._stop.set()

    async def reload(self) -> None:
        """SIGHUP: read the configuration again and apply what can change without a restart."""
        self.notifier.reloading()
        try:
            new = await asyncio.get_running_loop().run_in_executor(
                None, load_config, self.cfg.source
            )
        except MemorydError as exc:
            source = self.cfg.source
            error = exc.message
            if source is not None and not source.is_file():  # not "--config: ..." when the
                error = f"the configuration file {source} is gone (moved or deleted)"  # XDG one
            log.error("reload failed; keeping the running configuration", error=error)
            self.notifier.ready("reload failed; running configuration kept")
            return
        if self.server is not None and not self.server.owns_path:  # socket activation
            new = dataclasses.replace(new, socket=self.cfg.socket)
        cfg, applied, restart = apply_reloadable(self.cfg, new)
        self.cfg = cfg
        if self.app is not None:
            self.app.apply_config(cfg)
            self.app.restart_needed = restart
        if self.server is not None:
            self.server.apply(cfg.server, cfg.notes.max_bytes)
        logsetup.configure(cfg.logging.level, cfg.logging.format, cfg.logging.file or None)
        log.info("configuration reloaded", changed=applied or None)
        for doubt in doubtful(cfg):
            log.warning("a setting that is most likely a mistake", reason=doubt)
        if restart:
            log.warning("these settings change only after a restart", keys=restart)
        self.notifier.ready("configuration reloaded")


def run(config_path: Path | None = None, page: Callable[[Config], PageHost] | None = None) -> int:
    """`memoryd run`: load config (exit 2 on error), then run until stopped. `page` makes the
    web page for the loaded configuration (cli.py hands in memoryd.web's)."""
    cfg = load_config(config_path)
    try:
        return _run(cfg, page)
    except OSError as exc:  # a folder or file a setting names cannot be used: say which setting
        exc.setting = setting = cfg.setting_for(exc.filename)  # type: ignore[attr-defined]
        exc.note = runtime.home_default_note(setting, getattr(cfg, setting or "", None))  # type: ignore[attr-defined]
        raise


def _run(cfg: Config, page: Callable[[Config], PageHost] | None) -> int:
    process_umask()  # under `umask 000` nothing we create may be writable by others
    logsetup.set_redactor(redact_known)  # no line carries a credential (an error quoting text)
    logsetup.configure(cfg.logging.level, cfg.logging.format, cfg.logging.file or None)
    for var, close in unread_env():
        log.warning(
            "an environment variable memoryd does not read; ignored",
            variable=var,
            did_you_mean=close or None,
        )
    for doubt in doubtful(cfg):
        log.warning("a setting that is most likely a mistake", reason=doubt)
    temp = runtime.temp_socket_path()
    why = runtime.untrusted_folder(temp.parent)
    if why is not None and cfg.socket == runtime.fallback_socket_path():
        log.warning(
            "the default socket folder is not ours; listening in the fallback folder "
            "(memoryctl finds it by the same rule)",
            folder=str(temp.parent),
            reason=why,
            socket=str(cfg.socket),
        )
    return Daemon(cfg, page=page(cfg) if page is not None else None).run()


def _loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """asyncio's errors, except that the socket's accept at the open-file limit (which asyncio
    retries a second later, the client waiting meanwhile) is one line saying what to do, not a
    traceback each time."""
    exc = context.get("exception")
    if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE):
        log.error("new connections wait: too many open files", fix=oserrors.what_to_do(exc.errno))
        return
    loop.default_exception_handler(context)


def _hold_database(cfg: Config) -> int | None:
    """The SQLite database held by this daemon whatever name reaches it (hold_database); not on
    PostgreSQL, nor on a network file system; None while there is no database (a start that
    stops on its workspace makes none: the store makes it, and then it is held)."""
    if cfg.store.backend != "sqlite" or remote(filesystem(str(cfg.data_dir))):
        return None
    if not cfg.db_path.exists():
        return None
    return hold_database(cfg.db_path)
