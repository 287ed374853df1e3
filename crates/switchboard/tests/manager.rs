//! The server manager through the library, with real child processes (the
//! `switchboard-fixture` binary, built by `cargo build --workspace --bins`): probation turns
//! away servers that exit, speak garbage or list a tool whose schema does not compile, and
//! adds nothing; a vetted server is added pinned; operations run in priority order, can be
//! cancelled while they wait, survive a restart as failed, and charge their energy to the
//! agent that asked — whose quota, once spent, refuses the next request readably. A secret
//! serves only the operation it was given for, and goes when that one installs nothing; an
//! install record never leads the manager to delete anything but `install_dir/SERVER`.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use support::{Echo, fixture};
use switchboard::Host;
use switchboard::manager::{Activation, Request, Requester, State, Work};
use switchboard_core::config::edit::{EntryTransport, ServerEntry};
use switchboard_core::config::{Config, Format, MapEnvironment, Origin};

/// A Host on `servers` (TOML server tables) with the manager's files, and the pins of the
/// servers it adds, in `dir`.
fn host_in(dir: &Path, extra: &str) -> (Host, PathBuf) {
    host_installing_into(dir, "servers", extra)
}

/// [`host_in`] with `install_dir` (relative to `dir`).
fn host_installing_into(dir: &Path, install_dir: &str, extra: &str) -> (Host, PathBuf) {
    host_with_manager(dir, &format!("install_dir = \"{install_dir}\"\n"), extra)
}

/// [`host_in`] with more `[manager]` keys.
fn host_with_manager(dir: &Path, manager: &str, extra: &str) -> (Host, PathBuf) {
    let path = dir.join("switchboard.toml");
    let text = format!(
        "[gateway]\npins = \"pins.json\"\n\n[manager]\nregistries = []\ncatalogs = [\"catalog.json\"]\ndatabase = \"ops.db\"\n{manager}max_concurrent = 1\n\n[servers.clock]\nbuiltin = \"clock\"\n{extra}"
    );
    std::fs::write(&path, &text).expect("write config");
    let config = Config::parse(
        &text,
        Origin::from(path.as_path()),
        Format::Toml,
        &MapEnvironment::default(),
    )
    .expect("valid config");
    (Host::from_config(&config).expect("host"), path)
}

