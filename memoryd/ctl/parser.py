"""memoryctl's argparse, from the command table (the parser class both programs share is in
ctl/loud.py). Building every subparser with all its options costs about 30 ms, more than a
query, so a run builds only the command being used (`only`); `--help` and unknown commands
build them all."""

from __future__ import annotations

import argparse
import os
import sys

from memoryd.ctl.loud import LoudParser, seconds
from memoryd.ctl.rows import Command
from memoryd.ctl.table import COMMANDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EPILOG = """\
examples:
  memoryctl add "We chose Postgres for JSONB" --type decision --tags db,arch
  echo "long text" | memoryctl add - --ttl 7d
  memoryctl search "what database did we pick?"
  memoryctl search deploy --tags ops --mode keyword -n 5 --explain
  memoryctl --json list --type decision
  memoryctl status --check     # exit 1 when the index drifted from the files
  memoryctl status --watch     # a progress bar while indexing and embedding
  memoryctl jobs run reconcile

exit status:
  0    ok (a search or listing found something, as with grep and rg)
  1    nothing found (search, list, recent, note list, links, backlinks,
       entities, triggers, candidates, history, checkpoint list), the daemon
       answered with an error (no such entry, entity or note; a failure),
       `status --check` found drift, or `jobs run` ran a job that failed
  2    usage error: bad arguments (a bad option, a --since/--until outside
       the time grammar), an input file that cannot be read, or an argument
       the daemon refuses (--limit 0, --depth 9)
  3    memoryd is unreachable: no socket, stale socket, permission denied,
       timeout, or a socket (folder) that belongs to another user
  130  interrupted (Ctrl-C); output that cannot be written (>/dev/full, >&-)
       is 1
With --json, errors are JSON objects on stdout (and the same exit status):
{"error": {"kind": "daemon"|"usage"|"unreachable", "message": ..., "code": ...}}
--since/--until take a duration back from now (90m, 24h, 7d, 2w), an ISO 8601
date or time (naive = UTC; a bare date is a UTC day), a year or a month (2026,
2026-11), or unix seconds; a date, year or month as --until includes all of it.

The socket is --socket, else $MEMORYD_SOCKET, else
$XDG_RUNTIME_DIR/memoryd/memoryd.sock (<temp dir>/memoryd-<uid>/memoryd.sock
when XDG_RUNTIME_DIR is unset; if another user took that folder first,
~/.local/share/memoryd/run/memoryd.sock, as the daemon does; or the login
session's /run/user/<uid>/memoryd/memoryd.sock if a daemon listens there and
not in the temp dir). Run `memoryctl COMMAND --help` for a command's options.
"""


class Parser(LoudParser):
    """memoryctl's: with --json (Parser.json_errors) a usage error is a JSON object on stdout
    (memoryctl's main prints it); text that starts with '-' is told to go after --."""

    json_errors = False  # (its own: memoryd's LoudParser.json_errors is not memoryctl's)

    def unrecognized(self, extras: list[str]) -> str:
        message = super().unrecognized(extras)
        text = [a for a in self._actions if not a.option_strings and a.type in (None, str)]
        if message.endswith("?)") or not extras[0].startswith("-"):
            return message
        if " " in self.prog and not text:  # (`get --idd`: an ID goes there, not text)
            return message
        command = self.prog if " " in self.prog else f"{self.prog} search"
        return message + (  # `search --dry-run`, `add -x`: text, not a slip for an option
            f" (not an option; text that starts with '-' goes after --,"
            f" as in {command} -- '{extras[0]}')"
        )


class Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter without `import shutil` (and its bz2/lzma imports) at every start:
    argparse builds a formatter for each add_argument; the width is all it wants shutil for."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            try:
                width = int(os.environ.get("COLUMNS", "")) - 2
            except ValueError:
                try:
                    stdout = sys.__stdout__
                    if stdout is None:
                        raise ValueError("no stdout")
                    width = os.get_terminal_size(stdout.fileno()).columns - 2
                except (AttributeError, ValueError, OSError):
                    width = 78
        super().__init__(prog, indent_increment, max_help_position, width)


