//! The rules database's schema, versioned with `PRAGMA user_version` like memory's: ordered
//! migrations, each in its own transaction; a file from a newer Switchboard is refused.
//!
//! - `files`: each indexed file with what reindexing compares (modification time, size,
//!   SHA-256, the sectioning code's version).
//! - `rules`: one row per rule; `source` is the file's absolute path, or `import:NAME` for
//!   imported data; `attribution` names a row of `attributions`.
//! - `rules_fts`: FTS5 over title, heading path and text (external content, kept by
//!   triggers), porter-stemmed.

use rusqlite::Connection;

/// Each migration takes the schema from version `index` to `index + 1`.
pub const MIGRATIONS: [&str; 1] = ["
    CREATE TABLE files (
        path TEXT PRIMARY KEY,
        root TEXT NOT NULL,
        relative TEXT NOT NULL,
        mtime_ns INTEGER NOT NULL,
        size INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        parser INTEGER NOT NULL,
        indexed_at INTEGER NOT NULL
    );
    CREATE TABLE attributions (
        key TEXT PRIMARY KEY,
        license TEXT,
        text TEXT NOT NULL
    );
    CREATE TABLE rules (
        n INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        system TEXT NOT NULL,
        title TEXT NOT NULL,
        headings TEXT NOT NULL,
        body TEXT NOT NULL,
        source TEXT NOT NULL,
        source_file TEXT NOT NULL,
        attribution TEXT,
        ordinal INTEGER NOT NULL
    );
    CREATE INDEX rules_source ON rules(source);
    CREATE INDEX rules_system ON rules(system);
    CREATE VIRTUAL TABLE rules_fts USING fts5(
        title, headings, body, content='rules', content_rowid='n', tokenize='porter unicode61'
    );
    CREATE TRIGGER rules_ai AFTER INSERT ON rules BEGIN
        INSERT INTO rules_fts(rowid, title, headings, body)
        VALUES (new.n, new.title, new.headings, new.body);
    END;
    CREATE TRIGGER rules_ad AFTER DELETE ON rules BEGIN
        INSERT INTO rules_fts(rules_fts, rowid, title, headings, body)
        VALUES ('delete', old.n, old.title, old.headings, old.body);
    END;
    CREATE TRIGGER rules_au AFTER UPDATE ON rules BEGIN
        INSERT INTO rules_fts(rules_fts, rowid, title, headings, body)
        VALUES ('delete', old.n, old.title, old.headings, old.body);
        INSERT INTO rules_fts(rowid, title, headings, body)
        VALUES (new.n, new.title, new.headings, new.body);
    END;
    "];

/// Brings the schema to the newest version.
pub fn migrate(conn: &mut Connection) -> Result<(), String> {
    crate::sqlite::migrate(conn, &MIGRATIONS, MIGRATIONS.len(), "rules database")
}
