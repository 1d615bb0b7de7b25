"""Co-mentions bounded per entry (issue 20): which of an entry's entities it pairs in
`relations`, written once for every path that counts or uncounts a pair (store/entities.py's
insert, the delete triggers of both backends, `recount` after a bulk copy or a migration).

The rule: an entry pairs its leading entities only, at most PAIRED (20) of them, so it adds at
most 190 relations whatever it lists. An entry that mentions at most PAIRED distinct entities
pairs them all. One that mentions more (an inventory of hosts, a credits page, a list of
functions) pairs those it mentions in more rows of `mentions` (lines, and written forms) than
the entity at rank PAIRED + 1, ties at the cut all left out: a list whose names are each written
once pairs none. Being listed together is not a relationship; 400 hosts each "related" to the
399 others, all with the same count, told a reader of the graph nothing and wrote 79,800 rows
for one note (an edit to it held the writer lock 2.1 s). The rule reads nothing but the entry's
own mentions, and no order among tied names decides, so both backends agree on it (entity ids
differ between them after a copy; keys sort differently under PostgreSQL's collation).

Each mention row carries the result (`paired`, the same on every row of one entity in one
entry), and the delete triggers read that flag: when an entry's last mention of a paired entity
goes, they take one from its pairs with the entry's other paired entities still there. So they
undo exactly what was counted, however the mentions go (one statement, a cascade, any order),
without reading the rule again from an entry half deleted.
"""

from __future__ import annotations

from typing import TypeVar

from memoryd.store.protocol import Connection

K = TypeVar("K")  # an entity: its id, or its key (one entity each within one batch)

# The most entities one entry pairs: PAIRED * (PAIRED - 1) / 2 relations at most. Real notes stay
# under it: in the Obsidian help vault (with its release notes) and bench/data's notes, 4,126
# chunks, 4 held more than 20 distinct entities, all lists (Credits, a list of functions, an
# on-call cheat sheet; BENCHMARKS.md, "Issue 20.2: co-mentions bounded per entry").
PAIRED = 20


def leading(counts: dict[K, int]) -> set[K]:
    """The entities an entry pairs, from {entity id: its rows of `mentions` in the entry}: all
    of them when they are at most PAIRED, else those with more rows than the entity at rank
    PAIRED + 1 (never more than PAIRED, and no order among ties decides). Pure; PAIRED_SQL is
    the same rule in SQL."""
    if len(counts) <= PAIRED:
        return set(counts)
    cut = sorted(counts.values(), reverse=True)[PAIRED]
    return {entity_id for entity_id, n in counts.items() if n > cut}


# `leading` for every entry at once: an entity is paired when at most PAIRED of the entry's
# entities have as many rows in it as it has, or more (the window's default frame takes in the
# peers: the ties). Its one parameter is PAIRED.
PAIRED_SQL = (
    "SELECT entry_id, entity_id,"
    " CASE WHEN count(*) OVER (PARTITION BY entry_id ORDER BY count(*) DESC) <= ? THEN 1"
    " ELSE 0 END AS paired FROM mentions GROUP BY entry_id, entity_id"
)


def recount(con: Connection) -> None:
    """Every entry's flags by the rule (written where a row says otherwise) and every relation
    again from the paired mentions."""
    con.execute(
        f"UPDATE mentions SET paired = p.paired FROM ({PAIRED_SQL}) AS p"
        " WHERE mentions.entry_id = p.entry_id AND mentions.entity_id = p.entity_id"
        " AND mentions.paired != p.paired",
        (PAIRED,),
    )
    con.execute("DELETE FROM relations")
    con.execute(
        "INSERT INTO relations(a, b, count) SELECT x.entity_id, y.entity_id,"
        " count(DISTINCT x.entry_id) FROM mentions x JOIN mentions y"
        " ON y.entry_id = x.entry_id AND y.entity_id > x.entity_id"
        " WHERE x.paired = 1 AND y.paired = 1 GROUP BY x.entity_id, y.entity_id"
    )


def mention_columns(con: Connection, postgres: bool) -> int:
    """How many of the later columns `mentions` has yet (store/entities.py, COLUMNS): 0 before
    SQLite's m012 and PostgreSQL's v11 (`paired`), 1 before m013 / v12 (`declared`), 2 before
    m018 / v16 (`type`), 3 after. A migration before them (m007 / v3 read the memories) writes
    mentions in the schema of its time."""
    sql = (
        "SELECT attname FROM pg_attribute WHERE attrelid = 'mentions'::regclass"
        " AND attname IN ('paired', 'declared', 'type') AND NOT attisdropped"
        if postgres
        else "SELECT name FROM pragma_table_info('mentions')"
        " WHERE name IN ('paired', 'declared', 'type')"
    )
    return len(con.execute(sql).fetchall())


# SQLite (migrations.m012_paired): the trigger on deleting a mention that m006 made, reading the
# flag. The entities' counts keep m006's own trigger (mentions_ad_count).
SQLITE_TRIGGER = """
DROP TRIGGER mentions_ad;
CREATE TRIGGER mentions_ad AFTER DELETE ON mentions
WHEN old.paired = 1 AND NOT EXISTS (SELECT 1 FROM mentions WHERE entry_id = old.entry_id
                                    AND entity_id = old.entity_id) BEGIN
    UPDATE relations SET count = count - 1
        WHERE (a, b) IN (SELECT min(old.entity_id, o.entity_id),
                                max(old.entity_id, o.entity_id)
                         FROM (SELECT DISTINCT entity_id FROM mentions
                               WHERE entry_id = old.entry_id AND paired = 1) AS o);
    DELETE FROM relations WHERE count <= 0 AND (a = old.entity_id OR b = old.entity_id);
END;
"""

# PostgreSQL (pg/schema.py v11): v2's BEFORE DELETE row function (pg/schema.py says why before),
# reading the flag
PG_FUNCTION = """
CREATE OR REPLACE FUNCTION memoryd_mention_removing() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    IF OLD.paired = 1 AND (SELECT count(*) FROM mentions
        WHERE entry_id = OLD.entry_id AND entity_id = OLD.entity_id) = 1 THEN
        UPDATE relations SET count = count - 1
            WHERE (a, b) IN (SELECT least(OLD.entity_id, o.entity_id),
                                    greatest(OLD.entity_id, o.entity_id)
                             FROM (SELECT DISTINCT entity_id FROM mentions
                                   WHERE entry_id = OLD.entry_id AND paired = 1
                                     AND entity_id != OLD.entity_id) AS o);
        DELETE FROM relations
            WHERE count <= 0 AND (a = OLD.entity_id OR b = OLD.entity_id);
    END IF;
    UPDATE entities SET mentions = mentions - 1 WHERE id = OLD.entity_id;
    RETURN OLD;
END
$fn$;
"""
