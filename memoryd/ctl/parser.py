"""argparse from the command table. Building every subparser with all its options costs about
30 ms, more than a query, so a run builds only the command being used (`only`); `--help` and
unknown commands build them all."""

from __future__ import annotations

import argparse
import os
import sys

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


HELP_FLAGS = ("-h", "--help")
# what a value of each type looks like, for the message when one is not
EXPECTED = {int: ("a whole number", "5"), float: ("a number", "0.5")}


class LoudParser(argparse.ArgumentParser):
    """argparse, with the mistakes people make said the way they can act on them, the same on
    `memoryd` and `memoryctl` (both parsers are of this class, and their subparsers):
    - `-h` anywhere before `--` shows the help of the command the line names (`memoryctl -h
      note read` is note read's, not memoryctl's), and `--version` the program's version;
    - an unknown command, action or choice, or an option that is not one, says the closest
      (`memoryctl serch`: did you mean 'search'?), and the command it was given to reports it,
      with its own usage (argparse left an unknown option to the top parser);
    - a value of the wrong type says what was expected and gives an example (`-n x`: expected
      a whole number, as in --limit 5) instead of `invalid int value`;
    - a write of --help, --version or a usage message that fails is not hidden (argparse drops
      the OSError: `--help >/dev/full` exited 0 with nothing written); the command's main says
      it, as for any output (stdio.py)."""

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        argv = sys.argv[1:] if args is None else list(args)
        words = argv[: argv.index("--")] if "--" in argv else argv
        if any(word in HELP_FLAGS for word in words):
            self._named_command(words).print_help()
            self.exit()
        if "--version" in words and "--version" in self._option_string_actions:
            argv = ["--version"]  # `memoryctl search x --version`: the program's, not a typo
        return super().parse_args(argv, namespace)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if args is not None and _subcommands(self) is None:  # a command's own words
            unknown = self._unknown_options(args)
            if unknown:  # before its value is read as something else (`delete --tags x`: ID)
                self.error(self.unrecognized(unknown))
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:  # a subcommand says it, with its own usage, before the top parser would
            self.error(self.unrecognized(extras))
        return parsed, extras

    def unrecognized(self, extras: list[str]) -> str:
        message = f"unrecognized arguments: {' '.join(extras)}"
        first = extras[0]
        if first.startswith("--"):
            known = {f[2:]: f for f in self._option_string_actions if f.startswith("--")}
            close = closest(first.partition("=")[0][2:], list(known))  # (names, not dashes)
            if close:
                return message + f" (did you mean {known[close[0]]}?)"
        commands = _subcommands(self)
        if first.startswith("-") and commands:  # `memoryctl --serch`: the command, dashed
            close = closest(first.lstrip("-"), list(commands))
            if close:
                return message + f" (did you mean the command {close[0]}?)"
        return message

    json_errors = False  # with --json a usage error is raised (UsageError), for main to print

    def error(self, message: str) -> Any:
        message = self.explained(message)
        if self.json_errors:
            from memoryd.ctl.client import UsageError

            raise UsageError(f"{self.prog}: {message}")
        super().error(message)

    def explained(self, message: str) -> str:
        """argparse's message for a missing argument or value, with what it takes: `the
        following arguments are required: ACTION (read, write, ...)`, `argument --mode:
        expected one argument (auto, keyword, ...)`, else the argument's help."""
        missing = message.startswith(REQUIRED)
        if missing:
            names = message[len(REQUIRED) :].split(", ")
        elif message.startswith("argument ") and message.endswith(": expected one argument"):
            names = [message[len("argument ") : -len(": expected one argument")]]
        else:
            return message
        said = []
        for name in names:
            action = next((a for a in self._actions if _name(a) == name), None)
            said.append((name, _takes(action) if action is not None else ""))
        if missing:
            return REQUIRED + ", ".join(f"{n} ({t})" if t else n for n, t in said)
        return f"{message}, {said[0][1]}" if said[0][1] else message

    def _unknown_options(self, args: list[str]) -> list[str]:
        """The `--words` before a `--` that name none of this parser's options (nor start one
        alone, an abbreviation argparse takes)."""
        known = [flag for flag in self._option_string_actions if flag.startswith("--")]
        unknown = []
        for word in args:
            if word == "--":
                break
            flag = word.partition("=")[0]
            if flag.startswith("--") and not any(k.startswith(flag) for k in known):
                unknown.append(word)
        return unknown

    def _named_command(self, words: list[str]) -> argparse.ArgumentParser:
        """The deepest subcommand the words name (the parser itself when they name none)."""
        parser: argparse.ArgumentParser = self
        for word in words:
            choices = _subcommands(parser)
            if choices is not None and word in choices:
                parser = choices[word]
        return parser

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is None or value in action.choices:
            return
        choices = [str(c) for c in action.choices]
        close = closest(str(value), choices)
        guess = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        listed = ", ".join(map(repr, choices))
        raise argparse.ArgumentError(
            action, f"invalid choice: {value!r}{guess} (choose from {listed})"
        )

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        type_func = self._registry_get("type", action.type, action.type)
        if type_func not in EXPECTED:
            return super()._get_value(action, arg_string)
        try:
            return type_func(arg_string)
        except ValueError:
            what, example = EXPECTED[type_func]
            if isinstance(action.default, type_func) and not isinstance(action.default, bool):
                example = str(action.default)
            flag = next((f for f in action.option_strings if f.startswith("--")), None)
            shown = f"{flag or self.prog} {example}"  # --limit 5; memoryctl get 5
            raise argparse.ArgumentError(
                action, f"expected {what} (as in {shown}), not {arg_string!r}"
            ) from None

    def _print_message(self, message: str, file: Any = None) -> None:
        if message:
            (file or sys.stderr).write(message)


REQUIRED = "the following arguments are required: "


def _name(action: argparse.Action) -> str:
    """The name argparse's messages give an argument (its own _get_action_name)."""
    if action.option_strings:
        return "/".join(action.option_strings)
    return str(action.metavar or action.dest)


def _takes(action: argparse.Action) -> str:
    """What an argument takes, in a few words: its choices, else its value's name and help."""
    if action.choices is not None:
        return "one of " + ", ".join(map(str, action.choices))
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    if not action.option_strings:
        return action.help
    value = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    return f"{value}: {action.help}"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, Any] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return None


def closest(word: str, known: list[str]) -> list[str]:
    """The known words `word` is most likely a slip for: one a letter or two away, the same
    in another case (the closest), or those it starts (an abbreviation argparse did not
    take: at most two).
    Read only on the error path (difflib is not imported at start)."""
    import difflib

    low = word.lower()
    same = [k for k in known if k.lower() == low]
    if same:
        return same[:1]
    close = difflib.get_close_matches(low, known, n=1, cutoff=0.6)
    if not close and len(word.lstrip("-")) >= 2:
        close = [k for k in known if k.startswith(low)][:2]
    return close


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


def seconds(value: str) -> float:
    """A --timeout value: memoryctl's and `memoryd mcp`'s (0, a negative number, nan or inf
    would make every call fail, and 0 said the daemon had closed the connection)."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 1e6:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value!r}")
    return seconds


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
