//! `switchboard keys`: the key ring file that seals session ids and `requestState` so that
//! replicas sharing it serve each other's sessions (`[shared] keys = "FILE"`,
//! docs/scale-out.md). `create FILE` writes a new ring (mode 0600, never over a file);
//! `rotate FILE` adds the key that seals from now on (old keys still open what they sealed);
//! `retire FILE --keep N | KEY_ID` removes old keys; `list FILE` shows ids and ages, never a
//! secret. A running gateway follows the file within a second (`switchboard::keyring`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::bail;
use switchboard::keyring::RingFile;

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
    /// Add a key that seals from now on; the older keys still open what they sealed.
    Rotate { file: PathBuf },
    /// Remove old keys: all but the newest N (--keep N), or the one named KEY_ID. The newest
    /// key, which seals, is never removed.
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
            eprintln!(
                "created key ring {} with key {} (mode 0600); point [shared] keys at it on every replica",
                file.display(),
                ring.keys[0].id
            );
        }
        Action::Rotate { file } => {
            let (id, older) = RingFile::update(&file, |ring| {
                let id = ring.rotate(now);
                Ok((id, ring.keys.len() - 1))
            })?;
            eprintln!(
                "added key {id} to {}: it seals from now on; {older} older key(s) still open what they sealed",
                file.display(),
            );
        }
        Action::Retire { file, id, keep } => {
            if id.is_none() && keep.is_none() {
                bail!("name a KEY_ID or give --keep N");
            }
            let (removed, held) = RingFile::update(&file, |ring| {
                let removed = match (&id, keep) {
                    (Some(id), _) => {
                        ring.retire(&file, id)?;
                        vec![id.clone()]
                    }
                    (None, keep) => ring.retire_keeping(usize::from(keep.unwrap_or_default())),
                };
                Ok((removed, ring.keys.len()))
            })?;
            if removed.is_empty() {
                eprintln!("nothing to retire: {} holds {held} key(s)", file.display(),);
            } else {
                eprintln!(
                    "retired {} from {}: what they sealed no longer opens",
                    removed.join(", "),
                    file.display()
                );
            }
        }
        Action::List { file, json } => {
            let ring = RingFile::load(&file)?;
            let newest = ring.keys.len().saturating_sub(1);
            for (index, key) in ring.keys.iter().enumerate() {
                let age = key.age(now);
                let seals = index == newest;
                if json {
                    let line = serde_json::json!({"id": key.id, "created": key.created,
                        "age_seconds": age.as_secs(), "seals": seals});
                    print_line(&line.to_string())?;
                } else {
                    print_line(&format!(
                        "{}  {:>8}  {}",
                        key.id,
                        age_text(age),
                        if seals { "seals" } else { "opens" }
                    ))?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
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
