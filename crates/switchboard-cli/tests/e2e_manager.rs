//! The server manager end to end, the way a model uses it: the official Python SDK client,
//! through a real gateway over Streamable HTTP, searches a registry (the project's registry
//! fixture speaking the MCP Registry v0.1 API), requests the reference memory server, answers
//! its required inputs by elicitation (one of them a secret), follows the operation's
//! progress while npm really installs the package (from npm's cache: the setup script warms
//! it, and the gateway runs npm offline so the test talks only to loopback), and, once an
//! operator approves the activation, gets `tools/list_changed` and calls the new tool. The
//! secret ends up in the secrets file only — never in the config, the ledger, the operations
//! database, the gateway's log or `status`. A server the manager installs runs in the
//! sandbox `[manager] sandbox` gives it, written into its entry: it reads and writes its
//! install directory (and what the operator added), and is refused a file outside it; its
//! `HOME` is a directory of its own inside it, which it may write (a cache, `~/.config`), and
//! which an install of the same server again keeps.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

/// The package the test installs; scripts/install-test-deps.sh puts it in npm's cache.
const MEMORY_PACKAGE: &str = "@modelcontextprotocol/server-memory";
const MEMORY_VERSION: &str = "2026.8.31";
const REGISTRY_NAME: &str = "io.github.modelcontextprotocol/server-memory";
const SECRET: &str = "tok-e2e-5ecret-7d1f";

/// A child process killed when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `switchboard-fixture registry --dir DIR`, and its URL.
fn registry(dir: &Path) -> (Fixture, String) {
    let dir = dir.to_str().expect("a UTF-8 temp path");
    let registry = Fixture::start(&["registry", "--dir", dir]);
    let url = registry.url("");
    (registry, url)
}

/// The gateway, with npm offline and every file of the manager's in `dir`; its stderr goes
/// to `dir/gateway.log`.
fn gateway(dir: &Path, config: &Path) -> (Killed, String) {
    gateway_with(dir, config, &[("npm_config_offline", "true")])
}

