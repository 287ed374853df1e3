//! Opaque access tokens, asked about at the authorization server's RFC 7662 introspection
//! endpoint (a form POST with the gateway's own client credentials, HTTP Basic). An active
//! answer is reused ([`super::cache`]: by the token's SHA-256, no longer than the token lives
//! and at most a minute), so a revoked token stops working within that time; an inactive one
//! is not kept.
//!
//! The answer's fields are then checked like a JWT's claims ([`super::claims`]).

use base64::Engine;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::{Map, Value};
use switchboard_core::config::Introspection;
use tokio::time::Instant;

use super::TokenError;
use super::cache::{TokenCache, digest, keep_for};

const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// The longest the introspection endpoint may take to answer: the request that presented the
/// token waits on it, and an endpoint that accepts the connection and then stalls must not
/// hold every request with an opaque token.
const ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

pub struct Introspector {
    endpoint: String,
    authorization: HeaderValue,
    cache: TokenCache<Map<String, Value>>,
}

/// `application/x-www-form-urlencoded` escaping of one value.
pub(crate) fn form_escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The HTTP Basic `Authorization` of an OAuth client at the authorization server: RFC 6749
/// §2.3.1 form-escapes the id and the secret before the Basic encoding. `None` when they
/// cannot be a header.
pub(crate) fn client_basic(client_id: &str, client_secret: &str) -> Option<HeaderValue> {
    let credentials = format!("{}:{}", form_escape(client_id), form_escape(client_secret));
    let mut authorization = HeaderValue::from_str(&format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(credentials)
    ))
    .ok()?;
    authorization.set_sensitive(true);
    Some(authorization)
}

impl Introspector {
    pub fn new(settings: &Introspection) -> Result<Self, String> {
        let authorization = client_basic(&settings.client_id, settings.client_secret.expose())
            .ok_or_else(|| "the introspection credentials cannot be a header".to_owned())?;
        Ok(Self {
            endpoint: settings.endpoint.clone(),
            authorization,
            cache: TokenCache::new(),
        })
    }

    /// The token's introspection answer, if it is active. `wall` is the time in seconds since
    /// the epoch, to bound the cache by `exp`.
    pub async fn introspect(
        &self,
        token: &str,
        now: Instant,
        wall: u64,
    ) -> Result<Map<String, Value>, TokenError> {
        let digest = digest(token);
        if let Some(answer) = self.cache.get(&digest, now) {
            return Ok(answer);
        }
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, self.authorization.clone());
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        let body = format!("token={}&token_type_hint=access_token", form_escape(token));
        let asking = crate::upstream::http::request(
            Method::POST,
            &self.endpoint,
            headers,
            Bytes::from(body),
            MAX_ANSWER_BYTES,
        );
        let (status, answer) = tokio::time::timeout(ANSWER_TIMEOUT, asking)
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "{} gave no answer within {} s",
                    self.endpoint,
                    ANSWER_TIMEOUT.as_secs()
                ))
            })
            .map_err(TokenError::Introspection)?;
        if status != StatusCode::OK {
            return Err(TokenError::Introspection(format!(
                "{} answered {status}",
                self.endpoint
            )));
        }
        let answer: Map<String, Value> = serde_json::from_slice(&answer).map_err(|_| {
            TokenError::Introspection(format!("{} did not answer a JSON object", self.endpoint))
        })?;
        if answer.get("active") != Some(&Value::Bool(true)) {
            return Err(TokenError::Inactive);
        }
        self.cache
            .put(digest, answer.clone(), now, keep_for(&answer, wall));
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_values_are_escaped() {
        assert_eq!(form_escape("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
        assert_eq!(form_escape("Az09-._~"), "Az09-._~");
    }

    /// An endpoint that accepts the connection and never answers holds the request that
    /// presented the token for [`ANSWER_TIMEOUT`] at most.
    #[tokio::test(start_paused = true)]
    async fn a_stalled_introspection_gives_up_in_time() {
        let (address, stall) = crate::oauth::stalled_server().await;
        let introspector = Introspector::new(&Introspection {
            endpoint: format!("http://{address}/introspect"),
            client_id: "gateway".to_owned(),
            client_secret: switchboard_core::config::SecretString("secret".to_owned()),
        })
        .expect("introspector");
        let started = Instant::now();
        let outcome = introspector.introspect("opaque", Instant::now(), 0).await;
        assert!(
            matches!(&outcome, Err(TokenError::Introspection(why)) if why.contains("no answer within")),
            "{outcome:?}"
        );
        assert!(started.elapsed() <= ANSWER_TIMEOUT + std::time::Duration::from_secs(1));
        stall.abort();
    }
}
