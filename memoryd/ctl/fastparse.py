"""The fast path: parse a plain command line straight from the table, without argparse.

Importing argparse (with gettext and locale) and compiling its regular expressions costs more
than a keyword search at 10K chunks. Most command lines are plain (`search "deploy" -n 5`), so
they are read here from the same table argparse is built from; anything else, help, a typo, a
bad value, an abbreviation, `--`, an option=value, returns None and argparse takes over with
its exact behaviour and messages. tests/test_ctl.py checks both give the same result.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memoryd.ctl.rows import Command


class Namespace:
    """What argparse.Namespace is to the handlers: attributes."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return f"Namespace({self.__dict__!r})"


def _seconds(value: str) -> float:
    seconds = float(value)
    if not 0 < seconds <= 1e6:
        raise ValueError(value)
    return seconds


GLOBALS: dict[str, tuple[str, Any]] = {
    "--socket": ("socket", str),
    "--timeout": ("timeout", _seconds),
    "--json": ("json", None),
}


def _specs(cmd: Command) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any], list[Any]]:
    """(positionals, options by flag, exclusive groups as lists of dests)."""
    positionals: list[tuple[str, dict[str, Any]]] = []
    options: dict[str, Any] = {}
    exclusive: list[list[str]] = []

    def add(flags: tuple[str, ...], kw: dict[str, Any]) -> str:
        if not flags[0].startswith("-"):
            positionals.append((flags[0], kw))
            return flags[0]
        long = next((f for f in flags if f.startswith("--")), flags[0])
        dest = kw.get("dest") or long.lstrip("-").replace("-", "_")
        for flag in flags:
            options[flag] = (dest, kw)
        return dest

    for spec in cmd.args:
        if spec[0] in ("filters", "exclusive"):
            dests = [add(flags, kw) for flags, kw in spec[1]]
            if spec[0] == "exclusive":
                exclusive.append(dests)
        else:
            add(*spec)
    return positionals, options, exclusive


def _convert(kw: dict[str, Any], raw: str) -> Any:
    value = kw["type"](raw) if "type" in kw else raw
    if "choices" in kw and value not in kw["choices"]:
        raise ValueError(raw)
    return value


def fast_parse(argv: list[str], cmd: Command) -> Namespace | None:
    """The parsed arguments of a plain command line for `cmd`, or None (use argparse)."""
    if cmd.actions:
        return None
    positionals, options, exclusive = _specs(cmd)
    values: dict[str, Any] = {}
    for dest, kw in (*positionals, *options.values()):
        if kw.get("action") == "store_true":
            values[dest] = False
        elif kw.get("nargs") == "*":
            values[dest] = []
        else:
            values[dest] = kw.get("default")
    given: list[str] = []
    loose: list[str] = []
    seen_command = False
    i = 0
    try:
        while i < len(argv):
            word = argv[i]
            i += 1
            if word.startswith("-") and word != "-":
                if word in GLOBALS:
                    dest, conv = GLOBALS[word]
                    if conv is None:
                        values[dest] = True
                    else:
                        if i >= len(argv) or argv[i].startswith("-"):
                            return None
                        values[dest] = conv(argv[i])
                        i += 1
                    continue
                if not seen_command or word not in options:
                    return None  # help, --version, --, abbreviations, typos: argparse's job
                dest, kw = options[word]
                given.append(dest)
                if kw.get("action") == "store_true":
                    values[dest] = True
                    continue
                if i >= len(argv) or (argv[i].startswith("-") and argv[i] != "-"):
                    return None
                value = _convert(kw, argv[i])
                # a repeated option (--entity A --entity B) keeps every value, as argparse does
                values[dest] = (
                    [*(values[dest] or ()), value] if kw.get("action") == "append" else value
                )
                i += 1
            elif not seen_command:
                seen_command = True  # the command's own name (or alias)
            else:
                loose.append(word)
    except (ValueError, TypeError):
        return None
    for dest, kw in positionals:
        nargs = kw.get("nargs")
        if nargs == "*":
            try:
                values[dest] = [_convert(kw, w) for w in loose]
            except (ValueError, TypeError):
                return None
            loose = []
        elif loose:
            try:
                values[dest] = _convert(kw, loose.pop(0))
            except (ValueError, TypeError):
                return None
        elif nargs != "?":
            return None  # a required positional is missing
    if loose:
        return None
    for group in exclusive:
        if len([d for d in group if d in given]) > 1:
            return None
    return Namespace(command=cmd.name, command_row=cmd, **values)
