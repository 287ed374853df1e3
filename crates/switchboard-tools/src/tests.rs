//! `builtin(name, settings)`: the list of built-ins matches the config's, and each provider is
//! built from its config settings (defaults where unset, a clear reason where one cannot be).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;
use switchboard_core::config::{
    BuiltinSettings, JsonSearchMapping, PlayerSetting, SecretString, StyleSetting,
};

use super::{BUILTINS, BuiltinError, builtin, images_settings, web_settings};

fn setup_error(name: &str, settings: &BuiltinSettings) -> String {
    match builtin(name, settings) {
        Err(error @ BuiltinError::Setup { .. }) => error.to_string(),
        Err(other) => panic!("{name}: not a setup error: {other}"),
        Ok(_) => panic!("{name}: built"),
    }
}

#[test]
fn the_config_knows_these_builtins_and_the_manager() {
    let ours: BTreeSet<&str> = BUILTINS.into_iter().chain(["manager"]).collect();
    let config: BTreeSet<&str> = switchboard_core::config::BUILTINS.into_iter().collect();
    assert_eq!(ours, config);
    assert_eq!(BUILTINS.len() + 1, switchboard_core::config::BUILTINS.len());
    assert!(
        !BUILTINS.contains(&"manager"),
        "the manager needs a gateway"
    );
    let manager = setup_error("manager", &BuiltinSettings::default());
    assert!(manager.contains("cannot run alone"), "{manager}");
    let unknown = builtin("radio", &BuiltinSettings::default())
        .err()
        .expect("unknown");
    assert!(matches!(unknown, BuiltinError::Unknown { .. }));
    assert!(
        unknown
            .to_string()
            .contains("rules, sessions, music, web, images")
    );
}

#[test]
fn rules_sessions_and_music_are_built_from_their_settings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rules_dir = dir.path().join("rules");
    std::fs::create_dir(&rules_dir).expect("rules dir");
    std::fs::write(
        rules_dir.join("combat.md"),
        "# Combat\n\n## Grapple\n\nA grapple.\n",
    )
    .expect("rule file");
    let rules = builtin(
        "rules",
        &BuiltinSettings {
            dirs: vec![rules_dir],
            database: Some(dir.path().join("rules.db")),
            ..BuiltinSettings::default()
        },
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let names: Vec<String> = rules.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["search_rules", "get_rule", "reindex"]);
    assert!(dir.path().join("rules.db").exists());

    let sessions = builtin(
        "sessions",
        &BuiltinSettings {
            database: Some(dir.path().join("memory.db")),
            ..BuiltinSettings::default()
        },
    )
    .unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(sessions.name(), "sessions");
    assert!(dir.path().join("memory.db").exists());

    let music = builtin(
        "music",
        &BuiltinSettings {
            player: Some(PlayerSetting::Null),
            moods: BTreeMap::from([("tavern".to_owned(), vec![dir.path().to_owned()])]),
            ..BuiltinSettings::default()
        },
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let play = music
        .tools()
        .into_iter()
        .find(|t| t.name == "play_track")
        .expect("play_track");
    assert_eq!(
        play.input_schema["properties"]["mood"]["enum"],
        json!(["tavern"])
    );
    let missing = setup_error(
        "music",
        &BuiltinSettings {
            player: Some(PlayerSetting::Command(vec![
                "no-such-player-here".to_owned(),
                "{path}".to_owned(),
            ])),
            ..BuiltinSettings::default()
        },
    );
    assert!(missing.contains("no-such-player-here"), "{missing}");
}

#[test]
fn web_needs_a_backend_and_its_keys() {
    let none = setup_error("web", &BuiltinSettings::default());
    for needed in ["searxng", "url", "brave", "api_key", "json"] {
        assert!(none.contains(needed), "{needed} in {none}");
    }
    let brave = setup_error(
        "web",
        &BuiltinSettings {
            backend: Some("brave".to_owned()),
            ..BuiltinSettings::default()
        },
    );
    assert!(brave.contains("api_key"), "{brave}");
    let searxng = setup_error(
        "web",
        &BuiltinSettings {
            backend: Some("searxng".to_owned()),
            ..BuiltinSettings::default()
        },
    );
    assert!(searxng.contains("needs url"), "{searxng}");
    let unmapped = setup_error(
        "web",
        &BuiltinSettings {
            backend: Some("json".to_owned()),
            url: Some("http://127.0.0.1:1/s?q={query}".to_owned()),
            ..BuiltinSettings::default()
        },
    );
    assert!(unmapped.contains("json = {"), "{unmapped}");

    let settings = BuiltinSettings {
        backend: Some("json".to_owned()),
        url: Some("http://127.0.0.1:1/s?q={query}&key={key}".to_owned()),
        api_key: Some(SecretString("k-123".to_owned())),
        allow_private: Some(true),
        max_bytes: Some(1_000),
        timeout: Some(std::time::Duration::from_secs(3)),
        max_redirects: Some(2),
        json: Some(JsonSearchMapping {
            results: "data.items".to_owned(),
            title: "name".to_owned(),
            url: "link".to_owned(),
            snippet: None,
        }),
        ..BuiltinSettings::default()
    };
    let web = web_settings(&settings).expect("settings");
    assert_eq!(
        web.backend,
        super::web::SearchBackend::Json {
            results_path: "data.items".to_owned(),
            title: "name".to_owned(),
            url: "link".to_owned(),
            snippet: None,
            key_header: None,
        }
    );
    assert_eq!(
        web.api_key.as_ref().map(SecretString::expose),
        Some("k-123")
    );
    assert!(web.allow_private);
    assert_eq!(
        (web.max_bytes, web.timeout, web.max_redirects),
        (1_000, std::time::Duration::from_secs(3), 2)
    );
    builtin("web", &settings).unwrap_or_else(|error| panic!("{error}"));
}

#[test]
fn images_default_to_openai_and_map_styles() {
    let keyless = setup_error("images", &BuiltinSettings::default());
    assert!(keyless.contains("needs api_key"), "{keyless}");
    let openai = images_settings(&BuiltinSettings {
        api_key: Some(SecretString("sk".to_owned())),
        ..BuiltinSettings::default()
    })
    .expect("settings");
    assert_eq!(openai.backend, super::images::ImageBackend::OpenAi);
    assert_eq!(openai.url, "https://api.openai.com");
    assert_eq!(
        openai.api_key.as_ref().map(SecretString::expose),
        Some("sk")
    );

    let settings = BuiltinSettings {
        backend: Some("automatic1111".to_owned()),
        model: Some("sdxl".to_owned()),
        styles: BTreeMap::from([(
            "noir".to_owned(),
            StyleSetting {
                suffix: Some(", noir".to_owned()),
                negative: Some("colour".to_owned()),
                params: json!({"steps": 30}).as_object().cloned().expect("object"),
            },
        )]),
        ..BuiltinSettings::default()
    };
    let a1111 = images_settings(&settings).expect("settings");
    assert_eq!(a1111.url, "http://127.0.0.1:7860");
    assert_eq!(a1111.model.as_deref(), Some("sdxl"));
    let noir = &a1111.styles["noir"];
    assert_eq!(noir.suffix.as_deref(), Some(", noir"));
    assert_eq!(noir.negative.as_deref(), Some("colour"));
    assert_eq!(noir.params["steps"], 30);
    let images = builtin("images", &settings).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(
        images.tools()[0].input_schema["properties"]["style"]["enum"],
        json!(["noir"])
    );
}