def common_options() -> argparse.ArgumentParser:
    """--socket, --json, --timeout: accepted before or after the command (SUPPRESS keeps a
    value given before the command from being reset by the subcommand's default)."""
    common = Parser(add_help=False, formatter_class=Formatter)
    common.add_argument(
        "--socket",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="the daemon's socket (default: $MEMORYD_SOCKET, else the standard path)",
    )
    common.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print the raw result as JSON (for scripts)",
    )
    common.add_argument(
        "--timeout",
        type=seconds,
        default=argparse.SUPPRESS,
        metavar="S",
        help="seconds to wait for the answer (default 30; 600 for reindex, jobs "
        "run, status --check, checkpoint, export, import)",
    )
    return common


def _add_args(sp: argparse.ArgumentParser, specs: tuple[Any, ...]) -> None:
    for spec in specs:
        if spec[0] == "filters":
            group: Any = sp.add_argument_group("filters")
            for flags, kw in spec[1]:
                group.add_argument(*flags, **kw)
        elif spec[0] == "exclusive":
            group = sp.add_mutually_exclusive_group()
            for flags, kw in spec[1]:
                group.add_argument(*flags, **kw)
        else:
            sp.add_argument(*spec[0], **spec[1])


def _add_command(sub: Any, cmd: Command, common: argparse.ArgumentParser) -> None:
    examples = "examples:\n" + "\n".join(f"  {e}" for e in cmd.examples) if cmd.examples else None
    import textwrap  # (argparse imports it too, to format help)

    sp = sub.add_parser(
        cmd.name,
        parents=[common],
        help=cmd.help,
        description=textwrap.fill(cmd.help, Formatter(cmd.name)._width),  # (raw: not wrapped)
        aliases=list(cmd.aliases),
        epilog=examples,
        formatter_class=Formatter,
    )
    sp.set_defaults(command_row=cmd)
    _add_args(sp, cmd.args)
    if cmd.actions:
        actions = sp.add_subparsers(dest="action", metavar="ACTION", title="actions")
        for action in cmd.actions:
            _add_command(actions, action, common)
        if cmd.default is None:
            actions.required = True


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with `only` the options of that one command (fast path)."""
    from memoryd.ctl.client import version

    common = common_options()
    p = Parser(
        prog="memoryctl",
        parents=[common],
        description="Query and feed a running memoryd.",
        epilog=EPILOG,
        formatter_class=Formatter,
    )
    p.add_argument("--version", action="version", version=f"memoryctl {version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for cmd in COMMANDS:
        if only is None or only in (cmd.name, *cmd.aliases):
            _add_command(sub, cmd, common)
    if only is None:
        _group_commands(p, sub)
    return p


# `memoryctl --help` lists the commands by what they work on (every command in one group: a
# command the table adds and this leaves out is listed under "other", and a test says so)
GROUPS = (
    ("search", ("search", "recent", "triggers", "session")),
    (
        "memories",
        (
            *("add", "get", "list", "update", "delete", "history", "validate", "used"),
            *("promote", "candidates", "prune", "export", "import"),
        ),
    ),
    ("notes", ("note", "links", "backlinks", "reindex", "open")),
    ("entities", ("entity", "entities", "related")),
    ("admin", ("status", "stats", "ping", "jobs", "checkpoint")),
)


def _group_commands(p: argparse.ArgumentParser, sub: Any) -> None:
    """The help's one list of commands as titled groups (argparse's groups hold any action:
    the list's rows, one per command, move into them; usage and parsing are unchanged)."""
    listed = next(g for g in p._action_groups if sub in g._group_actions)
    p._action_groups.remove(listed)
    rows = {row.dest: row for row in sub._get_subactions()}
    for title, names in GROUPS:
        group = p.add_argument_group(f"{title} commands")
        group._group_actions.extend(rows.pop(name) for name in names if name in rows)
    if rows:
        p.add_argument_group("other commands")._group_actions.extend(rows.values())
