//! `[storage]`: the shared store of a scaled-out deployment (docs/scale-out.md). Absent, the
//! gateway keeps everything in its own SQLite files, as one process always has; with a
//! PostgreSQL URL, every replica appends to one audit ledger there.
//!
//! ```toml
//! [storage]
//! url = "postgres://switchboard:${PGPASSWORD}@db.internal/switchboard"
//! # or over a unix socket: "postgres:///switchboard?host=/run/postgresql"
//! ledger_unavailable = "refuse"   # default; or "journal": run calls, rows wait in the journal
//! tls_ca = "certs/db-ca.pem"      # a private CA for the server's certificate (PEM)
//! ```
//!
//! `tls_ca` (relative to the config file) must be a readable file; it is folded into the URL
//! as libpq's `sslrootcert`, which every PostgreSQL connection of the process reads
//! (`switchboard_ledger::postgres::tls`). Naming both is a problem: one CA source at a time.
//!
//! Only the URL's shape is checked here (scheme, parse, a database); the server itself is
//! reached by the ledger when the gateway or `switchboard migrate` starts.

use super::model::{LedgerUnavailable, SecretString, StorageConfig};
use super::tree::Node;
use super::validate::Walk;

pub(super) const STORAGE_KEYS: [&str; 3] = ["url", "ledger_unavailable", "tls_ca"];
const LEDGER_POLICIES: [&str; 2] = ["refuse", "journal"];

const URL_HINT: &str = "e.g. \"postgres://user:${PGPASSWORD}@host/switchboard\" or \
                        \"postgres:///switchboard?host=/run/postgresql\"";

impl Walk<'_> {
    pub(super) fn storage(&mut self, node: &Node) -> StorageConfig {
        let mut storage = StorageConfig::default();
        let mut tls_ca = None;
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
                "ledger_unavailable" => {
                    let what = "storage.ledger_unavailable";
                    let Some(text) = self.string(value, what) else {
                        continue;
                    };
                    storage.ledger_unavailable = match text.as_str() {
                        "refuse" => LedgerUnavailable::Refuse,
                        "journal" => LedgerUnavailable::Journal,
                        other => {
                            self.not_one_of(value.pos, what, other, &LEDGER_POLICIES, None);
                            continue;
                        }
                    };
                }
                "tls_ca" => {
                    let Some(path) = self.path(value, "storage.tls_ca") else {
                        continue;
                    };
                    if let Err(error) = std::fs::File::open(&path) {
                        self.problem(
                            value.pos,
                            format!("storage.tls_ca: cannot read {}: {error}", path.display()),
                            Some(
                                "a PEM file of the CA that signed PostgreSQL's certificate".into(),
                            ),
                        );
                        continue;
                    }
                    tls_ca = Some((path, value.pos));
                }
                other => self.unknown(*key_pos, other, "storage", &STORAGE_KEYS),
            }
        }
        match (tls_ca, storage.url.as_mut()) {
            (Some((_, pos)), None) => self.problem(
                pos,
                "storage.tls_ca is set but storage.url is not: it is the CA of that server"
                    .to_owned(),
                None,
            ),
            (Some((path, pos)), Some(url)) => {
                if url.0.contains("sslrootcert=") {
                    self.problem(
                        pos,
                        "storage.tls_ca and the url's sslrootcert both name a CA".to_owned(),
                        Some("keep one of them".to_owned()),
                    );
                } else {
                    url.0 = with_root_cert(&url.0, &path);
                }
            }
            (None, _) => {}
        }
        storage
    }
}

/// `url` with `sslrootcert=PATH` (percent-encoded) added to its query.
fn with_root_cert(url: &str, path: &std::path::Path) -> String {
    let path = path.display().to_string();
    let encoded = percent_encoding::utf8_percent_encode(&path, percent_encoding::NON_ALPHANUMERIC);
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}sslrootcert={encoded}")
}

/// Whether `url` is a PostgreSQL connection URL as libpq and tokio-postgres read it
/// (`postgres://[user[:password]@][host[:port][,…]][/database][?param=value&…]`): the scheme,
/// ports that are numbers, a database, and a host or a socket directory (`?host=/dir`).
/// The reason it is not, otherwise (without the URL, which may hold a password).
pub fn check_postgres_url(url: &str) -> Result<(), String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err("must start with postgres:// or postgresql://".to_owned());
    };
    if !scheme.eq_ignore_ascii_case("postgres") && !scheme.eq_ignore_ascii_case("postgresql") {
        return Err(format!(
            "has the scheme '{scheme}': only postgres:// (or postgresql://) is supported"
        ));
    }
    if rest.contains(char::is_whitespace) {
        return Err("does not parse as a URL: it holds white space".to_owned());
    }
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (netloc, database) = rest.split_once('/').unwrap_or((rest, ""));
    let hosts = netloc.rsplit_once('@').map_or(netloc, |(_, hosts)| hosts);
    for host in hosts.split(',').filter(|h| !h.is_empty()) {
        // The port follows the last colon, outside an [IPv6] bracket.
        let port = match host.rsplit_once(']') {
            Some((_, after)) => after.strip_prefix(':'),
            None => host.rsplit_once(':').map(|(_, port)| port),
        };
        if let Some(port) = port
            && port.parse::<u16>().is_err()
        {
            return Err(format!(
                "does not parse as a URL: the port '{port}' is not a number"
            ));
        }
    }
    if database.is_empty() {
        return Err("names no database (the path after the host, e.g. /switchboard)".to_owned());
    }
    let socket = query.split('&').any(|pair| {
        pair.strip_prefix("host=")
            .is_some_and(|dir| dir.starts_with('/'))
    });
    if hosts.is_empty() && !socket {
        return Err(
            "names no host: put one after postgres:// or a socket directory in ?host=/dir"
                .to_owned(),
        );
    }
    Ok(())
}
