//! The gateway's own credentials to an HTTP server (`[servers.ID.auth]`): an OAuth 2.1
//! client-credentials grant (RFC 6749 §4.4) the gateway runs against the authorization
//! server's token endpoint — its client id and secret in HTTP Basic, form-escaped
//! (§2.3.1), the scope and the RFC 8707 resource indicator in the form. The token is kept
//! until shortly before it expires (a tenth of its life, at most 30 s early) and fetched
//! anew then, one fetch at a time however many requests wait; a server that answers 401
//! makes the gateway forget it and fetch another once. A client's own token never comes
//! here: this is the gateway's.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::Value;
use switchboard_core::config::UpstreamAuthConfig;
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::super::transport::TransportError;
use crate::oauth::{client_basic, form_escape};

const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// A token whose answer says nothing of its life is kept this long.
const DEFAULT_LIFE: Duration = Duration::from_secs(3600);
/// The most a token is renewed before it expires.
const MAX_EARLY: Duration = Duration::from_secs(30);

/// A token and when to fetch the next.
struct Held {
    authorization: HeaderValue,
    renew_at: Instant,
}

/// One server's client-credentials grant, and the token it last got.
pub struct ClientCredentials {
    token_endpoint: String,
    basic: HeaderValue,
    form: String,
    held: Mutex<Option<Held>>,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("token_endpoint", &self.token_endpoint)
            .finish_non_exhaustive()
    }
}

impl ClientCredentials {
    pub fn new(config: &UpstreamAuthConfig) -> Result<Self, String> {
        let basic = client_basic(&config.client_id, config.client_secret.expose())
            .ok_or_else(|| "the client credentials cannot be a header".to_owned())?;
        let mut form = "grant_type=client_credentials".to_owned();
        for (key, value) in [("scope", &config.scope), ("resource", &config.resource)] {
            if let Some(value) = value {
                form.push_str(&format!("&{key}={}", form_escape(value)));
            }
        }
        Ok(Self {
            token_endpoint: config.token_endpoint.clone(),
            basic,
            form,
            held: Mutex::new(None),
        })
    }

    /// The `Authorization` value for the next request: the token held, or a new one when it
    /// is about to expire (or `renew`: the server refused it).
    pub async fn authorization(&self, renew: bool) -> Result<HeaderValue, TransportError> {
        let mut held = self.held.lock().await;
        if !renew
            && let Some(token) = held.as_ref()
            && Instant::now() < token.renew_at
        {
            return Ok(token.authorization.clone());
        }
        let token = self.fetch().await?;
        let authorization = token.authorization.clone();
        *held = Some(token);
        Ok(authorization)
    }

    /// The token held, if any, without fetching (for requests that cannot wait on one).
    pub fn held(&self) -> Option<HeaderValue> {
        let held = self.held.try_lock().ok()?;
        held.as_ref().map(|token| token.authorization.clone())
    }

    async fn fetch(&self) -> Result<Held, TransportError> {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, self.basic.clone());
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        let asked = Instant::now();
        let (status, body) = super::request(
            Method::POST,
            &self.token_endpoint,
            headers,
            Bytes::from(self.form.clone()),
            MAX_ANSWER_BYTES,
        )
        .await
        .map_err(|error| TransportError::new(format!("getting a token: {error}")))?;
        let answer: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if status != StatusCode::OK {
            let error = answer.get("error").and_then(Value::as_str).unwrap_or("");
            let description = answer
                .get("error_description")
                .and_then(Value::as_str)
                .map(|text| format!(": {text}"))
                .unwrap_or_default();
            return Err(TransportError::new(format!(
                "the token endpoint {} refused the gateway's client credentials ({status} {error}{description})",
                self.token_endpoint
            )));
        }
        let token = answer
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                TransportError::new(format!(
                    "the token endpoint {} answered no access_token",
                    self.token_endpoint
                ))
            })?;
        let kind = answer
            .get("token_type")
            .and_then(Value::as_str)
            .unwrap_or("Bearer");
        if !kind.eq_ignore_ascii_case("bearer") {
            return Err(TransportError::new(format!(
                "the token endpoint {} answered a '{kind}' token; only Bearer tokens are sent",
                self.token_endpoint
            )));
        }
        let mut authorization =
            HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                TransportError::new(format!(
                    "the token endpoint {} answered a token that cannot be a header",
                    self.token_endpoint
                ))
            })?;
        authorization.set_sensitive(true);
        let life = answer
            .get("expires_in")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_LIFE, Duration::from_secs);
        Ok(Held {
            authorization,
            renew_at: asked + life - early(life),
        })
    }
}

/// How long before it expires a token of this life is renewed.
fn early(life: Duration) -> Duration {
    (life / 10).min(MAX_EARLY)
}

#[cfg(test)]
mod tests {
    use base64::Engine;

    use super::*;

    #[test]
    fn a_token_is_renewed_a_tenth_of_its_life_early_at_most_thirty_seconds() {
        assert_eq!(early(Duration::from_secs(10)), Duration::from_secs(1));
        assert_eq!(early(Duration::from_secs(3600)), MAX_EARLY);
        assert_eq!(early(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn the_form_carries_scope_and_resource_escaped() {
        let credentials = ClientCredentials::new(&UpstreamAuthConfig {
            token_endpoint: "http://127.0.0.1:1/token".into(),
            client_id: "gw".into(),
            client_secret: switchboard_core::config::SecretString("s e:cret".into()),
            scope: Some("crm:read crm:write".into()),
            resource: Some("https://crm.example.com/mcp".into()),
        })
        .expect("credentials");
        assert_eq!(
            credentials.form,
            "grant_type=client_credentials&scope=crm%3Aread%20crm%3Awrite&resource=https%3A%2F%2Fcrm.example.com%2Fmcp"
        );
        let expected = base64::engine::general_purpose::STANDARD.encode("gw:s%20e%3Acret");
        assert_eq!(
            credentials.basic.to_str().expect("ascii"),
            format!("Basic {expected}")
        );
    }
}
