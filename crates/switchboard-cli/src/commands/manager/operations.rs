//! `switchboard operations list|show|cancel|input`: the server manager's operations. On the
//! gateway that runs the config (through its admin endpoint); without one, `list` and `show`
//! read the operations database through a Host of this process, and `cancel` and `input`
//! are refused (an operation lives only as long as the process that runs it).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::json;
use switchboard::manager::{Operation, State, Waiting, Work};

use super::{Target, Use, parse_pairs, say, truncate};
use crate::output::{ago, print_json, print_line};

#[derive(Debug, clap::Args)]
pub struct OperationsArgs {
    #[command(subcommand)]
    command: Action,
    /// The running gateway's admin file (default $SWITCHBOARD_ADMIN_FILE, else
    /// $XDG_STATE_HOME/switchboard/admin.json).
    #[arg(long, global = true, value_name = "FILE")]
    admin_file: Option<PathBuf>,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// The newest operations first: id, kind, server, state, progress, energy, message.
    List {
        /// Only those in this state: queued, in_progress, completed, failed or cancelled.
        #[arg(long, value_parser = parse_state)]
        state: Option<State>,
        /// The most to show.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print JSON: {"operations": [...]}.
        #[arg(long)]
        json: bool,
    },
    /// One operation: its steps with their times, what it waits for, its result or error.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Cancel an operation: a queued one at once, a running one at its next step (an install
    /// undoes what it did).
    Cancel {
        id: String,
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Give an operation that waits for input its values: NAME=VALUE ... Secret values go to
    /// the gateway's secrets file only.
    Input {
        id: String,
        /// NAME=VALUE pairs.
        #[arg(value_name = "NAME=VALUE")]
        values: Vec<String>,
        /// Read NAME=VALUE lines from stdin as well (keeps secrets out of shell history and
        /// the process list).
        #[arg(long)]
        from_stdin: bool,
        #[arg(long)]
        json: bool,
    },
}

fn parse_state(text: &str) -> Result<State, String> {
    State::parse(text).ok_or_else(|| {
        format!("unknown state '{text}' (queued, in_progress, completed, failed, cancelled)")
    })
}

pub async fn run(config: Option<&Path>, args: OperationsArgs) -> anyhow::Result<ExitCode> {
    let refusal = match &args.command {
        Action::List { .. } | Action::Show { .. } => None,
        Action::Cancel { .. } | Action::Input { .. } => Some(
            "no gateway runs this config, and only a running gateway's operations can be cancelled or given input",
        ),
    };
    // Values are read before anything starts, so a bad line changes nothing.
    let values = match &args.command {
        Action::Input {
            values, from_stdin, ..
        } => Some(input_values(values, *from_stdin)?),
        _ => None,
    };
    let target = Target::open(config, args.admin_file.as_deref(), Use::Read, refusal).await?;
    if target.is_local() {
        say("note: no gateway runs this config: reading the operations database");
    }
    let outcome = match args.command {
        Action::List { state, limit, json } => list(&target, state, limit, json).await,
        Action::Show { id, json } => show(&target, &id, json).await,
        Action::Cancel { id, reason, json } => cancel(&target, &id, reason.as_deref(), json).await,
        Action::Input { id, json, .. } => {
            give(&target, &id, &values.unwrap_or_default(), json).await
        }
    };
    target.close().await;
    outcome
}

/// The values of `operations input`: the arguments', then stdin's lines (blank lines and
/// `#` comments skipped).
fn input_values(
    pairs: &[String],
    from_stdin: bool,
) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
    let mut all = pairs.to_vec();
    if from_stdin {
        for line in std::io::stdin().lock().lines() {
            let line = line.context("cannot read stdin")?;
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            all.push(line.to_owned());
        }
    }
    if all.is_empty() {
        bail!("give NAME=VALUE pairs (or --from-stdin, then NAME=VALUE lines)");
    }
    parse_pairs(&all, "operations input")
}

/// What an operation is about: its server, or a search's query.
fn about(operation: &Operation) -> String {
    match &operation.request.work {
        Work::Search { query, .. } => format!("'{query}'"),
        work => work.server().unwrap_or("-").to_owned(),
    }
}

