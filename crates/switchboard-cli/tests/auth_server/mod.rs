//! The authorization server the OAuth tests run on 127.0.0.1 — its RFC 8414 metadata, a JWK
//! set of an ES256 and an RS256 key made for the test, a token endpoint (client credentials
//! and RFC 8693 token exchange), an introspection endpoint, over HTTP or HTTPS — and an HTTP
//! MCP server that records the headers it is sent.
//! Shared by `e2e_oauth.rs` and `e2e_upstream_auth.rs`.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::response::IntoResponse;
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair, RsaPublicKeyComponents};
use serde_json::{Value, json};

/// The test's authorization server: its issuer URL, its keys, and how often its JWK set
/// was fetched.
pub struct AuthServer {
    pub issuer: String,
    es256: EcdsaKeyPair,
    rs256: RsaKeyPair,
    /// The RS256 key's public modulus, for the HS256-with-the-public-key attack.
    rsa_public: Vec<u8>,
    pub jwks_fetches: Arc<AtomicUsize>,
    /// What its introspection endpoint answers for each opaque token (inactive otherwise).
    pub introspected: Introspected,
    /// How many tokens its token endpoint issued by the client-credentials grant.
    pub issued: Arc<AtomicUsize>,
    /// How many tokens it issued in exchange for another (RFC 8693).
    pub exchanged: Arc<AtomicUsize>,
}

/// Opaque token → its introspection answer, and how many questions came.
#[derive(Clone, Default)]
pub struct Introspected {
    pub answers: Arc<std::sync::Mutex<std::collections::HashMap<String, Value>>>,
    pub asked: Arc<AtomicUsize>,
}

impl Introspected {
    /// RFC 7662: the gateway's credentials (`switchboard`/`gw-secret`, HTTP Basic) and a
    /// form with the token.
    fn answer(&self, headers: &axum::http::HeaderMap, body: &str) -> axum::response::Response {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("switchboard:gw-secret")
        );
        if headers.get("authorization").map(|v| v.as_bytes()) != Some(basic.as_bytes()) {
            return axum::http::StatusCode::UNAUTHORIZED.into_response();
        }
        let form: std::collections::HashMap<String, String> =
            url::form_urlencoded::parse(body.as_bytes())
                .into_owned()
                .collect();
        let known = form
            .get("token")
            .and_then(|token| self.answers.lock().ok()?.get(token).cloned());
        Json(known.unwrap_or_else(|| json!({"active": false}))).into_response()
    }
}

