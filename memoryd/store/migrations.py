"""Schema migrations: small named steps, applied in order, recorded in PRAGMA user_version.

Add a step by appending a function to MIGRATIONS; never edit a released step.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import apsw

from memoryd.core.errors import StoreError, StoreTooNew
from memoryd.core.logsetup import get_logger
from memoryd.store import db, entities, entitypairs, entitytypes, notetext, tables, tokenizer
from memoryd.store.db import log_applied
from memoryd.store.entitybackfill import backfill_memories, reindex_memories
from memoryd.store.entityforms import FORM_PROBE_INDEX
from memoryd.store.entitystage import ddl as pending_ddl
from memoryd.store.protocol import one

log = get_logger("memoryd.store")


def m001_initial(con: apsw.Connection) -> None:
    con.execute(
        """
        CREATE TABLE documents(
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            sha256 TEXT NOT NULL,
            size INTEGER NOT NULL,
            mtime REAL NOT NULL,
            indexed_at REAL NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE entries(
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('memory', 'chunk')),
            namespace TEXT NOT NULL DEFAULT 'default',
            content TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            type TEXT NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]',
            source TEXT,
            context TEXT,
            confidence REAL NOT NULL DEFAULT 1.0,
            importance INTEGER NOT NULL DEFAULT 5,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            expires_at REAL,
            access_count INTEGER NOT NULL DEFAULT 0,
            last_accessed_at REAL,
            document_id INTEGER REFERENCES documents(id) ON DELETE CASCADE,
            seq INTEGER,
            start_line INTEGER,
            end_line INTEGER,
            heading_path TEXT
        );
        CREATE UNIQUE INDEX entries_memory_hash ON entries(namespace, content_hash)
            WHERE kind = 'memory';
        CREATE INDEX entries_document ON entries(document_id, seq);
        CREATE INDEX entries_hash ON entries(content_hash);
        CREATE INDEX entries_expires ON entries(expires_at) WHERE expires_at IS NOT NULL;
        CREATE INDEX entries_kind_created ON entries(kind, created_at);
        CREATE VIEW memories AS SELECT * FROM entries WHERE kind = 'memory';
        CREATE VIEW chunks AS SELECT * FROM entries WHERE kind = 'chunk';

        CREATE VIRTUAL TABLE entries_fts USING fts5(
            content, heading_path, tags,
            content = 'entries', content_rowid = 'id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE VIRTUAL TABLE entries_vocab USING fts5vocab(entries_fts, 'row');
        CREATE TRIGGER entries_fts_ai AFTER INSERT ON entries BEGIN
            INSERT INTO entries_fts(rowid, content, heading_path, tags)
            VALUES (new.id, new.content, new.heading_path, new.tags);
        END;
        CREATE TRIGGER entries_fts_ad AFTER DELETE ON entries BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, content, heading_path, tags)
            VALUES ('delete', old.id, old.content, old.heading_path, old.tags);
        END;
        CREATE TRIGGER entries_fts_au AFTER UPDATE OF content, heading_path, tags ON entries BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, content, heading_path, tags)
            VALUES ('delete', old.id, old.content, old.heading_path, old.tags);
            INSERT INTO entries_fts(rowid, content, heading_path, tags)
            VALUES (new.id, new.content, new.heading_path, new.tags);
        END;

        CREATE TABLE access_log(
            id INTEGER PRIMARY KEY,
            ts REAL NOT NULL,
            query TEXT NOT NULL,
            entry_id INTEGER NOT NULL,
            rank INTEGER NOT NULL
        );
        CREATE INDEX access_log_entry ON access_log(entry_id);
        CREATE INDEX access_log_ts ON access_log(ts);

        CREATE TABLE models(
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            dim INTEGER NOT NULL,
            created_at REAL NOT NULL,
            active INTEGER NOT NULL DEFAULT 0,
            complete INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE embeddings(
            id INTEGER PRIMARY KEY,
            model_id INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
            content_hash TEXT NOT NULL,
            created_at REAL NOT NULL,
            orphaned_at REAL,
            UNIQUE(model_id, content_hash)
        );

        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """
    )


def m002_lifecycle(con: apsw.Connection) -> None:
    """Tiers, feedback counts, trigger phrases and the change history of memories."""
    con.execute(
        """
        ALTER TABLE entries ADD COLUMN tier TEXT NOT NULL DEFAULT 'normal';
        ALTER TABLE entries ADD COLUMN useful_count INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE entries ADD COLUMN validation_count INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX entries_tier ON entries(tier) WHERE kind = 'memory';
        CREATE TABLE triggers(
            entry_id INTEGER NOT NULL REFERENCES entries(id) ON DELETE CASCADE,
            phrase TEXT NOT NULL,
            norm TEXT NOT NULL,
            PRIMARY KEY (entry_id, norm)
        );
        CREATE TABLE history(
            id INTEGER PRIMARY KEY,
            entry_id INTEGER NOT NULL,
            ts REAL NOT NULL,
            field TEXT NOT NULL,
            old TEXT,
            new TEXT
        );
        CREATE INDEX history_entry ON history(entry_id, ts);
        """
    )


# The columns m003 created (store/tables.py: the one list both schemas and the copy read)
_ENTRIES_COLUMNS = tables.create_columns(tables.ENTRIES, "sqlite")


def m003_stable_ids(con: apsw.Connection) -> None:
    """Ids are never reused: `entries` is rebuilt with AUTOINCREMENT, and the sequence starts
    above every id ever seen (rows, the access log, history, triggers), so an id an agent
    stored keeps meaning that memory or nothing. Rows keep their ids, so the FTS index (keyed
    by rowid) stays valid; its triggers are recreated because dropping a table drops them.
    Runs with foreign keys off (see migrate): dropping `entries` must not cascade to triggers."""
    cols = ", ".join(c.name for c in tables.ENTRIES if c.added_by is None)
    con.execute(f"CREATE TABLE entries_new({_ENTRIES_COLUMNS})")
    con.execute(f"INSERT INTO entries_new({cols}) SELECT {cols} FROM entries")
    high = max(
        int(one(con.execute(f"SELECT coalesce(max({c}), 0) FROM {t}"))[0])
        for t, c in (
            ("entries", "id"),
            ("access_log", "entry_id"),
            ("history", "entry_id"),
            ("triggers", "entry_id"),
        )
    )
    con.execute(
        """
        DROP VIEW IF EXISTS memories;
        DROP VIEW IF EXISTS chunks;
        DROP TABLE entries;
        ALTER TABLE entries_new RENAME TO entries;
        CREATE UNIQUE INDEX entries_memory_hash ON entries(namespace, content_hash)
            WHERE kind = 'memory';
        CREATE INDEX entries_document ON entries(document_id, seq);
        CREATE INDEX entries_hash ON entries(content_hash);
        CREATE INDEX entries_expires ON entries(expires_at) WHERE expires_at IS NOT NULL;
        CREATE INDEX entries_kind_created ON entries(kind, created_at);
        CREATE INDEX entries_tier ON entries(tier) WHERE kind = 'memory';
        CREATE VIEW memories AS SELECT * FROM entries WHERE kind = 'memory';
        CREATE VIEW chunks AS SELECT * FROM entries WHERE kind = 'chunk';
        CREATE TRIGGER entries_fts_ai AFTER INSERT ON entries BEGIN
            INSERT INTO entries_fts(rowid, content, heading_path, tags)
            VALUES (new.id, new.content, new.heading_path, new.tags);
        END;
        CREATE TRIGGER entries_fts_ad AFTER DELETE ON entries BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, content, heading_path, tags)
            VALUES ('delete', old.id, old.content, old.heading_path, old.tags);
        END;
        CREATE TRIGGER entries_fts_au AFTER UPDATE OF content, heading_path, tags ON entries BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, content, heading_path, tags)
            VALUES ('delete', old.id, old.content, old.heading_path, old.tags);
            INSERT INTO entries_fts(rowid, content, heading_path, tags)
            VALUES (new.id, new.content, new.heading_path, new.tags);
        END;
        """
    )
    con.execute("DELETE FROM sqlite_sequence WHERE name = 'entries'")
    con.execute("INSERT INTO sqlite_sequence(name, seq) VALUES ('entries', ?)", (high,))
    # Times out of the range ISO 8601 can show (imports used to let 1e20 in) broke every list.
    for col in ("created_at", "updated_at", "expires_at", "last_accessed_at"):
        con.execute(
            f"UPDATE entries SET {col} = max(0, min({col}, 253402300799.0))"
            f" WHERE {col} > 253402300799.0 OR {col} < 0"
        )
    # FTS5 keeps deleted tokens in its segments until a merge unless secure-delete is on.
    con.execute("INSERT INTO entries_fts(entries_fts, rank) VALUES ('secure-delete', 1)")
    bad = con.execute("PRAGMA foreign_key_check").fetchall()
    if bad:
        raise RuntimeError(f"m003: foreign key check failed: {bad[:5]}")


_TOKENIZE_OPTION = re.compile(r"tokenize\s*=\s*('[^']*'|\"[^\"]*\")", re.IGNORECASE)
# the tokenizer m004 made (m016 gives it combining marks and Thai, Lao, Khmer and Myanmar runs)
M004_TOKENIZE = "cjk porter unicode61 remove_diacritics 2"


def m004_cjk_tokenizer(con: apsw.Connection) -> None:
    """Chinese, Japanese and Korean words become searchable: entries_fts is recreated with the
    `cjk` tokenizer (store/tokenizer.py: the same porter/unicode61 tokens, plus bigrams of CJK
    runs) and rebuilt from `entries`. Only the tokenize option of the table's own definition
    changes (columns and external content stay as the earlier steps made them); the triggers
    and the fts5vocab table name entries_fts and so keep working on the new table."""
    try:
        con.fts5_tokenizer(tokenizer.NAME, list(M004_TOKENIZE.split()[1:]))
    except apsw.Error as exc:
        raise StoreError(
            f"migration m004 needs the FTS5 tokenizer {tokenizer.NAME!r}: open the database"
            " with memoryd.store.db.connect()"
        ) from exc
    sql = str(
        one(
            con.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'entries_fts'"
            )
        )[0]
    )
    option = f"tokenize = '{M004_TOKENIZE}'"
    if _TOKENIZE_OPTION.search(sql):
        sql = _TOKENIZE_OPTION.sub(option, sql, count=1)
    else:
        sql = sql.rstrip().rstrip(")") + f", {option})"
    con.execute("DROP TABLE entries_fts")
    con.execute(sql)
    con.execute("INSERT INTO entries_fts(entries_fts) VALUES ('rebuild')")


def m005_links(con: apsw.Connection) -> None:
    """Links between notes ([[wikilinks]], markdown links to .md files), kept as written and
    resolved when asked. Every file is indexed again at the next reconcile (sha256 cleared), so
    that existing notes get their links, inline tags, front matter dates and the new chunking."""
    con.execute(
        """
        CREATE TABLE links(
            id INTEGER PRIMARY KEY,
            document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            target TEXT NOT NULL,
            target_key TEXT NOT NULL,
            heading TEXT,
            alias TEXT,
            line INTEGER NOT NULL,
            embed INTEGER NOT NULL DEFAULT 0,
            kind TEXT NOT NULL CHECK (kind IN ('wiki', 'markdown'))
        );
        CREATE INDEX links_document ON links(document_id);
        CREATE INDEX links_target_key ON links(target_key);
        UPDATE documents SET sha256 = '', mtime = -1;
        """
    )


# The triggers on deleting a mention, made by m006 (m007 drops them with the old table and makes
# them again on the new one).
_MENTION_TRIGGERS = """
CREATE TRIGGER mentions_ad AFTER DELETE ON mentions
WHEN NOT EXISTS (SELECT 1 FROM mentions WHERE entry_id = old.entry_id
                 AND entity_id = old.entity_id) BEGIN
    UPDATE relations SET count = count - 1
        WHERE (a, b) IN (SELECT min(old.entity_id, o.entity_id),
                                max(old.entity_id, o.entity_id)
                         FROM (SELECT DISTINCT entity_id FROM mentions
                               WHERE entry_id = old.entry_id) AS o);
    DELETE FROM relations WHERE count <= 0 AND (a = old.entity_id OR b = old.entity_id);
