//! The peer gateways the side-by-side benchmarks measure Switchboard against, installed by
//! `scripts/bench-peers.sh` into `.bench-peers/` (or carried to the machine in a directory
//! of the same layout, `--peers-dir`): the Rust `mcp-proxy` 0.6.0, the Python
//! `mcp-proxy`, and IBM ContextForge — its stdio bridge (`mcpgateway.translate`) in front of
//! a stdio server, its gateway (`mcpgateway`) in front of an HTTP one. Before them, the floor:
//! `switchboard-fixture forward`, which moves each message one hop and does nothing else, so
//! every table shows what that hop alone costs on the machine. Each serves HTTP on 127.0.0.1
//! and is killed when its handle is dropped.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use serde_json::json;

use crate::scenarios::Binaries;
use crate::targets::Spawned;

/// The peer gateways, in the order the tables list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// Not a gateway: the bare forwarder, the floor under all of them.
    BareForwarder,
    RustMcpProxy,
    PythonMcpProxy,
    ContextForgeTranslate,
    ContextForgeGateway,
}

impl Peer {
    pub const ALL: [Peer; 5] = [
        Peer::BareForwarder,
        Peer::RustMcpProxy,
        Peer::PythonMcpProxy,
        Peer::ContextForgeTranslate,
        Peer::ContextForgeGateway,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Self::BareForwarder => "floor: bare forwarder",
            Self::RustMcpProxy => "rust mcp-proxy 0.6.0",
            Self::PythonMcpProxy => "python mcp-proxy",
            Self::ContextForgeTranslate => "contextforge 1.0.7 translate",
            Self::ContextForgeGateway => "contextforge 1.0.7 gateway",
        }
    }

    /// The program that runs it: the fixture binary for the floor, the rest under `peers`
    /// (`.bench-peers/` or `--peers-dir`).
    fn program(self, bins: &Binaries, peers: &Path) -> PathBuf {
        match self {
            Self::BareForwarder => bins.fixture.clone(),
            Self::RustMcpProxy => peers.join("rust/bin/mcp-proxy"),
            Self::PythonMcpProxy => peers.join("py/bin/mcp-proxy"),
            Self::ContextForgeTranslate => peers.join("contextforge/bin/python"),
            Self::ContextForgeGateway => peers.join("contextforge/bin/mcpgateway"),
        }
    }
}

/// Where `scripts/bench-peers.sh` installs the peer gateways: `.bench-peers/` in the
/// repository the binaries were built in.
pub fn default_dir(bins: &Binaries) -> PathBuf {
    bins.repo_root().join(".bench-peers")
}

/// Each peer gateway with the program that runs it under `peers` and whether it is there,
/// for a line at the start of a run.
pub fn inventory(bins: &Binaries, peers: &Path) -> Vec<(&'static str, bool)> {
    Peer::ALL
        .iter()
        .filter(|peer| **peer != Peer::BareForwarder)
        .map(|peer| (peer.label(), peer.program(bins, peers).is_file()))
        .collect()
}

/// The script that registers the HTTP echo fixture with ContextForge's gateway, built into
/// the harness so that a machine without the repository can run it.
const CONTEXTFORGE_REGISTER: &str = include_str!("../peers/contextforge_register.py");

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
    /// It takes one call in this many rounds of a latency comparison: a gateway whose call
    /// takes tens of milliseconds would otherwise stretch the run to many minutes, and space
    /// every other target's calls far more than the rest of the table's.
    pub stride: usize,
}

/// Rounds per call of a peer whose calls take tens of milliseconds (ContextForge's gateway:
/// ~40 ms on the 2-core machine of BENCHMARKS.md).
const SLOW_STRIDE: usize = 10;