pub fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn rsa_key() -> RsaKeyPair {
    let dir = tempfile::tempdir().expect("tempdir");
    let (pem, der) = (dir.path().join("rsa.pem"), dir.path().join("rsa.der"));
    let openssl = |args: &[&std::ffi::OsStr]| {
        let made = std::process::Command::new("openssl")
            .args(args)
            .output()
            .expect("openssl (apt-get install openssl) makes the test's RSA key");
        assert!(
            made.status.success(),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
    };
    openssl(&[
        "genrsa".as_ref(),
        "-out".as_ref(),
        pem.as_os_str(),
        "2048".as_ref(),
    ]);
    // ring reads an RSA private key as PKCS#1 DER.
    openssl(&[
        "rsa".as_ref(),
        "-in".as_ref(),
        pem.as_os_str(),
        "-traditional".as_ref(),
        "-outform".as_ref(),
        "DER".as_ref(),
        "-out".as_ref(),
        der.as_os_str(),
    ]);
    RsaKeyPair::from_der(&std::fs::read(&der).expect("key")).expect("a PKCS#1 RSA key")
}

/// A listener that hands axum each connection once its TLS handshake is done (one that
/// fails is dropped).
struct TlsListener {
    tcp: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, address)) = self.tcp.accept().await else {
                continue;
            };
            if let Ok(tls) = self.acceptor.accept(tcp).await {
                return (tls, address);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// The TLS settings of a server holding `issued` (no client certificate asked for).
fn tls_acceptor(issued: &switchboard_testkit::certs::Issued) -> tokio_rustls::TlsAcceptor {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_file_iter(&issued.cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .expect("the certificate");
    let key = PrivateKeyDer::from_pem_file(&issued.key).expect("the key");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("protocols")
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .expect("the server's TLS");
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

impl AuthServer {
    pub async fn start() -> Self {
        Self::start_with(None).await
    }

    /// The same server over HTTPS with the certificate `issued` (its issuer an https:// URL).
    pub async fn start_tls(issued: &switchboard_testkit::certs::Issued) -> Self {
        Self::start_with(Some(tls_acceptor(issued))).await
    }

    async fn start_with(tls: Option<tokio_rustls::TlsAcceptor>) -> Self {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).expect("generate");
        let es256 = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).expect("key");
        let signer = Arc::new(EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).expect("key"));
        let rs256 = rsa_key();
        let point = es256.public_key().as_ref().to_vec();
        let rsa = RsaPublicKeyComponents::<Vec<u8>>::from(rs256.public());
        let jwks = json!({"keys": [
            {"kty": "EC", "crv": "P-256", "kid": "es", "use": "sig", "alg": "ES256",
             "x": b64(&point[1..33]), "y": b64(&point[33..65])},
            {"kty": "RSA", "kid": "rs", "use": "sig", "n": b64(&rsa.n), "e": b64(&rsa.e)},
        ]});
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let scheme = if tls.is_some() { "https" } else { "http" };
        let issuer = format!("{scheme}://{}", listener.local_addr().expect("address"));
        let jwks_fetches = Arc::new(AtomicUsize::new(0));
        let metadata = json!({
            "issuer": issuer,
            "jwks_uri": format!("{issuer}/jwks"),
            "token_endpoint": format!("{issuer}/token"),
            "authorization_endpoint": format!("{issuer}/authorize"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["client_credentials",
                "urn:ietf:params:oauth:grant-type:token-exchange"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        });
        let fetches = jwks_fetches.clone();
        let token_issuer = issuer.clone();
        let issued = Arc::new(AtomicUsize::new(0));
        let counted = issued.clone();
        let exchanged = Arc::new(AtomicUsize::new(0));
        let exchanges = exchanged.clone();
        let introspected = Introspected::default();
        let introspection = introspected.clone();
        let app = axum::Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                get(move || async move { Json(metadata) }),
            )
            .route(
                "/token",
                axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
                    let counters = [&*counted, &*exchanges];
                    let token = token_endpoint(&signer, &token_issuer, counters, &headers, &body);
                    async move { token }
                }),
            )
            .route(
                "/introspect",
                axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
                    let answer = introspection.answer(&headers, &body);
                    async move { answer }
                }),
            )
            .route(
                "/jwks",
                get(move || async move {
                    fetches.fetch_add(1, Ordering::SeqCst);
                    Json(jwks)
                }),
            );
        match tls {
            None => drop(tokio::spawn(
                async move { axum::serve(listener, app).await },
            )),
            Some(acceptor) => {
                let listener = TlsListener {
                    tcp: listener,
                    acceptor,
                };
                drop(tokio::spawn(
                    async move { axum::serve(listener, app).await },
                ));
            }
        }
        Self {
            issuer,
            es256,
            rs256,
            rsa_public: rsa.n,
            jwks_fetches,
            introspected,
            issued,
            exchanged,
        }
    }

    /// A token signed as `header` says: ES256 or RS256 with the server's keys, HS256 keyed
    /// with the RSA public key, or `none`.
    pub fn mint(&self, header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let rng = SystemRandom::new();
        let signature = match header["alg"].as_str() {
            Some("ES256") => self
                .es256
                .sign(&rng, input.as_bytes())
                .expect("sign")
                .as_ref()
                .to_vec(),
            Some("RS256") => {
                let mut signature = vec![0; self.rs256.public().modulus_len()];
                self.rs256
                    .sign(
                        &signature::RSA_PKCS1_SHA256,
                        &rng,
                        input.as_bytes(),
                        &mut signature,
                    )
                    .expect("sign");
                signature
            }
            Some("HS256") => {
                let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &self.rsa_public);
                ring::hmac::sign(&key, input.as_bytes()).as_ref().to_vec()
            }
            _ => Vec::new(),
        };
        format!("{input}.{}", b64(&signature))
    }
}

