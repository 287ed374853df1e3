//! `bench manager`: what the server manager's background installs cost the calls going
//! through the gateway meanwhile. A gateway of its own (`switchboard serve --http` on
//! 127.0.0.1 with the echo fixture as server `a`, every file in the run's temporary
//! directory) whose `[manager]` reads the registry fixture, which lists one server: the npm
//! package `@modelcontextprotocol/server-memory` (installed from npm's cache: the gateway runs
//! npm offline, and scripts/install-test-deps.sh warms the cache).
//!
//! Each cycle has three windows, in which C clients call `a__echo` back to back:
//! A, idle; B, busy — N installs of the memory server queued at once through the admin
//! endpoint (run together, `max_concurrent = N`), the window lasting until all of them end and
//! at least as long as an idle one; C, idle again, so drift shows. Between cycles the
//! installed servers are removed (and uninstalled) through the manager. The report puts busy
//! p99 beside idle p99 (A and C pooled); the target is ≤ 1.10×.

mod admin;
mod load;
mod report;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use crate::admin::Admin;
use crate::http_client::HttpClient;
use crate::scenarios::Binaries;
use crate::targets::Spawned;
use load::Calls;
pub use report::ManagerRun;
use report::{Install, Window};

/// The registry name of the server the benchmark installs.
const NAME: &str = "io.github.modelcontextprotocol/server-memory";
/// Its npm package and version (the ones scripts/install-test-deps.sh puts in npm's cache).
const PACKAGE: &str = "@modelcontextprotocol/server-memory";
const VERSION: &str = "2026.8.31";

/// `bench manager`'s command line.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Clients calling `a__echo`, each one call after another on a keep-alive connection.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Seconds of an idle window, and the least a busy one lasts.
    #[arg(long, default_value_t = 8.0)]
    window_secs: f64,
    /// Cycles of idle, busy, idle windows.
    #[arg(long, default_value_t = 2)]
    cycles: usize,
    /// Installs queued at once in each busy window (also `[manager] max_concurrent`).
    #[arg(long, default_value_t = 3)]
    installs: usize,
    /// Seconds the installs of one busy window may take before the run fails.
    #[arg(long, default_value_t = 300.0)]
    install_timeout: f64,
    /// The gateway binary (default: `switchboard` next to this executable).
    #[arg(long, value_name = "SWITCHBOARD_BINARY")]
    switchboard: Option<PathBuf>,
}

/// Runs `bench manager` and prints what it measured; failed calls or installs fail the run
/// after the report.
pub fn main(args: &Args, json: bool) -> anyhow::Result<()> {
    if args.clients == 0 || args.cycles == 0 || args.installs == 0 {
        bail!("--clients, --cycles and --installs must be at least 1");
    }
    for (name, value) in [
        ("--window-secs", args.window_secs),
        ("--install-timeout", args.install_timeout),
    ] {
        if !(value > 0.0 && value.is_finite()) {
            bail!("{name} must be a positive number of seconds, not {value}");
        }
    }
    let bins = match &args.switchboard {
        Some(binary) => Binaries::locate()?.with_switchboard(binary)?,
        None => Binaries::locate()?,
    };
    let dir = tempfile::tempdir().context("cannot make a temporary directory")?;
    let gateway = Gateway::start(&bins, dir.path(), args.installs)?;
    let run = measure(&gateway, args).map_err(|error| gateway.explain(error))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&run)?);
    } else {
        run.print();
    }
    run.check()
}

