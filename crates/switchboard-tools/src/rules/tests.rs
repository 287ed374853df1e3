//! The rules provider on real files and a real SQLite index: sectioning and stable ids, the
//! system of a file, JSON records, ranking and the system filter, full rules with their
//! attribution, incremental reindexing, bad files and the declared tools (the SRD import is
//! in `srd_tests`).

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::json;

use super::*;

pub(super) fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

pub(super) fn settings(dir: &Path) -> RulesSettings {
    RulesSettings {
        dirs: vec![dir.join("rules")],
        database: dir.join("db/rules.db"),
    }
}

pub(super) async fn call(
    rules: &Rules,
    tool: &str,
    arguments: Value,
) -> Result<ToolOutcome, ToolError> {
    rules
        .call(
            tool,
            arguments.as_object().cloned().unwrap_or_default(),
            &CallContext::default(),
        )
        .await
}

pub(super) async fn structured(rules: &Rules, tool: &str, arguments: Value) -> Value {
    call(rules, tool, arguments)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e:?}"))
        .structured_content
        .expect("structured")
}

pub(super) async fn ids(rules: &Rules, query: &str, system: Option<&str>) -> Vec<String> {
    let found = structured(
        rules,
        "search_rules",
        json!({"query": query, "system": system}),
    )
    .await;
    found["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_owned())
        .collect()
}

const COMBAT: &str = "Combat happens in rounds.

# Actions

## Attack

Make one melee or ranged attack.

```
# not a heading
```

## Dash

You gain extra movement for the current turn.

# Actions

### Attack

A second attack section, deeper.
";

#[test]
fn markdown_sections_have_stable_ids_and_heading_paths() {
    let parsed = parse::parse(parse::Kind::Markdown, COMBAT, "combat").expect("parse");
    let fragments: Vec<Option<&str>> = parsed
        .sections
        .iter()
        .map(|s| s.fragment.as_deref())
        .collect();
    assert_eq!(
        fragments,
        [
            None,
            Some("actions/attack"),
            Some("actions/dash"),
            Some("actions-2/attack")
        ],
        "a section with no text of its own is no rule; a repeated path gets -2"
    );
    assert_eq!(parsed.sections[0].title, "combat");
    assert_eq!(parsed.sections[1].headings, ["Actions", "Attack"]);
    assert!(
        parsed.sections[1].body.contains("# not a heading"),
        "fenced code is text"
    );
    assert_eq!(
        parse::slug("Opportunity Attacks (Optional)!"),
        "opportunity-attacks-optional"
    );

    let text = "Intro line.\n\nCOMBAT\n\nRoll initiative.\n\nRESTING\n\nShort and long rests.\n";
    let sections = parse::parse(parse::Kind::Text, text, "basics")
        .expect("text")
        .sections;
    let titles: Vec<&str> = sections.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(titles, ["basics", "COMBAT", "RESTING"]);
    assert_eq!(sections[2].fragment.as_deref(), Some("resting"));
}

#[tokio::test]
async fn systems_ids_json_records_and_get_rule() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("rules");
    write(&root, "dnd5e/combat.md", COMBAT);
    write(
        &root,
        "house.md",
        "---\nsystem: homebrew\nattribution: \"By the Tuesday group\"\nlicense: CC0\n---\n# Crits\n\nA natural 20 doubles all dice.\n",
    );
    write(&root, "notes.txt", "Bring snacks.\n");
    write(
        &root,
        "pf2e/flank.md",
        "---\nsystem: pf2e\n---\n# Flanking\n\nOff-guard to both allies.\n",
    );
    write(
        &root,
        "dnd5e/monsters.json",
        r#"[{"name": "Goblin", "index": "goblin", "desc": ["Small and nimble."], "hit_points": 7, "size": "Small"},
        {"title": "Ogre", "text": "Large and strong."}, {"hp": 3}]"#,
    );
    write(
        &root,
        "lore/places.json",
        r#"{"system": "setting", "attribution": "Map by Ana", "entries": [{"name": "Oakvale", "description": "A river town."}]}"#,
    );
    let rules = Rules::open(settings(dir.path())).expect("open");
    let report = rules.open_report();
    assert_eq!(report.added.len(), 6, "{report:?}");
    assert_eq!(
        report.problems.len(),
        1,
        "the record without a name: {report:?}"
    );
    assert!(
        report.problems[0]
            .reason
            .contains("record 2 has no \"name\" or \"title\"")
    );

    assert_eq!(
        ids(&rules, "crits", None).await,
        ["homebrew/house.md#crits"]
    );
    assert_eq!(ids(&rules, "snacks", None).await, ["general/notes.txt"]);
    assert_eq!(
        ids(&rules, "flanking", None).await,
        ["pf2e/flank.md#flanking"],
        "no pf2e/pf2e/"
    );
    assert_eq!(
        ids(&rules, "goblin", None).await,
        ["dnd5e/monsters.json#goblin"]
    );
    assert_eq!(
        ids(&rules, "ogre", None).await,
        ["dnd5e/monsters.json#ogre"]
    );
    assert_eq!(
        ids(&rules, "oakvale", None).await,
        ["setting/lore/places.json#oakvale"],
        "the file's own system; its directory stays in the path"
    );

    let goblin = structured(
        &rules,
        "get_rule",
        json!({"id": "dnd5e/monsters.json#goblin"}),
    )
    .await;
    assert_eq!(
        goblin["text"],
        "Small and nimble.\n\nHit points: 7\nSize: Small"
    );
    let attack = structured(
        &rules,
        "get_rule",
        json!({"id": "dnd5e/combat.md#actions/attack"}),
    )
    .await;
    assert_eq!(attack["heading_path"], json!(["Actions", "Attack"]));
    assert_eq!(attack["source_file"], "dnd5e/combat.md");
    assert!(
        attack["text"]
            .as_str()
            .expect("text")
            .starts_with("Make one melee or ranged attack.")
    );
    assert_eq!(attack["attribution"], Value::Null);
    let crits = call(&rules, "get_rule", json!({"id": "homebrew/house.md#crits"}))
        .await
        .expect("crits");
    let s = crits.structured_content.as_ref().expect("s");
    assert_eq!(
        s["attribution"],
        json!({"license": "CC0", "text": "By the Tuesday group"})
    );
    assert!(crits.text_content().contains("By the Tuesday group"));
    assert!(
        s["path"]
            .as_str()
            .expect("path")
            .ends_with("rules/house.md")
    );

    let missing = call(&rules, "get_rule", json!({"id": "dnd5e/combat.md#nope"}))
        .await
        .expect_err("missing");
    assert!(
        missing.0.contains("no rule with id 'dnd5e/combat.md#nope'"),
        "{}",
        missing.0
    );
    assert!(
        missing.0.contains("dnd5e/combat.md#actions/attack"),
        "suggests the file's rules: {}",
        missing.0
    );
}

