//! `switchboard token create AGENT`: a new HTTP bearer token for an agent. The token is
//! printed once; only its salted hash is stored, in the token file (`gateway.token_file`,
//! default `$XDG_CONFIG_HOME/switchboard/tokens.json`). `token list` shows the tokens by id
//! (never a token), `token revoke ID` removes one from the file. A running gateway that
//! started with tokens follows the file within a second (`switchboard::tokens::LiveTokens`).
//!
//! With `[storage] url`, the tokens are in PostgreSQL instead (`agent_tokens`, shared by every
//! replica, `switchboard::tokens::shared`): `create`, `list` and `revoke` work there, and
//! `token import FILE` copies a token file's tokens in (once, when moving to shared storage).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use switchboard::tokens::{
    LiveTokens, SharedTokens, StoredToken, TokenFile, config_tokens, new_token,
};
use switchboard_core::config::Config;

use crate::output::{ago, print_line};

#[derive(Debug, clap::Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Create a token for AGENT (one of the config's [agents]) and print it once (its hash
    /// goes to the token file, or with [storage] url to PostgreSQL).
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
    /// token file (with [storage] url: marked revoked in PostgreSQL), and running gateways
    /// refuse it within a second.
    Revoke {
        id: String,
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
    },
    /// Copy the tokens of a token file (of agents the config defines) into the shared store
    /// of `[storage] url`; tokens already there (or revoked there) are left as they are.
    Import {
        #[arg(value_name = "FILE")]
        file: PathBuf,
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
pub async fn live_tokens(config: &Config) -> anyhow::Result<LiveTokens> {
    if let Some(url) = super::audit::storage_url(config) {
        return LiveTokens::shared(
            config_tokens(config),
            SharedTokens::new(url)?,
            config.agents.keys().cloned().collect(),
        )
        .await
        .context("the agents' tokens ([storage] url)");
    }
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

pub async fn run(config: Option<&Path>, args: TokenArgs) -> anyhow::Result<ExitCode> {
    let config = super::load_config(config)?;
    if let Some(url) = super::audit::storage_url(&config) {
        shared(&config, SharedTokens::new(url)?, args.action).await?;
        return Ok(ExitCode::SUCCESS);
    }
    match args.action {
        Action::Create { agent, token_file } => {
            known_agent(&config, &agent)?;
            let path = file_of(&config, token_file)?;
            let (token, stored) = new_token(&agent);
            TokenFile::update(&path, |file| {
                file.tokens.push(stored);
                Ok(())
            })
            .map_err(anyhow::Error::msg)?;
            crate::output::note!(
                "created a token for agent '{agent}' (its hash is in {}); it is shown only now:",
                path.display()
            );
            print_line(&token)?;
        }
        Action::List { token_file, json } => {
            let path = file_of(&config, token_file)?;
            let file = TokenFile::load(&path).map_err(anyhow::Error::msg)?;
            list(&config, file.tokens, &path.display().to_string(), json)?;
        }
        Action::Revoke { id, token_file } => {
            let path = file_of(&config, token_file)?;
            let revoked = TokenFile::update(&path, |file| {
                file.revoke(&id)
                    .or_else(|why| in_config(&config, &id, why).map_err(|e| e.to_string()))
            })
            .map_err(anyhow::Error::msg)?;
            crate::output::note!(
                "revoked token {} of agent '{}' (removed from {}); a running gateway refuses it within a second",
                revoked.id(),
                revoked.agent,
                path.display()
            );
        }
        Action::Import { .. } => bail!(
            "`token import` copies a token file into the shared store: the config has no \
             [storage] url"
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// The actions on the shared store of `[storage] url`.
async fn shared(config: &Config, store: SharedTokens, action: Action) -> anyhow::Result<()> {
    const KEPT: &str = "the shared token store ([storage] url)";
    let no_file = |given: &Option<PathBuf>| {
        if given.is_some() {
            bail!(
                "with [storage] url the tokens are in PostgreSQL, not a token file: \
                 `switchboard token import FILE` copies a file's tokens there"
            );
        }
        Ok(())
    };
    match action {
        Action::Create { agent, token_file } => {
            no_file(&token_file)?;
            known_agent(config, &agent)?;
            let (token, stored) = new_token(&agent);
            store.insert(&[stored]).await?;
            crate::output::note!(
                "created a token for agent '{agent}' (its hash is in {KEPT}); it is shown only now:"
            );
            print_line(&token)?;
        }
        Action::List { token_file, json } => {
            no_file(&token_file)?;
            list(config, store.live().await?, "postgres", json)?;
        }
        Action::Revoke { id, token_file } => {
            no_file(&token_file)?;
            let by = std::env::var("USER").ok();
            let revoked = match store.revoke(&id, by.as_deref()).await {
                Ok(revoked) => revoked,
                Err(switchboard::tokens::SharedTokenError::NotFound(why)) => {
                    in_config(config, &id, why)?
                }
                Err(error) => return Err(error.into()),
            };
            crate::output::note!(
                "revoked token {} of agent '{}' (in {KEPT}); every replica refuses it within {:?}",
                revoked.id(),
                revoked.agent,
                switchboard::tokens::shared::STALE_AFTER
            );
        }
        Action::Import { file } => {
            let read = TokenFile::load(&file).map_err(anyhow::Error::msg)?;
            let (known, unknown): (Vec<_>, Vec<_>) = read
                .tokens
                .into_iter()
                .partition(|t| config.agents.contains_key(&t.agent));
            for token in &unknown {
                crate::output::note!(
                    "skipped token {} of agent '{}', which the config does not define",
                    token.id(),
                    token.agent
                );
            }
            let added = store.insert(&known).await?;
            print_line(&format!(
                "imported {added} token(s) from {} into {KEPT} ({} already there)",
                file.display(),
                known.len() as u64 - added
            ))?;
        }
    }
    Ok(())
}

fn known_agent(config: &Config, agent: &str) -> anyhow::Result<()> {
    if !config.agents.contains_key(agent) {
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
    Ok(())
}

/// `why` a token could not be revoked, told that it is in the config when it is.
fn in_config<T>(config: &Config, id: &str, why: String) -> anyhow::Result<T> {
    if config_tokens(config).iter().any(|t| t.id().starts_with(id)) {
        bail!("{why}: that token is in the config's [agents.X] tokens; remove it there")
    }
    bail!("{why}")
}

/// When a token was made, for people: `unix:SECONDS` (as the token file keeps it) as
/// "5m ago", as the other commands show times; anything else as written.
fn created_text(created: &str) -> String {
    created
        .strip_prefix("unix:")
        .and_then(|seconds| seconds.parse::<u64>().ok())
        .map_or_else(
            || created.to_owned(),
            |seconds| format!("{} ago", ago(seconds.saturating_mul(1000))),
        )
}

/// Prints the config's tokens and the `stored` ones (kept where `kept` says).
fn list(config: &Config, stored: Vec<StoredToken>, kept: &str, json: bool) -> anyhow::Result<()> {
    let listed = config_tokens(config)
        .into_iter()
        .map(|token| (token, "config"))
        .chain(stored.into_iter().map(|token| (token, kept)));
    for (token, kept) in listed {
        let created = token
            .created
            .as_deref()
            .map_or_else(String::new, created_text);
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
    Ok(())
}