/// The cycles: idle, busy, idle each.
fn measure(gateway: &Gateway, args: &Args) -> anyhow::Result<ManagerRun> {
    let load_before = report::load_average();
    let idle_length = Duration::from_secs_f64(args.window_secs);
    let install_limit = Duration::from_secs_f64(args.install_timeout);
    let open = || gateway.client();
    let mut callers = (0..args.clients)
        .map(|_| gateway.client())
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (mut before, mut busy, mut after) = (Calls::default(), Calls::default(), Calls::default());
    let mut busy_rest = Calls::default();
    let mut windows = Vec::new();
    let mut installs = Vec::new();
    let mut next_server = 1;
    for cycle in 1..=args.cycles {
        load::warm_up(&open, &mut callers)?;
        let (calls, length, ()) = load::window(&open, &mut callers, || {
            std::thread::sleep(idle_length);
            Ok(())
        })?;
        windows.push(Window::of(cycle, "idle before", &calls, length));
        before.merge(&calls);

        let servers: Vec<String> = (next_server..next_server + args.installs)
            .map(|k| format!("m{k}"))
            .collect();
        next_server += args.installs;
        let started = Instant::now();
        let (calls, length, (done, ended)) = load::window(&open, &mut callers, || {
            install_all(&gateway.admin, &servers, idle_length, install_limit)
        })
        .with_context(|| format!("cycle {cycle}, busy window"))?;
        // Calls after the last install ended belong to neither kind of window.
        let (calls, rest) = calls.split_at(ended);
        let running = ended.saturating_duration_since(started);
        windows.push(Window::of(cycle, "busy", &calls, running));
        windows.push(Window::of(
            cycle,
            "busy, ended",
            &rest,
            length.saturating_sub(running),
        ));
        busy.merge(&calls);
        busy_rest.merge(&rest);
        installs.extend(done.iter().map(|op| Install::of(cycle, op)));

        let (calls, length, ()) = load::window(&open, &mut callers, || {
            std::thread::sleep(idle_length);
            Ok(())
        })?;
        windows.push(Window::of(cycle, "idle after", &calls, length));
        after.merge(&calls);

        if cycle < args.cycles {
            remove_all(&gateway.admin, &servers, install_limit)?;
        }
    }
    let mut idle = Calls::default();
    idle.merge(&before);
    idle.merge(&after);
    Ok(ManagerRun::new(
        gateway,
        args,
        [before, busy, busy_rest, after, idle].map(Calls::side),
        windows,
        installs,
        [load_before, report::load_average()],
    ))
}