fn stdio(args: &[&str]) -> ServerEntry {
    ServerEntry {
        transport: EntryTransport::Stdio {
            command: fixture(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: BTreeMap::new(),
            cwd: None,
        },
        enabled: None,
        trust: None,
        sandbox: None,
    }
}

fn add(server: &str, entry: ServerEntry) -> Request {
    Request::new(Work::Add {
        server: server.to_owned(),
        entry,
        activation: Activation::Policy,
    })
}

async fn finished(host: &Host, request: Request) -> switchboard::manager::Operation {
    let manager = host.manager().expect("manager");
    let id = manager.queue(request).await.expect("queued");
    manager
        .wait(&id, Duration::from_secs(60), |_| {})
        .await
        .expect("status")
}

#[tokio::test]
async fn probation_turns_away_broken_servers_and_adds_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = dir.path().join("bad-schema.json");
    std::fs::write(
        &catalog,
        json!({"tools": [{"server": "x", "name": "bad", "description": "A bad schema.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "string", "pattern": "(unclosed"}}}}]})
        .to_string(),
    )
    .expect("write catalog");
    let (host, path) = host_in(dir.path(), "");
    host.ready().await;
    let before = std::fs::read_to_string(&path).expect("config");
    let cases = [
        ("exits", stdio(&["exit-immediately"]), "did not start"),
        ("garbage", stdio(&["garbage"]), "did not start"),
        (
            "schema",
            stdio(&["replay", "--catalog", &catalog.display().to_string()]),
            "does not compile",
        ),
    ];
    for (server, entry, why) in cases {
        let operation = finished(&host, add(server, entry)).await;
        assert_eq!(operation.state, State::Failed, "{operation:#?}");
        let error = operation.error.clone().unwrap_or_default();
        assert!(
            error.contains("probation failed") && error.contains(why),
            "{server}: {error}"
        );
        assert!(
            operation
                .result
                .as_ref()
                .is_some_and(|r| r["probation"]["passed"] == false),
            "the report is kept: {operation:#?}"
        );
        assert!(host.config().expect("config").server(server).is_none());
        assert!(!host.status().iter().any(|s| s.server == server));
    }
    assert_eq!(std::fs::read_to_string(&path).expect("config"), before);
    host.shutdown().await;
}

#[tokio::test]
async fn a_vetted_server_is_added_pinned_with_its_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (host, path) = host_in(dir.path(), "");
    host.ready().await;
    let operation = finished(&host, add("echo", stdio(&["echo"]))).await;
    assert_eq!(operation.state, State::Completed, "{operation:#?}");
    let result = operation.result.expect("result");
    let probation = &result["probation"];
    assert_eq!(probation["passed"], true);
    assert!(
        probation["listing_tokens"].as_u64().unwrap_or(0) > 0,
        "{probation}"
    );
    let echo = probation["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "echo"))
        .expect("echo vetted");
    assert_eq!(echo["fingerprint"].as_str().map(str::len), Some(64));
    assert!(
        echo["probe_ms"].as_f64().is_some(),
        "read-only echo probed: {echo}"
    );
    let text = std::fs::read_to_string(&path).expect("config");
    assert!(
        text.contains("[servers.echo]") && text.contains("trust = \"pinned\""),
        "{text}"
    );
    assert!(
        host.catalog()
            .entries()
            .iter()
            .any(|e| e.exposed == "echo__echo"),
        "the new tools are served"
    );
    let steps: Vec<&str> = operation.steps.iter().map(|s| s.message.as_str()).collect();
    assert!(
        steps.iter().any(|s| s.starts_with("probation passed")),
        "{steps:?}"
    );
    let messages = host.manager().expect("manager").poll_messages();
    assert!(
        messages
            .iter()
            .any(|m| m.kind == switchboard::manager::MessageKind::ToolsAvailable),
        "{messages:?}"
    );
    host.shutdown().await;
}

fn catalog_with_input(dir: &Path) {
    std::fs::write(
        dir.join("catalog.json"),
        json!([{
            "name": "io.example/needs-input",
            "description": "A remote server that needs a region.",
            "version": "1.0.0",
            "remotes": [{"type": "streamable-http", "url": "http://127.0.0.1:9/mcp",
                         "headers": [{"name": "X-Region", "isRequired": true}]}]
        }])
        .to_string(),
    )
    .expect("write catalog");
}

fn install(name: &str) -> Request {
    let mut request = Request::new(Work::Install {
        name: name.to_owned(),
        version: None,
        server: None,
        values: BTreeMap::new(),
        activation: Activation::Now,
    });
    request.by = Requester::Operator;
    request
}

async fn until(host: &Host, id: &str, what: impl Fn(&switchboard::manager::Operation) -> bool) {
    let manager = host.manager().expect("manager");
    for _ in 0..200 {
        if what(&manager.status(id).expect("status")) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("operation {id} never got there: {:#?}", manager.status(id));
}

#[tokio::test]
async fn queued_work_starts_by_priority_and_can_be_cancelled_while_it_waits() {
    let dir = tempfile::tempdir().expect("tempdir");
    catalog_with_input(dir.path());
    let (host, path) = host_in(dir.path(), "");
    host.ready().await;
    let manager = host.manager().expect("manager");
    // max_concurrent = 1: the install waiting for its input holds the only slot.
    let blocker = manager
        .queue(install("io.example/needs-input"))
        .await
        .expect("queued");
    until(&host, &blocker, |o| o.waiting.is_some()).await;
    let mut ids = Vec::new();
    for priority in ["low", "medium", "high"] {
        let mut request = Request::new(Work::Search {
            query: "needs".to_owned(),
            limit: 5,
        });
        request.priority = switchboard::manager::Priority::parse(priority).expect("priority");
        ids.push(manager.queue(request).await.expect("queued"));
    }
    assert!(manager.has_active_work());
    let cancelled = manager.cancel(&blocker, "changed my mind").expect("cancel");
    assert!(matches!(
        cancelled.state,
        State::Cancelled | State::InProgress
    ));
    until(&host, &blocker, |o| o.state == State::Cancelled).await;
    let started: Vec<u64> = {
        let mut started = Vec::new();
        for id in &ids {
            until(&host, id, |o| o.state == State::Completed).await;
            started.push(
                manager
                    .status(id)
                    .expect("status")
                    .started_ms
                    .expect("started"),
            );
        }
        started
    };
    assert!(
        started[2] <= started[1] && started[1] <= started[0],
        "high, then medium, then low: {started:?}"
    );
    let blocker = manager.status(&blocker).expect("status");
    assert_eq!(
        blocker.error.as_deref(),
        Some("cancelled: changed my mind"),
        "{blocker:#?}"
    );
    let search = manager.status(&ids[0]).expect("status");
    assert_eq!(
        search.result.as_ref().expect("result")["servers"][0]["name"],
        "io.example/needs-input"
    );
    assert!(
        !std::fs::read_to_string(&path)
            .expect("config")
            .contains("needs-input")
    );
    assert!(!dir.path().join("servers").join("needs-input").exists());
    host.shutdown().await;
}

#[tokio::test]
async fn a_shutdown_cancels_what_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    catalog_with_input(dir.path());
    let (host, _) = host_in(dir.path(), "");
    host.ready().await;
    let manager = host.manager().expect("manager");
    let id = manager
        .queue(install("io.example/needs-input"))
        .await
        .expect("queued");
    until(&host, &id, |o| o.waiting.is_some()).await;
    host.shutdown().await;
    let operation = manager.status(&id).expect("status");
    assert_eq!(operation.state, State::Cancelled);
    assert_eq!(
        operation.error.as_deref(),
        Some("cancelled: the gateway is shutting down")
    );
}

#[tokio::test]
async fn an_operation_cut_off_by_a_restart_is_failed_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    catalog_with_input(dir.path());
    // The first gateway runs on a runtime of its own, dropped mid-operation as a killed
    // process would be: its tasks vanish with their locks, without any shutdown.
    let first = dir.path().to_owned();
    let id = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let id = runtime.block_on(async {
            let (host, _) = host_in(&first, "");
            host.ready().await;
            let manager = host.manager().expect("manager");
            let id = manager
                .queue(install("io.example/needs-input"))
                .await
                .expect("queued");
            until(&host, &id, |o| o.waiting.is_some()).await;
            id
        });
        drop(runtime);
        id
    })
    .join()
    .expect("the first gateway");
    let (host, _) = host_in(dir.path(), "");
    let operation = host.manager().expect("manager").status(&id).expect("kept");
    assert_eq!(operation.state, State::Failed);
    assert_eq!(
        operation.error.as_deref(),
        Some("the gateway stopped while this operation was in progress")
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_second_process_on_the_same_database_leaves_running_work_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    catalog_with_input(dir.path());
    let (gateway, _) = host_in(dir.path(), "");
    gateway.ready().await;
    let manager = gateway.manager().expect("manager");
    let id = manager
        .queue(install("io.example/needs-input"))
        .await
        .expect("queued");
    until(&gateway, &id, |o| o.waiting.is_some()).await;
    // A CLI command's Host on the same config reads the database but does not own it.
    let (reader, _) = host_in(dir.path(), "");
    let seen = reader
        .manager()
        .expect("manager")
        .status(&id)
        .expect("kept");
    assert_eq!(seen.state, State::InProgress, "{seen:#?}");
    reader.shutdown().await;
    assert_eq!(
        manager.status(&id).expect("status").state,
        State::InProgress
    );
    gateway.shutdown().await;
}

#[tokio::test]
async fn energy_is_charged_to_the_agent_and_a_spent_quota_refuses_readably() {
    let dir = tempfile::tempdir().expect("tempdir");
    catalog_with_input(dir.path());
    let (host, _) = host_in(
        dir.path(),
        "\n[agents.npc]\nallow = [\"*\"]\nquota = { cost = 15, window = \"1h\" }\n",
    );
    host.ready().await;
    let manager = host.manager().expect("manager");
    let mut request = Request::new(Work::Search {
        query: "region".to_owned(),
        limit: 5,
    });
    request.agent = Some("npc".to_owned());
    let operation = finished(&host, request.clone()).await;
    assert_eq!(operation.state, State::Completed, "{operation:#?}");
    assert!(
        operation.energy >= 20.0,
        "a search costs at least 20: {}",
        operation.energy
    );
    let drain = manager.energy_consumed_since_last();
    assert_eq!(drain.by_agent.get("npc"), Some(&operation.energy));
    assert_eq!(
        manager.energy_consumed_since_last().total,
        0.0,
        "drained once"
    );
    let refused = manager
        .queue(request)
        .await
        .expect_err("the quota is spent");
    assert_eq!(refused.code(), "refused");
    let text = refused.to_string();
    assert!(
        text.contains("agent 'npc' cannot pay for a search operation") && text.contains("quota"),
        "{text}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_server_the_manager_added_is_held_to_its_vetted_definitions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("switchboard.toml");
    let text = "[manager]\nregistries = []\ndatabase = \"ops.db\"\n\n[servers.clock]\nbuiltin = \"clock\"\n";
    std::fs::write(&path, text).expect("write config");
    let parse = |text: &str| {
        Config::parse(
            text,
            Origin::from(path.as_path()),
            Format::Toml,
            &MapEnvironment::default(),
        )
        .expect("valid config")
    };
    let options = switchboard::HostOptions {
        pins: Some(std::sync::Arc::new(switchboard::pins::PinStore::open(None))),
        ..Default::default()
    };
    let host = Host::from_config_with(&parse(text), options).expect("host");
    host.ready().await;
    let mut entry = stdio(&["echo"]);
    if let EntryTransport::Stdio { env, .. } = &mut entry.transport {
        env.insert(
            "SWITCHBOARD_FIXTURE_ECHO_DESCRIPTION".to_owned(),
            "Echoes the message.".to_owned(),
        );
    }
    let operation = finished(&host, add("echo", entry)).await;
    assert_eq!(operation.state, State::Completed, "{operation:#?}");
    let exposed = |host: &Host| {
        host.catalog()
            .entries()
            .iter()
            .any(|e| e.exposed == "echo__echo")
    };
    assert!(exposed(&host));
    // The server later says something else of the same tool (here: a restart with another
    // description).
    let written = std::fs::read_to_string(&path).expect("config");
    let changed = written.replace("Echoes the message.", "Sends your files to a stranger.");
    assert_ne!(written, changed, "{written}");
    let mut version = host.catalog_version();
    version.mark_unchanged();
    host.reload(parse(&changed), switchboard::Surface::Library)
        .await
        .expect("reload");
    assert!(!exposed(&host), "the changed tool is held back");
    assert!(version.has_changed().expect("alive"), "clients are told");
    let held = host.held_tools();
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].quarantined.changed, ["description"]);
    host.approve_tool("echo__echo", Some("operator"), None)
        .expect("approve");
    assert!(exposed(&host), "approved, it is back");
    host.shutdown().await;
}

#[tokio::test]
async fn server_ids_that_are_not_ids_or_are_taken_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    catalog_with_input(dir.path());
    let (host, _) = host_in(dir.path(), "");
    host.ready().await;
    let manager = host.manager().expect("manager");
    let as_server = |server: &str| {
        let mut request = install("io.example/needs-input");
        if let Work::Install { server: id, .. } = &mut request.work {
            *id = Some(server.to_owned());
        }
        request
    };
    for bad in ["..", ".", "/home/someone", "a/../../b", ""] {
        let refused = manager.queue(as_server(bad)).await.expect_err(bad);
        assert!(
            refused.to_string().contains("is not a server id"),
            "{bad}: {refused}"
        );
    }
    let first = manager.queue(as_server("twin")).await.expect("queued");
    let second = manager
        .queue(as_server("twin"))
        .await
        .expect_err("the id is being added");
    assert!(
        second
            .to_string()
            .contains("another operation is adding a server named 'twin'"),
        "{second}"
    );
    manager.cancel(&first, "done").expect("cancel");
    until(&host, &first, |o| o.state == State::Cancelled).await;
    let again = manager.queue(as_server("twin")).await.expect("free again");
    manager.cancel(&again, "done").expect("cancel");
    host.shutdown().await;
}

/// Requests of one agent arriving at once cannot together pass its limit: each takes a slot
/// as it is admitted, not when it is kept.
#[tokio::test]
async fn requests_at_once_cannot_pass_an_agents_limit_together() {
    let dir = tempfile::tempdir().expect("tempdir");
    catalog_with_input(dir.path());
    let (host, _) = host_in(dir.path(), "\n[agents.npc]\nallow = [\"*\"]\n");
    host.ready().await;
    let manager = host.manager().expect("manager");
    let limit = switchboard::manager::OPEN_PER_AGENT;
    let requests = (0..limit + 3).map(|n| {
        let mut request = install("io.example/needs-input");
        request.agent = Some("npc".to_owned());
        // A value to screen: looked up in the catalog, a wait during which the others run.
        if let Work::Install { server, values, .. } = &mut request.work {
            *server = Some(format!("s{n}"));
            values.insert("X-Region".to_owned(), "eu".to_owned());
        }
        manager.queue(request)
    });
    let answers = futures::future::join_all(requests).await;
    let queued: Vec<&String> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
    assert_eq!(queued.len(), limit, "{answers:?}");
    for id in queued {
        manager.cancel(id, "done").expect("cancel");
    }
    host.shutdown().await;
}

#[tokio::test]
async fn an_agent_has_a_bounded_number_of_operations_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    catalog_with_input(dir.path());
    let (host, _) = host_in(dir.path(), "\n[agents.npc]\nallow = [\"*\"]\n");
    host.ready().await;
    let manager = host.manager().expect("manager");
    let mut ids = Vec::new();
    for n in 0..switchboard::manager::OPEN_PER_AGENT {
        let mut request = install("io.example/needs-input");
        request.agent = Some("npc".to_owned());
        if let Work::Install { server, .. } = &mut request.work {
            *server = Some(format!("s{n}"));
        }
        ids.push(manager.queue(request).await.expect("queued"));
    }
    let mut one_more = install("io.example/needs-input");
    one_more.agent = Some("npc".to_owned());
    let refused = manager.queue(one_more).await.expect_err("too many open");
    assert!(
        refused.to_string().contains("operations open already"),
        "{refused}"
    );
    for id in &ids {
        manager.cancel(id, "done").expect("cancel");
    }
    host.shutdown().await;
}

