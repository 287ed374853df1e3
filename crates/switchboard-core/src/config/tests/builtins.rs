//! The settings keys of the built-ins `rules`, `sessions`, `music`, `web` and `images`:
//! values in both formats, defaults, paths, every bad value at its `line:column`, keys that
//! belong to other built-ins, and the api_key kept out of `Debug`.

use serde_json::json;

use super::problems::{json, toml};
use super::*;

const FILE: &str = "/etc/sb/switchboard.toml";

fn parse_file(text: &str, format: Format) -> Config {
    let origin = Origin::File(PathBuf::from(FILE));
    match Config::parse(text, origin, format, &env()) {
        Ok(config) => config,
        Err(errors) => panic!("expected a valid config, got:\n{errors}"),
    }
}

/// The built-in name and settings of server `id`.
fn builtin_of(config: &Config, id: &str) -> (String, BuiltinSettings) {
    match &config
        .servers
        .iter()
        .find(|s| s.id == id)
        .expect(id)
        .transport
    {
        Transport::Builtin { name, settings } => (name.clone(), settings.clone()),
        other => panic!("{id} is not a built-in: {other:?}"),
    }
}

pub(super) fn settings_of(config: &Config, id: &str) -> BuiltinSettings {
    builtin_of(config, id).1
}

fn paths(list: &[&str]) -> Vec<PathBuf> {
    list.iter().map(PathBuf::from).collect()
}

#[test]
fn the_new_builtins_are_known_and_not_in_the_default() {
    for name in ["rules", "sessions", "music", "web", "images", "manager"] {
        assert!(BUILTINS.contains(&name), "{name}");
        let config = check_ok(
            &format!("[servers.x]\nbuiltin = \"{name}\"\n"),
            Format::Toml,
        );
        assert_eq!(
            builtin_of(&config, "x"),
            (name.to_owned(), BuiltinSettings::default()),
            "no keys, no settings"
        );
    }
    let default: Vec<String> = Config::builtin_default()
        .servers
        .iter()
        .map(|s| s.id.clone())
        .collect();
    assert_eq!(default, ["clock", "dice", "files", "memory"]);
}

#[test]
fn toml_settings_of_every_new_builtin() {
    let text = r#"
[servers.rules]
builtin = "rules"
dirs = ["rules", "/srv/srd"]
database = "rules.db"

[servers.sessions]
builtin = "sessions"
database = "/var/lib/sb/memory.db"

[servers.music]
builtin = "music"
player = "mpv"
moods = { calm = ["music/calm", "/srv/rain.ogg"], battle = "music/battle" }
mpv_args = ["--ao=null", "--volume=${VOLUME:-60}"]

[servers.web]
builtin = "web"
backend = "brave"
url = "https://api.search.brave.com"
api_key = "${TOKEN}"
allow_private = true
max_bytes = 65536
timeout = "15s"
max_redirects = 0

[servers.images]
builtin = "images"
backend = "automatic1111"
url = "http://127.0.0.1:7860"
api_key = "k"
model = "sdxl"
out_dir = "images"
max_bytes = 1
timeout = 120000
styles.noir = { suffix = ", film noir", negative = "colour", params = { steps = 30, sampler = "Euler a", hires = { scale = 1.5 }, tags = [1, "x"] } }
styles.plain = {}
"#;
    let config = parse_file(text, Format::Toml);

    let rules = settings_of(&config, "rules");
    assert_eq!(rules.dirs, paths(&["/etc/sb/rules", "/srv/srd"]));
    assert_eq!(rules.database, Some("/etc/sb/rules.db".into()));
    assert_eq!(
        settings_of(&config, "sessions").database,
        Some("/var/lib/sb/memory.db".into())
    );

    let music = settings_of(&config, "music");
    assert_eq!(music.player, Some(PlayerSetting::Mpv));
    assert_eq!(
        music.moods,
        BTreeMap::from([
            ("battle".to_owned(), paths(&["/etc/sb/music/battle"])),
            (
                "calm".to_owned(),
                paths(&["/etc/sb/music/calm", "/srv/rain.ogg"])
            ),
        ])
    );
    assert_eq!(music.mpv_args, ["--ao=null", "--volume=60"]);

    let web = settings_of(&config, "web");
    assert_eq!(
        web,
        BuiltinSettings {
            backend: Some("brave".into()),
            url: Some("https://api.search.brave.com".into()),
            api_key: Some(SecretString("t0k".into())),
            allow_private: Some(true),
            max_bytes: Some(65536),
            timeout: Some(Duration::from_secs(15)),
            max_redirects: Some(0),
            ..BuiltinSettings::default()
        }
    );

    let images = settings_of(&config, "images");
    assert_eq!(images.backend.as_deref(), Some("automatic1111"));
    assert_eq!(images.url.as_deref(), Some("http://127.0.0.1:7860"));
    assert_eq!(images.api_key.as_ref().map(SecretString::expose), Some("k"));
    assert_eq!(images.model.as_deref(), Some("sdxl"));
    assert_eq!(images.out_dir, Some("/etc/sb/images".into()));
    assert_eq!(images.max_bytes, Some(1));
    assert_eq!(images.timeout, Some(Duration::from_secs(120)));
    let noir = &images.styles["noir"];
    assert_eq!(noir.suffix.as_deref(), Some(", film noir"));
    assert_eq!(noir.negative.as_deref(), Some("colour"));
    assert_eq!(
        serde_json::Value::Object(noir.params.clone()),
        json!({"steps": 30, "sampler": "Euler a", "hires": {"scale": 1.5}, "tags": [1, "x"]})
    );
    assert_eq!(images.styles["plain"], StyleSetting::default());
    assert_eq!(images.styles.len(), 2);
}

