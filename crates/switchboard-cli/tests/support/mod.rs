//! Shared by the end-to-end tests: where the real peers live, how to start the gateway and
//! the Python SDK client, and how to wait for things without sleeping blindly.
//!
//! A missing prerequisite is a failing test that says how to install it — never a skip.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard_mcp::routing_headers;

pub mod haproxy;
pub mod live;
pub mod shared_replicas;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

/// Fails the test with an install hint when `path` is missing.
pub fn prerequisite(path: PathBuf, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{what} is missing at {}: run `scripts/install-test-deps.sh` (or the README's test command) first",
        path.display()
    );
    path
}

pub fn switchboard() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_switchboard"))
}

/// The fixture servers' binary (built with the workspace).
pub fn fixture() -> String {
    let path = switchboard().with_file_name("switchboard-fixture");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --workspace --bins` first",
        path.display()
    );
    path.display().to_string()
}

pub fn node_bin() -> PathBuf {
    prerequisite(
        repo_root().join("e2e/node_modules/.bin"),
        "the npm test packages (e2e/node_modules)",
    )
}

pub fn venv_bin() -> PathBuf {
    prerequisite(
        repo_root().join(".deps/venv/bin"),
        "the Python test environment (.deps/venv)",
    )
}

/// PATH with Node 22 and the npm servers first, for children that run node scripts.
pub fn node_path() -> String {
    format!(
        "{}:{}",
        node_bin().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Every row of the config's ledger, newest first (`switchboard audit --json`).
pub fn audit_rows(config: &Path) -> Value {
    let rows = run_switchboard(config, &["audit", "--json", "--limit", "0"]);
    assert!(
        rows.status.success(),
        "{}",
        String::from_utf8_lossy(&rows.stderr)
    );
    stdout_json(&rows)
}

/// The ledger's journal files in `dir` (a closed ledger leaves none).
pub fn journals(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read the state dir")
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".journal"))
        .collect()
}

/// A new bearer token for `agent` (`switchboard token create`).
pub fn create_token(config: &Path, agent: &str) -> String {
    let output = run_switchboard(config, &["token", "create", agent]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// A TOML string literal.
pub fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("string")
}

/// Writes a config file into `dir`.
pub fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("switchboard.toml");
    std::fs::write(&path, text).expect("write config");
    path
}

/// `switchboard ARGS...` in `dir`, with every user file (config lookup, ledger, latency
/// stats, tokens, admin file) kept there.
pub fn isolated(dir: &Path, args: &[&str]) -> Output {
    Command::new(switchboard())
        .args(args)
        .current_dir(dir)
        .env_remove("SWITCHBOARD_CONFIG")
        .env_remove("SWITCHBOARD_LOG")
        .env("SWITCHBOARD_ADMIN_FILE", dir.join("admin.json"))
        .env("XDG_CONFIG_HOME", dir)
        .env("XDG_DATA_HOME", dir)
        .env("XDG_STATE_HOME", dir)
        .stdin(Stdio::null())
        .output()
        .expect("run switchboard")
}

/// `switchboard --config CONFIG ARGS...` with the environment as it is (no npm packages
/// needed: only the fixture servers run).
pub fn run_bare(config: &Path, args: &[&str]) -> Output {
    Command::new(switchboard())
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .expect("run switchboard")
}

/// Runs `switchboard --config CONFIG ARGS...` to completion.
pub fn run_switchboard(config: &Path, args: &[&str]) -> Output {
    Command::new(switchboard())
        .arg("--config")
        .arg(config)
        .args(args)
        .env("PATH", node_path())
        .output()
        .expect("run switchboard")
}

pub fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "stdout is not JSON ({error}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// Runs the Python SDK client (`e2e/py/client.py`) and returns its JSON answer.
pub fn python_client(args: &[&str]) -> Value {
    let output = python_client_output(args);
    assert!(
        output.status.success(),
        "the Python SDK client failed ({:?}):\n{}\n{}",
        args,
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    stdout_json(&output)
}

/// What the Python SDK client printed and how it exited, for a run that may fail.
pub fn python_client_output(args: &[&str]) -> Output {
    let python = venv_bin().join("python");
    let script = repo_root().join("e2e/py/client.py");
    Command::new(python)
        .arg(script)
        .args(args)
        .env("PATH", node_path())
        .output()
        .expect("run the Python client")
}

/// A `switchboard-fixture` that serves on loopback (it prints `listening on ADDRESS` first),
/// killed when dropped.
pub struct Fixture {
    pub child: Child,
    pub address: String,
}

impl Fixture {
    pub fn start(args: &[&str]) -> Self {
        let mut child = Command::new(fixture())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the fixture");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the fixture's address");
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the fixture {args:?} said {line:?}"))
            .to_owned();
        Self { child, address }
    }

    /// `http://ADDRESS` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A gateway serving HTTP on a free loopback port; killed (SIGTERM) when dropped.
pub struct HttpGateway {
    pub child: Child,
    pub url: String,
}

impl HttpGateway {
    pub fn start(config: &Path, extra: &[&str]) -> Self {
        Self::launch(config, extra, &[], true)
    }

    /// Like `start`, with `env` added to the gateway's environment.
    pub fn start_with_env(config: &Path, extra: &[&str], env: &[(&str, &str)]) -> Self {
        Self::launch(config, extra, env, true)
    }

    /// Like `start`, but closes the gateway's stderr once it listens, as a parent that does
    /// not keep its child's stderr would.
    pub fn start_then_close_stderr(config: &Path) -> Self {
        Self::launch(config, &[], &[], false)
    }

    fn launch(config: &Path, extra: &[&str], env: &[(&str, &str)], keep_stderr: bool) -> Self {
        let mut child = Command::new(switchboard())
            .arg("--config")
            .arg(config)
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(extra)
            .env("PATH", node_path())
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the gateway");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("the gateway exited before listening")
                .expect("read stderr");
            if let Some(rest) = line.strip_prefix("switchboard: listening on ") {
                break rest.trim().to_owned();
            }
        };
        if keep_stderr {
            // Keep draining stderr so the gateway never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines {});
        }
        Self { child, url }
    }

    /// `127.0.0.1:PORT`: where a proxy or a raw HTTP client connects.
    pub fn authority(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned()
    }

    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).expect("pid"));
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        wait_for(Duration::from_secs(15), || {
            self.child.try_wait().ok().flatten()
        })
        .expect("the gateway exits after SIGTERM")
    }
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.terminate();
        }
    }
}