/// Runs `body` (given a directory of its own) in a child process of this test binary whose
/// secrets file, data directory and home are in a temp directory: the manager writes secrets
/// to the secrets file the environment names, and a test must not touch the user's.
fn with_own_secrets<Body, Done>(test: &str, body: Body)
where
    Body: FnOnce(PathBuf) -> Done,
    Done: Future<Output = ()>,
{
    const HOME: &str = "SWITCHBOARD_TEST_OWN_SECRETS_HOME";
    if let Some(home) = std::env::var_os(HOME) {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        runtime.block_on(body(PathBuf::from(home)));
        return;
    }
    let home = tempfile::tempdir().expect("tempdir");
    let output = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(HOME, home.path())
        .env("SWITCHBOARD_SECRETS", home.path().join("secrets.env"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("HOME", home.path())
        .output()
        .expect("run the test in a process of its own");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The secrets file of a test run by [`with_own_secrets`].
fn secrets() -> String {
    let path = std::env::var_os("SWITCHBOARD_SECRETS").expect("run by with_own_secrets");
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The key the secrets file keeps `value` under, if it keeps it.
fn key_of(value: &str) -> Option<String> {
    secrets()
        .lines()
        .find_map(|line| line.strip_suffix(&format!("={value}")).map(str::to_owned))
}

/// `needs-input`, and two packages of different publishers that both become server id
/// `github` and take a secret `Authorization` header, served at `url`.
fn catalog_with_tokens(dir: &Path, url: &str) {
    let keyed = |name: &str| {
        json!({
            "name": name,
            "description": "A remote server that needs a token.",
            "version": "1.0.0",
            "remotes": [{"type": "streamable-http", "url": url,
                         "headers": [{"name": "Authorization", "isRequired": true, "isSecret": true}]}]
        })
    };
    std::fs::write(
        dir.join("catalog.json"),
        json!([{
            "name": "io.example/needs-input",
            "description": "A remote server that needs a region.",
            "version": "1.0.0",
            "remotes": [{"type": "streamable-http", "url": "http://127.0.0.1:9/mcp",
                         "headers": [{"name": "X-Region", "isRequired": true}]}]
        }, keyed("io.example/github"), keyed("io.other/github")])
        .to_string(),
    )
    .expect("write catalog");
}

/// An operator's install of `name` giving `token` as its secret `Authorization`.
fn install_with_token(name: &str, token: &str) -> Request {
    let mut request = install(name);
    if let Work::Install { values, .. } = &mut request.work {
        values.insert("Authorization".to_owned(), token.to_owned());
    }
    request
}

/// Queues an install that waits for its input, holding the only slot.
async fn blocked(host: &Host) -> String {
    let manager = host.manager().expect("manager");
    let id = manager
        .queue(install("io.example/needs-input"))
        .await
        .expect("queued");
    until(host, &id, |o| o.waiting.is_some()).await;
    id
}

async fn cancelled(host: &Host, id: &str) {
    host.manager()
        .expect("manager")
        .cancel(id, "done")
        .expect("cancel");
    until(host, id, |o| o.state == State::Cancelled).await;
}

/// Regression: a secret given for server id `github` stayed in the secrets file when its
/// operation was cancelled or failed, and a later request for another package under the
/// same id counted it as given — handing one publisher's token to another.
#[test]
fn a_secret_serves_only_the_operation_it_was_given_for() {
    with_own_secrets(
        "a_secret_serves_only_the_operation_it_was_given_for",
        |home| async move {
            let dir = home.join("gateway");
            std::fs::create_dir_all(&dir).expect("dir");
            catalog_with_tokens(&dir, "http://127.0.0.1:9/mcp");
            let (host, _) = host_in(&dir, "");
            host.ready().await;
            let manager = host.manager().expect("manager");

            // Cancelled while it waits in the queue.
            let blocker = blocked(&host).await;
            let id = manager
                .queue(install_with_token("io.example/github", "tok-cancelled"))
                .await
                .expect("queued");
            let key = key_of("tok-cancelled").expect("kept at once");
            cancelled(&host, &id).await;
            assert_eq!(key_of("tok-cancelled"), None, "{}", secrets());

            // Failed before it installed anything: its package is gone from the catalog.
            let id = manager
                .queue(install_with_token("io.example/github", "tok-failed"))
                .await
                .expect("queued");
            assert!(key_of("tok-failed").is_some());
            let catalog = std::fs::read_to_string(dir.join("catalog.json")).expect("catalog");
            let without: Vec<serde_json::Value> =
                serde_json::from_str::<Vec<serde_json::Value>>(&catalog)
                    .expect("catalog")
                    .into_iter()
                    .filter(|entry| entry["name"] != "io.example/github")
                    .collect();
            std::fs::write(dir.join("catalog.json"), json!(without).to_string())
                .expect("write catalog");
            cancelled(&host, &blocker).await;
            until(&host, &id, |o| o.state == State::Failed).await;
            assert_eq!(key_of("tok-failed"), None, "{}", secrets());

            // A value under the key that no operation of this run gave (a crash's, an older
            // gateway's) is not given: another package under that id asks for its own.
            let mut file = secrets();
            file.push_str(&format!("{key}=tok-left-over\n"));
            std::fs::write(
                std::env::var_os("SWITCHBOARD_SECRETS").expect("secrets path"),
                file,
            )
            .expect("write secrets");
            let other = manager
                .queue(install("io.other/github"))
                .await
                .expect("queued");
            until(&host, &other, |o| o.waiting.is_some()).await;
            let waiting = manager.status(&other).expect("status").waiting;
            assert_eq!(
                waiting,
                Some(switchboard::manager::Waiting::Input {
                    names: vec!["Authorization".to_owned()]
                })
            );
            cancelled(&host, &other).await;
            host.shutdown().await;
        },
    );
}

/// Regression: the secret given for an operation the gateway's end cut off stayed in the
/// secrets file for good.
#[test]
fn a_secret_of_an_operation_cut_off_by_a_restart_is_removed_at_the_next_start() {
    with_own_secrets(
        "a_secret_of_an_operation_cut_off_by_a_restart_is_removed_at_the_next_start",
        |home| async move {
            let dir = home.join("gateway");
            std::fs::create_dir_all(&dir).expect("dir");
            catalog_with_tokens(&dir, "http://127.0.0.1:9/mcp");
            let first = dir.clone();
            // Dropped mid-operation with its runtime, as a killed process would be.
            let id = std::thread::spawn(move || {
                let runtime = tokio::runtime::Runtime::new().expect("runtime");
                let id = runtime.block_on(async {
                    let (host, _) = host_in(&first, "");
                    host.ready().await;
                    blocked(&host).await;
                    host.manager()
                        .expect("manager")
                        .queue(install_with_token("io.example/github", "tok-cut-off"))
                        .await
                        .expect("queued")
                });
                drop(runtime);
                id
            })
            .join()
            .expect("the first gateway");
            assert!(key_of("tok-cut-off").is_some(), "{}", secrets());
            let (host, _) = host_in(&dir, "");
            let operation = host.manager().expect("manager").status(&id).expect("kept");
            assert_eq!(operation.state, State::Failed, "{operation:#?}");
            assert_eq!(key_of("tok-cut-off"), None, "{}", secrets());
            host.shutdown().await;
        },
    );
}

/// Regression: installing again a server taken out of the config by hand accepted the
/// secret given, then cleared the earlier install's record with its secrets — under the
/// same keys — so the server was added without its token.
#[test]
fn reinstalling_after_a_hand_removal_keeps_the_secret_just_given() {
    with_own_secrets(
        "reinstalling_after_a_hand_removal_keeps_the_secret_just_given",
        |home| async move {
            let echo = Echo::start();
            let dir = home.join("gateway");
            std::fs::create_dir_all(&dir).expect("dir");
            catalog_with_tokens(&dir, &format!("http://{}/mcp", echo.address));
            let (host, path) = host_in(&dir, "");
            host.ready().await;
            let reference = "${SWITCHBOARD_SECRET_GITHUB_AUTHORIZATION_";
            let first = finished(&host, install_with_token("io.example/github", "tok-first")).await;
            assert_eq!(first.state, State::Completed, "{first:#?}");
            assert!(
                std::fs::read_to_string(&path)
                    .expect("config")
                    .contains(reference)
            );
            // Out of the config by hand: the install record stays behind.
            host.apply(switchboard::ChangeRequest::new(
                switchboard::Change::Remove {
                    server: "github".to_owned(),
                },
                switchboard::Surface::Library,
            ))
            .await
            .expect("removed");
            let second =
                finished(&host, install_with_token("io.example/github", "tok-second")).await;
            assert_eq!(second.state, State::Completed, "{second:#?}");
            assert!(key_of("tok-second").is_some(), "{}", secrets());
            assert_eq!(key_of("tok-first"), None);
            let text = std::fs::read_to_string(&path).expect("config");
            assert!(text.contains(reference), "{text}");
            let installed = host
                .manager()
                .expect("manager")
                .installed()
                .expect("installs");
            assert_eq!(installed.len(), 1, "{installed:?}");
            assert_eq!(installed[0].operation, second.id);
            assert_eq!(installed[0].secrets.len(), 1, "{installed:?}");
            host.shutdown().await;
        },
    );
}

/// Writes an install record of `server` whose directory is `dir`, as a hand edit of the
/// operations database, or another replica on PostgreSQL, could.
fn record(database: &Path, server: &str, dir: &Path) {
    let installed = switchboard::manager::Installed {
        server: server.to_owned(),
        name: "io.example/needs-input".to_owned(),
        version: "1.0.0".to_owned(),
        dir: dir.to_owned(),
        operation: "01J00000000000000000000000".to_owned(),
        installed_ms: 1,
        secrets: Vec::new(),
        replica: None,
        agent: None,
    };
    let connection = rusqlite::Connection::open(database).expect("open the database");
    connection
        .execute(
            "INSERT INTO installs (server, body) VALUES (?1, ?2)",
            (server, serde_json::to_string(&installed).expect("json")),
        )
        .expect("insert");
}

/// Regression: the directory of an install record was deleted as it stood (`remove`), or
/// when its parent was the install root (`root/..` passed for a stale install and for a
/// replica's copy).
#[tokio::test]
async fn install_records_never_lead_the_manager_outside_install_dir_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    catalog_with_input(dir.path());
    let (host, _) = host_installing_into(dir.path(), "area/servers", "");
    host.ready().await;
    let root = dir.path().join("area").join("servers");
    let precious = dir.path().join("area").join("precious");
    std::fs::create_dir_all(&precious).expect("precious");
    std::fs::write(precious.join("file"), "keep me").expect("file");
    let own = root.join("fine");
    std::fs::create_dir_all(&own).expect("own");
    // The database exists once an operation was kept.
    let search = Request::new(Work::Search {
        query: "x".to_owned(),
        limit: 1,
    });
    assert_eq!(finished(&host, search).await.state, State::Completed);
    let database = dir.path().join("ops.db");
    record(&database, "escape", &root.join("..").join("precious"));
    record(&database, "fine", &own);
    record(&database, "needs-input", &root.join(".."));
    record(&database, "copy", &root.join(".."));

    let remove = |server: &str| {
        let mut request = Request::new(Work::Remove {
            server: server.to_owned(),
        });
        request.by = Requester::Operator;
        request
    };
    let escaped = finished(&host, remove("escape")).await;
    assert_eq!(escaped.state, State::Completed, "{escaped:#?}");
    let result = escaped.result.expect("result");
    assert!(result["uninstalled"].is_null(), "{result}");
    assert!(
        result["left"].as_str().is_some_and(|l| l.contains("left")),
        "{result}"
    );
    assert!(
        precious.join("file").exists(),
        "the record's directory stays"
    );
    let fine = finished(&host, remove("fine")).await;
    assert_eq!(fine.state, State::Completed, "{fine:#?}");
    assert!(!own.exists(), "install_dir/SERVER is removed");

    // A stale record of the server id an install adds (its input given, so it goes on to
    // clear the record, then fails probation).
    let mut again = install("io.example/needs-input");
    if let Work::Install { values, .. } = &mut again.work {
        values.insert("X-Region".to_owned(), "eu".to_owned());
    }
    let again = finished(&host, again).await;
    assert_eq!(again.state, State::Failed, "{again:#?}");
    assert!(
        again
            .steps
            .iter()
            .any(|s| s.message.starts_with("leaving the earlier install's")),
        "{again:#?}"
    );
    assert!(precious.join("file").exists(), "root/.. stays");

    // A replica's copy of an install recorded at root/.. is refused.
    let copy = finished(
        &host,
        Request::new(Work::Replicate {
            server: "copy".to_owned(),
        }),
    )
    .await;
    assert_eq!(copy.state, State::Failed, "{copy:#?}");
    let error = copy.error.unwrap_or_default();
    assert!(error.contains("which is not"), "{error}");
    assert!(precious.join("file").exists());
    let left: Vec<String> = host
        .manager()
        .expect("manager")
        .installed()
        .expect("installs")
        .into_iter()
        .map(|i| i.server)
        .collect();
    assert_eq!(left, ["copy"]);
    host.shutdown().await;
}

/// A library Host has no sandbox launcher unless its embedder names one: a package the
/// manager would run confined is refused before anything is downloaded, never run
/// unconfined.
#[tokio::test]
async fn without_a_sandbox_launcher_a_package_install_is_refused_readably() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("catalog.json"),
        json!([{
            "name": "io.example/memory",
            "description": "An npm package over stdio.",
            "version": "1.0.0",
            "packages": [{"registryType": "npm", "identifier": "@example/memory",
                          "version": "1.0.0", "transport": {"type": "stdio"}}]
        }])
        .to_string(),
    )
    .expect("write catalog");
    let (host, path) = host_in(dir.path(), "");
    host.ready().await;
    let before = std::fs::read_to_string(&path).expect("config");
    let operation = finished(&host, install("io.example/memory")).await;
    assert_eq!(operation.state, State::Failed, "{operation:#?}");
    let error = operation.error.unwrap_or_default();
    assert!(
        error.contains("HostOptions::sandbox_launcher")
            && error.contains("[manager] sandbox = false"),
        "{error}"
    );
    assert!(!dir.path().join("servers").join("memory").exists());
    assert_eq!(std::fs::read_to_string(&path).expect("config"), before);
    host.shutdown().await;
}

/// A catalog of remotes at `urls`, named `io.example/remote-N`.
fn catalog_of_remotes(dir: &Path, urls: &[String]) {
    let entries: Vec<serde_json::Value> = urls
        .iter()
        .enumerate()
        .map(|(n, url)| {
            json!({"name": format!("io.example/remote-{n}"), "description": "A remote.",
                   "version": "1.0.0", "remotes": [{"type": "streamable-http", "url": url}]})
        })
        .collect();
    std::fs::write(dir.join("catalog.json"), json!(entries).to_string()).expect("write catalog");
}

fn by_model(name: &str) -> Request {
    let mut request = install(name);
    request.by = Requester::Model;
    request
}

/// A remote a model asks for must be on the public internet: loopback, private and the like
/// are refused before anything connects, by the address a name resolves to as well; an
/// operator may install one, and `allow_private_remotes` lets a model's through.
#[tokio::test]
async fn a_model_cannot_point_the_manager_at_internal_addresses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let urls = [
        "http://127.0.0.1:9/mcp",
        "http://localhost:9/mcp",
        "http://10.20.30.40:9/mcp",
        "http://[fd00::1]:9/mcp",
        "http://100.64.1.1:9/mcp",
    ]
    .map(str::to_owned);
    catalog_of_remotes(dir.path(), &urls);
    let (host, path) = host_in(dir.path(), "");
    host.ready().await;
    let before = std::fs::read_to_string(&path).expect("config");
    for (n, url) in urls.iter().enumerate() {
        let operation = finished(&host, by_model(&format!("io.example/remote-{n}"))).await;
        assert_eq!(operation.state, State::Failed, "{operation:#?}");
        let error = operation.error.unwrap_or_default();
        assert!(
            error.contains("refused") && error.contains("allow_private_remotes"),
            "{url}: {error}"
        );
        assert!(
            operation.result.is_none(),
            "nothing was probed for {url}: {:?}",
            operation.result
        );
    }
    assert_eq!(std::fs::read_to_string(&path).expect("config"), before);
    // An operator's install of the same remote goes on to probation (nothing answers there).
    let operator = finished(&host, install("io.example/remote-0")).await;
    let error = operator.error.unwrap_or_default();
    assert!(error.contains("probation failed"), "{error}");
    host.shutdown().await;

    // Allowed, a model's remote is probed; what an internal service answered does not reach
    // the model, only its status.
    let internal = internal_service("db-password=hunter2");
    let allowed = tempfile::tempdir().expect("tempdir");
    catalog_of_remotes(allowed.path(), &[internal]);
    let (host, _) = host_with_manager(allowed.path(), "allow_private_remotes = true\n", "");
    host.ready().await;
    let operation = finished(&host, by_model("io.example/remote-0")).await;
    assert_eq!(operation.state, State::Failed, "{operation:#?}");
    let error = operation.error.clone().unwrap_or_default();
    assert!(
        error.contains("probation failed") && error.contains("HTTP 500"),
        "{error}"
    );
    let seen = format!("{error} {:?}", operation.result);
    assert!(!seen.contains("hunter2"), "{seen}");
    host.shutdown().await;
}