#[test]
fn json_settings_and_the_json_search_backend() {
    let text = r#"{
  "mcpServers": {
    "search": {
      "builtin": "web",
      "backend": "json",
      "url": "https://search.example.org/api?q={query}&n={limit}&key={key}",
      "json": {"results": "data.items", "title": "name", "url": "link", "snippet": "summary"},
      "timeout": 5
    },
    "tunes": {"builtin": "music", "player": ["paplay", "{path}"], "moods": {"calm": "calm.ogg"}},
    "quiet": {"builtin": "music", "player": "null"},
    "auto": {"builtin": "music", "player": "auto"},
    "pics": {"builtin": "images", "backend": "openai", "styles": {"ink": {"params": {}}}},
    "rules": {"builtin": "rules", "dirs": []}
  }
}"#;
    let config = parse_file(text, Format::Json);
    let search = settings_of(&config, "search");
    assert_eq!(search.backend.as_deref(), Some("json"));
    assert_eq!(
        search.url.as_deref(),
        Some("https://search.example.org/api?q={query}&n={limit}&key={key}")
    );
    assert_eq!(
        search.json,
        Some(JsonSearchMapping {
            results: "data.items".into(),
            title: "name".into(),
            url: "link".into(),
            snippet: Some("summary".into()),
        })
    );
    // In a built-in's entry `timeout` is its setting (a duration: an integer is milliseconds).
    assert_eq!(search.timeout, Some(Duration::from_millis(5)));
    let tunes = settings_of(&config, "tunes");
    assert_eq!(
        tunes.player,
        Some(PlayerSetting::Command(vec![
            "paplay".into(),
            "{path}".into()
        ]))
    );
    assert_eq!(tunes.moods["calm"], paths(&["/etc/sb/calm.ogg"]));
    assert_eq!(
        settings_of(&config, "quiet").player,
        Some(PlayerSetting::Null)
    );
    assert_eq!(
        settings_of(&config, "auto").player,
        Some(PlayerSetting::Auto)
    );
    let pics = settings_of(&config, "pics");
    assert_eq!(pics.backend.as_deref(), Some("openai"));
    assert_eq!(pics.styles["ink"], StyleSetting::default());
    assert_eq!(settings_of(&config, "rules").dirs, Vec::<PathBuf>::new());

    // A snippet key is optional.
    let config = check_ok(
        "[servers.s]\nbuiltin = \"web\"\nbackend = \"json\"\nurl = \"https://h/?q={query}\"\njson = { results = \"r\", title = \"t\", url = \"u\" }\n",
        Format::Toml,
    );
    assert_eq!(settings_of(&config, "s").json.and_then(|j| j.snippet), None);
}

