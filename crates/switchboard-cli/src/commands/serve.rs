//! `switchboard serve`: the gateway. Stdio by default; `--http ADDR` for Streamable HTTP.
//! SIGINT/SIGTERM (or stdin closing, on stdio) stop it gracefully: stop accepting, turn
//! `/readyz` to 503, close GET streams with a `retry:` hint, give in-flight calls the drain
//! timeout (`--drain-timeout`, default 30 s; calls still running then are answered with an
//! error saying the gateway is shutting down), stop every server (killing child process
//! groups), exit 0.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use switchboard::{Host, LiveOptions};
use switchboard_core::CatalogProblem;
use switchboard_mcp::busy_poll::BusyPoll;
use switchboard_mcp::front::Dispatcher;
use switchboard_mcp::front::http::{self, Authenticator, HttpOptions};
use switchboard_mcp::front::stdio::{self, StdioOptions};
use switchboard_mcp::oauth::OAuthVerifier;
use tokio_util::sync::CancellationToken;

use super::exposure_flag::ExposureFlag;
use crate::admin::advertise::AdminReady;
use crate::admin::{AdminFile, admin_path, server};

/// How long the errors of calls cut off at the drain timeout get to reach their clients.
const ABANDON_WRITE: Duration = Duration::from_secs(1);

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Serve Streamable HTTP at this address (path /mcp) instead of stdio, e.g. 127.0.0.1:8080.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Expose upstream tool names unchanged (no server prefix); refused if names collide.
    #[arg(long)]
    no_prefix: bool,
    /// Serve on behalf of this agent (one of the config's [agents]): only its tools are
    /// listed and callable.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// Extra allowed Origin for HTTP requests (repeatable); loopback origins are always allowed.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
    /// Serve in this latency tier (one of the config's [tiers]): only tools whose latency fits
    /// it are listed and callable.
    #[arg(long, value_name = "TIER")]
    tier: Option<String>,
    #[command(flatten)]
    exposure: ExposureFlag,
    /// Address of the admin endpoint (operator commands such as `switchboard approvals`);
    /// loopback only. Its URL and token are written to the admin file
    /// ($SWITCHBOARD_ADMIN_FILE, else $XDG_STATE_HOME/switchboard/admin.json).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    admin: SocketAddr,
    /// Write the admin endpoint's URL and token here instead.
    #[arg(long, value_name = "FILE")]
    admin_file: Option<std::path::PathBuf>,
    /// Seconds in-flight calls may take to finish on shutdown (SIGTERM, SIGINT); calls
    /// still running then are answered with an error saying the gateway is shutting down.
    #[arg(
        long = "drain-timeout",
        alias = "grace",
        value_name = "SECONDS",
        default_value_t = 30
    )]
    drain_timeout: u64,
    /// Threads of the async runtime serving HTTP. 1 keeps every handoff of a call on one
    /// thread. Default: 1 on a machine with at most 2 cores (measured there: lower latency
    /// and higher throughput than a thread per core, see BENCHMARKS.md), else one per core.
    /// A stdio gateway always runs on one.
    #[arg(long, value_name = "N")]
    threads: Option<std::num::NonZeroUsize>,
    /// How an HTTP gateway of several threads serves its connections: `per-thread` (each
    /// connection owned by one of --threads threads, each a runtime of its own, so a call's
    /// handoffs stay on one core) or `shared` (every connection on one work-stealing runtime).
    /// Default: per-thread; a gateway of one thread is the same either way.
    #[arg(long, value_enum, value_name = "MODE", default_value = "per-thread")]
    connections: ConnectionsArg,
    /// Keep polling this long after a request starts or is answered instead of sleeping
    /// (overrides gateway.busy_poll, default 100us; "0" turns it off). Saves a core's wake-up
    /// per hop on quick calls; only on a one-thread runtime.
    #[arg(long, value_name = "DURATION", value_parser = parse_busy_poll)]
    busy_poll: Option<Duration>,
    /// Do not follow hand edits of the config file (same as gateway.watch = false);
    /// `switchboard reload` and SIGHUP still reload it.
    #[arg(long)]
    no_watch: bool,
    /// Refuse every change through the CLI, the admin endpoint and the library (same as
    /// gateway.read_only = true); hand edits of the file still reload.
    #[arg(long)]
    read_only_config: bool,
}

/// `serve --connections`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ConnectionsArg {
    PerThread,
    Shared,
}

