"""memoryctl: the thin client for memoryd. Standard library only, so it starts fast.

Each command is a row of the table in table.py: it builds params, sends one JSON-RPC request
over the daemon's Unix socket and prints the result: readable by default, raw with --json.
Only the parser of the command being run is built.

Exit status, as grep and rg: 0 ok (a search or listing found something); 1 nothing found (a
listing: the row's `found`), the daemon answered with an error, or `status --check` found
drift; 2 usage error (argparse: a bad option or value, a --since/--until outside the time
grammar; or an input file that cannot be read); 3 the daemon is unreachable (or its socket
cannot be trusted). With --json every error is a JSON object on stdout:
{"error": {"kind": "daemon" | "usage" | "unreachable", "message": ..., "code": ...}}.
-l/--paths prints only the paths of a listing's items, one per line (like rg -l).

May import: the standard library and memoryd.ctl only (tests/test_architecture.py checks it).
"""

from __future__ import annotations

import sys

from memoryd.ctl.client import (
    DEFAULT_TIMEOUT,
    SLOW_TIMEOUT,
    Client,
    ClientError,
    Refused,
    Unreachable,
    UsageError,
    resolve_socket,
    socket_path,
    version,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import ArgumentParser
    from typing import Any

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
EXIT_NOTHING_FOUND = 1
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as the shell reports a command Ctrl-C stopped
# global options that take a value: skipped when looking for the command's name
_VALUE_OPTIONS = ("--socket", "--timeout")

__all__ = [
    "DEFAULT_TIMEOUT",
    "SLOW_TIMEOUT",
    "Client",
    "ClientError",
    "Refused",
    "Unreachable",
    "UsageError",
    "build_parser",
    "main",
    "resolve_socket",
    "socket_path",
    "version",
]


def build_parser(only: str | None = None) -> ArgumentParser:
    """argparse for every command, or with `only` for that one (imports argparse)."""
    from memoryd.ctl.parser import build_parser as build

    return build(only)


def command_name(argv: list[str]) -> str | None:
    """The command word in argv (the first word that is not an option or an option's value)."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--":
            return None
        elif word.startswith("-"):
            skip = word in _VALUE_OPTIONS
        else:
            return word
    return None


def parse(argv: list[str], json_errors: bool = False) -> Any:
    """Plain command lines straight from the table; argparse (built for the one command named)
    for the rest: help, errors, subcommand actions. With json_errors a usage error raises
    UsageError instead of printing argparse's message."""
    from memoryd.ctl.fastparse import fast_parse
    from memoryd.ctl.table import BY_NAME

    name = command_name(argv)
    cmd = BY_NAME.get(name) if name else None
    args = fast_parse(argv, cmd) if cmd is not None else None
    if args is None:
        parser = build_parser(name if cmd is not None else None)
        from memoryd.ctl.parser import Parser

        Parser.json_errors = json_errors
        return parser.parse_args(argv)
    return args


def wants_json(argv: list[str]) -> bool:
    """--json among the options (before a `--`)."""
    for word in argv:
        if word == "--":
            return False
        if word == "--json":
            return True
    return False


def fail(
    as_json: bool, kind: str, message: str, status: int, code: Any = None, data: Any = None
) -> int:
    """Report an error: `memoryctl: MESSAGE` on stderr, or with --json an object on stdout."""
    if as_json:
        from memoryd.ctl.output import emit_json

        error: dict[str, Any] = {"kind": kind, "message": message}
        if code is not None:
            error["code"] = code
        if data is not None:
            error["data"] = data
        emit_json({"error": error})
    else:
        print(f"memoryctl: {message}", file=sys.stderr)
    return status


def print_paths(paths: list[str]) -> None:
    for path in paths:
        print(path)


def say_next_page(res: Any) -> None:
    """On stderr, after a page of paths (`list -l`, `note list -l`) that is not the last: the
    cursor of the next one (stdout holds only the paths)."""
    if isinstance(res, dict) and res.get("next_cursor"):
        from memoryd.ctl.handlers import cursor_option

        print(f"(next page: {cursor_option(res['next_cursor'])})", file=sys.stderr)


def say_indexing(res: Any) -> None:
    """On stderr, when the answer came while the first index still reads the workspace."""
    from memoryd.ctl.output import indexing_note

    if isinstance(res, dict) and (note := indexing_note(res)):
        print(note, file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Run one command line, its output as scripts and terminals expect (stdio.py): a write
    that fails is one line and exit 1, a reader gone a quiet 0, Ctrl-C one line and 130."""
    stdout = sys.stdout
    if stdout is None:  # `>&-`: print() would drop the output without a word
        from memoryd.ctl.stdio import Closed

        sys.stdout = Closed()
    try:
        try:
            status = command(sys.argv[1:] if argv is None else argv)
        except SystemExit:  # argparse's --help, --version, usage error: flushed here too
            sys.stdout.flush()
            raise
        sys.stdout.flush()  # what is still buffered: its failure said here, not lost at exit
        return status
    except BrokenPipeError:  # stdout closed early (`memoryctl list | head`): not an error
        from memoryd.ctl import stdio

        stdio.quiet_stdout()
        return EXIT_OK
    except OSError as exc:  # `>/dev/full`, `>&-`: as cat and echo say it
        from memoryd.ctl import stdio

        if not stdio.output_failed(exc):
            raise
        print(f"memoryctl: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt as exc:  # Ctrl-C: one line, what became of the request, 130
        from memoryd.ctl import stdio

        stdio.quiet_stdout()
        said = f"; {exc.args[0]}" if exc.args else ""
        print(f"\nmemoryctl: interrupted{said}", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        sys.stdout = stdout  # (main called in a process that goes on: a test, the MCP bridge)


def command(argv: list[str]) -> int:
    as_json = wants_json(argv)
    try:
        args = parse(argv, as_json)
    except UsageError as exc:
        return fail(True, "usage", str(exc), EXIT_USAGE)
    from memoryd.ctl.table import resolve

    cmd = resolve(args)
    if cmd is None:
        if as_json:
            return fail(True, "usage", "memoryctl: a COMMAND is needed", EXIT_USAGE)
        build_parser().print_help(sys.stderr)
        return EXIT_USAGE
    args.json = getattr(args, "json", False)
    return run(cmd, args)


def run(cmd: Any, args: Any) -> int:
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:  # text the daemon escaped (a lone surrogate) prints, escaped
        reconfigure(errors="backslashreplace")
    slow = cmd.slow or getattr(args, "check", False)
    timeout = getattr(args, "timeout", None) or (SLOW_TIMEOUT if slow else DEFAULT_TIMEOUT)
    client = Client(resolve_socket(getattr(args, "socket", None)), timeout)
    as_json = args.json
    paths = getattr(args, "paths", False)
    try:
        if paths and as_json:
            raise UsageError("--paths and --json do not go together")
        if cmd.run is not None:
            return cmd.run(client, args)
        assert cmd.method is not None and cmd.show is not None
        res = client.call(cmd.method, cmd.params(args) if cmd.params else {})
        found = cmd.found is None or cmd.found(res)
        if paths and cmd.paths is not None:
            listed = cmd.paths(res)
            print_paths(listed)
            say_next_page(res)
            say_indexing(res)
            return EXIT_OK if listed else EXIT_NOTHING_FOUND
        if as_json:
            from memoryd.ctl.output import emit_json

            status = emit_json(res)
        else:
            status = cmd.show(res, args)
            say_indexing(res)
        return status if found else EXIT_NOTHING_FOUND
    except UsageError as exc:
        return fail(as_json, "usage", str(exc), EXIT_USAGE)
    except ClientError as exc:
        return fail(as_json, "daemon", exc.message, exc.exit_status, exc.code, exc.data)
    except Unreachable as exc:
        return fail(as_json, "unreachable", str(exc), EXIT_UNREACHABLE)
    except Refused as exc:
        return fail(as_json, "output", str(exc), EXIT_ERROR)
