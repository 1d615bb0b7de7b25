"""`memoryd`: run the daemon, check or show its configuration, install it as a service."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from memoryd import __version__
from memoryd.core.errors import EXIT_CONFIG, EXIT_START, ConfigError, MemorydError

EPILOG = """\
examples:
  memoryd run                          run in the foreground (Ctrl-C stops it)
  memoryd run --config ~/notes.toml    use another configuration file
  memoryd config show                  the effective configuration as TOML
  memoryd service install              run at login (systemd/launchd)
  memoryd mcp --namespace claude       MCP server on stdio for an AI agent
  memoryd store migrate --to postgres  copy the SQLite store into PostgreSQL

Configuration is read from --config, $MEMORYD_CONFIG, or
$XDG_CONFIG_HOME/memoryd/config.toml; without a file the defaults work. Query
the daemon with `memoryctl`; docs/agents.md for MCP, docs/team.md for
PostgreSQL.

exit status: 0 ok, 1 failed to start (e.g. already running) or output that
cannot be written (>/dev/full), 2 usage or configuration error, or a store a
newer memoryd upgraded (a restart cannot fix either), 130 interrupted (Ctrl-C).
"""


def build_parser() -> argparse.ArgumentParser:
    from memoryd.ctl.loud import LoudParser  # (--help >/dev/full: said, not exit 0)

    p = LoudParser(
        prog="memoryd",
        description="memoryd: a local memory daemon. Watches a workspace of markdown notes,\n"
        "keeps memories agents add, and answers keyword and semantic queries over a\nUnix socket.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"memoryd {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser(
        "run",
        help="run the daemon in the foreground until SIGINT/SIGTERM",
        description="Run the daemon in the foreground until SIGTERM or SIGINT; SIGHUP reads the "
        "configuration again (docs/configuration.md, Reload). One daemon per data_dir, socket "
        "and workspace folder. Exit status: 0 stopped, 1 could not start (another daemon; a "
        "folder or file a setting names cannot be used), 2 configuration error (the line names "
        "the file and line, or the variable). The reason is one JSON line off a terminal.",
    )
    run.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="configuration file (TOML); default $MEMORYD_CONFIG, else "
        "$XDG_CONFIG_HOME/memoryd/config.toml, else the defaults",
    )
    run.add_argument(
        "--config-error-status",
        type=_exit_status,
        default=EXIT_CONFIG,
        metavar="N",
        help=f"exit status for what no restart can fix: a configuration error, a store a newer "
        f"memoryd upgraded (default {EXIT_CONFIG}); the launchd agent "
        "passes 0: a successful exit is the only one launchd does not restart (docs/service.md)",
    )
    run.set_defaults(func=cmd_run)

    cfg = sub.add_parser("config", help="check or show the configuration")
    cfg_sub = cfg.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    for name, helptext, json_help in (
        (
            "show",
            "print the effective configuration (file + environment + defaults) as TOML",
            "JSON instead of TOML",
        ),
        (
            "check",
            "validate the configuration and say where it came from (exit 2 when invalid)",
            'one JSON object: {"ok": true, "source", "warnings"}',
        ),
        ("path", "print the configuration file memoryd would read", '{"path": FILE or null}'),
    ):
        c = cfg_sub.add_parser(name, help=helptext, description=helptext)
        c.add_argument("--config", type=Path, metavar="FILE", help="configuration file (TOML)")
        c.add_argument(
            "--json",
            action="store_true",
            help=json_help + '; an invalid configuration: {"ok": false, "error", "problems"}',
        )
        c.set_defaults(func=cmd_config)

    store = sub.add_parser("store", help="move the store to another backend (docs/team.md)")
    store_sub = store.add_subparsers(dest="store_command", metavar="ACTION", required=True)
    mig = store_sub.add_parser(
        "migrate",
        help="copy this config's SQLite store (memories, history, notes, vectors) into "
        "PostgreSQL and check the counts",
        description="Copy data_dir/memoryd.db into the PostgreSQL database of store.dsn (or "
        "--dsn) in one transaction, with ids, history, triggers, access log, this workspace's "
        "notes and the vectors (nothing is embedded again), then compare the counts on both "
        "sides. Stop the daemon first. The SQLite file is left as it was. Rules for conflicts "
        "and re-runs: docs/team.md.",
    )
    mig.add_argument("--to", required=True, choices=["postgres"], help="the target backend")
    mig.add_argument("--dsn", help="the target database (default: store.dsn); no password in it")
    mig.add_argument(
        "--dry-run", action="store_true", help="copy and check inside a transaction, then roll back"
    )
    mig.add_argument(
        "--replace-notes",
        action="store_true",
        help="remove this workspace's notes a daemon on PostgreSQL indexed already, and copy "
        "the SQLite index in their place",
    )
    mig.add_argument("--config", type=Path, metavar="FILE", help="configuration file (TOML)")
    mig.set_defaults(func=cmd_store_migrate)
    wss = store_sub.add_parser(
        "workspaces",
        help="list the workspace ids of the PostgreSQL database: label, last start, notes",
    )
    forget = store_sub.add_parser(
        "forget-workspace",
        help="remove the notes a machine gone for good left in the PostgreSQL database",
        description="Remove one workspace id's notes, chunks and links from the database of "
        "store.dsn (or --dsn), in one transaction; memories stay. Refused while a daemon runs "
        "with that id. docs/team.md, 'A machine gone for good'.",
    )
    forget.add_argument("workspace_id", help="the id (`memoryd store workspaces` lists them)")
    forget.add_argument("--dry-run", action="store_true", help="count, then roll back")
    for c in (wss, forget):
        c.add_argument("--dsn", help="the database (default: store.dsn); no password in it")
        c.add_argument("--config", type=Path, metavar="FILE", help="configuration file (TOML)")
    wss.set_defaults(func=cmd_store_workspaces)
    forget.set_defaults(func=cmd_store_forget)

    try:
        from memoryd.serve import service
    except ImportError:  # pragma: no cover - service support is optional at import time
        pass
    else:
        service.add_parser(sub)
    from memoryd.agents import mcpflags  # the bridge itself is imported when `memoryd mcp` runs

    mcpflags.add_parser(sub).set_defaults(func=cmd_mcp)
    return p


def cmd_run(args: argparse.Namespace) -> int:
    from memoryd.core import collector
    from memoryd.serve.daemon import run
    from memoryd.web.server import WebServer

    try:
        return run(args.config, page=WebServer.for_config)
    finally:
        collector.exiting()


def cmd_mcp(args: argparse.Namespace) -> int:
    from memoryd.agents.mcp import cmd_mcp as bridge

    return bridge(args)


def cmd_config(args: argparse.Namespace) -> int:
    """`memoryd config path|check|show`; with --json, a configuration error is a JSON object on
    stdout too ({"ok": false, "error", "problems"}, exit 2), as memoryctl's errors are."""
    try:
        return _config(args)
    except ConfigError as exc:
        if not args.json:
            raise
        problems = (exc.data or {}).get("problems") or [exc.message]
        print(json.dumps({"ok": False, "error": exc.message, "problems": problems}))
        return 2