#[test]
fn without_a_file_relative_paths_stay_relative() {
    let config = check_ok(
        "[servers.r]\nbuiltin = \"rules\"\ndirs = [\"rules\"]\n[servers.i]\nbuiltin = \"images\"\nout_dir = \"out\"\n",
        Format::Toml,
    );
    assert_eq!(settings_of(&config, "r").dirs, paths(&["rules"]));
    assert_eq!(settings_of(&config, "i").out_dir, Some("out".into()));
}

#[test]
fn url_is_a_setting_of_web_and_images_not_a_transport() {
    let config = check_ok(
        "[servers.w]\nbuiltin = \"web\"\nurl = \"http://127.0.0.1:8888\"\n",
        Format::Toml,
    );
    assert_eq!(
        builtin_of(&config, "w"),
        (
            "web".to_owned(),
            BuiltinSettings {
                url: Some("http://127.0.0.1:8888".into()),
                ..BuiltinSettings::default()
            }
        )
    );
    // Beside another built-in, `url` still clashes with `builtin`.
    toml(
        "[servers.a]\nbuiltin = \"dice\"\nurl = \"http://h\"\n",
        &[(
            2,
            1,
            "more than one of \"command\", \"url\" and \"builtin\"",
        )],
    );
    // An HTTP server's `url` and a foreign `timeout` are no built-in settings there.
    let config = check_ok(
        "[servers.h]\nurl = \"http://h/mcp\"\ntimeout = 30\n",
        Format::Toml,
    );
    assert_eq!(config.servers[0].transport, http("http://h/mcp"));
}

#[test]
fn the_api_key_never_shows_in_debug() {
    let config = check_ok(
        "[servers.w]\nbuiltin = \"web\"\nbackend = \"brave\"\napi_key = \"sk-very-secret\"\n[servers.i]\nbuiltin = \"images\"\napi_key = \"${TOKEN}\"\n",
        Format::Toml,
    );
    let printed = format!("{config:?}");
    assert!(!printed.contains("sk-very-secret"), "{printed}");
    assert!(!printed.contains("t0k"), "{printed}");
    assert!(printed.contains("api_key: Some(***)"), "{printed}");
    let pretty = format!("{config:#?}");
    assert!(!pretty.contains("sk-very-secret") && !pretty.contains("t0k"));
    assert_eq!(
        settings_of(&config, "w").api_key,
        Some(SecretString("sk-very-secret".into()))
    );
    assert_eq!(format!("{:?}", SecretString("x".into())), "***");
}

#[test]
fn keys_of_other_builtins_name_every_owner() {
    toml(
        "[servers.x]\nbuiltin = \"dice\"\nbackend = \"brave\"\n",
        &[(
            3,
            1,
            "servers.x.backend is a setting of the 'web' and 'images' built-ins, but this one is builtin = \"dice\"",
        )],
    );
    toml(
        "[servers.x]\nbuiltin = \"clock\"\ndatabase = \"c.db\"\n",
        &[(
            3,
            1,
            "servers.x.database is a setting of the 'memory', 'rules' and 'sessions' built-ins, but this one is builtin = \"clock\"",
        )],
    );
    toml(
        "[servers.x]\nbuiltin = \"images\"\nallow_private = true\nmax_redirects = 3\njson = {}\ndirs = []\n  player = \"mpv\"\n",
        &[
            (
                3,
                1,
                "servers.x.allow_private is a setting of the 'web' built-in, but this one is builtin = \"images\"",
            ),
            (
                4,
                1,
                "servers.x.max_redirects is a setting of the 'web' built-in",
            ),
            (5, 1, "servers.x.json is a setting of the 'web' built-in"),
            (6, 1, "servers.x.dirs is a setting of the 'rules' built-in"),
            (
                7,
                3,
                "servers.x.player is a setting of the 'music' built-in",
            ),
        ],
    );
    toml(
        "[servers.x]\nbuiltin = \"web\"\nstyles = {}\nmodel = \"m\"\nout_dir = \"o\"\n",
        &[
            (
                3,
                1,
                "servers.x.styles is a setting of the 'images' built-in, but this one is builtin = \"web\"",
            ),
            (
                4,
                1,
                "servers.x.model is a setting of the 'images' built-in",
            ),
            (
                5,
                1,
                "servers.x.out_dir is a setting of the 'images' built-in",
            ),
        ],
    );
    // `timeout` beside a built-in that does not take it.
    toml(
        "[servers.x]\nbuiltin = \"music\"\ntimeout = \"5s\"\n",
        &[(
            3,
            1,
            "servers.x.timeout is a setting of the 'web' and 'images' built-ins, but this one is builtin = \"music\"",
        )],
    );
    toml(
        "[servers.x]\ncommand = \"npx\"\napi_key = \"k\"\nmoods = {}\n",
        &[
            (
                3,
                1,
                "servers.x.api_key is a setting of the 'web' and 'images' built-ins, but this server is not a built-in",
            ),
            (
                4,
                1,
                "servers.x.moods is a setting of the 'music' built-in, but this server is not a built-in",
            ),
        ],
    );
    json(
        "{\"mcpServers\": {\"x\": {\"builtin\": \"sessions\", \"dirs\": [\"r\"]}}}",
        &[(
            1,
            46,
            "mcpServers.x.dirs is a setting of the 'rules' built-in, but this one is builtin = \"sessions\"",
        )],
    );
}

