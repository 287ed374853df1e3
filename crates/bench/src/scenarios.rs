//! The scenarios. Each starts real processes: the `switchboard` gateway over stdio and the
//! `switchboard-fixture` servers behind it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::report::{Percentiles, ScenarioResult};
use switchboard_fixtures::client::StdioClient;

/// The binaries under test, found next to this executable.
pub struct Binaries {
    pub switchboard: PathBuf,
    pub fixture: PathBuf,
}

impl Binaries {
    pub fn locate() -> anyhow::Result<Self> {
        let exe = std::env::current_exe()?;
        let dir = exe
            .parent()
            .context("the bench executable has no directory")?;
        let bins = Self {
            switchboard: dir.join("switchboard"),
            fixture: dir.join("switchboard-fixture"),
        };
        for bin in [&bins.switchboard, &bins.fixture] {
            if !bin.is_file() {
                bail!(
                    "{} is missing: run `cargo build --release -p switchboard-cli -p switchboard-fixtures` first",
                    bin.display()
                );
            }
        }
        Ok(bins)
    }

    /// The same binaries with another build of `switchboard` (a `--against` binary), which
    /// must exist.
    pub fn with_switchboard(&self, binary: &Path) -> anyhow::Result<Self> {
        if !binary.is_file() {
            bail!("--against {}: no such file", binary.display());
        }
        Ok(Self {
            switchboard: binary.to_owned(),
            fixture: self.fixture.clone(),
        })
    }

    /// The repository root (the binaries are in `target/release`).
    pub fn repo_root(&self) -> PathBuf {
        self.switchboard
            .ancestors()
            .nth(3)
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    }

    fn gateway(&self, config: &Path) -> Command {
        let mut command = Command::new(&self.switchboard);
        keep_files_in(&mut command, config.parent().unwrap_or(Path::new(".")));
        command
            .arg("--config")
            .arg(config)
            .arg("--log")
            .arg("error")
            .arg("serve")
            .stderr(Stdio::null());
        command
    }
}

/// Points a gateway's data, state and config directories (its ledger, latency stats, admin
/// token) at a directory of its own under `dir`, the run's temporary directory: a benchmark
/// never writes to the user's ledger, and each gateway starts with an empty one of its own,
/// whatever earlier runs or the other targets left behind.
pub fn keep_files_in(command: &mut Command, dir: &Path) {
    static GATEWAYS: AtomicUsize = AtomicUsize::new(0);
    let home = dir.join(format!(
        "gateway-{}",
        GATEWAYS.fetch_add(1, Ordering::Relaxed)
    ));
    // A directory that cannot be made leaves the gateway to make it (and report it).
    let _ = std::fs::create_dir_all(&home);
    for variable in ["XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"] {
        command.env(variable, &home);
    }
}

fn write_config(dir: &Path, servers: &[(String, Vec<String>)]) -> anyhow::Result<PathBuf> {
    let mut text = String::from("[gateway]\nconnect_timeout = \"10s\"\n");
    for (id, args) in servers {
        text.push_str(&format!(
            "\n[servers.{id}]\ncommand = {}\nargs = {}\n",
            json!(args[0]),
            json!(args[1..])
        ));
    }
    let path = dir.join("switchboard.toml");
    std::fs::write(&path, text)?;
    Ok(path)
}