END;
CREATE TRIGGER mentions_ad_count AFTER DELETE ON mentions BEGIN
    UPDATE entities SET mentions = mentions - 1 WHERE id = old.entity_id;
    DELETE FROM entities WHERE id = old.entity_id AND mentions <= 0;
END;
"""


def m006_entities(con: apsw.Connection) -> None:
    """Entities, their mentions and co-mentions (store/entities.py). Adding an entry's
    mentions counts them (entities.remember); the triggers on deleting one keep the counts and
    remove an entity or a relation with its last mention, however the mention went (its entry
    deleted, edited, expired, re-indexed). Memories are read by m007 (it dates the mentions);
    notes at the next reconcile (sha256 cleared, as m005 did)."""
    con.execute(
        f"""
        CREATE TABLE entities(
            {tables.create_columns(tables.ENTITIES, "sqlite", " " * 12)}
        );
        CREATE TABLE mentions(
            {tables.create_columns(tables.MENTIONS, "sqlite", " " * 12)},
            PRIMARY KEY (entity_id, entry_id, line, surface)
        ) WITHOUT ROWID;
        CREATE INDEX mentions_entry ON mentions(entry_id, entity_id);
        CREATE INDEX mentions_surface ON mentions(surface_key);
        CREATE TABLE relations(
            {tables.create_columns(tables.RELATIONS, "sqlite", " " * 12)},
            PRIMARY KEY (a, b)
        ) WITHOUT ROWID;
        CREATE INDEX relations_b ON relations(b);
        {_MENTION_TRIGGERS}
        UPDATE documents SET sha256 = '', mtime = -1;
        """
    )
    # the memories' mentions are read by m007, which gave mentions their dates


def m007_entity_dates(con: apsw.Connection) -> None:
    """Each mention carries its entry's date, in its key: an entity page reads the newest
    mentions, and first and last seen, off the index instead of every mention (issue 20.6). A
    trigger keeps the date equal to the entry's when that changes (front-matter dates). The
    co-mentions are indexed by count from both ends, for the strongest relations."""
    cols = ", ".join(c.name for c in tables.MENTIONS if c.added_by is None)
    con.execute(
        f"""
        CREATE TABLE mentions_v7(
            {tables.create_columns(tables.MENTIONS, "sqlite", " " * 12)},
            {tables.column(tables.MENTIONS, "created_at").ddl("sqlite")},
            PRIMARY KEY (entity_id, created_at, entry_id, line, surface)
        ) WITHOUT ROWID;
        INSERT INTO mentions_v7({cols}, created_at)
            SELECT {", ".join("m." + c for c in cols.split(", "))}, e.created_at
            FROM mentions m JOIN entries e ON e.id = m.entry_id;
        DROP TABLE mentions;
        ALTER TABLE mentions_v7 RENAME TO mentions;
        CREATE INDEX mentions_entry ON mentions(entry_id, entity_id);
        CREATE INDEX mentions_surface ON mentions(surface_key);
        {_MENTION_TRIGGERS}
        CREATE TRIGGER entries_au_created AFTER UPDATE OF created_at ON entries
        WHEN new.created_at IS NOT old.created_at BEGIN
            UPDATE mentions SET created_at = new.created_at WHERE entry_id = new.id;
        END;
        DROP INDEX relations_b;
        CREATE INDEX relations_a_count ON relations(a, count);
        CREATE INDEX relations_b_count ON relations(b, count);
        """
    )
    backfill_memories(con)  # a store older than m006 (its memories have none yet)


def m008_note_text(con: apsw.Connection) -> None:
    """One FTS5 row per note (store/notetext.py): BM25 over the whole note beside its best
    chunk's, in hybrid answers (issue 19.2). Filled from the chunks already indexed."""
    con.execute(notetext.SCHEMA)
    notetext.fill(con, props=False)


