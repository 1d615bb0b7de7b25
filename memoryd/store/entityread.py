"""Reading entities (the rows store/entities.py keeps): by name, by match, by count, their
mentioning entries and their relations. Pure SQL with parameters; search/entities.py shapes the
answers.

Every query reaches the entries through `entries` (on PostgreSQL the view of this daemon's
workspace and the shared memories), so a daemon never lists a name only another workspace's
notes mention. The stored counts (`entities.mentions`, `relations.count`) cover the whole
database: on SQLite that is the same; on PostgreSQL they count every workspace's notes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from memoryd.store.dialect import is_postgres
from memoryd.store.entityfilter import (
    FORMS_SQL,
    RESOLVE_SQL,
    name_key,
    resolve_params,
    said_alone,
    written_key,
)
from memoryd.store.entries import Filters
from memoryd.store.protocol import Connection


@dataclass(frozen=True)
class EntityRow:
    id: int
    key: str
    name: str
    type: str
    mentions: int


_COLS = "n.id, n.key, n.name, n.type, n.mentions"


def _visible(con: Connection, alias: str = "n", column: str = "id") -> str:
    """SQLite: every entity row has a mention (triggers); PostgreSQL: one this daemon sees."""
    if not is_postgres(con):
        return "1 = 1"
    return (
        f"EXISTS (SELECT 1 FROM mentions vm JOIN entries vx ON vx.id = vm.entry_id"
        f" WHERE vm.entity_id = {alias}.{column})"
    )


def _rows(con: Connection, sql: str, params: Sequence[Any]) -> list[EntityRow]:
    return [
        EntityRow(int(i), str(k), str(n), str(t), int(c))
        for i, k, n, t, c in con.execute(sql, params).fetchall()
    ]


def by_name(con: Connection, name: str) -> list[EntityRow]:
    """The entities a name is written for, the one it means first: on every door (the page,
    `related`, the `entities` filter of search and list, the web graph, MCP) a name means one
    entity, the one whose canonical key it is, else the most mentioned one it is a surface form
    of (an alias, a possessive, another case), else the one it means said alone (a first name,
    a tag without its "#"), else the one it is written as (a URL's host, a `[[link|alias]]`'s
    target: entityfilter.written_key). The others are the answers' `also` (at most ALSO): each
    is asked for by its own key (its full name) or, on the page and `related`, by `type`."""
    rows = _by_key(con, name_key(name))
    written = written_key(name) if not rows else ""
    return _by_key(con, written) if written else rows


ALSO = 5  # the other entities of a name an answer names


def brief(row: EntityRow) -> dict[str, Any]:
    return {"name": row.name, "type": row.type, "mentions": row.mentions}


def resolve_filter(
    con: Connection, names: Sequence[str]
) -> tuple[tuple[tuple[int, ...], ...], int]:
    """The entity each name means (by_name's first: a group of one id; an empty group: nothing
    can match) and the least mentioned one's mentions (an upper bound of the entries the filter
    passes): once a search."""
    f = resolved(con, Filters(entities=tuple(names)))
    return f.entity_ids or (), int(f.entity_mentions or 0)


def resolved(con: Connection, f: Filters) -> Filters:
    """`f` with its `entities` names resolved as every door resolves them (by_name): the one
    entity each means (`entity_ids`), the least mentioned one's mentions, and per name the
    others it is written for (`entity_also`, for the answer's `also`). Read once a search or
    a list."""
    if not f.entities or f.entity_ids is not None:
        return f
    groups: list[tuple[int, ...]] = []
    also: list[tuple[tuple[str, str, int], ...]] = []
    counts: list[int] = []  # the stored counts (every workspace's): the bound the pools plan by
    for name in f.entities:
        rows = by_name(con, name)
        groups.append((rows[0].id,) if rows else ())
        counts.append(rows[0].mentions if rows else 0)
        # the one it means, then the others (none when it is written for one alone)
        several = rows[: 1 + ALSO] if len(rows) > 1 else []
        also.append(tuple((r.name, r.type, r.mentions) for r in several))
    return replace(
        f, entity_ids=tuple(groups), entity_mentions=min(counts), entity_also=tuple(also)
    )


def filter_answer(f: Filters) -> dict[str, Any]:
    """A resolved filter's part of a search's or list's answer (one wording on both):
    `unknown_entities`, the names no entity has (nothing can match), and for the names written
    for more than one entity `means` {name: the one it means} and `also` {name: the others}
    (name, type, mentions), as the entity page names them. Pure."""
    out: dict[str, Any] = {}
    unknown = [n for n, ids in zip(f.entities, f.entity_ids or (), strict=False) if not ids]
    if unknown:
        out["unknown_entities"] = unknown
    rows = [(n, r) for n, r in zip(f.entities, f.entity_also, strict=False) if r]
    if rows:
        brief = [[{"name": n, "type": t, "mentions": c} for n, t, c in r] for _, r in rows]
        out["means"] = {name: b[0] for (name, _), b in zip(rows, brief, strict=True)}
        out["also"] = {name: b[1:] for (name, _), b in zip(rows, brief, strict=True)}
    return out


def _by_key(con: Connection, key: str) -> list[EntityRow]:
    if not key:
        return []
    rows = _rows(
        con,
        f"SELECT {_COLS} FROM entities n WHERE n.id IN ({RESOLVE_SQL}) AND {_visible(con)}"
        " ORDER BY n.key = ? DESC, n.mentions DESC, n.id",
        [*resolve_params(key), key],
    )
    if rows:
        # the tag of the same text, or the name of the tag's: Caroline and #caroline are two
        twin = key[1:] if key.startswith("#") else "#" + key
        if twin and all(r.key != twin for r in rows):
            rows += _rows(
                con, f"SELECT {_COLS} FROM entities n WHERE n.key = ? AND {_visible(con)}", [twin]
            )
        return rows
    alone = said_alone(con, key)  # "José" for the one José, "db" for #db
    if not alone:
        return []
    return _rows(con, f"SELECT {_COLS} FROM entities n WHERE n.id = ? AND {_visible(con)}", alone)


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def matching(con: Connection, text: str, limit: int, types: Sequence[str] = ()) -> list[Any]:
    """Entities whose key or a surface form matches `text`: (row, rank) with rank 0 for the
    key itself, 1 a surface form, 2 a key starting with it, 3 a word of the key starting with it,
    4 the text inside the key; best rank, then most mentioned, first."""
    key = name_key(text)
    if not key:
        return []
    found = _matching_key(con, key, limit, types)
    written = written_key(text) if not found else ""
    return _matching_key(con, written, limit, types) if written else found


def _matching_key(con: Connection, key: str, limit: int, types: Sequence[str]) -> list[Any]:
    like = _like(key)
    type_sql = f" AND n.type IN ({','.join('?' * len(types))})" if types else ""
    sql = (
        f"SELECT {_COLS}, min(r) AS rank FROM ("
        " SELECT id, 0 AS r FROM entities WHERE key = ?"
        f" UNION ALL SELECT id, 1 FROM ({FORMS_SQL}) AS fs"
        " UNION ALL SELECT id, 2 FROM entities WHERE key LIKE ? ESCAPE '\\'"
        " UNION ALL SELECT id, 3 FROM entities WHERE key LIKE ? ESCAPE '\\'"
        " UNION ALL SELECT id, 4 FROM entities WHERE key LIKE ? ESCAPE '\\'"
        f") AS hit JOIN entities n ON n.id = hit.id WHERE {_visible(con)}{type_sql}"
        " GROUP BY n.id, n.key, n.name, n.type, n.mentions"
        " ORDER BY rank, n.mentions DESC, n.id LIMIT ?"
    )
    params = [key, key, key, like + "%", "% " + like + "%", "%" + like + "%", *types, limit]
    return [
        (EntityRow(int(i), str(k), str(n), str(t), int(c)), int(r))
        for i, k, n, t, c, r in con.execute(sql, params).fetchall()
    ]


def starting(con: Connection, first: str, limit: int) -> list[EntityRow]:
    """The most mentioned entities whose key starts with the character `first` (a range of the
    key's index): the names a misspelt one is compared with (search/entities.py)."""
    return _rows(
        con,
        f"SELECT {_COLS} FROM entities n WHERE n.key >= ? AND n.key < ? AND {_visible(con)}"
        " ORDER BY n.mentions DESC, n.key LIMIT ?",
        [first, chr(ord(first) + 1), limit],
    )


def top(
    con: Connection,
    limit: int,
    types: Sequence[str] = (),
    since: float | None = None,
    after: tuple[int, str] | None = None,
) -> list[EntityRow]:
    """The most mentioned entities (of these types; mentioned by an entry dated `since` or
    later), most mentioned first, ties by key; `after` (mentions, key): those that come after
    that entity in this order (a page cursor's, store/pages.py)."""
    where = [_visible(con)]
    params: list[Any] = []
    if after is not None:
        where.append("(n.mentions < ? OR (n.mentions = ? AND n.key > ?))")
        params.extend([after[0], after[0], after[1]])
    if types:
        where.append(f"n.type IN ({','.join('?' * len(types))})")
        params.extend(types)
    if since is not None:
        where.append(
            "EXISTS (SELECT 1 FROM mentions sm JOIN entries sx ON sx.id = sm.entry_id"
            " WHERE sm.entity_id = n.id AND sx.created_at >= ?)"
        )
        params.append(since)
    return _rows(
        con,
        f"SELECT {_COLS} FROM entities n WHERE {' AND '.join(where)}"
        " ORDER BY n.mentions DESC, n.key LIMIT ?",
        [*params, limit],
    )


def _in(ids: Sequence[int]) -> str:
    return ",".join("?" * len(ids))


def newest(con: Connection, entity_id: int, window: int) -> list[tuple[Any, ...]]:
    """The entity's newest `window` mentions this daemon sees, newest first: (entry id, kind,
    path, date, line, surface). Read off the mentions' key (entity, date, entry, ...): the cost
    is the window's, not the entity's mention count. The chunks of a note share its date: the
    order goes on by entry, line and surface (SQLite's key, backwards), so which chunk's line a
    source shows, and which mentions a full window holds, are the same on both backends."""
    return [
        tuple(r)
        for r in con.execute(
            "SELECT m.entry_id, x.kind, d.path, m.created_at, m.line, m.surface"
            " FROM mentions m JOIN entries x ON x.id = m.entry_id"
            " LEFT JOIN documents d ON d.id = x.document_id"
            " WHERE m.entity_id = ?"
            " ORDER BY m.created_at DESC, m.entry_id DESC, m.line DESC, m.surface DESC LIMIT ?",
            (entity_id, window),
        ).fetchall()
    ]


def seen(con: Connection, entity_id: int) -> tuple[Any, Any]:
    """(first, last): the dates of the oldest and newest entry this daemon sees that mentions
    the entity; two reads at the ends of its part of the mentions' key."""
    sql = (
        "SELECT m.created_at FROM mentions m JOIN entries x ON x.id = m.entry_id"
        " WHERE m.entity_id = ? ORDER BY m.created_at {} LIMIT 1"
    )
    first = con.execute(sql.format("ASC"), (entity_id,)).fetchall()
    last = con.execute(sql.format("DESC"), (entity_id,)).fetchall()
    return (first[0][0] if first else None), (last[0][0] if last else None)


def texts(con: Connection, entry_ids: Sequence[int]) -> dict[int, tuple[str, int, str | None]]:
    """{id: (content, start line, heading path JSON)} of these entries."""
    if not entry_ids:
        return {}
    return {
        int(i): (str(c), int(s or 1), h)
        for i, c, s, h in con.execute(
            f"SELECT id, content, start_line, heading_path FROM entries WHERE id IN"
            f" ({_in(entry_ids)})",
            list(entry_ids),
        ).fetchall()
    }


def related(con: Connection, ids: Sequence[int], limit: int) -> list[tuple[EntityRow, int]]:
    """The entities most often mentioned in the same entry as one of `ids`, with the number of
    entries that mention both. For one entity (the page, the graph walk) the strongest of each
    end of the pairs come off the indexes by count (relations_a_count, relations_b_count), with
    every tie at the cut."""
    if len(ids) == 1:
        return _related_one(con, ids[0], limit)
    marks = _in(ids)
    sql = (
        f"SELECT {_COLS}, r.n FROM ("
        f" SELECT CASE WHEN a IN ({marks}) THEN b ELSE a END AS other, sum(count) AS n"
        f" FROM relations WHERE a IN ({marks}) OR b IN ({marks}) GROUP BY 1) AS r"
        f" JOIN entities n ON n.id = r.other WHERE n.id NOT IN ({marks}) AND {_visible(con)}"
        " ORDER BY r.n DESC, n.mentions DESC, n.key LIMIT ?"
    )
    rows = con.execute(sql, [*ids, *ids, *ids, *ids, limit]).fetchall()
    return [
        (EntityRow(int(i), str(k), str(n), str(t), int(c)), int(cnt)) for i, k, n, t, c, cnt in rows
    ]


def _related_one(con: Connection, entity_id: int, limit: int) -> list[tuple[EntityRow, int]]:
    # Each end of the pairs gives every relation at least as strong as its limit-th strongest
    # (off relations_a_count / relations_b_count): the ties at the cut are all in, so the order
    # below (count, then mentions, then key) picks among them the same on both backends.
    side = (
        "SELECT {other} AS other, count AS n FROM relations rl WHERE {this} = ? AND {visible}"
        " AND count >= coalesce((SELECT count FROM relations rl WHERE {this} = ? AND {visible}"
        " ORDER BY count DESC LIMIT 1 OFFSET ?), 0)"
    )
    a_side = side.format(other="b", this="a", visible=_visible(con, "rl", "b"))
    b_side = side.format(other="a", this="b", visible=_visible(con, "rl", "a"))
    sql = (
        f"SELECT {_COLS}, r.n FROM ({a_side} UNION ALL {b_side}) AS r"
        " JOIN entities n ON n.id = r.other"
        " ORDER BY r.n DESC, n.mentions DESC, n.key LIMIT ?"
    )
    cut = max(limit - 1, 0)
    params = [entity_id, entity_id, cut] * 2 + [limit]
    rows = con.execute(sql, params).fetchall()
    return [
        (EntityRow(int(i), str(k), str(n), str(t), int(c)), int(cnt)) for i, k, n, t, c, cnt in rows
    ]


def together(con: Connection, first: int, second: int) -> tuple[Any, Any]:
    """(first, last) date of an entry this daemon sees that mentions both entities: the
    mentions of `first` (give the one with fewer mentions) are walked from each end of their
    dates until one whose entry also mentions `second` (a look-up in the mentions' key)."""
    sql = (
        "SELECT m1.created_at FROM mentions m1 JOIN entries x ON x.id = m1.entry_id"
        " WHERE m1.entity_id = ? AND EXISTS (SELECT 1 FROM mentions m2 WHERE m2.entity_id = ?"
        " AND m2.created_at = m1.created_at AND m2.entry_id = m1.entry_id)"
        " ORDER BY m1.created_at {} LIMIT 1"
    )
    lo = con.execute(sql.format("ASC"), (first, second)).fetchall()
    hi = con.execute(sql.format("DESC"), (first, second)).fetchall()
    return (lo[0][0] if lo else None), (hi[0][0] if hi else None)


# --- the entity signal of search (search/entityboost.py) ----------------------------------------

DF_CAP = 10_000  # entries counted per entity at most (an entity this common weighs ~0)


def named(con: Connection, keys: Sequence[str]) -> dict[int, int]:
    """{entity id: entries that mention it (up to DF_CAP)} of the entities that these canonical
    keys are the key or a surface form of."""
    out: dict[int, int] = {}
    for key in dict.fromkeys(k for k in keys if k):
        for (entity_id,) in con.execute(RESOLVE_SQL, resolve_params(key)).fetchall():
            if int(entity_id) in out:
                continue
            row = con.execute(
                "SELECT count(*) FROM (SELECT DISTINCT entry_id FROM mentions"
                " WHERE entity_id = ? LIMIT ?) AS d",
                (entity_id, DF_CAP),
            ).fetchall()
            out[int(entity_id)] = int(row[0][0])
    return out


def mentioned_in(
    con: Connection, entity_ids: Sequence[int], entry_ids: Sequence[int]
) -> dict[int, set[int]]:
    """{entry id: the ones of `entity_ids` it mentions}, for these entries."""
    out: dict[int, set[int]] = {}
    if not entity_ids or not entry_ids:
        return out
    ents = list(entity_ids)
    for at in range(0, len(entry_ids), 500):
        part = list(entry_ids[at : at + 500])
        for entry, entity in con.execute(
            f"SELECT DISTINCT entry_id, entity_id FROM mentions WHERE entity_id IN ({_in(ents)})"
            f" AND entry_id IN ({_in(part)})",
            [*ents, *part],
        ).fetchall():
            out.setdefault(int(entry), set()).add(int(entity))
    return out
