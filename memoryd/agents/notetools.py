"""The MCP tools that work on parts of notes and on links: `read_note` with paging,
`edit_note` (a section, a find-and-replace, an insertion at a heading), `delete_note`, `links`
and `backlinks`.

Every edit is read-modify-write on the daemon's note.read and note.write with expected_sha256:
the note is read, changed here, and written back only if nobody changed it in between (else the
daemon refuses with a conflict, and the agent reads again). Nothing is lost and nothing partial
is written: a heading that is not there, or a text found a different number of times than
expected, writes nothing.
"""

from __future__ import annotations

import json
from typing import Any

from memoryd.agents.formats import kept_said
from memoryd.agents.hints import ERROR_NAMES
from memoryd.agents.tools import (
    INT,
    INVALID,
    NOTE_PATH,
    SHA,
    STR,
    Bridge,
    ToolFailure,
    ToolSpec,
    _obj,
)
from memoryd.text.mdblocks import headings

NOT_FOUND = -32004

# --- read_note with paging ---------------------------------------------------------------------


def page(content: str, offset: int, limit: int | None, unit: str) -> dict[str, Any]:
    """One page of a note's text: lines [offset, offset+limit) or UTF-8 bytes (cut at
    character boundaries), with the total and the next offset (None at the end)."""
    if unit == "bytes":
        data = content.encode("utf-8")
        start = min(offset, len(data))
        while 0 < start < len(data) and data[start] & 0xC0 == 0x80:
            start += 1  # not inside a character
        end = len(data) if limit is None else min(len(data), start + limit)
        while start < end < len(data) and data[end] & 0xC0 == 0x80:
            end -= 1
        if end == start and start < len(data) and limit is not None:
            end = start + 1  # a limit smaller than one character still moves on
            while end < len(data) and data[end] & 0xC0 == 0x80:
                end += 1
        text, total = data[start:end].decode("utf-8"), len(data)
    else:
        lines = content.splitlines(keepends=True)
        start = min(offset, len(lines))
        end = len(lines) if limit is None else min(len(lines), start + limit)
        text, total = "".join(lines[start:end]), len(lines)
    return {
        "unit": unit,
        "offset": start,
        "total": total,
        "next_offset": end if end < total else None,
        "content": text,
    }


def run_read_note(b: Bridge, args: dict[str, Any]) -> dict[str, Any]:
    note = b.call("note.read", {"path": args["path"]})
    expected = args.get("expected_sha256")
    if expected and expected.lower() != note["sha256"]:  # the next page of another version
        raise ToolFailure(
            f"memoryd read_note: {note['path']} changed since the page you read (conflict): "
            f"its offsets moved, so this page would repeat or skip text. Current sha256: "
            f"{note['sha256']}. Read it again from offset 0.",
            {"code": -32009, "data": {"current_sha256": note["sha256"]}},
        )
    whole = args.get("offset") is None and args.get("limit") is None
    unit = args.get("unit") or "lines"
    asked = int(args.get("offset") or 0)
    part = page(note["content"], asked, args.get("limit"), unit)
    if asked != part["offset"]:  # past the end (or inside a character): say what was asked
        part["asked"] = asked
    out = {k: note.get(k) for k in ("path", "sha256", "size")}
    return {**out, "content": note["content"]} if whole else {**out, **part}


def fmt_read_note(r: dict[str, Any]) -> str:
    head = f"{r['path']} (sha256 {r['sha256']}, {r['size']} bytes)"
    if "unit" in r and not r["content"] and r["offset"] >= r["total"]:
        return (
            f"{head[:-1]}, nothing from offset {r.get('asked', r['offset'])}: the note has "
            f"{r['total']} {r['unit']})"
        )
    if "unit" in r:
        unit = r["unit"]
        last = r["offset"] + _count(r["content"], unit) - 1
        shown = f"{unit} {r['offset']}-{last} of {r['total']} (from 0)"
        more = (
            f"; more from offset {r['next_offset']}, with expected_sha256 to be told if it changes"
            if r["next_offset"] is not None
            else "; end"
        )
        head = f"{head[:-1]}, {shown}{more})"
    return f"{head}\n\n{r.get('content', '')}"