def m009_note_text_expiry(con: apsw.Connection) -> None:
    """A note's whole-note row goes with its last chunk (an expired note keeps its document),
    and the rows of notes that expired before this are dropped."""
    con.execute(notetext.LAST_CHUNK_TRIGGER)
    con.execute(
        "DELETE FROM notes_fts WHERE rowid NOT IN"
        " (SELECT document_id FROM entries WHERE document_id IS NOT NULL)"
    )


def m010_read_notes_again(con: apsw.Connection) -> None:
    """Every note is read again at the next reconcile (sha256 cleared, as m005 and m006 did),
    so an upgraded store holds what a new one would: notes in Latin-1 (Windows-1252) decoded,
    front matter with one odd value kept, a note of front matter alone as its one chunk, a
    symlinked folder under its real path, names written decomposed (NFD) whole. Chunks whose text
    is unchanged keep their vectors (they are keyed by the text's hash): nothing is embedded
    twice."""
    con.execute("UPDATE documents SET sha256 = '', mtime = -1")


def m011_note_titles(con: apsw.Connection) -> None:
    """Read every note again (as m010): a note that writes no `# Title` files its chunks under
    its title (text/notehead.py), which the keyword index then holds. Nothing is embedded."""
    m010_read_notes_again(con)


def m012_paired(con: apsw.Connection) -> None:
    """Co-mentions bounded per entry (issue 20; store/entitypairs.py): each mention says whether
    its entry pairs its entity, the delete trigger undoes only the pairs counted, and the
    relations are counted again, which removes those a list wrote before (400 hosts in one
    chunk: 79,800 rows)."""
    con.execute(
        f"ALTER TABLE mentions ADD COLUMN {tables.column(tables.MENTIONS, 'paired').ddl('sqlite')}"
    )
    con.execute(entitypairs.SQLITE_TRIGGER)
    entities.recount(con, types=False)