#[tokio::test]
async fn title_hits_rank_first_and_system_filters() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("rules");
    write(
        &root,
        "dnd5e/a.md",
        "# Movement\n\nYou can move, and you may try grappling a creature, shoving it or climbing onto a bigger one while you move.\n",
    );
    write(
        &root,
        "dnd5e/b.md",
        "# Grappling\n\nUse the Attack action to seize a creature.\n",
    );
    write(
        &root,
        "pf2e/c.md",
        "# Grapple a foe\n\nAn Athletics check against Fortitude.\n",
    );
    let rules = Rules::open(settings(dir.path())).expect("open");
    assert_eq!(
        ids(&rules, "grappling", None).await,
        [
            "dnd5e/b.md#grappling",
            "pf2e/c.md#grapple-a-foe",
            "dnd5e/a.md#movement"
        ]
    );
    assert_eq!(
        ids(&rules, "grappling", Some("pf2e")).await,
        ["pf2e/c.md#grapple-a-foe"]
    );
    write(
        &root,
        "dnd5e/spells.md",
        "# Fireball\n\nA bright streak blossoms into an explosion of flame, a long description of the spell and everything it does to every creature in the area, its damage and its saving throw.\n\n# Wand of Fireballs\n\nCast fireball from the wand; each fireball costs a charge.\n",
    );
    rules.reindex().expect("reindex");
    assert_eq!(
        ids(&rules, "fireball", None).await[0],
        "dnd5e/spells.md#fireball",
        "the exact title first"
    );
    let hit = &structured(&rules, "search_rules", json!({"query": "seize"})).await["rules"][0];
    assert_eq!(
        hit["snippet"],
        "Use the Attack action to [seize] a creature."
    );
    assert_eq!(hit["heading_path"], json!(["Grappling"]));
    assert!(hit["score"].as_f64().expect("score") > 0.0);
    let none = call(
        &rules,
        "search_rules",
        json!({"query": "grapple", "system": "gurps"}),
    )
    .await
    .expect("none");
    assert!(
        none.text_content().contains("systems: dnd5e, pf2e"),
        "{}",
        none.text_content()
    );
    for hostile in ["foo\"bar OR (", "NEAR(", "*", ")))", "col:x"] {
        assert!(
            call(&rules, "search_rules", json!({"query": hostile}))
                .await
                .is_ok(),
            "{hostile}"
        );
    }
    for (arguments, expected) in [
        (json!({}), "'query' must be a non-empty string"),
        (
            json!({"query": "x", "system": 3}),
            "'system' must be a string",
        ),
        (
            json!({"query": "x", "limit": 0}),
            "'limit' must be a whole number",
        ),
    ] {
        let error = call(&rules, "search_rules", arguments)
            .await
            .expect_err("bad");
        assert!(error.0.contains(expected), "{}", error.0);
    }
}