def _count(text: str, unit: str) -> int:
    return len(text.encode("utf-8")) if unit == "bytes" else len(text.splitlines())


# --- edit_note ---------------------------------------------------------------------------------


def _headings(lines: list[str]) -> list[tuple[int, int, tuple[str, ...], int]]:
    """(line index, level, heading path, lines it takes) of every heading the chunker reads
    (mdblocks.headings: outside code, comments and math, setext ones too), none in the front
    matter (a YAML `# comment` there is no heading)."""
    out: list[tuple[int, int, tuple[str, ...], int]] = []
    stack: list[tuple[int, str]] = []
    for i, level, title, size in headings([line.rstrip("\r\n") for line in lines]):
        stack = [s for s in stack if s[0] < level] + [(level, title.strip())]
        out.append((i, level, tuple(t for _, t in stack), size))
    return out


def _refused(message: str, code: int = INVALID) -> ToolFailure:
    """An edit the tool itself refuses, said as a daemon error is: the text with its name and
    code, the structured copy with the code an agent can test."""
    text = f"edit_note: {message} ({ERROR_NAMES[code]}, code {code})"
    return ToolFailure(text, {"code": code, "message": message})


def find_section(lines: list[str], heading: str) -> tuple[int, int, int]:
    """(heading line index, index of the line under the heading (two lines down for a setext
    heading, `Title` over `===`), index after its section's last line) of the heading named: its
    text ('Setup', '## Setup') or its path ('Install > Setup'), case-insensitive."""
    want = [p.strip().lstrip("#").strip().lower() for p in heading.split(">")]
    heads = _headings(lines)
    found = [
        (i, level, size)
        for i, level, path, size in heads
        if [p.lower() for p in path[-len(want) :]] == want and len(path) >= len(want)
    ]
    if not found:
        names = ", ".join(repr(" > ".join(p)) for _, _, p, _ in heads[:20]) or "none"
        raise _refused(f"no heading {heading!r} in the note (headings: {names})", NOT_FOUND)
    if len(found) > 1:
        where = ", ".join(str(i + 1) for i, _, _ in found)
        paths = {path for i, _, path, _ in heads if i in {f for f, _, _ in found}}
        if len(paths) == 1:  # its path names them all alike: no heading can tell them apart
            raise _refused(
                f"heading {heading!r} occurs {len(found)} times (lines {where}), each with the "
                f"path {' > '.join(paths.pop())!r}: change one with action 'replace' and a find "
                "text only it holds, or rewrite the note with write_note"
            )
        raise _refused(
            f"heading {heading!r} occurs {len(found)} times (lines {where}): name it by its "
            "path, e.g. 'Parent > Heading'"
        )
    start, level, size = found[0]
    end = next((i for i, lv, _, _ in heads if i > start and lv <= level), len(lines))
    return start, start + size, end


def _block(content: str, nl: str = "\n") -> list[str]:
    if not content.strip():
        return []
    return [line + nl for line in _lines_of(content, nl).rstrip(nl).split(nl)]


def _lines_of(text: str, nl: str) -> str:
    """The agent's text with the note's line ending (a CRLF note stays CRLF throughout)."""
    return text.replace("\r\n", "\n").replace("\n", nl) if nl != "\n" else text


