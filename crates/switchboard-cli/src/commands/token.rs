//! `switchboard token create AGENT`: a new HTTP bearer token for an agent. The token is
//! printed once; only its salted hash is stored, in the token file (`gateway.token_file`,
//! default `$XDG_CONFIG_HOME/switchboard/tokens.json`). `token list` shows the tokens by id
//! (never a token), `token revoke ID` removes one from the file. A running gateway that
//! started with tokens follows the file within a second (`switchboard::tokens::LiveTokens`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use switchboard::tokens::{LiveTokens, TokenFile, config_tokens, new_token};
use switchboard_core::config::Config;

use crate::output::print_line;

#[derive(Debug, clap::Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Create a token for AGENT (one of the config's [agents]) and print it once.
    Create {
        agent: String,
        /// The token file to add it to (default: gateway.token_file, else
        /// $XDG_CONFIG_HOME/switchboard/tokens.json).
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
    },
    /// List the tokens (agent, id, when made, where kept); tokens themselves are never kept.
    List {
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
        /// One JSON object per token.
        #[arg(long)]
        json: bool,
    },
    /// Revoke the token whose id starts with ID (from `token list`): it is removed from the
    /// token file, and a running gateway refuses it within a second.
    Revoke {
        id: String,
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
    },
}

/// Where the config keeps token hashes.
pub fn token_file_path(config: &Config) -> Option<PathBuf> {
    config.gateway.token_file.clone().or_else(|| {
        std::env::var_os("XDG_CONFIG_HOME")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".config")))
            .map(|dir| dir.join("switchboard").join("tokens.json"))
    })
}

/// Every token of a config — its agents' `tokens` and the token file's (for known agents)
/// — kept in step with the token file.
pub fn live_tokens(config: &Config) -> anyhow::Result<LiveTokens> {
    LiveTokens::load(
        config_tokens(config),
        token_file_path(config),
        config.agents.keys().cloned().collect(),
    )
    .map_err(anyhow::Error::msg)
}

fn file_of(config: &Config, given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    given
        .or_else(|| token_file_path(config))
        .context("no token file: set gateway.token_file or pass --token-file")
}

pub fn run(config: Option<&Path>, args: TokenArgs) -> anyhow::Result<ExitCode> {
    let config = super::load_config(config)?;
    match args.action {
        Action::Create { agent, token_file } => {
            if !config.agents.contains_key(&agent) {
                let known: Vec<&str> = config.agents.keys().map(String::as_str).collect();
                bail!(
                    "unknown agent '{agent}' (the config defines: {})",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                );
            }
            let path = file_of(&config, token_file)?;
            let mut file = TokenFile::load(&path).map_err(anyhow::Error::msg)?;
            let (token, stored) = new_token(&agent);
            file.tokens.push(stored);
            file.save(&path).map_err(anyhow::Error::msg)?;
            eprintln!(
                "created a token for agent '{agent}' (its hash is in {}); it is shown only now:",
                path.display()
            );
            print_line(&token)?;
        }
        Action::List { token_file, json } => {
            let path = file_of(&config, token_file)?;
            let file = TokenFile::load(&path).map_err(anyhow::Error::msg)?;
            let listed = config_tokens(&config)
                .into_iter()
                .map(|token| (token, "config".to_owned()))
                .chain(
                    file.tokens
                        .into_iter()
                        .map(|token| (token, path.display().to_string())),
                );
            for (token, kept) in listed {
                let created = token.created.clone().unwrap_or_default();
                if json {
                    let line = serde_json::json!({"agent": token.agent, "id": token.id(),
                        "created": token.created, "kept": kept});
                    print_line(&line.to_string())?;
                } else {
                    print_line(&format!(
                        "{:<16} {:<12} {:<16} {kept}",
                        token.agent,
                        token.id(),
                        created
                    ))?;
                }
            }
        }
        Action::Revoke { id, token_file } => {
            let path = file_of(&config, token_file)?;
            let mut file = TokenFile::load(&path).map_err(anyhow::Error::msg)?;
            let revoked = match file.revoke(&id) {
                Ok(revoked) => revoked,
                Err(why)
                    if config_tokens(&config)
                        .iter()
                        .any(|t| t.id().starts_with(&id)) =>
                {
                    bail!("{why}: that token is in the config's [agents.X] tokens; remove it there")
                }
                Err(why) => bail!("{why}"),
            };
            file.save(&path).map_err(anyhow::Error::msg)?;
            eprintln!(
                "revoked token {} of agent '{}' (removed from {}); a running gateway refuses it within a second",
                revoked.id(),
                revoked.agent,
                path.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
