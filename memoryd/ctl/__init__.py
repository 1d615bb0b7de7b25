"""memoryctl: the thin client for memoryd. Standard library only, so it starts fast.

Each command is a row of the table in table.py: it builds params, sends one JSON-RPC request
over the daemon's Unix socket and prints the result: readable by default, raw with --json.
Only the parser of the command being run is built.

Exit status: 0 ok; 1 the daemon answered with an error, or `status --check` found drift;
2 usage error; 3 the daemon is unreachable (or its socket cannot be trusted).

May import: the standard library and memoryd.ctl only (tests/test_architecture.py checks it).
"""

from __future__ import annotations

import os
import sys

from memoryd.ctl.client import (
    DEFAULT_TIMEOUT,
    SLOW_TIMEOUT,
    Client,
    ClientError,
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
# global options that take a value: skipped when looking for the command's name
_VALUE_OPTIONS = ("--socket", "--timeout")

__all__ = [
    "DEFAULT_TIMEOUT",
    "SLOW_TIMEOUT",
    "Client",
    "ClientError",
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


def parse(argv: list[str]) -> Any:
    """Plain command lines straight from the table; argparse (built for the one command named)
    for the rest: help, errors, subcommand actions."""
    from memoryd.ctl.fastparse import fast_parse
    from memoryd.ctl.table import BY_NAME

    name = command_name(argv)
    cmd = BY_NAME.get(name) if name else None
    args = fast_parse(argv, cmd) if cmd is not None else None
    if args is None:
        return build_parser(name if cmd is not None else None).parse_args(argv)
    return args


def main(argv: list[str] | None = None) -> int:
    from memoryd.ctl.table import resolve

    args = parse(sys.argv[1:] if argv is None else argv)
    cmd = resolve(args)
    if cmd is None:
        build_parser().print_help(sys.stderr)
        return EXIT_USAGE
    args.json = getattr(args, "json", False)
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:  # text the daemon escaped (a lone surrogate) prints, escaped
        reconfigure(errors="backslashreplace")
    slow = cmd.slow or getattr(args, "check", False)
    timeout = getattr(args, "timeout", None) or (SLOW_TIMEOUT if slow else DEFAULT_TIMEOUT)
    client = Client(resolve_socket(getattr(args, "socket", None)), timeout)
    try:
        if cmd.run is not None:
            return cmd.run(client, args)
        assert cmd.method is not None and cmd.show is not None
        res = client.call(cmd.method, cmd.params(args) if cmd.params else {})
        if args.json:
            from memoryd.ctl.output import emit_json

            return emit_json(res)
        return cmd.show(res, args)
    except UsageError as exc:
        print(f"memoryctl: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ClientError as exc:
        print(f"memoryctl: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except Unreachable as exc:
        print(f"memoryctl: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except BrokenPipeError:  # stdout closed early (`memoryctl list | head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