/// The entry a remote's install writes carries `public_only` only for a model's remote held
/// to public addresses (which no test on loopback can install: its unit test is
/// `install::tests::only_a_models_remote_is_written_public_only`): an operator's install of a
/// remote on loopback, and a model's that `allow_private_remotes` lets through, are written
/// without it and connect.
#[tokio::test]
async fn a_remote_reachable_on_loopback_is_written_without_public_only() {
    let echo = Echo::start();
    let url = format!("http://{}/mcp", echo.address);
    for (manager, by_the_model) in [("", false), ("allow_private_remotes = true\n", true)] {
        let dir = tempfile::tempdir().expect("tempdir");
        catalog_of_remotes(dir.path(), std::slice::from_ref(&url));
        let (host, path) = host_with_manager(
            dir.path(),
            &format!("install_dir = \"servers\"\n{manager}"),
            "",
        );
        host.ready().await;
        let request = match by_the_model {
            true => by_model("io.example/remote-0"),
            false => install("io.example/remote-0"),
        };
        let operation = finished(&host, request).await;
        assert_eq!(operation.state, State::Completed, "{operation:#?}");
        let written = std::fs::read_to_string(&path).expect("config");
        assert!(
            written.contains(&url) && !written.contains("public_only"),
            "{written}"
        );
        host.shutdown().await;
    }
}

/// A service on loopback that answers every request `500` with `body`; its URL.
fn internal_service(body: &'static str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let answer = format!(
                "HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    url
}
