"""Entities in the store: who and what the entries mention (the names come from
memoryd.text.entities; this module only stores and finds them).

Three tables (migrations.m006_entities; PostgreSQL: pg/schema.py v2):

- `entities(id, key UNIQUE, name, type, mentions)`: one row per canonical key;
- `mentions(entity_id, entry_id, line, surface, surface_key)`: one row per occurrence, with the
  line it stands on (a note's line in its file; 1 for a memory) and the text as written
  (its canonical key too, so that an alias finds its entity), and whether the note declares
  the name there (`declared`: DECLARES; who a first name alone is across notes, firstnames);
- `relations(a, b, count)`: a < b, the number of entries that mention both among their
  paired entities.

Co-mentions are bounded per entry: an entry pairs at most 20 of its entities, its leading ones
(store/entitypairs.py has the rule, and why), and each mention row says whether its entity is
paired in its entry (`paired`).

`mentions` rows are the truth; everything else follows from them in the database itself:
triggers on `mentions` keep `entities.mentions` and `relations.count`, delete an entity whose
last mention went, and a relation whose last co-mention went. A mention goes with its entry
(ON DELETE CASCADE), so every way an entry leaves (an edit, a note deleted or re-indexed, a
memory deleted or expired, an import replacing one, a checkpoint restored) keeps them exact,
whoever deletes it. First and last seen are read from the mentioning entries' dates when asked,
so they are exact too.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from memoryd.store import entitypairs, entitytypes
from memoryd.store.entityforms import FORMS_OF, forms_of, probes
from memoryd.store.firstnames import claims, people_named, person_like
from memoryd.store.protocol import Connection
from memoryd.text.entities import Mention, canonical_key, extract
from memoryd.text.secretguard import mask_known

# An entry's entities, each with how many rows of `mentions` it gains: made, or counted (and their
# name bettered: a name with capitals over one without; the type: entitytypes, from the
# mentions), for a whole batch of entries in one executemany, then their ids read in one
# statement per 500 keys (issue 20.6: a statement per new entity, its RETURNING, then another per
# entity for its count, were a fifth of what the rows cost at index time)
_UPSERT = (
    "INSERT INTO entities(key, name, type, mentions) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (key) DO UPDATE SET"
    " name = CASE WHEN entities.name = lower(entities.name) THEN excluded.name"
    " ELSE entities.name END, mentions = entities.mentions + excluded.mentions"
)


# An entries' mentions (they had none), and for each pair of entities the number of those entries
# that mention both, one statement per pair for a whole note (its chunks summed), each a batch
# (executemany; the entities' counts: _UPSERT). Deleting is the triggers' work
# (migrations.m006): an entry's mentions also go by cascade.
_INSERT = (
    "INSERT INTO mentions(entity_id, entry_id, line, surface, surface_key, created_at, paired,"
    " declared, type) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# The schemas migrations before the newest write in, by how many of the later columns they have
# (COLUMNS: `paired`, m012 / pg v11; `declared`, m013 / pg v12; `type`, m018 / pg v16): m007 to
# m011 (pg v3 to v10) have none.
COLUMNS = 3
_INSERTS = (
    "INSERT INTO mentions(entity_id, entry_id, line, surface, surface_key, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?)",
    "INSERT INTO mentions(entity_id, entry_id, line, surface, surface_key, created_at, paired)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)",
    "INSERT INTO mentions(entity_id, entry_id, line, surface, surface_key, created_at, paired,"
    " declared) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    _INSERT,
)
# Where a note declares a name (firstnames.claims: who a first name written alone stands for in
# other notes): its title (front matter's or its `# heading`), its file name, front matter
# (aliases, `people:`-style lists), a wikilink's target and alias.
# what gives back a first name two claiming people share (entityclaims.withdraw)
Settle = Callable[[Connection, set[str]], int] | None
DECLARES = frozenset(("title", "heading", "file", "front_matter", "alias", "wikilink"))
_COUNT = "UPDATE entities SET mentions = mentions + ? WHERE id = ?"  # (the tests' old schemas)
_PAIR = (
    "INSERT INTO relations(a, b, count) VALUES (?, ?, ?)"
    " ON CONFLICT (a, b) DO UPDATE SET count = relations.count + excluded.count"
)


def _entity(con: Connection, m: Mention) -> int:
    """The id of one mention's entity (_entities for one key; the tests' older schemas)."""
    ids: dict[str, int] = {}
    _entities(con, {m.key: m}, {m.key: 0}, ids)
    return ids[m.key]


def _entities(
    con: Connection, firsts: dict[str, Mention], counts: dict[str, int], ids: dict[str, int]
) -> None:
    """The entities of many keys (the first mention of each), each made or its name bettered,
    and counted `counts[key]` more mentions, in one executemany (_UPSERT); then the id of each
    into `ids`, read in one statement per 500 keys. A new entity takes its first mention's type;
    _store then reads the type of those its mentions may retype from all their mentions
    (entitytypes)."""
    if not firsts:
        return
    con.executemany(_UPSERT, [(k, m.name, m.type, counts.get(k, 0)) for k, m in firsts.items()])
    keys = list(firsts)
    for at in range(0, len(keys), 500):
        part = keys[at : at + 500]
        for entity_id, key in con.execute(
            f"SELECT id, key FROM entities WHERE key IN ({','.join('?' * len(part))})", part
        ).fetchall():
            ids[str(key)] = int(entity_id)


def _store(
    con: Connection,
    entries: Iterable[tuple[int, float, Iterable[Mention]]],
    ids: dict[str, int],
    columns: int = COLUMNS,
) -> int:
    """Store the mentions of entries that have none: (entry id, its date, its mentions) each.
    `ids` (key -> entity id) is filled with the entities met (each read once for the whole
    batch). One row per entity, line and surface form, declared when any of its mentions is
    (DECLARES). `columns` below COLUMNS: an older schema's rows (a migration's
    backfill_memories)."""
    firsts: dict[str, Mention] = {}
    per: dict[str, int] = {}
    # each entry's rows by (key, line, surface) first: a key is one entity, so the rows and the
    # counts are known before the entities are written, and each is written once, counted
    held: list[tuple[int, float, dict[tuple[str, int, str], list[Any]], set[str]]] = []
    for entry_id, at, mentions in entries:
        seen: dict[tuple[str, int, str], list[Any]] = {}  # -> [declared, its first type]
        for m in mentions:
            firsts.setdefault(m.key, m)
            row = seen.get((m.key, m.line, m.surface))
            if row is None:
                row = seen[m.key, m.line, m.surface] = [0, "other"]
            if m.source in DECLARES:
                row[0] = 1
            if m.type != "other" and row[1] == "other":
                row[1] = m.type
        found: dict[str, int] = {}
        for key, _, _ in seen:
            found[key] = found.get(key, 0) + 1
        for key, n in found.items():
            per[key] = per.get(key, 0) + n
        held.append((entry_id, at, seen, entitypairs.leading(found)))
    _entities(con, firsts, per, ids)
    rows: list[tuple[int, int, int, str, str, float, int, int, str]] = []
    pairs: dict[tuple[int, int], int] = {}
    for entry_id, at, seen, paired in held:
        for (key, line, surface), (declared, kind) in seen.items():
            rows.append(
                (
                    ids[key],
                    entry_id,
                    line,
                    surface,
                    canonical_key(surface) or key,
                    at,
                    int(key in paired),
                    declared,
                    kind,
                )
            )
        ordered = sorted(ids[k] for k in paired)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                pairs[a, b] = pairs.get((a, b), 0) + 1
    if rows:
        width = 6 + columns  # an older schema's rows stop before the columns it lacks
        con.executemany(_INSERTS[columns], [r[:width] for r in rows] if width < 9 else rows)
        con.executemany(_PAIR, [(a, b, n) for (a, b), n in pairs.items()])
        if columns == COLUMNS:
            entitytypes.added(con, ((r[0], r[8], r[7]) for r in rows if r[8] != "other"))
    return len(rows)


def remember(
    con: Connection,
    entry_id: int,
    created_at: float,
    mentions: Iterable[Mention],
    ids: dict[str, int] | None = None,
    columns: int = COLUMNS,
) -> int:
    """Store the mentions of one entry that has none (new, or forgotten), dated `created_at`
    (the entry's); returns how many."""
    return _store(con, [(entry_id, created_at, mentions)], {} if ids is None else ids, columns)


def recount(con: Connection, types: bool = True) -> None:
    """Every count again from the mentions (after mentions were copied in bulk, a migration, or
    to check the triggers' work): each entry's paired entities, the entities' mentions and the
    relations (entitypairs.recount), and with `types` (a schema that has `mentions.type`)
    their types (entitytypes)."""
    entitypairs.recount(con)
    con.execute(
        "UPDATE entities SET mentions ="
        " (SELECT count(*) FROM mentions m WHERE m.entity_id = entities.id)"
    )
    con.execute("DELETE FROM entities WHERE mentions = 0")
    if types:
        entitytypes.retype_all(con)


# a list field's value (`people: [Maya]`) is written like a name in the text; a note's own
# title, and its aliases and file name (keyed to the title), are its own and never re-keyed
_WRITTEN_BY = frozenset(("wikilink", "alias", "name", "mention", "front_matter", "heading"))
_ADOPTED = frozenset(("file", "front_matter"))  # a note's file name and front-matter aliases


def known_as(con: Connection, mentions: Sequence[Mention], columns: int = COLUMNS) -> list[Mention]:
    """`mentions` with each name the store knows as another entity re-keyed to it: a name no
    entity has as its key that is a surface form of exactly one entity, which a note declares
    so (`Caz`, in another note's front-matter `aliases` of Caroline Baker; `[[caroline-baker]]`,
    the file name of the note titled Caroline Baker) or which claims it (firstnames.claims), or
    a one-word name that is the first name of exactly one person of two or three words who
    claims it: a note declares that person (a title, front matter, a wikilink) or several notes
    or memories write the full name. One quote of "John Locke" in one note does not make every
    "John" of other notes the philosopher. (In a list field such as `people:` too; a note's
    own title, aliases and file name stay its own.) Read when the entry is indexed: a name is
    resolved through the entries indexed before it, and adopt_first_names re-keys the first
    names written before their person's claim was indexed. (`columns` below COLUMNS: a
    migration's older schema, which knows no claims: the rule before m013.)"""
    if not mentions:
        return []
    own = {m.key for m in mentions if m.source in ("title", "file")}
    written = {m.key for m in mentions if m.source in _WRITTEN_BY}
    claimed = columns >= 2  # `declared` (m013)
    typed = columns == COLUMNS  # `type` (m018): a person without the first names she took
    form_of = FORMS_OF[claimed]
    first: dict[str, Mention] = {}  # each name's first mention (they share its type)
    for m in mentions:
        if m.key not in own:
            first.setdefault(m.key, m)
    keys = list(first)
    known: set[str] = set()
    for i in range(0, len(keys), 500):  # one round trip for the names that are entities
        part = keys[i : i + 500]
        sql = f"SELECT key FROM entities WHERE key IN ({', '.join('?' * len(part))})"
        known.update(str(r[0]) for r in con.execute(sql, tuple(part)).fetchall())
    seeks = probes(con, [k for k in keys if k not in known]) if claimed else {}
    found: dict[str, tuple[str, str, str]] = {}
    for key, m in first.items():
        if key in known:
            continue
        # a form of one entity, however it was written (a link, a name, code: `billing-svc`,
        # a quoted term: 「東京プロジェクト」), as adopt re-keys it when the note whose file name
        # or alias it is comes afterwards; a name that is no person's is never one of a
        # person's forms (a first name: "Jordan" the place is not Jordan Lee), and only a name
        # written as a person's is a first name. A form counts only where a note declares it
        # or its entity claims it ("John", a form of John Locke only in the note that quotes him)
        rows = (
            forms_of(con, key, seeks.get(key))
            if claimed
            else con.execute(form_of, (key, key)).fetchall()
        )
        if not person_like(key, m.type):
            rows = [r for r in rows if str(r[2]) != "person"]
        # (of several, those: a form of two people's that only one claims, "Lena" written in
        # a note of Lena Fischer's that is no claim of hers, is the other's)
        rows = [r for r in rows if r[4] or claims(con, int(r[3]), str(r[0]))]
        if (  # a first name two people claim is no one's, a form of one of them or not
            len(rows) == 1
            and not rows[0][4]
            and claimed
            and str(rows[0][0]).split(" ")[0] == key
            and [str(p[0]) for p in people_named(con, key, typed=typed)] != [str(rows[0][0])]
        ):
            rows = []
        if (
            not rows
            and person_like(key, m.type)
            and key in written
            and " " not in key
            and key.replace("-", "").isalpha()  # "Jean-Luc" too
        ):
            rows = people_named(con, key, claimed, typed)
        if len(rows) == 1:
            found[key] = (str(rows[0][0]), str(rows[0][1]), str(rows[0][2]))
    if not found:
        return list(mentions)
    out = []
    for m in mentions:
        hit = found.get(m.key)
        if hit is None:
            out.append(m)
        else:
            # the mention keeps its own type: its entity's is read from all its mentions
            # (entitytypes), so that it does not depend on which came first
            out.append(replace(m, key=hit[0], name=hit[1]))
    return out


def adopt_first_names(
    con: Connection, mentions: Iterable[Mention], columns: int = COLUMNS, settle: Settle = None
) -> int:
    """known_as's first-name rule for the entries indexed before: a person of two or three
    words whom these (just stored) mentions name adopts the entity of their first name alone
    ("Caroline", written in notes and memories indexed before "Caroline Baker" was) when that
    name reads as a person or as nothing else (or is a known first name read as a system:
    firstnames.person_like), she claims it (a note declares her, or several write her full
    name: firstnames.claims) and she is the only person of that first name who does.
    Without it the answer would depend on the order entries were indexed in (a daily note read
    before the person's own note). A first name two claiming full names share stays its own,
    whichever came first: one adopted goes back (entityclaims.withdraw) when a second person
    of that first name who claims it comes (`settle`: entityclaims.withdraw, given by the
    callers, as that module builds on this one). Returns how many entries changed."""
    changed, seen, shared = 0, set(), set()
    for m in mentions:
        key = m.key
        # an untyped mention too: whether the name is a person's is the entity's (people_named),
        # as known_as reads it ("[[Ravi Patel]]" says nothing, "Ravi Patel said" elsewhere does)
        if key in seen or m.type not in ("person", "other"):
            continue
        seen.add(key)
        words = key.split(" ")
        first = words[0]
        if not 2 <= len(words) <= 3 or len(first) < 2 or not first.replace("-", "").isalpha():
            continue
        if columns == COLUMNS and con.execute(_HELD_ELSEWHERE, (first, first, key)).fetchall():
            shared.add(first)  # another entity holds the first name: a second claimant?
        bare = con.execute("SELECT type FROM entities WHERE key = ?", (first,)).fetchall()
        if not bare or not person_like(first, str(bare[0][0])):
            continue
        people = people_named(con, first, columns >= 2, columns == COLUMNS)
        if len(people) == 1 and str(people[0][0]) == key:
            changed += adopt(con, first, key, columns)
    for first in sorted(shared):
        people = people_named(con, first)
        if len(people) > 1 and settle is not None:
            changed += settle(con, {str(p[0]) for p in people})
    return changed


# another entity than the first name's and this person's holding it alone (m017's form index)
_HELD_ELSEWHERE = (
    "SELECT 1 FROM mentions m JOIN entities e ON e.id = m.entity_id"
    " WHERE m.surface_key = ? AND e.key NOT IN (?, ?) LIMIT 1"
)


def adopt(con: Connection, old_key: str, new_key: str, columns: int = COLUMNS) -> int:
    """Every entry that mentions the entity `old_key` mentions `new_key` there instead (a note
    indexed later says the two are one: `[[caroline-baker]]` or "Caz" written before the note
    titled Caroline Baker, with `aliases: [Caz]`, was indexed); each such entry's mentions are
    forgotten and remembered again (each still declared or not), so the counts and relations
    stay exact. Returns how many entries changed."""
    old = con.execute("SELECT id FROM entities WHERE key = ?", (old_key,)).fetchall()
    new = con.execute("SELECT name, type FROM entities WHERE key = ?", (new_key,)).fetchall()
    if not old or not new:
        return 0
    name = str(new[0][0])
    rows = con.execute(  # this daemon's (the view `entries`: another workspace's notes keep theirs)
        "SELECT DISTINCT m.entry_id FROM mentions m JOIN entries e ON e.id = m.entry_id"
        " WHERE m.entity_id = ?",
        (old[0][0],),
    ).fetchall()
    entry_ids = [int(r[0]) for r in rows]

    def renamed(k: str, _: str) -> tuple[str, str] | None:  # each keeps its type (entitytypes)
        return (new_key, name) if k == old_key else None

    for entry_id in entry_ids:
        _rewrite(con, entry_id, renamed, columns)
    return len(entry_ids)


def rekey(
    con: Connection,
    entry_ids: Sequence[int],
    key: str,
    read: Callable[[], dict[str, Mention]],
    forms: Sequence[str] = (),
) -> None:
    """The entries' mentions of the entity `key` re-keyed as read again without them
    (entityclaims.withdraw: a claim on their forms went): their mentions are forgotten, then
    `read()` gives the entity each form (a surface_key) stands for now, and they are
    remembered with it."""
    held = {entry_id: _rows(con, entry_id) for entry_id in entry_ids}
    # with `forms` (surface keys) only the entity's mentions under them go before the read, the
    # rest after: what else the entries hold still counts (a note declaring Lena Okafor does)
    entity = con.execute("SELECT id FROM entities WHERE key = ?", (key,)).fetchall()
    hide = sorted(forms) if entity else []
    for at in range(0, len(entry_ids), 500) if hide else ():
        part = entry_ids[at : at + 500]
        con.execute(
            f"DELETE FROM mentions WHERE entry_id IN ({','.join('?' * len(part))})"
            f" AND entity_id = ? AND surface_key IN ({','.join('?' * len(hide))})",
            (*part, entity[0][0], *hide),
        )
    found = read() if hide else {}
    for at in range(0, len(entry_ids), 500):
        part = entry_ids[at : at + 500]
        con.execute(f"DELETE FROM mentions WHERE entry_id IN ({','.join('?' * len(part))})", part)
    found = found if hide else read()

    def change(k: str, surface_key: str) -> tuple[str, str] | None:
        to = found.get(surface_key) if k == key else None
        return None if to is None else (to.key, to.name)

    # remembered in one batch (_store: a statement per table, not per entry)
    _store(con, [_put_back(e, rows, change) for e, rows in held.items() if rows], {})


def _rewrite(
    con: Connection,
    entry_id: int,
    change: Callable[[str, str], tuple[str, str] | None],
    columns: int = COLUMNS,
) -> None:
    """The entry's mentions forgotten and remembered again, each keyed as `change(key,
    surface_key)` says (key, name), or as it was (None); each keeps its type."""
    rows = _rows(con, entry_id, columns)
    if rows:
        forget(con, entry_id)
        _store(con, [_put_back(entry_id, rows, change)], {}, columns)


def _rows(con: Connection, entry_id: int, columns: int = COLUMNS) -> list[tuple[Any, ...]]:
    declared = "m.declared" if columns >= 2 else "0"
    kind = "m.type" if columns >= 3 else "n.type"  # each mention's own (m018)
    return [
        tuple(r)
        for r in con.execute(
            f"SELECT n.key, n.name, {kind}, m.line, m.surface, m.created_at, m.surface_key,"
            f" {declared} FROM mentions m JOIN entities n ON n.id = m.entity_id"
            " WHERE m.entry_id = ?",
            (entry_id,),
        ).fetchall()
    ]


def _put_back(
    entry_id: int,
    rows: Sequence[tuple[Any, ...]],
    change: Callable[[str, str], tuple[str, str] | None],
) -> tuple[int, float, list[Mention]]:
    """An entry's mentions (_rows) as _store takes them again, each still declared or not,
    with its line, surface and date (the entry's, which each carries), keyed as `change`
    says."""
    found = []
    for key, n, t, line, surface, _, surface_key, was_declared in rows:
        to = change(str(key), str(surface_key))
        k2, n2 = to if to is not None else (str(key), str(n))
        source = "wikilink" if was_declared else "name"
        found.append(Mention(k2, n2, str(t), int(line), str(surface), source))
    return entry_id, float(rows[0][5]), found


def forget(con: Connection, entry_id: int) -> None:
    con.execute("DELETE FROM mentions WHERE entry_id = ?", (entry_id,))


def memory_mentions(content: str, tags: Iterable[str]) -> list[Mention]:
    """A memory's mentions; a credential it holds (stored with allow_secrets, or in warn mode)
    is blanked first, so a password or token never becomes an entity. A note's are blanked
    too, on the lines where a name found may be one (text/entities.extract_document: the whole
    note's scan would add 7-14% to extraction's CPU at index time, issue 20.6)."""
    return extract(mask_known(content), 1, tags=tags)


def index_memory(
    con: Connection, entry_id: int, content: str, tags: Iterable[str], settle: Settle = None
) -> None:
    """A memory's mentions, after it was added or its text or tags changed."""
    forget(con, entry_id)
    rows = con.execute("SELECT created_at FROM entries WHERE id = ?", (entry_id,)).fetchall()
    if rows:
        found = known_as(con, memory_mentions(content, tags))
        remember(con, entry_id, float(rows[0][0]), found)
        adopt_first_names(con, found, settle=settle)


def reindex_memory(con: Connection, entry_id: int, settle: Settle = None) -> None:
    """index_memory from the stored row (after an update)."""
    rows = con.execute(
        "SELECT content, tags FROM entries WHERE id = ? AND kind = 'memory'", (entry_id,)
    ).fetchall()
    if rows:
        index_memory(con, entry_id, str(rows[0][0]), _tags(rows[0][1]), settle)


def index_document(
    con: Connection, path: str, mentions: Sequence[Mention], settle: Settle = None
) -> int:
    """Give each chunk of the note at `path` the mentions on its lines (the note was just
    stored: its chunks are new rows). Overlapping chunks both get a mention on a shared line;
    the first chunk also gets those above it (front matter: aliases, people, tags). A line that
    several chunks share at their edges may be cut between them (a paragraph written as one
    line longer than a chunk, cut between words): a mention there goes to the chunks whose text
    holds it as written (all of them when none does), not to every piece of the line: a line of
    400 hosts cut into 13 chunks gave each chunk all 400 (5,200 rows, each chunk "mentioning"
    hosts it does not hold, for the entity filter, the entity weight and the page alike)."""
    if not mentions:
        return 0
    ordered = sorted(known_as(con, mentions), key=lambda m: m.line)
    lines = [m.line for m in ordered]
    rows = con.execute(
        "SELECT e.id, e.start_line, e.end_line, e.created_at, e.content FROM entries e"
        " JOIN documents d ON d.id = e.document_id WHERE d.path = ? ORDER BY e.seq",
        (path,),
    ).fetchall()
    holders = _edge_holders(rows, ordered)
    chunks = []
    for i, (entry_id, start, end, created_at, _) in enumerate(rows):
        lo = 0 if i == 0 else bisect_left(lines, start)
        found = ordered[lo : bisect_right(lines, end)]
        if holders:
            found = [m for m in found if i in holders.get((m.line, m.surface), (i,))]
        chunks.append((int(entry_id), float(created_at), found))
    n = _store(con, chunks, {})
    for m in ordered:  # its file name and aliases, written before it was indexed, name it
        if m.source in _ADOPTED and (old := canonical_key(m.surface)) != m.key:
            adopt(con, old, m.key)
    adopt_first_names(con, ordered, settle=settle)
    return n


def _edge_holders(
    chunks: Sequence[Sequence[Any]], mentions: Sequence[Mention]
) -> dict[tuple[int, str], tuple[int, ...]]:
    """{(line, surface): the chunks (by position) whose text holds it} for the mentions on a
    line that two or more chunks share at an edge (a chunk's first or last line), where some
    do not hold it and at least one does. Chunks come in order: their starts and ends ascend."""
    starts = [int(c[1]) for c in chunks]
    edges = {int(c[1]) for c in chunks} | {int(c[2]) for c in chunks}
    out: dict[tuple[int, str], tuple[int, ...]] = {}
    for m in mentions:
        if m.line not in edges or (m.line, m.surface) in out:
            continue
        at = bisect_right(starts, m.line) - 1  # the last chunk starting at or above the line
        covering = []
        while at >= 0 and int(chunks[at][2]) >= m.line:
            covering.append(at)
            at -= 1
        if len(covering) < 2:
            continue
        holding = tuple(i for i in covering if m.surface in str(chunks[i][4]))
        if holding and len(holding) < len(covering):
            out[m.line, m.surface] = holding
    return out


def reindex_document(
    con: Connection, path: str, mentions: Sequence[Mention], settle: Settle = None
) -> int:
    """The note at `path` keeps its chunks but its mentions are read again (it was moved: its
    new file name is a form of its title, the old one no longer)."""
    for (entry_id,) in con.execute(
        "SELECT e.id FROM entries e JOIN documents d ON d.id = e.document_id WHERE d.path = ?",
        (path,),
    ).fetchall():
        forget(con, int(entry_id))
    return index_document(con, path, mentions, settle)


def _tags(raw: Any) -> list[str]:
    try:
        tags = json.loads(raw or "[]")
    except ValueError:
        return []
    return [str(t) for t in tags] if isinstance(tags, list) else []
