//! The memory database's schema, versioned with `PRAGMA user_version` and built by ordered
//! migrations, each in its own transaction: an older file is brought up to date when opened,
//! and a file from a newer Switchboard is refused rather than damaged.

use rusqlite::Connection;

/// Each migration takes the schema from version `index` to `index + 1`.
pub const MIGRATIONS: [&str; 2] = [
    // 1: entities, facts (observations are facts about an entity), full-text index of facts.
    "
    CREATE TABLE entities (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        entity_type TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE TABLE facts (
        id INTEGER PRIMARY KEY,
        text TEXT NOT NULL,
        subject_id INTEGER REFERENCES entities(id) ON DELETE CASCADE,
        source TEXT,
        recorded_at INTEGER NOT NULL
    );
    CREATE INDEX facts_subject ON facts(subject_id);
    CREATE VIRTUAL TABLE facts_fts USING fts5(
        text, content='facts', content_rowid='id', tokenize='porter unicode61'
    );
    CREATE TRIGGER facts_ai AFTER INSERT ON facts BEGIN
        INSERT INTO facts_fts(rowid, text) VALUES (new.id, new.text);
    END;
    CREATE TRIGGER facts_ad AFTER DELETE ON facts BEGIN
        INSERT INTO facts_fts(facts_fts, rowid, text) VALUES ('delete', old.id, old.text);
    END;
    CREATE TRIGGER facts_au AFTER UPDATE ON facts BEGIN
        INSERT INTO facts_fts(facts_fts, rowid, text) VALUES ('delete', old.id, old.text);
        INSERT INTO facts_fts(rowid, text) VALUES (new.id, new.text);
    END;
    ",
    // 2: relations between entities, and session summaries with their full-text index.
    "
    CREATE TABLE relations (
        id INTEGER PRIMARY KEY,
        from_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
        to_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
        relation_type TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (from_id, to_id, relation_type)
    );
    CREATE TABLE summaries (
        session_id TEXT NOT NULL UNIQUE,
        summary TEXT NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE VIRTUAL TABLE summaries_fts USING fts5(
        summary, content='summaries', content_rowid='rowid', tokenize='porter unicode61'
    );
    CREATE TRIGGER summaries_ai AFTER INSERT ON summaries BEGIN
        INSERT INTO summaries_fts(rowid, summary) VALUES (new.rowid, new.summary);
    END;
    CREATE TRIGGER summaries_ad AFTER DELETE ON summaries BEGIN
        INSERT INTO summaries_fts(summaries_fts, rowid, summary) VALUES ('delete', old.rowid, old.summary);
    END;
    CREATE TRIGGER summaries_au AFTER UPDATE ON summaries BEGIN
        INSERT INTO summaries_fts(summaries_fts, rowid, summary) VALUES ('delete', old.rowid, old.summary);
        INSERT INTO summaries_fts(rowid, summary) VALUES (new.rowid, new.summary);
    END;
    ",
];

/// Brings the schema to `target` (normally every migration).
pub fn migrate(conn: &mut Connection, target: usize) -> Result<(), String> {
    crate::sqlite::migrate(conn, &MIGRATIONS, target, "database")
}
