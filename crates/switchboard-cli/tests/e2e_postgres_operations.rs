//! The server manager's operations on PostgreSQL: two real `switchboard serve` replicas,
//! each with its own config file, admin endpoint and directories, on one PostgreSQL
//! (`[storage] url`), with the registry fixture serving `server.json` files and
//! `switchboard-fixture http-echo` as the server installed. An install started through
//! replica A is listed and shown with its final state through replica B (and B serves the
//! server it added); an install waiting for input on A is followed from B, which refuses to
//! change it and names A; A is killed with SIGKILL, and B marks A's open operation failed
//! with the reason, while B's own open operation is left alone; B stopped cleanly records
//! its own as cancelled.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::live::{Live, server, wait_status};
use support::*;
use switchboard_testkit::postgres::{DATABASE, Postgres};

/// The registry fixture serving `entries`, and what they point at.
struct Registry {
    _registry: Fixture,
    _echo: Option<Fixture>,
    url: String,
}

impl Registry {
    fn serve(dir: &Path, entries: &[Value], echo: Option<Fixture>) -> Self {
        let files = dir.join("registry");
        std::fs::create_dir_all(&files).expect("registry dir");
        for (n, entry) in entries.iter().enumerate() {
            std::fs::write(
                files.join(format!("{n}.json")),
                serde_json::to_vec_pretty(entry).expect("json"),
            )
            .expect("write server.json");
        }
        let registry = Fixture::start(&["registry", "--dir", &files.display().to_string()]);
        let url = registry.url("");
        Self {
            _registry: registry,
            _echo: echo,
            url,
        }
    }

    /// `io.example.tests/echo` (no inputs) and `io.example.tests/keyed` (a secret header
    /// it waits for), both remotes on an echo server of their own.
    fn remotes(dir: &Path) -> Self {
        let echo = Fixture::start(&["http-echo"]);
        let secret = json!([{"name": "X-Api-Key", "description": "The service's API key",
                             "isRequired": true, "isSecret": true}]);
        let entries: Vec<Value> = [("echo", json!([])), ("keyed", secret)]
            .into_iter()
            .map(|(name, headers)| {
                json!({
                    "name": format!("io.example.tests/{name}"),
                    "description": "Echo tools over streamable HTTP, for tests",
                    "version": "1.2.0",
                    "remotes": [{"type": "streamable-http", "url": echo.url("/mcp"), "headers": headers}],
                })
            })
            .collect();
        Self::serve(dir, &entries, Some(echo))
    }

    /// The reference memory server as an npm package (scripts/install-test-deps.sh puts it
    /// in npm's cache; the gateways run npm offline).
    fn memory(dir: &Path) -> Self {
        let entry = json!({
            "name": MEMORY_NAME,
            "description": "Knowledge-graph memory (the MCP reference server)",
            "version": MEMORY_VERSION,
            "packages": [{"registryType": "npm", "identifier": "@modelcontextprotocol/server-memory",
                          "version": MEMORY_VERSION, "transport": {"type": "stdio"}}],
        });
        Self::serve(dir, &[entry], None)
    }
}

const MEMORY_NAME: &str = "io.github.modelcontextprotocol/server-memory";
const MEMORY_VERSION: &str = "2026.8.31";

/// A replica's config: its ledger and operations database in its own directory, the
/// shared store, the registry, the install directory `servers`.
fn replica_config(dir: &Path, postgres: &Postgres, registry: &str, servers: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).expect("replica dir");
    let path = |name: &str| quoted(&dir.join(name).display().to_string());
    write_config(
        dir,
        &format!(
            "[gateway]\nledger = {}\nconnect_timeout = \"5s\"\n\n[storage]\nurl = {}\n\n\
             [manager]\nregistries = [{}]\ninstall_dir = {}\ndatabase = {}\n",
            path("ledger.db"),
            quoted(&postgres.url()),
            quoted(registry),
            quoted(&servers.display().to_string()),
            path("operations.db"),
        ),
    )
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn operation(live: &Live, id: &str) -> Value {
    live.json(&["operations", "show", id, "--json"])
}

