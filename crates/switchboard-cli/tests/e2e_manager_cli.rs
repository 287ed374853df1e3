//! The server manager's operator surfaces end to end: a real gateway over HTTP with its admin
//! endpoint, the registry fixture (`switchboard-fixture registry`) serving `server.json`
//! files from a temp directory, and `switchboard-fixture http-echo` as the server installed —
//! `search-servers`, `install` (followed, detached, with a secret input, cancelled) and
//! `operations` through the CLI. Everything is on loopback, and every file (data, state,
//! secrets, install directory, operations database) is in the test's temp directory.

mod support;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

/// One test's world: its directories, the registry fixture, an echo server to install, a
/// config, and (once started) the gateway with its stderr in a file.
struct World {
    dir: tempfile::TempDir,
    /// Kept running while the world lives.
    _registry: Fixture,
    echo: Fixture,
    config: PathBuf,
    gateway: Option<Child>,
}

impl World {
    /// `database`: whether the config names `[manager] database` (else the gateway's default,
    /// `operations.db` beside the ledger, is used).
    fn new(database: bool) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("registry")).expect("mkdir");
        let registry = Fixture::start(&[
            "registry",
            "--dir",
            &dir.path().join("registry").display().to_string(),
        ]);
        let echo = Fixture::start(&["http-echo"]);
        let path = |name: &str| quoted(&dir.path().join(name).display().to_string());
        let database_line = if database {
            format!("database = {}\n", path("ops/operations.db"))
        } else {
            String::new()
        };
        let text = format!(
            "# The operator's gateway.\n\
             [gateway]\n\
             ledger = {ledger}\n\
             connect_timeout = \"5s\"\n\
             \n\
             [manager]\n\
             registries = [{registry}]\n\
             install_dir = {install}\n\
             {database_line}\
             \n\
             [servers.first]\n\
             command = {fixture}\n\
             args = [\"echo\"]\n",
            ledger = path("data/ledger.db"),
            registry = quoted(&format!("http://{}", registry.address)),
            install = path("servers"),
            fixture = quoted(&fixture()),
        );
        let config = write_config(dir.path(), &text);
        Self {
            dir,
            _registry: registry,
            echo,
            config,
            gateway: None,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn secrets(&self) -> PathBuf {
        self.path("secrets/secrets.env")
    }

    fn admin(&self) -> PathBuf {
        self.path("admin.json")
    }

    fn operations_db(&self, database: bool) -> PathBuf {
        if database {
            self.path("ops/operations.db")
        } else {
            self.path("data/operations.db")
        }
    }

    /// Puts a server.json into the registry.
    fn publish(&self, file: &str, server: &Value) {
        let path = self.path("registry").join(file);
        std::fs::write(path, serde_json::to_vec_pretty(server).expect("json")).expect("write");
    }

    /// An entry whose remote is the echo server, with `headers`.
    fn publish_echo(&self, name: &str, headers: &Value) {
        let file = format!("{}.json", name.replace('/', "_"));
        self.publish(
            &file,
            &json!({
                "name": name,
                "description": "Echo tools over streamable HTTP, for tests",
                "version": "1.2.0",
                "remotes": [{
                    "type": "streamable-http",
                    "url": format!("http://{}/mcp", self.echo.address),
                    "headers": headers,
                }],
            }),
        );
    }

    /// The environment of the gateway and of every CLI run: nothing in the real home.
    fn environment(&self, command: &mut Command) {
        command
            .env("XDG_DATA_HOME", self.path("xdg-data"))
            .env("XDG_STATE_HOME", self.path("xdg-state"))
            .env("XDG_CONFIG_HOME", self.path("xdg-config"))
            .env("SWITCHBOARD_SECRETS", self.secrets())
            .env_remove("SWITCHBOARD_ADMIN_FILE")
            .env_remove("SWITCHBOARD_CONFIG")
            .env_remove("SWITCHBOARD_LOG");
    }

    /// Starts `serve --http` with its admin file; its stderr goes to `gateway.log`.
    fn start_gateway(&mut self) {
        let log = std::fs::File::create(self.path("gateway.log")).expect("log");
        let mut command = Command::new(switchboard());
        command
            .arg("--config")
            .arg(&self.config)
            .args(["serve", "--http", "127.0.0.1:0", "--admin-file"])
            .arg(self.admin())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        self.environment(&mut command);
        self.gateway = Some(command.spawn().expect("start the gateway"));
        let listening = wait_for(Duration::from_secs(20), || {
            let log = std::fs::read_to_string(self.path("gateway.log")).ok()?;
            log.contains("switchboard: listening on").then_some(())
        });
        assert!(
            listening.is_some(),
            "the gateway did not start:\n{}",
            self.log()
        );
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path("gateway.log")).unwrap_or_default()
    }

    /// `switchboard --config CONFIG ARGS...` (with `--admin-file` once a gateway runs), with
    /// `stdin` written to it.
    fn cli_with(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut command = Command::new(switchboard());
        command.arg("--config").arg(&self.config).args(args);
        if self.gateway.is_some() {
            command.arg("--admin-file").arg(self.admin());
        }
        self.environment(&mut command);
        command
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("run switchboard");
        if let Some(text) = stdin {
            let mut pipe = child.stdin.take().expect("stdin");
            pipe.write_all(text.as_bytes()).expect("write stdin");
        }
        child.wait_with_output().expect("switchboard ends")
    }

    fn cli(&self, args: &[&str]) -> Output {
        self.cli_with(args, None)
    }

    /// Runs the CLI, asserting success.
    fn ok(&self, args: &[&str]) -> Output {
        let output = self.cli(args);
        assert!(
            output.status.success(),
            "switchboard {args:?} failed ({}):\nstdout:\n{}\nstderr:\n{}\ngateway:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            self.log()
        );
        output
    }

    fn json(&self, args: &[&str]) -> Value {
        stdout_json(&self.ok(args))
    }

    fn operation(&self, id: &str) -> Value {
        self.json(&["operations", "show", id, "--json"])
    }

    /// Waits until operation `id` satisfies `check`.
    fn wait_operation(&self, id: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        let mut last = Value::Null;
        wait_for(Duration::from_secs(30), || {
            last = self.operation(id);
            check(&last).then(|| last.clone())
        })
        .unwrap_or_else(|| panic!("{what}: not seen within 30 s; last:\n{last:#}"))
    }

    fn config_text(&self) -> String {
        std::fs::read_to_string(&self.config).expect("read the config")
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if let Some(child) = &mut self.gateway {
            let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let exited = wait_for(Duration::from_secs(15), || child.try_wait().ok().flatten());
            if exited.is_none() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The operation id an `install` announced on stderr (`install ID queued`).
fn queued_id(output: &Output) -> String {
    stderr(output)
        .lines()
        .find_map(|line| {
            line.strip_prefix("install ")
                .and_then(|rest| rest.strip_suffix(" queued"))
        })
        .unwrap_or_else(|| panic!("no 'install ID queued' line:\n{}", stderr(output)))
        .to_owned()
}

fn secret_header() -> Value {
    json!([{"name": "X-Api-Key", "description": "The service's API key", "isRequired": true, "isSecret": true}])
}

#[test]
fn search_servers_through_the_gateway_finds_what_the_registry_serves() {
    let mut world = World::new(true);
    world.publish_echo("io.example.tests/echo-tools", &json!([]));
    world.publish(
        "other.json",
        &json!({"name": "io.example.tests/weather", "description": "Forecasts", "version": "0.3.0",
                "remotes": [{"type": "sse", "url": "http://127.0.0.1:9/sse"}]}),
    );
    world.start_gateway();

    let found = world.json(&["search-servers", "echo", "--json"]);
    assert_eq!(found["query"], "echo", "{found}");
    let servers = found["servers"].as_array().expect("servers");
    assert_eq!(servers.len(), 1, "{found}");
    assert_eq!(servers[0]["name"], "io.example.tests/echo-tools");
    assert_eq!(servers[0]["version"], "1.2.0");
    let install = servers[0]["install"].as_str().expect("install");
    assert!(install.contains(&world.echo.address), "{install}");

    // The table: one line per server, with what installing it runs.
    let table = stdout(&world.ok(&["search-servers", ""]));
    assert!(table.starts_with("NAME"), "{table}");
    for expected in [
        "io.example.tests/echo-tools",
        "io.example.tests/weather",
        "1.2.0",
        "0.3.0",
        "connect to http://127.0.0.1:9/sse",
    ] {
        assert!(table.contains(expected), "{expected} missing:\n{table}");
    }

    // The search ran in the gateway, as the operator's operation.
    let listed = world.json(&["operations", "list", "--json"]);
    let searches = listed["operations"].as_array().expect("operations");
    assert_eq!(searches.len(), 2, "{listed}");
    assert!(
        searches.iter().all(|o| o["kind"] == "search"
            && o["state"] == "completed"
            && o["request"]["by"] == "operator"),
        "{listed}"
    );

    // A dry run looks the server up and installs nothing.
    let dry = stdout(&world.ok(&["install", "io.example.tests/echo-tools", "--dry-run"]));
    assert!(dry.contains("would add it as: echo-tools"), "{dry}");
    assert!(dry.contains("would run: connect to"), "{dry}");
    assert!(!world.config_text().contains("echo-tools"));
}

#[test]
fn a_dry_run_looks_up_the_version_asked_for() {
    let world = World::new(false);
    for (version, headers) in [("1.2.0", secret_header()), ("2.0.0", json!([]))] {
        world.publish(
            &format!("echo-{version}.json"),
            &json!({
                "name": "io.example.tests/echo",
                "description": format!("Echo, version {version}"),
                "version": version,
                "remotes": [{
                    "type": "streamable-http",
                    "url": format!("http://{}/mcp/{version}", world.echo.address),
                    "headers": headers,
                }],
            }),
        );
    }

    let older = stdout(&world.ok(&["install", "io.example.tests/echo@1.2.0", "--dry-run"]));
    assert!(older.contains("io.example.tests/echo 1.2.0"), "{older}");
    assert!(older.contains("/mcp/1.2.0"), "{older}");
    assert!(
        older.contains("input: X-Api-Key (required, secret)"),
        "{older}"
    );
    assert!(!older.contains("2.0.0"), "{older}");

    let latest = stdout(&world.ok(&["install", "io.example.tests/echo", "--dry-run"]));
    assert!(latest.contains("io.example.tests/echo 2.0.0"), "{latest}");

    let missing = world.cli(&["install", "io.example.tests/echo@9.9.9", "--dry-run"]);
    assert!(!missing.status.success(), "{}", stdout(&missing));
    let said = stderr(&missing);
    assert!(
        said.contains("io.example.tests/echo@9.9.9") && said.contains("no server"),
        "{said}"
    );
    assert!(stdout(&missing).is_empty(), "{}", stdout(&missing));
}

#[test]
fn install_follows_the_operation_and_adds_a_pinned_server() {
    let mut world = World::new(false);
    world.publish_echo("io.example.tests/echo", &json!([]));
    world.start_gateway();

    let output = world.ok(&["install", "io.example.tests/echo"]);
    let id = queued_id(&output);
    let said = stderr(&output);
    // Not a terminal: each step on a line of its own.
    assert!(
        said.contains("%] looking up io.example.tests/echo"),
        "{said}"
    );
    assert!(said.contains("%] completed"), "{said}");
    let printed = stdout(&output);
    assert!(
        printed.contains("installed io.example.tests/echo as 'echo'"),
        "{printed}"
    );

    // Served at once, and written to the file as a pinned server.
    let list = world.json(&["servers", "list", "--json"]);
    let echo = list["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .find(|s| s["server"] == "echo")
        .unwrap_or_else(|| panic!("echo is not served:\n{list:#}"));
    assert_eq!(echo["state"], "up", "{echo}");
    let text = world.config_text();
    assert!(text.starts_with("# The operator's gateway.\n"), "{text}");
    assert!(text.contains("[servers.echo]"), "{text}");
    assert!(text.contains("trust = \"pinned\""), "{text}");
    assert!(
        text.contains(&format!("http://{}/mcp", world.echo.address)),
        "{text}"
    );

    let listed = world.json(&["operations", "list", "--json"]);
    let install = listed["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .find(|o| o["id"] == id.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("{id} not listed:\n{listed:#}"));
    assert_eq!(install["state"], "completed", "{install}");
    assert_eq!(install["kind"], "install", "{install}");
    assert!(
        install["energy"].as_f64().expect("energy") > 0.0,
        "{install}"
    );
    let states = stdout(&world.ok(&["operations", "list", "--state", "completed"]));
    assert!(states.contains(&id), "{states}");

    let shown = stdout(&world.ok(&["operations", "show", &id]));
    for expected in [
        "steps:",
        "queued",
        "looking up io.example.tests/echo",
        "probation",
        "completed",
        "result:",
    ] {
        assert!(shown.contains(expected), "{expected} missing:\n{shown}");
    }
    // The default operations database: beside the ledger.
    assert!(
        world.operations_db(false).exists(),
        "operations.db beside the ledger"
    );

    // Installing it again is refused readably, and exits 1.
    let again = world.cli(&["install", "io.example.tests/echo"]);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("already configured"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn a_secret_input_goes_to_the_secrets_file_and_nowhere_else() {
    const SECRET: &str = "s3cret-value-123";
    let mut world = World::new(true);
    world.publish_echo("io.example.tests/keyed", &secret_header());
    world.start_gateway();

    let output = world.ok(&["install", "io.example.tests/keyed", "--detach"]);
    let id = stdout(&output).trim().to_owned();
    assert_eq!(queued_id(&output), id);
    let waiting = world.wait_operation(&id, "waiting for the key", |o| {
        o["waiting"]["for"] == "input"
    });
    assert_eq!(
        waiting["waiting"]["names"],
        json!(["X-Api-Key"]),
        "{waiting}"
    );
    let shown = stdout(&world.ok(&["operations", "show", &id]));
    assert!(shown.contains("waiting for input: X-Api-Key"), "{shown}");

    let given = world.cli_with(
        &["operations", "input", &id, "--from-stdin"],
        Some(&format!("# the key\nX-Api-Key={SECRET}\n")),
    );
    assert!(
        given.status.success(),
        "{}\n{}",
        stdout(&given),
        stderr(&given)
    );
    assert!(stdout(&given).contains("gave"), "{}", stdout(&given));
    let done = world.wait_operation(&id, "the install to end", |o| {
        o["state"] != "in_progress" && o["state"] != "queued"
    });
    assert_eq!(done["state"], "completed", "{done:#}\n{}", world.log());

    // The entry refers to the secret; the secret is in the secrets file alone.
    let text = world.config_text();
    assert!(text.contains("[servers.keyed]"), "{text}");
    assert!(
        text.contains("${SWITCHBOARD_SECRET_KEYED_X_API_KEY_"),
        "{text}"
    );
    let status = stdout(&world.ok(&["status", "--json"]));
    let list = stdout(&world.ok(&["operations", "list", "--json"]));
    let show = stdout(&world.ok(&["operations", "show", &id, "--json"]));
    let gateway_log = world.log();
    let mut places: Vec<(String, Vec<u8>)> = vec![
        ("the config file".into(), text.into_bytes()),
        ("status --json".into(), status.into_bytes()),
        ("operations list --json".into(), list.into_bytes()),
        ("operations show --json".into(), show.into_bytes()),
        ("the gateway's stderr".into(), gateway_log.into_bytes()),
    ];
    for dir in [world.path("data"), world.path("ops")] {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let bytes = std::fs::read(entry.path()).expect("read");
            places.push((entry.path().display().to_string(), bytes));
        }
    }
    assert!(
        places
            .iter()
            .any(|(name, _)| name.ends_with("operations.db")),
        "the operations database is among the files checked"
    );
    assert!(
        places.iter().any(|(name, _)| name.ends_with("ledger.db")),
        "the ledger is among the files checked"
    );
    for (name, bytes) in &places {
        assert!(
            !bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
            "the secret leaked into {name}"
        );
    }
    let secrets = std::fs::read_to_string(world.secrets()).expect("the secrets file");
    assert!(
        secrets.lines().any(|line| line
            .strip_prefix("SWITCHBOARD_SECRET_KEYED_X_API_KEY_")
            .is_some_and(|rest| rest.ends_with(&format!("={SECRET}")))),
        "{secrets}"
    );
    let mode = std::fs::metadata(world.secrets())
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the secrets file is private");

    // A second install under the same server id, a key of its own in the request (as the
    // admin endpoint takes one), is refused before the key is written: the running server's
    // secret is not replaced.
    let admin: Value =
        serde_json::from_str(&std::fs::read_to_string(world.admin()).expect("the admin file"))
            .expect("admin JSON");
    let body = json!({"work": {"op": "install", "name": "io.example.tests/keyed",
        "server": "keyed", "activation": "now", "values": {"X-Api-Key": "replaced-value-456"}}});
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (status, answer) = runtime.block_on(async {
        let response = reqwest::Client::new()
            .post(format!(
                "{}/operations",
                admin["url"].as_str().expect("url")
            ))
            .bearer_auth(admin["token"].as_str().expect("token"))
            .json(&body)
            .send()
            .await
            .expect("post");
        (
            response.status().as_u16(),
            response.text().await.unwrap_or_default(),
        )
    });
    assert!(
        status >= 400 && answer.contains("already configured"),
        "{status}: {answer}"
    );
    assert_eq!(
        std::fs::read_to_string(world.secrets()).expect("the secrets file"),
        secrets,
        "the secrets file is as it was"
    );
}

#[test]
fn cancelling_a_waiting_install_leaves_nothing() {
    let mut world = World::new(true);
    world.publish_echo("io.example.tests/keyed", &secret_header());
    world.start_gateway();
    let before = world.config_text();

    let id = stdout(&world.ok(&["install", "io.example.tests/keyed", "--detach"]))
        .trim()
        .to_owned();
    world.wait_operation(&id, "waiting for the key", |o| {
        o["waiting"]["for"] == "input"
    });
    let cancelled =
        stdout(&world.ok(&["operations", "cancel", &id, "--reason", "changed my mind"]));
    assert!(cancelled.contains("changed my mind"), "{cancelled}");
    let operation = world.operation(&id);
    assert_eq!(operation["state"], "cancelled", "{operation}");
    assert!(operation.get("waiting").is_none(), "{operation}");

    assert_eq!(world.config_text(), before, "the config file is untouched");
    assert!(!world.path("servers/keyed").exists(), "nothing installed");
    let list = world.json(&["servers", "list", "--json"]);
    assert!(
        !list["servers"]
            .as_array()
            .expect("servers")
            .iter()
            .any(|s| s["server"] == "keyed"),
        "{list}"
    );
    // Over: neither cancelled again nor given input.
    let again = world.cli(&["operations", "cancel", &id]);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("[finished]"), "{}", stderr(&again));
    let late = world.cli_with(
        &["operations", "input", &id, "--from-stdin"],
        Some("X-Api-Key=x\n"),
    );
    assert_eq!(late.status.code(), Some(1));
    assert!(stderr(&late).contains("[not_waiting]"), "{}", stderr(&late));
    let missing = world.cli(&["operations", "show", "01NOSUCHOPERATION"]);
    assert!(
        stderr(&missing).contains("[not_found]"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn without_a_gateway_operations_list_runs_despite_an_unrelated_unset_variable() {
    let world = World::new(false);
    let mut text = world.config_text();
    text.push_str(
        "\n[telemetry]\nendpoint = \"http://127.0.0.1:9\"\n\
         headers = { Authorization = \"Bearer ${SWITCHBOARD_TEST_UNSET_OTLP_TOKEN}\" }\n",
    );
    std::fs::write(&world.config, text).expect("write the config");

    let listed = world.ok(&["operations", "list"]);
    assert!(
        stdout(&listed).contains("no operations"),
        "{}",
        stdout(&listed)
    );
    let said = stderr(&listed);
    assert!(
        said.contains("variables not set: SWITCHBOARD_TEST_UNSET_OTLP_TOKEN"),
        "{said}"
    );
    // So does a dry run of a version, which looks it up in the registries.
    world.publish_echo("io.example.tests/echo", &json!([]));
    let version = world.ok(&["install", "io.example.tests/echo@1.2.0", "--dry-run"]);
    assert!(
        stdout(&version).contains("io.example.tests/echo 1.2.0"),
        "{}",
        stdout(&version)
    );
    // An install needs the whole config: there, the unset variable still refuses it.
    let refused = world.cli(&["install", "io.example.tests/echo"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("SWITCHBOARD_TEST_UNSET_OTLP_TOKEN is not set"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn without_a_gateway_install_runs_here_and_writes_the_file() {
    let world = World::new(false);
    world.publish_echo("io.example.tests/echo", &json!([]));

    let found = world.cli(&["search-servers", "echo", "--json"]);
    assert!(found.status.success(), "{}", stderr(&found));
    assert!(
        stderr(&found).contains("no gateway runs this config"),
        "{}",
        stderr(&found)
    );
    assert_eq!(
        stdout_json(&found)["servers"][0]["name"],
        "io.example.tests/echo"
    );

    let detached = world.cli(&["install", "io.example.tests/echo", "--detach"]);
    assert_eq!(detached.status.code(), Some(1));
    assert!(
        stderr(&detached).contains("--detach needs a running gateway"),
        "{}",
        stderr(&detached)
    );

    let output = world.ok(&["install", "io.example.tests/echo", "--json"]);
    let id = queued_id(&output);
    let operation = stdout_json(&output);
    assert_eq!(operation["state"], "completed", "{operation}");
    assert!(
        stderr(&output).contains("the change was written to"),
        "{}",
        stderr(&output)
    );
    let text = world.config_text();
    assert!(
        text.contains("[servers.echo]") && text.contains("trust = \"pinned\""),
        "{text}"
    );

    // The operations database keeps it for the next look.
    let listed = world.json(&["operations", "list", "--json"]);
    assert!(
        listed["operations"]
            .as_array()
            .expect("operations")
            .iter()
            .any(|o| o["id"] == id.as_str() && o["state"] == "completed"),
        "{listed}"
    );
    assert_eq!(world.operation(&id)["kind"], "install");
    let refused = world.cli(&["operations", "cancel", &id]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("only a running gateway"),
        "{}",
        stderr(&refused)
    );

    // A secret given with --env is handed over when the operation asks, never in the request.
    const SECRET: &str = "local-secret-42";
    world.publish_echo("io.example.tests/keyed", &secret_header());
    let env = format!("X-Api-Key={SECRET}");
    let keyed = world.ok(&["install", "io.example.tests/keyed", "--env", &env]);
    assert!(
        stderr(&keyed).contains("its input: X-Api-Key"),
        "{}",
        stderr(&keyed)
    );
    let text = world.config_text();
    assert!(
        text.contains("${SWITCHBOARD_SECRET_KEYED_X_API_KEY_"),
        "{text}"
    );
    let database = std::fs::read(world.operations_db(false)).expect("the operations database");
    for (name, bytes) in [
        ("the config", text.as_bytes()),
        ("the operations database", &database),
    ] {
        assert!(
            !bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
            "the secret leaked into {name}"
        );
    }
    let secrets = std::fs::read_to_string(world.secrets()).expect("the secrets file");
    assert!(secrets.contains(SECRET), "{secrets}");
}

/// An `install` without a gateway whose local Host cannot be built (here: a `[shared] keys`
/// file that does not exist) closes the ledger it opened: its journal does not stay behind
/// for the next start to replay.
#[test]
fn without_a_gateway_an_install_whose_host_fails_leaves_no_journal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "[gateway]\nledger = {}\n\n[shared]\nkeys = {}\n\n[servers.clock]\nbuiltin = \"clock\"\n",
            quoted(&dir.path().join("ledger.db").display().to_string()),
            quoted(&dir.path().join("missing/keys.json").display().to_string())
        ),
    );
    let config = config.display().to_string();
    let output = isolated(dir.path(), &["--config", &config, "install", "echo"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("[shared] keys"),
        "{}",
        stderr(&output)
    );
    assert_eq!(journals(dir.path()), Vec::<String>::new());
}