#[test]
fn a_misspelled_key_is_matched_against_the_builtins_settings() {
    let errors = Config::parse(
        "[servers.w]\nbuiltin = \"web\"\nbackned = \"brave\"\n",
        Origin::Inline,
        Format::Toml,
        &env(),
    )
    .expect_err("a misspelled key");
    assert_eq!(errors.0.len(), 1, "{errors}");
    assert_eq!((errors.0[0].line, errors.0[0].column), (3, 1), "{errors}");
    assert!(
        errors.0[0]
            .message
            .contains("unknown key 'backned' in servers.w")
    );
    assert_eq!(errors.0[0].hint.as_deref(), Some("did you mean 'backend'?"));
}

#[test]
fn bad_values_of_rules_sessions_and_music() {
    toml(
        "[servers.r]\nbuiltin = \"rules\"\ndirs = \"rules\"\ndatabase = \"\"\n",
        &[
            (
                3,
                8,
                "servers.r.dirs must be an array of paths, found a string",
            ),
            (4, 12, "servers.r.database is empty"),
        ],
    );
    toml(
        "[servers.r]\nbuiltin = \"rules\"\ndirs = [\"ok\", 3, \"\"]\n",
        &[
            (
                3,
                15,
                "servers.r.dirs[1] must be a string, found an integer",
            ),
            (3, 18, "servers.r.dirs[2] is empty"),
        ],
    );
    toml(
        "[servers.s]\nbuiltin = \"sessions\"\ndatabase = 1\n",
        &[(
            3,
            12,
            "servers.s.database must be a string, found an integer",
        )],
    );
    toml(
        "[servers.m]\nbuiltin = \"music\"\nplayer = \"mvp\"\n",
        &[(
            3,
            10,
            "servers.m.player 'mvp' is not known; use \"auto\", \"mpv\" or \"null\"",
        )],
    );
    toml(
        "[servers.m]\nbuiltin = \"music\"\nplayer = 3\nmpv_args = \"--ao=null\"\n",
        &[
            (
                3,
                10,
                "servers.m.player must be \"auto\", \"mpv\", \"null\" or a command line (an array of strings), found an integer",
            ),
            (
                4,
                12,
                "servers.m.mpv_args must be an array of strings, found a string",
            ),
        ],
    );
    toml(
        "[servers.m]\nbuiltin = \"music\"\nplayer = []\n",
        &[(3, 10, "servers.m.player has no program")],
    );
    toml(
        "[servers.m]\nbuiltin = \"music\"\nplayer = [\"play\", 1]\n",
        &[(
            3,
            19,
            "servers.m.player[1] must be a string, found an integer",
        )],
    );
    toml(
        "[servers.m]\nbuiltin = \"music\"\nmoods = { calm = 1, \"\" = \"x\", war = [\"a\", \"\"] }\n",
        &[
            (
                3,
                18,
                "servers.m.moods.calm must be a path or an array of paths, found an integer",
            ),
            (3, 21, "servers.m.moods has a mood with an empty name"),
            (3, 43, "servers.m.moods.war[1] is empty"),
        ],
    );
    toml(
        "[servers.m]\nbuiltin = \"music\"\nmoods = [\"calm\"]\n",
        &[(
            3,
            9,
            "servers.m.moods must be a table/object, found an array",
        )],
    );
}

