"""A claim withdrawn: the names other entries wrote that an entity took through a note's
declaration or its claim (store/entities.py, known_as, adopt and adopt_first_names;
store/firstnames.py, claims) go back to what they stand for without it, when the entry that
declared it, or one that wrote the full name, is edited, moved, deleted or expires.

Taking is done when an entry is indexed (known_as, adopt_first_names). Without its undo, a note
titled Lena Fischer deleted left every "Lena" of the other notes keyed to Lena Fischer until a
reindex (stop 38), and "Caz", the alias of a note whose front matter no longer says so, stayed
Caroline Baker's. Both backends; the doors that remove an entry's mentions call `held_by`
before and `withdraw` after (store/entries.py, store/lifecycle.py), or call them through
index_note, reindex_note and reindex_memory (index/indexer.py, store/entries.py).

Bounded: only the entities the leaving entries declared or wrote in full are looked at, and of
those only the mentions of a form (not the full name) in entries that do not write the full
name themselves."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memoryd.store import entities
from memoryd.store.firstnames import people_named
from memoryd.store.protocol import Connection
from memoryd.text.entities import Mention

# the entities an entry's mentions declare (entities.DECLARES) or write in full: those whose
# claim, or a form a note declares, may rest on it
_HELD = (
    "SELECT DISTINCT n.key FROM mentions m JOIN entities n ON n.id = m.entity_id"
    " WHERE m.entry_id IN ({}) AND (m.declared = 1 OR m.surface_key = n.key)"
)
# the forms (not the full name) under which this workspace's entries mention the entity
_FORMS = (
    "SELECT DISTINCT m.surface_key FROM mentions m JOIN entries e ON e.id = m.entry_id"
    " WHERE m.entity_id = ? AND m.surface_key != ?"
)
# each entry that mentions the entity under one form, with its note (a memory: none)
_TAKEN = (
    "SELECT DISTINCT m.entry_id, e.document_id, m.surface FROM mentions m"
    " JOIN entries e ON e.id = m.entry_id WHERE m.entity_id = ? AND m.surface_key = ?"
)
# whether a note (its chunks) or a memory writes the full name itself: its forms are its own
_WRITES_IN_NOTE = (
    "SELECT 1 FROM mentions m JOIN entries e ON e.id = m.entry_id"
    " WHERE e.document_id = ? AND m.entity_id = ? AND m.surface_key = ? LIMIT 1"
)
_WRITES_IN_ENTRY = (
    "SELECT 1 FROM mentions m WHERE m.entry_id = ? AND m.entity_id = ? AND m.surface_key = ?"
    " LIMIT 1"
)


def held_by(con: Connection, entry_sql: str, params: tuple[object, ...]) -> set[str]:
    """The keys of the entities that the entries `entry_sql` selects (by id) declare or write
    in full: read before their mentions go."""
    return {str(r[0]) for r in con.execute(_HELD.format(entry_sql), params).fetchall()}


def held_by_note(con: Connection, path: str) -> set[str]:
    """held_by for the chunks of the note at `path`."""
    return held_by(
        con,
        "SELECT e.id FROM entries e JOIN documents d ON d.id = e.document_id WHERE d.path = ?",
        (path,),
    )


def index_note(con: Connection, path: str, mentions: Sequence[Mention], held: set[str]) -> int:
    """entities.index_document for a note just stored again, whose chunks before held `held`
    (held_by_note, read before they went): then the claims that no longer hold withdrawn."""
    n = entities.index_document(con, path, mentions)
    withdraw(con, held)
    return n


def reindex_note(con: Connection, path: str, mentions: Sequence[Mention]) -> int:
    """entities.reindex_document (a note moved), the claims its old file name made withdrawn."""
    held = held_by_note(con, path)
    n = entities.reindex_document(con, path, mentions)
    withdraw(con, held)
    return n


def reindex_memory(con: Connection, entry_id: int) -> None:
    """entities.reindex_memory (its text or tags changed), the claims its old text made
    withdrawn."""
    held = held_by(con, "?", (entry_id,))
    entities.reindex_memory(con, entry_id)
    withdraw(con, held)


def withdraw(con: Connection, keys: Iterable[str]) -> int:
    """After mentions went: each name another entry wrote that one of `keys` took through a
    declaration or a claim that no longer holds is keyed to what known_as reads it as now
    (itself, or another person who alone claims it), and a first name several full names
    shared goes to the one left claiming it (adopt_first_names' rule). Returns how many
    entries changed."""
    changed = 0
    for key in sorted(keys):
        rows = con.execute("SELECT id, type FROM entities WHERE key = ?", (key,)).fetchall()
        if rows:
            changed += _release(con, int(rows[0][0]), key, str(rows[0][1]))
        words = key.split(" ")
        if 2 <= len(words) <= 3 and words[0].replace("-", "").isalpha():
            bare = con.execute("SELECT 1 FROM entities WHERE key = ?", (words[0],)).fetchall()
            if bare:
                people = people_named(con, words[0])
                if len(people) == 1:
                    changed += entities.adopt(con, words[0], str(people[0][0]))
    return changed


def _release(con: Connection, entity_id: int, key: str, kind: str) -> int:
    """The entity's forms that other entries wrote, each read again as known_as reads it now;
    each entry whose forms go elsewhere rewritten once (its entity may be made anew)."""
    moved: dict[int, dict[str, Mention]] = {}
    for (form,) in con.execute(_FORMS, (entity_id, key)).fetchall():
        form = str(form)
        others = [
            (int(entry_id), str(surface))
            for entry_id, doc, surface in con.execute(_TAKEN, (entity_id, form)).fetchall()
            if not con.execute(
                _WRITES_IN_NOTE if doc is not None else _WRITES_IN_ENTRY,
                (doc if doc is not None else entry_id, entity_id, key),
            ).fetchall()
        ]
        if not others:
            continue
        guess = "person" if kind in ("person", "other") else kind
        surface = others[0][1]
        now = entities.known_as(con, [Mention(form, surface, guess, 1, surface, "name")])[0]
        if now.key != key:
            for entry_id, _ in others:
                moved.setdefault(entry_id, {})[form] = now
    for entry_id, forms in sorted(moved.items()):
        entities.rekey(con, entry_id, key, forms)
    return len(moved)
