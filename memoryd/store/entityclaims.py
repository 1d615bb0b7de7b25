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
from typing import Any

from memoryd.store import entities
from memoryd.store.firstnames import people_named, person_like, written_in_full
from memoryd.store.protocol import Connection
from memoryd.text.entities import Mention

# the entities an entry's mentions declare (entities.DECLARES) or write in full: those whose
# claim, or a form a note declares, may rest on it
_HELD = (
    "SELECT DISTINCT n.key FROM mentions m JOIN entities n ON n.id = m.entity_id"
    " WHERE m.entry_id IN ({}) AND (m.declared = 1 OR m.surface_key = n.key)"
)
# the forms (not the full name) under which this workspace's entries mention the entity
# (any workspace's, on a shared PostgreSQL store: _TAKEN reads this one's)
_FORMS = "SELECT DISTINCT surface_key FROM mentions WHERE entity_id = ? AND surface_key != ?"
# each entry that mentions the entity under one form, with its note (a memory: none)
_TAKEN = (
    "SELECT m.entry_id, e.document_id, m.surface, m.declared FROM mentions m"
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
# the notes (their chunks) and memories that write the full name (when many forms are asked)
_WRITERS_OF = (
    "SELECT DISTINCT m.entry_id, e.document_id FROM mentions m"
    " JOIN entries e ON e.id = m.entry_id WHERE m.entity_id = ? AND m.surface_key = ?"
)
# whether a note (its chunks) or a memory writes in full another name whose first or last word
# is the form `?` (substr: as firstnames' look-up, exact on PostgreSQL's collations)
_NAMESAKE = (
    " JOIN entities n ON n.id = m.entity_id WHERE {} = ? AND m.surface_key = n.key"
    " AND n.key != ? AND (substr(n.key, 1, ?) = ? OR substr(n.key, length(n.key) - ? + 1) = ?)"
    " LIMIT 1"
)
_NAMESAKE_IN_NOTE = "SELECT 1 FROM mentions m JOIN entries e ON e.id = m.entry_id" + (
    _NAMESAKE.format("e.document_id")
)
_NAMESAKE_IN_ENTRY = "SELECT 1 FROM mentions m" + _NAMESAKE.format("m.entry_id")
# whether a note (its chunks) or a memory declares the full name (a title, `[[Lena Fischer]]`)
# or, a note, names it by its file name (`?`: the note titled so; not a link to that name)
_DECLARES_IN_NOTE = (
    "SELECT 1 FROM mentions m JOIN entries e ON e.id = m.entry_id WHERE e.document_id = ?"
    " AND m.entity_id = ? AND m.declared = 1 AND (m.surface_key = ? OR m.surface = ?"
    " AND NOT EXISTS (SELECT 1 FROM links l WHERE l.document_id = e.document_id"
    " AND l.line = m.line)) LIMIT 1"
)
_DECLARES_IN_ENTRY = _WRITES_IN_ENTRY.replace(" LIMIT 1", " AND m.declared = 1 LIMIT 1")
_DECLARED_FULL = (
    "SELECT 1 FROM mentions m JOIN entries e ON e.id = m.entry_id"
    " WHERE m.entity_id = ? AND m.surface_key = ? AND m.declared = 1 LIMIT 1"
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
    settle = _Settle()
    n = entities.index_document(con, path, mentions, settle)
    settle.own_names(con, _NOTE_CHUNKS, (path,), mentions)
    withdraw(con, held)
    return n


def reindex_note(con: Connection, path: str, mentions: Sequence[Mention]) -> int:
    """entities.reindex_document (a note moved), the claims its old file name made withdrawn."""
    held = held_by_note(con, path)
    settle = _Settle()
    n = entities.reindex_document(con, path, mentions, settle)
    settle.own_names(con, _NOTE_CHUNKS, (path,), mentions)
    withdraw(con, held)
    return n


# whether the note's chunks have mentions (index_pending)
_ANY_IN_NOTE = (
    "SELECT 1 FROM mentions m JOIN entries e ON e.id = m.entry_id"
    " JOIN documents d ON d.id = e.document_id WHERE d.path = ? LIMIT 1"
)


def index_pending(con: Connection, path: str, mentions: Sequence[Mention], held: set[str]) -> int:
    """index_note for a note whose entities waited (store/entitystage.py): its chunks may have
    mentions already (a move since), so they are read again; `held` what its earlier text held."""
    settle = _Settle()
    if con.execute(_ANY_IN_NOTE, (path,)).fetchall():  # moved since: its chunks kept theirs
        held = held | held_by_note(con, path)
        n = entities.reindex_document(con, path, mentions, settle)
    else:  # new chunks (an edit): nothing to forget
        n = entities.index_document(con, path, mentions, settle)
    settle.own_names(con, _NOTE_CHUNKS, (path,), mentions)
    withdraw(con, held)
    return n


def index_memory(con: Connection, entry_id: int, content: str, tags: Sequence[str]) -> None:
    """entities.index_memory (a memory added or imported), its own first names settled too."""
    settle = _Settle()
    entities.index_memory(con, entry_id, content, tags, settle)
    if settle.keys:
        found = entities.memory_mentions(content, tags)
        settle.own_names(con, "?", (entry_id,), found)


def reindex_memory(con: Connection, entry_id: int) -> None:
    """entities.reindex_memory (its text or tags changed), the claims its old text made
    withdrawn."""
    held = held_by(con, "?", (entry_id,))
    settle = _Settle()
    entities.reindex_memory(con, entry_id, settle)
    if settle.keys:
        rows = con.execute("SELECT content, tags FROM entries WHERE id = ?", (entry_id,))
        for content, tags in rows.fetchall():
            found = entities.memory_mentions(str(content), entities._tags(tags))
            settle.own_names(con, "?", (entry_id,), found)
    withdraw(con, held)


_NOTE_CHUNKS = (
    "SELECT e.id FROM entries e JOIN documents d ON d.id = e.document_id WHERE d.path = ?"
)
# the entries (of those `{}` selects) whose first name `?` alone is keyed to the person `?`
_OWN_FIRST = (
    "SELECT DISTINCT m.entry_id FROM mentions m JOIN entities n ON n.id = m.entity_id"
    " WHERE m.entry_id IN ({}) AND n.key = ? AND m.surface_key = ?"
)


class _Settle:
    """adopt_first_names' `settle` (withdraw) for one entry being indexed, which keeps the
    people it settled: the entry's own first names were read (known_as) before its mentions,
    which made the second claimant, were stored, so withdraw's re-reading, which leaves the
    names of an entry that writes the full name as they are, misses them. A note declaring
    Lena Okafor that writes "Lena Fischer" and "Lena" alone kept that "Lena" Lena Fischer's
    where a rebuild, with both claimants, leaves it no one's."""

    def __init__(self) -> None:
        self.keys: set[str] = set()

    def __call__(self, con: Connection, keys: set[str]) -> int:
        self.keys |= keys
        return withdraw(con, keys)

    def own_names(
        self, con: Connection, entry_sql: str, params: tuple[object, ...], raw: Sequence[Mention]
    ) -> int:
        """The entry's first names alone that known_as (not the extraction, which keys a first
        name within one text: text/entities._part_names) gave to a settled person, read again
        now that every claim is stored. `raw`: the entry's mentions as extracted."""
        alone = {m.key for m in raw if " " not in m.key}
        changed = 0
        for key in sorted(self.keys):
            first = key.split(" ")[0]
            if first not in alone:
                continue
            sql = _OWN_FIRST.format(entry_sql)
            ids = [int(r[0]) for r in con.execute(sql, (*params, key, first)).fetchall()]
            if not ids:
                continue
            m = next(m for m in raw if m.key == first)
            again = Mention(first, m.name, m.type, 1, m.surface, "name")

            def read(first: str = first, again: Mention = again) -> dict[str, Mention]:
                return {first: entities.known_as(con, [again])[0]}

            entities.rekey(con, ids, key, read, [first])
            changed += len(ids)
        return changed


def withdraw(con: Connection, keys: Iterable[str]) -> int:
    """After mentions went: each name another entry wrote that one of `keys` took through a
    declaration or a claim that no longer holds is keyed to what known_as reads it as now
    (itself, or another person who alone claims it), and a first name several full names
    shared goes to the one left claiming it (adopt_first_names' rule). Returns how many
    entries changed."""
    changed, keys = 0, sorted(keys)
    firsts = {
        k.split(" ")[0]
        for k in keys
        if 2 <= len(k.split(" ")) <= 3 and k.split(" ")[0].replace("-", "").isalpha()
    }
    found: dict[str, tuple[int, str]] = {}
    for at in range(0, len(keys) + len(firsts), 500):  # which are entities: one statement
        part = (keys + sorted(firsts))[at : at + 500]
        sql = f"SELECT key, id, type FROM entities WHERE key IN ({','.join('?' * len(part))})"
        for k, entity_id, kind in con.execute(sql, tuple(part)).fetchall():
            found[str(k)] = (int(entity_id), str(kind))
    for key in keys:
        if key in found:
            changed += _release(con, found[key][0], key, found[key][1])
    for first in sorted(firsts & set(found)):  # a first name two claimed, one now
        if not person_like(first, found[first][1]):  # "Jordan" the place is no one's
            continue
        people = people_named(con, first)
        if len(people) == 1:
            changed += entities.adopt(con, first, str(people[0][0]))
    return changed


def _release(con: Connection, entity_id: int, key: str, kind: str) -> int:
    """The entity's forms that other entries wrote (entries that do not write its full name),
    read again as known_as reads them without those entries (their own mentions of a form
    would vouch for it: `[[caroline-baker]]` kept Caroline Baker's after her note was renamed,
    as the link is declared), when one no longer stands on what the rest of the store says."""
    written = [str(r[0]) for r in con.execute(_FORMS, (entity_id, key)).fetchall()]
    if not written:  # most entities: no form but the full name
        return 0
    claimed = _claims_alone(con, entity_id, key)
    # a person's first name stands while she claims it on her own and no other person of that
    # first name claims it too (people_named: then it is no one's, whichever came first)
    first = key.split(" ")[0] if kind in ("person", "other") else None
    people = [str(p[0]) for p in people_named(con, str(first))] if first in written else []
    alone = claimed and (first not in written or people == [key])
    written = [f for f in written if not (alone and f == first)]
    if not written:
        return 0
    taken = {f: con.execute(_TAKEN, (entity_id, f)).fetchall() for f in written}
    writes: dict[tuple[str, int], bool] = {}  # (note or memory, id) -> writes the full name
    if sum(map(len, taken.values())) > 50:  # many: every note and memory that does, at once
        for entry_id, doc in con.execute(_WRITERS_OF, (entity_id, key)).fetchall():
            writes[("note", doc) if doc is not None else ("memory", int(entry_id))] = True

    words = {key.split(" ")[0], key.split(" ")[-1]} if first is not None else set()
    asked: dict[tuple[str, int, str], bool] = {}  # (note or memory, id, question) -> answer
    stems: dict[tuple[str, int], str] = {}

    def ask(at: tuple[str, int], what: str, sql: str, params: tuple[object, ...]) -> bool:
        if (*at, what) not in asked:
            asked[(*at, what)] = bool(con.execute(sql, (at[1], *params)).fetchall())
        return asked[(*at, what)]

    def own(entry_id: int, doc: Any, form: str, declared: int) -> bool:
        """Whether the note or memory keyed this form to the entity from its own text, as its
        extraction does again in a rebuild, not from the store (known_as, adopt): it writes
        the full name, and the form is a first or last word of it that no other name it
        writes in full shares (text/entities._part_names: "Lena" beside "Lena Fischer" alone,
        not beside "Lena Okafor" too), or a form it declares beside its declaration of the
        full name (`aliases: [Caz]` under the title; not `[[john-locke]]`, her old file
        name, in a note that only writes her name)."""
        at = ("note", doc) if doc is not None else ("memory", entry_id)
        if at not in writes:
            sql = _WRITES_IN_NOTE if doc is not None else _WRITES_IN_ENTRY
            writes[at] = bool(con.execute(sql, (at[1], entity_id, key)).fetchall())
        if not writes[at]:
            return False
        note = doc is not None
        if form in words and not declared:
            sql = _NAMESAKE_IN_NOTE if note else _NAMESAKE_IN_ENTRY
            n = len(form) + 1
            return not ask(at, form, sql, (key, n, f"{form} ", n, f" {form}"))
        if not declared:
            return True
        if not note:
            return ask(at, "", _DECLARES_IN_ENTRY, (entity_id, key))
        if at not in stems:  # its file name, keyed to its title (extract_document)
            path = con.execute("SELECT path FROM documents WHERE id = ?", (doc,)).fetchall()
            stems[at] = str(path[0][0]).rsplit("/", 1)[-1].removesuffix(".md") if path else ""
        return ask(at, "", _DECLARES_IN_NOTE, (entity_id, key, stems[at]))

    forms: dict[str, list[tuple[int, str]]] = {}
    owned: set[str] = set()  # forms the notes that write the full name write too
    stands: set[str] = set()  # forms those notes declare (`aliases: [Caz]` beside the title)
    for form in written:
        for entry_id, doc, surface, declared in taken[form]:
            if not own(int(entry_id), doc, form, int(declared)):
                forms.setdefault(form, []).append((int(entry_id), str(surface)))
            else:
                (stands if declared else owned).add(form)
    # (a form her own notes write stands, but her first name only while she alone claims it)
    loose = [
        f
        for f in forms
        if f not in stands and not (claimed and f in owned and (alone or f != first))
    ]
    if not loose:
        return 0
    entry_ids = sorted({e for f in loose for e, _ in forms[f]})
    guess = "person" if kind in ("person", "other") else kind

    def read() -> dict[str, Mention]:
        return {
            f: entities.known_as(
                con, [Mention(f, forms[f][0][1], guess, 1, forms[f][0][1], "name")]
            )[0]
            for f in loose
        }

    entities.rekey(con, entry_ids, key, read, loose)
    return len(entry_ids)


def _claims_alone(con: Connection, entity_id: int, key: str) -> bool:
    """firstnames.claims on what no other entry's form says: a declaration of the full name
    (a title, a front-matter value, `[[Lena Fischer]]`) or CLAIM_WRITERS that write it."""
    rows = con.execute(_DECLARED_FULL, (entity_id, key)).fetchall()
    return bool(rows) or written_in_full(con, entity_id, key)
