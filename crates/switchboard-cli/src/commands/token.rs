//! `switchboard token create AGENT`: a new HTTP bearer token for an agent. The token is
//! printed once; only its salted hash is stored, in the token file (`gateway.token_file`,
//! default `$XDG_CONFIG_HOME/switchboard/tokens.json`). A running gateway reads the file
//! when it starts.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use switchboard::tokens::{StoredToken, TokenFile, TokenStore, new_token};
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

/// Every token of a config: its agents' `tokens` and the token file's (for known agents).
pub fn token_store(config: &Config) -> anyhow::Result<TokenStore> {
    let mut tokens: Vec<StoredToken> = config
        .agents
        .iter()
        .flat_map(|(agent, settings)| {
            settings.tokens.iter().map(|hash| StoredToken {
                agent: agent.clone(),
                hash: hash.clone(),
                created: None,
            })
        })
        .collect();
    if let Some(path) = token_file_path(config) {
        let file = TokenFile::load(&path).map_err(anyhow::Error::msg)?;
        for token in file.tokens {
            if config.agents.contains_key(&token.agent) {
                tokens.push(token);
            } else {
                tracing::warn!(
                    "{}: ignoring a token of agent '{}', which the config does not define",
                    path.display(),
                    token.agent
                );
            }
        }
    }
    Ok(TokenStore::new(tokens))
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
            let path = token_file
                .or_else(|| token_file_path(&config))
                .context("no token file: set gateway.token_file or pass --token-file")?;
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
    }
    Ok(ExitCode::SUCCESS)
}