/// Queues an install of each of `servers` at once, then follows them until all are over
/// (and at least `least` has passed); the operations as they ended, and when the last ended
/// (as seen by polling every 100 ms).
fn install_all(
    admin: &Admin,
    servers: &[String],
    least: Duration,
    limit: Duration,
) -> anyhow::Result<(Vec<serde_json::Value>, Instant)> {
    let started = Instant::now();
    let ids = servers
        .iter()
        .map(|server| admin.queue(&admin::install_request(NAME, server)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut operations = vec![json!(null); ids.len()];
    let mut ended = None;
    loop {
        for (id, operation) in ids.iter().zip(&mut operations) {
            if !admin::is_final(operation) {
                *operation = admin.operation(id)?;
            }
        }
        if ended.is_none() && operations.iter().all(admin::is_final) {
            ended = Some(Instant::now());
        }
        if let Some(ended) = ended
            && started.elapsed() >= least
        {
            return Ok((operations, ended));
        }
        if started.elapsed() > limit {
            let states: Vec<&str> = operations.iter().map(admin::state).collect();
            bail!("the installs did not end within {limit:?}: {states:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Removes and uninstalls `servers` through the manager, one after another.
fn remove_all(admin: &Admin, servers: &[String], limit: Duration) -> anyhow::Result<()> {
    for server in servers {
        let id = admin.queue(&admin::remove_request(server))?;
        let operation = admin.finished(&id, limit)?;
        if admin::state(&operation) != "completed" {
            bail!(
                "removing {server}: {}",
                Install::of(0, &operation).summary()
            );
        }
    }
    Ok(())
}

/// The running gateway, the registry fixture it reads, and how to reach them.
pub struct Gateway {
    process: std::sync::Mutex<Spawned>,
    _registry: Spawned,
    /// Its `/mcp` URL.
    url: String,
    admin: Admin,
    /// Where its stderr goes.
    log: PathBuf,
    switchboard: PathBuf,
}

impl Gateway {
    /// Starts the registry fixture over one entry, and the gateway on a config with the echo
    /// server `a` and a `[manager]` that reads the fixture; waits until `a` answers.
    fn start(bins: &Binaries, dir: &Path, installs: usize) -> anyhow::Result<Self> {
        let timeout = Duration::from_secs(30);
        let entries = dir.join("registry");
        std::fs::create_dir_all(&entries)?;
        let entry = json!({
            "name": NAME,
            "title": "Memory",
            "description": "Knowledge-graph memory (the MCP reference server)",
            "version": VERSION,
            "packages": [{
                "registryType": "npm",
                "identifier": PACKAGE,
                "version": VERSION,
                "transport": {"type": "stdio"},
            }],
        });
        std::fs::write(entries.join("memory.json"), entry.to_string())?;
        let mut command = Command::new(&bins.fixture);
        command
            .args(["registry", "--dir"])
            .arg(&entries)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start {}", bins.fixture.display()))?;
        let stdout = child
            .stdout
            .take()
            .context("the registry fixture's stdout")?;
        let registry = Spawned::new(child);
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)?;
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .with_context(|| format!("the registry fixture said {line:?}"))?;
        let config = dir.join("switchboard.toml");
        let text = format!(
            "[gateway]\nconnect_timeout = \"30s\"\n\n\
             [manager]\nregistries = [{registry}]\ninstall_dir = {install}\n\
             database = {database}\nmax_concurrent = {installs}\n\n\
             [servers.a]\ncommand = {fixture}\nargs = [\"echo\"]\n",
            registry = json!(format!("http://{address}")),
            install = json!(dir.join("servers")),
            database = json!(dir.join("operations.db")),
            fixture = json!(bins.fixture),
        );
        std::fs::write(&config, text)?;
        let log = dir.join("gateway.log");
        let admin_file = dir.join("admin.json");
        let mut command = Command::new(&bins.switchboard);
        for variable in ["XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"] {
            command.env(variable, dir.join("home"));
        }
        command
            .arg("--config")
            .arg(&config)
            .args(["--log", "warn", "serve", "--http", "127.0.0.1:0"])
            .arg("--admin-file")
            .arg(&admin_file)
            .env("PATH", node_path())
            .env("npm_config_offline", "true")
            .env("npm_config_update_notifier", "false")
            .env("SWITCHBOARD_SECRETS", dir.join("secrets.env"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?);
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {}", bins.switchboard.display()))?;
        let mut process = Spawned::new(child);
        let deadline = Instant::now() + timeout;
        let url = loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let Some(url) = text
                .lines()
                .find_map(|line| line.split_once("listening on ").map(|(_, url)| url))
            {
                break url.trim().to_owned();
            }
            if let Some(status) = process.exited() {
                bail!("the gateway ended ({status}) before listening:\n{text}");
            }
            if Instant::now() > deadline {
                bail!("the gateway did not listen within {timeout:?}:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // A waiting `GET /operations/{id}` may hold its answer up to 30 s.
        let admin = Admin::read(&admin_file, timeout.max(Duration::from_secs(35)))?;
        let gateway = Self {
            process: std::sync::Mutex::new(process),
            _registry: registry,
            url,
            admin,
            log,
            switchboard: bins.switchboard.clone(),
        };
        let mut client = gateway.client()?;
        crate::live::first_answer(&mut client, "a__echo", Instant::now(), timeout)
            .map_err(|error| gateway.explain(error))
            .context("the gateway's server a never answered")?;
        Ok(gateway)
    }

    /// A keep-alive connection with a legacy session of its own.
    fn client(&self) -> anyhow::Result<HttpClient> {
        let mut client = HttpClient::connect(&self.url)?;
        client.set_timeout(Duration::from_secs(30))?;
        client
            .initialize()
            .with_context(|| format!("{}: opening a session", self.url))?;
        Ok(client)
    }

    /// `error`, with the last lines of the gateway's log, and its exit if it has ended.
    fn explain(&self, error: anyhow::Error) -> anyhow::Error {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(30)..].join("\n");
        let ended = self
            .process
            .lock()
            .ok()
            .and_then(|mut p| p.exited())
            .map(|status| format!("the gateway ended ({status}); "))
            .unwrap_or_default();
        if tail.is_empty() && ended.is_empty() {
            return error;
        }
        error.context(format!("{ended}the last lines of its log:\n{tail}"))
    }
}

/// `PATH` for the gateway: Node 22 from e2e/node_modules first when it is there (as the
/// end-to-end tests run the installed servers), then this process's.
fn node_path() -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    let roots = [
        std::env::current_dir().ok(),
        std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.to_owned())),
    ];
    roots
        .into_iter()
        .flatten()
        .map(|root| root.join("e2e/node_modules/.bin"))
        .find(|bin| bin.join("node").is_file())
        .map_or(path.clone(), |bin| format!("{}:{path}", bin.display()))
}