fn tool_count(result: &Value) -> usize {
    result
        .get("tools")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// A stdio gateway in front of the stdio echo fixture (server `echo`), not yet started.
pub fn gateway_over_stdio_fixture(bins: &Binaries, dir: &Path) -> anyhow::Result<Command> {
    gateway_over_fixtures(bins, dir, 1)
}

/// A stdio gateway in front of `count` echo fixtures (`echo`, `echo1`, …), not yet started.
pub fn gateway_over_fixtures(bins: &Binaries, dir: &Path, count: usize) -> anyhow::Result<Command> {
    let fixture = bins.fixture.display().to_string();
    let specs: Vec<(String, Vec<String>)> = (0..count)
        .map(|i| {
            let id = if i == 0 {
                "echo".to_owned()
            } else {
                format!("echo{i}")
            };
            (id, vec![fixture.clone(), "echo".into()])
        })
        .collect();
    let config = write_config(dir, &specs)?;
    Ok(bins.gateway(&config))
}

/// Time from spawning the gateway to a complete first `tools/list`.
pub fn startup(
    bins: &Binaries,
    servers: usize,
    delay_ms: u64,
    runs: usize,
) -> anyhow::Result<ScenarioResult> {
    let dir = tempfile::tempdir()?;
    let fixture = bins.fixture.display().to_string();
    let specs: Vec<(String, Vec<String>)> = (0..servers)
        .map(|i| {
            (
                format!("s{i}"),
                vec![
                    fixture.clone(),
                    "echo".into(),
                    "--start-delay-ms".into(),
                    delay_ms.to_string(),
                ],
            )
        })
        .collect();
    let config = write_config(dir.path(), &specs)?;
    let mut samples = Vec::new();
    let mut tools = 0;
    for _ in 0..runs {
        let started = Instant::now();
        let mut client = StdioClient::spawn(&mut bins.gateway(&config))?;
        client.initialize()?;
        let listed = client.request("tools/list", json!({}))?;
        samples.push(started.elapsed());
        tools = tool_count(&listed);
    }
    Ok(ScenarioResult {
        scenario: format!(
            "start-up: {servers} stdio servers of ~{delay_ms} ms each, spawn → complete tools/list"
        ),
        rows: vec![("switchboard".into(), Percentiles::of(&mut samples))],
        notes: vec![format!(
            "tools listed: {tools} (every server's tools present)"
        )],
    })
}

/// `tools/list` latency through the gateway over a replayed catalog, after the first listing.
pub fn list(bins: &Binaries, catalog: &Path, calls: usize) -> anyhow::Result<ScenarioResult> {
    let catalog = catalog
        .canonicalize()
        .with_context(|| format!("catalog {} not found", catalog.display()))?;
    let dir = tempfile::tempdir()?;
    let spec = vec![
        bins.fixture.display().to_string(),
        "replay".into(),
        "--catalog".into(),
        catalog.display().to_string(),
    ];
    let mut pair = SideBySide::open(bins, dir.path(), "catalog", spec)?;
    let first = pair.gateway.request("tools/list", json!({}))?;
    let empty = json!({});
    let (mut straight, mut through) = pair.alternate("tools/list", &empty, &empty, calls)?;
    Ok(ScenarioResult {
        scenario: format!(
            "tools/list over {} real tools ({})",
            tool_count(&first),
            catalog.display()
        ),
        rows: vec![
            (
                "direct to the replay server".into(),
                Percentiles::of(&mut straight),
            ),
            ("through switchboard".into(), Percentiles::of(&mut through)),
        ],
        notes: vec![],
    })
}

/// One upstream reached two ways at once: through a gateway in front of it, and directly; and
/// optionally through a second gateway build (`bench latency --against`), so two builds are
/// compared in one run instead of across runs the machine's drift dominates.
struct SideBySide {
    gateway: StdioClient,
    direct: StdioClient,
    against: Option<StdioClient>,
}

/// Sequential times of each way, in the order direct, through the gateway, through `--against`.
struct Alternated {
    straight: Vec<Duration>,
    through: Vec<Duration>,
    against: Vec<Duration>,
}

impl SideBySide {
    /// Starts the server `spec` directly and behind a gateway (as server `id`), both initialized.
    fn open(bins: &Binaries, dir: &Path, id: &str, spec: Vec<String>) -> anyhow::Result<Self> {
        Self::open_against(bins, dir, id, spec, None)
    }

    /// Like [`Self::open`], plus the same upstream behind the gateway binary `against`.
    fn open_against(
        bins: &Binaries,
        dir: &Path,
        id: &str,
        spec: Vec<String>,
        against: Option<&Path>,
    ) -> anyhow::Result<Self> {
        let other = against
            .map(|binary| bins.with_switchboard(binary))
            .transpose()?;
        let config = write_config(dir, &[(id.to_owned(), spec.clone())])?;
        let mut gateway = StdioClient::spawn(&mut bins.gateway(&config))?;
        gateway.initialize()?;
        let against = match other {
            Some(other) => {
                let mut client = StdioClient::spawn(&mut other.gateway(&config))?;
                client
                    .initialize()
                    .with_context(|| format!("--against {}", other.switchboard.display()))?;
                Some(client)
            }
            None => None,
        };
        let mut direct = StdioClient::spawn(
            Command::new(&spec[0])
                .args(&spec[1..])
                .stderr(Stdio::null()),
        )?;
        direct.initialize()?;
        Ok(Self {
            gateway,
            direct,
            against,
        })
    }

    /// `calls` rounds of one request each way, alternating; returns (direct, through) times.
    fn alternate(
        &mut self,
        method: &str,
        direct_params: &Value,
        through_params: &Value,
        calls: usize,
    ) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
        let all = self.alternate_all(method, direct_params, through_params, calls)?;
        Ok((all.straight, all.through))
    }

    /// `calls` rounds of one request each way, alternating. With an `--against` gateway, the
    /// rounds go to the two gateways in turns of [`AGAINST_BLOCK`] (each gets half): a gateway
    /// busy-polls for a moment after each answer, and would otherwise take a core from the
    /// other's every call.
    fn alternate_all(
        &mut self,
        method: &str,
        direct_params: &Value,
        through_params: &Value,
        calls: usize,
    ) -> anyhow::Result<Alternated> {
        let mut times = Alternated {
            straight: Vec::with_capacity(calls),
            through: Vec::with_capacity(calls),
            against: Vec::with_capacity(calls),
        };
        for round in 0..calls {
            let started = Instant::now();
            self.direct.request_lean(method, direct_params)?;
            times.straight.push(started.elapsed());
            let (client, into) = match &mut self.against {
                Some(against) if (round / AGAINST_BLOCK) % 2 == 1 => (against, &mut times.against),
                _ => (&mut self.gateway, &mut times.through),
            };
            let started = Instant::now();
            client.request_lean(method, through_params)?;
            into.push(started.elapsed());
        }
        Ok(times)
    }
}