def _config(args: argparse.Namespace) -> int:
    from memoryd.core.config import doubtful, find_config_file, load_config, to_toml, unread_env

    if args.config_command == "path":
        found = find_config_file(args.config)
        if args.json:
            print(json.dumps({"path": str(found) if found else None}))
        else:
            print(found if found else "(no configuration file; defaults in use)")
        return 0
    cfg = load_config(args.config)
    warnings = []
    for var, close in unread_env():
        hint = f" (did you mean {close}?)" if close else ""
        warnings.append(f"{var} is not a setting memoryd reads{hint}")
        print(f"memoryd: warning: {warnings[-1]}", file=sys.stderr)
    for doubt in doubtful(cfg):
        warnings.append(doubt)
        print(f"memoryd: warning: {doubt}", file=sys.stderr)
    if args.config_command == "check":
        if cfg.store.backend == "postgres":  # what `memoryd run` would stop on (exit 2)
            from memoryd.store.backend import require_driver

            require_driver()
        if args.json:
            source = str(cfg.source) if cfg.source else None
            print(json.dumps({"ok": True, "source": source, "warnings": warnings}))
        else:
            print(f"configuration ok ({cfg.source or 'defaults, no file'})")
    elif args.json:
        print(json.dumps(cfg.as_dict(), indent=2))
    else:
        from memoryd.ctl import stdio
        from memoryd.ctl.output import utf8

        toml = to_toml(cfg)  # TOML is UTF-8: elsewhere (LC_ALL=C, latin-1) \u00e9 escapes
        print(toml if utf8() else stdio.ascii_escaped(toml), end="")
    return 0