#[test]
fn bad_values_of_web() {
    toml(
        "[servers.w]\nbuiltin = \"web\"\nbackend = \"serxng\"\nurl = \"ftp://h\"\napi_key = 7\nallow_private = \"yes\"\nmax_bytes = 0\ntimeout = \"soon\"\nmax_redirects = -1\n",
        &[
            (
                3,
                11,
                "servers.w.backend 'serxng' is not known; use \"searxng\", \"brave\" or \"json\"",
            ),
            (
                4,
                7,
                "servers.w.url 'ftp://h' must start with http:// or https://",
            ),
            (
                5,
                11,
                "servers.w.api_key must be a string, found an integer",
            ),
            (
                6,
                17,
                "servers.w.allow_private must be true or false, found a string",
            ),
            (
                7,
                13,
                "servers.w.max_bytes must be an integer of at least 1, found 0",
            ),
            (8, 11, "servers.w.timeout is not a duration"),
            (
                9,
                17,
                "servers.w.max_redirects must be an integer of at least 0, found -1",
            ),
        ],
    );
    toml(
        "[servers.w]\nbuiltin = \"web\"\nmax_redirects = 4294967296\nurl = \"https://\"\n",
        &[
            (
                3,
                17,
                "servers.w.max_redirects must be at most 4294967295, found 4294967296",
            ),
            (4, 7, "servers.w.url 'https://' has no host"),
        ],
    );
    // An image backend is no web backend.
    toml(
        "[servers.w]\nbuiltin = \"web\"\nbackend = \"openai\"\n",
        &[(
            3,
            11,
            "servers.w.backend 'openai' is not known; use \"searxng\", \"brave\" or \"json\"",
        )],
    );
}

#[test]
fn the_json_backend_needs_a_template_and_a_mapping() {
    toml(
        "[servers.w]\nbuiltin = \"web\"\nbackend = \"json\"\nurl = \"https://h/search\"\njson = { results = \"r\", title = \"t\", url = \"u\" }\n",
        &[(
            4,
            7,
            "servers.w.url 'https://h/search' has no {query}: with backend = \"json\" it is a template",
        )],
    );
    toml(
        "[servers.w]\nbuiltin = \"web\"\nbackend = \"json\"\n",
        &[
            (
                3,
                11,
                "servers.w: backend = \"json\" needs a json table saying where the results are",
            ),
            (
                3,
                11,
                "servers.w: backend = \"json\" needs url, the search URL with {query}",
            ),
        ],
    );
    toml(
        "[servers.w]\nbuiltin = \"web\"\nbackend = \"json\"\nurl = \"https://h/?q={query}\"\njson = { result = \"r\", title = \"\", snippet = 2 }\n",
        &[
            (5, 10, "unknown key 'result' in servers.w.json"),
            (5, 32, "servers.w.json.title is empty"),
            (
                5,
                46,
                "servers.w.json.snippet must be a string, found an integer",
            ),
            (5, 8, "servers.w.json needs \"results\" and \"url\""),
        ],
    );
    toml(
        "[servers.w]\nbuiltin = \"web\"\nbackend = \"json\"\nurl = \"https://h/?q={query}\"\njson = \"data.items\"\n",
        &[(
            5,
            8,
            "servers.w.json must be a table/object, found a string",
        )],
    );
    toml(
        "[servers.w]\nbuiltin = \"web\"\nbackend = \"brave\"\njson = { results = \"r\", title = \"t\", url = \"u\" }\n",
        &[(
            4,
            1,
            "servers.w.json maps the answers of backend = \"json\", but this one's backend is \"brave\"",
        )],
    );
    json(
        "{\"mcpServers\": {\"w\": {\"builtin\": \"web\", \"backend\": \"json\",\n  \"url\": \"https://h/${HOME}\", \"json\": {\"results\": \"r\", \"title\": \"t\", \"url\": \"u\"}}}}",
        &[(2, 10, "mcpServers.w.url 'https://h//home/u' has no {query}")],
    );
}

