"""How the MCP tools' answers read as compact text (tools.py's table names these): one line a
hit, record or item, times to the minute, the token budget's leftovers by id."""

from __future__ import annotations

import json
from typing import Any

from memoryd.text.clip import clip


def _one_line(text: str, width: int) -> str:
    return clip(" ".join(str(text).split()), width)


def _where(hit: dict[str, Any]) -> str:
    if hit.get("kind") == "chunk" or hit.get("path"):
        heading = " > ".join(hit.get("heading_path") or [])
        loc = f"{hit.get('path')}:{hit.get('start_line')}"
        return f"{loc} {heading}".strip()
    tags = " ".join(f"#{t}" for t in hit.get("tags") or [])
    return f"memory {hit.get('type') or ''} {tags}".strip()


def indexing_said(res: dict[str, Any]) -> str:
    """The first index since the daemon started is still running (`indexing` in the answer)."""
    prog = res.get("indexing")
    if not isinstance(prog, dict):
        return ""
    read = f": {prog.get('done', 0)}/{prog['total']} files read" if prog.get("total") else ""
    return f"the workspace is still being indexed{read}"


def model_said(res: dict[str, Any]) -> str:
    """Why the answer is keyword-only, in all or in part (`model_state`, `pending_vectors`)."""
    state, pending = res.get("model_state"), res.get("pending_vectors")
    if state == "failed":
        return "keyword-only: the embedding model failed to load"
    if state:
        return f"keyword-only: the embedding model is {state}"
    if pending and res.get("mode") == "vector":  # (no keyword answers vector mode)
        return f"{pending} texts not embedded yet: not found until they are"
    if pending:
        return f"{pending} texts not embedded yet: keyword-only for those"
    return ""


def fmt_hits(res: dict[str, Any]) -> str:
    hits = res.get("hits") or []
    head = f"{res.get('total', len(hits))} result(s), {res.get('mode', 'search')}"
    if said := model_said(res):
        head += f" ({said})"
    if indexing := indexing_said(res):
        head += f" ({indexing})"
    if res.get("corrected_query"):  # typo-tolerant: what was searched for instead
        head += f", searched for: {res['corrected_query']}"
    lines = [head + ":"]
    shown = set()
    for h in hits:
        shown.add(h.get("id"))
        score = h.get("score")
        text = h.get("snippet") or h.get("content") or ""
        lines.append(
            f"[{h.get('id')}] {_where(h)} · {score:.2f} — {_one_line(text, 300)}"
            if isinstance(score, int | float)
            else f"[{h.get('id')}] {_where(h)} — {_one_line(text, 300)}"
        )
        for s in h.get("sections") or []:
            lines.append(
                f"    also {' > '.join(s.get('heading_path') or [])} L{s.get('start_line')}"
            )
    rest = [i for i in res.get("index") or [] if i.get("id") not in shown]
    if rest:
        lines.append("Over the token budget (get ID for details):")
        lines += [f"[{i['id']}] {_one_line(i.get('summary', ''), 100)}" for i in rest]
    if not hits and not rest:
        lines = ["No results."]
        if said:  # (keywords alone found nothing: the model could not help this answer)
            lines.append(f"({said})")
        if res.get("suggestion"):
            lines.append(f"Did you mean: {res['suggestion']}?")
        if indexing:
            lines.append(f"({indexing}: notes not read yet are not found)")
    if res.get("unknown_entities"):  # why a filter matched nothing: the agent can ask `entities`
        names = ", ".join(repr(n) for n in res["unknown_entities"])
        lines.append(f"(no entity named {names}: the entities filter matches nothing)")
    means = res.get("means") or {}
    for name, others in (res.get("also") or {}).items():  # a name written for several
        m = means.get(name) or {}
        alt = ", ".join(f"{o['name']} ({o['type']})" for o in others)
        lines.append(
            f"(the entities filter took {name!r} for {m.get('name')} ({m.get('type')});"
            f" it is also written for {alt}: filter by that full name for one of them)"
        )
    if res.get("entities_pending"):  # notes indexed just now, their names not read yet
        lines.append(
            f"({res['entities_pending']} notes indexed just now still wait for their entities:"
            " the entities filter and weight do not see them yet)"
        )
    if res.get("terms_ignored"):
        lines.append(
            f"(keywords matched the query's first 64 words and phrases; "
            f"{res['terms_ignored']} more were left out)"
        )
    if res.get("more"):
        lines.append(f"(at least {res['more']} more result(s): raise limit or narrow the query)")
    return "\n".join(lines)


