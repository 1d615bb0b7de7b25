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
from dataclasses import dataclass
from typing import Any

from memoryd.store.dialect import is_postgres
from memoryd.store.entities import RESOLVE_SQL, name_key
from memoryd.store.protocol import Connection


@dataclass(frozen=True)
class EntityRow:
    id: int
    key: str
    name: str
    type: str
    mentions: int


_COLS = "n.id, n.key, n.name, n.type, n.mentions"


def _visible(con: Connection, alias: str = "n") -> str:
    """SQLite: every entity row has a mention (triggers); PostgreSQL: one this daemon sees."""
    if not is_postgres(con):
        return "1 = 1"
    return (
        f"EXISTS (SELECT 1 FROM mentions vm JOIN entries vx ON vx.id = vm.entry_id"
        f" WHERE vm.entity_id = {alias}.id)"
    )


def _rows(con: Connection, sql: str, params: Sequence[Any]) -> list[EntityRow]:
    return [
        EntityRow(int(i), str(k), str(n), str(t), int(c))
        for i, k, n, t, c in con.execute(sql, params).fetchall()
    ]


def by_name(con: Connection, name: str) -> list[EntityRow]:
    """The entities a name means (its key, or a surface form of theirs), most mentioned first;
    the one whose key it is comes first."""
    key = name_key(name)
    if not key:
        return []
    return _rows(
        con,
        f"SELECT {_COLS} FROM entities n WHERE n.id IN ({RESOLVE_SQL}) AND {_visible(con)}"
        " ORDER BY n.key = ? DESC, n.mentions DESC, n.id",
        (key, key, key),
    )


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def matching(con: Connection, text: str, limit: int, types: Sequence[str] = ()) -> list[Any]:
    """Entities whose key or a surface form matches `text`: (row, rank) with rank 0 for the
    key itself, 1 a surface form, 2 a key starting with it, 3 a word of the key starting with it,
    4 the text inside the key; best rank, then most mentioned, first."""
    key = name_key(text)
    if not key:
        return []
    like = _like(key)
    type_sql = f" AND n.type IN ({','.join('?' * len(types))})" if types else ""
    sql = (
        f"SELECT {_COLS}, min(r) AS rank FROM ("
        " SELECT id, 0 AS r FROM entities WHERE key = ?"
        " UNION ALL SELECT DISTINCT entity_id, 1 FROM mentions WHERE surface_key = ?"
        " UNION ALL SELECT id, 2 FROM entities WHERE key LIKE ? ESCAPE '\\'"
        " UNION ALL SELECT id, 3 FROM entities WHERE key LIKE ? ESCAPE '\\'"
        " UNION ALL SELECT id, 4 FROM entities WHERE key LIKE ? ESCAPE '\\'"
        f") AS hit JOIN entities n ON n.id = hit.id WHERE {_visible(con)}{type_sql}"
        " GROUP BY n.id, n.key, n.name, n.type, n.mentions"
        " ORDER BY rank, n.mentions DESC, n.id LIMIT ?"
    )
    params = [key, key, like + "%", "% " + like + "%", "%" + like + "%", *types, limit]
    return [
        (EntityRow(int(i), str(k), str(n), str(t), int(c)), int(r))
        for i, k, n, t, c, r in con.execute(sql, params).fetchall()
    ]


def top(
    con: Connection, limit: int, types: Sequence[str] = (), since: float | None = None
) -> list[EntityRow]:
    """The most mentioned entities (of these types; mentioned by an entry dated `since` or
    later), most mentioned first."""
    where = [_visible(con)]
    params: list[Any] = []
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


def aliases(con: Connection, ids: Sequence[int], limit: int = 20) -> list[str]:
    """The surface forms as written, most used first."""
    return [
        str(r[0])
        for r in con.execute(
            f"SELECT surface FROM mentions WHERE entity_id IN ({_in(ids)})"
            " GROUP BY surface ORDER BY count(*) DESC, surface LIMIT ?",
            [*ids, limit],
        ).fetchall()
    ]


def mentioning(con: Connection, ids: Sequence[int]) -> list[dict[str, Any]]:
    """Every entry this daemon sees that mentions one of `ids`, without its text: id, kind,
    path, date, how often it mentions them, and the first line and surface form."""
    cols = ("id", "kind", "path", "created_at", "count", "line", "surface")
    sql = (
        "SELECT x.id, x.kind, d.path, x.created_at, g.n, g.line, g.surface FROM ("
        " SELECT entry_id, count(*) AS n, min(line) AS line, min(surface) AS surface"
        f" FROM mentions WHERE entity_id IN ({_in(ids)}) GROUP BY entry_id) AS g"
        " JOIN entries x ON x.id = g.entry_id LEFT JOIN documents d ON d.id = x.document_id"
    )
    return [dict(zip(cols, r, strict=True)) for r in con.execute(sql, list(ids)).fetchall()]


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
    entries that mention both."""
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


def together(con: Connection, first: int, second: int) -> tuple[Any, Any]:
    """(first, last) date of an entry this daemon sees that mentions both entities; the
    entries of `first` are walked (give the one with fewer mentions), those of `second` looked
    up (CROSS JOIN keeps that order in SQLite; PostgreSQL plans its own)."""
    row = con.execute(
        "SELECT min(x.created_at), max(x.created_at) FROM mentions m1 CROSS JOIN mentions m2"
        " JOIN entries x ON x.id = m1.entry_id"
        " WHERE m1.entity_id = ? AND m2.entry_id = m1.entry_id AND m2.entity_id = ?",
        [first, second],
    ).fetchall()[0]
    return row[0], row[1]


# --- the entity signal of search (search/entityboost.py) ----------------------------------------

DF_CAP = 10_000  # entries counted per entity at most (an entity this common weighs ~0)


def named(con: Connection, keys: Sequence[str]) -> dict[int, int]:
    """{entity id: entries that mention it (up to DF_CAP)} of the entities that these canonical
    keys are the key or a surface form of."""
    out: dict[int, int] = {}
    for key in dict.fromkeys(k for k in keys if k):
        for (entity_id,) in con.execute(RESOLVE_SQL, (key, key)).fetchall():
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
