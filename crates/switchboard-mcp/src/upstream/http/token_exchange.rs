//! RFC 8693 token exchange for a server that takes the caller's identity
//! (`[servers.ID.auth] grant = "token_exchange"`): the caller's OAuth access token (the
//! `subject_token`) goes to the authorization server's token endpoint with the gateway's
//! client credentials, and the access token that comes back — audienced to the server by
//! `resource` (RFC 8707) and/or `audience` — is what the server gets. The caller's own token
//! never reaches the server.
//!
//! Exchanged tokens are kept by the SHA-256 of the caller's token (never the token) until
//! shortly before they expire, at most [`MAX_HELD`] of them; a caller's calls in a row pay
//! for one exchange. A server that answers 401 gets a new exchange once.

use std::collections::HashMap;
use std::sync::Mutex;

use http::HeaderValue;
use switchboard_core::SubjectToken;
use switchboard_core::config::UpstreamAuthConfig;
use tokio::time::Instant;

use super::super::transport::TransportError;
use super::credentials::{Held, TokenEndpoint, with_params};
use crate::oauth::form_escape;

/// The most exchanged tokens kept; past it, expired ones go, then an arbitrary one.
pub const MAX_HELD: usize = 4096;

const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// One server's token exchange, and the tokens it got.
#[derive(Debug)]
pub struct TokenExchange {
    endpoint: TokenEndpoint,
    /// The form but for the subject token: grant, token types, resource, audience, scope.
    form: String,
    /// SHA-256 of a caller's token → the token exchanged for it.
    held: Mutex<HashMap<[u8; 32], Held>>,
}

impl TokenExchange {
    pub fn new(config: &UpstreamAuthConfig) -> Result<Self, String> {
        let form = with_params(
            format!(
                "grant_type={}&subject_token_type={}&requested_token_type={}",
                form_escape(GRANT_TYPE),
                form_escape(ACCESS_TOKEN_TYPE),
                form_escape(ACCESS_TOKEN_TYPE)
            ),
            &[
                ("resource", &config.resource),
                ("audience", &config.audience),
                ("scope", &config.scope),
            ],
        );
        Ok(Self {
            endpoint: TokenEndpoint::new(config)?,
            form,
            held: Mutex::new(HashMap::new()),
        })
    }

    /// Where its exchanges are asked.
    pub(super) fn endpoint(&self) -> &TokenEndpoint {
        &self.endpoint
    }

    /// The `Authorization` value for a request of the caller holding `subject`: the token
    /// exchanged for it before, or a new exchange when that one is about to expire (or
    /// `renew`: the server refused it).
    pub async fn authorization(
        &self,
        subject: &SubjectToken,
        refused: Option<&HeaderValue>,
    ) -> Result<HeaderValue, TransportError> {
        let key = digest(subject);
        if let Ok(held) = self.held.lock()
            && let Some(token) = held.get(&key)
            && Instant::now() < token.renew_at
            && refused.is_none_or(|refused| *refused != token.authorization)
        {
            return Ok(token.authorization.clone());
        }
        // Not under the lock: one caller's exchange does not hold up another's.
        let form = format!(
            "{}&subject_token={}",
            self.form,
            form_escape(subject.expose())
        );
        let token = self
            .endpoint
            .fetch(form, "refused to exchange the caller's token")
            .await?;
        let authorization = token.authorization.clone();
        if let Ok(mut held) = self.held.lock() {
            if held.len() >= MAX_HELD {
                let now = Instant::now();
                held.retain(|_, token| now < token.renew_at);
            }
            if held.len() >= MAX_HELD
                && let Some(any) = held.keys().next().copied()
            {
                held.remove(&any);
            }
            held.insert(key, token);
        }
        Ok(authorization)
    }
}

fn digest(subject: &SubjectToken) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, subject.expose().as_bytes());
    let mut key = [0; 32];
    key.copy_from_slice(digest.as_ref());
    key
}

#[cfg(test)]
mod tests {
    use switchboard_core::config::{SecretString, UpstreamGrant};

    use super::*;

    #[test]
    fn the_form_asks_for_an_access_token_for_the_server() {
        let exchange = TokenExchange::new(&UpstreamAuthConfig {
            grant: UpstreamGrant::TokenExchange,
            token_endpoint: "http://127.0.0.1:1/token".into(),
            client_id: "gw".into(),
            client_secret: SecretString("s".into()),
            scope: Some("mail:read".into()),
            resource: Some("https://mail.example.com/mcp".into()),
            audience: Some("mail".into()),
            gateway_token: false,
            server_tls: false,
        })
        .expect("exchange");
        assert_eq!(
            exchange.form,
            "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange\
             &subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token\
             &requested_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token\
             &resource=https%3A%2F%2Fmail.example.com%2Fmcp&audience=mail&scope=mail%3Aread"
        );
    }
}