/// Rounds in a row that go to the same gateway when two are compared.
const AGAINST_BLOCK: usize = 50;

/// Sequential `tools/call` of `echo`: direct vs through the gateway, alternating call by
/// call (with the gateway binary `against`, the two gateways take turns in blocks, see
/// [`SideBySide::alternate_all`]).
pub fn latency(
    bins: &Binaries,
    calls: usize,
    against: Option<&Path>,
    busy_threads: usize,
) -> anyhow::Result<ScenarioResult> {
    let dir = tempfile::tempdir()?;
    let spec = vec![bins.fixture.display().to_string(), "echo".into()];
    let mut ways = SideBySide::open_against(bins, dir.path(), "echo", spec, against)?;
    let _load = crate::machine::CpuLoad::start(busy_threads);
    let through_params = json!({"name": "echo__echo", "arguments": {"message": "hello"}});
    let direct_params = json!({"name": "echo", "arguments": {"message": "hello"}});
    ways.alternate_all("tools/call", &direct_params, &through_params, 200)?;
    let mut times = ways.alternate_all("tools/call", &direct_params, &through_params, calls)?;
    let direct_p = Percentiles::of(&mut times.straight);
    let through_p = Percentiles::of(&mut times.through);
    let direct_p50 = direct_p.p50_us;
    let direct_p90 = direct_p.p90_us;
    let added = through_p.p50_us - direct_p50;
    let added_p90 = through_p.p90_us - direct_p90;
    let mut rows = vec![
        ("direct to the echo fixture".into(), direct_p),
        ("through switchboard".into(), through_p),
    ];
    let mut notes = vec![format!(
        "added latency at p50: {added:.1} µs, at p90: {added_p90:.1} µs"
    )];
    if let Some(binary) = against {
        let against_p = Percentiles::of(&mut times.against);
        let against_added = against_p.p50_us - direct_p50;
        let against_added_p90 = against_p.p90_us - direct_p90;
        rows.push((format!("through {}", binary.display()), against_p));
        notes.push(format!(
            "added latency through --against at p50: {against_added:.1} µs ({:+.1} µs), at p90: {against_added_p90:.1} µs ({:+.1} µs)",
            against_added - added,
            against_added_p90 - added_p90
        ));
    }
    if busy_threads > 0 {
        notes.push(format!(
            "{busy_threads} thread(s) spinning on the CPU during the run (--busy-threads)"
        ));
    }
    notes.extend(crate::machine::idle_config());
    notes.push(format!("measured {}", chrono_free_now()));
    Ok(ScenarioResult {
        scenario: format!(
            "tools/call echo, sequential, stdio → stdio, {calls} calls after 200 warm-up"
        ),
        rows,
        notes,
    })
}

fn chrono_free_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    format!("at unix time {secs}")
}
