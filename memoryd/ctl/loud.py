"""argparse that says what was meant: the parser class of both programs, `memoryd` and
`memoryctl` (and `memoryd mcp`'s flags), apart from memoryctl's command table, so that
`memoryd run` builds its arguments without importing memoryctl's commands."""

from __future__ import annotations

import argparse
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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
        elif args is not None:  # `memoryd --config c.toml run`: a command's option before it
            misplaced = self._misplaced_option(list(args))
            if misplaced:
                self.error(misplaced)
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
        unknown = []
        for word in args:
            if word == "--":
                break
            flag = word.partition("=")[0]
            if flag.startswith("--") and not self._option_known(flag):
                unknown.append(word)
        return unknown

    def _misplaced_option(self, args: list[str]) -> str | None:
        """What to say of an option given before the command it belongs to: argparse read
        `memoryd --config c.toml run` as the command `c.toml` ("invalid choice")."""
        commands = _subcommands(self) or {}
        at = next((i for i, w in enumerate(args) if w in commands or w == "--"), len(args))
        command = args[at] if at < len(args) and args[at] in commands else None
        for i, word in enumerate(args[:at]):
            flag = word.partition("=")[0]
            if not flag.startswith("-") or flag in HELP_FLAGS or self._option_known(flag):
                continue
            owners = _owners(self, flag)
            if command is not None:  # the command given: the option goes after it
                owners = [(p, a) for p, a in owners if p.prog.split()[1:2] == [command]]
            if not owners:
                return None
            parser, action = owners[0]
            takes_value = "=" not in word and action.nargs != 0 and i + 1 < at
            moved = args[i : i + 2] if takes_value else [word]
            shown = " ".join([parser.prog, *moved])
            names = [p.prog for p, _ in owners]
            where = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            return (
                f"{flag} is an option of {where}, not of {self.prog}: "
                f"give it after the command, as in {shown}"
            )
        return None

    def _option_known(self, flag: str) -> bool:
        """Whether `flag` is one of this parser's options, or starts a `--` one alone (an
        abbreviation argparse takes)."""
        return flag in self._option_string_actions or (
            flag.startswith("--")
            and any(k.startswith(flag) for k in self._option_string_actions if k.startswith("--"))
        )

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


def _owners(
    parser: argparse.ArgumentParser, flag: str
) -> list[tuple[argparse.ArgumentParser, argparse.Action]]:
    """The commands (at any depth under `parser`) that have the option `flag`, in order."""
    found = []
    for sub in (_subcommands(parser) or {}).values():
        action = sub._option_string_actions.get(flag)
        if action is not None and flag not in HELP_FLAGS:
            found.append((sub, action))
        found.extend(_owners(sub, flag))
    return found


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
