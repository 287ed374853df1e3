//! The tokens an HTTP server gets (`[servers.ID.auth]`, [`UpstreamCredentials`]): the
//! gateway's own from an OAuth 2.1 client-credentials grant (RFC 6749 §4.4,
//! [`ClientCredentials`]), and, for a server that takes the caller's identity, each
//! caller's token exchanged for one of the server's (RFC 8693, `token_exchange`).
//!
//! Both ask the authorization server's token endpoint ([`fetch_token`]) with the gateway's
//! client id and secret in HTTP Basic, form-escaped (§2.3.1), the scope and the RFC 8707
//! resource indicator in the form. A token is kept until shortly before it expires (a tenth
//! of its life, at most 30 s early) and fetched anew then; a server that answers 401 makes
//! the gateway forget it and fetch another once. A client's own token is never sent to a
//! server as it is. The token endpoint is reached with the public CAs, or, with
//! `server_tls = true`, with the server's own TLS settings (`[servers.ID.tls]`: its private CA
//! trusted, its client certificate offered if asked), those its connection last opened with
//! ([`UpstreamCredentials::reach_with`]).

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::Value;
use switchboard_core::config::{UpstreamAuthConfig, UpstreamGrant};
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::super::transport::{OnBehalf, TransportError};
use super::tls::UpstreamTls;
use super::token_exchange::TokenExchange;
use crate::oauth::{client_basic, form_escape};

const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// A token whose answer says nothing of its life is kept this long.
const DEFAULT_LIFE: Duration = Duration::from_secs(3600);
/// The most a token is renewed before it expires.
const MAX_EARLY: Duration = Duration::from_secs(30);
/// The longest life taken from an answer's `expires_in` (a larger one is renewed after this).
const MAX_LIFE: Duration = Duration::from_secs(30 * 24 * 3600);
/// The longest the token endpoint may take to answer: every request to the server waits
/// behind a fetch, and an endpoint that accepts the connection and then stalls must not hold
/// them long.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// A token and when to fetch the next.
pub(super) struct Held {
    pub(super) authorization: HeaderValue,
    pub(super) renew_at: Instant,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("renew_at", &self.renew_at)
            .finish_non_exhaustive()
    }
}

/// What `[servers.ID.auth]` makes the gateway send a server.
#[derive(Debug)]
pub struct UpstreamCredentials {
    /// The gateway's own token, for its own requests (and, with client credentials, for
    /// every request).
    own: Option<ClientCredentials>,
    /// The exchange of callers' tokens, for their calls.
    exchange: Option<TokenExchange>,
    /// Whether the token endpoint is reached with the server's TLS settings (`server_tls`).
    server_tls: bool,
}

impl UpstreamCredentials {
    pub fn new(config: &UpstreamAuthConfig) -> Result<Self, String> {
        let exchanges = config.grant == UpstreamGrant::TokenExchange;
        let own = (!exchanges || config.gateway_token)
            .then(|| ClientCredentials::new(config))
            .transpose()?;
        let exchange = exchanges.then(|| TokenExchange::new(config)).transpose()?;
        Ok(Self {
            own,
            exchange,
            server_tls: config.server_tls,
        })
    }

    /// The `Authorization` value of a request made `on_behalf` of someone (none: the
    /// request goes without one); a new token when the one held is `refused` (the server
    /// answered 401 to it) — once, however many requests were refused it at the same time.
    /// A caller's call to a server that takes the caller's identity is refused when the
    /// caller has no OAuth token to exchange.
    pub async fn authorization(
        &self,
        on_behalf: &OnBehalf,
        refused: Option<&HeaderValue>,
    ) -> Result<Option<HeaderValue>, TransportError> {
        match (on_behalf, &self.exchange) {
            (OnBehalf::Caller(Some(token)), Some(exchange)) => {
                exchange.authorization(token, refused).await.map(Some)
            }
            (OnBehalf::Caller(None), Some(_)) => Err(TransportError::new(
                "this server takes the caller's identity (grant = \"token_exchange\"), and the \
                 call comes without an OAuth access token to exchange (stdio, a static token or \
                 the library)",
            )),
            _ => match &self.own {
                Some(own) => own.authorization(refused).await.map(Some),
                None => Ok(None),
            },
        }
    }

    /// The gateway's own token held, if any, without fetching (for requests that cannot
    /// wait on one: a session's GET stream, its DELETE).
    pub fn held(&self) -> Option<HeaderValue> {
        self.own.as_ref()?.held()
    }

