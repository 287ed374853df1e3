//! `switchboard tier set TIER (--session ID | --agent NAME)` and `switchboard tier clear ...`:
//! change the latency tier of a session or an agent on the running gateway (the operator's
//! "DM command"); the affected sessions are told their tool list changed.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::admin::client::AdminClient;
use crate::output::print_line;

#[derive(Debug, clap::Args)]
pub struct TierArgs {
    #[command(subcommand)]
    action: Action,
    /// The running gateway's admin file.
    #[arg(long, global = true, value_name = "FILE")]
    admin_file: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
struct Target {
    /// A session id (stdio connections and HTTP sessions have one).
    #[arg(long)]
    session: Option<String>,
    /// An agent: every session of it.
    #[arg(long)]
    agent: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Put a session or an agent in a tier (one of the config's [tiers]).
    Set {
        tier: String,
        #[command(flatten)]
        target: Target,
    },
    /// Back to the tier the request, the agent or the config chooses.
    Clear {
        #[command(flatten)]
        target: Target,
    },
}

pub async fn run(config: Option<&std::path::Path>, args: TierArgs) -> anyhow::Result<ExitCode> {
    let client = AdminClient::for_config(args.admin_file.as_deref(), config)?;
    let (tier, target) = match &args.action {
        Action::Set { tier, target } => (Some(tier.as_str()), target),
        Action::Clear { target } => (None, target),
    };
    client
        .set_tier(target.session.as_deref(), target.agent.as_deref(), tier)
        .await?;
    let who = target
        .session
        .as_ref()
        .map(|s| format!("session {s}"))
        .or_else(|| target.agent.as_ref().map(|a| format!("agent {a}")))
        .unwrap_or_default();
    print_line(&match tier {
        Some(tier) => format!("{who} is now in tier {tier}"),
        None => format!("{who}: tier cleared"),
    })?;
    Ok(ExitCode::SUCCESS)
}
