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
//! tls_cert = "certs/client.crt"   # a client certificate (PEM), for pg_hba.conf's `cert`
//! tls_key = "certs/client.key"    # its private key (PEM, readable by its owner only)
//! ```
//!
//! `tls_ca`, `tls_cert` and `tls_key` (relative to the config file) must be readable files;
//! they are folded into the URL as libpq's `sslrootcert`, `sslcert` and `sslkey`, which every
//! PostgreSQL connection of the process reads (`switchboard_ledger::postgres::tls`). Naming
//! one both here and in the URL is a problem: one source at a time. `tls_cert` and `tls_key`
//! go together, and a key file its group or the world may read is refused, as libpq refuses
//! it ([`check_private_key_file`]). Whether the key is the certificate's is checked when the
//! gateway starts (parsing PEM is the ledger's).
//!
//! Only the URL's shape is checked here (scheme, parse, a database); the server itself is
//! reached by the ledger when the gateway or `switchboard migrate` starts.

use super::model::{LedgerUnavailable, SecretString, StorageConfig};
use super::tree::Node;
use super::validate::Walk;

pub(super) const STORAGE_KEYS: [&str; 5] =
    ["url", "ledger_unavailable", "tls_ca", "tls_cert", "tls_key"];
const LEDGER_POLICIES: [&str; 2] = ["refuse", "journal"];

const URL_HINT: &str = "e.g. \"postgres://user:${PGPASSWORD}@host/switchboard\" or \
                        \"postgres:///switchboard?host=/run/postgresql\"";

impl Walk<'_> {
    pub(super) fn storage(&mut self, node: &Node) -> StorageConfig {
        let mut storage = StorageConfig::default();
        let mut files = Vec::new();
        // Named, readable or not: a bad key is its own problem, not a missing one.
        let mut named = Vec::new();
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
                "tls_ca" | "tls_cert" | "tls_key" => {
                    let Some(file) = TLS_FILES.iter().find(|file| file.key == key) else {
                        continue;
                    };
                    named.push(file.key);
                    if let Some(path) = self.tls_file(file, value) {
                        files.push((file, path, value.pos));
                    }
                }
                other => self.unknown(*key_pos, other, "storage", &STORAGE_KEYS),
            }
        }
        self.fold_tls_files(&files, &named, storage.url.as_mut());
        storage
    }

    /// The path `value` gives for `file` when this process can read it (and, for the key,
    /// only its owner may); a located problem otherwise.
    fn tls_file(&mut self, file: &TlsFile, value: &Node) -> Option<std::path::PathBuf> {
        let what = format!("storage.{}", file.key);
        self.readable_file(value, &what, file.url_key == "sslkey", file.hint)
    }

    /// The path `value` names (`what`) when this process can read it and, for a `private`
    /// key, no one but its owner may; a located problem with `hint` otherwise. For the TLS
    /// files of `[storage]` and `[servers.ID.tls]`.
    pub(super) fn readable_file(
        &mut self,
        value: &Node,
        what: &str,
        private: bool,
        hint: &str,
    ) -> Option<std::path::PathBuf> {
        let path = self.path(value, what)?;
        let checked = match std::fs::File::open(&path) {
            Err(error) => Err(format!("cannot read {}: {error}", path.display())),
            Ok(_) if private => check_private_key_file(&path),
            Ok(_) => Ok(()),
        };
        match checked {
            Ok(()) => Some(path),
            Err(why) => {
                self.problem(value.pos, format!("{what}: {why}"), Some(hint.into()));
                None
            }
        }
    }

    /// Adds the files to the URL as libpq's keys; a problem where a file has no URL, the
    /// URL names the same file already, or a certificate comes without its key.
    fn fold_tls_files(
        &mut self,
        files: &[(&TlsFile, std::path::PathBuf, super::tree::Pos)],
        named: &[&str],
        mut url: Option<&mut SecretString>,
    ) {
        for (file, path, pos) in files {
            let Some(url) = url.as_deref_mut() else {
                self.problem(
                    *pos,
                    format!(
                        "storage.{} is set but storage.url is not: it is for that server",
                        file.key
                    ),
                    None,
                );
                continue;
            };
            if url.0.contains(&format!("{}=", file.url_key)) {
                self.problem(
                    *pos,
                    format!(
                        "storage.{} and the url's {} both name {}",
                        file.key, file.url_key, file.what
                    ),
                    Some("keep one of them".to_owned()),
                );
                continue;
            }
            let partner = match file.key {
                "tls_cert" => Some(("tls_key", "sslkey")),
                "tls_key" => Some(("tls_cert", "sslcert")),
                _ => None,
            };
            if let Some((partner, partner_url)) = partner
                && !named.contains(&partner)
                && !url.0.contains(&format!("{partner_url}="))
            {
                self.problem(
                    *pos,
                    format!(
                        "storage.{} is set but storage.{partner} is not: a client certificate \
                         needs its key",
                        file.key
                    ),
                    Some("set both tls_cert and tls_key, or neither".to_owned()),
                );
                continue;
            }
            url.0 = with_file(&url.0, file.url_key, path);
        }
    }
}

/// A file `[storage]` names for TLS, and the libpq URL key it becomes.
struct TlsFile {
    key: &'static str,
    url_key: &'static str,
    /// What it is, in a problem's words.
    what: &'static str,
    hint: &'static str,
}

static TLS_FILES: [TlsFile; 3] = [
    TlsFile {
        key: "tls_ca",
        url_key: "sslrootcert",
        what: "a CA",
        hint: "a PEM file of the CA that signed PostgreSQL's certificate",
    },
    TlsFile {
        key: "tls_cert",
        url_key: "sslcert",
        what: "a client certificate",
        hint: "a PEM file of the client certificate PostgreSQL asks for (pg_hba.conf's cert)",
    },
    TlsFile {
        key: "tls_key",
        url_key: "sslkey",
        what: "a client key",
        hint: "a PEM file of the client certificate's private key, chmod 600",
    },
];

/// Whether the private key file at `path` is kept as libpq demands before using it: no
/// access for its group or the world (`chmod 600`), or, for a file root owns, at most read
/// access for its group (`640`, a key shared with a group of services). Others refused, as
/// libpq refuses them: a key more people can read no longer proves who connects.
pub fn check_private_key_file(path: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    let mode = meta.mode() & 0o777;
    let allowed = if meta.uid() == 0 { 0o740 } else { 0o700 };
    if mode & !allowed != 0 {
        return Err(format!(
            "{} has group or world access (mode {mode:o}): a private key must be u=rw (0600) or \
             less, or u=rw,g=r (0640) or less when root owns it; chmod 600 it",
            path.display()
        ));
    }
    Ok(())
}

/// `url` with `KEY=PATH` (percent-encoded) added to its query.
fn with_file(url: &str, key: &str, path: &std::path::Path) -> String {
    let path = path.display().to_string();
    let encoded = percent_encoding::utf8_percent_encode(&path, percent_encoding::NON_ALPHANUMERIC);
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{key}={encoded}")
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
