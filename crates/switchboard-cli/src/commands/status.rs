//! `switchboard status`: each server's state (for a pool, its instances up of those
//! configured), era, tool count, generation, last change and last error. It asks the running
//! gateway (admin endpoint) when one is running on the same config, and starts a Host of its
//! own only when none is; it says which it shows.

use std::path::Path;
use std::process::ExitCode;

use serde_json::{Value, json};

use crate::admin::client::AdminClient;
use crate::output::{ago, print_json, print_line};

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Print JSON: {source, revision, live, servers: [{server, state, era, protocol_version,
    /// transport, tools, error, failures, notes, generation, changed, draining, in_flight,
    /// instances ({up, configured} for a pool, else null), change_error, sandbox ({limits,
    /// env, filesystem, network, processes, user, no_new_privs} or null)}], problems,
    /// shared_limits ({backend, target, reachable, error, when_unreachable} or null)}.
    #[arg(long)]
    json: bool,
    /// The running gateway's admin file (default $SWITCHBOARD_ADMIN_FILE, else
    /// $XDG_STATE_HOME/switchboard/admin.json).
    #[arg(long, value_name = "FILE")]
    admin_file: Option<std::path::PathBuf>,
    /// Start a Host of its own even when a gateway is running.
    #[arg(long)]
    local: bool,
}

pub async fn run(config: Option<&Path>, args: StatusArgs) -> anyhow::Result<ExitCode> {
    let running = if args.local {
        None
    } else {
        running_gateway(config, args.admin_file.as_deref())
    };
    let status = match running {
        Some(admin) => {
            let mut status = admin.get("/status").await?;
            status["source"] = json!(format!("gateway at {}", admin.url()));
            status
        }
        // Say why this shows a Host of its own: asked to, or no gateway runs the config.
        None if args.local => local_status(config, "local (--local)").await?,
        None => local_status(config, "local (no gateway running on this config)").await?,
    };
    if args.json {
        print_json(&status)?;
    } else {
        print_status(&status)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The admin endpoint of a live gateway serving the config this command would load.
fn running_gateway(config: Option<&Path>, admin_file: Option<&Path>) -> Option<AdminClient> {
    let admin = AdminClient::open(admin_file).ok()?;
    if !admin.alive() {
        return None;
    }
    let ours = super::located_config_file(config).ok()?;
    admin.runs(ours.as_deref()).then_some(admin)
}

/// Starts a Host on the config, waits for first connections, and reports, saying in
/// `source` why the report is local.
async fn local_status(config: Option<&Path>, source: &str) -> anyhow::Result<Value> {
    let host = super::start_host(config, None).await?;
    let live = host.live_status();
    let problems: Vec<String> = host
        .catalog_problems()
        .iter()
        .filter(|p| p.server().is_none())
        .map(ToString::to_string)
        .collect();
    let status = json!({
        "source": source,
        "revision": live.revision,
        "live": live,
        "servers": host.status(),
        "problems": problems,
        "shared_limits": host.shared_limits(),
    });
    host.close().await?;
    Ok(status)
}

/// "shared limits: redis at … reachable" (or unreachable, why, and the policy in force).
fn shared_limits_line(report: &Value) -> Option<String> {
    let backend = report["backend"].as_str()?;
    let target = report["target"].as_str().unwrap_or("-");
    let policy = report["when_unreachable"].as_str().unwrap_or("-");
    Some(if report["reachable"] == true {
        format!("shared limits: {backend} at {target}, reachable")
    } else {
        format!(
            "shared limits: {backend} at {target}, UNREACHABLE ({}); calls {policy}",
            report["error"].as_str().unwrap_or("no answer")
        )
    })
}

/// For a server that is not up because its connection attempts fail: its supervisor keeps
/// retrying (with backoff), so the error is not the last word.
fn retry_note(report: &Value) -> Option<String> {
    if !matches!(report["state"].as_str(), Some("down" | "starting")) {
        return None;
    }
    let error = report["error"].as_str()?;
    match report["failures"].as_u64() {
        Some(0) => None,
        Some(attempt) => Some(format!("    retrying (attempt {attempt} failed: {error})")),
        // A gateway too old to count its attempts.
        None => Some(format!("    retrying (the last attempt failed: {error})")),
    }
}

/// The table `status` and `servers list` print.
pub fn print_status(status: &Value) -> anyhow::Result<()> {
    let text = |value: &Value| value.as_str().unwrap_or("-").to_owned();
    if let Some(source) = status["source"].as_str() {
        print_line(&format!("({source})"))?;
    }
    print_line(&format!(
        "{:20}  {:12}  {:8}  {:15}  {:>5}  {:>3}  {:16}  ERROR",
        "SERVER", "STATE", "ERA", "TRANSPORT", "TOOLS", "GEN", "CHANGED"
    ))?;
    for report in status["servers"].as_array().into_iter().flatten() {
        let changed = match report["changed"]["by"].as_str() {
            Some(by) => format!(
                "{} ago by {by}",
                report["changed"]["at_ms"]
                    .as_u64()
                    .map_or_else(|| "-".to_owned(), ago)
            ),
            None => "-".to_owned(),
        };
        print_line(&format!(
            "{:20}  {:12}  {:8}  {:15}  {:>5}  {:>3}  {:16}  {}",
            text(&report["server"]),
            state_of(report),
            text(&report["era"]),
            text(&report["transport"]),
            report["tools"].to_string(),
            report["generation"].to_string(),
            changed,
            report["error"].as_str().unwrap_or("")
        ))?;
        if let Some(note) = retry_note(report) {
            print_line(&note)?;
        }
        for drain in report["draining"].as_array().into_iter().flatten() {
            print_line(&format!(
                "    draining: {} call(s) on the connection it had before it was {}",
                drain["calls"],
                text(&drain["why"])
            ))?;
        }
        if let Some(line) = sandbox_line(&report["sandbox"]) {
            print_line(&line)?;
        }
        if let Some(error) = report["change_error"].as_str() {
            print_line(&format!("    last change failed: {error}"))?;
        }
        for note in report["notes"].as_array().into_iter().flatten() {
            print_line(&format!("    note: {}", text(note)))?;
        }
    }
    for problem in status["problems"].as_array().into_iter().flatten() {
        print_line(&format!("note: {}", text(problem)))?;
    }
    let live = &status["live"];
    if let Some(file) = live["file"].as_str() {
        let mode = if live["read_only"] == true {
            ", read-only"
        } else {
            ""
        };
        print_line(&format!(
            "config: {file} (revision {}{mode})",
            text(&live["revision"])
        ))?;
    }
    if live["managed"].is_object() {
        print_line(&format!(
            "managed configuration: revision {} (PostgreSQL, [storage] url; laid over the file)",
            live["managed"]["revision"]
        ))?;
        for note in live["managed"]["notes"].as_array().into_iter().flatten() {
            print_line(&format!("  {}", text(note)))?;
        }
    }
    if live["file_error"].is_object() {
        print_line("the config file is invalid; the previous configuration keeps running:")?;
        for problem in live["file_error"]["problems"]
            .as_array()
            .into_iter()
            .flatten()
        {
            print_line(&format!("  {}", text(problem)))?;
        }
    }
    for key in live["needs_restart"].as_array().into_iter().flatten() {
        print_line(&format!("needs a restart of the gateway: {}", text(key)))?;
    }
    if let Some(line) = shared_limits_line(&status["shared_limits"]) {
        print_line(&line)?;
    }
    Ok(())
}

/// A sandboxed server's protections in one line: "sandbox: limits memory 1073741824, files
/// 256; env filtered; fs enforced; network not enforced (…); processes binds".
fn sandbox_line(sandbox: &Value) -> Option<String> {
    let text = |key: &str| sandbox[key].as_str().unwrap_or("-").to_owned();
    sandbox.as_object()?;
    let limits: Vec<&str> = sandbox["limits"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let limits = if limits.is_empty() {
        "none".to_owned()
    } else {
        limits.join(", ")
    };
    let user = sandbox["user"]
        .as_str()
        .map(|user| format!("; user {user}"))
        .unwrap_or_default();
    Some(format!(
        "    sandbox: limits {limits}; env {}; fs {}; network {}; processes {}{user}; no_new_privs",
        text("env"),
        text("filesystem"),
        text("network"),
        text("processes"),
    ))
}

/// A server's state, with its instances up of those configured for a pool: "up 2/3".
fn state_of(report: &Value) -> String {
    let state = report["state"].as_str().unwrap_or("-");
    let instances = &report["instances"];
    match (instances["up"].as_u64(), instances["configured"].as_u64()) {
        (Some(up), Some(configured)) => format!("{state} {up}/{configured}"),
        _ => state.to_owned(),
    }
}