def cmd_store_migrate(args: argparse.Namespace) -> int:
    from memoryd.core.config import load_config
    from memoryd.store.pgmigrate import migrate, report_lines

    try:
        result = migrate(
            load_config(args.config),
            dsn=args.dsn,
            dry_run=args.dry_run,
            replace_notes=args.replace_notes,
        )
    except KeyboardInterrupt:  # the copy is one transaction: the server rolls it back
        raise KeyboardInterrupt(
            "the copy is one transaction, not committed: run it again (a copy that was "
            "committing as you pressed Ctrl-C is found and reported as done)"
        ) from None
    print("\n".join(report_lines(result)))
    return 0


def cmd_store_workspaces(args: argparse.Namespace) -> int:
    import time

    from memoryd.core.config import load_config
    from memoryd.store.pgworkspaces import listing

    for w in listing(load_config(args.config), args.dsn):
        seen = time.strftime("%Y-%m-%d %H:%M", time.localtime(w["last_seen"]))
        print(f"{w['id']}\t{w['notes']} notes\tlast started {seen}\t{w['label']}")
    return 0


def cmd_store_forget(args: argparse.Namespace) -> int:
    from memoryd.core.config import load_config
    from memoryd.store.pgworkspaces import forget

    done = forget(load_config(args.config), args.workspace_id, dsn=args.dsn, dry_run=args.dry_run)
    verb = "would remove" if done["dry_run"] else "removed"
    print(
        f"{verb} workspace {done['workspace']}: {done['notes']} notes in {done['chunks']} "
        "chunks; memories stay. Its vectors go at the next vector collection."
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    # config, service, store, --help: a failed write is one line and exit 1, a reader gone
    # (| head) a quiet 0, as memoryctl's (the daemon logs; `mcp` speaks its protocol on stdout)
    prints = words[:1] not in (["run"], ["mcp"])
    stdout = sys.stdout
    daemon = False
    try:
        if words[:1] == ["run"]:
            import signal

            from memoryd.core import runtime

            # a reload asked for while the daemon starts (its imports and the store take a
            # second or more): noted and done once it serves, not the end of the process
            signal.signal(signal.SIGHUP, runtime.note_hup)
        from memoryd.ctl import stdio

        if prints:
            if stdout is None:  # `>&-`: print() would drop the output without a word
                sys.stdout = stdio.Closed()
            stdio.escape_unencodable()  # a non-UTF-8 locale: é as \u00e9, no UnicodeEncodeError
        parser = build_parser()
        try:
            args = _parse(parser, argv, words)
        except SystemExit:  # --help, --version, a usage error: what they wrote, flushed
            if prints:
                sys.stdout.flush()
            raise
        if not getattr(args, "func", None):  # a usage error: the help on stderr, as memoryctl's
            parser.print_help(sys.stderr)
            return 2
        daemon = args.command == "run"
        status = int(args.func(args) or 0)
        if prints:
            sys.stdout.flush()
        return status
    except BrokenPipeError:
        stdio.quiet_stdout()
        return 0
    except MemorydError as exc:  # ConfigError, StoreTooNew: what no restart can fix (2)
        status = exc.exit_status
        if status == EXIT_CONFIG:  # the launchd agent asks for 0: launchd restarts all else
            status = getattr(args, "config_error_status", EXIT_CONFIG)
        prefix = "configuration error: " if isinstance(exc, ConfigError) else ""
        return _fail(daemon, prefix + exc.message, status)
    except OSError as exc:  # a folder or file memoryd needs cannot be used: say which, no traceback
        if prints and stdio.output_failed(exc):  # `>/dev/full`, `>&-`: as cat says it
            print(f"memoryd: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
            return 1
        setting = getattr(exc, "setting", None)  # the path setting it was about (daemon.run)
        where = f"{setting}: " if setting else ""
        doing = "cannot start: " if daemon else ""  # (config show, store migrate: no start)
        from memoryd.core.oserrors import describe

        note = getattr(exc, "note", None)  # a default path under a HOME that cannot be used
        said = describe(exc, setting=setting) + (f"; {note}" if note else "")
        return _fail(daemon, f"{doing}{where}{said}", EXIT_START)
    except KeyboardInterrupt as exc:
        if daemon or words[:1] == ["run"]:  # Ctrl-C before its own handler is in place
            return _interrupted()
        said = f"; {exc.args[0]}" if exc.args else ""
        print(f"\nmemoryd: interrupted{said}", file=sys.stderr)
        return 130
    except Exception as exc:
        if type(exc).__module__ == "apsw":
            return _fail(daemon, f"cannot open the database: {exc}", EXIT_START)
        from memoryd.core import logsetup

        if not (daemon and logsetup.renders_json()):
            raise  # a bug: keep the traceback
        # a bug in the daemon: its traceback as one JSON line (the log's `exception`)
        logsetup.get_logger("memoryd").exception("stopped by an unexpected error")
        return EXIT_START
    finally:
        sys.stdout = stdout


def _parse(parser: argparse.ArgumentParser, argv: list[str] | None, words: list[str]) -> Any:
    """The arguments; with --json (config's) a usage error is the JSON object of a
    configuration error on stdout, exit 2, as memoryctl --json says its usage errors."""
    from memoryd.ctl.client import UsageError
    from memoryd.ctl.loud import LoudParser

    LoudParser.json_errors = "--json" in (words[: words.index("--")] if "--" in words else words)
    try:
        return parser.parse_args(argv)
    except UsageError as exc:
        print(json.dumps({"ok": False, "error": str(exc), "problems": [str(exc)]}))
        raise SystemExit(2) from None
    finally:
        LoudParser.json_errors = False


def _exit_status(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 255:
        raise argparse.ArgumentTypeError(
            f"expected an exit status, a whole number from 0 to 255 (as in "
            f"--config-error-status 0), not {text!r}"
        )
    return value


def _interrupted() -> int:
    """`memoryd run` stopped by Ctrl-C (SIGINT) before its event loop handles the signal (the
    imports, the configuration, the store opening): said in its log as one line, as a stop is,
    not a bare traceback or nothing."""
    from memoryd.core import logsetup

    if logsetup.renders_json() is None:  # before the configuration was read
        logsetup.configure()
    logsetup.get_logger("memoryd").info("interrupted while starting", signal="SIGINT")
    return 130


def _fail(daemon: bool, message: str, status: int) -> int:
    """Say why memoryd stops: `memoryd: MESSAGE` on stderr, except that the daemon, whose
    stderr is a log of JSON lines off a terminal, writes it as one of them (event "fatal"),
    and also on stderr when the log goes to a file."""
    from memoryd.text.secretguard import redact_known

    message = redact_known(message)  # an error quoting a setting or a file's text
    if daemon:
        from memoryd.core import logsetup

        if logsetup.renders_json() is None:  # the configuration could not be read
            logsetup.configure()
        if logsetup.renders_json():
            logsetup.get_logger("memoryd").error("fatal", error=message, exit_status=status)
            if logsetup.writes_stderr():
                return status
    print(f"memoryd: {message}", file=sys.stderr)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