/// Waits (up to `limit`) until operation `id`, as `live` shows it, satisfies `check`.
fn wait_operation(
    live: &Live,
    id: &str,
    limit: Duration,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let mut last = Value::Null;
    wait_for(limit, || {
        last = operation(live, id);
        check(&last).then(|| last.clone())
    })
    .unwrap_or_else(|| panic!("{what}: not seen within {limit:?}; last:\n{last:#}"))
}

/// The operations of `kind` in an `operations list --json`.
fn of_kind<'a>(listed: &'a Value, kind: &str) -> Vec<&'a Value> {
    listed["operations"]
        .as_array()
        .map(|all| all.iter().filter(|o| o["kind"] == kind).collect())
        .unwrap_or_default()
}

fn migrate(config: &Path) {
    let migrated = text(&run_bare(config, &["migrate"]));
    assert!(
        migrated.contains("applied migration 7: server manager operations"),
        "{migrated}"
    );
}

/// `what` of operation `id`'s row in PostgreSQL.
fn stored(postgres: &Postgres, id: &str, what: &str) -> String {
    postgres
        .psql(
            DATABASE,
            &format!("SELECT {what} FROM manager_operations WHERE id = '{id}'"),
        )
        .expect("the operation's row")
}

/// `install NAME --as SERVER --detach` through `live`; the operation's id.
fn install_detached(live: &Live, name: &str, server: &str) -> String {
    let output = live.cli(&["install", name, "--as", server, "--detach"]);
    assert!(output.status.success(), "install {name}: {}", text(&output));
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[test]
fn operations_are_shared_and_a_dead_replicas_are_failed_by_another() {
    let dir = tempfile::tempdir().expect("tempdir");
    let postgres = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let registry = Registry::remotes(dir.path());
    let config_a = replica_config(
        &dir.path().join("a"),
        &postgres,
        &registry.url,
        &dir.path().join("a/servers"),
    );
    let config_b = replica_config(
        &dir.path().join("b"),
        &postgres,
        &registry.url,
        &dir.path().join("b/servers"),
    );
    migrate(&config_a);
    let mut a = Live::start(&dir.path().join("a"), config_a, &[]);
    let mut b = Live::start(&dir.path().join("b"), config_b, &[]);

    // An install through A, followed to its end there; B lists and shows it as it ended.
    let installed = a.cli(&["install", "io.example.tests/echo"]);
    assert!(installed.status.success(), "{}", text(&installed));
    let id = text(&installed)
        .lines()
        .find_map(|line| line.strip_prefix("install ")?.strip_suffix(" queued"))
        .unwrap_or_else(|| panic!("no 'install ID queued':\n{}", text(&installed)))
        .to_owned();
    // Found through B at once: the operation was on PostgreSQL before A handed out its id.
    assert_eq!(operation(&b, &id)["id"], id.as_str());
    let shown = wait_operation(&b, &id, Duration::from_secs(15), "A's install on B", |o| {
        o["state"] == "completed"
    });
    let replica_a = shown["replica"].as_str().expect("the replica that ran it");
    assert!(
        // Host, process id and a random incarnation.
        replica_a.contains(&format!(":{}#", a.gateway.child.id())),
        "{shown}"
    );
    assert_eq!(shown["progress"], 100, "{shown}");
    assert!(
        shown["steps"].as_array().is_some_and(|s| s.len() > 3),
        "{shown}"
    );
    let listed = b.json(&["operations", "list", "--json"]);
    assert!(
        listed["operations"]
            .as_array()
            .is_some_and(|all| all.iter().any(|o| o["id"] == id.as_str())),
        "{listed}"
    );
    // The server it added reached B through the managed configuration, and runs there.
    wait_status(&b, "echo up on B", |status| {
        server(status, "echo").is_some_and(|s| s["state"] == "up")
    });

    // Installs waiting for input on A: B sees where they are. B cannot give input to one
    // (values may be secrets, which never travel through PostgreSQL); B cancels the other,
    // which A does, and B answers once it is over.
    let waiting = install_detached(&a, "io.example.tests/keyed", "keyed");
    let cancelled = install_detached(&a, "io.example.tests/keyed", "keyed_a2");
    for id in [&waiting, &cancelled] {
        let seen = wait_operation(&b, id, Duration::from_secs(15), "A's wait on B", |o| {
            o["waiting"]["for"] == "input"
        });
        assert_eq!(seen["state"], "in_progress", "{seen}");
    }
    let refused = b.cli(&["operations", "input", &waiting, "X-Api-Key=k"]);
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains(&format!("runs on replica {replica_a}")),
        "{}",
        text(&refused)
    );
    let asked = Instant::now();
    let over = b.json(&[
        "operations",
        "cancel",
        &cancelled,
        "--reason",
        "not needed",
        "--json",
    ]);
    eprintln!(
        "replica A cancelled its operation {:?} after replica B was asked",
        asked.elapsed()
    );
    assert_eq!(over["state"], "cancelled", "{over}");
    assert!(
        over["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("cancelled: not needed (asked through replica ")),
        "{over}"
    );
    assert_eq!(operation(&a, &cancelled)["state"], "cancelled");
    // B's own open operation, which must outlive A's.
    let own = install_detached(&b, "io.example.tests/keyed", "keyed_b");
    wait_operation(&b, &own, Duration::from_secs(10), "B's own wait", |o| {
        o["waiting"]["for"] == "input"
    });

    // A dies without a word; B marks its open operation failed, naming both replicas.
    a.gateway.child.kill().expect("SIGKILL replica A");
    let _ = a.gateway.child.wait();
    let killed = Instant::now();
    let failed = wait_operation(
        &b,
        &waiting,
        switchboard::manager::LEASE + Duration::from_secs(10),
        "A's operation failed by B",
        |o| o["state"] == "failed",
    );
    let took = killed.elapsed();
    eprintln!("replica B failed A's operation {took:?} after A was killed");
    let error = failed["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(&format!(
            "replica {replica_a} stopped answering while this operation was in progress"
        )),
        "{failed}"
    );
    assert!(error.contains("marked failed by replica"), "{failed}");
    assert!(
        took >= switchboard::manager::LEASE - Duration::from_secs(2),
        "{took:?}"
    );
    assert!(failed.get("waiting").is_none(), "{failed}");
    let still = operation(&b, &own);
    assert_eq!(still["state"], "in_progress", "B's own is alive: {still}");
    assert_eq!(
        stored(
            &postgres,
            &waiting,
            "state || ' ' || (reaped_by IS NOT NULL)"
        ),
        "failed true"
    );

    // B stopped cleanly: its own operation is cancelled, and written before it exits.
    assert!(b.gateway.terminate().success());
    assert_eq!(stored(&postgres, &own, "state"), "cancelled");
}

