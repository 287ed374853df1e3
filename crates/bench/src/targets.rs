//! What the comparisons drive: MCP endpoints over stdio or HTTP, the processes behind them
//! (the echo fixture, Switchboard; the peer gateways are in [`crate::peers`]), and a uniform
//! `call` on each.
//! Every process is killed when its handle is dropped; every address is 127.0.0.1.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use switchboard_fixtures::client::StdioClient;

use crate::http_client::HttpClient;
use crate::scenarios::{self, Binaries};

/// A child process, killed on drop.
pub struct Spawned {
    child: Child,
}

impl Spawned {
    pub fn new(child: Child) -> Self {
        Self { child }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How it ended, if it has.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads lines of `reader` until one contains `marker`; returns the text after it.
fn after_marker(reader: impl std::io::Read, marker: &str) -> anyhow::Result<String> {
    for line in BufReader::new(reader).lines() {
        let line = line?;
        if let Some((_, rest)) = line.split_once(marker) {
            return Ok(rest.trim().to_owned());
        }
    }
    bail!("the process ended before printing '{marker}'")
}

/// The echo fixture over HTTP; its `/mcp` URL.
pub fn http_fixture(bins: &Binaries) -> anyhow::Result<(Spawned, String)> {
    let mut child = Command::new(&bins.fixture)
        .arg("http-echo")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().context("fixture stdout")?;
    let address = after_marker(stdout, "listening on ")?;
    Ok((Spawned { child }, format!("http://{address}/mcp")))
}

/// Switchboard serving HTTP on a free port in front of `upstream` (a TOML server table body);
/// its `/mcp` URL.
pub fn switchboard_http(
    bins: &Binaries,
    dir: &Path,
    upstream: &str,
) -> anyhow::Result<(Spawned, String)> {
    let config = dir.join("http-gateway.toml");
    std::fs::write(
        &config,
        format!("[gateway]\nconnect_timeout = \"10s\"\n\n[servers.echo]\n{upstream}\n"),
    )?;
    let mut command = Command::new(&bins.switchboard);
    scenarios::keep_files_in(&mut command, dir);
    let mut child = command
        .arg("--config")
        .arg(&config)
        .args(["--log", "error", "serve", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child.stderr.take().context("gateway stderr")?;
    let url = after_marker(stderr, "listening on ")?;
    Ok((Spawned { child }, url))
}

/// The TOML of a stdio upstream running the echo fixture.
pub fn stdio_upstream(bins: &Binaries) -> String {
    format!(
        "command = {}\nargs = [\"echo\"]",
        json!(bins.fixture.display().to_string())
    )
}

/// One MCP endpoint, initialized, with the `tools/call` params that reach the echo tool.
pub enum Endpoint {
    Stdio(StdioClient, Value),
    Http(HttpClient, Value),
}

impl Endpoint {
    pub fn stdio(mut command: Command, tool: &str) -> anyhow::Result<Self> {
        let mut client = StdioClient::spawn(command.stderr(Stdio::null()))?;
        client.initialize()?;
        Ok(Self::Stdio(client, echo_params(tool)))
    }

    pub fn http(url: &str, tool: &str) -> anyhow::Result<Self> {
        let mut client = HttpClient::connect(url)?;
        client.initialize()?;
        Ok(Self::Http(client, echo_params(tool)))
    }

    /// The process a stdio endpoint talks to (it and its children are the server side).
    pub fn child_pid(&self) -> Option<u32> {
        match self {
            Self::Stdio(client, _) => Some(client.pid()),
            Self::Http(..) => None,
        }
    }

    /// One echo call, timed.
    pub fn call(&mut self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        match self {
            Self::Stdio(client, params) => {
                client.request_lean("tools/call", params)?;
            }
            Self::Http(client, params) => {
                client.request("tools/call", params.clone())?;
            }
        }
        Ok(started.elapsed())
    }
}

fn echo_params(tool: &str) -> Value {
    json!({"name": tool, "arguments": {"message": "hello"}})
}

/// VmRSS of a process, in kB.
pub fn rss_kb(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.split_whitespace().next())
        .and_then(|kb| kb.parse().ok())
        .context("no VmRSS")
}
