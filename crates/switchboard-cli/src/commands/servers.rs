//! `switchboard servers list|show|add|remove|enable|disable|restart|test` and
//! `switchboard reload`: change the servers of the running gateway (through its admin
//! endpoint, which runs the library's one change operation) or, with `--offline`, of the
//! config file alone. Every command takes `--json`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use switchboard::live::apply_offline;
use switchboard::{Change, ChangeReport};
use switchboard_core::config::Config;
use switchboard_core::config::edit::{EntrySandbox, EntryTls, EntryTransport, ServerEntry};

use crate::admin::client::{AdminClient, encode};
use crate::output::{print_json, print_line};
use crate::usage::usage;

mod show;

#[derive(Debug, clap::Args)]
pub struct ServersArgs {
    #[command(subcommand)]
    command: ServersCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ServersCommand {
    /// Every server: state, era, tools, generation, last change.
    List(Common),
    /// One server: its report and its entry (secret values redacted).
    Show(One),
    /// Add a server: `add NAME -- COMMAND ARGS...`, `add NAME --url URL`, or
    /// `add NAME --builtin dice`.
    Add(AddArgs),
    /// Remove a server; its calls in flight finish first (up to gateway.drain_timeout).
    Remove(One),
    /// Start a disabled server.
    Enable(One),
    /// Stop a server but keep its entry (enabled = false).
    Disable(One),
    /// Replace a server's connection by a new one (its calls in flight drain).
    Restart(One),
    /// Connect a copy of a server (as configured, or as given), list its tools and judge it;
    /// adds nothing.
    Test(TestArgs),
}

#[derive(Debug, clap::Args)]
struct Common {
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Work on the config file alone, without a running gateway.
    #[arg(long)]
    offline: bool,
    /// The running gateway's admin file (default $SWITCHBOARD_ADMIN_FILE, else
    /// $XDG_STATE_HOME/switchboard/admin.json).
    #[arg(long, value_name = "FILE")]
    admin_file: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct Guard {
    /// Print the diff of the config file that would be written; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Refuse (conflict) unless the configuration is still at this revision
    /// (`servers list --json` shows it).
    #[arg(long, value_name = "REV")]
    revision: Option<String>,
}

#[derive(Debug, clap::Args)]
struct One {
    /// The server's id.
    name: String,
    #[command(flatten)]
    guard: Guard,
    #[command(flatten)]
    common: Common,
}

/// How a server is reached, from the command line.
#[derive(Debug, clap::Args)]
struct EntryArgs {
    /// An HTTP server's URL (Streamable HTTP unless --transport sse).
    #[arg(long, value_name = "URL", conflicts_with_all = ["builtin"])]
    url: Option<String>,
    /// A header for an HTTP server, KEY=VALUE (repeatable). Write a secret as a reference the
    /// gateway resolves from its environment: 'Authorization=Bearer ${TOKEN}'.
    #[arg(long = "header", value_name = "KEY=VALUE", requires = "url")]
    headers: Vec<String>,
    /// The HTTP transport: streamable-http (default) or sse.
    #[arg(long, value_name = "TRANSPORT", requires = "url")]
    transport: Option<String>,
    /// An https:// server's CA certificate (PEM), trusted besides the public CAs: a server
    /// behind a private CA. Written as the entry's tls.ca; a relative path is made absolute
    /// here.
    #[arg(long, value_name = "FILE", requires = "url")]
    tls_ca: Option<PathBuf>,
    /// The gateway's client certificate (PEM) for an https:// server that asks for one
    /// (mutual TLS); goes with --tls-key.
    #[arg(long, value_name = "FILE", requires_all = ["url", "tls_key"])]
    tls_cert: Option<PathBuf>,
    /// That certificate's private key (PEM), readable by its owner alone (chmod 600).
    #[arg(long, value_name = "FILE", requires_all = ["url", "tls_cert"])]
    tls_key: Option<PathBuf>,
    /// Hold every connection to the HTTP server to public internet addresses, checked as
    /// each is made (public_only = true).
    #[arg(long, requires = "url")]
    public_only: bool,
    /// A built-in tool server: clock, dice, files, memory, rules, sessions, music, web,
    /// images or manager (with default settings; web needs a backend set in the file).
    #[arg(long, value_name = "NAME")]
    builtin: Option<String>,
    /// An environment variable of a stdio server, KEY=VALUE (repeatable); KEY alone writes
    /// the reference ${KEY}, resolved from the gateway's environment, so a secret never
    /// lands in the file.
    #[arg(long = "env", value_name = "KEY[=VALUE]")]
    env: Vec<String>,
    /// The working directory of a stdio server.
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
    /// The stdio server's command and arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

#[derive(Debug, clap::Args)]
struct AddArgs {
    /// The new server's id (also its tools' default prefix).
    name: String,
    #[command(flatten)]
    entry: EntryArgs,
    /// Write it disabled (enabled = false): configured, not started.
    #[arg(long)]
    disabled: bool,
    #[command(flatten)]
    sandbox: SandboxArgs,
    #[command(flatten)]
    guard: Guard,
    #[command(flatten)]
    common: Common,
}

/// A new stdio server's sandbox (docs/sandbox.md). None of these: the gateway's default.
#[derive(Debug, clap::Args)]
struct SandboxArgs {
    /// Run it in the gateway's default sandbox ([gateway.sandbox]; sandbox = true).
    #[arg(long, conflicts_with = "no_sandbox")]
    sandbox: bool,
    /// Run it without a sandbox (sandbox = false), whatever the gateway's default.
    #[arg(long)]
    no_sandbox: bool,
    /// A directory it may write (Landlock; repeatable): only these are writable.
    #[arg(long, value_name = "DIR", conflicts_with = "no_sandbox")]
    writable: Vec<String>,
    /// A directory it may read besides the system's (Landlock; repeatable).
    #[arg(long, value_name = "DIR", conflicts_with = "no_sandbox")]
    readable: Vec<String>,
    /// Its network: none, loopback or any.
    #[arg(long, value_name = "MODE", conflicts_with = "no_sandbox")]
    network: Option<String>,
    /// Its address space, e.g. 1GiB (RLIMIT_AS).
    #[arg(long, value_name = "SIZE", conflicts_with = "no_sandbox")]
    memory: Option<String>,
    /// Its CPU time, e.g. 10m (RLIMIT_CPU).
    #[arg(long, value_name = "TIME", conflicts_with = "no_sandbox")]
    cpu: Option<String>,
    /// The unprivileged user it runs as (when the gateway runs as root).
    #[arg(long, value_name = "NAME", conflicts_with = "no_sandbox")]
    user: Option<String>,
}

impl SandboxArgs {
    /// The entry's `sandbox`, if any flag asks for one.
    fn entry(&self) -> Option<EntrySandbox> {
        let sandbox = EntrySandbox {
            off: self.no_sandbox,
            memory: self.memory.clone(),
            cpu: self.cpu.clone(),
            user: self.user.clone(),
            network: self.network.clone(),
            readable: self.readable.clone(),
            writable: self.writable.clone(),
            ..EntrySandbox::default()
        };
        (self.sandbox || sandbox != EntrySandbox::default()).then_some(sandbox)
    }
}

#[derive(Debug, clap::Args)]
struct TestArgs {
    /// The server's id: the configured server, unless an entry is given.
    name: String,
    #[command(flatten)]
    entry: EntryArgs,
    #[command(flatten)]
    common: Common,
}

/// `switchboard reload`.
#[derive(Debug, clap::Args)]
pub struct ReloadArgs {
    #[arg(long)]
    json: bool,
    /// The running gateway's admin file.
    #[arg(long, value_name = "FILE")]
    admin_file: Option<PathBuf>,
}

pub async fn run(config: Option<&Path>, args: ServersArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        ServersCommand::List(common) => list(config, &common).await,
        ServersCommand::Show(one) => show::show(config, &one).await,
        ServersCommand::Add(add) => {
            let entry = entry_of(&add.entry)?.ok_or_else(|| {
                usage(
                    "say how to reach the server: `-- COMMAND ARGS...`, --url URL or --builtin NAME",
                )
            })?;
            let sandbox = add.sandbox.entry();
            if sandbox.is_some() && !matches!(entry.transport, EntryTransport::Stdio { .. }) {
                return Err(usage(
                    "the sandbox flags go with a stdio server's `-- COMMAND ARGS...`",
                ));
            }
            let entry = ServerEntry {
                enabled: add.disabled.then_some(false),
                sandbox: sandbox.map(Box::new),
                ..entry
            };
            let change = Change::Add {
                server: add.name.clone(),
                entry,
            };
            change_servers(config, change, &add.guard, &add.common).await
        }
        ServersCommand::Remove(one) => {
            let change = Change::Remove { server: one.name };
            change_servers(config, change, &one.guard, &one.common).await
        }
        ServersCommand::Enable(one) => {
            let change = Change::Enable { server: one.name };
            change_servers(config, change, &one.guard, &one.common).await
        }
        ServersCommand::Disable(one) => {
            let change = Change::Disable { server: one.name };
            change_servers(config, change, &one.guard, &one.common).await
        }
        ServersCommand::Restart(one) => {
            let change = Change::Restart { server: one.name };
            change_servers(config, change, &one.guard, &one.common).await
        }
        ServersCommand::Test(test) => test_server(config, &test).await,
    }
}

pub async fn reload(config: Option<&Path>, args: ReloadArgs) -> anyhow::Result<ExitCode> {
    let admin = AdminClient::for_config(args.admin_file.as_deref(), config)?;
    let answer = admin.post("/reload", json!({})).await?;
    let report: ChangeReport = serde_json::from_value(answer.clone())?;
    if args.json {
        print_json(&answer)?;
    } else {
        print_report(&report)?;
    }
    Ok(exit_code(&report))
}

/// Failure when a server's change did not take (it keeps its previous settings): a script's
/// `reload && …` must be able to tell.
fn exit_code(report: &ChangeReport) -> ExitCode {
    if report.servers.iter().any(|server| !server.applied) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The entry the flags describe, if they describe one.
fn entry_of(args: &EntryArgs) -> anyhow::Result<Option<ServerEntry>> {
    let given = [
        !args.command.is_empty(),
        args.url.is_some(),
        args.builtin.is_some(),
    ]
    .iter()
    .filter(|given| **given)
    .count();
    if given > 1 {
        bail!("give one of `-- COMMAND ARGS...`, --url URL and --builtin NAME");
    }
    if (!args.env.is_empty() || args.cwd.is_some()) && args.command.is_empty() {
        bail!("--env and --cwd go with a stdio server's `-- COMMAND ARGS...`");
    }
    let transport = if let Some((command, rest)) = args.command.split_first() {
        EntryTransport::Stdio {
            command: command.clone(),
            args: rest.to_vec(),
            env: args
                .env
                .iter()
                .map(|pair| match pair.split_once('=') {
                    Some((key, value)) => (key.to_owned(), value.to_owned()),
                    None => (pair.clone(), format!("${{{pair}}}")),
                })
                .collect(),
            cwd: args.cwd.clone(),
        }
    } else if let Some(url) = &args.url {
        let headers = args
            .headers
            .iter()
            .map(|pair| {
                pair.split_once('=')
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .with_context(|| format!("--header {pair}: write KEY=VALUE"))
            })
            .collect::<anyhow::Result<_>>()?;
        let tls = tls_of(args)?;
        match args.transport.as_deref() {
            None | Some("streamable-http" | "http") => EntryTransport::Http {
                url: url.clone(),
                headers,
                tls,
                public_only: args.public_only,
            },
            Some("sse") => EntryTransport::Sse {
                url: url.clone(),
                headers,
                tls,
                public_only: args.public_only,
            },
            Some(other) => bail!("--transport {other}: use streamable-http or sse"),
        }
    } else if let Some(name) = &args.builtin {
        EntryTransport::Builtin { name: name.clone() }
    } else {
        return Ok(None);
    };
    Ok(Some(ServerEntry {
        transport,
        enabled: None,
        trust: None,
        sandbox: None,
    }))
}

/// The entry's `tls`, if a --tls-* flag gives a file: each path absolute (the gateway reads
/// a relative one against its config file's directory, not this command's), except one
/// holding a `${VAR}` reference, written as given for the gateway to resolve.
fn tls_of(args: &EntryArgs) -> anyhow::Result<Option<EntryTls>> {
    let absolute = |path: &Option<PathBuf>, flag: &str| -> anyhow::Result<Option<String>> {
        let Some(path) = path else {
            return Ok(None);
        };
        if let Some(text) = path.to_str().filter(|text| text.contains("${")) {
            return Ok(Some(text.to_owned()));
        }
        let path = std::path::absolute(path)
            .with_context(|| format!("{flag} {}: cannot make it absolute", path.display()))?;
        let text = path
            .to_str()
            .with_context(|| format!("{flag} {}: the path is not UTF-8", path.display()))?;
        Ok(Some(text.to_owned()))
    };
    let tls = EntryTls {
        ca: absolute(&args.tls_ca, "--tls-ca")?,
        cert: absolute(&args.tls_cert, "--tls-cert")?,
        key: absolute(&args.tls_key, "--tls-key")?,
    };
    Ok((tls != EntryTls::default()).then_some(tls))
}

async fn change_servers(
    config: Option<&Path>,
    change: Change,
    guard: &Guard,
    common: &Common,
) -> anyhow::Result<ExitCode> {
    let report = if common.offline {
        let path = config_file(config)?;
        apply_offline(&path, &change, guard.dry_run, 3, guard.revision.as_deref())?
    } else {
        let admin = gateway(config, common)?;
        let mut body = serde_json::to_value(&change)?;
        body["dry_run"] = json!(guard.dry_run);
        body["surface"] = json!("cli");
        body["actor"] = json!(std::env::var("USER").ok());
        if let Some(revision) = &guard.revision {
            body["base_revision"] = json!(revision);
        }
        serde_json::from_value(admin.post("/changes", body).await?)?
    };
    if common.json {
        print_json(&report)?;
    } else {
        print_report(&report)?;
    }
    Ok(exit_code(&report))
}

fn print_report(report: &ChangeReport) -> anyhow::Result<()> {
    if report.dry_run {
        if report.diff.is_empty() {
            print_line("dry run: the config file would not change")?;
        } else {
            print_line(report.diff.trim_end())?;
        }
        return Ok(());
    }
    for server in &report.servers {
        let mut line = format!("{} {}", server.action.as_str(), server.server);
        if !server.applied {
            line = format!("{line}: not applied, the previous settings keep running");
        }
        if server.applied {
            line.push_str(&format!(": {}", server.state));
            if server.state == "up" {
                line.push_str(&format!(", {} tools", server.tools));
            }
            if let Some(ms) = server.connect_ms {
                line.push_str(&format!(", connected in {ms:.0} ms"));
            }
        }
        if let Some(error) = &server.error {
            line.push_str(&format!(" ({error})"));
        }
        print_line(&line)?;
    }
    if report.servers.is_empty() {
        print_line("no server changed")?;
    }
    for key in &report.needs_restart {
        print_line(&format!("needs a restart of the gateway: {key}"))?;
    }
    if let Some(file) = &report.file {
        let created = if report.created_file {
            " (created)"
        } else {
            ""
        };
        print_line(&format!(
            "config: {}{created}, revision {}",
            file.display(),
            report.revision
        ))?;
    }
    Ok(())
}

async fn list(config: Option<&Path>, common: &Common) -> anyhow::Result<ExitCode> {
    if common.offline {
        let (path, loaded) = offline_config(config)?;
        let servers: Vec<Value> = loaded
            .servers
            .iter()
            .map(switchboard::live::redacted_entry)
            .collect();
        if common.json {
            print_json(&json!({"file": path, "servers": servers}))?;
        } else {
            for server in &loaded.servers {
                let enabled = if server.enabled { "" } else { "  (disabled)" };
                print_line(&format!("{}{enabled}", server.id))?;
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let admin = gateway(config, common)?;
    let status = admin.get("/status").await?;
    if common.json {
        print_json(&status)?;
    } else {
        super::status::print_status(&status)?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn test_server(config: Option<&Path>, test: &TestArgs) -> anyhow::Result<ExitCode> {
    let entry = entry_of(&test.entry)?;
    let report = if test.common.offline {
        let (_, loaded) = offline_config(config)?;
        let report = switchboard::live::test_server(
            &loaded,
            &test.name,
            entry.as_ref(),
            switchboard_render::tokens::count,
            std::env::current_exe().ok().as_deref(),
        )
        .await?;
        serde_json::to_value(report)?
    } else {
        let admin = gateway(config, &test.common)?;
        admin
            .post(
                &format!("/servers/{}/test", encode(&test.name)),
                json!({"entry": entry}),
            )
            .await?
    };
    let passed = report["verdict"] != "failed";
    if test.common.json {
        print_json(&report)?;
    } else {
        print_line(&format!(
            "{}: {} — {} over {}, {} tools, {} listing tokens, {:.0} ms{}",
            test.name,
            report["verdict"].as_str().unwrap_or("?"),
            report["era"].as_str().unwrap_or("no era"),
            report["transport"].as_str().unwrap_or("?"),
            report["tools"],
            report["listing_tokens"],
            report["connect_ms"].as_f64().unwrap_or(0.0),
            report["error"]
                .as_str()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        ))?;
    }
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The running gateway's admin endpoint, checked against the config this command names.
fn gateway(config: Option<&Path>, common: &Common) -> anyhow::Result<AdminClient> {
    AdminClient::for_config(common.admin_file.as_deref(), config)
        .map_err(|error| anyhow::anyhow!("{error:#}; or --offline to change the file alone"))
}

/// The config file an offline command works on, and what it says.
fn offline_config(explicit: Option<&Path>) -> anyhow::Result<(PathBuf, Config)> {
    let path = config_file(explicit)?;
    let config = super::load_config(Some(&path))?;
    Ok((path, config))
}

/// The config file an offline command works on.
fn config_file(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    super::located_config_file(explicit)?
        .context("--offline needs a config file: none was found (pass --config FILE)")
}
