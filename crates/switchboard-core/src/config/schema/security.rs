//! The mirror types of the config's security settings — `[auth]` (how HTTP callers
//! authenticate) and the sandbox of stdio servers (`[gateway.sandbox]`, `[servers.X.sandbox]`)
//! — for the JSON Schema the parent module generates.

use std::collections::BTreeMap;

use schemars::JsonSchema;

use super::Duration;

/// How HTTP callers authenticate (docs/auth.md).
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct Auth {
    /// "tokens" (default: [agents.X] tokens and the token file), "oauth" (JWT access tokens
    /// from `issuer`), or both as ["tokens", "oauth"].
    mode: Option<AuthModes>,
    /// The authorization server's issuer identifier; every token's `iss` must equal it.
    #[schemars(regex(pattern = r"^(https?://|\$\{)"))]
    issuer: Option<String>,
    /// Where the issuer's keys are (default: `jwks_uri` of its metadata document).
    #[schemars(regex(pattern = r"^(https?://|\$\{)"))]
    jwks_uri: Option<String>,
    /// The canonical URL of the /mcp endpoint (default: http://<Host>/mcp).
    #[schemars(regex(pattern = r"^(https?://|\$\{)"))]
    resource: Option<String>,
    /// Accepted `aud` values (default: the endpoint's resource URL).
    audience: Option<StringOrList>,
    /// Accepted signature algorithms (default: RS*, PS*, ES256, ES384, EdDSA; HS* and none
    /// are never accepted).
    algorithms: Option<Vec<Algorithm>>,
    /// Clock skew allowed on `exp` and `nbf` (default "60s").
    leeway: Option<Duration>,
    /// Scopes every token must carry (a token without one gets 403 insufficient_scope).
    scopes: Option<Vec<String>>,
    /// The claim that names the agent (default "client_id").
    agent_claim: Option<String>,
    /// The agent of identities that name none (default: they are refused).
    default_agent: Option<String>,
    /// Claim value → agent, where they differ.
    identities: Option<BTreeMap<String, String>>,
    /// Where tokens that are not JWTs are checked (RFC 7662 introspection); needs client_id
    /// and client_secret.
    #[schemars(regex(pattern = r"^(https?://|\$\{)"))]
    introspection_endpoint: Option<String>,
    /// The gateway's client id at the introspection endpoint.
    client_id: Option<String>,
    /// The gateway's client secret there (write "${VAR}").
    client_secret: Option<String>,
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum AuthModes {
    One(AuthMode),
    Several(Vec<AuthMode>),
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub(super) enum AuthMode {
    /// Static bearer tokens.
    Tokens,
    /// OAuth 2.1 access tokens (JWT).
    Oauth,
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum StringOrList {
    One(String),
    Several(Vec<String>),
}

#[derive(JsonSchema)]
#[allow(dead_code)]
pub(super) enum Algorithm {
    RS256,
    RS384,
    RS512,
    PS256,
    PS384,
    PS512,
    ES256,
    ES384,
    EdDSA,
    Ed25519,
}

/// `[servers.ID.tls]`: TLS with one https:// server beyond the public CAs; cert and key go
/// together.
#[derive(JsonSchema, Default)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct UpstreamTls {
    /// A CA (PEM) trusted for this server besides the public ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    ca: Option<String>,
    /// A client certificate (PEM) offered when the server asks for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    cert: Option<String>,
    /// Its private key (PEM, chmod 600).
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<String>,
}

/// `[servers.ID.auth]`: the OAuth grant the gateway runs for an HTTP server — client
/// credentials (the server gets a token of the gateway's) or token exchange (each caller's
/// OAuth token exchanged for one audienced to the server, RFC 8693).
#[derive(JsonSchema, Default)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct UpstreamAuth {
    /// client_credentials or token_exchange.
    grant: UpstreamGrant,
    /// The authorization server's token endpoint (https://; http:// only on loopback).
    #[schemars(regex(pattern = r"^(https?://|\$\{)"))]
    token_endpoint: String,
    client_id: String,
    /// Use ${VAR} to keep it out of the file.
    client_secret: String,
    /// The scope asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
    /// The RFC 8707 resource indicator: the server's canonical URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    resource: Option<String>,
    /// token_exchange: the RFC 8693 audience (the server's logical name at the
    /// authorization server).
    #[serde(skip_serializing_if = "Option::is_none")]
    audience: Option<String>,
    /// token_exchange: whether the gateway's own requests (initialize, listings, pings)
    /// carry a client-credentials token of the same client (default true) or none.
    #[serde(skip_serializing_if = "Option::is_none")]
    gateway_token: Option<bool>,
    /// Reach the token endpoint with the server's tls (its CA trusted, its client
    /// certificate offered) rather than the public CAs alone (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    server_tls: Option<bool>,
}

#[derive(JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub(super) enum UpstreamGrant {
    /// The gateway's own token (RFC 6749 §4.4).
    #[default]
    ClientCredentials,
    /// Each caller's token exchanged for one for this server (RFC 8693).
    TokenExchange,
}

/// What a stdio server's process may use (Linux: rlimits, Landlock, no_new_privs).
#[derive(JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct Sandbox {
    /// Address space: "512MiB", "1GiB", "1.5G" or bytes (RLIMIT_AS).
    #[serde(skip_serializing_if = "Option::is_none")]
    memory: Option<Size>,
    /// CPU time, counted in whole seconds: "30s", "10m" (RLIMIT_CPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<Duration>,
    /// Open files (RLIMIT_NOFILE).
    #[schemars(range(min = 1))]
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<u64>,
    /// Processes of the server's user (RLIMIT_NPROC; does not bind root).
    #[schemars(range(min = 1))]
    #[serde(skip_serializing_if = "Option::is_none")]
    processes: Option<u64>,
    /// true passes the gateway's whole environment on; default false: only PATH, HOME,
    /// LANG, TMPDIR and the server's `env`.
    inherit_env: bool,
    /// Paths the server may read besides the system's (Landlock).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    readable: Vec<String>,
    /// The only paths the server may write (Landlock).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    writable: Vec<String>,
    /// What network the server may reach (default "any"; enforced by Landlock where the
    /// kernel has network rules, else reported as not enforced).
    #[serde(skip_serializing_if = "Option::is_none")]
    network: Option<Network>,
    /// Run the server as this user (the gateway must be root).
    #[schemars(regex(pattern = r"^[A-Za-z0-9_.-]+$"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<String>,
}

/// A size: "512MiB", "1GiB", "1.5G", "64KiB" or an integer number of bytes.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum Size {
    Text(
        #[schemars(regex(
            pattern = r"^\s*([0-9]+(\.[0-9]+)?\s*([KMGT](i?B)?|k|B)?|.*\$\{.*)\s*$"
        ))]
        String,
    ),
    Bytes(#[schemars(range(min = 1))] u64),
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub(super) enum Network {
    /// No TCP connections or binds.
    None,
    /// Only the loopback interface.
    Loopback,
    /// No restriction.
    Any,
}

/// A server's sandbox: false (off), true (the gateway's default) or its own table.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum ServerSandbox {
    Switch(bool),
    Own(Sandbox),
}
