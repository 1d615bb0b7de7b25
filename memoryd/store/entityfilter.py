"""Finding entities by name (the rows store/entities.py keeps): a name as a person or an agent
writes it -> the entities it means (its key, an alias or other surface form, a first name said
alone), and the `entities` search filter built on them: the SQL condition, and the set of
entries a narrow filter allows, read once per connection while nothing is written."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memoryd.store.connmemo import PerVersion, data_version
from memoryd.store.dialect import is_postgres
from memoryd.store.protocol import Connection
from memoryd.text.entities import canonical_key, extract


def name_key(name: str) -> str:
    """The key a name given by a person or an agent is looked up by ("#x" for a tag)."""
    return canonical_key(name.strip())


def written_key(name: str) -> str:
    """The key of the one entity a name is written as, read as the indexer reads text, when its
    own key names none: a URL's host (`https://web-3.example.com/x`), a link's target
    (`[[Caroline Baker|Caro]]`), a host with its port, an address after `mailto:`; "" when the
    text names no entity or several ("Caroline and Melanie"), or only its own key, and for
    words that are no link ("the Obsidian app" is no name of Obsidian: its words are matched
    for the suggestions, search/entities.py)."""
    text = name.strip()
    if any(c.isspace() for c in text) and not (text.startswith("[[") and text.endswith("]]")):
        return ""
    keys = {m.key for m in extract(text)}
    if len(keys) != 1:
        return ""
    (key,) = keys
    return "" if key == name_key(name) else key


# The entities written in a form (its key twice): one index seek per distinct entity on
# `mentions_surface` (surface_key, entity_id, ...), not a walk of every mention written so
# ("Pavel Jensen" is 14,000 of them at 100K chunks).
FORMS_SQL = (
    "SELECT id FROM (WITH RECURSIVE f(id) AS ("
    " SELECT min(entity_id) FROM mentions WHERE surface_key = ?"
    " UNION ALL SELECT (SELECT min(entity_id) FROM mentions WHERE surface_key = ?"
    " AND entity_id > f.id) FROM f WHERE f.id IS NOT NULL)"
    " SELECT id FROM f WHERE id IS NOT NULL) AS forms"
)
# ... and the one whose key it is (the key three times: resolve_params): every entity a key
# is written for (the search's entity boost weighs them all: search/entityboost.py)
RESOLVE_SQL = f"SELECT id FROM entities WHERE key = ? UNION {FORMS_SQL}"
# ... the one of them a name means on every door (entityread.by_name's first): the one whose key
# it is, else the most mentioned it is written for (the same parameters)
ONE_SQL = (
    "SELECT id FROM (SELECT id, 0 AS o, mentions FROM entities WHERE key = ?"
    f" UNION ALL SELECT n.id, 1, n.mentions FROM entities n WHERE n.id IN ({FORMS_SQL}))"
    " AS one ORDER BY o, mentions DESC, id LIMIT 1"
)


def resolve_params(key: str) -> list[str]:
    return [key, key, key]


def said_alone(con: Connection, key: str) -> list[int]:
    """The one entity a name said alone means when it is no entity's key or form: a person's
    first name (as the indexer resolves "Caroline" written alone to the one Caroline) or a tag
    without its "#"; none when it could mean several."""
    like = key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + " %"
    rows = con.execute(
        "SELECT id FROM entities WHERE key = ?"
        " UNION SELECT id FROM entities WHERE type = 'person' AND key LIKE ? ESCAPE '\\'"
        " LIMIT 2",
        ["#" + key, like],
    ).fetchall()
    return [int(rows[0][0])] if len(rows) == 1 else []


# An entities filter whose names are mentioned at most this many times (rows of `mentions`) is
# narrow: the pools look up the few entries it allows (an exact vector scan over them). A name
# mentioned more often is wide: the pools find their candidates as without a filter and check
# each against the mentions (one index look-up a candidate), instead of making the set of every
# entry that mentions it once per pool query (issue 20.6: a name in 14% of 100K chunks).
# (The filter's names are resolved by entityread.resolve_filter: one entity a name.)
NARROW_MENTIONS = 2000


# entries_of's last answer per connection, while its data version holds (no connection
# committed since) and it changed nothing itself: the same filter on the next search (an agent
# narrowing by one name) reads no mentions (14,000 at 100K chunks: 4-6 ms).
_ENTRIES_OF: PerVersion[np.ndarray] = PerVersion(1)


def entries_of(con: Connection, groups: Sequence[Sequence[int]]) -> np.ndarray:
    """The ids of the entries that mention one entity of every group (resolve_filter's
    groups), ascending, each once: an index-only read of `mentions` per group, as one string
    (14,000 rows as Python ints cost 7 ms at 100K chunks; the string, 2). Read-only."""
    version, key = data_version(con), tuple(map(tuple, groups))
    found_before, known = _ENTRIES_OF.get(con, version, key)
    if found_before and known is not None:
        return known
    found: np.ndarray | None = None
    agg = "string_agg(entry_id::text, ',')" if is_postgres(con) else "group_concat(entry_id)"
    for ids in groups:
        row = (
            con.execute(
                f"SELECT {agg} FROM mentions WHERE entity_id IN ({','.join('?' * len(ids))})",
                list(ids),
            ).fetchone()
            if ids
            else None
        )
        text = str(row[0]) if row and row[0] is not None else ""
        if not text:
            found = np.zeros(0, dtype=np.int64)
            break
        got = np.sort(np.fromstring(text, dtype=np.int64, sep=","))
        got = got[np.concatenate(([True], got[1:] != got[:-1]))]  # np.unique: 30x slower here
        found = got if found is None else np.intersect1d(found, got, assume_unique=True)
    out = found if found is not None else np.zeros(0, dtype=np.int64)
    out.flags.writeable = False
    _ENTRIES_OF.put(con, version, key, out)
    return out


def is_wide(mentions: int | bool | None) -> bool:
    return mentions is not None and int(mentions) > NARROW_MENTIONS


def rowid_sql(groups: Sequence[Sequence[int]]) -> tuple[str, list[Any]]:
    """filter_sql's condition (resolved groups) on the FTS5 rowid of `entries_fts` (the `+`
    keeps SQLite from handing it to FTS5 as a rowid look-up per id). Pure."""
    parts: list[str] = []
    params: list[Any] = []
    for ids in groups:
        if not ids:
            return "0 = 1", []
        marks = ",".join("?" * len(ids))
        parts.append(
            "+entries_fts.rowid IN"
            f" (SELECT fm.entry_id FROM mentions fm WHERE fm.entity_id IN ({marks}))"
        )
        params.extend(ids)
    return " AND ".join(parts), params


def filter_sql(
    names: Sequence[str],
    groups: Sequence[Sequence[int]] | None = None,
    mentions: int | bool | None = None,
) -> tuple[str, list[Any]]:
    """An SQL condition over the entry alias `e`: it mentions every one of `names` (each the
    one entity it means: ONE_SQL; entityread.resolve_filter also reads a first name said alone
    and a URL's host), or with `groups` (resolve_filter's), one of the
    entities of each group: a set of entries made once per statement when narrow, a look-up
    per entry when wide (`mentions`, resolve_filter's, over NARROW_MENTIONS). Pure."""
    parts: list[str] = []
    params: list[Any] = []
    if groups is not None:
        for ids in groups:
            if not ids:
                return "0 = 1", []
            marks = ",".join("?" * len(ids))
            if is_wide(mentions):
                parts.append(
                    "EXISTS (SELECT 1 FROM mentions fm WHERE fm.entry_id = e.id"
                    f" AND fm.entity_id IN ({marks}))"
                )
            else:
                parts.append(
                    f"e.id IN (SELECT fm.entry_id FROM mentions fm WHERE fm.entity_id IN ({marks}))"
                )
            params.extend(ids)
        return " AND ".join(parts), params
    for name in names:
        key = name_key(name)
        # not correlated: the engine makes the set of entries once and looks them up
        parts.append(
            f"e.id IN (SELECT fm.entry_id FROM mentions fm WHERE fm.entity_id IN ({ONE_SQL}))"
        )
        params.extend(resolve_params(key))
    return " AND ".join(parts), params
