"""The help and the mistakes of both programs, `memoryd` and `memoryctl`, over every parser they
build (argparse's actions walked, not a list kept by hand): an unknown command, action, choice or
option says the closest; a value of the wrong type says what was expected with an example; `-h`
anywhere shows the help of the command the line names. One wording for both (ctl/loud.py's
LoudParser is the class of every parser and subparser of the two)."""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryd import cli, ctl
from memoryd.ctl.parser import Parser


@pytest.fixture(autouse=True)
def _plain_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Parser, "json_errors", False)  # usage errors printed, as on a terminal
    monkeypatch.setenv("COLUMNS", "100")


PROGRAMS = {"memoryctl": ctl.build_parser, "memoryd": cli.build_parser}


def _subs(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:  # type: ignore[type-arg]
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def walk(parser: argparse.ArgumentParser, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    """(command words, parser) for the parser and every subcommand under it (aliases once)."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield from walk(sub, [*path, name])


def every(kind: str) -> list[Any]:
    """pytest params: (program, command words, parser[, action]) over both programs."""
    out = []
    for prog, build in PROGRAMS.items():
        for path, parser in walk(build(), []):
            sub = _subs(parser)
            if kind == "parser" or (kind == "commands" and sub is not None):
                out.append(pytest.param(prog, path, id=" ".join([prog, *path])))
            elif kind in ("typed", "option") and not (sub is not None and sub.required):
                for action in parser._actions:
                    if kind == "typed" and _typed(action):
                        ident = " ".join([prog, *path, action.dest])
                        out.append(pytest.param(prog, path, action.dest, id=ident))
                    if kind == "option" and any(f.startswith("--") for f in action.option_strings):
                        flag = next(f for f in action.option_strings if f.startswith("--"))
                        if flag not in ("--help", "--version"):
                            ident = " ".join([prog, *path, flag])
                            out.append(pytest.param(prog, path, flag, id=ident))
    return out


def _typed(action: argparse.Action) -> bool:
    kind = action.type
    return kind is not None and kind is not str and getattr(kind, "__name__", "") != "Path"


def leaf(prog: str, path: list[str]) -> argparse.ArgumentParser:
    parser = PROGRAMS[prog]()
    for word in path:
        sub = _subs(parser)
        assert sub is not None
        parser = sub.choices[word]
    return parser


def needed(parser: argparse.ArgumentParser, but: str | None = None) -> list[str]:
    """The least a command line for this parser must hold: its required options and positionals
    (a valid value each), so the mistake under test is the one reported."""
    words: list[str] = []
    for action in parser._actions:
        if action.dest == but or isinstance(action, argparse._SubParsersAction):
            continue
        value = str(action.choices[0] if action.choices else 1)  # type: ignore[index]
        if action.option_strings and action.required:
            words += [action.option_strings[-1], value]
        elif not action.option_strings and action.nargs not in ("?", "*"):
            words.append(value)
    return words


def error_of(prog: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        PROGRAMS[prog]().parse_args(argv)
    assert exc.value.code == 2, argv
    err = capsys.readouterr().err
    return err.strip().splitlines()[-1]


def _typo(word: str) -> str:
    return word + word[-1]  # one letter doubled: `searchh`, `rmm`, `--limitt`


@pytest.mark.parametrize(("prog", "path"), every("commands"))
def test_an_unknown_command_or_action_says_the_closest(
    prog: str, path: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`memoryctl serch` listed 31 commands and left the reader to find the one meant."""
    parser = leaf(prog, path)
    sub = _subs(parser)
    assert sub is not None
    for name in sub.choices:
        said = error_of(prog, [*path, _typo(name)], capsys)
        assert f"did you mean '{name}'?" in said, said
        assert said.startswith(f"{parser.prog}: error: "), said  # the parser of that level


@pytest.mark.parametrize(("prog", "path", "flag"), every("option"))
def test_an_unknown_option_says_the_closest_in_its_commands_words(
    prog: str, path: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`memoryctl search deploy --limt 5` said "unrecognized arguments" under memoryctl's usage
    (or told to put the text after --); the command that was given it says the option meant."""
    parser = leaf(prog, path)
    said = error_of(prog, [*path, *needed(parser), _typo(flag)], capsys)
    assert f"did you mean {flag}?" in said, said
    assert said.startswith(f"{parser.prog}: error: unrecognized arguments"), said


@pytest.mark.parametrize(("prog", "path", "dest"), every("typed"))
def test_a_value_of_the_wrong_type_says_what_was_expected(
    prog: str, path: list[str], dest: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-n x` said `invalid int value: 'x'`, and `--config-error-status x` named a private
    function (`invalid _exit_status value`): every typed value says what it expected."""
    parser = leaf(prog, path)
    action = next(a for a in parser._actions if a.dest == dest)
    bad = "x!"
    given = [action.option_strings[-1], bad] if action.option_strings else [bad]
    said = error_of(prog, [*path, *needed(parser, but=dest), *given], capsys)
    assert "expected" in said and repr(bad) in said, said
    assert "invalid" not in said, said


@pytest.mark.parametrize(("prog", "path"), every("parser"))
def test_help_anywhere_shows_the_help_of_the_command_named(
    prog: str, path: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`memoryctl -h note read` showed memoryctl's help, `memoryctl note -h read` note's: a -h
    anywhere before `--` shows the help of the command the words name."""
    want = leaf(prog, path).format_help()
    for flag in ("-h", "--help"):
        for argv in ([flag, *path], [*path, flag], [*path[:1], flag, *path[1:]]):
            with pytest.raises(SystemExit) as exc:
                PROGRAMS[prog]().parse_args(argv)
            assert exc.value.code == 0
            assert capsys.readouterr().out == want, argv


def test_help_after_two_dashes_is_text(capsys: pytest.CaptureFixture[str]) -> None:
    args = ctl.build_parser().parse_args(["search", "--", "-h"])
    assert args.query == "-h"


@pytest.mark.parametrize(
    ("prog", "argv", "said"),
    [
        ("memoryctl", ["serch", "deploy"], "did you mean 'search'?"),
        ("memoryctl", ["SEARCH", "deploy"], "did you mean 'search'?"),
        ("memoryctl", ["--serch"], "did you mean the command search?"),
        ("memoryctl", ["search", "x", "--mode", "key"], "did you mean 'keyword'?"),
        ("memoryctl", ["search", "x", "-n", "ten"], "expected a whole number (as in --limit"),
        ("memoryctl", ["get", "abc"], "expected a whole number (as in memoryctl get 5)"),
        ("memoryctl", ["search", "--dry-run"], "goes after --, as in memoryctl search --"),
        ("memoryctl", ["add", "x", "-q"], "goes after --, as in memoryctl add -- '-q'"),
        ("memoryctl", ["delete", "--tags", "x"], "arguments: --tags (did you mean --tag?)"),
        ("memoryctl", ["get", "--idd", "5"], "unrecognized arguments: --idd"),
        ("memoryd", ["rn"], "did you mean 'run'?"),
        ("memoryd", ["run", "--confg", "x"], "did you mean --config?"),
        ("memoryd", ["run", "--config-error-status", "x"], "a whole number from 0 to 255"),
        ("memoryd", ["run", "--config-error-status", "300"], "a whole number from 0 to 255"),
        # a command's option before the command: argparse said "invalid choice: 'c.toml'"
        ("memoryd", ["--config", "c.toml", "run"], "as in memoryd run --config c.toml"),
        ("memoryd", ["--config=c.toml", "run"], "as in memoryd run --config=c.toml"),
        ("memoryd", ["--dry-run", "store", "migrate"], "as in memoryd store migrate --dry-run"),
        ("memoryd", ["--config", "c.toml"], "is an option of memoryd run, memoryd config"),
        ("memoryctl", ["--limit", "5", "search", "x"], "as in memoryctl search --limit 5"),
        ("memoryctl", ["-n", "5", "list"], "as in memoryctl list -n 5"),
        ("memoryd", ["--foo", "run"], "unrecognized arguments: --foo"),
    ],
)
def test_mistakes_as_a_person_makes_them(
    prog: str, argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    message = error_of(prog, argv, capsys)
    assert said in message, message
    if argv[:2] == ["get", "--idd"]:  # an ID goes there: no word on text after --
        assert message.endswith(said), message


def test_an_unknown_option_with_json_is_a_json_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    assert ctl.main(["--json", "--socket", "/nonexistent/s", "search", "x", "--limt", "3"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["kind"] == "usage" and "did you mean --limit?" in error["message"], error


ROOT = Path(__file__).resolve().parent.parent
PROGRAM_LINES = {
    "memoryd": ["-m", "memoryd"],
    "memoryctl": [str(ROOT / "bin" / "memoryctl")],
    "python -m memoryd.ctl": ["-m", "memoryd.ctl"],
    "python -m memoryd.agents.mcp": ["-m", "memoryd.agents.mcp"],
}


@pytest.mark.parametrize("program", PROGRAM_LINES)
def test_every_program_says_the_package_version(program: str) -> None:
    """`python -m memoryd.agents.mcp --version` (and --help) printed nothing and exited 0: the
    module had no `__main__`. Each program's --version is the installed package's."""
    from importlib import metadata

    out = subprocess.run(
        [sys.executable, *PROGRAM_LINES[program], "--version"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    name = "memoryctl" if "ctl" in program else "memoryd"
    assert out.stdout == f"{name} {metadata.version('memoryd')}\n"


def test_the_bridge_module_has_the_flags_of_memoryd_mcp() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "memoryd.agents.mcp", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    bridge = leaf("memoryd", ["mcp"])
    for action in bridge._actions:
        for flag in action.option_strings:
            assert flag in out.stdout, flag


def test_memoryd_run_builds_its_arguments_without_the_other_commands_code() -> None:
    """`memoryd run` builds every subcommand's arguments (argparse), not the code behind them:
    the MCP bridge (its tool catalog, memoryctl's client), memoryctl's command table and the
    service's plist writer cost every daemon's start ~40 ms of CPU, and no daemon uses them.
    `memoryd mcp` still runs the bridge (test_mcp_wire), with the flags above."""
    code = (
        "import sys\n"
        "from memoryd import cli\n"
        "args = cli.build_parser().parse_args(['run'])\n"
        "assert args.func is cli.cmd_run\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0, out.stderr
    loaded = set(out.stdout.split())
    unused = {"memoryd.agents.mcp", "memoryd.agents.catalog", "memoryd.ctl.table", "plistlib"}
    assert loaded & unused == set()
    assert "memoryd.agents.mcpflags" in loaded  # (not a build that failed before the imports)
    mcp = cli.build_parser().parse_args(["mcp", "--namespace", "claude"])
    assert mcp.func is cli.cmd_mcp and mcp.namespace == "claude"


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_COMMAND_LINE = re.compile(r"`((?:memoryctl|memoryd) [^`\n]*)`")
_OTHER_COMMAND = re.compile(r"\|\||&&|\||;|#|>|\$\(")


def command_lines(text: str) -> Iterator[str]:
    """Every memoryd or memoryctl command line a text shows: in `code`, or a line of a code
    block (or of --help's examples), cut where another command or a comment starts."""
    found = [m.group(1) for m in _COMMAND_LINE.finditer(text)]
    for line in text.splitlines():
        for part in _OTHER_COMMAND.split(line.strip().removeprefix("$ ")):
            if part.strip().startswith(("memoryctl ", "memoryd ")):
                found.append(part.strip())
    for line in found:
        line = re.split(r"\s{2,}", _OTHER_COMMAND.split(line)[0])[0]  # (an aligned comment)
        if line.split(" ", 2)[1].endswith(":"):  # `memoryd mcp: --namespace: ...`, a message
            continue
        try:
            yield from [shlex.split(line)]
        except ValueError:  # an unbalanced quote in prose
            yield line.split()


def _flags_of(prog: str, words: list[str]) -> Iterator[tuple[argparse.ArgumentParser, str]]:
    """(the parser the words name, a --flag they give it), up to a `--`."""
    parser = PROGRAMS[prog]()
    for word in words:
        if word == "--":
            return
        sub = _subs(parser)
        if sub is not None and word in sub.choices:
            parser = sub.choices[word]
        elif word.startswith("--"):
            yield parser, word.partition("=")[0].rstrip(":,.)")


def test_every_documented_flag_exists_on_its_command() -> None:
    """A flag the README or docs/*.md show on a command line is one that command takes."""
    missing = []
    for doc in DOCS:
        for words in command_lines(doc.read_text()):
            for parser, flag in _flags_of(words[0], words[1:]):
                if flag != "--" and flag not in parser._option_string_actions:
                    missing.append(f"{doc.name}: {' '.join(words)}: {flag}")
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize(("prog", "path"), every("parser"))
def test_every_option_is_explained_and_documented(prog: str, path: list[str]) -> None:
    """`--help` says what each option and argument is for (`memoryctl session --max-tokens N`
    and `export -o FILE` said nothing, `search --mode` not its default), and the README or
    docs/*.md name every long option (`export --output` was in neither)."""
    docs = "\n".join(doc.read_text() for doc in DOCS)
    for action in leaf(prog, path)._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        shown = action.option_strings or [action.metavar or action.dest]
        assert action.help, f"{prog} {' '.join(path)} {shown[-1]}: no help"
        for flag in action.option_strings:
            if flag.startswith("--"):
                assert flag in docs, f"{prog} {' '.join(path)} {flag}: not in the docs"


def help_examples() -> list[Any]:
    out = []
    for prog, build in PROGRAMS.items():
        for _path, parser in walk(build(), []):
            for words in command_lines(parser.epilog or ""):
                if words[0] == prog and not any(w.isupper() for w in words):  # COMMAND --help
                    out.append(pytest.param(prog, words[1:], id=" ".join(words)))
    return out


@pytest.mark.parametrize(("prog", "argv"), help_examples())
def test_every_example_in_help_parses(prog: str, argv: list[str]) -> None:
    """The examples --help gives are command lines the parser takes, as written."""
    args = PROGRAMS[prog]().parse_args(argv)
    assert args.command


def _section(doc: str, title: str) -> str:
    return (ROOT / "docs" / doc).read_text().split(title, 1)[1].split("\n## ", 1)[0]


def test_the_exit_statuses_in_help_are_the_documented_ones() -> None:
    """One list of exit statuses, said twice: memoryctl --help and docs/memoryctl.md's table;
    memoryd run --help and docs/service.md's table."""
    ctl_help = PROGRAMS["memoryctl"]().epilog or ""
    in_help = set(re.findall(r"^  (\d+)  ", ctl_help, re.M))
    in_docs = set(re.findall(r"^\| (\d+) \|", _section("memoryctl.md", "## Exit status"), re.M))
    assert in_help == in_docs == {"0", "1", "2", "3", "130"}, (in_help, in_docs)
    run_help = leaf("memoryd", ["run"]).description or ""
    said = set(re.findall(r"\b(\d) (?:stopped|could not start|configuration error)", run_help))
    table = _section("service.md", "| why `memoryd run` stops |")
    assert said == set(re.findall(r"^\|[^|]+\| (\d)\b", table, re.M)) == {"0", "1", "2"}, said


@pytest.mark.parametrize(("prog", "path"), every("parser"))
def test_a_missing_argument_or_value_says_what_it_takes(
    prog: str, path: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`memoryctl note` said `required: ACTION`, `search x --mode` `expected one argument`:
    each now says what goes there (the actions, the choices, or the argument's help)."""
    parser = leaf(prog, path)
    sub = _subs(parser)
    if sub is not None and sub.required:
        said = error_of(prog, path, capsys)
        assert f"ACTION (one of {', '.join(sub.choices)})" in said, said
    for action in parser._actions:
        takes_value = action.nargs is None and action.option_strings
        if not takes_value or action.const is not None or action.default == argparse.SUPPRESS:
            continue  # (a flag; a global option given before a command, below)
        flag = action.option_strings[-1]
        said = error_of(prog, [*path, *needed(parser), flag], capsys)
        assert said.startswith(f"{parser.prog}: error: argument "), said
        assert "expected one argument, " in said and len(said.split(", ", 1)[1]) > 3, said


def test_a_missing_global_value_says_what_it_takes(capsys: pytest.CaptureFixture[str]) -> None:
    said = error_of("memoryctl", ["--socket"], capsys)
    want = "expected one argument, PATH: the daemon's socket (default: $MEMORYD_SOCKET, else"
    assert want in said, said


@pytest.mark.parametrize("program", ["memoryd", "memoryctl"])
def test_no_command_is_a_usage_error_with_the_help_on_stderr(program: str) -> None:
    """`memoryd` alone printed its help on stdout with exit 2, memoryctl on stderr: both say it
    as a usage error (stdout stays empty for a script that reads it)."""
    out = subprocess.run(
        [sys.executable, *PROGRAM_LINES[program]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode == 2 and out.stdout == "", out.stdout
    assert out.stderr.startswith(f"usage: {program} "), out.stderr


@pytest.mark.parametrize(("prog", "path"), every("parser"))
def test_version_anywhere_is_the_programs(
    prog: str, path: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`memoryctl search x --version` suggested `--json`: --version after a command is the
    program's version, as -h anywhere is the command's help."""
    import memoryd

    with pytest.raises(SystemExit) as exc:
        PROGRAMS[prog]().parse_args([*path, "--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"{prog} {memoryd.__version__}\n"


@pytest.mark.parametrize(("prog", "path"), every("parser"))
def test_help_fits_an_80_column_terminal(
    prog: str, path: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default terminal is 80 columns: the epilogs were written to 98 (every line of
    memoryctl's exit statuses wrapped), memoryd's description was one line of 158, a command's
    description (`status`) one of 123, and `--tier {constitutional,...}` ran to 97."""
    monkeypatch.setenv("COLUMNS", "80")
    for line in leaf(prog, path).format_help().splitlines():
        assert len(line) <= 80, line


@pytest.mark.parametrize("action", ["show", "check", "path"])
@pytest.mark.parametrize("mistake", [["--confg", "x"], ["--json-x"]])
def test_memoryd_config_json_says_a_usage_error_as_json(
    action: str, mistake: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`memoryd config show --json` says a bad configuration as JSON on stdout (as memoryctl
    --json says every error); a usage error was argparse's text on stderr instead."""
    import json

    with pytest.raises(SystemExit) as exc:
        cli.main(["config", action, "--json", *mistake])
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    said = json.loads(out)
    assert said["ok"] is False and said["problems"] == [said["error"]], said
    assert said["error"].startswith(f"memoryd config {action}: unrecognized arguments: "), said
    assert err == ""