/// Polls `check` until it returns `Some`, or gives up after `limit`.
pub fn wait_for<T>(limit: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let started = Instant::now();
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        if started.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a process is alive (and not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .split(") ")
            .nth(1)
            .is_some_and(|rest| rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// Names of the tools in a `list` answer of the Python client.
pub fn names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

/// POSTs one JSON-RPC message to the gateway, with an optional bearer token and the headers
/// a 2026-07-28 client sends (version, `Mcp-Method`, `Mcp-Name`): (status, body, the
/// `WWW-Authenticate` challenge).
pub async fn post(
    url: &str,
    token: Option<&str>,
    body: serde_json::Value,
) -> (u16, String, Option<String>) {
    let mut request = http_client()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    // The headers a 2026-07-28 client sends with every request.
    if let Some(version) =
        body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str()
    {
        request = request.header("mcp-protocol-version", version);
    }
    let method = body["method"].as_str().unwrap_or_default();
    request = request.header(routing_headers::METHOD, method);
    if let Some(name) = routing_headers::name_of(method, body.get("params")) {
        request = request.header(routing_headers::NAME, routing_headers::encode_value(name));
    }
    send(request, token, "www-authenticate").await
}

/// `tool`'s row of `switchboard tools --stats --format json`, run against `config`.
pub fn tool_stats(config: &Path, tool: &str) -> Value {
    let output = run_switchboard(config, &["tools", "--stats", "--format", "json"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout_json(&output)
        .as_array()
        .and_then(|rows| rows.iter().find(|row| row["tool"] == tool).cloned())
        .unwrap_or_else(|| panic!("{tool} has no stats"))
}

/// A 2026-07-28 `tools/call` of `tool` through the gateway at `url` (no token): `Ok` when the
/// tool ran, the tool error's text when it was refused or failed.
pub async fn call_tool(url: &str, id: usize, tool: &str, arguments: Value) -> Result<(), String> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let (status, text, _) = post(url, None, body).await;
    assert_eq!(status, 200, "{text}");
    let value: Value = serde_json::from_str(&text).expect("a JSON answer");
    let result = &value["result"];
    if result["isError"] == true {
        return Err(result["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_owned());
    }
    assert!(result["content"].is_array(), "{text}");
    Ok(())
}

/// A reqwest client for loopback (no proxy from the environment).
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
}

/// GETs `url` with an optional bearer token: (status, body, the `header` answered).
pub async fn get(url: &str, token: Option<&str>, header: &str) -> (u16, String, Option<String>) {
    send(http_client().get(url), token, header).await
}

/// Sends `request` with an optional bearer token: (status, body, the `header` answered).
async fn send(
    mut request: reqwest::RequestBuilder,
    token: Option<&str>,
    header: &str,
) -> (u16, String, Option<String>) {
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("send");
    let status = response.status().as_u16();
    let value = response
        .headers()
        .get(header)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, response.text().await.unwrap_or_default(), value)
}