/// A peer gateway in front of `upstream`, serving HTTP; `Err(reason)` when it is not
/// installed or cannot front that upstream.
pub fn peer_http(
    bins: &Binaries,
    peers: &Path,
    peer: Peer,
    upstream: &PeerUpstream<'_>,
    dir: &Path,
) -> anyhow::Result<Result<PeerGateway, String>> {
    let program = peer.program(bins, peers);
    if !program.is_file() {
        return Ok(Err(format!(
            "{}: no {} (scripts/bench-peers.sh installs it; --peers-dir says where it is)",
            peer.label(),
            program.display()
        )));
    }
    let port = free_port()?;
    let mut command = Command::new(&program);
    let mut stride = 1;
    let secret = contextforge_secret(port);
    let (url, tool) = match (peer, upstream) {
        (Peer::BareForwarder, upstream) => {
            command.args(["forward", "--port", &port.to_string()]);
            match upstream {
                PeerUpstream::Stdio => {
                    command.arg("--").arg(&bins.fixture).arg("echo");
                }
                PeerUpstream::Http(url) => {
                    command.args(["--upstream", url]);
                }
            }
            (format!("http://127.0.0.1:{port}/mcp"), "echo")
        }
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
        (Peer::ContextForgeTranslate, PeerUpstream::Stdio) => {
            contextforge_environment(&mut command, dir, port, &secret)?;
            command
                .args(["-m", "mcpgateway.translate", "--stdio"])
                .arg(format!("{} echo", bins.fixture.display()))
                .args(["--expose-streamable-http", "--host", "127.0.0.1"])
                .args(["--port", &port.to_string(), "--logLevel", "error"]);
            (format!("http://127.0.0.1:{port}/mcp"), "echo")
        }
        (Peer::ContextForgeTranslate, PeerUpstream::Http(_)) => {
            return Ok(Err(format!(
                "{} bridges stdio servers (HTTP ones go through its gateway)",
                peer.label()
            )));
        }
        (Peer::ContextForgeGateway, PeerUpstream::Http(_)) => {
            contextforge_environment(&mut command, dir, port, &secret)?;
            command.args(["--host", "127.0.0.1", "--port", &port.to_string()]);
            stride = SLOW_STRIDE;
            (format!("http://127.0.0.1:{port}/mcp"), "echo-echo")
        }
        (Peer::ContextForgeGateway, PeerUpstream::Stdio) => {
            return Ok(Err(format!(
                "{} fronts HTTP servers (stdio ones go through its translate bridge)",
                peer.label()
            )));
        }
    };
    // Its stderr goes to a file, so that a peer that fails says why in the table's notes.
    let stderr = dir.join(format!("peer-{port}.err"));
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr)?)
        .spawn()
        .with_context(|| format!("start {}", program.display()))?;
    let mut process = Spawned::new(child);
    // ContextForge migrates its database before it listens: seconds, not milliseconds.
    if let Err(error) = wait_for_port(&mut process, port, Duration::from_secs(90)) {
        let said = last_lines(&stderr, 5);
        return Ok(Err(format!("{}: {error:#}{said}", peer.label())));
    }
    if let (Peer::ContextForgeGateway, PeerUpstream::Http(upstream)) = (peer, upstream)
        && let Err(error) = register_with_contextforge(&program, dir, port, upstream, &secret)
    {
        return Ok(Err(format!("{}: {error:#}", peer.label())));
    }
    Ok(Ok(PeerGateway {
        process,
        url,
        tool,
        stride,
    }))
}

/// The floor (`switchboard-fixture forward`) in front of `upstream`: unlike the peers, it is
/// always there, beside the harness.
pub fn floor(
    bins: &Binaries,
    upstream: &PeerUpstream<'_>,
    dir: &Path,
) -> anyhow::Result<Result<PeerGateway, String>> {
    peer_http(bins, Path::new(""), Peer::BareForwarder, upstream, dir)
}

/// A free port on 127.0.0.1 (bound, then released).
fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Waits until `process` accepts connections on `port`; fails at once if it exits first.
fn wait_for_port(process: &mut Spawned, port: u16, limit: Duration) -> anyhow::Result<()> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        if let Some(status) = process.exited() {
            bail!("it exited ({status}) before listening on 127.0.0.1:{port}")
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("nothing listens on 127.0.0.1:{port} after {limit:?}")
}

/// The last `count` non-empty lines of the file at `path`, as a suffix for an error message
/// (empty when there are none).
fn last_lines(path: &Path, count: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(count)..];
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its stderr ended: {}", tail.join(" | "))
    }
}