/// A package server installed through replica A runs on replica B, whose disk lacks it: B
/// installs the same package into the same place as an operation of its own (once), listed
/// through A, and serves the server; a copy that lacks the entry's HOME gets it.
#[test]
fn a_package_installed_on_one_replica_is_installed_by_another_on_first_need() {
    let dir = tempfile::tempdir().expect("tempdir");
    let postgres = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let registry = Registry::memory(dir.path());
    let servers = dir.path().join("servers");
    let config_a = replica_config(&dir.path().join("a"), &postgres, &registry.url, &servers);
    let config_b = replica_config(&dir.path().join("b"), &postgres, &registry.url, &servers);
    migrate(&config_a);
    let npm = [
        ("npm_config_offline", "true"),
        ("npm_config_update_notifier", "false"),
    ];
    let a = Live::start_with_env(&dir.path().join("a"), config_a, &[], &npm);
    let installed = a.cli(&["install", MEMORY_NAME, "--as", "memory"]);
    assert!(installed.status.success(), "{}", text(&installed));
    wait_status(&a, "memory up on A", |status| {
        server(status, "memory").is_some_and(|s| s["state"] == "up")
    });
    // Replica B runs on a machine of its own: A's package directory is not on its disk.
    std::fs::remove_dir_all(servers.join("memory")).expect("remove A's install");

    let b = Live::start_with_env(&dir.path().join("b"), config_b, &[], &npm);
    // Host, process id and a random incarnation.
    let replica_b = format!(":{}#", b.gateway.child.id());
    let started = Instant::now();
    let mut last = Value::Null;
    let copied = wait_for(Duration::from_secs(120), || {
        last = a.json(&["operations", "list", "--json"]);
        of_kind(&last, "replicate")
            .into_iter()
            .find(|o| o["state"] == "completed")
            .cloned()
    })
    .unwrap_or_else(|| panic!("no completed replicate operation listed on A:\n{last:#}"));
    eprintln!(
        "replica B's copy of the package was listed completed on A {:?} after B listened",
        started.elapsed()
    );
    assert!(
        copied["replica"]
            .as_str()
            .is_some_and(|r| r.contains(&replica_b)),
        "{copied}"
    );
    assert_eq!(copied["request"]["work"]["server"], "memory", "{copied}");
    wait_status(&b, "memory up on B", |status| {
        server(status, "memory").is_some_and(|s| s["state"] == "up")
    });
    let graph = b.call("memory__read_graph", "{}");
    assert_ne!(graph["isError"], true, "{graph}");
    // A copy made before installs had a HOME lacks the one the shared entry names: the
    // replica makes it, though it never installs again a directory it has.
    let home = servers.join("memory/home");
    assert!(home.is_dir(), "the copy has the HOME its entry names");
    std::fs::remove_dir_all(&home).expect("remove the copy's HOME");
    let made = wait_for(Duration::from_secs(10), || home.is_dir().then_some(()));
    assert!(
        made.is_some(),
        "the HOME the entry names was not made again"
    );
    // Once: B does not install it again.
    std::thread::sleep(switchboard::manager::HEARTBEAT * 3);
    let listed = b.json(&["operations", "list", "--json"]);
    assert_eq!(of_kind(&listed, "replicate").len(), 1, "{listed:#}");
}

