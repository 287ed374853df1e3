//! `[servers.ID.auth]`: the token the gateway sends an HTTP server — its own, from an OAuth 2.1
//! client-credentials grant it runs and refreshes itself, or each caller's OAuth token
//! exchanged for one audienced to the server (RFC 8693). A client's own token never goes to a
//! server as it is.
//!
//! ```toml
//! [servers.crm]
//! url = "https://crm.example.com/mcp"
//! auth = { grant = "client_credentials", token_endpoint = "https://login.example.com/token",
//!          client_id = "switchboard", client_secret = "${CRM_SECRET}",
//!          scope = "crm:read", resource = "https://crm.example.com/mcp" }
//!
//! [servers.mail]
//! url = "https://mail.example.com/mcp"
//! auth = { grant = "token_exchange", token_endpoint = "https://login.example.com/token",
//!          client_id = "switchboard", client_secret = "${MAIL_SECRET}",
//!          resource = "https://mail.example.com/mcp", gateway_token = true }
//! ```
//!
//! The token endpoint is reached with the public CAs, unless `server_tls = true` asks for the
//! server's own `[servers.ID.tls]` there too (an internal authorization server behind the
//! same private CA): opt-in, since the endpoint gets the client secret.

use super::model::{SecretString, Transport, UpstreamAuthConfig, UpstreamGrant};
use super::tree::{Node, Pos};
use super::validate::Walk;

pub(super) const UPSTREAM_AUTH_KEYS: [&str; 9] = [
    "grant",
    "token_endpoint",
    "client_id",
    "client_secret",
    "scope",
    "resource",
    "audience",
    "gateway_token",
    "server_tls",
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
        let (mut scope, mut resource, mut audience) = (None, None, None);
        let mut gateway_token = None;
        let mut server_tls = None;
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
                "client_id" => {
                    client_id = self.string(value, &key_what);
                    refused |= client_id.is_none();
                }
                "client_secret" => {
                    secret = self.string(value, &key_what);
                    refused |= secret.is_none();
                }
                "scope" => scope = self.string(value, &key_what),
                "resource" => resource = self.string(value, &key_what),
                "audience" => audience = Some((*key_pos, self.string(value, &key_what))),
                "gateway_token" => gateway_token = Some((*key_pos, self.bool(value, &key_what))),
                "server_tls" => server_tls = self.bool(value, &key_what),
                other => self.unknown(*key_pos, other, what, &UPSTREAM_AUTH_KEYS),
            }
        }
        let grant = match grant {
            Some((_, Some(grant))) if grant == "client_credentials" => {
                UpstreamGrant::ClientCredentials
            }
            Some((_, Some(grant))) if grant == "token_exchange" => UpstreamGrant::TokenExchange,
            Some((pos, Some(other))) => {
                self.problem(
                    pos,
                    format!("{what}.grant '{other}' is not a grant the gateway runs"),
                    Some("use \"client_credentials\" or \"token_exchange\"".to_owned()),
                );
                return None;
            }
            Some((_, None)) => return None,
            None => {
                self.problem(
                    node.pos,
                    format!("{what} needs grant = \"client_credentials\" or \"token_exchange\""),
                    None,
                );
                return None;
            }
        };
        if grant == UpstreamGrant::ClientCredentials {
            for (key, given) in [
                ("audience", audience.as_ref().map(|(pos, _)| *pos)),
                ("gateway_token", gateway_token.map(|(pos, _)| pos)),
            ] {
                if let Some(pos) = given {
                    self.problem(
                        pos,
                        format!("{what}.{key} is a token-exchange setting, and the grant is client_credentials"),
                        Some("set grant = \"token_exchange\", or remove it".to_owned()),
                    );
                    refused = true;
                }
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
            grant,
            token_endpoint: endpoint?,
            client_id: client_id?,
            client_secret: SecretString(secret?),
            scope,
            resource,
            audience: audience.and_then(|(_, audience)| audience),
            gateway_token: gateway_token.and_then(|(_, on)| on).unwrap_or(true),
            server_tls: server_tls.unwrap_or(false),
        })
    }
}
