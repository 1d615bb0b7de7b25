"""Schema migrations: small named steps, applied in order, recorded in PRAGMA user_version.

Add a step by appending a function to MIGRATIONS; never edit a released step.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import apsw

from memoryd.logsetup import get_logger

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


MIGRATIONS: list[Callable[[apsw.Connection], None]] = [m001_initial, m002_lifecycle, m005_links]


def schema_version(con: apsw.Connection) -> int:
    return int(con.execute("PRAGMA user_version").fetchall()[0][0])


def migrate(con: apsw.Connection, db_path: Path | None = None) -> list[str]:
    """Apply pending migrations, one transaction each; snapshot a non-empty database first."""
    current = schema_version(con)
    if current > len(MIGRATIONS):
        from memoryd.errors import StoreError

        raise StoreError(
            f"database schema version {current} is newer than this memoryd knows "
            f"({len(MIGRATIONS)}); upgrade memoryd or use another data_dir"
        )
    applied: list[str] = []
    if current < len(MIGRATIONS) and current > 0 and db_path is not None:
        backup = db_path.with_name(f"{db_path.name}.pre-v{current + 1}.bak")
        if not backup.exists():
            con.execute("VACUUM INTO ?", (str(backup),))
            log.info("migration snapshot", path=str(backup))
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
        log.info("migration applied", step=step.__name__, version=version)
    return applied