/// A 2026-07-28 `tools/call` of the manager's `request_server` for `keyed`, added as `server`.
fn request_keyed(server: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "manager__request_server",
        "arguments": {"name": "io.example.tests/keyed", "server": server,
                      "purpose": "a test of the limit across replicas"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
}

/// The id of the operation a `request_server` answer says it queued (none when refused).
fn queued(body: &str) -> Option<String> {
    let answer: Value = serde_json::from_str(body).ok()?;
    let result = &answer["result"];
    (result["isError"] != true).then_some(())?;
    result["structuredContent"]["id"]
        .as_str()
        .map(str::to_owned)
}

/// Replicas `a` and `b` (migrated) whose agent `npc` may use the manager's tools, and its
/// token.
fn npc_replicas(dir: &Path, postgres: &Postgres, registry: &Registry) -> (Live, Live, String) {
    let configs: Vec<PathBuf> = ["a", "b"]
        .iter()
        .map(|name| {
            let config = replica_config(
                &dir.join(name),
                postgres,
                &registry.url,
                &dir.join(name).join("servers"),
            );
            // The registry's remotes are on loopback: a model's request may name them here.
            let mut text = std::fs::read_to_string(&config)
                .expect("config")
                .replace("[manager]\n", "[manager]\nallow_private_remotes = true\n");
            text.push_str(
                "\n[agents.npc]\nallow = [\"*\"]\n\n[servers.manager]\nbuiltin = \"manager\"\n",
            );
            std::fs::write(&config, text).expect("config");
            config
        })
        .collect();
    migrate(&configs[0]);
    let token = create_token(&configs[0], "npc");
    let a = Live::start(&dir.join("a"), configs[0].clone(), &[]);
    let b = Live::start(&dir.join("b"), configs[1].clone(), &[]);
    (a, b, token)
}

/// `n` requests of npc for `keyed` at once, alternately through `a` and `b`, the `i`th
/// added as `server(i)`; their answers, in that order.
async fn keyed_at_once(
    a: &Live,
    b: &Live,
    token: &str,
    n: usize,
    server: impl Fn(usize) -> String,
) -> Vec<(u16, String, Option<String>)> {
    let calls: Vec<_> = (0..n)
        .map(|i| {
            let url = [a, b][i % 2].gateway.url.clone();
            let (token, request) = (token.to_owned(), request_keyed(&server(i)));
            tokio::spawn(async move { post(&url, Some(&token), request).await })
        })
        .collect();
    let mut answers = Vec::new();
    for call in calls {
        answers.push(call.await.expect("the call's task"));
    }
    answers
}

/// How many operations matching `condition` are open on PostgreSQL.
fn open_where(postgres: &Postgres, condition: &str) -> String {
    let sql = format!(
        "SELECT count(*) FROM manager_operations \
         WHERE {condition} AND state IN ('queued', 'in_progress')"
    );
    postgres.psql(DATABASE, &sql).expect("count")
}

const TOO_MANY: &str =
    "agent 'npc' has 4 operations open already on the deployment's replicas (at most 4)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_open_operations_are_limited_across_replicas() {
    let dir = tempfile::tempdir().expect("tempdir");
    let postgres = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let registry = Registry::remotes(dir.path());
    let (a, b, token) = npc_replicas(dir.path(), &postgres, &registry);

    // Eight requests at once, four through each replica: installs that wait for a secret
    // input (the client cannot be asked), so each stays open.
    let answers = keyed_at_once(&a, &b, &token, 8, |n| format!("keyed{n}")).await;
    let admitted = answers
        .iter()
        .filter(|(_, body, _)| queued(body).is_some())
        .count();
    let refused = answers
        .iter()
        .filter(|(_, body, _)| body.contains(TOO_MANY))
        .count();
    assert_eq!((admitted, refused), (4, 4), "{answers:#?}");
    let open = || open_where(&postgres, "agent = 'npc'");
    assert_eq!(open(), "4");

    // Through either replica, the fifth is refused; once one ends (cancelled through B,
    // whichever replica runs it), B admits one again.
    for live in [&a, &b] {
        let (_, body, _) = post(&live.gateway.url, Some(&token), request_keyed("extra")).await;
        assert!(body.contains(TOO_MANY), "{body}");
    }
    let listed = b.json(&["operations", "list", "--json"]);
    let first = of_kind(&listed, "install")
        .first()
        .and_then(|o| o["id"].as_str())
        .expect("an open install")
        .to_owned();
    let cancelled = b.cli(&["operations", "cancel", &first, "--reason", "one too many"]);
    assert!(cancelled.status.success(), "{}", text(&cancelled));
    assert_eq!(open(), "3");
    let (_, body, _) = post(&b.gateway.url, Some(&token), request_keyed("again")).await;
    assert!(queued(&body).is_some(), "{body}");
    assert_eq!(open(), "4");
}

