"""An entity's type is a function of its current mentions (issue 20.2), on both backends.

Each mention row keeps the type its extraction gave it (`mentions.type`: SQLite m018,
PostgreSQL v16; 'other' when untyped). An entity's type is, among its mentions' types other
than 'other', the one its notes declare most (a title, a file name, front matter, a wikilink:
`mentions.declared`), then the one written most, then the first by name; 'other' when none is
typed. Before, an entity kept the type of its first typed mention (bettered only when a later
batch outweighed the store), so the type depended on the order entries came in, and stayed
when the mentions that gave it left: "Lena Fischer" stayed a person after her note was
deleted, where a rebuild read her as `other`.

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

# the type of the entity `entities.id` from its mentions (the rule above)
TYPE_OF = (
    "coalesce((SELECT t.type FROM mentions t WHERE t.entity_id = entities.id"
    " AND t.type != 'other' GROUP BY t.type"
    " ORDER BY sum(t.declared) DESC, count(*) DESC, t.type LIMIT 1), 'other')"
)
_RETYPE = f"UPDATE entities SET type = {TYPE_OF} WHERE id = ? AND type != ?"

# SQLite (migrations.m018): the column, each mention taking its entity's type until its entry
# is read again (the notes at the next reconcile, the memories in the step: nothing embedded),
# and the trigger on deleting a mention of its entity's type
SQLITE_STEP = f"""
ALTER TABLE mentions ADD COLUMN type TEXT NOT NULL DEFAULT 'other';
UPDATE mentions SET type = (SELECT e.type FROM entities e WHERE e.id = mentions.entity_id);
CREATE TRIGGER mentions_ad_type AFTER DELETE ON mentions WHEN old.type != 'other' BEGIN
    UPDATE entities SET type = {TYPE_OF} WHERE id = old.entity_id AND type = old.type;
END;
"""

# PostgreSQL (pg/schema.py v16): v2's AFTER DELETE row function, which runs once the statement
# is done (it sees every mention the statement deleted gone), retyping first
PG_FUNCTION = f"""
CREATE OR REPLACE FUNCTION memoryd_mention_removed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    IF OLD.type != 'other' THEN
        UPDATE entities SET type = {TYPE_OF} WHERE id = OLD.entity_id AND type = OLD.type;
    END IF;
    DELETE FROM entities WHERE id = OLD.entity_id AND mentions <= 0;
    RETURN NULL;
END
$fn$;
"""


def added(con: Connection, typed: Iterable[tuple[int, str]]) -> None:
    """After mentions were added: (entity id, a type other than 'other' one of them has) for
    each, the entity's type read again when it is another."""
    pairs = sorted(set(typed))
    if pairs:
        con.executemany(_RETYPE, pairs)


def retype_all(con: Connection) -> None:
    """Every entity's type from its mentions (a recount, a migration)."""
    con.execute(f"UPDATE entities SET type = {TYPE_OF}")
