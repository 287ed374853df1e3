//! `switchboard install NAME[@VERSION]`: queue the operator's install and follow it to its
//! end (or `--detach`), `--dry-run` to look first.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::Value;
use switchboard::manager::{Activation, Priority, Request, Requester, State, Work};

use super::{Target, Use, follow, lookup, parse_pairs, say};
use crate::output::{print_json, print_line};

/// `--priority`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum PriorityArg {
    Low,
    Medium,
    High,
}

impl From<PriorityArg> for Priority {
    fn from(arg: PriorityArg) -> Self {
        match arg {
            PriorityArg::Low => Self::Low,
            PriorityArg::Medium => Self::Medium,
            PriorityArg::High => Self::High,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The server's registry name, optionally with an exact version
    /// (io.github.owner/server@1.2.0; default: the latest).
    #[arg(value_name = "NAME[@VERSION]")]
    name: String,
    /// The id to add it as (default: the last part of its name).
    #[arg(long = "as", value_name = "SERVER")]
    server: Option<String>,
    /// A value for one of the server's inputs (repeatable). Secret ones are handed to the
    /// gateway's secrets file only; to keep a secret out of your shell history, leave it out
    /// and answer `switchboard operations input ID --from-stdin` when asked.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// Look the server up and print what would be installed and run; install nothing.
    #[arg(long)]
    dry_run: bool,
    /// Add it disabled (enable it later with `switchboard servers enable SERVER`).
    #[arg(long)]
    no_activate: bool,
    /// Print the final operation as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Where it goes in the manager's queue.
    #[arg(long, value_enum, default_value = "high")]
    priority: PriorityArg,
    /// Queue it on the running gateway, print its id and return (follow it with
    /// `switchboard operations show ID`).
    #[arg(long)]
    detach: bool,
    /// The running gateway's admin file (default $SWITCHBOARD_ADMIN_FILE, else
    /// $XDG_STATE_HOME/switchboard/admin.json).
    #[arg(long, value_name = "FILE")]
    admin_file: Option<PathBuf>,
}

/// `NAME@VERSION` → (name, version).
fn split_version(text: &str) -> (String, Option<String>) {
    match text.rsplit_once('@') {
        Some((name, version)) if !name.is_empty() && !version.is_empty() => {
            (name.to_owned(), Some(version.to_owned()))
        }
        _ => (text.to_owned(), None),
    }
}

pub async fn install(config: Option<&Path>, args: InstallArgs) -> anyhow::Result<ExitCode> {
    let env = parse_pairs(&args.env, "--env")?;
    let purpose = if args.dry_run { Use::Read } else { Use::Change };
    let refusal = (args.detach && !args.dry_run).then_some(
        "--detach needs a running gateway (without one, the install runs in this command)",
    );
    let target = Target::open(config, args.admin_file.as_deref(), purpose, refusal).await?;
    let outcome = install_on(config, &target, &args, env).await;
    target.close().await;
    outcome
}

async fn install_on(
    config: Option<&Path>,
    target: &Target,
    args: &InstallArgs,
    env: BTreeMap<String, String>,
) -> anyhow::Result<ExitCode> {
    let (name, version) = split_version(&args.name);
    if args.dry_run {
        return dry_run(config, target, args, &name, version.as_deref()).await;
    }
    // Values of inputs known not to be secret travel with the request; the others are given
    // once the operation asks for them, so a secret never lands in the operation's record.
    let mut values = BTreeMap::new();
    let mut held = env;
    if !held.is_empty()
        && let Some(listing) = lookup(target, &name).await?
    {
        let inputs = listing["inputs"].as_array().cloned().unwrap_or_default();
        for given in held.keys() {
            if !inputs.iter().any(|i| i["name"] == given.as_str()) {
                let known: Vec<&str> = inputs.iter().filter_map(|i| i["name"].as_str()).collect();
                bail!(
                    "--env {given}: {name} takes no such input (its inputs: {})",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                );
            }
        }
        for input in &inputs {
            if input["secret"] == false
                && let Some(key) = input["name"].as_str()
                && let Some(value) = held.remove(key)
            {
                values.insert(key.to_owned(), value);
            }
        }
    }
    let activation = if args.no_activate {
        Activation::Never
    } else {
        Activation::Now
    };
    let request = Request {
        work: Work::Install {
            name: name.clone(),
            version,
            server: args.server.clone(),
            values,
            activation,
        },
        priority: args.priority.into(),
        agent: None,
        purpose: None,
        by: Requester::Operator,
    };
    let id = target.queue(request).await?;
    say(&format!("install {id} queued"));
    if args.detach {
        let operation = if held.is_empty() {
            target.status(&id).await?
        } else {
            let mut progress = follow::Progress::quiet();
            follow::follow(target, &id, &mut held, &mut progress, true).await?
        };
        follow::unused(&held);
        if args.json {
            print_json(&operation)?;
        } else {
            print_line(&id)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !target.is_local() {
        say(&format!(
            "following {id} (Ctrl-C stops following; the gateway goes on: switchboard operations show {id})"
        ));
    }
    let mut progress = follow::Progress::new();
    let operation = follow::follow(target, &id, &mut held, &mut progress, false).await?;
    follow::unused(&held);
    if args.json {
        print_json(&operation)?;
    }
    if operation.state != State::Completed {
        say(&format!(
            "error: install {id} {}: {}",
            operation.state.as_str(),
            operation.error.as_deref().unwrap_or("no reason given")
        ));
        return Ok(ExitCode::FAILURE);
    }
    let result = operation.result.clone().unwrap_or(Value::Null);
    let server = result["server"].as_str().unwrap_or("?");
    let tools = result["probation"]["tools"].as_array().map_or(0, Vec::len);
    let file = result["file"]
        .as_str()
        .map(PathBuf::from)
        .or_else(|| target.local_file().map(Path::to_path_buf));
    if !args.json {
        let state = if result["activated"] == true {
            format!("{tools} tools, serving")
        } else {
            format!("{tools} tools, added disabled (switchboard servers enable {server})")
        };
        print_line(&format!("installed {name} as '{server}': {state}"))?;
        if let Some(file) = &file {
            print_line(&format!("config: {}", file.display()))?;
        }
    }
    if target.is_local() {
        say(&format!(
            "note: no gateway runs this config: the change was written to {}",
            file.map_or_else(|| "the config file".to_owned(), |f| f.display().to_string())
        ));
    }
    Ok(ExitCode::SUCCESS)
}

async fn dry_run(
    config: Option<&Path>,
    target: &Target,
    args: &InstallArgs,
    name: &str,
    version: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let listing = match version {
        // A search finds latest versions only: an exact one is asked for by name and version.
        Some(version) => {
            // As the target loaded it for a dry run: an unrelated unset variable is no reason
            // not to look.
            let config = super::super::load_config_for_reading(config)?;
            switchboard::manager::listing::look_up(&config.manager, name, Some(version))
                .await
                .with_context(|| format!("cannot look up {name}@{version}"))?
        }
        None => lookup(target, name).await?.with_context(|| {
            format!(
                "no server named '{name}' in the registries (switchboard search-servers {name})"
            )
        })?,
    };
    let server = args
        .server
        .clone()
        .unwrap_or_else(|| switchboard::manager::server_id_for(name));
    if args.json {
        let mut answer = listing.clone();
        answer["server"] = Value::String(server);
        answer["dry_run"] = Value::Bool(true);
        print_json(&answer)?;
        return Ok(ExitCode::SUCCESS);
    }
    let text = |value: &Value| value.as_str().unwrap_or("-").to_owned();
    print_line(&format!(
        "{} {} (from {})",
        text(&listing["name"]),
        text(&listing["version"]),
        text(&listing["source"])
    ))?;
    if let Some(description) = listing["description"].as_str() {
        print_line(&format!("  {description}"))?;
    }
    print_line(&format!("  would add it as: {server}"))?;
    print_line(&format!("  would run: {}", text(&listing["install"])))?;
    for input in listing["inputs"].as_array().into_iter().flatten() {
        let mut flags = Vec::new();
        if input["required"] == true {
            flags.push("required");
        }
        if input["secret"] == true {
            flags.push("secret");
        }
        print_line(&format!(
            "  input: {}{}",
            text(&input["name"]),
            if flags.is_empty() {
                String::new()
            } else {
                format!(" ({})", flags.join(", "))
            }
        ))?;
    }
    print_line("dry run: nothing was installed")?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_from_their_version() {
        assert_eq!(
            split_version("io.x/y@1.2.0"),
            ("io.x/y".into(), Some("1.2.0".into()))
        );
        assert_eq!(split_version("io.x/y"), ("io.x/y".into(), None));
        assert_eq!(split_version("io.x/y@"), ("io.x/y@".into(), None));
    }
}
