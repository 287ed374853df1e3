//! `[servers.ID.tls]`: how the gateway speaks TLS to an `https://` server beyond the public
//! CAs — a private CA its certificate is checked against, and a client certificate for a
//! server that asks for one (mutual TLS).
//!
//! ```toml
//! [servers.ledger]
//! url = "https://ledger.internal:8443/mcp"
//! tls = { ca = "certs/internal-ca.pem", cert = "certs/gateway.crt", key = "certs/gateway.key" }
//! ```
//!
//! Paths are relative to the config file and must be readable; the key must be kept by its
//! owner alone (`chmod 600`), as `[storage] tls_key` is. `cert` and `key` go together. The
//! public CAs stay trusted beside `ca`. The files themselves (PEM) are read each time the
//! server's connection starts, so a renewed certificate is taken at its next start.

use super::model::{Transport, UpstreamTlsConfig};
use super::tree::{Node, Pos};
use super::validate::Walk;

pub(super) const UPSTREAM_TLS_KEYS: [&str; 3] = ["ca", "cert", "key"];

impl Walk<'_> {
    /// `[servers.ID.tls]` of a server reached over `transport` (`None`: unknown after a
    /// problem of its own, so only the table is judged).
    pub(super) fn upstream_tls(
        &mut self,
        node: &Node,
        key_pos: Pos,
        what: &str,
        transport: Option<&Transport>,
    ) -> Option<UpstreamTlsConfig> {
        match transport {
            Some(Transport::Http { url, .. } | Transport::Sse { url, .. })
                if !url
                    .get(..8)
                    .is_some_and(|s| s.eq_ignore_ascii_case("https://")) =>
            {
                self.problem(
                    key_pos,
                    format!(
                        "{what} is for https:// servers, and this one's url is {}",
                        super::redacted_url(url)
                    ),
                    Some("use https:// in url, or drop tls".to_owned()),
                );
                return None;
            }
            Some(Transport::Stdio { .. } | Transport::Builtin { .. }) => {
                self.problem(
                    key_pos,
                    format!("{what} is for HTTP servers (\"url\"), and this one is not"),
                    None,
                );
                return None;
            }
            _ => {}
        }
        let mut tls = UpstreamTlsConfig::default();
        let mut refused = false;
        for (key, key_pos, value) in self.table(node, what) {
            let key_what = format!("{what}.{key}");
            let slot = match key.as_str() {
                "ca" => &mut tls.ca,
                "cert" => &mut tls.cert,
                "key" => &mut tls.key,
                other => {
                    self.unknown(*key_pos, other, what, &UPSTREAM_TLS_KEYS);
                    refused = true;
                    continue;
                }
            };
            let hint = if key == "key" {
                "a PEM file of the client certificate's private key, chmod 600"
            } else {
                "a PEM file of certificates"
            };
            match self.readable_file(value, &key_what, key == "key", hint) {
                Some(path) => *slot = Some(path),
                None => refused = true,
            }
        }
        if refused {
            return None;
        }
        match (&tls.cert, &tls.key) {
            (Some(_), None) | (None, Some(_)) => {
                let (set, unset) = if tls.cert.is_some() {
                    ("cert", "key")
                } else {
                    ("key", "cert")
                };
                self.problem(
                    key_pos,
                    format!("{what}.{set} is set but {what}.{unset} is not"),
                    Some("a client certificate needs its key: set both, or neither".to_owned()),
                );
                None
            }
            (None, None) if tls.ca.is_none() => {
                self.problem(
                    key_pos,
                    format!("{what} names no file"),
                    Some("set ca (a private CA), or cert and key (a client certificate)".into()),
                );
                None
            }
            _ => Some(tls),
        }
    }
}
