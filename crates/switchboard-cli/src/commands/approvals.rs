//! `switchboard approvals list|approve ID|deny ID [--reason]`: answer calls waiting for an
//! operator, on the running gateway (through its admin endpoint).

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;

use crate::admin::client::AdminClient;
use crate::output::{print_json, print_line};

#[derive(Debug, clap::Args)]
pub struct ApprovalsArgs {
    #[command(subcommand)]
    action: Action,
    /// The running gateway's admin file (default: see `switchboard serve --help`).
    #[arg(long, global = true, value_name = "FILE")]
    admin_file: Option<PathBuf>,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Calls waiting for approval.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Let a waiting call run.
    Approve { id: String },
    /// Refuse a waiting call; the model is told the reason.
    Deny {
        id: String,
        #[arg(long)]
        reason: Option<String>,
    },
}

fn operator() -> String {
    std::env::var("USER")
        .ok()
        .filter(|user| !user.is_empty())
        .map_or_else(|| "operator".to_owned(), |user| format!("operator {user}"))
}

pub async fn run(
    config: Option<&std::path::Path>,
    args: ApprovalsArgs,
) -> anyhow::Result<ExitCode> {
    let client = AdminClient::for_config(args.admin_file.as_deref(), config)?;
    match args.action {
        Action::List { json } => {
            let answer = client.approvals().await?;
            let approvals = answer["approvals"].as_array().cloned().unwrap_or_default();
            if json {
                print_json(&approvals)?;
            } else if approvals.is_empty() {
                print_line("no calls are waiting for approval")?;
            } else {
                for approval in &approvals {
                    let text = |key: &str| approval[key].as_str().unwrap_or("").to_owned();
                    print_line(&format!(
                        "{}  {}  agent={}  expires in {} s\n    arguments: {}\n    why: {}",
                        text("id"),
                        text("tool"),
                        approval["agent"].as_str().unwrap_or("-"),
                        approval["expires_in_ms"].as_u64().unwrap_or(0) / 1000,
                        approval
                            .get("arguments")
                            .map_or_else(String::new, Value::to_string),
                        text("reason"),
                    ))?;
                }
            }
        }
        Action::Approve { id } => {
            client.answer(&id, true, None, &operator()).await?;
            print_line(&format!("approved {id}"))?;
        }
        Action::Deny { id, reason } => {
            client
                .answer(&id, false, reason.as_deref(), &operator())
                .await?;
            print_line(&format!("denied {id}"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
