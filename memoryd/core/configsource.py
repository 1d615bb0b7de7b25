"""Where a setting was written: the line of the config file, or the environment variable, that
a configuration error is about, so each problem reads `FILE:LINE: key: what is wrong` (the
form editors and terminals jump to) or `MEMORYD_SEARCH_RRF_K: key: what is wrong`.

tomllib keeps no positions, so the file's lines are read once more, here: table headers and
`key =` lines (dotted, quoted, inside inline tables by their table's line), skipping the
insides of multi-line strings. A key it cannot place is named without a line. A TOML syntax
error is placed the same way (`FILE:LINE:COLUMN`), with the line's key but never its value.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

_HEADER = re.compile(r"\s*\[\s*([^\[\]#]+?)\s*\]\s*(?:#.*)?$")
_PART = r"(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')"
_KEY = re.compile(rf"\s*({_PART}(?:\s*\.\s*{_PART})*)\s*=")
_PROBLEM_KEY = re.compile(r"unknown key '([^']+)'|([A-Za-z_][\w.]*): ")


def _dotted(raw: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in raw.split("."))


def key_lines(text: str) -> dict[str, int]:
    """Each table and key of a TOML text (dotted: "search", "search.rrf_k") -> its first
    line, 1-based."""
    out: dict[str, int] = {}
    table, in_string = "", None
    for n, line in enumerate(text.splitlines(), 1):
        if in_string is not None:
            if line.count(in_string) % 2:
                in_string = None
            continue
        header = _HEADER.match(line)
        key = None if header else _KEY.match(line)
        if header:
            table = _dotted(header.group(1))
            out.setdefault(table, n)
        elif key:
            name = _dotted(key.group(1))
            out.setdefault(f"{table}.{name}" if table else name, n)
        for quote in ('"""', "'''"):
            if line.count(quote) % 2:
                in_string = quote
                break
    return out


def problem_key(problem: str) -> str | None:
    """The dotted key a validation message is about ("unknown key 'search.rrf'",
    "search.rrf_k: expected ...")."""
    m = _PROBLEM_KEY.match(problem)
    return (m.group(1) or m.group(2)) if m else None


def env_var(key: str) -> str:
    """The variable that overrides a dotted key: workspace -> MEMORYD_WORKSPACE,
    search.rrf_k -> MEMORYD_SEARCH_RRF_K."""
    return "MEMORYD_" + key.replace(".", "_").upper()


def locate(
    problems: Iterable[str], file: Path | None, text: str, env: Mapping[str, str]
) -> list[str]:
    """Each problem with where its key was set: the environment variable when one overrides
    it (the environment wins), else FILE:LINE (the line of the key, else of its table)."""
    lines = key_lines(text) if file is not None else {}
    out: list[tuple[int, str]] = []  # in the file's order, then the others as they came
    for problem in problems:
        key = problem_key(problem)
        if key is None or problem.startswith("MEMORYD_"):
            out.append((1 << 30, problem))
            continue
        if env_var(key) in env:
            out.append((1 << 30, f"{env_var(key)}: {problem}"))
            continue
        where = None
        parts = key.split(".")
        while parts and where is None:
            where = lines.get(".".join(parts))
            parts.pop()
        out.append((where, f"{file}:{where}: {problem}") if where else (1 << 30, problem))
    return [text for _, text in sorted(out, key=lambda p: p[0])]


def toml_error(found: Path, text: str, exc: tomllib.TOMLDecodeError) -> str:
    """`FILE:LINE:COLUMN: invalid TOML: what (the line)`, as the other errors name their
    place; a bare word where a value goes gets the quotes it needs."""
    m = re.search(r"^(.*) \(at line (\d+), column (\d+)\)$", str(exc))
    if m is None:
        return f"{found}: invalid TOML: {exc}"
    what, line, column = m.group(1), int(m.group(2)), m.group(3)
    lines = text.splitlines()
    raw = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    # the line's key, never its value: a dsn written without quotes may hold a password
    if "=" in raw:
        shown = raw.split("=", 1)[0].strip()[:60] + " = ..."
    elif raw.startswith("["):
        shown = raw[:80]
    else:
        shown = raw.split()[0][:30].split(":")[0] + " ..." if raw else ""
    if what == "Invalid value":
        what += '; text is written in quotes, e.g. level = "debug", workspace = "~/notes"'
    return f"{found}:{line}:{column}: invalid TOML: {what}" + (f" ({shown})" if shown else "")
