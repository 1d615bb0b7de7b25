"""Which entity a name written in an entry names, when it is no entity's key: the entities that
have it as a surface form (store/entities.py, known_as; an alias a note's front matter gives,
a wikilink's file name the note's title stands for, a person's first name)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryd.store.protocol import Connection

# A name the store knows as another entity's: one of its surface forms (an alias a note's front
# matter gives, a wikilink's file name the note's title stands for), or a person's first name.
# (an older schema's, during a migration: every form counts as declared, the rule before m013)
FORM_OF = (
    "SELECT e.key, e.name, e.type, e.id, max(@DECLARED@) FROM mentions m"
    " JOIN entities e ON e.id = m.entity_id"
    " WHERE m.surface_key = ? AND e.key != ? GROUP BY e.key, e.name, e.type, e.id LIMIT 2"
)
FORMS_OF = (FORM_OF.replace("@DECLARED@", "1"), FORM_OF.replace("@DECLARED@", "m.declared"))
# SQLite m017 (the form look-up read every mention of a form, so importing beside 1,000 notes
# that all link `[[billing-svc]]` cost 1.20-1.26x CPU, stop 38); PostgreSQL's index has had the
# entity since v3 (pg/schema.py)
FORM_PROBE_INDEX = """
DROP INDEX mentions_surface;
CREATE INDEX mentions_surface ON mentions(surface_key, entity_id, declared);
"""
# which entities have each of many forms (one statement per 500 keys: a form look-up was a
# statement per name an entry writes that is no entity's key, issue 20.6)
_PROBES = (
    "SELECT surface_key, min(entity_id), max(entity_id) FROM mentions"
    " WHERE surface_key IN ({}) GROUP BY surface_key"
)
_ONE_DECLARED = (
    "SELECT 1 FROM mentions WHERE surface_key = ? AND entity_id = ? AND declared = 1 LIMIT 1"
)


def probes(con: Connection, keys: Sequence[str]) -> dict[str, tuple[int, int]]:
    """{form: (the least, the greatest entity that has it)} for those of `keys` that any
    mention writes (m017's index: the form and its entity)."""
    out: dict[str, tuple[int, int]] = {}
    for at in range(0, len(keys), 500):
        part = keys[at : at + 500]
        sql = _PROBES.format(",".join("?" * len(part)))
        for key, lo, hi in con.execute(sql, tuple(part)).fetchall():
            out[str(key)] = (int(lo), int(hi))
    return out


def forms_of(con: Connection, key: str, probe: tuple[int, int] | None) -> list[tuple[Any, ...]]:
    """FORM_OF's rows for `key`, in index seeks when the form names one entity (m017: a form
    a thousand notes link was read a thousand rows at a time): `probe`, the least and greatest
    entity that has it (probes), then whether one of its mentions is declared."""
    if probe is None:
        return []
    lo, hi = probe
    if lo != hi:
        return [tuple(r) for r in con.execute(FORMS_OF[1], (key, key)).fetchall()]
    row = con.execute("SELECT key, name, type, id FROM entities WHERE id = ?", (lo,)).fetchall()
    if not row or row[0][0] == key:
        return []
    return [(*row[0], int(bool(con.execute(_ONE_DECLARED, (key, lo)).fetchall())))]
