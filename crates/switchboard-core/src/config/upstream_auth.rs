//! `[servers.ID.auth]`: how the gateway authenticates itself to an HTTP server — an OAuth 2.1
//! client-credentials grant it runs and refreshes itself. A client's own token never goes to
//! a server; this is the gateway's.
//!
//! ```toml
//! [servers.crm]
//! url = "https://crm.example.com/mcp"
//! auth = { grant = "client_credentials", token_endpoint = "https://login.example.com/token",
//!          client_id = "switchboard", client_secret = "${CRM_SECRET}",
//!          scope = "crm:read", resource = "https://crm.example.com/mcp" }
//! ```

use super::model::{SecretString, Transport, UpstreamAuthConfig};
use super::tree::{Node, Pos};
use super::validate::Walk;

pub(super) const UPSTREAM_AUTH_KEYS: [&str; 6] = [
    "grant",
    "token_endpoint",
    "client_id",
    "client_secret",
    "scope",
    "resource",
];

impl Walk<'_> {
    pub(super) fn upstream_auth(
        &mut self,
        node: &Node,
        key_pos: Pos,
        what: &str,
        transport: Option<&Transport>,
    ) -> Option<UpstreamAuthConfig> {
        let headers = match transport {
            Some(Transport::Http { headers, .. }) => Some(headers),
            Some(Transport::Sse { .. }) => {
                self.problem(
                    key_pos,
                    format!("{what} is for Streamable HTTP servers, and this one uses the legacy SSE transport"),
                    Some("an Authorization header in \"headers\" works with SSE".to_owned()),
                );
                return None;
            }
            Some(_) => {
                self.problem(
                    key_pos,
                    format!("{what} is for HTTP servers (\"url\"), and this one is not"),
                    Some("a stdio server gets its credentials through env".to_owned()),
                );
                return None;
            }
            None => None,
        };
        if headers.is_some_and(|headers| {
            headers
                .keys()
                .any(|name| name.eq_ignore_ascii_case("authorization"))
        }) {
            self.problem(
                key_pos,
                format!("{what} and an Authorization header in \"headers\" cannot both be set"),
                Some("keep one: the static header, or the grant".to_owned()),
            );
            return None;
        }
        let (mut grant, mut endpoint, mut client_id, mut secret) = (None, None, None, None);
        let (mut scope, mut resource) = (None, None);
        // A key given but refused is reported where it is, not again as missing.
        let mut refused = false;
        for (key, key_pos, value) in self.table(node, what) {
            let key_what = format!("{what}.{key}");
            match key.as_str() {
                "grant" => grant = Some((value.pos, self.string(value, &key_what))),
                "token_endpoint" => {
                    endpoint = self.fetched_url(value, &key_what);
                    refused |= endpoint.is_none();
                }
                "client_id" => client_id = self.string(value, &key_what),
                "client_secret" => secret = self.string(value, &key_what),
                "scope" => scope = self.string(value, &key_what),
                "resource" => resource = self.string(value, &key_what),
                other => self.unknown(*key_pos, other, what, &UPSTREAM_AUTH_KEYS),
            }
        }
        match grant {
            Some((_, Some(grant))) if grant == "client_credentials" => {}
            Some((pos, Some(grant))) if grant == "token_exchange" => {
                self.problem(
                    pos,
                    format!("{what}.grant \"token_exchange\" (RFC 8693) is not supported yet"),
                    Some("use \"client_credentials\"".to_owned()),
                );
                return None;
            }
            Some((pos, Some(other))) => {
                self.problem(
                    pos,
                    format!("{what}.grant '{other}' is not a grant the gateway runs"),
                    Some("use \"client_credentials\"".to_owned()),
                );
                return None;
            }
            Some((_, None)) => return None,
            None => {
                self.problem(
                    node.pos,
                    format!("{what} needs grant = \"client_credentials\""),
                    None,
                );
                return None;
            }
        }
        let missing: Vec<&str> = [
            ("token_endpoint", endpoint.is_none()),
            ("client_id", client_id.is_none()),
            ("client_secret", secret.is_none()),
        ]
        .iter()
        .filter(|(_, absent)| *absent)
        .map(|(key, _)| *key)
        .collect();
        if refused {
            return None;
        }
        if !missing.is_empty() {
            self.problem(
                node.pos,
                format!("{what} needs {}", missing.join(", ")),
                Some("client_secret = \"${SECRET}\" keeps the secret out of the file".to_owned()),
            );
            return None;
        }
        Some(UpstreamAuthConfig {
            token_endpoint: endpoint?,
            client_id: client_id?,
            client_secret: SecretString(secret?),
            scope,
            resource,
        })
    }
}