def m013_declared(con: apsw.Connection) -> None:
    """Each mention says whether its note declares the name there (a title, a file name, front
    matter, a wikilink: store/firstnames.py's claims, who a first name written alone stands for
    across notes). Unknown for the mentions already stored, so every note is read again at the
    next reconcile (as m010; nothing is embedded) and every memory's mentions are read again
    now: a first name one quoted full name took ("John", 1,756 times, for "John Locke") is its
    own again."""
    column = tables.column(tables.MENTIONS, "declared")
    con.execute(f"ALTER TABLE mentions ADD COLUMN {column.ddl('sqlite')}")
    m010_read_notes_again(con)
    reindex_memories(con)


def m014_log_marks(con: apsw.Connection) -> None:
    """The daily-log markers each file holds (store/logmarks.py): a memory's lines are found in
    a log moved out of the log folder, whose own lines the index now leaves out as the log's.
    The files whose indexed text holds a marker (such a log, read as text until now; a line a
    person edited) are read again at the next reconcile, which fills their rows."""
    con.execute(
        f"""
        CREATE TABLE log_marks(
            {tables.create_columns(tables.LOG_MARKS, "sqlite", " " * 12)}
        );
        CREATE INDEX log_marks_document ON log_marks(document_id);
        CREATE INDEX log_marks_memory ON log_marks(memory_id);
        """
    )
    con.execute(READ_MARKED_AGAIN)