async fn list(
    target: &Target,
    state: Option<State>,
    limit: usize,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let operations = target.list(state, limit.max(1)).await?;
    if json {
        print_json(&json!({"operations": operations}))?;
        return Ok(ExitCode::SUCCESS);
    }
    if operations.is_empty() {
        print_line("no operations")?;
        return Ok(ExitCode::SUCCESS);
    }
    print_line(&format!(
        "{:26}  {:7}  {:20}  {:11}  {:>4}  {:>7}  {:>5}  MESSAGE",
        "ID", "KIND", "ABOUT", "STATE", "DONE", "ENERGY", "AGE"
    ))?;
    for operation in &operations {
        print_line(&format!(
            "{:26}  {:7}  {:20}  {:11}  {:>3}%  {:>7.1}  {:>5}  {}",
            operation.id,
            operation.kind,
            truncate(&about(operation), 20),
            operation.state.as_str(),
            operation.progress,
            operation.energy,
            ago(operation.created_ms),
            truncate(operation.error.as_deref().unwrap_or(&operation.message), 60),
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn show(target: &Target, id: &str, json: bool) -> anyhow::Result<ExitCode> {
    let operation = target.status(id).await?;
    if json {
        print_json(&operation)?;
        return Ok(ExitCode::SUCCESS);
    }
    let request = &operation.request;
    print_line(&format!(
        "{} {} {}: {} ({}%)",
        operation.id,
        operation.kind,
        about(&operation),
        operation.state.as_str(),
        operation.progress
    ))?;
    let by = serde_json::to_value(request.by)?;
    let priority = serde_json::to_value(request.priority)?;
    print_line(&format!(
        "asked by {}{}, priority {}, queued {} ago; energy {:.1}",
        by.as_str().unwrap_or("?"),
        request
            .agent
            .as_deref()
            .map(|a| format!(" (agent {a})"))
            .unwrap_or_default(),
        priority.as_str().unwrap_or("?"),
        ago(operation.created_ms),
        operation.energy
    ))?;
    if let Some(purpose) = &request.purpose {
        print_line(&format!("purpose: {purpose}"))?;
    }
    print_line("steps:")?;
    for step in &operation.steps {
        let offset = step.at_ms.saturating_sub(operation.created_ms);
        print_line(&format!(
            "  +{:>4}.{:03}s  {:>3}%  {}",
            offset / 1000,
            offset % 1000,
            step.progress,
            step.message
        ))?;
    }
    match &operation.waiting {
        Some(Waiting::Input { names }) => print_line(&format!(
            "waiting for input: {} (switchboard operations input {} NAME=VALUE, or --from-stdin)",
            names.join(", "),
            operation.id
        ))?,
        Some(Waiting::Approval { id: approval }) => print_line(&format!(
            "waiting for approval: switchboard approvals approve {approval}"
        ))?,
        None => {}
    }
    if let Some(result) = &operation.result {
        print_line("result:")?;
        for line in serde_json::to_string_pretty(result)?.lines() {
            print_line(&format!("  {line}"))?;
        }
    }
    if let Some(error) = &operation.error {
        print_line(&format!("error: {error}"))?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn cancel(
    target: &Target,
    id: &str,
    reason: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut operation = target.cancel(id, reason).await?;
    if !operation.state.is_final() {
        // A running one stops at its next step, undoing what it did.
        operation = target.wait(id, Duration::from_secs(30)).await?;
    }
    if json {
        print_json(&operation)?;
    } else if operation.state.is_final() {
        print_line(&format!(
            "{id}: {}",
            operation
                .error
                .as_deref()
                .unwrap_or(operation.state.as_str())
        ))?;
    } else {
        print_line(&format!(
            "{id}: cancelling; it stops at its next step (switchboard operations show {id})"
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn give(
    target: &Target,
    id: &str,
    values: &std::collections::BTreeMap<String, String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let given = target.input(id, values).await?;
    // What it made of them: its next step (refused, or on its way).
    let operation = target
        .next(id, given.steps.len(), Duration::from_secs(10))
        .await?;
    let names: Vec<&str> = values.keys().map(String::as_str).collect();
    let refused = operation
        .steps
        .get(given.steps.len()..)
        .unwrap_or_default()
        .iter()
        .find(|step| step.message.starts_with("input refused"));
    if json {
        print_json(&operation)?;
    } else {
        print_line(&format!("gave {id}: {}", names.join(", ")))?;
        if let Some(step) = refused {
            print_line(&step.message)?;
        } else {
            print_line(&format!(
                "{id}: {} ({}%) {}",
                operation.state.as_str(),
                operation.progress,
                operation.message
            ))?;
        }
    }
    Ok(if refused.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
