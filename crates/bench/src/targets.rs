//! What the comparisons drive: MCP endpoints over stdio or HTTP, the processes behind them
//! (the echo fixture, Switchboard, the peer gateways), and a uniform `call` on each.
//! Every process is killed when its handle is dropped; every address is 127.0.0.1.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
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
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free port on 127.0.0.1 (bound, then released).
fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Waits until something accepts connections on `port`.
fn wait_for_port(port: u16, limit: Duration) -> anyhow::Result<()> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("nothing listens on 127.0.0.1:{port} after {limit:?}")
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

/// Where the peer gateways are installed (`scripts/bench-peers.sh`).
pub fn peers_dir(bins: &Binaries) -> PathBuf {
    bins.repo_root().join(".bench-peers")
}

/// What a peer gateway fronts: the stdio echo fixture, or the HTTP one at this URL.
pub enum PeerUpstream<'a> {
    Stdio,
    Http(&'a str),
}

/// A running peer gateway serving HTTP: its process, URL and the echo tool's name there.
pub struct PeerGateway {
    pub process: Spawned,
    pub url: String,
    pub tool: &'static str,
}

/// A peer gateway in front of `upstream`, serving HTTP; `Err(reason)` when it is not
/// installed or cannot front that upstream.
pub fn peer_http(
    bins: &Binaries,
    peer: Peer,
    upstream: &PeerUpstream<'_>,
    dir: &Path,
) -> anyhow::Result<Result<PeerGateway, String>> {
    let program = match peer {
        Peer::PythonMcpProxy => peers_dir(bins).join("py/bin/mcp-proxy"),
        Peer::RustMcpProxy => peers_dir(bins).join("rust/bin/mcp-proxy"),
    };
    if !program.is_file() {
        return Ok(Err(format!(
            "{} is not installed: run scripts/bench-peers.sh",
            peer.label()
        )));
    }
    let port = free_port()?;
    let mut command = Command::new(&program);
    let (url, tool) = match (peer, upstream) {
        (Peer::PythonMcpProxy, PeerUpstream::Stdio) => {
            command
                .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--"])
                .arg(&bins.fixture)
                .arg("echo");
            (format!("http://127.0.0.1:{port}/mcp"), "echo")
        }
        (Peer::PythonMcpProxy, PeerUpstream::Http(_)) => {
            return Ok(Err(format!(
                "{} serves stdio servers only (its HTTP mode is a client)",
                peer.label()
            )));
        }
        (Peer::RustMcpProxy, upstream) => {
            let backend = match upstream {
                PeerUpstream::Stdio => format!(
                    "transport = \"stdio\"\ncommand = {}\nargs = [\"echo\"]",
                    json!(bins.fixture.display().to_string())
                ),
                PeerUpstream::Http(url) => {
                    format!("transport = \"http\"\nurl = {}", json!(url))
                }
            };
            let config = dir.join(format!("rust-mcp-proxy-{port}.toml"));
            std::fs::write(
                &config,
                format!(
                    "[proxy]\nname = \"bench\"\nseparator = \"__\"\n\n[proxy.listen]\n\
                     host = \"127.0.0.1\"\nport = {port}\n\n[[backends]]\nname = \"echo\"\n{backend}\n"
                ),
            )?;
            command.arg("--config").arg(&config);
            (format!("http://127.0.0.1:{port}/"), "echo__echo")
        }
    };
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("start {}", program.display()))?;
    let process = Spawned { child };
    wait_for_port(port, Duration::from_secs(20))?;
    Ok(Ok(PeerGateway { process, url, tool }))
}

/// The peer gateways the issue names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    PythonMcpProxy,
    RustMcpProxy,
}

impl Peer {
    pub fn label(self) -> &'static str {
        match self {
            Self::PythonMcpProxy => "python mcp-proxy",
            Self::RustMcpProxy => "rust mcp-proxy 0.6.0",
        }
    }
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