def _newline(text: str) -> str:
    """CRLF for a note whose every line ends so, else LF."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf == text.count("\n") else "\n"


_TAKES = {"replace": ("find", "replace", "count"), "section": ("heading", "content")}


def edit(text: str, args: dict[str, Any]) -> tuple[str, str]:
    """The note's new text and a one-line account of the change."""
    action, nl = args["action"], _newline(text)
    takes = _TAKES["replace" if action == "replace" else "section"]
    stray = [k for k in (*_TAKES["replace"], *_TAKES["section"]) if k in args and k not in takes]
    if stray:
        raise _refused(
            f"{', '.join(stray)}: not an argument of action {action!r} (it takes "
            f"{', '.join(takes)}); nothing was changed"
        )
    if action == "replace":
        find, count = args.get("find"), args.get("count", 1)
        if not find or "replace" not in args:
            raise _refused("action 'replace' needs find and replace")
        find, replace = _lines_of(find, nl), _lines_of(args["replace"], nl)
        found = text.count(find)
        if found != count:
            raise _refused(
                f"the text to find occurs {found} time(s), not the {count} expected "
                "(count); nothing was changed. Give a longer, unique text or the right count."
            )
        if find == replace:
            return text, "nothing to change: the replacement is the text found"
        return text.replace(find, replace), f"replaced {found} occurrence(s)"
    heading, content = args.get("heading"), args.get("content")
    if not heading or content is None:
        raise _refused(f"action {action!r} needs heading and content")
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += nl
    start, under, end = find_section(lines, heading)
    block = _block(content, nl)
    if action == "replace_section":
        gap = [nl] if end < len(lines) and block else []
        # the note's own spacing: a blank line under the heading stays
        lead = [nl] if under < end and not lines[under].strip() and block else []
        new = [*lines[:under], *lead, *block, *gap, *lines[end:]]
        what = f"replaced the section under line {start + 1}"
    elif action == "insert_before":
        new = [*lines[:start], *block, *([nl] if block else []), *lines[start:]]
        what = f"inserted {len(block)} line(s) before line {start + 1}"
    else:  # insert_after: right under the heading (its underline, for a setext one)
        new = [*lines[:under], *block, *lines[under:]]
        what = f"inserted {len(block)} line(s) after line {under}"
    return "".join(new), what


def run_edit_note(b: Bridge, args: dict[str, Any]) -> dict[str, Any]:
    note = b.call("note.read", {"path": args["path"]})
    expected = args.get("expected_sha256")
    if expected and expected.lower() != note["sha256"]:
        raise ToolFailure(
            f"memoryd edit_note: {note['path']} changed since you read it (conflict). Current "
            f"sha256: {note['sha256']}. Read the note again (read_note) and retry.",
            {"code": -32009, "data": {"current_sha256": note["sha256"]}},
        )
    new, what = edit(note["content"], args)
    if new == note["content"]:
        return {"path": note["path"], "sha256": note["sha256"], "changed": False, "edit": what}
    wrote = b.call(
        "note.write", {"path": note["path"], "content": new, "expected_sha256": note["sha256"]}
    )
    said = {k: wrote[k] for k in ("encoding", "indexed", "warning") if k in wrote}
    return {"path": wrote["path"], "sha256": wrote["sha256"], "changed": True, "edit": what, **said}


def run_delete_note(b: Bridge, args: dict[str, Any]) -> dict[str, Any]:
    note = b.call("note.read", {"path": args["path"]})  # a note, not a folder; and its sha
    expected = args.get("expected_sha256")
    if expected and expected.lower() != note["sha256"]:
        raise ToolFailure(
            f"memoryd delete_note: {note['path']} changed since you read it (conflict); not "
            f"deleted. Current sha256: {note['sha256']}.",
            {"code": -32009, "data": {"current_sha256": note["sha256"]}},
        )
    # the version read (or given) is the one deleted: a save after this read is a conflict
    res = b.call("delete", {"path": note["path"], "expected_sha256": note["sha256"]})
    return {"path": note["path"], "trash": res.get("trash"), "deleted": res.get("deleted")}


def fmt_links(r: dict[str, Any]) -> str:
    if not r["links"]:  # as memoryctl says it
        return _others(r) + f"{r['path']} links to nothing"
    lines = [f"{r['path']} links to {r.get('total', len(r['links']))}:"]
    for x in r["links"]:
        to = x["path"] or "(unresolved)"
        if x["path"] and x.get("heading"):
            to += f"#{x['heading']}"
        lines.append(f"L{x['line']} {'!' if x.get('embed') else ''}[[{x['target']}]] -> {to}")
    return _others(r) + "\n".join(lines + _next_page(r, "links"))


def fmt_backlinks(r: dict[str, Any]) -> str:
    if not r["backlinks"]:
        return _others(r) + f"nothing links to {r['path']}"
    lines = [f"{r.get('total', len(r['backlinks']))} link(s) to {r['path']}:"]
    lines += [
        f"{x['path']}:{x['line']}" + (f" #{x['heading']}" if x.get("heading") else "")
        for x in r["backlinks"]
    ]
    return _others(r) + "\n".join(lines + _next_page(r, "backlinks"))