    /// Reaches the token endpoint with `tls` from now on, when `server_tls` asks for it: the
    /// server's settings as its connection opened with them (a renewed file is taken at the
    /// next open). Otherwise the public CAs stay: the endpoint gets the client secret, so a CA
    /// trusted for the server is not trusted for it unasked.
    pub(super) fn reach_with(&self, tls: Option<Arc<UpstreamTls>>) {
        if !self.server_tls {
            return;
        }
        let endpoints = [
            self.own.as_ref().map(|own| &own.endpoint),
            self.exchange.as_ref().map(TokenExchange::endpoint),
        ];
        for endpoint in endpoints.into_iter().flatten() {
            *endpoint.tls.write().unwrap_or_else(PoisonError::into_inner) = tls.clone();
        }
    }
}

/// The authorization server's token endpoint and the gateway's client authentication there
/// (HTTP Basic); its `Debug` shows the endpoint, never the secret.
pub(super) struct TokenEndpoint {
    url: String,
    basic: HeaderValue,
    /// The server's TLS settings (`None`: the public roots).
    tls: RwLock<Option<Arc<UpstreamTls>>>,
}

impl std::fmt::Debug for TokenEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("TokenEndpoint").field(&self.url).finish()
    }
}

impl TokenEndpoint {
    pub(super) fn new(config: &UpstreamAuthConfig) -> Result<Self, String> {
        let basic = client_basic(&config.client_id, config.client_secret.expose())
            .ok_or_else(|| "the client credentials cannot be a header".to_owned())?;
        Ok(Self {
            url: config.token_endpoint.clone(),
            basic,
            tls: RwLock::new(None),
        })
    }

    /// Asks for a token with `form`; `refused` says what a refusal means.
    pub(super) async fn fetch(&self, form: String, refused: &str) -> Result<Held, TransportError> {
        let tls = self
            .tls
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        fetch_token(&self.url, tls, &self.basic, form, refused).await
    }
}

/// `form` with `&key=value` (form-escaped) for each value given.
pub(super) fn with_params(mut form: String, params: &[(&str, &Option<String>)]) -> String {
    for (key, value) in params {
        if let Some(value) = value {
            form.push_str(&format!("&{key}={}", form_escape(value)));
        }
    }
    form
}

/// One server's client-credentials grant, and the token it last got.
#[derive(Debug)]
pub struct ClientCredentials {
    endpoint: TokenEndpoint,
    form: String,
    held: Mutex<Option<Held>>,
}

impl ClientCredentials {
    pub fn new(config: &UpstreamAuthConfig) -> Result<Self, String> {
        let form = with_params(
            "grant_type=client_credentials".to_owned(),
            &[("scope", &config.scope), ("resource", &config.resource)],
        );
        Ok(Self {
            endpoint: TokenEndpoint::new(config)?,
            form,
            held: Mutex::new(None),
        })
    }

    /// The `Authorization` value for the next request: the token held, or a new one when it
    /// is about to expire or is the one the server `refused`. Requests refused the same token
    /// at once wait here for one new token: the first fetches it, the others find it held.
    pub async fn authorization(
        &self,
        refused: Option<&HeaderValue>,
    ) -> Result<HeaderValue, TransportError> {
        let mut held = self.held.lock().await;
        if let Some(token) = held.as_ref()
            && Instant::now() < token.renew_at
            && refused.is_none_or(|refused| *refused != token.authorization)
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
        self.endpoint
            .fetch(
                self.form.clone(),
                "refused the gateway's client credentials",
            )
            .await
    }
}

/// Asks the token endpoint for a token with `form` (the gateway authenticated by `basic`);
/// `refused` says what a refusal means, after the endpoint's name.
async fn fetch_token(
    token_endpoint: &str,
    tls: Option<Arc<UpstreamTls>>,
    basic: &HeaderValue,
    form: String,
    refused: &str,
) -> Result<Held, TransportError> {
    let mut headers = HeaderMap::new();
    headers.insert(header::AUTHORIZATION, basic.clone());
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-www-form-urlencoded"),
    );
    headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    let asked = Instant::now();
    let target = super::client::Target::parse(token_endpoint)
        .map(|target| target.with_tls(tls))
        .map_err(|error| TransportError::new(format!("getting a token: {error}")))?;
    let asking = super::request_to(
        Method::POST,
        token_endpoint,
        headers,
        Bytes::from(form),
        MAX_ANSWER_BYTES,
        target,
    );
    let (status, body) = tokio::time::timeout(FETCH_TIMEOUT, asking)
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "the token endpoint {token_endpoint} gave no answer within {} s",
                FETCH_TIMEOUT.as_secs()
            ))
        })
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
            "the token endpoint {token_endpoint} {refused} ({status} {error}{description})"
        )));
    }
    let token = answer
        .get("access_token")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            TransportError::new(format!(
                "the token endpoint {token_endpoint} answered no access_token"
            ))
        })?;
    let kind = answer
        .get("token_type")
        .and_then(Value::as_str)
        .unwrap_or("Bearer");
    if !kind.eq_ignore_ascii_case("bearer") {
        return Err(TransportError::new(format!(
            "the token endpoint {token_endpoint} answered a '{kind}' token; only Bearer tokens are sent"
        )));
    }
    let mut authorization = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
        TransportError::new(format!(
            "the token endpoint {token_endpoint} answered a token that cannot be a header"
        ))
    })?;
    authorization.set_sensitive(true);
    Ok(Held {
        authorization,
        renew_at: renew_at(asked, answer.get("expires_in").and_then(Value::as_u64)),
    })
}