fn parse_busy_poll(text: &str) -> Result<Duration, String> {
    // A bare number is milliseconds, as in the config file.
    let parsed = match text.trim().parse::<u64>() {
        Ok(ms) => Some(Duration::from_millis(ms)),
        Err(_) => switchboard_core::config::parse_duration(text),
    };
    let window = parsed.ok_or_else(|| switchboard_core::config::DURATION_HINT.to_owned())?;
    switchboard_core::config::busy_poll_window(window)
}

impl ServeArgs {
    /// Whether this gateway serves one client over stdio (not HTTP).
    pub fn serves_stdio(&self) -> bool {
        self.http.is_none()
    }

    /// How many threads the async runtime should have.
    pub fn runtime_threads(&self) -> usize {
        if self.serves_stdio() {
            return 1;
        }
        if let Some(threads) = self.threads {
            return threads.get();
        }
        // On two cores the clients, the upstream servers and the ledger's writer share the
        // gateway's cores: a second runtime thread mostly adds cross-thread wake-ups.
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        if cores <= 2 { 1 } else { cores }
    }

    /// Threads that own the HTTP front's connections (0: they are served on the runtime).
    fn connection_workers(&self) -> usize {
        match (self.connections, self.runtime_threads()) {
            (ConnectionsArg::PerThread, threads) if threads > 1 => threads,
            _ => 0,
        }
    }
}