/// The token endpoint, for the client `sdk-client` (secret `s3cret`, HTTP Basic): the
/// client_credentials grant, an ES256 access token for the `resource` it names (RFC 8707);
/// and the token-exchange grant (RFC 8693), a token for the `resource` with the subject
/// token's `sub` and `client_id`, the exchanging client as its actor (`act`). `counters`:
/// tokens issued by each grant.
fn token_endpoint(
    signer: &EcdsaKeyPair,
    issuer: &str,
    counters: [&AtomicUsize; 2],
    headers: &axum::http::HeaderMap,
    body: &str,
) -> axum::response::Response {
    let form: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(body.as_bytes())
            .into_owned()
            .collect();
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("sdk-client:s3cret")
    );
    let authenticated = headers
        .get("authorization")
        .is_some_and(|value| value.as_bytes() == basic.as_bytes());
    let refuse = |status, error: &str| (status, Json(json!({"error": error}))).into_response();
    if !authenticated {
        return refuse(axum::http::StatusCode::UNAUTHORIZED, "invalid_client");
    }
    let access_token_type = "urn:ietf:params:oauth:token-type:access_token";
    let (claims, life, counter) = match form.get("grant_type").map(String::as_str) {
        Some("client_credentials") => {
            // The scope "short-lived" gets a token of two seconds, to watch it being renewed.
            let scope = form.get("scope").map_or("mcp", String::as_str);
            let life = if scope == "short-lived" { 2 } else { 300 };
            let serial = counters[0].fetch_add(1, Ordering::SeqCst) + 1;
            let claims = json!({"iss": issuer, "aud": form.get("resource"),
                "client_id": "sdk-client", "sub": "sdk-client", "scope": scope,
                "exp": now() + life, "jti": serial});
            (claims, life, "issued")
        }
        Some("urn:ietf:params:oauth:grant-type:token-exchange") => {
            let subject = form
                .get("subject_token")
                .map(|token| unverified_claims(token));
            let well_formed = form.get("subject_token_type").map(String::as_str)
                == Some(access_token_type)
                && form.get("requested_token_type").map(String::as_str) == Some(access_token_type);
            let Some(subject) = subject.filter(|claims| claims["iss"] == issuer && well_formed)
            else {
                return refuse(axum::http::StatusCode::BAD_REQUEST, "invalid_request");
            };
            let serial = counters[1].fetch_add(1, Ordering::SeqCst) + 1;
            let claims = json!({"iss": issuer, "aud": form.get("resource"),
                "client_id": subject["client_id"], "sub": subject["sub"],
                "act": {"sub": "sdk-client"}, "exp": now() + 300, "jti": format!("x{serial}")});
            (claims, 300, "exchanged")
        }
        _ => {
            return refuse(
                axum::http::StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
            );
        }
    };
    let input = format!(
        "{}.{}",
        b64(json!({"alg": "ES256", "kid": "es", "typ": "at+jwt"})
            .to_string()
            .as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let signature = signer
        .sign(&SystemRandom::new(), input.as_bytes())
        .expect("sign");
    let token = format!("{input}.{}", b64(signature.as_ref()));
    let mut answer = json!({"access_token": token, "token_type": "Bearer", "expires_in": life});
    if counter == "exchanged" {
        answer["issued_token_type"] = json!(access_token_type);
    }
    Json(answer).into_response()
}

/// The claims of a JWT, unchecked (Null when it is not one).
pub fn unverified_claims(token: &str) -> Value {
    token
        .split('.')
        .nth(1)
        .and_then(|payload| URL_SAFE_NO_PAD.decode(payload).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or(Value::Null)
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// An MCP server over HTTP (legacy era, JSON answers) with one tool, `whoami`, that answers
/// the `Authorization` header it was sent; it keeps every header of every request.
pub async fn recording_upstream() -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let record = seen.clone();
    let handler = move |headers: axum::http::HeaderMap, Json(message): Json<Value>| {
        let record = record.clone();
        async move {
            if let Ok(mut seen) = record.lock() {
                seen.extend(headers.iter().map(|(name, value)| {
                    format!("{name}: {}", String::from_utf8_lossy(value.as_bytes()))
                }));
            }
            whoami_answer(&headers, &message)
        }
    };
    (serve_mcp(handler).await, seen)
}

/// The `Authorization` header of a request, or "none".
pub fn authorization_of(headers: &axum::http::HeaderMap) -> String {
    headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("none")
        .to_owned()
}

/// A legacy-era MCP server's answer to `message` (JSON, one tool `whoami` that answers the
/// `Authorization` header it was sent).
pub fn whoami_answer(headers: &axum::http::HeaderMap, message: &Value) -> axum::response::Response {
    let result = match message["method"].as_str() {
        Some("initialize") => json!({"protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "rec", "version": "1"}}),
        Some("tools/list") => json!({"tools": [{"name": "whoami",
            "inputSchema": {"type": "object"}}]}),
        Some("tools/call") => {
            json!({"content": [{"type": "text", "text": authorization_of(headers)}]})
        }
        _ => return axum::http::StatusCode::ACCEPTED.into_response(),
    };
    Json(json!({"jsonrpc": "2.0", "id": message["id"], "result": result})).into_response()
}

/// Serves `handler` at `/mcp` on 127.0.0.1; its URL.
pub async fn serve_mcp<H, T>(handler: H) -> String
where
    H: axum::handler::Handler<T, ()>,
    T: 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let app = axum::Router::new().route("/mcp", axum::routing::post(handler));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}