/// [`gateway`] with npm's settings in `npm`.
fn gateway_with(dir: &Path, config: &Path, npm: &[(&str, &str)]) -> (Killed, String) {
    let log = std::fs::File::create(dir.join("gateway.log")).expect("log file");
    let mut child = Command::new(switchboard())
        .arg("--config")
        .arg(config)
        .args(["serve", "--http", "127.0.0.1:0", "--admin-file"])
        .arg(dir.join("admin.json"))
        .env("PATH", node_path())
        .envs(npm.iter().copied())
        .env("npm_config_update_notifier", "false")
        .env("SWITCHBOARD_SECRETS", dir.join("secrets.env"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("start the gateway");
    let url = wait_for(Duration::from_secs(30), || {
        let text = std::fs::read_to_string(dir.join("gateway.log")).ok()?;
        text.lines()
            .find_map(|line| line.strip_prefix("switchboard: listening on "))
            .map(|url| url.trim().to_owned())
    });
    match url {
        Some(url) => (Killed(child), url),
        None => {
            let _ = child.kill();
            panic!(
                "the gateway did not listen:\n{}",
                std::fs::read_to_string(dir.join("gateway.log")).unwrap_or_default()
            );
        }
    }
}

/// A registry in `root/registry` serving the memory server with `environment_variables`
/// and nothing more, and its URL.
fn memory_registry(root: &Path, environment_variables: &Value) -> (Fixture, String) {
    let entries = root.join("registry");
    std::fs::create_dir_all(&entries).expect("registry dir");
    let entry = json!({
        "name": REGISTRY_NAME,
        "description": "Knowledge-graph memory",
        "version": MEMORY_VERSION,
        "packages": [{"registryType": "npm", "identifier": MEMORY_PACKAGE,
                      "version": MEMORY_VERSION, "transport": {"type": "stdio"},
                      "environmentVariables": environment_variables}]
    });
    std::fs::write(entries.join("memory.json"), entry.to_string()).expect("write entry");
    registry(&entries)
}

/// A config of the manager's defaults on `registry_url`, installing into `root/servers`,
/// with one built-in server.
fn manager_config(root: &Path, registry_url: &str) -> PathBuf {
    write_config(
        root,
        &format!(
            "[manager]\nregistries = [{}]\ninstall_dir = \"servers\"\ndatabase = \"operations.db\"\n\n\
             [servers.clock]\nbuiltin = \"clock\"\n",
            quoted(registry_url)
        ),
    )
}

fn write_registry_entry(dir: &Path) {
    let entry = json!({
        "name": REGISTRY_NAME,
        "title": "Memory",
        "description": "Knowledge-graph memory for the model (the MCP reference server)",
        "version": MEMORY_VERSION,
        "packages": [{
            "registryType": "npm",
            "identifier": MEMORY_PACKAGE,
            "version": MEMORY_VERSION,
            "transport": {"type": "stdio"},
            "environmentVariables": [
                {"name": "MEMORY_FILE_PATH", "description": "Where the graph is kept", "isRequired": true},
                {"name": "MEMORY_API_TOKEN", "description": "A token (the test's secret)", "isRequired": true, "isSecret": true}
            ]
        }]
    });
    std::fs::write(dir.join("memory.json"), entry.to_string()).expect("write entry");
}

fn cli(dir: &Path, config: &Path, args: &[&str]) -> std::process::Output {
    Command::new(switchboard())
        .arg("--config")
        .arg(config)
        .args(args)
        .arg("--admin-file")
        .arg(dir.join("admin.json"))
        .env("SWITCHBOARD_SECRETS", dir.join("secrets.env"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .output()
        .expect("run switchboard")
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "servers") {
                continue; // the installed package itself
            }
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_model_finds_requests_and_uses_a_server_an_operator_approved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let entries = root.join("registry");
    std::fs::create_dir_all(&entries).expect("registry dir");
    write_registry_entry(&entries);
    let (_registry, registry_url) = registry(&entries);
    // The servers it installs run confined: the operator gives them a data directory.
    let memory = root.join("memory");
    std::fs::create_dir_all(&memory).expect("memory dir");
    let config = write_config(
        root,
        &format!(
            "[gateway]\nledger = \"ledger.db\"\ncall_timeout = \"90s\"\n\n\
             [manager]\nregistries = [{}]\ninstall_dir = \"servers\"\ndatabase = \"operations.db\"\n\
             sandbox = {{ writable = [{}] }}\n\n\
             [servers.manager]\nbuiltin = \"manager\"\n",
            quoted(&registry_url),
            quoted(&memory.display().to_string())
        ),
    );
    let (_gateway, url) = gateway(root, &config);
    let graph = memory.join("graph.jsonl");
    let answers =
        json!({"MEMORY_FILE_PATH": graph.display().to_string(), "MEMORY_API_TOKEN": SECRET});
    let mut client = Command::new(venv_bin().join("python"))
        .arg(repo_root().join("e2e/py/manager_flow.py"))
        .args(["--http", &url, "--elicit-values", &answers.to_string()])
        .args(["memory", REGISTRY_NAME, "server-memory__read_graph", "{}"])
        .env("PATH", node_path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Python client");
    // The operator approves once the client sees the operation wait for it.
    let stderr = client.stderr.take().expect("stderr");
    let mut said = Vec::new();
    for line in BufReader::new(stderr).lines() {
        let line = line.expect("read the client's stderr");
        if let Some(id) = line.strip_prefix("approval: ") {
            let listed = cli(root, &config, &["approvals", "list", "--json"]);
            let approvals: Value = serde_json::from_slice(&listed.stdout).expect("approvals JSON");
            assert!(
                approvals
                    .as_array()
                    .is_some_and(|a| a.iter().any(|p| p["id"] == id && p["server"] == "manager")),
                "the activation waits in the operator queue: {approvals}"
            );
            let approved = cli(root, &config, &["approvals", "approve", id]);
            assert!(
                approved.status.success(),
                "{}",
                String::from_utf8_lossy(&approved.stderr)
            );
        }
        said.push(line);
    }
    let output = client.wait_with_output().expect("the client ends");
    let log = std::fs::read_to_string(root.join("gateway.log")).unwrap_or_default();
    assert!(
        output.status.success(),
        "the model's flow failed:\n{}\n--- gateway log ---\n{log}",
        said.join("\n")
    );
    let flow: Value = serde_json::from_slice(&output.stdout).expect("the flow's JSON");
    assert!(
        said.iter()
            .any(|l| l.starts_with("elicited: ") && l.contains("MEMORY_API_TOKEN")),
        "the inputs were asked by elicitation: {said:?}"
    );
    assert!(
        !flow["progress"].as_array().is_none_or(Vec::is_empty),
        "progress reached the client: {flow}"
    );
    assert_eq!(flow["operation"]["state"], "completed", "{flow}");
    assert!(
        flow["operation"]["energy"].as_f64().unwrap_or(0.0) > 0.0,
        "the work cost energy: {flow}"
    );
    assert_eq!(flow["notified"], true, "tools/list_changed came: {flow}");
    let after: Vec<&str> = flow["after"]
        .as_array()
        .expect("after")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(after.contains(&"server-memory__read_graph"), "{after:?}");
    assert_eq!(
        flow["result"]["isError"], false,
        "the new tool answers: {flow}"
    );

    // The entry was written pinned, with the secret as a reference only, in the manager's
    // sandbox with its install directory added.
    let text = std::fs::read_to_string(&config).expect("config");
    assert!(text.contains("[servers.server-memory]"), "{text}");
    assert!(text.contains("trust = \"pinned\""), "{text}");
    let install_dir = root.join("servers/server-memory").display().to_string();
    assert!(
        text.contains(&format!(
            "writable = [{}, {}]",
            quoted(&memory.display().to_string()),
            quoted(&install_dir)
        )),
        "{text}"
    );
    assert!(
        text.contains("${SWITCHBOARD_SECRET_SERVER_MEMORY_MEMORY_API_TOKEN_"),
        "{text}"
    );
    assert!(
        root.join("servers/server-memory").is_dir(),
        "installed into its own directory"
    );

    // The secret is in the secrets file (0600) and nowhere else.
    let secrets = root.join("secrets.env");
    let kept = std::fs::read_to_string(&secrets).expect("secrets file");
    assert!(kept.contains(SECRET));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&secrets)
        .expect("meta")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let status = cli(root, &config, &["status", "--json"]);
    assert!(!String::from_utf8_lossy(&status.stdout).contains(SECRET));
    for file in files_under(root).into_iter().filter(|f| *f != secrets) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(
            !bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
            "the secret leaked into {}",
            file.display()
        );
    }

    // The model removes what it asked for: the entry, the install and the secret go.
    let removed = python_client(&[
        "--era",
        "legacy",
        "--http",
        &url,
        "call",
        "manager__remove_server",
        r#"{"name": "server-memory"}"#,
    ]);
    assert_eq!(removed["isError"], false, "{removed}");
    assert_eq!(
        removed["structuredContent"]["state"], "completed",
        "{removed}"
    );
    let text = std::fs::read_to_string(&config).expect("config");
    assert!(!text.contains("server-memory"), "{text}");
    assert!(!root.join("servers/server-memory").exists(), "uninstalled");
    let kept = std::fs::read_to_string(&secrets).unwrap_or_default();
    assert!(!kept.contains(SECRET), "its secret is gone: {kept}");
    // A server the manager did not install is not the model's to remove.
    let refused = python_client(&[
        "--era",
        "legacy",
        "--http",
        &url,
        "call",
        "manager__remove_server",
        r#"{"name": "manager"}"#,
    ]);
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        refused
            .to_string()
            .contains("only an operator can remove it"),
        "{refused}"
    );
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn cancelling_mid_install_leaves_nothing_in_the_config_the_directory_or_the_process_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let (_registry, registry_url) = memory_registry(root, &json!([]));
    // npm's package registry, on loopback, takes connections and never answers: the install
    // is caught mid-way, with npm running, every time.
    let npm_registry = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let npm_url = format!("http://{}/", npm_registry.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in npm_registry.incoming().flatten() {
            held.push(stream);
        }
    });
    let config = manager_config(root, &registry_url);
    let before = std::fs::read_to_string(&config).expect("config");
    let cache = root.join("npm-cache").display().to_string();
    let (_gateway, _url) = gateway_with(
        root,
        &config,
        &[
            ("npm_config_registry", npm_url.as_str()),
            ("npm_config_cache", cache.as_str()),
            ("npm_config_fetch_retries", "0"),
        ],
    );
    let installed = cli(root, &config, &["install", REGISTRY_NAME, "--detach"]);
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let id = String::from_utf8_lossy(&installed.stdout).trim().to_owned();
    let install_dir = root.join("servers").join("server-memory");
    let needle = install_dir.display().to_string();
    let npm = wait_for(Duration::from_secs(30), || {
        let pids = processes_mentioning(&needle);
        (!pids.is_empty()).then_some(pids)
    })
    .expect("npm runs, installing into the server's directory");
    assert!(install_dir.is_dir(), "the install has begun");
    let cancelled = cli(
        root,
        &config,
        &[
            "operations",
            "cancel",
            &id,
            "--reason",
            "not needed after all",
        ],
    );
    assert!(
        cancelled.status.success(),
        "{}",
        String::from_utf8_lossy(&cancelled.stderr)
    );
    let shown = cli(root, &config, &["operations", "show", &id, "--json"]);
    let operation: Value = serde_json::from_slice(&shown.stdout).expect("operation JSON");
    assert_eq!(operation["state"], "cancelled", "{operation}");
    assert_eq!(operation["error"], "cancelled: not needed after all");
    assert_eq!(std::fs::read_to_string(&config).expect("config"), before);
    assert!(!install_dir.exists(), "the directory is removed");
    let left = wait_for(Duration::from_secs(5), || {
        let alive: Vec<u32> = npm.iter().copied().filter(|pid| alive(*pid)).collect();
        alive.is_empty().then_some(())
    });
    assert!(left.is_some(), "npm's processes {npm:?} are gone");
    assert_eq!(processes_mentioning(&needle), Vec::<u32>::new());
}

