//! `switchboard keys`: the key ring file that seals session ids and `requestState` so that
//! replicas sharing it serve each other's sessions (`[shared] keys = "FILE"`,
//! docs/scale-out.md). `create FILE` writes a new ring (mode 0600, never over a file);
//! `rotate FILE [--grace 2m]` adds a key that opens at once and seals once every replica has
//! read it (old keys still open what they sealed);
//! `retire FILE --keep N | KEY_ID` removes old keys, never one in use (the key that seals, the
//! one due to seal next: a rotation's grace holds); `list FILE` shows ids and ages, never a
//! secret. A running gateway follows the file within a second (`switchboard::keyring`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::bail;
use switchboard::keyring::{Retired, RingFile};

use crate::output::print_line;

#[derive(Debug, clap::Args)]
pub struct KeysArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Write a new key ring of one key to FILE (mode 0600); refuses an existing file.
    Create { file: PathBuf },
    /// Add a key: it opens at once and seals after --grace (default 2m), once every replica
    /// has read the file; the older keys still open what they sealed.
    Rotate {
        file: PathBuf,
        /// How long the new key only opens before it seals: the time the file takes to reach
        /// every replica. "0" seals at once (one gateway, or a file every replica shares).
        #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = grace)]
        grace: std::time::Duration,
    },
    /// Remove old keys: all but the newest N (--keep N), or the one named KEY_ID. Never the
    /// newest, the key that seals now, nor the key due to seal next (during a rotation's
    /// grace the older key still seals): --keep keeps them, KEY_ID is refused.
    Retire {
        file: PathBuf,
        /// The id of the key to remove (from `keys list`).
        #[arg(
            value_name = "KEY_ID",
            conflicts_with = "keep",
            required_unless_present = "keep"
        )]
        id: Option<String>,
        /// Keep the newest N keys and remove the rest.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
        keep: Option<u16>,
    },
    /// Show the keys (id, age, which one seals); never a secret.
    List {
        file: PathBuf,
        /// One JSON object per key.
        #[arg(long)]
        json: bool,
    },
}

/// An age for people: the largest unit or two (`3d 4h`, `12m`).
fn age_text(age: Duration) -> String {
    let secs = age.as_secs();
    match secs {
        0..60 => format!("{secs}s"),
        60..3_600 => format!("{}m", secs / 60),
        3_600..86_400 => format!("{}h {}m", secs / 3_600, secs % 3_600 / 60),
        _ => format!("{}d {}h", secs / 86_400, secs % 86_400 / 3_600),
    }
}

pub fn run(args: KeysArgs) -> anyhow::Result<ExitCode> {
    let now = SystemTime::now();
    match args.action {
        Action::Create { file } => {
            let ring = RingFile::generate(now);
            ring.create(&file)?;
            crate::output::note!(
                "created key ring {} with key {} (mode 0600); point [shared] keys at it on every replica",
                file.display(),
                ring.keys[0].id
            );
        }
        Action::Rotate { file, grace } => {
            let (id, older) = RingFile::update(&file, |ring| {
                let id = ring.rotate_sealing_after(now, grace);
                Ok((id, ring.keys.len() - 1))
            })?;
            let from = if grace.is_zero() {
                "from now on".to_owned()
            } else {
                format!(
                    "in {}s, once every replica has read it (it opens now)",
                    grace.as_secs()
                )
            };
            crate::output::note!(
                "added key {id} to {}: it seals {from}; {older} older key(s) still open what they sealed",
                file.display(),
            );
        }
        Action::Retire { file, id, keep } => {
            if id.is_none() && keep.is_none() {
                bail!("name a KEY_ID or give --keep N");
            }
            let (Retired { removed, kept }, held) = RingFile::update(&file, |ring| {
                let retired = match (&id, keep) {
                    (Some(id), _) => {
                        ring.retire(&file, id, now)?;
                        Retired {
                            removed: vec![id.clone()],
                            kept: Vec::new(),
                        }
                    }
                    (None, keep) => ring.retire_keeping(usize::from(keep.unwrap_or_default()), now),
                };
                Ok((retired, ring.keys.len()))
            })?;
            for (id, why) in &kept {
                crate::output::note!("kept {id}: it {why}; retire it once a newer key seals");
            }
            if removed.is_empty() {
                crate::output::note!("nothing to retire: {} holds {held} key(s)", file.display(),);
            } else {
                crate::output::note!(
                    "retired {} from {}: what they sealed no longer opens",
                    removed.join(", "),
                    file.display()
                );
            }
        }
        Action::List { file, json } => {
            let ring = RingFile::load(&file)?;
            // As a running gateway sees it now (a key in its grace only opens).
            let sealing = ring
                .ring_at(now)
                .map(|(in_force, _)| switchboard_mcp::seal::key_id_text(in_force.current().id()));
            let now_secs = now
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            for key in &ring.keys {
                let age = key.age(now);
                let seals = sealing.as_deref() == Some(key.id.as_str());
                let seals_in = key.seals_from().saturating_sub(now_secs);
                if json {
                    let line = serde_json::json!({"id": key.id, "created": key.created,
                        "age_seconds": age.as_secs(), "seals": seals,
                        "seals_in_seconds": (seals_in > 0).then_some(seals_in)});
                    print_line(&line.to_string())?;
                } else {
                    let role = match (seals, seals_in) {
                        (true, _) => "seals".to_owned(),
                        (false, 0) => "opens".to_owned(),
                        (false, left) => format!("opens; seals in {left}s"),
                    };
                    print_line(&format!("{}  {:>8}  {role}", key.id, age_text(age)))?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A `--grace` duration (`90s`, `2m`, `0`).
fn grace(text: &str) -> Result<std::time::Duration, String> {
    switchboard_core::config::parse_duration(text)
        .ok_or_else(|| format!("'{text}' is not a duration (e.g. 90s, 2m, 0)"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn ages_read_in_one_or_two_units() {
        use std::time::Duration;
        assert_eq!(super::age_text(Duration::from_secs(5)), "5s");
        assert_eq!(super::age_text(Duration::from_secs(125)), "2m");
        assert_eq!(super::age_text(Duration::from_secs(3_900)), "1h 5m");
        assert_eq!(super::age_text(Duration::from_secs(90_000)), "1d 1h");
    }
}