pub async fn run(config: Option<&Path>, args: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut config = super::load_config(config)?;
    // The command line's word over the file, again at every reload.
    let (no_prefix, exposure, busy_poll) = (args.no_prefix, args.exposure, args.busy_poll);
    let adjust = move |config: &mut switchboard_core::config::Config| {
        if no_prefix {
            config.gateway.prefix_tools = false;
        }
        exposure.apply(config);
        if let Some(window) = busy_poll {
            config.gateway.busy_poll = window;
        }
    };
    adjust(&mut config);
    super::check_agent(&config, args.agent.as_deref())?;
    let max_message_bytes = config.gateway.max_message_bytes;
    let connections = http::ConnectionLimits {
        header_timeout: config.gateway.header_timeout,
        max_connections: config.gateway.max_connections,
    };
    let ledger = super::audit::open_ledger(&config)?;
    // Tokens are required when there are some at start; from then on the token file (or,
    // with `[storage] url`, the token table every replica shares) is followed (created and
    // revoked tokens take effect within a second), and revoking the last one never opens
    // the endpoint.
    let tokens = super::token::live_tokens(&config).await?;
    let auth: Option<Arc<dyn Authenticator>> = if tokens.current().is_empty() || !config.auth.tokens
    {
        None
    } else {
        Some(Arc::new(tokens))
    };
    let options = switchboard::HostOptions {
        recorder: Arc::new(ledger.clone()),
        latency_database: super::audit::latency_path(&config),
        // operations.db beside the ledger, unless `[manager] database` names one.
        manager_database: super::manager::database_path(&config),
        sandbox_launcher: std::env::current_exe().ok(),
        ..switchboard::HostOptions::default()
    };
    let host = Host::from_config_with(&config, options)?;
    host.set_live_options(LiveOptions {
        read_only: args.read_only_config,
        default_file: if config.source.is_none() {
            super::user_config_file()
        } else {
            None
        },
        adjust: Some(Arc::new(adjust)),
        ..LiveOptions::default()
    });
    // With `[storage] url`, the managed configuration on PostgreSQL is laid over the file
    // now and followed while the gateway runs (`switchboard::live::shared_store`).
    let _managed = match super::audit::storage_url(&config) {
        Some(url) => Some(
            host.manage(switchboard::live::ManagedStore::new(url)?)
                .await
                .context("the managed configuration ([storage] url)")?,
        ),
        None => None,
    };
    let watcher = match &config.source {
        Some(path) if config.gateway.watch && !args.no_watch => {
            match switchboard::live::watch::watch(host.clone(), path) {
                Ok(task) => Some(task),
                Err(error) => {
                    tracing::warn!(
                        "cannot watch {} for changes ({error}); `switchboard reload` and SIGHUP still reload it",
                        path.display()
                    );
                    None
                }
            }
        }
        _ => None,
    };
    let shutdown = CancellationToken::new();
    tokio::spawn(watch_signals(shutdown.clone()));
    tokio::spawn(reload_on_hangup(host.clone()));
    if args.no_prefix {
        host.ready().await;
        refuse_collisions(&host).await?;
    }
    let admin = start_admin(
        &host,
        AdminSetup {
            address: args.admin,
            connections,
            file: args.admin_file.as_deref(),
            config: config.source.clone(),
            ledger: super::audit::storage_url(&config)
                .is_none()
                .then(|| ledger.path().to_owned()),
            postgres: super::audit::storage_url(&config)
                .map(|url| switchboard_ledger::postgres::pool(url, 2))
                .transpose()?,
            token_file: super::token::token_file_path(&config)
                .filter(|_| super::audit::storage_url(&config).is_none()),
            shared_tokens: super::audit::storage_url(&config)
                .map(switchboard::tokens::SharedTokens::new)
                .transpose()?
                .map(Arc::new),
            trace_url: config.telemetry.trace_url.clone(),
        },
        shutdown.clone(),
    )
    .await?;
    if let Some(tier) = &args.tier {
        host.check_tier(tier)?;
    }
    let dispatcher = Dispatcher::new(Arc::new(host.clone()), args.agent.clone())
        .for_tier(args.tier.as_ref().map(|t| t.to_lowercase()))
        .with_busy_poll(BusyPoll::start(config.gateway.busy_poll));
    let grace = Duration::from_secs(args.drain_timeout);
    match args.http {
        Some(address) => {
            let connection_workers = args.connection_workers();
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .with_context(|| format!("cannot listen on {address}"))?;
            let bound = listener.local_addr()?;
            let lifecycle = http::Lifecycle::default();
            // `[auth] mode = "oauth"`: access tokens of the configured issuer, checked against
            // its keys. The agents are those of the config at start (a restart picks up new
            // ones). The resource a token must name is configured, or on loopback this
            // listener's own URL — never taken from a request's Host header, or a token minted
            // for another server of the same issuer could be replayed here (RFC 8707).
            let oauth = match config.auth.oauth.clone() {
                Some(mut settings) => {
                    if settings.resource.is_none() && settings.audience.is_empty() {
                        if !bound.ip().is_loopback() {
                            bail!(
                                "[auth] mode \"oauth\" on {bound} needs `resource` (the URL clients use for /mcp, \
                                 e.g. \"https://gw.example.com/mcp\"): off loopback the gateway cannot tell it"
                            );
                        }
                        settings.resource = Some(format!("http://{bound}/mcp"));
                    }
                    if config.agents.is_empty() && settings.scopes.is_empty() {
                        // Every token the issuer signs for this resource then sees and calls
                        // every tool: fine for one team's issuer, not for one with open sign-up.
                        let _ = writeln!(
                            std::io::stderr(),
                            "switchboard: warning: [auth] oauth with no [agents] and no scopes: \
                             any valid token of {} may call every tool",
                            settings.issuer
                        );
                    }
                    Some(Arc::new(
                        OAuthVerifier::new(
                            settings,
                            config.agents.keys().cloned().collect(),
                            Arc::new(switchboard_core::clock::SystemClock),
                        )
                        .map_err(|error| anyhow::anyhow!("[auth]: {error}"))?
                        .offering(
                            config
                                .agents
                                .values()
                                .flat_map(|agent| agent.scopes.keys().cloned())
                                .collect::<std::collections::BTreeSet<_>>(),
                        ),
                    ))
                }
                None => None,
            };
            let options = HttpOptions {
                max_message_bytes,
                allowed_origins: args.allow_origins,
                allowed_hosts: Vec::new(),
                check_host: bound.ip().is_loopback(),
                auth: auth.clone(),
                oauth,
                connection_workers,
                connections,
                keys: host
                    .keys()
                    .unwrap_or_else(|| Arc::new(switchboard_mcp::seal::FixedKeys::ephemeral())),
                lifecycle: lifecycle.clone(),
                ended_sessions: host
                    .ended_sessions()
                    .unwrap_or_else(|| Arc::new(http::LocalEndedSessions::default())),
                answer_routes: host.answer_routes(),
            };
            let _published = admin.open()?;
            // Not `eprintln!`: a gateway whose stderr is closed keeps serving.
            let _ = writeln!(
                std::io::stderr(),
                "switchboard: listening on http://{bound}/mcp"
            );
            tracing::info!("listening on http://{bound}/mcp");
            let served = http::serve(dispatcher, listener, options, shutdown.clone());
            tokio::pin!(served);
            tokio::select! {
                result = &mut served => result?,
                () = shutdown.cancelled() => {
                    // Axum stops accepting at once and the front drains (readyz 503, GET
                    // streams closed); open requests get the drain timeout, then those still
                    // running are answered with an error, which gets a moment to be written.
                    if tokio::time::timeout(grace, &mut served).await.is_err() {
                        tracing::warn!("drain timeout passed: answering the calls still running with an error");
                        lifecycle.abandon();
                        let _ = tokio::time::timeout(ABANDON_WRITE, served).await;
                    }
                }
            }
        }
        None => {
            let _published = admin.open()?;
            let options = StdioOptions {
                max_message_bytes,
                grace,
                max_owed_answers: stdio::MAX_OWED_ANSWERS,
            };
            stdio::serve(
                dispatcher,
                crate::process_stdio::stdin(),
                crate::process_stdio::stdout(),
                options,
                shutdown.clone(),
            )
            .await;
        }
    }
    if let Some(watcher) = watcher {
        watcher.abort();
    }
    host.shutdown().await;
    super::one_off::close_ledger(ledger).await;
    Ok(ExitCode::SUCCESS)
}