def _next_page(r: dict[str, Any], key: str) -> list[str]:
    """How to get the rest, on a page that is not the last."""
    if not r.get("next_cursor"):
        return []
    return [
        f"({len(r[key])} shown; the next page: call {key} again with the same path and"
        f" cursor {json.dumps(r['next_cursor'])})"
    ]


def _others(r: dict[str, Any]) -> str:
    if not r.get("others"):
        return ""
    return f"(the name also fits: {', '.join(r['others'])}; ask by path for one of those)\n"


NOTE_OR_NAME = {
    "type": "string",
    "minLength": 1,
    "description": "a note's workspace-relative path, or its name as a [[wikilink]] would give "
    "it ('Project Plan')",
}

LINK_PAGE = {  # vault.LINKS_LIMIT and LINKS_MAX
    "limit": {**INT, "minimum": 1, "maximum": 5000, "description": "at most this many"},
    "cursor": {**STR, "description": "the next page: the cursor the previous page gave"},
}

NOTE_TOOLS: list[ToolSpec] = [
    ToolSpec(
        "read_note",
        "Read a markdown note from the workspace, front matter included. Returns its text and "
        "sha256; pass that sha256 to write_note, edit_note, append_to_note, move_note or "
        "delete_note so a concurrent edit is never overwritten. For a long note read a page: "
        "offset and limit in lines (or bytes with unit 'bytes'); the answer gives the total "
        "and the next offset; pass its sha256 with the next page to be told if the note "
        "changed between.",
        _obj(
            {
                "path": NOTE_PATH,
                "offset": {**INT, "minimum": 0, "description": "first line (or byte), from 0"},
                "limit": {**INT, "minimum": 1, "description": "lines (or bytes) to return"},
                "unit": {"type": "string", "enum": ["lines", "bytes"]},
                "expected_sha256": SHA,
            },
            ("path",),
        ),
        run_read_note,
        fmt_read_note,
    ),
    ToolSpec(
        "edit_note",
        "Change part of a note without sending all of it. action: 'replace_section' (the text "
        "under a heading, up to the next heading of the same or a higher level; the heading "
        "line stays), 'replace' (find -> replace, exactly `count` times, default 1), "
        "'insert_before' or 'insert_after' a heading line. heading: its text ('Setup') or path "
        "('Install > Setup'). Refused, with nothing written, if the note changed meanwhile.",
        _obj(
            {
                "path": NOTE_PATH,
                "action": {
                    "type": "string",
                    "enum": ["replace_section", "replace", "insert_before", "insert_after"],
                },
                "heading": STR,
                "content": {**STR, "description": "the new section text, or the text to insert"},
                "find": {**STR, "minLength": 1},
                "replace": STR,
                "count": {**INT, "minimum": 1, "description": "occurrences expected (default 1)"},
                "expected_sha256": SHA,
            },
            ("path", "action"),
        ),
        run_edit_note,
        lambda r: (
            f"{'Edited' if r['changed'] else 'Unchanged'} {r['path']}: {r['edit']}"
            f" (sha256 {r['sha256']})" + kept_said(r)
        ),
        read_only=False,
    ),
    ToolSpec(
        "delete_note",
        "Delete a note: it moves to memoryd's trash (the user can restore it from there) and "
        "leaves the index. Give expected_sha256 to delete only the version you read.",
        _obj({"path": NOTE_PATH, "expected_sha256": SHA}, ("path",)),
        run_delete_note,
        lambda r: f"Deleted {r['path']} (moved to {r['trash']})",
        read_only=False,
    ),
    ToolSpec(
        "links",
        "The links written in a note ([[wikilinks]], embeds, markdown links), each with the "
        "note or attachment it leads to, or (unresolved). A page of at most `limit` (default "
        "500); the answer says how to get the next.",
        _obj({"path": NOTE_OR_NAME, **LINK_PAGE}, ("path",)),
        lambda b, a: b.call("links", a),
        fmt_links,
    ),
    ToolSpec(
        "backlinks",
        "The places in other notes that link to a note (or an attachment): path:line. A page "
        "of at most `limit` (default 500), by path; the answer says how to get the next.",
        _obj({"path": NOTE_OR_NAME, **LINK_PAGE}, ("path",)),
        lambda b, a: b.call("backlinks", a),
        fmt_backlinks,
    ),
]