# the documents with a chunk holding a daily-log marker: read again at the next reconcile
READ_MARKED_AGAIN = (
    "UPDATE documents SET sha256 = '', mtime = -1 WHERE id IN (SELECT document_id FROM entries"
    " WHERE kind = 'chunk' AND content LIKE '%<!-- m:%')"
)


def m015_front_matter_values(con: apsw.Connection) -> None:
    """A note's front-matter values in its chunks' keyword rows (stop 38: `status: draft` makes
    the note found by `draft`, as rg finds it; notehead.props): the `props` column, the keyword
    triggers that index it with the tags (tables.keyword_tags; a row without it is indexed as
    before, so the rows already there are deleted with the values they were indexed with), and
    every note read again (as m010), which fills it. Nothing is embedded: a chunk's text is
    unchanged."""
    props = tables.column(tables.ENTRIES, "props")
    con.execute(f"ALTER TABLE entries ADD COLUMN {props.ddl('sqlite')}")
    new, old = tables.keyword_tags("new"), tables.keyword_tags("old")
    con.execute(
        f"""
        DROP TRIGGER entries_fts_ai;
        DROP TRIGGER entries_fts_ad;
        DROP TRIGGER entries_fts_au;
        CREATE TRIGGER entries_fts_ai AFTER INSERT ON entries BEGIN
            INSERT INTO entries_fts(rowid, content, heading_path, tags)
            VALUES (new.id, new.content, new.heading_path, {new});
        END;
        CREATE TRIGGER entries_fts_ad AFTER DELETE ON entries BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, content, heading_path, tags)
            VALUES ('delete', old.id, old.content, old.heading_path, {old});
        END;
        CREATE TRIGGER entries_fts_au AFTER UPDATE OF content, heading_path, tags, props
        ON entries BEGIN
            INSERT INTO entries_fts(entries_fts, rowid, content, heading_path, tags)
            VALUES ('delete', old.id, old.content, old.heading_path, {old});
            INSERT INTO entries_fts(rowid, content, heading_path, tags)
            VALUES (new.id, new.content, new.heading_path, {new});
        END;
        """
    )
    m010_read_notes_again(con)


