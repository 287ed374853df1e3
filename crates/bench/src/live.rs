//! `bench live`: what live configuration costs, on a gateway of its own — `switchboard serve
//! --http` on 127.0.0.1 with two echo servers `a` and `b`, its own admin file, every file in
//! the run's temporary directory. Three measurements, one after another:
//!
//! 1. **add → callable** ([`adds`]): a stdio server added through the admin endpoint, timed
//!    from sending the add to the first answered call of its `echo`, beside the server's own
//!    start-up (`connect_ms` of the change report); a few rounds through the CLI as well.
//! 2. **untouched servers under churn** ([`churn`]): calls to `a__echo` from C clients in
//!    alternating windows, calm and with a server added and removed every second.
//! 3. **hand edit → list_changed** ([`edits`]): the config file rewritten like an editor
//!    does, timed from the rename to `notifications/tools/list_changed` on an open legacy
//!    session's SSE stream ([`sse`]).

mod adds;
mod admin;
mod churn;
mod edits;
mod sse;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::{Value, json};

use crate::drive::failure;
use crate::http_client::HttpClient;
use crate::report;
use crate::scenarios::{self, Binaries};
use crate::targets::Spawned;

/// `bench live`'s command line.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Servers added and removed one at a time through the admin endpoint, each timed from
    /// the add to its first answered call.
    #[arg(long, default_value_t = 30)]
    adds: usize,
    /// Rounds more of the same through the CLI (`switchboard servers add`), its own process
    /// start included.
    #[arg(long, default_value_t = 5)]
    cli_adds: usize,
    /// Windows of calls to the untouched server `a`, alternating calm and churn, calm first.
    #[arg(long, default_value_t = 6)]
    windows: usize,
    /// Seconds per window.
    #[arg(long, default_value_t = 5.0)]
    window_secs: f64,
    /// Clients calling `a__echo` during the windows, each one call after another on a
    /// keep-alive connection with a legacy session of its own.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Hand edits of the config file, alternately adding and removing one server.
    #[arg(long, default_value_t = 10)]
    edits: usize,
    /// Seconds to wait for any one answer, change or notification before the run fails.
    #[arg(long, default_value_t = 15.0)]
    timeout: f64,
    /// The gateway binary (default: `switchboard` next to this executable, e.g.
    /// target/release/switchboard).
    #[arg(long, value_name = "SWITCHBOARD_BINARY")]
    switchboard: Option<PathBuf>,
}

/// What a run measured.
#[derive(Debug, Serialize)]
pub struct Live {
    pub gateway: String,
    /// Cores the run saw.
    pub cores: usize,
    pub add_to_callable: adds::AddToCallable,
    pub untouched_under_churn: churn::UnderChurn,
    pub hand_edit_to_list_changed: edits::HandEdits,
    pub idle_cores: Option<String>,
}

/// Runs `bench live` and prints what it measured; failed calls to the untouched server fail
/// the run after the report.
pub fn main(args: &Args, json: bool) -> anyhow::Result<()> {
    if args.adds == 0 || args.edits == 0 || args.clients == 0 {
        bail!("--adds, --edits and --clients must be at least 1");
    }
    if args.windows < 2 {
        bail!("--windows must be at least 2: one calm and one with churn");
    }
    for (name, value) in [
        ("--window-secs", args.window_secs),
        ("--timeout", args.timeout),
    ] {
        if !(value > 0.0 && value.is_finite()) {
            bail!("{name} must be a positive number of seconds, not {value}");
        }
    }
    let bins = binaries(args.switchboard.as_deref())?;
    let dir = tempfile::tempdir().context("cannot make a temporary directory")?;
    let gateway = Gateway::start(&bins, dir.path(), Duration::from_secs_f64(args.timeout))?;
    let window = Duration::from_secs_f64(args.window_secs);
    let measured = (|| {
        Ok((
            adds::measure(&gateway, args.adds, args.cli_adds)?,
            churn::measure(&gateway, args.clients, args.windows, window)?,
            edits::measure(&gateway, args.edits)?,
        ))
    })();
    let (add_to_callable, untouched_under_churn, hand_edit_to_list_changed) =
        measured.map_err(|error| gateway.explain(error))?;
    let live = Live {
        gateway: bins.switchboard.display().to_string(),
        cores: std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
        add_to_callable,
        untouched_under_churn,
        hand_edit_to_list_changed,
        idle_cores: crate::machine::idle_config(),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&live)?);
    } else {
        for table in [
            live.add_to_callable.table(),
            live.untouched_under_churn.table(),
            live.hand_edit_to_list_changed.table(),
        ] {
            report::print(&table);
        }
        println!("\n{} on {} cores", live.gateway, live.cores);
        if let Some(line) = &live.idle_cores {
            println!("{line}");
        }
    }
    live.untouched_under_churn.check()
}

