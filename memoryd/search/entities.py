"""Entity answers: `search` with kind "entity", the entity page (`entity NAME`), the listing
(`entities`) and the graph walk (`related NAME --depth N`). The SQL is store/entityread.py; this
module shapes it: budgets, the mentioning lines, dates in ISO 8601.

A name means one entity on every door (store/entityread.by_name): the one whose canonical key
it is, else the most mentioned one it is a surface form of ("Caro" for [[Caroline Baker|Caro]],
"Melanie's" for Melanie); the others it is written for are named under `also` (the page,
`related`, and search's and list's answers when their `entities` filter used the name).
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from memoryd.core import pagecursor
from memoryd.core.errors import InvalidInput, NotFound, check_int, describe
from memoryd.core.timeutil import iso
from memoryd.search.fuzzy import damerau
from memoryd.store import Store, entityread
from memoryd.store.entityread import EntityRow
from memoryd.text import entity_cues as cues
from memoryd.text.entities import canonical_key
from memoryd.text.markdown import aliases_lines, atx_heading, estimate_tokens, nfc

# the types memoryd.text.entities gives
TYPES = ("person", "system", "place", "identifier", "tag", "other")
PAGE_TOKENS = 1000  # an entity page's default budget
SOURCE_PAGE = 25  # sources whose text is read at once
MAX_TOP = 1000
MAX_DEPTH = 3
# The most entities one `related` answer holds (the root included): the walk grows as top^depth
# (top 100 at depth 3 reached 8,737 entities and 73,208 edges, 4.7 MB, at 100K chunks), and an
# agent reads the answer whole. The web page's graph holds as many notes (GRAPH_MAX_NODES).
RELATED_MAX_NODES = 500
# An entity page reads the entity's newest mentions, at most this many (newest first, off an
# index): its sources and aliases come from them; first and last seen and the relations from
# every mention.
WINDOW = 500
ALIASES = 20
MAX_NAME = 500  # characters of a name asked about (`entity`, `related`, `search --kind entity`)


def check_name(name: Any) -> str:
    if not isinstance(name, str):
        raise InvalidInput(f"name: expected a string, got {describe(name)} (an entity's name)")
    if not name.strip():
        raise InvalidInput("name: must not be empty")
    if len(name) > MAX_NAME:
        raise InvalidInput(f"name: at most {MAX_NAME} characters")
    return name.strip()


def check_types(types: Any) -> tuple[str, ...]:
    if types is None:
        return ()
    items = types.split(",") if isinstance(types, str) else types
    if not isinstance(items, list | tuple) or not all(isinstance(t, str) for t in items):
        raise InvalidInput("type: expected a type or a list of types")
    out = tuple(t.strip().lower() for t in items if t.strip())
    bad = [t for t in out if t not in TYPES]
    if bad:
        raise InvalidInput(f"type: expected one of {', '.join(TYPES)}, got {describe(bad[0])}")
    return out


_brief = entityread.brief


def _date(ts: Any) -> str | None:
    return iso(float(ts)) if ts is not None else None


def _matching(con: Any, text: str, limit: int, types: Sequence[str] = ()) -> list[Any]:
    """entityread.matching; when the whole text matches nothing, its words do, each a step
    lower ("the Obsidian app", "Caroline and Melanie": Obsidian; Caroline, Melanie), the
    words that are never names left out."""
    found = entityread.matching(con, text, limit, types)
    words = text.split()
    if found or len(words) < 2:
        return list(found)
    best: dict[int, tuple[EntityRow, int]] = {}
    keys = [
        k for k in dict.fromkeys(map(canonical_key, words)) if len(k) > 1 and k not in cues.STOP
    ]
    for word in keys[:8]:  # a name, not a text: its first few words
        for row, rank in entityread.matching(con, word, limit, types):
            step = min(rank + 1, 4)
            if row.id not in best or step < best[row.id][1]:
                best[row.id] = (row, step)
    return sorted(best.values(), key=lambda h: (h[1], -h[0].mentions, h[0].id))[:limit]


def find(store: Store, query: str, limit: int, types: Sequence[str] = ()) -> dict[str, Any]:
    """`search` with kind "entity": entities whose name or a surface form matches the query,
    the exact name first, then a surface form, a name that starts with it, a word of a name
    that does, a name that holds it; each group most mentioned first. Score 1.0 .. 0.2; when
    none matches, the names it is a misspelling of (_misspelt), 0.1. The
    query is a name, held to a name's limit (`entity`, `related`): a longer one was a LIKE
    pattern SQLite refuses, answered as an internal error."""
    if len(query) > MAX_NAME:
        raise InvalidInput(f'query: at most {MAX_NAME} characters with kind "entity" (a name)')
    found = store.read(lambda con: _matching(con, query, limit, types))
    hits = [
        {**_brief(row), "kind": "entity", "key": row.key, "score": round(1.0 - 0.2 * rank, 2)}
        for row, rank in found
    ]
    if not hits:  # a misspelt name: the names `entity` suggests for it, scored lowest
        near = [r for r in _misspelt(store, query) if not types or r.type in types]
        hits = [
            {**_brief(row), "kind": "entity", "key": row.key, "score": 0.1} for row in near[:limit]
        ]
    return {"hits": hits, "mode": "entity", "total": len(hits)}


def check_type(type_: Any) -> str | None:
    """One entity type, or None (`entity` and `related` pick by it)."""
    if type_ is None:
        return None
    if not isinstance(type_, str) or type_.strip().lower() not in TYPES:
        raise InvalidInput(f"type: expected one of {', '.join(TYPES)}, got {describe(type_)}")
    return type_.strip().lower()


def _resolve(store: Store, name: str, type_: str | None = None) -> list[EntityRow]:
    """The entities `name` means (entityread.by_name: its key, a surface form of theirs, or the
    one entity it means said alone), those of `type_` first when given (Jordan the person
    before Jordan the place); else NotFound naming the nearest names (`suggestions`)."""
    rows = store.read(lambda con: entityread.by_name(con, name))
    if rows and type_ is not None:
        picked = [r for r in rows if r.type == type_]
        if not picked:
            brief = [_brief(r) for r in rows[:5]]
            names = ", ".join(f"{b['name']} ({b['type']})" for b in brief)
            raise NotFound(
                f"no {type_} named {describe(name)}; the name is written for {names}",
                data={"suggestions": brief},
            )
        return picked + [r for r in rows if r.type != type_]
    if rows:
        return rows
    near = [row for row, _ in store.read(lambda con: _matching(con, name, 5))]
    brief = [_brief(row) for row in near or _misspelt(store, name)]
    hint = ", ".join(f"{b['name']} ({b['type']})" for b in brief)
    raise NotFound(
        f"no entity named {describe(name)}"
        + (f"; did you mean {hint}?" if hint else " (memoryctl entities lists them)"),
        data={"suggestions": brief},
    )


SPELLINGS = 5000  # the most mentioned names of the first letter a misspelt name is compared with


def _misspelt(store: Store, name: str) -> list[EntityRow]:
    """The names `name` is a misspelling of ("Caroln": Caroline Baker; "kestral": Kestrel): a
    name, or a word of it, one edit away (two from six letters on: search.fuzzy's rule), among
    the most mentioned names of its first letter; the nearest first, then the most mentioned."""
    key = canonical_key(name)
    if not key or len(key) < 3:
        return []
    limit = 1 if len(key) < 6 else 2
    rows = store.read(lambda con: entityread.starting(con, key[0], SPELLINGS))
    near: list[tuple[int, EntityRow]] = []
    for row in rows:
        words = [row.key, *row.key.split()] if " " not in key else [row.key]
        d = min(damerau(key, w.lstrip("#@"), limit) for w in words)
        if d <= limit:
            near.append((d, row))
    near.sort(key=lambda h: (h[0], -h[1].mentions, h[1].key))
    return [row for _, row in near[:5]]


def _line(
    content: str, start: int, pairs: Sequence[tuple[int, str]], memory: bool
) -> tuple[int, str]:
    """The mentioning line as written, and its number, for an entry's mentions `pairs` (line,
    surface form): the first mention whose line holds its form, a line of text before a heading;
    else the first line of the text that holds one of the forms (the mention may stand in front
    matter, above the chunk's text: `people: [Caroline]`, with "Caroline said" further down),
    then the aliases line the indexer put above a note's first chunk, which stands on no line of
    the file (the front-matter line is given). A form no line holds (a memory's tag; a
    front-matter value the text never writes) gives a memory's first line, a note's front-matter
    line the form itself."""
    content = nfc(content)  # the forms are NFC (text/entities.py); a note may be written NFD
    lines = content.split("\n")
    pad = 0 if memory else aliases_lines(content, start)
    ordered = sorted(pairs)
    heading: tuple[int, str] | None = None
    for line, surface in ordered:
        at = line - start + pad
        if pad <= at < len(lines) and surface.lower() in lines[at].lower():
            text = lines[at].strip()[:300]
            if atx_heading(text) is None:  # "#kestrel shipped" is a tag, not a heading
                return line, text
            heading = heading or (line, text)
    if heading is not None:
        return heading
    forms = {s.lower().lstrip("#@") for _, s in ordered} - {""}
    body = range(pad, len(lines))
    held = [i for i in body if any(f in lines[i].lower() for f in forms)]
    for i in sorted(held, key=lambda i: atx_heading(lines[i].lstrip()) is not None):
        return start + i - pad, lines[i].strip()[:300]
    first_line, first_form = ordered[0] if ordered else (start, "")
    for i in range(pad):
        if any(f in lines[i].lower() for f in forms):
            return first_line, lines[i].strip()[:300]
    if memory:
        first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
        if first is not None:
            return start + first, lines[first].strip()[:300]
    return first_line, first_form


def _ranked(newest: list[tuple[Any, ...]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The mentions read (entityread.newest) as sources: one per note (its chunks' mentions
    summed; the mentions of its most mentioning chunk) and per memory,
    those that mention it most first, then the newest; and the surface forms, most written
    first. Lists, not dicts, until the end: a common name has a thousand mentions to group."""
    forms = Counter(r[5] for r in newest)
    per: dict[int, list[Any]] = {}
    for entry_id, kind, path, at, line, surface in newest:
        cur = per.get(entry_id)
        if cur is None:
            per[entry_id] = [1, [(int(line), str(surface))], at, kind, path]
        else:
            cur[0] += 1
            cur[1].append((int(line), str(surface)))
    # [total, newest date, id, count, mentions (line, surface), kind, path] per note path or
    # memory id
    by: dict[Any, list[Any]] = {}
    for entry_id, (n, pairs, at, kind, path) in per.items():
        k = ("note", path) if kind == "chunk" else ("memory", entry_id)
        cur = by.get(k)
        if cur is None:
            by[k] = [n, at, entry_id, n, pairs, kind, path]
        else:
            cur[0] += n
            if at > cur[1]:
                cur[1] = at
            if n > cur[3]:
                cur[2:5] = [entry_id, n, pairs]
    order = sorted(by.values(), key=lambda v: (-v[0], -float(v[1]), v[2]))
    keys = ("total", "created_at", "id", "count", "pairs", "kind", "path")
    aliases = sorted(forms, key=lambda f: (-forms[f], f))[:ALIASES]
    return [dict(zip(keys, v, strict=True)) for v in order], aliases


def _source(e: dict[str, Any], text: tuple[str, int, str | None] | None) -> dict[str, Any]:
    content, start, heading_json = text or ("", 1, None)
    item: dict[str, Any] = {"kind": "note" if e["kind"] == "chunk" else "memory"}
    if e["kind"] == "chunk":
        item["path"] = e["path"]
        heading = json.loads(heading_json or "[]")
        if heading:
            item["heading"] = " > ".join(heading)
    line, shown = _line(content, start, e["pairs"], e["kind"] != "chunk")
    item.update(
        {
            "id": int(e["id"]),
            "line": line,
            "text": shown,
            "mentions": int(e["total"]),
            "date": _date(e["created_at"]),
        }
    )
    return item


def page(
    store: Store,
    name: str,
    *,
    max_tokens: int = PAGE_TOKENS,
    relations: int = 10,
    type_: str | None = None,
) -> dict[str, Any]:
    """What the index knows about `name`: type, aliases, first and last seen, the notes and
    memories that mention it most (each with its mentioning line) and its strongest relations,
    within `max_tokens`: the weakest relations go first when the page without sources is over
    it (`relations_cut`), then the sources are cut (`has_more`); the name's own fields and its
    first source always come."""
    name = check_name(name)
    check_int(max_tokens, "max_tokens", 50)
    check_int(relations, "relations", 0, 100)
    rows = _resolve(store, name, check_type(type_))
    main = rows[0]

    def read(con: Any) -> tuple[Any, ...]:
        rel = entityread.related(con, [main.id], relations)
        dates = [
            entityread.together(
                con, *((r.id, main.id) if r.mentions < main.mentions else (main.id, r.id))
            )
            for r, _ in rel
        ]
        newest = entityread.newest(con, main.id, WINDOW)
        return rel, dates, newest, entityread.seen(con, main.id)

    rel, dates, newest, (first, last) = store.read(read)
    ranked, forms = _ranked(newest)
    out: dict[str, Any] = {
        "name": main.name,
        "key": main.key,
        "type": main.type,
        "aliases": [a for a in forms if a != main.name],
        # the stored count, as `entities`, `related` and kind "entity" give it (on a shared
        # PostgreSQL store, every workspace's)
        "mentions": main.mentions,
        "first_seen": _date(first),
        "last_seen": _date(last),
        "relations": [
            {
                **_brief(r),
                "together": n,
                "first": _date(d[0]),
                "last": _date(d[1]),
            }
            for (r, n), d in zip(rel, dates, strict=True)
        ],
    }
    if len(rows) > 1:
        out["also"] = [_brief(r) for r in rows[1 : 1 + entityread.ALSO]]

    # texts are read a page at a time, only for the sources that can still fit; the first
    # source always comes, so the relations make room for it
    def texts(part: list[dict[str, Any]]) -> dict[int, Any]:
        wanted = [int(e["id"]) for e in part]
        return store.read(functools.partial(entityread.texts, entry_ids=wanted))

    found = texts(ranked[:SOURCE_PAGE])
    first = _source(ranked[0], found.get(int(ranked[0]["id"]))) if ranked else None
    reserved = estimate_tokens(json.dumps(first, ensure_ascii=False)) if first else 0
    used = estimate_tokens(json.dumps(out, ensure_ascii=False))
    while used + reserved > max_tokens and out["relations"]:  # the weakest relations go first
        out["relations"].pop()
        out["relations_cut"] = True
        used = estimate_tokens(json.dumps(out, ensure_ascii=False))
    kept: list[dict[str, Any]] = []
    for at in range(0, len(ranked), SOURCE_PAGE):
        part = ranked[at : at + SOURCE_PAGE]
        found = found if at == 0 else texts(part)
        for e in part:
            item = _source(e, found.get(int(e["id"])))
            cost = estimate_tokens(json.dumps(item, ensure_ascii=False))
            if kept and used + cost > max_tokens:
                break
            kept.append(item)
            used += cost
        else:
            continue
        break
    out["sources"] = kept
    out["total_sources"] = len(ranked)
    out["has_more"] = len(kept) < len(ranked) or len(newest) >= WINDOW
    out["tokens_used"] = used
    return out


def listing(
    store: Store,
    *,
    types: Sequence[str] = (),
    since: float | None = None,
    top: int = 50,
    cursor: object = None,
) -> dict[str, Any]:
    """The most mentioned entities (`entities [--type] [--since] [--top N] [--cursor C]`), ties
    by key, `top` a page; `has_more`: more match than this page holds (read one more to know),
    and `next_cursor` (the page's last entity: core/pagecursor.py), passed back as `cursor`,
    gives the next page, which starts after that entity."""
    check_int(top, "top", 1, MAX_TOP)
    after = pagecursor.read_entity_cursor(cursor)
    rows = store.read(lambda con: entityread.top(con, top + 1, types, since, after))
    kept = [_brief(r) for r in rows[:top]]
    following = (
        pagecursor.entity_cursor(rows[top - 1].mentions, rows[top - 1].key)
        if len(rows) > top
        else None
    )
    return {
        "entities": kept,
        "count": len(kept),
        "has_more": len(rows) > top,
        "next_cursor": following,
    }


def related(
    store: Store,
    name: str,
    *,
    depth: int = 1,
    top: int = 10,
    type_: str | None = None,
    max_tokens: int | None = None,
    cursor: object = None,
) -> dict[str, Any]:
    """The graph around `name`, breadth first: its `top` strongest relations, theirs at depth 2,
    and so on; each entity once, at its first depth, at most RELATED_MAX_NODES of them a page
    (a walk that reaches more stops there: the rest come on the next pages). Edges carry the
    co-mention counts. `max_tokens`: a page of the walk that fits (_fit), the nearest and
    strongest first; `has_more` and `next_cursor` when more remain (or the page was full):
    passed back as `cursor` (with the same name, depth and top), the walk is done again and the
    next page holds the entities it reaches that no earlier page gave (none repeats, none still
    reached is skipped, though notes change between pages), with the edges from them to the
    entities given so far."""
    name = check_name(name)
    check_int(depth, "depth", 1, MAX_DEPTH)
    check_int(top, "top", 1, 100)
    if max_tokens is not None:
        check_int(max_tokens, "max_tokens", 50)
    rows = _resolve(store, name, check_type(type_))
    root = rows[0]
    after = pagecursor.read_related_cursor(cursor)
    if after is not None and after[:3] != (root.id, depth, top):
        raise InvalidInput(
            "cursor: from another walk (pass it back with the same name, depth and top; from"
            " another store, start again without it)"
        )
    given = after[3] if after is not None else frozenset()

    full = False  # the walk reached more entities than a page holds: the rest are a cursor away

    def walk(con: Any) -> tuple[list[tuple[int, dict[str, Any]]], list[dict[str, Any]]]:
        nonlocal full
        nodes = [(root.id, {**_brief(root), "depth": 0})]
        edges: list[dict[str, Any]] = []
        seen = {root.id: root}
        fresh = int(root.id not in given)
        frontier = [root]
        waiting: list[EntityRow] = []  # reached, not walked from: the page was full first
        for level in range(1, depth + 1):
            nxt: list[EntityRow] = []
            for i, node in enumerate(frontier):
                if full:
                    waiting += frontier[i:]
                    break
                for other, n in entityread.related(con, [node.id], top):
                    if other.id not in seen:
                        if fresh >= RELATED_MAX_NODES:
                            full = True
                            continue
                        fresh += other.id not in given
                        seen[other.id] = other
                        nxt.append(other)
                        nodes.append((other.id, {**_brief(other), "depth": level}))
                    edges.append({"from": node.id, "to": other.id, "together": n})
            if full and level < depth:
                waiting += nxt  # (entities at the last depth are never walked from)
                break
            frontier = nxt
        # the edges of the entities the whole walk would walk from, and this one did not, to
        # those it reached: the page of each one's other end holds them, so an edge between two
        # entities of earlier pages is never left for a page that holds neither end
        for node in waiting:
            for other, n in entityread.related(con, [node.id], top):
                if other.id in seen:
                    edges.append({"from": node.id, "to": other.id, "together": n})
        return nodes, edges

    nodes, edges = store.read(walk)
    names = {i: n["name"] for i, n in nodes}
    # an edge between two entities found from both ends is listed once
    unique: dict[frozenset[int], dict[str, Any]] = {}
    for e in edges:
        unique.setdefault(frozenset((e["from"], e["to"])), e)
    fresh = [(i, n) for i, n in nodes if i not in given]
    out: dict[str, Any] = {"name": root.name, "depth": depth}
    if len(rows) > 1 and not given:  # on the first page (the others' budget is the walk's)
        out["also"] = [_brief(r) for r in rows[1 : 1 + entityread.ALSO]]

    def cut(k: int) -> dict[str, Any]:
        kept = {i for i, _ in fresh[:k]}
        known = kept | given
        inside = [
            {"from": names[a], "to": names[b], "together": e["together"]}
            for e in unique.values()
            for a, b in [(e["from"], e["to"])]
            if (a in kept or b in kept) and a in known and b in known
        ]
        part = {**out, "nodes": [n for _, n in fresh[:k]], "edges": inside}
        if k < len(fresh) or full:  # counted in the budget: 500 ids take ~700 characters
            part["has_more"] = True
            part["next_cursor"] = pagecursor.related_cursor(root.id, depth, top, known)
        return part

    k = len(fresh) if max_tokens is None else _fit(cut, len(fresh), max_tokens)
    page_ = cut(k)
    if max_tokens is not None:
        page_["tokens_used"] = _cost(page_)
    return page_


def _cost(part: dict[str, Any]) -> int:
    return estimate_tokens(json.dumps(part, ensure_ascii=False))


def _fit(cut: Any, total: int, max_tokens: int) -> int:
    """How many of the walk's next entities (in the order they were reached: the nearest and
    strongest first) fit `max_tokens` with the edges they bring (cut(k): the page of the
    first k); at least one (the root's own on a first page), so that paging always moves on."""
    lo, hi = min(1, total), total
    if _cost(cut(hi)) > max_tokens:
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if _cost(cut(mid)) <= max_tokens:
                lo = mid
            else:
                hi = mid - 1
    return hi