M016_OPTION = tokenizer.OPTION.replace(f" {tokenizer.SYMBOLS} ", " ")  # (m021: symbols)


def m016_marks_and_unspaced_scripts(con: apsw.Connection) -> None:
    """A word keeps its combining marks (Hindi, Thai, Arabic with tashkeel were indexed cut at
    each vowel sign, so a piece found every word that began with it), Thai, Lao, Khmer and
    Myanmar runs become bigrams as CJK ones (a word inside a sentence is found), a token written
    decomposed is indexed composed (store/tokenizer.py); tags and heading paths written with
    \\u escapes are written as text (the index read "u0e10" for a Thai heading:
    tables.json_list). entries_fts and notes_fts are made again with the new option and filled
    from `entries` (the rows the triggers write: tags with front-matter values). Nothing is
    embedded or read again; the fts5vocab table and the triggers name the tables, not their
    definitions."""
    tables.unescape_lists(con, "entries")  # (the triggers keep entries_fts meanwhile)
    _fts_again(con, M016_OPTION)


def _fts_again(con: apsw.Connection, option: str) -> None:
    """entries_fts and notes_fts made again with this tokenize= option, filled from `entries`
    (the rows the triggers write: tags with front-matter values)."""
    sql = str(one(con.execute("SELECT sql FROM sqlite_master WHERE name = 'entries_fts'"))[0])
    con.execute("DROP TABLE entries_fts")
    con.execute(_TOKENIZE_OPTION.sub(lambda _: option, sql, count=1))
    con.execute(
        "INSERT INTO entries_fts(rowid, content, heading_path, tags)"
        f" SELECT id, content, heading_path, {tables.keyword_tags('entries')} FROM entries"
    )
    con.execute("DROP TABLE notes_fts")
    con.execute(notetext.TABLE.replace(tokenizer.OPTION, option))
    notetext.fill(con)


