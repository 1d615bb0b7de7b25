"""Which stored people a first name written alone may stand for (store/entities.py's
first-name rule: known_as and adopt_first_names). Reads only; both backends."""

from __future__ import annotations

from typing import Any

from memoryd.store.dialect import is_postgres
from memoryd.store.protocol import Connection
from memoryd.text import entity_cues as cues

# The range lets SQLite use the key's index; substr keeps it exact where a collation is not
# bytewise (PostgreSQL's may order "caroline baker" apart from "caroline ").
_FIRST_NAME_OF = (
    "SELECT key, name, type, id FROM entities WHERE type IN ('person', 'other')"
    " AND substr(key, 1, ?) = ?"
)
_FIRST_NAME_OF_SQLITE = _FIRST_NAME_OF + " AND key > ? AND key < ?"


def person_like(key: str, kind: str) -> bool:
    """A name that may stand for a person: typed person or other, or one word of the shipped
    first names that are no English word, typed otherwise from its sentence ("José's plan" read
    as a system's), unless it is a well-known system or place."""
    if kind in ("person", "other"):
        return True
    return (
        kind == "system"
        and " " not in key
        and key in cues.first_names()[0]
        and key not in cues.systems()[0]
        and key not in cues.places()
    )


def people_named(
    con: Connection, first: str, claimed: bool = True, typed: bool = True
) -> list[tuple[Any, ...]]:
    """(key, name, type) of every person of two or three words whose first name is `first`:
    typed person, or untyped and written like one (named_like_person); with `claimed`, only
    those who claim it (claims; False: a migration's older schema, which cannot tell)."""
    prefix = first + " "
    if is_postgres(con):
        rows = con.execute(_FIRST_NAME_OF, (len(prefix), prefix)).fetchall()
    else:
        params = (len(prefix), prefix, prefix, prefix + "\uffff")
        rows = con.execute(_FIRST_NAME_OF_SQLITE, params).fetchall()
    return [
        (r[0], r[1], r[2])
        for r in rows
        if str(r[0]).count(" ") <= 2
        and (
            (str(r[2]) == "person" and (not typed or _person_by_itself(con, int(r[3]), first)))
            or named_like_person(str(r[0]), str(r[1]))
        )
        and (not claimed or claims(con, int(r[3]), str(r[0])))
    ]


# the entity's typed mentions but its first name alone (the type rule of store/entitytypes.py)
_TYPED_BUT = (
    "SELECT type, sum(declared), count(*) FROM mentions WHERE entity_id = ? AND surface_key != ?"
    " AND type != 'other' GROUP BY type"
)


def _person_by_itself(con: Connection, entity_id: int, first: str) -> bool:
    """Whether a person-typed entity is a person without the first names alone it took: its
    type counts them (an untyped full name whose "Ravi" is written as a person's), so one typed
    a person only by them would claim them for good, where a rebuild, which reads the first
    names before any claim, never gives them."""
    votes = [
        (-int(d), -int(n), str(t) == "person", str(t))
        for t, d, n in con.execute(_TYPED_BUT, (entity_id, first)).fetchall()
    ]
    return bool(votes) and min(votes)[3] == "person"


# A full name claims its first name (or another form, such as a surname, it takes within one
# note) written alone in other notes and memories when a note declares it (entities.DECLARES: a
# title, a file name, front matter, a wikilink) or when it is written in full in CLAIM_WRITERS
# notes or memories: evidence, not one quote ("As John Locke puts it", once, in the Obsidian
# help vault took every "John" of three LoCoMo conversations).
CLAIM_WRITERS = 2
# (through the view `entries`: on a PostgreSQL store several daemons share, what this one's notes
# and the memories say; a title in another workspace claims nothing here)
_DECLARED = (
    "SELECT 1 FROM mentions m JOIN entries e ON e.id = m.entry_id"
    " WHERE m.entity_id = ? AND m.declared = 1 LIMIT 1"
)
# the notes (a memory: itself) that write the name in full, up to CLAIM_WRITERS
_WRITERS = (
    "SELECT DISTINCT coalesce(e.document_id, -e.id) FROM mentions m"
    " JOIN entries e ON e.id = m.entry_id WHERE m.surface_key = ? AND m.entity_id = ?"
    f" LIMIT {CLAIM_WRITERS}"
)


def claims(con: Connection, entity_id: int, key: str) -> bool:
    """Whether the person `key` (entity `entity_id`) claims a form of its name written alone
    outside the notes that write it in full: declared by a note, or written in full by
    CLAIM_WRITERS notes or memories."""
    if written_in_full(con, entity_id, key):
        return True
    return bool(con.execute(_DECLARED, (entity_id,)).fetchall())


def written_in_full(con: Connection, entity_id: int, key: str) -> bool:
    """Whether CLAIM_WRITERS notes or memories write the name `key` in full."""
    return len(con.execute(_WRITERS, (key, entity_id)).fetchall()) >= CLAIM_WRITERS


def named_like_person(key: str, name: str) -> bool:
    """An untyped name of two or three capitalised words that opens with a shipped first name
    (one that is no English word) and is no known place or software: `[[Caroline Baker]]`, a
    note's title no sentence typed. Within one note such a name takes its first name alone
    (text/entities.py, _part_names); across notes it does too."""
    words, parts = name.split(), key.split(" ")
    return (
        2 <= len(words) <= 3
        and all(w[:1].isupper() and w.replace("-", "").isalpha() for w in words)
        and parts[0].partition("-")[0] in cues.first_names()[0]  # "Jean-Luc Picard" too
        and parts[-1] not in _NOT_A_SURNAME
        and not any(parts[-1] in names for names in cues.first_names())  # "Mary Rose"
        and key not in cues.places()
        and key not in cues.systems()[0]
    )


# a last word that makes a place or an organisation of a name: "George Street", "Austin Energy"
_NOT_A_SURNAME = (
    cues.PLACE_SUFFIX
    | cues.PLACE_SUFFIX_2
    | cues.ORG_SUFFIX
    | cues.ORG_SUFFIX_2
    | cues.SYSTEM_AFTER
)