/// The gateway under test and the echo fixture next to this executable.
fn binaries(switchboard: Option<&Path>) -> anyhow::Result<Binaries> {
    let Some(switchboard) = switchboard else {
        return Binaries::locate();
    };
    let exe = std::env::current_exe().context("cannot find the bench executable")?;
    let fixture = exe
        .parent()
        .context("the bench executable has no directory")?
        .join("switchboard-fixture");
    for bin in [switchboard, fixture.as_path()] {
        if !bin.is_file() {
            bail!("{} is missing", bin.display());
        }
    }
    Ok(Binaries {
        switchboard: switchboard.to_owned(),
        fixture,
    })
}

/// The config file's text with stdio echo servers `names`.
fn config_text(fixture: &str, names: &[&str]) -> String {
    let mut text = String::from("[gateway]\nconnect_timeout = \"10s\"\n");
    for name in names {
        text.push_str(&server_entry(fixture, name));
    }
    text
}

/// One stdio echo server's table, as a hand edit appends it.
fn server_entry(fixture: &str, name: &str) -> String {
    format!(
        "\n[servers.{name}]\ncommand = {}\nargs = [\"echo\"]\n",
        json!(fixture)
    )
}

/// The running gateway and how to reach and change it.
pub struct Gateway {
    process: Mutex<Spawned>,
    /// The last lines the gateway wrote on stderr.
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Its `/mcp` URL.
    pub url: String,
    pub admin: admin::Admin,
    pub admin_file: PathBuf,
    pub config: PathBuf,
    /// The config file's text with `a` and `b`, as it started.
    pub base: String,
    pub fixture: String,
    pub switchboard: PathBuf,
    /// The directory the CLI's state and config directories point at.
    pub home: PathBuf,
    /// How long any one answer, change or notification may take.
    pub timeout: Duration,
}

