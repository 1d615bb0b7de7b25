"""Memories and search: for each command, the params it sends and how its answer is printed.

`p_NAME(args) -> params` is pure (tested without a socket); `s_NAME(result, args) -> exit` prints
a result; `r_NAME(client, args) -> exit` is for the few commands that are more than one call.
"""

from __future__ import annotations

import sys

from memoryd.ctl.client import ClientError, UsageError
from memoryd.ctl.output import (
    emit_json,
    entities_note,
    flatten,
    location,
    one_line,
    print_entity_hits,
    print_record,
    print_rows,
    print_search,
    search_notes,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from typing import Any

    from memoryd.ctl.client import Client

EXIT_OK = 0


def split_list(value: str | None) -> list[str] | None:
    """'a, b,c' -> ['a', 'b', 'c']."""
    return [t.strip() for t in value.split(",") if t.strip()] if value else None


TIME_GRAMMAR = (
    "a duration back from now (90m, 24h, 7d, 2w), an ISO 8601 date or time, a year (2026) or "
    "month (2026-11), or unix seconds"
)


def _finite(text: str) -> float | None:
    """A finite number written as text (inf and nan are not: JSON cannot carry them, and no
    time or weight is one), else None."""
    try:
        number = float(text)
    except ValueError:
        return None
    return number if number - number == 0 else None  # false for inf and nan


def _usage(message: str) -> Exception:
    """An argparse usage error (exit 2, naming the option) that the fast path, which catches
    ValueError, also hands over to argparse."""
    import argparse

    class BadValue(argparse.ArgumentTypeError, ValueError):
        pass

    return BadValue(message)


def when(value: str) -> str:
    """A --since/--until value, checked against the daemon's grammar (core/timeutil.py):
    unix seconds, a duration back from now (90m, 24h, 7d, 2w, 30s), an ISO 8601 date or
    date-time, a year (2026: the daemon reads a whole number from 1000 to 9999 as one) or a
    month (2026-11). Sent as given (time_value); the daemon resolves it (a bare date, year or
    month as --until is the whole of it)."""
    text = value.strip()
    month = len(text) in (6, 7) and text[4:5] == "-" and text[:4].isdigit()
    ok = _finite(text) is not None or (month and text[5:].isdigit())
    if not ok and text[-1:].lower() in ("s", "m", "h", "d", "w") and text[:-1].strip():
        ago = _finite(text[:-1])
        ok = ago is not None and ago >= 0
    if not ok:
        from datetime import datetime

        try:
            datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "Zz" else text)
            ok = bool(text)
        except ValueError:
            ok = False
    if not ok:
        raise _usage(f"expected {TIME_GRAMMAR}, not {value!r}")
    return text


def finite(value: str) -> float:
    """A number option (--confidence): finite, else a usage error naming it (argparse)."""
    number = _finite(value)
    if number is None:
        raise _usage(f"expected a number, not {value!r}")
    return number


def interval(value: str) -> float:
    """A polling interval in seconds (--interval): finite and positive."""
    number = _finite(value)
    if number is None or number <= 0:
        raise _usage(f"expected a positive number of seconds, not {value!r}")
    return number


def time_value(value: str | None) -> str | float | None:
    """An ISO 8601 time or a duration as given, or unix seconds as a number; a date written
    in digits alone (20261126, ISO 8601's basic form) or a year (2026) stays text, as the
    daemon reads it (a date, a year),
    and text that is no finite number (inf) stays text, for the daemon to refuse by name."""
    if value is None:
        return None
    text = value.strip()
    if len(text) == 4 and text.isdigit():  # a year, as every time param reads the string
        return text
    if len(text) == 8 and text.isdigit():
        from datetime import date

        try:
            date.fromisoformat(text)
            return text
        except ValueError:
            pass
    number = _finite(text)
    return value if number is None else number


def given(params: dict[str, Any]) -> dict[str, Any]:
    """Only the params the user gave (None: not given; False: a flag that is off)."""
    return {k: v for k, v in params.items() if v is not None and v is not False}


