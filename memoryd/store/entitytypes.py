"""An entity's type is a function of its current mentions (issue 20.2), on both backends.

Each mention row keeps the type its extraction gave it (`mentions.type`: SQLite m018,
PostgreSQL v16; 'other' when untyped). An entity's type is, among its mentions' types other
than 'other', the one its notes declare most (a title, a file name, front matter, a wikilink:
`mentions.declared`), then the one written most, then (a tie) any but person (a name is a
person only on clear evidence: "cc @nimbus" beside "the Nimbus service" is a system), then the
first by name; 'other' when none is typed. Before, an entity kept the type of its first typed
mention (bettered only when a later batch outweighed the store), so the type depended on the
order entries came in, and stayed when the mentions that gave it left: "Lena Fischer" stayed
a person after her note was deleted, where a rebuild read her as `other`.

Kept where the mentions change, with the least reading: adding mentions recomputes only the
entities that gained a typed mention of another type than theirs (a mention of the winning
type cannot unseat it); deleting one, only when it had its entity's type (removing a loser's
mention cannot make it win): a trigger, so every way a mention goes (an edit, a cascade from a
deleted entry, a checkpoint) keeps the type exact. The recount reads one entity's mentions in
its key order (SQLite's `mentions` is keyed by entity; PostgreSQL's `mentions_entity` index).
"""

from __future__ import annotations

from collections.abc import Iterable

from memoryd.store.protocol import Connection

# Each entity's typed mentions counted by type (kept by _store and the delete trigger: a count
# a delete decrements is O(1), where reading the entity's mentions again on each delete was
# quadratic: a withdrawal that re-keys 430 entries' "Lena" cost 2.4x main's)
TABLE = """
CREATE TABLE entity_types(
    entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    declared INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (entity_id, type)
)"""
_COUNT = (
    "INSERT INTO entity_types(entity_id, type, declared, n) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (entity_id, type) DO UPDATE SET declared = entity_types.declared"
    " + excluded.declared, n = entity_types.n + excluded.n"
)
# the type of the entity `entities.id` from its counts (the rule above)
TYPE_OF = (
    "coalesce((SELECT t.type FROM entity_types t WHERE t.entity_id = entities.id"
    " ORDER BY t.declared DESC, t.n DESC, t.type = 'person', t.type LIMIT 1), 'other')"
)
_RETYPE = f"UPDATE entities SET type = {TYPE_OF} WHERE id = ? AND type != ?"
_UNCOUNT = """
    UPDATE entity_types SET n = n - 1, declared = declared - {old}.declared
        WHERE entity_id = {old}.entity_id AND type = {old}.type;
    DELETE FROM entity_types WHERE entity_id = {old}.entity_id AND type = {old}.type AND n <= 0;
    UPDATE entities SET type = {type_of} WHERE id = {old}.entity_id AND type = {old}.type;
"""

# SQLite (migrations.m018): the column, each mention taking its entity's type until its entry
# is read again (the memories in the step, the notes at the next reconcile: sha256 cleared), the
# counts, and the trigger on deleting a typed mention
SQLITE_STEP = f"""
ALTER TABLE mentions ADD COLUMN type TEXT NOT NULL DEFAULT 'other';
UPDATE mentions SET type = (SELECT e.type FROM entities e WHERE e.id = mentions.entity_id);
{TABLE} WITHOUT ROWID;
CREATE TRIGGER mentions_ad_type AFTER DELETE ON mentions WHEN old.type != 'other' BEGIN
{_UNCOUNT.format(old="old", type_of=TYPE_OF)}
END;
"""

# PostgreSQL (pg/schema.py v16): v2's AFTER DELETE row function, which runs once the statement
# is done, counting first
PG_FUNCTION = f"""
CREATE OR REPLACE FUNCTION memoryd_mention_removed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    IF OLD.type != 'other' THEN
{_UNCOUNT.format(old="OLD", type_of=TYPE_OF)}
    END IF;
    DELETE FROM entities WHERE id = OLD.entity_id AND mentions <= 0;
    RETURN NULL;
END
$fn$;
"""


def added(con: Connection, typed: Iterable[tuple[int, str, int]]) -> None:
    """After mentions were added: (entity id, type other than 'other', declared) of each
    typed one counted, and the type of each entity that gained one of another type than its
    own read again."""
    counts: dict[tuple[int, str], list[int]] = {}
    for entity_id, kind, declared in typed:
        at = counts.setdefault((entity_id, kind), [0, 0])
        at[0] += declared
        at[1] += 1
    if counts:
        con.executemany(_COUNT, [(e, k, d, n) for (e, k), (d, n) in sorted(counts.items())])
        con.executemany(_RETYPE, sorted(counts))


def retype_all(con: Connection) -> None:
    """Every entity's counts and type from its mentions (a recount, a migration)."""
    con.execute("DELETE FROM entity_types")
    con.execute(
        "INSERT INTO entity_types(entity_id, type, declared, n) SELECT entity_id, type,"
        " sum(declared), count(*) FROM mentions WHERE type != 'other' GROUP BY entity_id, type"
    )
    con.execute(f"UPDATE entities SET type = {TYPE_OF}")
