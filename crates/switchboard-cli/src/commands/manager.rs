//! `switchboard search-servers` and `install` (and, in [`operations`], `switchboard
//! operations`): the operator's side of the server manager. Where a gateway runs the config
//! they go through its admin endpoint, so the gateway does the work and serves the result at
//! once; where none does, `search-servers` and `install` run the manager in this process (a
//! Host of its own, shut down at the end), and an install writes the config file.
//!
//! Code map: [`target`] (the gateway or a Host of this process), `install`, `follow`
//! (following an operation to its end), [`operations`].

mod follow;
mod install;
pub mod operations;
pub(crate) mod target;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::bail;
use serde_json::Value;
use switchboard::manager::{Operation, State};
use switchboard_core::config::Config;

pub use install::{InstallArgs, install};
pub(crate) use target::{Target, Use};

use crate::output::{print_json, print_line};

/// The operations database a gateway on `config` keeps: `operations.db` beside the ledger,
/// unless `[manager] database` names one (`None` then: the Host takes the config's).
pub fn database_path(config: &Config) -> Option<PathBuf> {
    if config.manager.database.is_some() {
        return None;
    }
    let ledger = super::audit::ledger_path(config, None).ok()?;
    Some(ledger.with_file_name("operations.db"))
}

/// Writes a line to stderr (never panics when stderr is gone).
pub(crate) fn say(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{text}");
}

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// Words to look for in servers' names, titles and descriptions (empty: all).
    #[arg(default_value = "")]
    query: String,
    /// The most servers to show (1–100).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=100))]
    limit: u16,
    /// Print JSON: {query, servers: [{name, title, description, version, source, install,
    /// inputs: [{name, required, secret}]}]}.
    #[arg(long)]
    json: bool,
    /// The running gateway's admin file (default $SWITCHBOARD_ADMIN_FILE, else
    /// $XDG_STATE_HOME/switchboard/admin.json).
    #[arg(long, value_name = "FILE")]
    admin_file: Option<PathBuf>,
}

pub async fn search(config: Option<&Path>, args: SearchArgs) -> anyhow::Result<ExitCode> {
    let target = Target::open(config, args.admin_file.as_deref(), Use::Read, None).await?;
    if target.is_local() {
        say("note: no gateway runs this config: searching from this command");
    }
    let searched = target.search(&args.query, usize::from(args.limit)).await;
    target.close().await;
    let result = searched_result(&searched?)?;
    if args.json {
        print_json(&result)?;
        return Ok(ExitCode::SUCCESS);
    }
    let servers = result["servers"].as_array().cloned().unwrap_or_default();
    if servers.is_empty() {
        print_line(&format!("no server matches '{}'", args.query))?;
        return Ok(ExitCode::SUCCESS);
    }
    let text = |value: &Value| value.as_str().unwrap_or("-").to_owned();
    let width = servers
        .iter()
        .map(|s| text(&s["name"]).chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 48);
    print_line(&format!(
        "{:width$}  {:10}  {:40}  INSTALLING RUNS",
        "NAME", "VERSION", "DESCRIPTION"
    ))?;
    for server in &servers {
        print_line(&format!(
            "{:width$}  {:10}  {:40}  {}",
            text(&server["name"]),
            text(&server["version"]),
            truncate(server["description"].as_str().unwrap_or(""), 40),
            text(&server["install"]),
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A finished search's `{query, servers}`, or why there is none.
fn searched_result(operation: &Operation) -> anyhow::Result<Value> {
    match operation.state {
        State::Completed => Ok(operation.result.clone().unwrap_or(Value::Null)),
        State::Failed | State::Cancelled => bail!(
            "the search failed: {}",
            operation.error.as_deref().unwrap_or("no reason given")
        ),
        State::Queued | State::InProgress => bail!(
            "the search {} is still running after 60 s (switchboard operations show {})",
            operation.id,
            operation.id
        ),
    }
}

/// `text` cut to `max` characters, with an ellipsis when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= max && !text.contains('\n') {
        return line.to_owned();
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// `NAME=VALUE` pairs.
pub(crate) fn parse_pairs(
    pairs: &[String],
    what: &str,
) -> anyhow::Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() => {
                Ok((name.trim().to_owned(), value.to_owned()))
            }
            // Never the pair itself in the message: it may hold a secret.
            _ => bail!("{what}: write NAME=VALUE"),
        })
        .collect()
}

/// The registry's entry named exactly `name`, if a search finds it.
async fn lookup(target: &Target, name: &str) -> anyhow::Result<Option<Value>> {
    let operation = target.search(name, 100).await?;
    let result = searched_result(&operation)?;
    Ok(result["servers"]
        .as_array()
        .and_then(|servers| servers.iter().find(|s| s["name"] == name))
        .cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_never_quote_a_value_in_errors() {
        let error = parse_pairs(&["s3cret".into()], "--env").expect_err("no =");
        assert!(!error.to_string().contains("s3cret"));
        let pairs = parse_pairs(&["A=b=c".into()], "--env").expect("pair");
        assert_eq!(pairs["A"], "b=c");
    }

    #[test]
    fn descriptions_are_cut_to_one_short_line() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("a longer description", 10), "a longer …");
        assert_eq!(truncate("two\nlines", 10), "two…");
    }
}