#[tokio::test]
async fn reindex_re_sections_only_what_changed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("rules");
    write(&root, "edit.md", "# Old\n\nOld text.\n");
    write(&root, "gone.md", "# Gone\n\nGoing away.\n");
    write(&root, "touch.md", "# Same\n\nSame text.\n");
    write(&root, "keep.md", "# Keep\n\nKept as is.\n");
    let rules = Rules::open(settings(dir.path())).expect("open");
    assert_eq!(rules.open_report().rules, 4);
    let keep_before = rules.store().files().expect("files");

    write(&root, "edit.md", "# New heading\n\nNew, longer text.\n");
    fs::remove_file(root.join("gone.md")).expect("rm");
    write(&root, "sub/new.md", "# Fresh\n\nJust added.\n");
    let touched = fs::File::options()
        .write(true)
        .open(root.join("touch.md"))
        .expect("open");
    touched
        .set_modified(SystemTime::now() + Duration::from_secs(60))
        .expect("mtime");
    write(&root, "bad.json", "[{\"name\": \"x\",");

    let report = structured(&rules, "reindex", json!({})).await;
    let path = |name: &str| root.join(name).display().to_string();
    assert_eq!(report["files"]["added"], json!([path("sub/new.md")]));
    assert_eq!(report["files"]["changed"], json!([path("edit.md")]));
    assert_eq!(report["files"]["removed"], json!([path("gone.md")]));
    assert_eq!(
        report["unchanged"], 2,
        "touched but the same bytes: not re-sectioned"
    );
    assert_eq!(report["rules"], 4);
    assert_eq!(report["problems"][0]["path"], path("bad.json"));
    assert!(
        report["problems"][0]["reason"]
            .as_str()
            .expect("reason")
            .starts_with("invalid JSON")
    );

    let after = rules.store().files().expect("files");
    let keep = path("keep.md");
    assert_eq!(after[&keep], keep_before[&keep]);
    assert_ne!(
        after[&path("touch.md")].mtime_ns,
        keep_before[&path("touch.md")].mtime_ns,
        "new time remembered"
    );
    assert_eq!(
        ids(&rules, "new heading", None).await,
        ["general/edit.md#new-heading"]
    );
    assert!(ids(&rules, "going", None).await.is_empty());
    assert_eq!(ids(&rules, "fresh", None).await, ["sub/new.md#fresh"]);

    let again = rules.reindex().expect("again");
    assert_eq!(
        (
            again.added.len(),
            again.changed.len(),
            again.removed.len(),
            again.unchanged
        ),
        (0, 0, 0, 4)
    );
    assert_eq!(
        again.problems.len(),
        1,
        "the bad file is reported every time until fixed"
    );

    drop(rules);
    let reopened = Rules::open(settings(dir.path())).expect("reopen");
    assert_eq!(
        reopened.open_report().unchanged,
        4,
        "the index survives a restart"
    );
}

/// A directory that is gone (unmounted, mistyped) is not an empty one: the rules indexed from
/// it stay, and the report says why it was not read.
#[test]
fn a_missing_directory_keeps_its_indexed_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("rules");
    write(&root, "keep.md", "# Keep\n\nKept as is.\n");
    let rules = Rules::open(settings(dir.path())).expect("open");
    assert_eq!(rules.open_report().rules, 1);
    drop(rules);
    fs::rename(&root, dir.path().join("elsewhere")).expect("move the directory away");
    let reopened = Rules::open(settings(dir.path())).expect("reopen");
    let report = reopened.open_report();
    assert_eq!((report.removed.len(), report.rules), (0, 1), "{report:?}");
    assert!(
        report.problems[0].reason.contains("not a directory"),
        "{report:?}"
    );
}

#[tokio::test]
async fn tools_declare_their_latency_and_effects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = Rules::open(settings(dir.path())).expect("open");
    assert_eq!(
        rules.open_report().problems.len(),
        1,
        "a missing directory is reported"
    );
    let tools = rules.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["search_rules", "get_rule", "reindex"]);
    for tool in &tools {
        let latency =
            switchboard_core::LatencyMeta::from_meta(tool.meta.as_ref()).expect("latency");
        let annotations = tool.annotations.as_ref().expect("annotations");
        assert!(tool.output_schema.is_some());
        assert_eq!(annotations.idempotent_hint, Some(true));
        assert_eq!(annotations.destructive_hint, Some(false));
        if tool.name == "reindex" {
            assert_eq!(annotations.read_only_hint, Some(false));
        } else {
            assert_eq!(annotations.read_only_hint, Some(true));
            assert_eq!(
                (latency.estimated_duration_ms, latency.max_duration_ms),
                (Some(200), Some(crate::sqlite::STORE_BOUND_MS))
            );
        }
    }
    assert!(default_database_path().ends_with("switchboard/rules.db"));
}