/// A secret for one ContextForge instance (a throwaway on loopback, but not a constant).
fn contextforge_secret(port: u16) -> String {
    let nonce = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!("bench-{nonce:x}-{:x}-{port}", std::process::id())
}

/// ContextForge's settings for a benchmark: its own SQLite file in `dir`, fresh secrets
/// (it refuses to start with its placeholders), no admin UI, no authentication and no rate
/// limiting (the other targets have neither; its default limit, 100 tool calls a minute,
/// would throttle the run), and loopback servers allowed (its SSRF guard refuses them).
fn contextforge_environment(
    command: &mut Command,
    dir: &Path,
    port: u16,
    secret: &str,
) -> anyhow::Result<()> {
    let home = dir.join(format!("contextforge-{port}"));
    std::fs::create_dir_all(&home)?;
    command
        .current_dir(&home)
        .env("JWT_SECRET_KEY", format!("{secret}-jwt"))
        .env("AUTH_ENCRYPTION_SECRET", format!("{secret}-encryption"))
        .env("PLATFORM_ADMIN_PASSWORD", format!("Admin-{secret}-1!"))
        .env("BASIC_AUTH_PASSWORD", format!("Basic-{secret}-1!"))
        .env(
            "DATABASE_URL",
            format!("sqlite:///{}", home.join("contextforge.db").display()),
        )
        .env("MCPGATEWAY_UI_ENABLED", "false")
        .env("MCPGATEWAY_ADMIN_API_ENABLED", "false")
        .env("AUTH_REQUIRED", "false")
        .env("RATE_LIMITING_ENABLED", "false")
        .env("SSRF_ALLOW_LOCALHOST", "true")
        .env("LOG_LEVEL", "ERROR");
    Ok(())
}

/// Registers the HTTP echo fixture with the gateway on `port` and waits for its tools
/// (`crates/bench/peers/contextforge_register.py`, run by ContextForge's own Python from the
/// run's directory).
fn register_with_contextforge(
    gateway_program: &Path,
    dir: &Path,
    port: u16,
    upstream: &str,
    secret: &str,
) -> anyhow::Result<()> {
    let python = gateway_program.with_file_name("python");
    let script = dir.join("contextforge_register.py");
    std::fs::write(&script, CONTEXTFORGE_REGISTER)
        .with_context(|| format!("write {}", script.display()))?;
    let mut command = Command::new(&python);
    // The gateway's own settings: the script mints its token with the gateway's secret.
    contextforge_environment(&mut command, dir, port, secret)?;
    let output = command
        .arg(&script)
        .arg(format!("http://127.0.0.1:{port}"))
        .args(["echo", upstream, "echo-echo"])
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("run {}", script.display()))?;
    if !output.status.success() {
        bail!(
            "registering the echo fixture with contextforge failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A peer that dies while starting is reported at once, with what it said, instead of
    /// being waited for until the limit.
    #[test]
    fn a_peer_that_exits_before_listening_fails_at_once_with_its_last_words() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = dir.path().join("peer.err");
        let child = Command::new("sh")
            .args([
                "-c",
                "echo starting >&2; echo 'no module named mcpgateway' >&2; exit 3",
            ])
            .stderr(std::fs::File::create(&err).expect("log"))
            .spawn()
            .expect("sh");
        let mut process = Spawned::new(child);
        let port = free_port().expect("port");
        let started = Instant::now();
        let error = wait_for_port(&mut process, port, Duration::from_secs(90))
            .expect_err("nothing listens");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let message = format!("{error:#}{}", last_lines(&err, 5));
        assert!(
            message.contains("exited (exit status: 3) before listening"),
            "{message}"
        );
        assert!(
            message.ends_with("its stderr ended: starting | no module named mcpgateway"),
            "{message}"
        );
    }

    #[test]
    fn last_lines_keeps_the_tail_and_says_nothing_of_an_empty_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("log");
        std::fs::write(&path, "a\n\nb\nc\n").expect("write");
        assert_eq!(last_lines(&path, 2), "; its stderr ended: b | c");
        std::fs::write(&path, "\n  \n").expect("write");
        assert_eq!(last_lines(&path, 2), "");
        assert_eq!(last_lines(&dir.path().join("absent"), 2), "");
    }
}
