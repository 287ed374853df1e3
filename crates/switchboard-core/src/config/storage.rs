//! `[storage]`: the shared store of a scaled-out deployment (docs/scale-out.md). Absent, the
//! gateway keeps everything in its own SQLite files, as one process always has; with a
//! PostgreSQL URL, every replica appends to one audit ledger there.
//!
//! ```toml
//! [storage]
//! url = "postgres://switchboard:${PGPASSWORD}@db.internal/switchboard"
//! # or over a unix socket: "postgres:///switchboard?host=/run/postgresql"
//! ```
//!
//! Only the URL's shape is checked here (scheme, parse, a database); the server itself is
//! reached by the ledger when the gateway or `switchboard migrate` starts.

use super::model::{SecretString, StorageConfig};
use super::tree::Node;
use super::validate::Walk;

pub(super) const STORAGE_KEYS: [&str; 1] = ["url"];

const URL_HINT: &str = "e.g. \"postgres://user:${PGPASSWORD}@host/switchboard\" or \
                        \"postgres:///switchboard?host=/run/postgresql\"";

impl Walk<'_> {
    pub(super) fn storage(&mut self, node: &Node) -> StorageConfig {
        let mut storage = StorageConfig::default();
        for (key, key_pos, value) in self.table(node, "storage") {
            match key.as_str() {
                "url" => {
                    let Some(url) = self.string(value, "storage.url") else {
                        continue;
                    };
                    match check_postgres_url(&url) {
                        Ok(()) => storage.url = Some(SecretString(url)),
                        Err(why) => {
                            self.problem(
                                value.pos,
                                format!("storage.url {why}"),
                                Some(URL_HINT.to_owned()),
                            );
                        }
                    }
                }
                other => self.unknown(*key_pos, other, "storage", &STORAGE_KEYS),
            }
        }
        storage
    }
}

/// Whether `url` is a PostgreSQL connection URL: the scheme, something that parses as a URL,
/// and a database named in its path. The reason it is not, otherwise (without the URL, which
/// may hold a password).
pub fn check_postgres_url(url: &str) -> Result<(), String> {
    let Some((scheme, _)) = url.split_once("://") else {
        return Err("must start with postgres:// or postgresql://".to_owned());
    };
    if !scheme.eq_ignore_ascii_case("postgres") && !scheme.eq_ignore_ascii_case("postgresql") {
        return Err(format!(
            "has the scheme '{scheme}': only postgres:// (or postgresql://) is supported"
        ));
    }
    let parsed = url::Url::parse(url).map_err(|e| format!("does not parse as a URL: {e}"))?;
    let database = parsed.path().trim_start_matches('/');
    if database.is_empty() {
        return Err("names no database (the path after the host, e.g. /switchboard)".to_owned());
    }
    let socket = parsed
        .query_pairs()
        .any(|(key, value)| key == "host" && value.starts_with('/'));
    if parsed.host_str().is_none_or(str::is_empty) && !socket {
        return Err(
            "names no host: put one after postgres:// or a socket directory in ?host=/dir"
                .to_owned(),
        );
    }
    Ok(())
}