/// When a token asked for at `asked` that lives `expires_in` seconds (if the answer says) is
/// renewed: [`early`] before it expires, its life taken as [`MAX_LIFE`] at most.
fn renew_at(asked: Instant, expires_in: Option<u64>) -> Instant {
    let life = expires_in.map_or(DEFAULT_LIFE, |seconds| {
        Duration::from_secs(seconds).min(MAX_LIFE)
    });
    asked + life - early(life)
}

/// How long before it expires a token of this life is renewed.
pub(super) fn early(life: Duration) -> Duration {
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

    /// An endpoint may answer any `expires_in`: a huge one is taken as the longest life, not
    /// an overflow.
    #[test]
    fn any_expires_in_gives_a_renewal_time() {
        let asked = Instant::now();
        assert_eq!(renew_at(asked, Some(60)), asked + Duration::from_secs(54));
        assert_eq!(renew_at(asked, None), asked + DEFAULT_LIFE - MAX_EARLY);
        assert_eq!(
            renew_at(asked, Some(u64::MAX)),
            asked + MAX_LIFE - MAX_EARLY
        );
    }

    #[test]
    fn the_form_carries_scope_and_resource_escaped() {
        let credentials = ClientCredentials::new(&UpstreamAuthConfig {
            grant: UpstreamGrant::ClientCredentials,
            token_endpoint: "http://127.0.0.1:1/token".into(),
            client_id: "gw".into(),
            client_secret: switchboard_core::config::SecretString("s e:cret".into()),
            scope: Some("crm:read crm:write".into()),
            resource: Some("https://crm.example.com/mcp".into()),
            audience: None,
            gateway_token: true,
            server_tls: false,
        })
        .expect("credentials");
        assert_eq!(
            credentials.form,
            "grant_type=client_credentials&scope=crm%3Aread%20crm%3Awrite&resource=https%3A%2F%2Fcrm.example.com%2Fmcp"
        );
        let expected = base64::engine::general_purpose::STANDARD.encode("gw:s%20e%3Acret");
        assert_eq!(
            credentials.endpoint.basic.to_str().expect("ascii"),
            format!("Basic {expected}")
        );
    }

    /// Requests that the server refused the same token at once get one new token between
    /// them: one grant, not one per request.
    #[tokio::test]
    async fn a_refused_token_is_renewed_once_for_every_request_refused_it() {
        let grants = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        let counted = grants.clone();
        let app = axum::Router::new().route(
            "/token",
            axum::routing::post(move || async move {
                let n = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                axum::Json(serde_json::json!({
                    "access_token": format!("t{n}"), "token_type": "Bearer", "expires_in": 3600
                }))
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        let credentials = Arc::new(
            ClientCredentials::new(&UpstreamAuthConfig {
                grant: UpstreamGrant::ClientCredentials,
                token_endpoint: format!("http://{address}/token"),
                client_id: "gw".into(),
                client_secret: switchboard_core::config::SecretString("s".into()),
                scope: None,
                resource: None,
                audience: None,
                gateway_token: true,
                server_tls: false,
            })
            .expect("credentials"),
        );
        let first = credentials.authorization(None).await.expect("a token");
        assert_eq!(first, "Bearer t1");
        let renewals: Vec<_> = (0..5)
            .map(|_| {
                let (credentials, refused) = (credentials.clone(), first.clone());
                tokio::spawn(async move { credentials.authorization(Some(&refused)).await })
            })
            .collect();
        for renewal in renewals {
            let token = renewal.await.expect("joined").expect("renewed");
            assert_eq!(token, "Bearer t2");
        }
        assert_eq!(grants.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