def fmt_record(rec: dict[str, Any]) -> str:
    if "content" in rec and "path" in rec and "sha256" in rec:  # note.read
        return f"{rec['path']} (sha256 {rec['sha256']}, {rec['size']} bytes)\n\n{rec['content']}"
    if rec.get("kind") == "note":  # get {path, section?}
        head = str(rec.get("path"))
        if rec.get("section"):
            head += f" § {rec['section']}"
        if rec.get("start_line"):
            head += f" (lines {rec['start_line']}-{rec.get('end_line')})"
        return f"{head}\n\n{rec.get('content', '')}"
    meta = {
        k: rec.get(k)
        for k in ("id", "kind", "type", "tier", "tags", "importance", "namespace", "path")
        if rec.get(k) not in (None, [], "")
    }
    meta.update({k: rec[k] for k in ("created_at", "updated_at") if rec.get(k)})
    out = json.dumps(meta, ensure_ascii=False) + "\n\n" + str(rec.get("content", ""))
    for c in rec.get("still_in") or []:  # an update whose log line's rewrite was refused
        out += f"\nwarning: its old text is still in the daily log {c.get('name')} (a full disk)"
    return out


def fmt_added(res: dict[str, Any]) -> str:
    out = f"Remembered as [{res.get('id')}]" if res.get("stored", True) else "Not stored"
    if res.get("duplicate"):
        out = f"Already known as [{res.get('id')}] (duplicate)"
    for w in res.get("warnings") or []:
        out += f"\nwarning: {w}"
    near = res.get("near_duplicates") or []
    if near:
        out += "\nnear duplicates: " + ", ".join(f"[{n['id']}]" for n in near)
    return out


def _when(value: object) -> str:
    """'2026-11-23T19:36:09Z' as '2026-11-23 19:36' (UTC): a third fewer tokens a line, and
    minutes are precise enough for the agent; the structured copy keeps the full time."""
    text = str(value or "")
    if len(text) >= 16 and text[10:11] == "T" and text.endswith("Z"):
        return f"{text[:10]} {text[11:16]}"
    return text


def fmt_items(res: dict[str, Any]) -> str:
    lines = []
    for i in res.get("items") or []:
        if i.get("kind") == "memory":
            lines.append(
                f"{_when(i.get('at'))} memory [{i['id']}] {i.get('change', '')}: {i['summary']}"
            )
        else:
            when = _when(i.get("at") or i.get("mtime"))
            tags = " ".join(f"#{t}" for t in i.get("tags") or [])
            lines.append(f"{when} {i['path']} — {i.get('title', '')} {tags}".rstrip())
    if "total" in res and not lines:  # a sentence, not a heading over nothing
        return "No notes." if not res["total"] else f"{res['total']} note(s), none past offset"
    if "total" in res:
        lines.insert(0, f"{res['total']} note(s), times in UTC:")
    if res.get("has_more"):  # recent_activity: its limit left some out
        lines.append(f"({len(res.get('items') or [])} shown; more: raise limit or narrow since)")
    if res.get("next_cursor"):
        shown = len(res.get("items") or [])
        lines.append(f"({shown} shown; the next page: cursor {json.dumps(res['next_cursor'])})")
    return "\n".join(lines) or "Nothing."


def fmt_memories(res: dict[str, Any]) -> str:
    mems = res.get("memories") or []
    if not mems:
        return "No memories."
    return "\n".join(
        f"[{m['id']}] ({m.get('tier') or m.get('type')}) {_one_line(m['content'], 400)}"
        for m in mems
    )


def fmt_forgot(res: dict[str, Any]) -> str:
    """A delete's answer, with the copies that still hold the text (delete's still_in)."""
    out = f"Forgot [{res.get('id')}]"
    copies = res.get("still_in") or []
    if copies:
        names = ", ".join(f"{c.get('kind')} {c.get('name')}" for c in copies)
        out += (
            f". Its text is still in {len(copies)} older copy(ies) of the store ({names}); "
            "the user can delete them with `memoryctl checkpoint delete NAME` "
            "(`--snapshot` for a snapshot)"
        )
    return out


def fmt_json(res: Any) -> str:
    return json.dumps(res, ensure_ascii=False, separators=(",", ":"))


def fmt_session(res: dict[str, Any]) -> str:
    parts = ["Standing memories:", fmt_memories(res)]
    if res.get("has_more_memories"):
        parts.append("(more constitutional memories than the budget holds; raise max_tokens)")
    if res.get("recent"):
        parts += ["", "Recent activity:", fmt_items({"items": res["recent"]})]
    return "\n".join(parts)


def kept_said(r: dict[str, Any]) -> str:
    """What a note write's answer adds for the agent: the encoding the note was kept in (not
    plain UTF-8), the version it replaced, a warning (other names kept the old text; not
    indexed yet)."""
    out = f"; kept in {r['encoding']}" if r.get("encoding") else ""
    if r.get("replaced_sha256"):
        out += f"; it replaced sha256 {r['replaced_sha256']}"
    return out + (f". {r['warning']}" if r.get("warning") else "")
