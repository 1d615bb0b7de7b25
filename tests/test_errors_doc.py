"""The error table of docs/protocol.md and the code agree: every code the daemon can raise is in
the table, and every code in the table is raised somewhere."""

from __future__ import annotations

import re
from pathlib import Path

from memoryd.core import errors
from memoryd.serve import protocol

ROOT = Path(__file__).resolve().parent.parent
SOURCE = {
    p: p.read_text()
    for p in (ROOT / "memoryd").rglob("*.py")
    if p.name != "errors.py" and "ctl" not in p.parts
}


def doc_table() -> dict[int, str]:
    text = (ROOT / "docs" / "protocol.md").read_text()
    section = text.split("## Errors", 1)[1].split("\n## ", 1)[0]
    return {
        int(code): when
        for code, when in re.findall(r"^\| `(-\d+)` \| [^|]+ \| (.+) \|$", section, re.M)
    }


def error_classes() -> dict[str, int]:
    return {
        name: cls.code
        for name, cls in vars(errors).items()
        if isinstance(cls, type)
        and issubclass(cls, errors.MemorydError)
        and cls is not errors.MemorydError
    }


PROTOCOL_CODES = {
    "PARSE_ERROR": protocol.PARSE_ERROR,
    "INVALID_REQUEST": protocol.INVALID_REQUEST,
    "METHOD_NOT_FOUND": protocol.METHOD_NOT_FOUND,
    "INVALID_PARAMS": protocol.INVALID_PARAMS,
    "INTERNAL_ERROR": protocol.INTERNAL_ERROR,
}


def code_lines(text: str) -> list[str]:
    """The lines of a module that are not imports or constant definitions."""
    out, in_import = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if in_import:
            in_import = not stripped.startswith(")")
            continue
        if stripped.startswith(("from ", "import ")):
            in_import = stripped.endswith("(")
            continue
        if re.match(r"^[A-Z_, ]+= ", line) or stripped.startswith("#"):
            continue
        out.append(line)
    return out


def used(name: str) -> bool:
    """An error class raised (or built, or its .code sent), or a protocol code sent, somewhere
    outside errors.py: not only imported or caught."""
    if name in PROTOCOL_CODES:
        pattern = re.compile(rf"\b{name}\b")
    else:
        pattern = re.compile(rf"\b{name}(\(|\.code\b)")
    return any(pattern.search(line) for t in SOURCE.values() for line in code_lines(t))


def test_every_code_raised_is_in_the_table_and_the_other_way_round() -> None:
    table = doc_table()
    raised = set(error_classes().values()) | set(PROTOCOL_CODES.values())
    assert raised - set(table) == set(), "codes raised but not in docs/protocol.md"
    assert set(table) - raised == set(), "codes in docs/protocol.md that nothing raises"


def test_every_error_class_and_protocol_code_is_used() -> None:
    unused = [n for n in [*error_classes(), *PROTOCOL_CODES] if not used(n)]
    assert unused == []
    # the base class is never raised as such: its -32000 would be an undocumented code
    assert not any(re.search(r"raise MemorydError\(", t) for t in SOURCE.values())


def test_too_many_connections_is_unavailable_in_the_doc_and_the_server() -> None:
    table = doc_table()
    assert "too many connections" not in table[-32603]
    assert "too many connections" in table[-32003] and "idle" in table[-32003]
    server = (ROOT / "memoryd" / "serve" / "server.py").read_text()
    refusal = server.split("too many connections", 1)[0].rsplit("error_response(", 1)[1]
    assert "Unavailable.code" in refusal