const ADDING: &str = "another operation is adding a server named 'same' already";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_server_id_is_added_by_one_operation_across_replicas() {
    let dir = tempfile::tempdir().expect("tempdir");
    let postgres = Postgres::start().unwrap_or_else(|error| panic!("{error}"));
    let registry = Registry::remotes(dir.path());
    let (a, b, token) = npc_replicas(dir.path(), &postgres, &registry);

    // Four requests at once for one new server id, two through each replica (within the
    // agent's limit of four: only the id decides). Installs that wait for a secret input,
    // so the one admitted stays open.
    let answers = keyed_at_once(&a, &b, &token, 4, |_| "same".to_owned()).await;
    let admitted: Vec<String> = answers
        .iter()
        .filter_map(|(_, body, _)| queued(body))
        .collect();
    let refused: Vec<&String> = answers
        .iter()
        .map(|(_, body, _)| body)
        .filter(|body| body.contains(ADDING))
        .collect();
    assert_eq!((admitted.len(), refused.len()), (1, 3), "{answers:#?}");
    // The other replica's refusal (it asked PostgreSQL) names the operation that adds it.
    let first = &admitted[0];
    let named = format!("(operation {first}, on replica ");
    assert!(
        refused.iter().any(|body| body.contains(&named)),
        "{refused:#?}"
    );
    let open_adding = || open_where(&postgres, "adds = 'same'");
    assert_eq!(open_adding(), "1");

    // An operator's install of the same id is refused through either replica; once the
    // open one is cancelled, it is admitted and adds the server.
    for live in [&a, &b] {
        let output = live.cli(&[
            "install",
            "io.example.tests/echo",
            "--as",
            "same",
            "--detach",
        ]);
        assert!(!output.status.success(), "{}", text(&output));
        assert!(text(&output).contains(ADDING), "{}", text(&output));
    }
    let cancelled = b.cli(&["operations", "cancel", first, "--reason", "one at a time"]);
    assert!(cancelled.status.success(), "{}", text(&cancelled));
    let id = install_detached(&a, "io.example.tests/echo", "same");
    wait_operation(&b, &id, Duration::from_secs(60), "the install", |o| {
        o["state"] == "completed"
    });
    assert_eq!(open_adding(), "0");
}