#[test]
fn bad_values_of_images() {
    toml(
        "[servers.i]\nbuiltin = \"images\"\nbackend = \"automatic\"\nmodel = []\nout_dir = \"\"\nmax_bytes = -3\ntimeout = true\n",
        &[
            (
                3,
                11,
                "servers.i.backend 'automatic' is not known; use \"openai\" or \"automatic1111\"",
            ),
            (4, 9, "servers.i.model must be a string, found an array"),
            (5, 11, "servers.i.out_dir is empty"),
            (
                6,
                13,
                "servers.i.max_bytes must be an integer of at least 1, found -3",
            ),
            (7, 11, "servers.i.timeout is not a duration"),
        ],
    );
    toml(
        "[servers.i]\nbuiltin = \"images\"\nstyles = { noir = { sufix = \"x\", negative = 1, params = [1] }, ink = \"black\" }\n",
        &[
            (3, 21, "unknown key 'sufix' in servers.i.styles.noir"),
            (
                3,
                45,
                "servers.i.styles.noir.negative must be a string, found an integer",
            ),
            (
                3,
                57,
                "servers.i.styles.noir.params must be a table, found an array",
            ),
            (
                3,
                70,
                "servers.i.styles.ink must be a table/object, found a string",
            ),
        ],
    );
    toml(
        "[servers.i]\nbuiltin = \"images\"\nstyles = \"noir\"\n",
        &[(
            3,
            10,
            "servers.i.styles must be a table/object, found a string",
        )],
    );
}

#[test]
fn enumerated_values_suggest_the_closest() {
    for (text, hint) in [
        (
            "[servers.w]\nbuiltin = \"web\"\nbackend = \"Brave\"\n",
            Some("did you mean 'brave'?"),
        ),
        (
            "[servers.i]\nbuiltin = \"images\"\nbackend = \"automatic111\"\n",
            Some("did you mean 'automatic1111'?"),
        ),
        (
            "[servers.m]\nbuiltin = \"music\"\nplayer = \"nul\"\n",
            Some("did you mean 'null'?"),
        ),
        (
            "[servers.m]\nbuiltin = \"music\"\nplayer = \"paplay {path}\"\n",
            Some(
                "or a command line in which {path} is the track, e.g. player = [\"paplay\", \"{path}\"]",
            ),
        ),
        (
            "[servers.w]\nbuiltin = \"web\"\nbackend = \"google\"\n",
            None,
        ),
    ] {
        let errors =
            Config::parse(text, Origin::Inline, Format::Toml, &env()).expect_err("a bad value");
        assert_eq!(errors.0.len(), 1, "{errors}");
        assert_eq!(errors.0[0].hint.as_deref(), hint, "{text}");
    }
}

/// The example of docs/config.md's "Built-in servers" parses (and the schema test checks it
/// against the schema).
#[test]
fn the_documented_builtins_example_parses() {
    let docs = include_str!("../../../../../docs/config.md");
    let section = docs
        .split("### Built-in servers")
        .nth(1)
        .expect("docs/config.md has a Built-in servers section");
    let mut blocks = section
        .split("```toml\n")
        .skip(1)
        .map(|rest| rest.split("```").next().expect("a closed block").to_owned());
    let example = blocks.next().expect("an example");
    let env = MapEnvironment(BTreeMap::from([("OPENAI_API_KEY".into(), "sk-doc".into())]));
    let origin = Origin::File(PathBuf::from(FILE));
    let config = Config::parse(&example, origin.clone(), Format::Toml, &env)
        .unwrap_or_else(|errors| panic!("{errors}"));
    assert_eq!(
        settings_of(&config, "images").api_key,
        Some(SecretString("sk-doc".into()))
    );
    assert_eq!(
        settings_of(&config, "music").moods["calm"],
        paths(&["/etc/sb/music/calm", "/etc/sb/music/rain.ogg"])
    );
    assert!(settings_of(&config, "images").styles.contains_key("noir"));
    let search = blocks.next().expect("a json backend example");
    let config = Config::parse(&search, origin, Format::Toml, &env)
        .unwrap_or_else(|errors| panic!("{errors}"));
    assert!(settings_of(&config, "search").json.is_some());
}