def read_text(name: str, *, lenient: bool = False) -> str:
    """A file's text, or stdin's for '-', as UTF-8, without a leading byte order mark. lenient
    (the text of a memory or a note): bytes that are not UTF-8 are read as Windows-1252, as the
    daemon reads a note's (ctl/textin.py); otherwise such bytes are a usage error naming where
    they are."""
    if name == "-":
        if sys.stdin is None:  # `<&-`: no stdin at all (was an AttributeError traceback)
            raise UsageError("cannot read stdin: it is closed (<&-); pipe the text in instead")
        if sys.stdin.isatty():  # a person at a terminal, perhaps not knowing it waits for them
            print("memoryctl: reading stdin: type the text, then Ctrl-D", file=sys.stderr)
        buf = getattr(sys.stdin, "buffer", None)
        if buf is None:  # a text stream someone set (tests): already text
            return sys.stdin.read().removeprefix("\ufeff")
        try:
            data = buf.read()
        except OSError as exc:  # `< folder/` (EISDIR), a terminal gone (EIO)
            raise UsageError(f"cannot read stdin: {exc.strerror or exc}") from None
    else:
        try:
            with open(name, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from None
    if data.startswith(b"\xef\xbb\xbf"):
        # the byte order mark an editor (Notepad, Excel's "UTF-8 CSV") puts first: not text, it
        # would start a memory's content or make an import file's first line not JSON
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if lenient:
            from memoryd.ctl.textin import decode_utf8

            return decode_utf8(data)
        shown = "stdin" if name == "-" else name
        raise UsageError(
            f"cannot read {shown}: not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def stdin_text() -> str:
    """The text piped in (add -, update --content -, triggers -, note write/append), read_text's
    lenient way."""
    return read_text("-", lenient=True)


def filter_params(a: Namespace) -> dict[str, Any]:
    return given(
        {
            "kind": a.kind,
            "type": a.type,
            "tags": split_list(a.tags),
            "source": a.source,
            "path": a.path,
            "since": time_value(a.since),
            "until": time_value(a.until),
            "min_importance": a.min_importance,
            "include_expired": a.include_expired,
            "namespace": a.namespace,
            "tier": a.tier,
            "include_deprecated": a.include_deprecated,
            "entities": a.entity,
        }
    )


def memory_params(a: Namespace) -> dict[str, Any]:
    """The fields `add` and `update` share."""
    return given(
        {
            "type": a.type,
            "tags": split_list(a.tags),
            "importance": a.importance,
            "confidence": a.confidence,
            "source": a.source,
            "context": a.context,
            "ttl": a.ttl,
            "expires_at": time_value(a.expires),
            "tier": a.tier,
            "triggers": split_list(a.triggers),
            "allow_secrets": a.allow_secrets,
        }
    )


def by_id(a: Namespace) -> dict[str, Any]:
    return {"id": a.id}


def p_history(a: Namespace) -> dict[str, Any]:
    return {"id": a.id, **p_page(a)}


def p_page(a: Namespace) -> dict[str, Any]:
    return given({"limit": a.limit, "cursor": a.cursor})


# --- add, search, get, list, update, delete ----------------------------------------------------


def p_add(a: Namespace) -> dict[str, Any]:
    content = stdin_text() if a.text == "-" else a.text
    return {
        "content": content,
        **memory_params(a),
        **given({"namespace": a.namespace, "skip_near_duplicates": a.skip_near_duplicates}),
    }


def s_add(res: dict[str, Any], a: Namespace) -> int:
    if res.get("stored", True) is False:
        print(f"not stored: near duplicate of {res['id']}")
    elif res.get("duplicate"):
        print(f"already stored as {res['id']}")
    else:
        print(f"added {res['id']}")
    for warning in res.get("warnings") or []:
        print(f"warning: {warning}", file=sys.stderr)
    return EXIT_OK


def p_search(a: Namespace) -> dict[str, Any]:
    if a.query == "-":  # as `add -` and `triggers -`: a pasted page, past the shell's limits
        a.query = stdin_text()
    if not a.query and not a.concepts:
        raise UsageError("search needs a QUERY (or --concepts a,b)")
    params = {
        **given({"query": a.query}),
        **filter_params(a),
        **given(
            {
                "limit": a.limit,
                "mode": a.mode,
                "explain": a.explain,
                "concepts": split_list(a.concepts),
                "max_tokens": a.max_tokens,
                "include_constitutional": a.constitutional,
                "group": "none" if a.chunks else None,
                "workspace": "all" if a.all_workspaces else None,
            }
        ),
    }
    if a.no_decay:
        params["use_decay"] = False
    if getattr(a, "paths", False) and not a.kind:
        params["kind"] = "chunk"  # -l lists the notes that match: memories have no path
    return params


def search_found(res: Any) -> bool:
    return bool(isinstance(res, dict) and (res.get("hits") or res.get("index")))


def search_paths(res: Any) -> list[str]:
    """The paths of the notes found (printed by the caller), and on stderr what the answer
    says beside them (what a typo-tolerant search searched for instead, which the header
    says without -l; search_notes: how many more the limit left out, ...)."""
    hits = (res.get("hits") or []) if isinstance(res, dict) else []
    if isinstance(res, dict) and res.get("corrected_query"):
        print(f"searched for: {res['corrected_query']}", file=sys.stderr)
    for note in search_notes(res) + also_notes(res) if isinstance(res, dict) else []:
        print(note, file=sys.stderr)
    return list(dict.fromkeys(h["path"] for h in hits if isinstance(h, dict) and h.get("path")))


def s_search(res: dict[str, Any], a: Namespace) -> int:
    if res.get("mode") == "entity":
        print_entity_hits(res)
        if note := entities_note(res):
            print(note, file=sys.stderr)
        return EXIT_OK
    print_search(res)
    for note in search_notes(res) + also_notes(res):
        print(note, file=sys.stderr)
    return EXIT_OK


def s_get(res: dict[str, Any], a: Namespace) -> int:
    print_record(res)
    return EXIT_OK


def p_list(a: Namespace) -> dict[str, Any]:
    params = {**filter_params(a), "limit": a.limit, "offset": a.offset}
    if a.cursor is not None:
        params["cursor"] = a.cursor
    if getattr(a, "paths", False) and not a.kind:
        params["kind"] = "chunk"  # -l lists the notes' paths: memories have none
    return params


def page_footer(res: dict[str, Any], offset: int, key: str = "items") -> None:
    """`(N shown of M; next page: --cursor C)` on stderr: stdout holds only the rows (of
    `key`). The cursor, not an offset: entries added or deleted meanwhile move every offset (a
    daemon older than cursors gives none: the offset then)."""
    shown = len(res.get(key) or [])
    total = res.get("total", shown)
    following = res.get("next_cursor")
    if "next_cursor" not in res:
        more = f"; next page: --offset {offset + shown}" if offset + shown < total else ""
    else:
        more = f"; next page: {cursor_option(following)}" if following else ""
    print(f"({shown} shown of {total}{more})", file=sys.stderr)


def cursor_option(cursor: object) -> str:
    """`--cursor C` as a command line takes it back (`--cursor=-x.md` for one that starts with
    a dash, which argparse would read as an option)."""
    word = shell_word(str(cursor))
    return f"--cursor={word}" if word.startswith("-") else f"--cursor {word}"


def shell_word(text: str) -> str:
    """`text` as one word of a POSIX shell command line (shlex.quote, without importing it)."""
    safe = text and all(c.isascii() and (c.isalnum() or c in "@%+=:,./-_") for c in text)
    return text if safe else "'" + text.replace("'", "'\"'\"'") + "'"


def also_notes(res: dict[str, Any]) -> list[str]:
    """A search's or list's `means` / `also`: a filter's name written for several entities."""
    out = []
    for name, others in (res.get("also") or {}).items():
        m = (res.get("means") or {}).get(name) or {}
        alt = ", ".join(f"{o.get('name')} ({o.get('type')})" for o in others)
        out.append(
            f"{name!r} means {m.get('name')} ({m.get('type')}); it is also written for {alt}"
            " (a full name asks for one of those)"
        )
    return out


def s_list(res: dict[str, Any], a: Namespace) -> int:
    """One memory (or chunk) a line, columns separated by tabs: id, created, where, text."""
    items = res.get("items") or []
    for rec in items:
        print(
            f"{rec['id']}\t{rec.get('created_at')}\t{location(rec, sep=' ')}\t"
            f"{one_line(rec.get('content'), 100)}"
        )
    if not items:
        print("nothing found", file=sys.stderr)
    for name in res.get("unknown_entities") or []:  # as search says it
        print(f"no entity named {name!r} (memoryctl entities lists them)", file=sys.stderr)
    for note in also_notes(res):  # a name written for several entities: the one it meant
        print(note, file=sys.stderr)
    page_footer(res, a.offset or 0)
    return EXIT_OK


def p_update(a: Namespace) -> dict[str, Any]:
    content = stdin_text() if a.content == "-" else a.content  # out of other users' `ps`
    params = {"id": a.id, **given({"content": content}), **memory_params(a)}
    params |= given({"expected_updated_at": a.if_updated})
    if a.no_expiry:
        params["expires_at"] = None
    return params


def s_update(res: dict[str, Any], a: Namespace) -> int:
    print(f"updated {res['id']}")
    for c in res.get("still_in") or []:  # its log line's rewrite was refused (a full disk)
        name = c.get("name")
        print(f"  its old text is still in daily log {name}: rewritten once its disk has room")
    return EXIT_OK


LISTED_MAX = 20  # ids or paths a deletion by tag, namespace or path prints; --json has all


def r_delete(c: Client, a: Namespace) -> int:
    selectors = given({"tag": a.tag, "namespace": a.namespace, "path": a.path})
    if len(selectors) + bool(a.ids) != 1:
        raise UsageError("delete needs IDs, or exactly one of --tag, --namespace, --path")
    if a.if_sha256 is not None and not a.path:
        raise UsageError(
            "--if-sha256 goes with --path (a note's version, as note read --json shows)"
        )
    if selectors:
        sha = given({"expected_sha256": a.if_sha256})
        res = c.call("delete", {**selectors, **sha, **given({"dry_run": a.dry_run})})
        if a.json:
            return emit_json(res)
        listed = [str(x) for x in res.get("paths") or res.get("ids") or []]
        verb = "would delete" if a.dry_run else "deleted"
        more = len(listed) - LISTED_MAX if len(listed) > LISTED_MAX + 1 else 0
        shown = ", ".join(listed[: len(listed) - more]) or "-"
        tail = f" and {more} more (--json lists them all)" if more else ""
        print(f"{verb} {res['deleted']}: {shown}{tail}")
        if res.get("trash") and res.get("paths") and not a.dry_run:
            print(f"moved to {res['trash']}")
        print_still_in(res.get("still_in") or [], a.dry_run)
        return EXIT_OK
    status, results = EXIT_OK, []
    for entry_id in a.ids:
        try:
            res = c.call("delete", {"id": entry_id, **given({"dry_run": a.dry_run})})
        except ClientError as exc:
            status = max(status, exc.exit_status)
            if a.json:
                error = {"kind": "daemon", "code": exc.code, "message": exc.message}
                results.append({"id": entry_id, "error": error})
            else:
                print(f"memoryctl: {exc.message}", file=sys.stderr)
            continue
        results.append(res)
        if not a.json:
            print(f"{'would delete' if a.dry_run else 'deleted'} {entry_id}")
    if a.json:
        emit_json(results[0] if len(a.ids) == 1 and results else results)
    else:
        print_still_in([c for r in results for c in r.get("still_in") or []], a.dry_run)
    return status


def print_still_in(copies: list[dict[str, Any]], dry_run: bool) -> None:
    """The checkpoints and snapshots that still hold the deleted text, and how to delete them."""
    unique = list({c.get("path") or (c.get("kind"), c.get("name")): c for c in copies}.values())
    if not unique:
        return
    verb = "would still be" if dry_run else "still"
    copies_word = "copy" if len(unique) == 1 else "copies"
    print(f"{verb} in {len(unique)} {copies_word} made since (delete to forget it everywhere):")
    for c in unique:
        kind, name = c.get("kind"), c.get("name")
        if kind == "checkpoint":
            how = f"memoryctl checkpoint delete {name}"
        elif kind == "snapshot":
            how = f"memoryctl checkpoint delete --snapshot {name}"
        elif kind == "daily_log":  # its rewrite was refused (a full disk): done by itself
            print(f"  daily log {name}: the line goes by itself once its disk has room")
            continue
        else:  # a migration backup: a plain file
            how = f"rm {c.get('path')}"
        print(f"  {kind} {name} ({c.get('created_at')}): {how}")


def p_namespace(a: Namespace) -> dict[str, Any]:
    return given({"namespace": a.namespace})


def s_rows(res: dict[str, Any], a: Namespace) -> int:
    print_rows(flatten(res))
    return EXIT_OK


# --- lifecycle: prune, session, triggers, validate, promote, history, used ---------------------


def p_dry_run(a: Namespace) -> dict[str, Any]:
    return given({"dry_run": a.dry_run})


def s_prune(res: dict[str, Any], a: Namespace) -> int:
    verb = "would prune" if a.dry_run else "pruned"
    print(f"{verb} {res['pruned']} memories (expired or deprecated)")
    for item in res.get("items") or []:
        print(f"  #{item['id']} [{item['tier']}] {item['summary']}")
    print_still_in(res.get("still_in") or [], a.dry_run)
    return EXIT_OK


def p_session(a: Namespace) -> dict[str, Any]:
    return given({"max_tokens": a.max_tokens, "namespace": a.namespace})


def s_session(res: dict[str, Any], a: Namespace) -> int:
    for m in res["memories"]:
        print(f"- {one_line(m['content'])}  (#{m['id']})")
    more = f", {res['total'] - len(res['memories'])} more over budget" if res["has_more"] else ""
    print(f"({len(res['memories'])} constitutional memories, {res['tokens_used']} tokens{more})")
    return EXIT_OK


def p_triggers(a: Namespace) -> dict[str, Any]:
    prompt = stdin_text() if a.prompt == "-" else a.prompt
    return given({"prompt": prompt, "namespace": a.namespace})


def s_triggers(res: dict[str, Any], a: Namespace) -> int:
    for m in res["memories"]:
        print(f"#{m['id']} ({', '.join(m['matched'])}): {one_line(m['content'])}")
    if not res["memories"]:
        print("no trigger matched", file=sys.stderr)
    return EXIT_OK


def p_validate(a: Namespace) -> dict[str, Any]:
    return {"id": a.id, "useful": not a.not_useful}


def s_validate(res: dict[str, Any], a: Namespace) -> int:
    print(
        f"#{res['id']}: {res['useful_count']}/{res['validation_count']} useful, "
        f"confidence {res['confidence']}"
    )
    if res.get("promotion_candidate"):
        print(f"promotion candidate: memoryctl promote {res['id']}")
    return EXIT_OK


def s_candidates(res: dict[str, Any], a: Namespace) -> int:
    for m in res["candidates"]:
        print(
            f"#{m['id']} [{m['tier']}] {m['useful_count']}/{m['validation_count']} useful: "
            f"{one_line(m['content'], 80)}"
        )
    if not res["candidates"]:
        print("no promotion candidates", file=sys.stderr)
    if res.get("has_more"):
        page_footer(res, 0, "candidates")
    return EXIT_OK


def p_promote(a: Namespace) -> dict[str, Any]:
    return {"id": a.id, "tier": a.tier}


def s_promote(res: dict[str, Any], a: Namespace) -> int:
    print(f"#{res['id']} is now {res.get('tier', a.tier)}")
    return EXIT_OK


def s_history(res: dict[str, Any], a: Namespace) -> int:
    import json

    for h in res["history"]:
        print(f"{h['at']}  {h['field']}: {json.dumps(h['old'])} -> {json.dumps(h['new'])}")
    if not res["history"]:
        print(f"no changes recorded for #{a.id}", file=sys.stderr)
    if res.get("has_more"):  # a page that is not the last (a whole history says nothing more)
        page_footer(res, 0, "history")
    return EXIT_OK


def s_used(res: Any, a: Namespace) -> int:
    count = res.get("access_count") if isinstance(res, dict) else None
    print(f"recorded a use of #{a.id}" + (f" ({count} in all)" if count is not None else ""))
    return EXIT_OK


def p_recent(a: Namespace) -> dict[str, Any]:
    return given({"limit": a.limit, "since": time_value(a.since), "namespace": a.namespace})


def s_recent(res: dict[str, Any], a: Namespace) -> int:
    """One change a line, tab-separated: when, note|memory, path or #id (and change), text."""
    items = res.get("items") or []
    for item in items:
        when = item.get("at") or item.get("updated_at") or item.get("mtime") or "-"
        if item.get("path") and item.get("kind") != "memory":
            what = f"note\t{item['path']}"
            summary = item.get("title") or item.get("summary") or ""
        else:
            what = f"memory\t#{item.get('id')}"
            if item.get("change"):
                what += f" {item['change']}"
            summary = item.get("summary") or item.get("content") or ""
        print(f"{when}\t{what}\t{one_line(summary, 80)}")
    if not items:
        print("nothing recent", file=sys.stderr)
    elif res.get("has_more"):
        print(f"({len(items)} shown; more: raise -n (to 1000) or narrow --since)", file=sys.stderr)
    return EXIT_OK
