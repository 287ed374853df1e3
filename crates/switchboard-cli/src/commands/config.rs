//! `switchboard config check [FILE]`: validate a config and print every problem with file,
//! line, column and a hint, and whether the `[shared] keys` ring it names can be used. Exit 0
//! when valid, 1 when not. Without FILE, the config other commands would load: `--config`,
//! `$SWITCHBOARD_CONFIG`, then the default lookup.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use switchboard_core::config::{Config, GatewayEnvironment, Located};

use crate::output::print_line;

#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Validate a config file.
    Check {
        /// The file to check (default: --config, $SWITCHBOARD_CONFIG, ./switchboard.toml, the
        /// user config dir).
        file: Option<PathBuf>,
    },
}

pub fn run(config: Option<&Path>, command: ConfigCommand) -> anyhow::Result<ExitCode> {
    match command {
        ConfigCommand::Check { file } => {
            let file = match file {
                Some(file) => file,
                None => match super::located_config(config)? {
                    Located::File { path, how } => {
                        crate::output::note!("checking {} (from {how})", path.display());
                        path
                    }
                    Located::BuiltinDefault => {
                        print_line(
                            "no config file found: commands use the built-in default (pass FILE or --config to check one)",
                        )?;
                        return Ok(ExitCode::SUCCESS);
                    }
                },
            };
            check(&file)
        }
    }
}

fn check(file: &Path) -> anyhow::Result<ExitCode> {
    match Config::load(file, &GatewayEnvironment::new()) {
        Ok(config) => {
            // The key ring is a file of its own: a gateway would refuse to start on it.
            if let Some(ring) = &config.shared.keys
                && let Err(error) = switchboard::keyring::RingFile::load(ring)
            {
                crate::output::note!("{}: [shared] keys: {error}", file.display());
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
            crate::output::note!("{errors}");
            Ok(ExitCode::FAILURE)
        }
    }
}