impl Gateway {
    /// Starts the gateway on a config with `a` and `b` in `dir` and waits until both answer.
    fn start(bins: &Binaries, dir: &Path, timeout: Duration) -> anyhow::Result<Self> {
        let fixture = bins.fixture.display().to_string();
        let base = config_text(&fixture, &["a", "b"]);
        let config = dir.join("switchboard.toml");
        std::fs::write(&config, &base)
            .with_context(|| format!("cannot write {}", config.display()))?;
        let admin_file = dir.join("admin.json");
        let mut command = Command::new(&bins.switchboard);
        scenarios::keep_files_in(&mut command, dir);
        command
            .arg("--config")
            .arg(&config)
            .args(["--log", "error", "serve", "--http", "127.0.0.1:0"])
            .arg("--admin-file")
            .arg(&admin_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start {}", bins.switchboard.display()))?;
        let stderr = child.stderr.take().context("the gateway's stderr")?;
        let mut process = Spawned::new(child);
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let url =
            listening(stderr, tail.clone(), timeout).map_err(|error| match process.exited() {
                Some(status) => error.context(format!("the gateway ended ({status})")),
                None => error,
            })?;
        let admin = admin::Admin::read(&admin_file, timeout)?;
        let gateway = Self {
            process: Mutex::new(process),
            stderr: tail,
            url,
            admin,
            admin_file,
            config,
            base,
            fixture,
            switchboard: bins.switchboard.clone(),
            home: dir.join("cli"),
            timeout,
        };
        let mut client = gateway.client()?;
        for tool in ["a__echo", "b__echo"] {
            first_answer(&mut client, tool, Instant::now(), timeout)
                .map_err(|error| gateway.explain(error))
                .with_context(|| format!("the gateway's server {tool} never answered"))?;
        }
        Ok(gateway)
    }

    /// `error` with the gateway's exit and the last lines of its stderr, if it has ended.
    fn explain(&self, error: anyhow::Error) -> anyhow::Error {
        let Some(status) = self.process.lock().ok().and_then(|mut p| p.exited()) else {
            return error;
        };
        // Its last words may still be on their way through the pipe.
        std::thread::sleep(Duration::from_millis(200));
        let tail = self
            .stderr
            .lock()
            .map(|lines| Vec::from(lines.clone()).join("\n"))
            .unwrap_or_default();
        error.context(format!(
            "the gateway ended ({status}); the last lines of its stderr:\n{tail}"
        ))
    }

    /// A keep-alive connection with a legacy session of its own.
    pub fn client(&self) -> anyhow::Result<HttpClient> {
        let mut client = HttpClient::connect(&self.url)?;
        client.set_timeout(self.timeout)?;
        client
            .initialize()
            .with_context(|| format!("{}: opening a session", self.url))?;
        Ok(client)
    }

    /// `switchboard --config CONFIG ARGS...`, its state in the run's directory.
    pub fn cli(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.switchboard);
        for variable in ["XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"] {
            command.env(variable, &self.home);
        }
        command.arg("--config").arg(&self.config).args(args);
        command
    }
}

/// Lines of the gateway's stderr kept for a report of its end.
const STDERR_TAIL: usize = 40;

/// Waits for the gateway's "listening on URL" line on `stderr` and returns the URL; keeps
/// draining stderr after it, so the gateway never blocks on a full pipe, keeping its last
/// lines in `tail`.
fn listening(
    stderr: impl std::io::Read + Send + 'static,
    tail: Arc<Mutex<VecDeque<String>>>,
    limit: Duration,
) -> anyhow::Result<String> {
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Ok(mut tail) = tail.lock() {
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(line.clone());
            }
            // Nobody listens after the URL: the lines are drained and dropped.
            let _ = lines.send(line);
        }
    });
    let deadline = Instant::now() + limit;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match received.recv_timeout(left) {
            Ok(line) => {
                if let Some((_, url)) = line.split_once("listening on ") {
                    return Ok(url.trim().to_owned());
                }
                seen.push(line);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => bail!(
                "the gateway did not say where it listens within {limit:?}; its stderr:\n{}",
                seen.join("\n")
            ),
            Err(mpsc::RecvTimeoutError::Disconnected) => bail!(
                "the gateway ended before listening; its stderr:\n{}",
                seen.join("\n")
            ),
        }
    }
}

/// Calls `tool` (an echo) until it answers, retrying at once while the gateway does not
/// know it yet; returns when it answered and how many calls were refused as unknown first.
/// Any other failure, or no answer `limit` after `since`, is an error.
pub fn first_answer(
    client: &mut HttpClient,
    tool: &str,
    since: Instant,
    limit: Duration,
) -> anyhow::Result<(Instant, usize)> {
    let params = json!({"name": tool, "arguments": {"message": "live"}});
    let mut unknown = 0;
    loop {
        let answer: Value = client
            .exchange("tools/call", params.clone())
            .with_context(|| format!("calling {tool}"))?;
        let answered = Instant::now();
        match failure(&answer) {
            None => return Ok((answered, unknown)),
            Some(reason)
                if reason.to_lowercase().contains("unknown tool")
                    && answered.duration_since(since) < limit =>
            {
                unknown += 1;
            }
            Some(reason) => bail!("{tool}: {reason} (after {unknown} unknown-tool answers)"),
        }
    }
}

/// Milliseconds as a duration (a negative or odd figure as zero).
fn from_ms(ms: f64) -> Duration {
    Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::ZERO)
}
