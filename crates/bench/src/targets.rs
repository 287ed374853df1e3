//! What the comparisons drive: MCP endpoints over stdio or HTTP, the processes behind them
//! (the echo fixture, Switchboard; the peer gateways are in [`crate::peers`]), and a uniform
//! `call` on each.
//! Every process is killed when its handle is dropped; every address is 127.0.0.1.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// Reads lines of `reader` until one contains `marker`; returns the text after it. A process
/// that ends first fails with the last lines it wrote (why it refused to start).
fn after_marker(reader: impl std::io::Read, marker: &str) -> anyhow::Result<String> {
    let mut said: Vec<String> = Vec::new();
    for line in BufReader::new(reader).lines() {
        let line = line?;
        if let Some((_, rest)) = line.split_once(marker) {
            return Ok(rest.trim().to_owned());
        }
        if !line.trim().is_empty() {
            said.push(line);
        }
    }
    let tail = &said[said.len().saturating_sub(3)..];
    if tail.is_empty() {
        bail!("the process ended before printing '{marker}'")
    }
    bail!(
        "the process ended before printing '{marker}'; it said: {}",
        tail.join(" | ")
    )
}

/// What a side-by-side run puts beside direct: this build of Switchboard, optionally another
/// build (`--against`), and the peer gateways installed in a directory.
pub struct Lineup<'a> {
    pub bins: &'a Binaries,
    pub against: Option<Against>,
    /// Where the peer gateways are installed; `None` leaves them (and the floor) out of the
    /// latency and throughput tables.
    pub peers: Option<PathBuf>,
}

/// Another build of `switchboard` measured beside this one, and its name in the tables.
pub struct Against {
    pub bins: Binaries,
    pub label: String,
}

impl Lineup<'_> {
    /// Every build of Switchboard in the run, with its name in the tables: this one
    /// ("switchboard", or "switchboard (this build)" beside another), then `--against`'s.
    pub fn switchboards(&self) -> Vec<(&Binaries, &str)> {
        let mut builds = vec![(
            self.bins,
            if self.against.is_some() {
                "switchboard (this build)"
            } else {
                "switchboard"
            },
        )];
        builds.extend(
            self.against
                .as_ref()
                .map(|against| (&against.bins, against.label.as_str())),
        );
        builds
    }
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
    switchboard_http_with(bins, dir, upstream, &[])
}

/// [`switchboard_http`] with more arguments of `serve` (`--threads N`).
///
/// Each gateway gets a config file of its own: a gateway follows hand edits of its file, so
/// a second gateway's config written over the first's would turn the first into a copy of
/// the second within a second (it did: the HTTP → HTTP gateway of the throughput runs
/// reloaded into HTTP → stdio when the next one was started in the same directory).
pub fn switchboard_http_with(
    bins: &Binaries,
    dir: &Path,
    upstream: &str,
    serve_args: &[String],
) -> anyhow::Result<(Spawned, String)> {
    let config = config_of_its_own(dir);
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
        .args(serve_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("start {}", bins.switchboard.display()))?;
    let stderr = child.stderr.take().context("gateway stderr")?;
    let url = after_marker(stderr, "listening on ").with_context(|| {
        format!(
            "{} serve in front of {}",
            bins.switchboard.display(),
            upstream.replace('\n', "; ")
        )
    })?;
    Ok((Spawned { child }, url))
}

/// A config file path in `dir` no other gateway of this process was given.
fn config_of_its_own(dir: &Path) -> PathBuf {
    static CONFIGS: AtomicUsize = AtomicUsize::new(0);
    dir.join(format!(
        "http-gateway-{}.toml",
        CONFIGS.fetch_add(1, Ordering::Relaxed)
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: the throughput runs' HTTP → HTTP gateway shared its config file with the
    /// HTTP → stdio one started after it, followed the edit, and was measured as a second
    /// HTTP → stdio gateway.
    #[test]
    fn each_gateway_gets_a_config_file_of_its_own() {
        let dir = Path::new("/tmp/run");
        let first = config_of_its_own(dir);
        let second = config_of_its_own(dir);
        assert_ne!(first, second);
        assert_eq!(first.parent(), Some(dir));
    }

    #[test]
    fn a_process_that_ends_before_its_marker_says_what_it_said() {
        let said = "starting\n\nError: unknown key 'instances' in [servers.echo]\n";
        let error = after_marker(said.as_bytes(), "listening on ").expect_err("no marker");
        assert!(
            format!("{error:#}")
                .ends_with("it said: starting | Error: unknown key 'instances' in [servers.echo]"),
            "{error:#}"
        );
        let url = after_marker(
            "x\nlistening on http://127.0.0.1:1/mcp\n".as_bytes(),
            "listening on ",
        );
        assert_eq!(url.expect("found"), "http://127.0.0.1:1/mcp");
    }
}