def m017_form_probe(con: apsw.Connection) -> None:
    """Which entity a form names, in two index seeks (store/entityforms.py, FORM_PROBE_INDEX)."""
    con.execute(FORM_PROBE_INDEX)


def m018_mention_types(con: apsw.Connection) -> None:
    """An entity's type read from its current mentions' (store/entitytypes.py says why): the
    memories' mentions read again now; a note's mentions take their entity's type until m019
    has every note read again."""
    con.execute(entitytypes.SQLITE_STEP)
    entitytypes.retype_all(con)
    reindex_memories(con)


def m019_types_read_from_the_notes(con: apsw.Connection) -> None:
    """Every note read again at the next reconcile (as m010), its mentions typed as its text
    types them (after m018 alone they kept their entity's type until the note changed: "Lena
    Fischer" a person in a note that only links her); nothing is embedded again."""
    m010_read_notes_again(con)


def m020_german_nouns(con: apsw.Connection) -> None:
    """Entities read again from every note (at the next reconcile, as m010) and memory (now):
    on a German line a lone capitalised word is a name only with a sign (text/entity_names.py),
    so the nouns a German note made entities of (Datenbank, Server) go; nothing is embedded."""
    m010_read_notes_again(con)
    reindex_memories(con)


def m021_symbols_as_words(con: apsw.Connection) -> None:
    """A symbol is a word of its own (text/symbolchars.py: an emoji, an arrow, a currency sign,
    one token a grapheme), as `rg -w` finds it; it was a separator ("🚀" found nothing). The
    keyword tables are made again with `cjk symbols ...`; nothing is embedded or read again."""
    _fts_again(con, tokenizer.OPTION)


def m022_entity_pending(con: apsw.Connection) -> None:
    """The notes whose entities are still to be read (store/entitystage.py): a note indexed
    writes its keyword rows and a row here; a background stage reads its entities."""
    for sql in pending_ddl("sqlite"):
        con.execute(sql)


# every step above, in the order of its number
MIGRATIONS: list[Callable[[apsw.Connection], None]] = [
    f for name, f in sorted(globals().items()) if re.fullmatch(r"m\d{3}_\w+", name)
]


def schema_version(con: apsw.Connection) -> int:
    return int(one(con.execute("PRAGMA user_version"))[0])


def migrate(con: apsw.Connection, db_path: Path | None = None) -> list[str]:
    """Apply pending migrations, one transaction each; snapshot a non-empty database first."""
    current = schema_version(con)
    if current > len(MIGRATIONS):
        raise StoreTooNew(db.too_new(current, len(MIGRATIONS), db_path))
    applied: list[str] = []
    if current < len(MIGRATIONS) and current > 0 and db_path is not None:
        # made again when one of that name exists: it is the copy of an earlier upgrade, and
        # the store went back to it since (docs/service.md#upgrading) and has gained memories
        # it lacks; the copy replaces it only complete (db.vacuum_into)
        backup = db.backup_path(db_path, current + 1)
        replaced = backup.exists()
        db.copy_before_upgrade(con, backup, db_path)
        log.info("migration snapshot", path=str(backup), replaced=replaced)
    # Steps may rebuild a table (m003): foreign key actions must not fire while they do. The
    # pragma is a no-op inside a transaction, so it is switched around the steps.
    fk = int(one(con.execute("PRAGMA foreign_keys"))[0])
    if current < len(MIGRATIONS):
        con.execute("PRAGMA foreign_keys = OFF")
    try:
        for version, step in enumerate(MIGRATIONS[current:], start=current + 1):
            con.execute("BEGIN IMMEDIATE")
            try:
                step(con)
                con.execute(f"PRAGMA user_version = {int(version)}")
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
            applied.append(step.__name__)
    finally:
        con.execute(f"PRAGMA foreign_keys = {'ON' if fk else 'OFF'}")
        log_applied(current, applied)
    return applied