/// SIGHUP reads the config file again, as `switchboard reload` does.
async fn reload_on_hangup(host: Host) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangup) = signal(SignalKind::hangup()) else {
        tracing::warn!("cannot install a SIGHUP handler; use `switchboard reload`");
        return;
    };
    while hangup.recv().await.is_some() {
        tracing::info!("SIGHUP: reloading the configuration");
        switchboard::live::watch::reload(&host, switchboard::Surface::Reload).await;
    }
}

/// Where the admin endpoint listens, and what its console reads.
struct AdminSetup<'a> {
    address: SocketAddr,
    /// The bounds on its connections (the front's).
    connections: http::ConnectionLimits,
    /// The admin file to write (`None`: the default place).
    file: Option<&'a Path>,
    /// The config file the gateway runs.
    config: Option<std::path::PathBuf>,
    /// The SQLite ledger the console reads (`None` on PostgreSQL).
    ledger: Option<std::path::PathBuf>,
    /// The ledger on PostgreSQL (`[storage] url`), whose audit the console reads.
    postgres: Option<switchboard_ledger::postgres::Pool>,
    token_file: Option<std::path::PathBuf>,
    /// The tokens on PostgreSQL (`[storage] url`), made and revoked there by the console.
    shared_tokens: Option<Arc<switchboard::tokens::SharedTokens>>,
    /// `[telemetry] trace_url`, for the console's links to traces.
    trace_url: Option<String>,
}

/// Binds the admin endpoint (with the console); [`AdminReady::open`] serves it.
async fn start_admin(
    host: &Host,
    setup: AdminSetup<'_>,
    shutdown: CancellationToken,
) -> anyhow::Result<AdminReady> {
    let AdminSetup {
        address,
        connections,
        file,
        config,
        ledger,
        postgres,
        token_file,
        shared_tokens,
        trace_url,
    } = setup;
    if !address.ip().is_loopback() {
        bail!(
            "--admin {address}: the admin endpoint listens on loopback only (e.g. 127.0.0.1:7070)"
        );
    }
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address} for the admin endpoint"))?;
    let bound = listener.local_addr()?;
    let token = format!(
        "{:032x}{:032x}",
        rand::random::<u128>(),
        rand::random::<u128>()
    );
    let admin = AdminFile {
        url: format!("http://{bound}"),
        token: token.clone(),
        pid: std::process::id(),
        config: config.and_then(|path| std::fs::canonicalize(path).ok()),
    };
    let path = admin_path(file)?;
    let console = switchboard_console::Console::new(switchboard_console::ConsoleOptions {
        host: host.clone(),
        admin_token: token.clone(),
        ledger,
        postgres,
        token_file,
        shared_tokens,
        listen: bound,
        trace_url,
    });
    let serve = Box::pin(server::serve(
        host.clone(),
        token,
        listener,
        connections,
        console,
        shutdown,
    ));
    Ok(AdminReady::new(admin, path, serve))
}

async fn refuse_collisions(host: &Host) -> anyhow::Result<()> {
    let collisions: Vec<String> = host
        .catalog_problems()
        .iter()
        .filter(|problem| {
            matches!(
                problem,
                CatalogProblem::Collision { .. } | CatalogProblem::Reserved { .. }
            )
        })
        .map(ToString::to_string)
        .collect();
    if collisions.is_empty() {
        return Ok(());
    }
    host.shutdown().await;
    bail!(
        "--no-prefix: tool names collide:\n  {}\n  hint: drop --no-prefix, or rename the tools in the config",
        collisions.join("\n  ")
    )
}

async fn watch_signals(shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut terminate), Ok(mut interrupt)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot install signal handlers; stop the gateway by closing stdin");
        return;
    };
    tokio::select! {
        _ = terminate.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = interrupt.recv() => tracing::info!("SIGINT: shutting down"),
    }
    shutdown.cancel();
}