/// `install NAME --as SERVER --env MEMORY_FILE_PATH=PATH` through the running gateway,
/// waited for: the operation's final state.
fn install_memory_as(root: &Path, config: &Path, server: &str, graph: &Path) -> Value {
    let env = format!("MEMORY_FILE_PATH={}", graph.display());
    let output = cli(
        root,
        config,
        &[
            "install",
            REGISTRY_NAME,
            "--as",
            server,
            "--env",
            &env,
            "--json",
        ],
    );
    assert!(
        output.status.success(),
        "install {server}: {}\n--- gateway log ---\n{}",
        String::from_utf8_lossy(&output.stderr),
        std::fs::read_to_string(root.join("gateway.log")).unwrap_or_default()
    );
    serde_json::from_slice(&output.stdout).expect("the operation's JSON")
}

/// The text of a tool's result.
fn result_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_server_the_manager_installs_cannot_read_outside_its_install_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let (_registry, registry_url) = memory_registry(
        root,
        &json!([{"name": "MEMORY_FILE_PATH", "isRequired": true}]),
    );
    // A file outside any install, standing in for the gateway's secrets: a graph the server
    // could read if it were not confined.
    let private = root.join("private");
    std::fs::create_dir_all(&private).expect("private dir");
    let secret_graph = private.join("graph.jsonl");
    std::fs::write(
        &secret_graph,
        r#"{"type":"entity","name":"vault","entityType":"secret","observations":["s3cret-4a9b"]}"#,
    )
    .expect("write the private graph");
    let config = manager_config(root, &registry_url);
    let (_gateway, url) = gateway(root, &config);

    let prying = install_memory_as(root, &config, "prying", &secret_graph);
    assert_eq!(prying["state"], "completed", "{prying}");
    let own_graph = root.join("servers/keeper/graph.jsonl");
    let keeper = install_memory_as(root, &config, "keeper", &own_graph);
    assert_eq!(keeper["state"], "completed", "{keeper}");

    let call = |tool: &str, arguments: &str| {
        python_client(&["--era", "legacy", "--http", &url, "call", tool, arguments])
    };
    // The file outside its install is refused by the kernel, inside the server.
    let refused = call("prying__read_graph", "{}");
    let said = result_text(&refused);
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        said.contains("EACCES") || said.contains("permission denied"),
        "{said}"
    );
    assert!(!refused.to_string().contains("s3cret-4a9b"), "{refused}");
    // In its own directory it works as ever.
    let created = call(
        "keeper__create_entities",
        r#"{"entities": [{"name": "note", "entityType": "memo", "observations": ["kept"]}]}"#,
    );
    assert_eq!(created["isError"], false, "{created}");
    let read = call("keeper__read_graph", "{}");
    assert_eq!(read["isError"], false, "{read}");
    assert!(result_text(&read).contains("kept"), "{read}");
    assert!(own_graph.is_file(), "written inside its install directory");

    // The entry says what it runs under: the defaults, its install directory readable and
    // writable, its TMPDIR and HOME inside it.
    let text = std::fs::read_to_string(&config).expect("config");
    let install_dir = quoted(&root.join("servers/prying").display().to_string());
    let home = root.join("servers/prying/home");
    for wanted in [
        format!("readable = [{install_dir}]"),
        format!("writable = [{install_dir}]"),
        format!(
            "TMPDIR = {}",
            quoted(&root.join("servers/prying/tmp").display().to_string())
        ),
        format!("HOME = {}", quoted(&home.display().to_string())),
    ] {
        assert!(text.contains(&wanted), "{wanted} in:\n{text}");
    }
    assert!(home.is_dir(), "the install made the server's HOME");
    let shown = cli(root, &config, &["servers", "show", "prying", "--json"]);
    let shown: Value = serde_json::from_slice(&shown.stdout).expect("servers show JSON");
    let prying_dir = root.join("servers/prying").display().to_string();
    assert_eq!(
        shown["entry"]["sandbox"]["writable"],
        json!([prying_dir]),
        "{shown}"
    );
    let status = cli(root, &config, &["status", "--json"]);
    let status: Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    let prying_status = status["servers"]
        .as_array()
        .and_then(|servers| servers.iter().find(|s| s["server"] == "prying"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(
        prying_status["sandbox"]["filesystem"], "enforced",
        "{prying_status}"
    );

    // A server that writes to ~ (a cache, ~/.config) can, under the entry's sandbox and
    // environment as the install wrote them: only the entry's program is swapped for the
    // sandbox probe (and its trust, since the probe's tools are not the pinned ones).
    let probe = |line: &str| {
        if line.starts_with("command = ") {
            let python = venv_bin().join("python").display().to_string();
            let script = repo_root().join("e2e/py/sandbox_probe.py");
            let script = script.display().to_string();
            Some(format!(
                "command = {}\nargs = [{}]",
                quoted(&python),
                quoted(&script)
            ))
        } else if line.starts_with("args = ") {
            None
        } else if line.starts_with("trust = ") {
            Some("trust = \"auto\"".to_owned())
        } else {
            Some(line.to_owned())
        }
    };
    let mut in_prying = false;
    let swapped: Vec<String> = text
        .lines()
        .filter_map(|line| {
            if line.starts_with('[') {
                in_prying = line == "[servers.prying]";
            }
            if in_prying {
                probe(line)
            } else {
                Some(line.to_owned())
            }
        })
        .collect();
    std::fs::write(&config, swapped.join("\n") + "\n").expect("write the config");
    let reloaded = cli(root, &config, &["reload", "--json"]);
    let reloaded: Value = serde_json::from_slice(&reloaded.stdout).unwrap_or(Value::Null);
    assert_eq!(reloaded["servers"][0]["applied"], true, "{reloaded}");
    let said_home = result_text(&call("prying__get_env", r#"{"name": "HOME"}"#));
    assert_eq!(said_home, format!("env: {}", home.display()));
    let written = home.join("probe.txt");
    let wrote = call(
        "prying__write_file",
        &json!({"path": written, "text": "kept"}).to_string(),
    );
    assert_eq!(result_text(&wrote), "wrote", "{wrote}");
    assert_eq!(
        std::fs::read_to_string(&written).ok().as_deref(),
        Some("kept")
    );
}

/// What a server saved in its `HOME` (a credential, its config) outlives an install of the
/// same server again, after its entry was taken out of the config by hand: the install
/// removes the old directory, but the home moves into the new one.
#[test]
fn an_install_of_the_same_server_again_keeps_its_home() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let (_registry, registry_url) = memory_registry(
        root,
        &json!([{"name": "MEMORY_FILE_PATH", "isRequired": true}]),
    );
    let config = manager_config(root, &registry_url);
    let (_gateway, _url) = gateway(root, &config);
    let graph = root.join("servers/keeper/graph.jsonl");
    let first = install_memory_as(root, &config, "keeper", &graph);
    assert_eq!(first["state"], "completed", "{first}");
    let home = root.join("servers/keeper/home");
    let credential = home.join(".config/keeper/credentials");
    std::fs::create_dir_all(credential.parent().unwrap_or(&home)).expect("config dir");
    std::fs::write(&credential, "token-7f3e").expect("the server saves a credential");

    // The entry is taken out of the config by hand; the install record stays.
    let text = std::fs::read_to_string(&config).expect("config");
    let mut in_keeper = false;
    let without: Vec<&str> = text
        .lines()
        .filter(|line| {
            if line.starts_with('[') {
                in_keeper = *line == "[servers.keeper]" || line.starts_with("[servers.keeper.");
            }
            !in_keeper
        })
        .collect();
    std::fs::write(&config, without.join("\n") + "\n").expect("write the config");
    let reloaded = cli(root, &config, &["reload", "--json"]);
    assert!(
        reloaded.status.success(),
        "{}",
        String::from_utf8_lossy(&reloaded.stderr)
    );

    let again = install_memory_as(root, &config, "keeper", &graph);
    assert_eq!(again["state"], "completed", "{again}");
    assert_eq!(
        std::fs::read_to_string(&credential).ok().as_deref(),
        Some("token-7f3e"),
        "the install again wiped the server's home"
    );
    assert!(
        !root.join("servers/.kept-homes/keeper").exists(),
        "the kept home moved back"
    );
}
