//! `switchboard config check FILE`: validate a config and print every problem with file,
//! line, column and a hint, and whether the `[shared] keys` ring it names can be used. Exit 0
//! when valid, 1 when not.

use std::path::PathBuf;
use std::process::ExitCode;

use switchboard_core::config::{Config, GatewayEnvironment};

use crate::output::print_line;

#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Validate a config file.
    Check {
        /// The file to check.
        file: PathBuf,
    },
}

pub fn run(command: ConfigCommand) -> anyhow::Result<ExitCode> {
    match command {
        ConfigCommand::Check { file } => match Config::load(&file, &GatewayEnvironment::new()) {
            Ok(config) => {
                // The key ring is a file of its own: a gateway would refuse to start on it.
                if let Some(ring) = &config.shared.keys
                    && let Err(error) = switchboard::keyring::RingFile::load(ring)
                {
                    eprintln!("{}: [shared] keys: {error}", file.display());
                    return Ok(ExitCode::FAILURE);
                }
                let enabled = config.servers.iter().filter(|s| s.enabled).count();
                print_line(&format!(
                    "{}: ok ({} servers, {} enabled)",
                    file.display(),
                    config.servers.len(),
                    enabled
                ))?;
                Ok(ExitCode::SUCCESS)
            }
            Err(errors) => {
                eprintln!("{errors}");
                Ok(ExitCode::FAILURE)
            }
        },
    }
}
